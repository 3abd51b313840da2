"""A cohort too large for one DAG, in batches (docs/usage.md, `python -m genomon_smk.plan.batches`):
`snakemake cohort_results --batch cohort_results=i/n` plans and runs 1/n of the cohort's
per-sample and per-pair results at a time (Snakemake's --batch over this aggregating rule), and a
last run with --allowed-rules of the cohort's end stages (post-analysis, pmsignature, paplot,
MultiQC, the timeline) makes the cohort-level files from them: no run plans the whole cohort.
"""


# Every file of the run that one sample or pair makes and a cohort-level end stage reads: the
# final targets without the end stages' own, and what only the end stages read (the samples'
# samtools and mosdepth tables, GenomonSV's parsed junctions). Listed when the job is planned.
def batched_results(wildcards):
    end = {
        *POST_ANALYSIS_TARGETS,
        *PMSIGNATURE_TARGETS,
        *PAPLOT_TARGETS,
        *(rules.multiqc.output if QC_SAMPLES else []),
        *(rules.sv_multiqc_tables.output if QC_SAMPLES and SV_PAIRS else []),
    }
    read_by_end = [
        *expand(rules.bam_stats.output.stats, sample=QC_SAMPLES),
        *expand(rules.bam_stats.output.flagstat, sample=QC_SAMPLES),
        *expand(rules.coverage.output.summary, sample=QC_SAMPLES),
        *expand(rules.coverage.output.dist, sample=QC_SAMPLES),
        *(
            sv_parse_files(name)[kind]
            for name in SV_PARSED
            for kind in ("junction", "improper")
        ),
    ]
    return list(
        dict.fromkeys(
            [path for path in every_final_file() if path not in end] + read_by_end
        )
    )


localrules:
    cohort_results,


# Only names files, as `all` does (no job runs for it).
rule cohort_results:
    input:
        batched_results,
