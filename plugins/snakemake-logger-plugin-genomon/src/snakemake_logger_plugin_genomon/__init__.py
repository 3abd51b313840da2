"""A concise console for Snakemake runs (`--logger genomon`): one line per job started instead of
Snakemake's block per job (the block with -p or --verbose), no scheduler chatter, no line per
temporary file removed, and the closing lines a workflow registers (at_end), printed after
Snakemake's last line of a run, a dry run, a run with nothing to do and a failed run.

Driven by Snakemake's log events (the records' `event`, LogEvent) and settings only, never by
the text of a message. Records are read, never changed: Snakemake's log file
(.snakemake/log/*.log) and every other handler or logger plugin get them as Snakemake made them.
It writes to the console stream, so it is the run's one stream handler (Snakemake allows one);
plugins that write elsewhere (a file, a database, a server) run beside it:
`--logger genomon snakesee`.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Optional

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

__all__ = ["FailedJob", "LogHandler", "LogHandlerSettings", "RunEnd", "at_end", "job_line", "plain_error"]


@dataclass(frozen=True)
class FailedJob:
    """A job whose last attempt failed (a retry that succeeded takes it off)."""

    rule: str
    jobid: int
    logs: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunEnd:
    """How the run ended, for the closing lines: a dry run, the jobs that failed, whether
    Snakemake reported an error (ERROR event: a failed DAG, a lock, an exception) and whether it
    was stopped on the user's request (Ctrl-C, SIGINT: its running jobs then fail or
    are cancelled because of it)."""

    dry_run: bool
    failed_jobs: tuple[FailedJob, ...] = ()
    error: bool = False
    interrupted: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.failed_jobs) or self.error or self.interrupted


# The handler of the run in this process (Snakemake makes one per run, before it parses the
# workflow, in the process the user started only: job processes run no logger plugins).
_ACTIVE: list["LogHandler"] = []


def at_end(closing: Callable[[RunEnd], Optional[str]], key: str = "") -> bool:
    """Print closing(RunEnd)'s text when the run ends, after Snakemake's last line (one closing
    per key: a workflow parsed again replaces its own). False when this plugin is not the
    run's logger (no handler in this process): the caller then prints its own lines."""
    if not _ACTIVE:
        return False
    _ACTIVE[-1].closings[key or getattr(closing, "__qualname__", repr(closing))] = closing
    return True


def plain_error(error: BaseException) -> BaseException:
    """Mark an error the workflow is about to raise (a refusal that says all the user needs, in a
    class of its own): when Snakemake logs it (its ERROR record names the class), the console
    prints str(error) alone, without Snakemake's "ERROR in file ..., line N:" header, which its
    log file keeps. Returns the error (`raise plain_error(ConfigRefusal(...))`); without a handler
    of this plugin in the process, nothing changes."""
    if _ACTIVE:
        _ACTIVE[-1].plain_errors[type(error).__name__] = str(error)
    return error


def job_line(fields: dict) -> str:
    """One line for a job Snakemake starts, from its JOB_INFO record's fields."""
    wildcards = ", ".join(f"{key}={value}" for key, value in (fields.get("wildcards") or {}).items())
    kind = "localrule" if fields.get("local") else "rule"
    return f"{kind} {fields['rule_name']} started{f' ({wildcards})' if wildcards else ''}, jobid {fields['jobid']}"


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    """No settings: -p and --verbose bring back Snakemake's full blocks."""


# Snakemake's colours: levels, and the INFO events it shows in yellow.
_COLOURS = {"DEBUG": 34, "INFO": 32, "WARNING": 33, "ERROR": 31, "CRITICAL": 35}
_YELLOW_INFO = (LogEvent.RUN_INFO, LogEvent.SHELLCMD, LogEvent.JOB_STARTED, None)


def quietness_name(value) -> str:
    """A Quietness (Snakemake's settings enum) by its name: RULES, PROGRESS, ALL, ..."""
    return str(getattr(value, "name", value or "")).upper()


def is_scheduler_chatter(record: logging.LogRecord) -> bool:
    """A record of Snakemake's scheduling loop without an event ("Select jobs to execute...",
    every round): known by where it was logged (the record's module and function), not by its
    text."""
    return (
        getattr(record, "event", None) is None
        and record.levelno == logging.INFO
        and record.module == "job_scheduler"
        and record.funcName == "schedule"
    )


def is_stop_on_request(record: logging.LogRecord) -> bool:
    """Snakemake's record that it stops on the user's request ("Terminating processes on user
    request, ..." from its scheduling loop, "Cancelling snakemake on user request." at the end):
    an event-less record known by its words, the only mark such a stop leaves."""
    return getattr(record, "event", None) is None and "on user request" in record.getMessage()


