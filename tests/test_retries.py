"""Retries that grow what a job was short of (genomon_smk.runtime.retries): the failure reports of
the executors read into what the next attempt gets. The real Slurm run of the mechanism is in
tests/test_slurm.py; the messages here are the executors' own formats (the Slurm plugin's
report_job_error, slurmstepd's notices in a job's log, the PJM plugin's end codes)."""

from __future__ import annotations

import json
import logging

import pytest

from genomon_smk.runtime.retries import (Attempts, FailureHandler, classify, marker_path, refusal, verdict,
                                      scaled)

SLURM = "SLURM-job '{id}' failed, SLURM status is: '{state}'. Reason: Step 0: {reason}."
SLURM_SQUEUE = ("SLURM-job '{id}' failed, SLURM status is: '{state}'. Detailed failure reason unavailable "
                "(status command is not 'sacct').")


@pytest.mark.parametrize("reported, short_of", [
    (SLURM.format(id=12, state="TIMEOUT", reason="TimeLimit"), {"runtime"}),
    (SLURM_SQUEUE.format(id=12, state="OUT_OF_MEMORY"), {"mem_mb"}),
    ("slurmstepd: error: *** JOB 12 ON node3 CANCELLED AT 2026-11-26T03:41:22 DUE TO TIME LIMIT ***",
     {"runtime"}),
    ("slurmstepd-node3: error: StepId=98.batch exceeded memory limit (331505664 > 209715200), being killed",
     {"mem_mb"}),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. Some of the step tasks have been "
     "OOM Killed.", {"mem_mb"}),
    ("PJM job 31 failed: elapse limit exceeded (ST EXT, PJM CODE 11, EXIT CODE 137)", {"runtime"}),
    ("PJM job 31 failed: memory limit exceeded (ST EXT, PJM CODE 12)", {"mem_mb"}),
    ("PJM job 31 failed: disk usage limit exceeded (e.g. LLIO localtmp/sharedtmp size) (PJM CODE 13)",
     {"pjm_localtmp"}),
    ("PJM job 31 failed: exit code 1\ngenomon-smk: no space left on node_local (/local/x): 0 B free of 16.0 GiB "
     "when the job failed; the storage plan expected about 9.0 GiB on node_local at its peak", {"pjm_localtmp"}),
])
def test_a_job_short_of_a_resource_is_retried_with_more_of_it_only(reported, short_of):
    failure = classify(reported)
    assert failure.short_of == short_of and failure.retried and not failure.node


@pytest.mark.parametrize("reported", [
    SLURM.format(id=12, state="FAILED", reason="NonZeroExitCode"),
    SLURM_SQUEUE.format(id=12, state="CANCELLED"),
    "PJM job 31 failed: exit code 3 (ST EXT, PJM CODE 0, EXIT CODE 3)",
    "",  # cluster-generic and the local executor say nothing
    # the PJM plugin without --pjm-node-mem: the job had its whole node's memory already
    "PJM job 31 failed: memory limit exceeded (ST EXT, PJM CODE 12); not retried: memory cannot grow on this "
    "cluster: the job already had its whole node's memory (...)",
])
def test_other_failures_are_not_retried(reported):
    assert not classify(reported).retried


def test_a_node_failure_is_retried_as_it_was():
    for reported in (SLURM_SQUEUE.format(id=1, state="NODE_FAIL"), "PJM job 3 failed: node down (PJM CODE 20)"):
        failure = classify(reported)
        assert failure.retried and failure.node and not failure.short_of


def test_values_scale_in_their_unit():
    assert scaled(10600, 2) == 21200
    assert scaled(120, 3) == 360
    assert scaled("16Gi", 2) == "32Gi"
    assert scaled("1.5Gi", 3) == "5Gi"  # 4.5 rounded up
    assert scaled("<TBD>", 2) == "<TBD>"
    assert scaled(10600, 1) == 10600


def job_error(log: list[str], msg: str | None, indent: bool = False) -> logging.LogRecord:
    """A record as Snakemake 9 logs a job's error (Job.log_error: its `extra`)."""
    record = logging.LogRecord("snakemake.logging", logging.ERROR, __file__, 1, "Error in rule x", None, None)
    record.__dict__.update(event="job_error", rule_name="x", rule_msg=msg, log=log, indent=indent)
    return record


