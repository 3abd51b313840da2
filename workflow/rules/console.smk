"""What the console shows (genomon_smk.runtime.console): one line per job started instead of
Snakemake's block per job (the block with -p or --verbose; a dry run shows only its Job stats
and reasons), and the lines a run ends with: after a run, after a dry run and when there is
nothing to be done, so that where the results are and the plan's warnings do not scroll
away."""

import logging
import time

from genomon_smk.runtime.console import PairFiles, failure_summary, job_line, summary

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


def print_run_summary(dry_run):
    """Through Snakemake's logger: after its last lines, on its stream (stdout in a dry run)."""
    SNAKEMAKE_LOGGER.info(
        summary(
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
        )
    )


class ConciseJobInfo(logging.Filter):
    """Snakemake's job-info block as one line (dropped in a dry run), its finished message on
    one line, no scheduler chatter and no line per temporary file removed (a cohort has
    thousands), unless -p or --verbose asks for all of it. A job's error block is left as it
    is."""

    CHATTER = "Select jobs to execute..."

    def __init__(self):
        super().__init__()
        # A dry run prints its Job stats twice: the second is dropped.
        self.job_stats = None

    def filter(self, record):
        if snakemake_adapter.shows_every_job(workflow):
            return True
        if snakemake_adapter.is_rules_chatter(record):
            return False  # "Removing temporary output ...", "Would remove temporary output ..."
        event = snakemake_adapter.log_event(record)
        if event == LogEvent.JOB_INFO:
            if snakemake_adapter.is_dry_run(workflow):
                return False
            record.msg = job_line(record.__dict__)
        elif event == LogEvent.JOB_FINISHED:
            record.msg = f"[{time.asctime()}] {record.msg}"
        elif event == LogEvent.JOB_STARTED:
            return False  # "Execute N jobs...": each job's own line follows
        elif event == LogEvent.RUN_INFO:
            repeated = record.msg == self.job_stats
            self.job_stats = record.msg
            return not repeated
        elif event is None:
            return record.msg != self.CHATTER
        else:
            return True
        del record.event  # printed as the plain message
        return True


def print_failure_summary():
    """From onerror: the failed jobs and their logs once more, after Snakemake's error blocks."""
    if FAILED_JOBS:
        places = {"job logs": LOG_DIR, "results so far": OUTPUT_DIR}
        failed = dict(FAILED_JOBS.values())
        SNAKEMAKE_LOGGER.error(failure_summary(OUTPUT_DIR, failed, places))


# The jobs whose last attempt failed in this run (job id -> "rule #id", logs), as SummaryAtEnd
# saw their error blocks; a retry that succeeds takes its job off.
FAILED_JOBS = {}


class SummaryAtEnd(logging.Handler):
    """A dry run and a run with nothing to do run no onsuccess hook: their last message of
    Snakemake's is the cue. Job errors are noted for the failed run's summary."""

    CUES = {
        "This was a dry-run": True,
        "Nothing to be done": False,  # the results are there, dry run or not
    }

    def emit(self, record):
        event = snakemake_adapter.log_event(record)
        if event == LogEvent.JOB_ERROR:
            logs = [str(log) for log in getattr(record, "log", None) or []]
            FAILED_JOBS[record.jobid] = (f"{record.rule_name} #{record.jobid}", logs)
            return
        if hasattr(record, "job_id"):
            # Only "Finished jobid" carries job_id (ConciseJobInfo has dropped its event).
            FAILED_JOBS.pop(record.job_id, None)
            return
        message = str(record.msg)
        for cue, dry_run in self.CUES.items():
            if message.startswith(cue):
                print_run_summary(dry_run)


LogEvent = snakemake_adapter.log_events()
SNAKEMAKE_LOGGER = snakemake_adapter.snakemake_logger()
if MAIN_PROCESS:
    SNAKEMAKE_LOGGER.addFilter(ConciseJobInfo())
    SNAKEMAKE_LOGGER.addHandler(SummaryAtEnd())
    # The job blocks the filter drops in a dry run are not made at all (and three other costs of
    # Snakemake's planning cut: snakemake_adapter.plan_faster), and per-job objects made smaller.
    snakemake_adapter.plan_faster()
    snakemake_adapter.plan_smaller()
    # A run's process ends with its last job, not up to a second after (Snakemake's timers).
    snakemake_adapter.end_at_once()
