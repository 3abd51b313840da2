"""The lines a run ends with (genomon_smk.runtime.console), after a run, a dry run, a run with
nothing to do and a failed run. The console itself (one line per job, no scheduler chatter) is
the logger plugin every profile selects (`logger: [genomon]`,
plugins/snakemake-logger-plugin-genomon): it prints these lines after Snakemake's last one. Run
without it (no profile, or another --logger), Snakemake's own console shows the run, and the
closing lines of a run (not of a dry run) come from the onsuccess/onerror hooks."""

from genomon_smk.runtime.console import (
    PairFiles,
    failure_summary,
    replaced_input_note,
    summary,
)

# What the summary counts and points at, by pair.
SUMMARY_PAIRS = [
    PairFiles(
        tumor,
        mutation_result(tumor, ".txt"),
        mutation_result(tumor, ".filt.txt"),
        sv_result(tumor, ".filt.txt") if tumor in SV_PAIRS else None,
    )
    for tumor in PAIRS
]
SUMMARY_PLACES = {
    **({"MultiQC": rules.multiqc.output.report} if QC_SAMPLES else {}),
    # The cohort's post-analysis tables and their paplot report.
    **({"tables": POST_ANALYSIS_DIR} if POST_ANALYSIS_TARGETS else {}),
    **({"signatures": PMSIGNATURE_DIR} if PMSIGNATURE.ks else {}),
    **({"paplot": rules.paplot.output.index} if PAPLOT_TARGETS else {}),
    # The genes the results were annotated with, or why they were not.
    **({"genes": ANNOTATION.note} if PAIRS else {}),
    "timeline": rules.utilisation_timeline.output.png,
    "report": "add --report report.html to this command",
    "job logs": LOG_DIR,
}
FAILURE_PLACES = {"job logs": LOG_DIR, "results so far": OUTPUT_DIR}
# The param that holds what a sample's input files hold (paths.smk: sample_fingerprint).
INPUT_FINGERPRINT_PARAM = "inputs_held"


def run_summary(dry_run):
    return summary(
        OUTPUT_DIR,
        SUMMARY_PAIRS,
        SUMMARY_PLACES,
        PLAN_WARNINGS,
        dry_run,
        tuple(
            pmsignature_result(mode, k)
            for mode, signums in PMSIGNATURE.ks.items()
            for k in signums
        ),
        {
            sample: expand(rules.bam_stats.output.flagstat, sample=sample)[0]
            for sample in QC_SAMPLES
        },
    )


def replaced_inputs(dry_run):
    """Lines about the samples this run reran because their input files were replaced."""
    samples = [
        wildcards.get("sample", "?")
        for wildcards in snakemake_adapter.jobs_rerun_for_param(
            workflow, INPUT_FINGERPRINT_PARAM
        )
    ]
    return replaced_input_note(samples, dry_run)


def closing_lines(end):
    """The closing lines for the logger plugin (end: its RunEnd): the run's summary, or the
    failed or stopped jobs and their logs; nothing after an error that failed no job (Snakemake's
    message says it)."""
    if end.failed_jobs or end.interrupted:
        failed = {f"{job.rule} #{job.jobid}": list(job.logs) for job in end.failed_jobs}
        lines = [failure_summary(OUTPUT_DIR, failed, FAILURE_PLACES, end.interrupted)]
    elif end.error:
        return None
    else:
        lines = [run_summary(end.dry_run)]
    return "\n".join(lines + replaced_inputs(end.dry_run))


def closing_with_plugin():
    """Hand the closing lines to the logger plugin: False when it is not the run's logger."""
    try:
        from snakemake_logger_plugin_genomon import at_end
    except ImportError:
        return False
    return at_end(closing_lines, key="genomon-smk")


# Main process only (job processes run no logger plugin and no hooks).
CLOSING_BY_PLUGIN = MAIN_PROCESS and closing_with_plugin()


def print_run_summary():
    """From onsuccess, when the logger plugin does not print the closing lines."""
    if not CLOSING_BY_PLUGIN:
        snakemake_adapter.snakemake_logger().info(
            "\n".join([run_summary(False)] + replaced_inputs(False))
        )


def print_failure_summary():
    """From onerror, when the logger plugin does not print the closing lines."""
    if not CLOSING_BY_PLUGIN:
        snakemake_adapter.snakemake_logger().error(
            failure_summary(OUTPUT_DIR, {}, FAILURE_PLACES)
        )
