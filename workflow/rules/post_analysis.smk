"""Post-analysis, as Genomon's: per cohort, the tumors' mutation and SV results merged into
Genomon's tables (all tumors, and each of its four cases: pair + control panel, pair, tumor +
control panel, tumor alone; unfiltered and filtered) and the QC samples' QC into merge_qc.txt;
then the paplot report of the filtered tables and the QC (rules/paplot.smk).

The cohort's name: a Genomon sheet's file name without its extension (as Genomon names it),
else config `cohort`, else the samples table's file name without its extension.
"""

from genomon_smk.steps.post_analysis import (
    CASES,
    case_of,
    merged_name,
)


def cohort_name():
    if "genomon_sample_sheet" in config:
        if config["cohort"] is not None:
            raise WorkflowError(
                "invalid config:\n"
                + key_problem(
                    ("cohort",),
                    "with genomon_sample_sheet, the sheet's file name names the cohort, "
                    "as in Genomon; leave this key out",
                    CONFIG_FILES,
                )
            )
        return os.path.splitext(os.path.basename(config["genomon_sample_sheet"]))[0]
    if config["cohort"] is not None:
        return config["cohort"]
    return os.path.splitext(os.path.basename(config["samples"]))[0]


COHORT_NAME = cohort_name()
POST_ANALYSIS_DIR = f"{OUTPUT_DIR}/post_analysis/{COHORT_NAME}"


def post_analysis_cases(pairs):
    """(tumor, Genomon's case) of pairs, in sample-sheet order."""
    return [(tumor, case_of(pair.normal, pair.panel)) for tumor, pair in pairs.items()]


def post_analysis_tables(mode, pairs):
    """The tables a mode's merge writes for pairs: {key: path}, keys `all`, `filt_all`,
    `{case}`, `filt_{case}` for the cases with a tumor (none without pairs)."""
    cases = {case for _, case in post_analysis_cases(pairs)}
    if not cases:
        return {}
    return {
        ("filt_" if filtered else "")
        + (case or "all"): (f"{POST_ANALYSIS_DIR}/{merged_name(mode, filtered, case)}")
        for filtered in (False, True)
        for case in (None, *(name for name, _, _ in CASES if name in cases))
    }


def post_analysis_samples(pairs, result):
    """The merge's arguments: --sample ID CASE RESULT FILTERED per tumor, in sample-sheet order."""
    return [
        field
        for tumor, case in post_analysis_cases(pairs)
        for field in (
            "--sample",
            tumor,
            case,
            result(tumor, ".txt"),
            result(tumor, ".filt.txt"),
        )
    ]


MUTATION_TABLES = post_analysis_tables("mutation", PAIRS)
SV_TABLES = post_analysis_tables("sv", SV_PAIRS)
MERGE_QC = f"{POST_ANALYSIS_DIR}/merge_qc.txt"


rule post_analysis_mutation:
    input:
        results=expand(mutation_result("{tumor}", ".txt"), tumor=PAIRS),
        filtered=expand(mutation_result("{tumor}", ".filt.txt"), tumor=PAIRS),
    output:
        **MUTATION_TABLES,
    log:
        log_path("post_analysis_mutation", COHORT_NAME),
    benchmark:
        bench_path("post_analysis_mutation", COHORT_NAME)
    conda:
        "../../envs/python.yaml"
    params:
        python=PYTHON,
        samples=post_analysis_samples(PAIRS, mutation_result),
        out_dir=POST_ANALYSIS_DIR,
    shell:
        """
        {params.python} -m genomon_smk.steps.post_analysis merge --mode mutation --out-dir {params.out_dir:q} \
            {params.samples:q} >{log:q} 2>&1
        """


rule post_analysis_sv:
    input:
        results=expand(sv_result("{sv_tumor}", ".txt"), sv_tumor=SV_PAIRS),
        filtered=expand(sv_result("{sv_tumor}", ".filt.txt"), sv_tumor=SV_PAIRS),
    output:
        **SV_TABLES,
    log:
        log_path("post_analysis_sv", COHORT_NAME),
    benchmark:
        bench_path("post_analysis_sv", COHORT_NAME)
    conda:
        "../../envs/python.yaml"
    params:
        python=PYTHON,
        samples=post_analysis_samples(SV_PAIRS, sv_result),
        out_dir=POST_ANALYSIS_DIR,
    shell:
        """
        {params.python} -m genomon_smk.steps.post_analysis merge --mode sv --out-dir {params.out_dir:q} \
            {params.samples:q} >{log:q} 2>&1
        """


rule post_analysis_qc:
    input:
        coverage=expand(rules.coverage.output.table, sample=QC_SAMPLES),
        stats=expand(rules.bam_stats.output.stats, sample=QC_SAMPLES),
    output:
        merged=MERGE_QC,
    log:
        log_path("post_analysis_qc", COHORT_NAME),
    benchmark:
        bench_path("post_analysis_qc", COHORT_NAME)
    conda:
        "../../envs/python.yaml"
    params:
        python=PYTHON,
        samples=lambda wildcards, input: [
            field
            for sample, coverage, stats in zip(QC_SAMPLES, input.coverage, input.stats)
            for field in ("--sample", sample, coverage, stats)
        ],
    shell:
        """
        {params.python} -m genomon_smk.steps.post_analysis qc --out {output.merged:q} \
            {params.samples:q} >{log:q} 2>&1
        """


# What `rule all` asks for: every table of the cohort.
POST_ANALYSIS_TARGETS = [
    *MUTATION_TABLES.values(),
    *SV_TABLES.values(),
    *([MERGE_QC] if QC_SAMPLES else []),
]
