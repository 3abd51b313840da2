"""genomon-smk: glue for the Genomon Snakemake workflow and clean-room Genomon mutation tools."""

__version__ = "0.1.0"
