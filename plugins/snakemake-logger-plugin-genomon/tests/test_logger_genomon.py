"""The concise console, fed records as Snakemake logs them (the events and fields of
snakemake_interface_logger_plugins' LogEvent), through Snakemake's own logger manager."""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, field

import pytest
from snakemake_interface_logger_plugins.common import LogEvent

import snakemake_logger_plugin_genomon as plugin
from snakemake_logger_plugin_genomon import FailedJob, LogHandler, RunEnd, at_end, job_line, plain_error


@dataclass
class Settings:
    """OutputSettingsLoggerInterface's fields."""

    printshellcmds: bool = False
    nocolor: bool = True
    quiet: set = field(default_factory=set)
    debug_dag: bool = False
    verbose: bool = False
    show_failed_logs: bool = False
    stdout: bool = False
    dryrun: bool = False


def record(msg, level=logging.INFO, module="workflow", func="execute", **extra):
    made = logging.LogRecord("snakemake.logging", level, f"{module}.py", 1, msg, None, None, func=func)
    made.__dict__.update(extra)
    return made


def job_info(jobid, rule, **wildcards):
    return record(f" Rule: {rule}, Jobid: {jobid}", event=LogEvent.JOB_INFO, jobid=jobid, rule_name=rule,
                  rule_msg=None, local=False, wildcards=wildcards, input=["in"], output=["out"], log=["x.log"],
                  benchmark=None, reason="Missing output files: out", resources={}, priority=0, threads=1,
                  indent=False, is_checkpoint=False, printshellcmd=True, is_handover=False, shellcmd="")


def job_error(jobid, rule, logs):
    return record(f"Error in rule {rule}, jobid: {jobid}", logging.ERROR, event=LogEvent.JOB_ERROR, rule_name=rule,
                  rule_msg="failed", jobid=jobid, input=[], output=[], log=logs, conda_env=None, container_img=None,
                  aux={}, indent=False, shellcmd="false")


def finished(jobid, rule):
    return record(f"Finished jobid: {jobid} (Rule: {rule})", event=LogEvent.JOB_FINISHED, job_id=jobid)


@pytest.fixture
def console(monkeypatch):
    def make(**settings):
        stream = io.StringIO()
        monkeypatch.setattr("sys.stderr", stream)
        monkeypatch.setattr("sys.stdout", stream)
        handler = LogHandler(Settings(**settings), None)
        handler.setFormatter(logging.Formatter("%(message)s"))  # Snakemake sets its own
        return handler, stream

    yield make
    plugin._ACTIVE.clear()


def test_job_line_names_the_rule_its_wildcards_and_the_job_id():
    assert job_line({"rule_name": "markdup", "jobid": 12, "wildcards": {"sample": "t", "region": "r0001"},
                     "local": False}) == "rule markdup started (sample=t, region=r0001), jobid 12"
    assert job_line({"rule_name": "all", "jobid": 0, "wildcards": {}, "local": True}) == "localrule all started, jobid 0"


def test_a_run_shows_one_line_per_job_and_no_chatter_and_leaves_the_records_as_they_were(console):
    handler, stream = console()
    records = [
        record("Workflow has started!", event=LogEvent.WORKFLOW_STARTED),
        record("Select jobs to execute...", module="job_scheduler", func="schedule"),
        record("Execute 1 jobs...", event=LogEvent.JOB_STARTED, jobs=[3]),
        job_info(3, "markdup", sample="t"),
        record("Removing temporary output x.", quietness=_Quietness.RULES),
        finished(3, "markdup"),
        record("Complete log(s): /x.log"),
    ]
    # (a formatter's own `message` aside: every logging.Formatter sets it)
    before = [{k: v for k, v in item.__dict__.items() if k != "message"} for item in records]
    for item in records:
        handler.handle(item)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "Workflow has started!"
    assert lines[1] == "rule markdup started (sample=t), jobid 3"
    assert lines[2].startswith("[") and lines[2].endswith("] Finished jobid: 3 (Rule: markdup)")
    assert lines[3:] == ["Complete log(s): /x.log"]
    after = [{k: v for k, v in item.__dict__.items() if k != "message"} for item in records]
    assert after == before  # every other handler sees them as made


def test_verbose_or_p_shows_every_record_as_snakemake_formats_it(console):
    handler, stream = console(printshellcmds=True)
    handler.handle(record("Select jobs to execute...", module="job_scheduler", func="schedule"))
    handler.handle(job_info(3, "markdup"))
    assert stream.getvalue().splitlines() == ["Select jobs to execute...", " Rule: markdup, Jobid: 3"]


def test_a_dry_run_shows_no_job_lines_and_its_job_stats_once(console):
    handler, stream = console(dryrun=True)
    stats = {"markdup": 2, "total": 2}
    group = record("Group job map_bundle (jobs in lexicogr. order):", event=LogEvent.GROUP_INFO, group_id="map_bundle")
    for item in (group, job_info(1, "markdup"), record("Job stats: ...", event=LogEvent.RUN_INFO, stats=stats),
                 record("Job stats: ...", event=LogEvent.RUN_INFO, stats=dict(stats))):
        handler.handle(item)
    assert stream.getvalue().splitlines() == ["Job stats: ..."]