class LogHandler(LogHandlerBase):
    """The concise console. Snakemake attaches its own filter (--quiet, -p, --debug-dag) and
    formatter (its text of each event) to this handler: the lines shown as Snakemake shows them
    are its formatter's."""

    def __post_init__(self) -> None:
        settings = self.common_settings
        self.stream = sys.stdout if settings.stdout else sys.stderr
        self.full = bool(settings.printshellcmds or settings.verbose)
        self.dry_run = bool(settings.dryrun)
        self.quiet = {quietness_name(value) for value in (settings.quiet or ())}
        self.colour = (
            not settings.nocolor
            and os.environ.get("TERM") != "dumb"
            and bool(getattr(self.stream, "isatty", None) and self.stream.isatty())
        )
        self.closings: dict[str, Callable[[RunEnd], Optional[str]]] = {}
        self.plain_errors: dict[str, str] = {}
        self.failed: dict[int, FailedJob] = {}
        self.error = False
        self.interrupted = False
        self.started = False
        self.last_stats = None
        self.closed = False
        _ACTIVE.append(self)

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False

    @property
    def shows_job_records(self) -> bool:
        """Whether a job's record (JOB_INFO, SHELLCMD) can be shown: not in a dry run without -p
        or --verbose (text()); genomon-smk's planning then builds no record that nobody sees."""
        return not self.dry_run or self.full

    @property
    def has_formatter(self) -> bool:
        return False

    @property
    def needs_rulegraph(self) -> bool:
        return False

    # --- what the run did (every record, whatever is shown)

    def note(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        if event == LogEvent.WORKFLOW_STARTED:
            self.started = True
        elif event == LogEvent.JOB_ERROR and not getattr(record, "indent", False):
            logs = tuple(str(log) for log in getattr(record, "log", None) or ())
            self.failed[record.jobid] = FailedJob(record.rule_name, record.jobid, logs)
        elif event == LogEvent.GROUP_ERROR:
            aux = tuple(str(log) for log in getattr(record, "aux_logs", None) or ())
            for info in getattr(record, "job_error_info", None) or ():
                logs = tuple(str(log) for log in info.get("log") or ()) + aux
                self.failed[info["jobid"]] = FailedJob(info["rule_name"], info["jobid"], logs)
        elif event == LogEvent.JOB_FINISHED:
            self.failed.pop(getattr(record, "job_id", None), None)
        elif event == LogEvent.ERROR:
            self.error = True
        elif is_stop_on_request(record):
            self.interrupted = True

    # --- what is shown

    def text(self, record: logging.LogRecord) -> Optional[str]:
        """The console's text of a record; None: not shown."""
        event = getattr(record, "event", None)
        if event == LogEvent.ERROR and getattr(record, "exception", None) in self.plain_errors:
            return self.plain_errors[record.exception]
        if self.full:
            return self.format(record)
        if event is None and quietness_name(getattr(record, "quietness", None)) == "RULES":
            return None  # "Removing temporary output ...": one per temporary, thousands in a cohort
        if event == LogEvent.GROUP_INFO and self.dry_run:
            return None  # a group job's heading, whose job lines a dry run does not show
        if event == LogEvent.JOB_INFO:
            if self.dry_run:
                return None  # a dry run's Job stats and reasons say what will run
            return ("    " if getattr(record, "indent", False) else "") + job_line(record.__dict__)
        if event == LogEvent.JOB_STARTED:
            return None  # "Execute N jobs...": each job's own line follows
        if event == LogEvent.JOB_FINISHED:
            return f"[{time.asctime()}] {record.getMessage()}"
        if event == LogEvent.RUN_INFO:
            stats = getattr(record, "stats", None)
            repeated = stats is not None and stats == self.last_stats
            self.last_stats = stats
            return None if repeated else self.format(record)
        if is_scheduler_chatter(record) and not self.failed and not is_stop_on_request(record):
            return None  # (after a failure its lines say how the run stops)
        return self.format(record)

    def handle(self, record: logging.LogRecord):
        """Every record is noted before Snakemake's filter decides what is shown (it drops the
        WORKFLOW_STARTED record in some 9.x releases, and job errors with --quiet rules)."""
        try:
            self.note(record)
        except Exception:
            self.handleError(record)
        return super().handle(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.text(record)
            if text is None or text in ("", "None"):
                return
            self.write(text, record.levelname, getattr(record, "event", None), record.levelno)
        except Exception:
            self.handleError(record)

    def write(self, text: str, level: str = "INFO", event=None, levelno: int = logging.INFO) -> None:
        if self.colour and level in _COLOURS:
            colour = _COLOURS["WARNING"] if levelno == logging.INFO and event in _YELLOW_INFO else _COLOURS[level]
            text = f"\033[{colour}m{text}\033[0m"
        self.stream.write(text + "\n")
        self.stream.flush()

    # --- the end of the run: Snakemake closes its plugin handlers after the run's last record
    # (LoggerManager.stop; releases before 9.2x leave them to logging's shutdown at exit)

    def run_end(self) -> RunEnd:
        return RunEnd(self.dry_run, tuple(self.failed.values()), self.error, self.interrupted)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                if self.started and "ALL" not in self.quiet:
                    end = self.run_end()
                    for closing in self.closings.values():
                        text = closing(end)
                        if text:
                            self.write(text, "ERROR" if end.failed_jobs or end.interrupted else "INFO")
            except Exception:  # the run is over: say so, never raise from Snakemake's clean-up
                traceback.print_exc(file=sys.stderr)
            finally:
                if self in _ACTIVE:
                    _ACTIVE.remove(self)
        super().close()
