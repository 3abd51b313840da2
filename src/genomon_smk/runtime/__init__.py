"""The main Snakemake process's bookkeeping while a run goes: the run lock, the tier monitor, each
job's tier use, the full-tier report, the console. Imports tools, plan and steps, never the other
way."""
