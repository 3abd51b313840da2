"""genomon-smk: glue for the Genomon Snakemake workflow and clean-room Genomon mutation tools."""

__version__ = "0.1.0"


def tool_version(tool: str) -> str:
    """What a clean-room tool's --version prints: its name and the genomon-smk release."""
    return f"{tool}-genomon_smk-{__version__}"