def test_the_snakemake_process_counts_shortfalls_and_the_job_process_refuses_other_retries(tmp_path, capsys):
    attempts = Attempts(workdir=str(tmp_path))
    handler = FailureHandler(attempts)
    timeout = SLURM_SQUEUE.format(id=7, state="TIMEOUT")
    handler.handle(job_error(["logs/map/a.log", "/x/.snakemake/slurm_logs/7.log"], timeout))
    assert attempts.factor("logs/map/a.log", "runtime") == 2
    assert attempts.factor("logs/map/a.log", "mem_mb") == 1
    # The console says what the retry will do (Snakemake's block says only that the job failed).
    assert "genomon-smk: the job of logs/map/a.log ran short of run time: a retry asks for more of it" \
        in capsys.readouterr().err
    # The job process of attempt 2 reads the same from the marker, and runs.
    state = json.loads(open(marker_path("logs/map/a.log", str(tmp_path))).read())
    assert attempts.factor("logs/map/a.log", "runtime", in_job=True) == 2
    assert refusal(state, "logs/map/a.log", 2) is None
    handler.handle(job_error(["logs/map/a.log"], timeout))
    assert attempts.factor("logs/map/a.log", "runtime", in_job=True) == 3

    failed = SLURM.format(id=8, state="FAILED", reason="NonZeroExitCode")
    handler.handle(job_error(["logs/markdup/b.log", "/x/.snakemake/slurm_logs/8.log"], failed))
    assert "logs/markdup/b.log" not in capsys.readouterr().err  # not retried: Snakemake's block says it
    assert "not for lack of run time, memory or disk" in verdict(classify(failed), "logs/markdup/b.log")
    refused = refusal(attempts.state("logs/markdup/b.log", in_job=True), "logs/markdup/b.log", 2)
    assert refused and "SLURM-job '8' failed" in refused and "slurm_logs/8.log" in refused
    # The refused attempt's own failure keeps the first error.
    handler.handle(job_error(["logs/markdup/b.log"], "SLURM-job '9' failed, SLURM status is: 'FAILED'."))
    assert "'8'" in attempts.state("logs/markdup/b.log", in_job=True)["stop"]
    # Members of a group job are logged again, indented, without a message: not counted twice.
    handler.handle(job_error(["logs/map/a.log"], None, indent=True))
    assert attempts.factor("logs/map/a.log", "runtime") == 3


def test_a_group_job_is_judged_by_its_scheduler_log(tmp_path):
    """Snakemake 9 drops the executor's message of a group job: slurmstepd's notice in the Slurm
    log (the record's aux_logs) says why, for every job of the group."""
    slurm_log = tmp_path / "13.log"
    slurm_log.write_text("...\nslurmstepd: error: *** JOB 13 ON n1 CANCELLED AT 2026-11-26T01:00:00 DUE TO TIME LIMIT ***\n")
    attempts = Attempts(workdir=str(tmp_path))
    record = logging.LogRecord("snakemake.logging", logging.ERROR, __file__, 1, "Error in group", None, None)
    record.__dict__.update(event="group_error", aux_logs=[str(slurm_log)],
                           job_error_info=[{"log": ["logs/map/s.1.log"]}, {"log": ["logs/map/s.2.log"]}])
    FailureHandler(attempts).handle(record)
    assert [attempts.factor(f"logs/map/s.{i}.log", "runtime") for i in (1, 2)] == [2, 2]


def test_a_new_run_is_not_refused_by_an_earlier_runs_marker(tmp_path):
    """A marker left by an earlier run is rewritten by this run's failure before any retry reads it."""
    earlier = Attempts(workdir=str(tmp_path))
    earlier.failed("logs/a.log", classify("SLURM-job '1' failed, SLURM status is: 'FAILED'."))
    now = Attempts(workdir=str(tmp_path))
    now.failed("logs/a.log", classify("SLURM-job '2' failed, SLURM status is: 'TIMEOUT'."))
    state = now.state("logs/a.log", in_job=True)
    assert refusal(state, "logs/a.log", 2) is None and now.factor("logs/a.log", "runtime", in_job=True) == 2
    now.forget()  # after a successful run
    assert not (tmp_path / ".snakemake" / "genomon-retry").exists() or not any((tmp_path / ".snakemake" / "genomon-retry").iterdir())
