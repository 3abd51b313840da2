"""Snakemake's planning made smaller and faster for cohorts (genomon_smk.plan.snakemake_patches):
only on the Snakemake versions the patches were tested on, in the process the user started, and
as a module of another workflow only with `snakemake_patches: true`; otherwise one line says
that Snakemake plans unpatched (the same jobs and results)."""

from genomon_smk.plan import snakemake_patches

if MAIN_PROCESS:
    SNAKEMAKE_PATCH_NOTE = snakemake_patches.apply(
        snakemake_adapter.is_module(workflow), config["snakemake_patches"]
    )
    if SNAKEMAKE_PATCH_NOTE:
        print(SNAKEMAKE_PATCH_NOTE, file=sys.stderr)
