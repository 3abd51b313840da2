"""A cohort too large for one DAG, in batches (docs/usage.md, `python -m genomon_smk.plan.batches`):
`snakemake cohort_results --batch cohort_results=i/n` plans and runs 1/n of the cohort's pairs at
a time (Snakemake's --batch over this aggregating rule), and a last run with --allowed-rules of
the cohort's end stages (post-analysis, pmsignature, paplot, MultiQC, the timeline) makes the
cohort-level files from their results: no run plans the whole cohort.
"""


localrules:
    cohort_results,
    pair_results,


# Only names files, as `all` does (no job runs for it): each pair's marker, then the files of no pair.
rule cohort_results:
    input:
        lambda wildcards: [
            f"{BATCH_DIR}/{tumor}.done" for tumor in results_by_pair() if tumor
        ]
        + results_by_pair().get(None, []),


# A pair's results are made: its samples' BAMs and QC, its mutation and SV results.
rule pair_results:
    input:
        lambda wildcards: results_by_pair()[wildcards.pair_tumor],
    output:
        touch(f"{BATCH_DIR}/{{pair_tumor}}.done"),
