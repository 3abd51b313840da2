"""genomon-smk: glue for the Genomon Snakemake workflow and clean-room Genomon mutation tools.

Deliberate difference from upstream Genomon (docs/differences.md): :func:`tool_version` names
genomon_smk in each tool's ``--version``, so Genomon's meta line says which implementation made
a file.
"""

__version__ = "0.1.0"


def tool_version(tool: str) -> str:
    """What a clean-room tool's --version prints: its name and the genomon-smk release."""
    return f"{tool}-genomon_smk-{__version__}"
