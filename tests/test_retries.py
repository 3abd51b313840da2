"""Retries that grow what a job was short of (genomon_smk.runtime.retries): the executors' failure
data (the Slurm job state, the PJM plugin's failure kind) read into what the next attempt gets.
The real Slurm run of the mechanism is in tests/test_slurm.py; the contract tests at the end run
the executor plugins' own code (the Slurm plugin's status check and error report, the PJM
plugin's judge and failure record) instead of copies of their messages."""

from __future__ import annotations

import json
import logging

import pytest

from genomon_smk.runtime.retries import (Attempts, FailureHandler, classify, marker_path, refusal, verdict,
                                      scaled)

SLURM = "SLURM-job '{id}' failed, SLURM status is: '{state}'. Reason: Step 0: {reason}."
SLURM_SQUEUE = ("SLURM-job '{id}' failed, SLURM status is: '{state}'. Detailed failure reason unavailable "
                "(status command is not 'sacct').")


@pytest.mark.parametrize("reported, kind, log_text, short_of", [
    (SLURM.format(id=12, state="TIMEOUT", reason="TimeLimit"), None, "", {"runtime"}),
    (SLURM_SQUEUE.format(id=12, state="OUT_OF_MEMORY"), None, "", {"mem_mb"}),
    ("", None, "slurmstepd: error: *** JOB 12 ON node3 CANCELLED AT 2026-11-26T03:41:22 DUE TO TIME LIMIT ***",
     {"runtime"}),
    ("", None, "slurmstepd-node3: error: StepId=98.batch exceeded memory limit (331505664 > 209715200), being killed",
     {"mem_mb"}),
    ("", None, "slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. Some of the step tasks have been "
     "OOM Killed.", {"mem_mb"}),
    ("PJM job 31 failed: ...", "elapse", "", {"runtime"}),
    ("PJM job 31 failed: ...", "memory", "", {"mem_mb"}),
    ("PJM job 31 failed: ...", "disk", "", {"pjm_localtmp"}),
    ("PJM job 31 failed: exit code 1", "exit", "genomon-smk: no space left on node_local (/local/x): 0 B free of "
     "16.0 GiB when the job failed; the storage plan expected about 9.0 GiB on node_local at its peak",
     {"pjm_localtmp"}),
])
def test_a_job_short_of_a_resource_is_retried_with_more_of_it_only(reported, kind, log_text, short_of):
    failure = classify(reported, kind, log_text)
    assert failure.short_of == short_of and failure.retried and not failure.node


@pytest.mark.parametrize("reported, kind", [
    (SLURM.format(id=12, state="FAILED", reason="NonZeroExitCode"), None),
    (SLURM_SQUEUE.format(id=12, state="CANCELLED"), None),
    ("PJM job 31 failed: exit code 3 (ST EXT, PJM CODE 0, EXIT CODE 3)", "exit"),
    ("PJM job 31 failed: cancelled", "cancelled"),
    # The words of a message are not data: a PJM message without its record is not retried.
    ("PJM job 31 failed: elapse limit exceeded (ST EXT, PJM CODE 11)", None),
    ("", None),  # cluster-generic and the local executor say nothing
])
def test_other_failures_are_not_retried(reported, kind):
    assert not classify(reported, kind).retried


def test_a_node_failure_is_retried_as_it_was():
    for failure in (classify(SLURM_SQUEUE.format(id=1, state="NODE_FAIL")), classify("PJM job 3 failed", "node")):
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


@pytest.mark.parametrize("codes, grown, node", [
    ({"ST": "EXT", "EC": "137", "PC": "11"}, {"runtime"}, False),
    ({"ST": "EXT", "EC": "137", "PC": "12"}, {"mem_mb"}, False),
    ({"ST": "EXT", "EC": "137", "PC": "23"}, {"mem_mb"}, False),
    ({"ST": "EXT", "EC": "1", "PC": "13"}, {"pjm_localtmp"}, False),
    ({"ST": "ERR", "EC": "-", "PC": "20"}, set(), True),
    ({"ST": "EXT", "EC": "3", "PC": "0"}, set(), False),
    ({"ST": "CCL", "EC": "-", "PC": "1"}, set(), False),
])
def test_the_pjm_plugins_own_failure_record_decides_the_retry(tmp_path, codes, grown, node):
    """Contract with plugins/snakemake-executor-plugin-pjm, through its own code: the ended job's
    pjstat row judged (pjm.judge), the failure recorded where the plugin records it
    (Executor.record_failure), and the error record Snakemake logs for its report_job_error
    (the message, the rule's log and the job's PJM logs): the retry grows what the kind says."""
    from types import SimpleNamespace

    from snakemake_executor_plugin_pjm import Executor, pjm

    logdir = tmp_path / "pjm-logs"
    logdir.mkdir()
    job_id = "4242"
    end = pjm.judge(job_id, {**codes, "SN": "-", "REASON": "-"})
    assert not end.success
    job = SimpleNamespace(name="markdup", wildcards={"sample": "t"}, attempt=1)
    info = SimpleNamespace(job=job, external_jobid=job_id,
                           aux={"logs": pjm.log_files(logdir, pjm.job_name(job.name), job_id)})
    Executor.record_failure(SimpleNamespace(logdir=logdir, logger=logging.getLogger("test")), info, end)
    attempts = Attempts(workdir=str(tmp_path))
    rule_log = "logs/markdup/t.log"
    FailureHandler(attempts).handle(job_error([rule_log, *info.aux["logs"]], end.reason + "\n"))
    failure_grown = {name for name in ("runtime", "mem_mb", "pjm_localtmp") if attempts.factor(rule_log, name) == 2}
    assert failure_grown == grown
    stop = attempts.state(rule_log, in_job=False)["stop"]
    assert (stop is None) is (bool(grown) or node)


