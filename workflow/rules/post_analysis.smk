"""Post-analysis, as Genomon's: per cohort, the tumors' mutation and SV results merged into
Genomon's tables (all tumors, and each of its four cases: pair + control panel, pair, tumor +
control panel, tumor alone; unfiltered and filtered) and the QC samples' QC into merge_qc.txt;
then the paplot report of the filtered tables and the QC (rules/paplot.smk).
The cohort's name, its tables and the report's inputs are in paths.smk.
"""


rule post_analysis_mutation:
    input:
        # The cohort's files: listed when the job is planned (not in every job's parse).
        results=lambda wildcards: expand(
            mutation_result("{tumor}", ".txt"), tumor=PAIRS
        ),
        filtered=lambda wildcards: expand(
            mutation_result("{tumor}", ".filt.txt"), tumor=PAIRS
        ),
    output:
        **MUTATION_TABLES,
    log:
        log_path("post_analysis_mutation", COHORT_NAME),
    benchmark:
        bench_path("post_analysis_mutation", COHORT_NAME)
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        samples=post_analysis_samples(PAIRS, mutation_result),
    shell:
        """
        genomon_python -m genomon_smk.steps.post_analysis merge --mode mutation --out-dir "$(dirname {output.all:q})" \
            {params.samples:q} >{log:q} 2>&1
        """


rule post_analysis_sv:
    input:
        results=lambda wildcards: expand(
            sv_result("{sv_tumor}", ".txt"), sv_tumor=SV_PAIRS
        ),
        filtered=lambda wildcards: expand(
            sv_result("{sv_tumor}", ".filt.txt"), sv_tumor=SV_PAIRS
        ),
    output:
        **SV_TABLES,
    log:
        log_path("post_analysis_sv", COHORT_NAME),
    benchmark:
        bench_path("post_analysis_sv", COHORT_NAME)
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        samples=post_analysis_samples(SV_PAIRS, sv_result),
    shell:
        """
        genomon_python -m genomon_smk.steps.post_analysis merge --mode sv --out-dir "$(dirname {output.all:q})" \
            {params.samples:q} >{log:q} 2>&1
        """


rule post_analysis_qc:
    input:
        coverage=lambda wildcards: expand(
            rules.coverage.output.table, sample=QC_SAMPLES
        ),
        stats=lambda wildcards: expand(rules.bam_stats.output.stats, sample=QC_SAMPLES),
    output:
        merged=MERGE_QC,
    log:
        log_path("post_analysis_qc", COHORT_NAME),
    benchmark:
        bench_path("post_analysis_qc", COHORT_NAME)
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        samples=lambda wildcards, input: [
            field
            for sample, coverage, stats in zip(QC_SAMPLES, input.coverage, input.stats)
            for field in ("--sample", sample, coverage, stats)
        ],
    shell:
        """
        genomon_python -m genomon_smk.steps.post_analysis qc --out {output.merged:q} \
            {params.samples:q} >{log:q} 2>&1
        """


# What `rule all` asks for: every table of the cohort.
POST_ANALYSIS_TARGETS = [
    *MUTATION_TABLES.values(),
    *SV_TABLES.values(),
    *([MERGE_QC] if QC_SAMPLES else []),
]
