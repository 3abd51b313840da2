"""What the workflow's rules run: one module per step, each with a `python -m` entry point."""