@pytest.mark.parametrize(("settings", "shows"), [({"dryrun": True}, False), ({"dryrun": True, "printshellcmds": True}, True),
                                               ({"dryrun": True, "verbose": True}, True), ({}, True)])
def test_it_says_whether_it_shows_job_records(console, settings, shows):
    """What a dry run's job records (JOB_INFO, SHELLCMD) become on this console, said up front:
    genomon-smk builds no record that no handler shows."""
    handler, stream = console(**settings)
    assert handler.shows_job_records is shows
    handler.handle(job_info(1, "markdup"))
    assert bool(stream.getvalue()) is shows


def test_the_closing_lines_come_after_the_last_record_of_a_run(console):
    handler, stream = console()
    seen = []

    def closing(end):
        seen.append(end)
        return "the results are in /o"

    assert at_end(closing, key="w")
    handler.handle(record("Workflow has started!", event=LogEvent.WORKFLOW_STARTED))
    handler.handle(record("Complete log(s): /x.log"))
    handler.close()
    handler.close()  # (logging's shutdown closes it again)
    assert stream.getvalue().splitlines()[-1] == "the results are in /o"
    assert seen == [RunEnd(dry_run=False)]
    assert not at_end(closing)  # no handler of a run in this process any more


def test_a_failed_run_ends_with_the_jobs_whose_last_attempt_failed(console):
    handler, stream = console()
    ends = []
    at_end(lambda end: ends.append(end) or "closing", key="w")
    handler.handle(record("Workflow has started!", event=LogEvent.WORKFLOW_STARTED))
    handler.handle(job_error(4, "map_reads", ["logs/map/1.log"]))
    handler.handle(job_error(5, "markdup", ["logs/markdup/r1.log"]))
    handler.handle(finished(5, "markdup"))  # its retry succeeded
    handler.handle(record("Select jobs to execute...", module="job_scheduler", func="schedule"))
    handler.close()
    assert ends == [RunEnd(False, (FailedJob("map_reads", 4, ("logs/map/1.log",)),))] and ends[0].failed
    # After a failure the scheduler's lines say how the run stops: shown.
    assert "Select jobs to execute..." in stream.getvalue()


def test_a_run_stopped_on_request_is_told_apart_from_a_failed_one(console):
    """Snakemake's scheduler line on Ctrl-C is shown (its other lines are not) and the run's end
    says it was stopped; the jobs the signal killed are still listed."""
    handler, stream = console()
    ends = []
    at_end(lambda end: ends.append(end) or "closing", key="w")
    handler.handle(record("Workflow has started!", event=LogEvent.WORKFLOW_STARTED))
    handler.handle(record("Select jobs to execute...", module="job_scheduler", func="schedule"))
    handler.handle(record("Terminating processes on user request, this might take some time.",
                          module="job_scheduler", func="schedule"))
    handler.handle(job_error(4, "map_reads", ["logs/map/1.log"]))
    handler.close()
    assert ends == [RunEnd(False, (FailedJob("map_reads", 4, ("logs/map/1.log",)),), interrupted=True)]
    shown = stream.getvalue()
    assert "Terminating processes on user request" in shown and "Select jobs to execute" not in shown


def test_no_closing_lines_without_a_workflow_run_or_with_quiet_all(console):
    """`snakemake --unlock`, --list, ... run no workflow (no WORKFLOW_STARTED event)."""
    handler, stream = console()
    at_end(lambda end: "closing", key="w")
    handler.close()
    assert stream.getvalue() == ""
    handler, stream = console(quiet={_Quietness.ALL})
    at_end(lambda end: "closing", key="w")
    handler.handle(record("Workflow has started!", event=LogEvent.WORKFLOW_STARTED))
    handler.close()
    assert "closing" not in stream.getvalue()


class _Quietness:
    """Stand-ins for snakemake.settings.enums.Quietness members: the plugin reads their names."""

    class RULES:
        name = "RULES"

    class ALL:
        name = "ALL"


def test_snakemake_takes_it_as_a_logger_plugin_that_writes_to_the_console():
    """Snakemake's registry finds it by its module name (`--logger genomon`) and its logger
    manager allows one stream handler: this one; file and database plugins run beside it."""
    registry = pytest.importorskip("snakemake_interface_logger_plugins.registry")
    found = registry.LoggerPluginRegistry().get_plugin("genomon")
    assert found.log_handler is LogHandler
    handler = LogHandler(Settings(), None)
    assert handler.writes_to_stream and not handler.writes_to_file and not handler.has_filter
    plugin._ACTIVE.clear()


def test_a_refusal_marked_plain_is_printed_without_snakemakes_header(console):
    class ConfigRefusal(Exception):
        pass

    handler, stream = console()
    error = plain_error(ConfigRefusal("config.yaml, line 3: key 'x': give a number"))
    assert isinstance(error, ConfigRefusal)
    handler.handle(record("ConfigRefusal in file /w/config.smk, line 348:\nconfig.yaml, line 3: ...", logging.ERROR,
                          event=LogEvent.ERROR, exception="ConfigRefusal"))
    handler.handle(record("WorkflowError in file /w/x.smk, line 1:\nother", logging.ERROR,
                          event=LogEvent.ERROR, exception="WorkflowError"))
    assert stream.getvalue().splitlines() == ["config.yaml, line 3: key 'x': give a number",
                                              "WorkflowError in file /w/x.smk, line 1:", "other"]