@pytest.mark.parametrize("state, grown, node", [
    ("TIMEOUT", {"runtime"}, False),
    ("OUT_OF_MEMORY", {"mem_mb"}, False),
    ("NODE_FAIL", set(), True),
    ("FAILED", set(), False),
    ("CANCELLED", set(), False),
])
def test_the_slurm_plugins_own_error_report_decides_the_retry(tmp_path, monkeypatch, state, grown, node):
    """Contract with snakemake-executor-plugin-slurm (the pinned one), through its own code: its
    Executor.check_active_jobs, given a job's Slurm state by its status query (squeue: the form
    clusters without accounting use), reports the job's error; the record Snakemake logs for that
    report (the message, the rule's log and the Slurm log) decides the retry."""
    import asyncio
    import contextlib
    from types import SimpleNamespace

    import snakemake_executor_plugin_slurm as slurm

    async def query(command, logger):
        return {"77": state}, 0.01

    monkeypatch.setattr(slurm, "query_job_status", query)
    monkeypatch.setattr(slurm, "get_min_job_age", lambda: 3600)
    monkeypatch.setattr(slurm, "is_query_tool_available", lambda name: False)
    executor = object.__new__(slurm.Executor)
    settings = SimpleNamespace(init_seconds_before_status_checks=40, status_attempts=1, requeue=False,
                               keep_successful_logs=True)
    reports = []
    executor.__dict__.update(
        workflow=SimpleNamespace(executor_settings=settings), logger=logging.getLogger("test-slurm"),
        run_uuid="run", status_rate_limiter=contextlib.nullcontext(), _status_query_failures=0,
        _status_query_calls=0, _status_query_total_seconds=0.0, _status_query_min_seconds=None,
        _status_query_max_seconds=0.0, _status_query_cycle_rows=[], _failed_nodes=set(), _preemption_warning=False,
        _next_seconds_between_status_checks=40,
        get_status_command=lambda: "squeue",
        report_job_error=lambda info, msg=None, aux_logs=None, **_: reports.append((msg, aux_logs)),
        report_job_success=lambda info: reports.append(("success", None)))
    job = SimpleNamespace(external_jobid="77", aux={"slurm_logfile": tmp_path / "77.log"})

    async def poll():
        return [still async for still in executor.check_active_jobs([job])]

    assert asyncio.run(poll()) == []
    ((message, aux_logs),) = reports
    attempts = Attempts(workdir=str(tmp_path))
    rule_log = "logs/markdup/t.log"
    FailureHandler(attempts).handle(job_error([rule_log, *aux_logs], message))
    assert {name for name in ("runtime", "mem_mb", "pjm_localtmp") if attempts.factor(rule_log, name) == 2} == grown
    assert (attempts.state(rule_log, in_job=False)["stop"] is None) is (bool(grown) or node)


def test_the_pjm_plugins_record_is_found_beside_the_per_rule_logs_and_says_what_cannot_grow(tmp_path):
    """The PJM plugin writes LOGDIR/job-failures.jsonl and each job's logs in LOGDIR/RULE/: the
    retry policy finds the job's record by its PJM id, and a record with retry false for a memory
    kill (node memory fixed) keeps mem_mb from growing."""
    from genomon_smk.runtime.retries import pjm_failure, pjm_fixed

    (tmp_path / "map_reads").mkdir()
    log = tmp_path / "map_reads" / "smk-map_reads.7.out"
    log.write_text("")
    records = [{"pjm_jobid": "6", "kind": "elapse", "retry": True},
               {"pjm_jobid": "7", "kind": "memory", "retry": False, "why_not": "memory cannot grow"}]
    (tmp_path / "job-failures.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    record = pjm_failure([str(log)])
    assert record["kind"] == "memory" and pjm_fixed(record) == {"mem_mb"}
    assert pjm_fixed(records[0]) == frozenset() and pjm_failure([str(tmp_path / "other.out")]) == {}
    assert not classify("", record["kind"], "", pjm_fixed(record)).retried
    assert classify("", "memory").short_of == {"mem_mb"}
