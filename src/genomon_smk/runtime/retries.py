"""Retries that grow what a job was short of, and no blind retries of anything else.

The cluster profiles set `retries: 1`, and Snakemake resubmits a failed job whatever killed it.
Here, in the Snakemake process, the failure each executor reports is read as it is logged, from
the executors' data: the Slurm job state the Slurm plugin reports (TIMEOUT, OUT_OF_MEMORY,
NODE_FAIL), the failure kind the PJM plugin records in its job-failures.jsonl (elapse, memory,
disk, node); and, where no executor says it (a group job), the tail of the scheduler's own job
log, where slurmstepd writes `CANCELLED ... DUE TO TIME LIMIT` or `exceeded memory limit`:

- short of run time or memory (LLIO/local disk on PJM): the next attempt asks for that resource
  times (1 + the earlier attempts short of it) -- `runtime` x 2 after one timeout -- whatever
  the value came from (the rule table genomon_smk.plan.rules, the profile's default-resources,
  a --set-resources); the other resources stay;
  -- except where the executor says it cannot grow (the PJM plugin's memory kill without
  `--pjm-node-mem`: a PJM job has its whole node's memory already), which is not retried;
- a node failure: retried as it was;
- anything else (a tool's error, bad input, a cancelled job): the next attempt does no work. The
  Snakemake process writes the first error to a marker file (.snakemake/genomon-retry/, keyed by
  the job's log file); the job process of the next attempt finds it when it evaluates the job's
  resources, before the rule runs, and fails at once with that error.

Why a marker in the job and not a refusal in the Snakemake process: Snakemake retries every
failed job its rule allows (`retries`), and offers no hook to refuse one retry: a resource
function that raised in the Snakemake process would end the whole run (and --keep-going with
it), where the job process raising fails only that job. The cost of a refused retry is one
short scheduler job, not the work again. The local executor runs jobs in the Snakemake process,
where nothing is refused: local runs keep Snakemake's own --retries.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
from dataclasses import dataclass, field

from genomon_smk.plan import snakemake_adapter

# What each executor reports, as data: the Slurm plugin's job state (its message names the state
# Slurm gave the job: `SLURM status is: 'TIMEOUT'`) and the PJM plugin's failure kind (one JSON
# line per failed job in its log directory's job-failures.jsonl: elapse, memory, disk, node, ...,
# from PJM's end code). A state or kind not listed here is a failure that is not retried.
SLURM_STATES: dict[str, str] = {"TIMEOUT": "runtime", "OUT_OF_MEMORY": "mem_mb", "NODE_FAIL": "node",
                                "BOOT_FAIL": "node"}
PJM_KINDS: dict[str, str] = {"elapse": "runtime", "memory": "mem_mb", "disk": "pjm_localtmp", "node": "node"}
NODE = "node"  # (a failure of the machine, not of the job: retried as it was)
_SLURM_STATE = re.compile(r"SLURM status is: '([A-Z_]+)'")
PJM_FAILURES_FILE = "job-failures.jsonl"  # snakemake_executor_plugin_pjm.FAILURES_FILE
# The job logs' own words, for what no executor reports: a group job's Slurm log (Snakemake 9
# drops the executor's message of a group job), where slurmstepd writes why it ended the job, and
# the job's own notice of a full node_local (job-shell.sh, genomon_smk.plan.tier_space), which on
# PJM is the LLIO localtmp the profile sizes with pjm_localtmp (a cluster without that resource
# retries the job as it was, maybe on a node with more room). Matched case-insensitively.
LOG_WORDS: dict[str, tuple[str, ...]] = {
    "runtime": ("DUE TO TIME LIMIT",),
    "mem_mb": ("exceeded memory limit", "oom_kill", "oom-kill"),
    "pjm_localtmp": ("genomon-smk: no space left on node_local",),
}
# The resources a retry grows.
GROWN = ("runtime", "mem_mb", "pjm_localtmp")
# How much of a job's scheduler log (its end) is read for the words above.
LOG_TAIL_BYTES = 8192
MARKER_DIR = ".snakemake/genomon-retry"


@dataclass(frozen=True)
class Failure:
    """What one failed attempt was short of (resource names), whether the node failed, and
    the words the executor reported."""

    short_of: frozenset[str]
    node: bool
    reported: str

    @property
    def retried(self) -> bool:
        return bool(self.short_of) or self.node


def slurm_state(reported: str) -> str | None:
    """The Slurm job state the Slurm plugin's error message names, or None."""
    found = _SLURM_STATE.search(reported or "")
    return found.group(1) if found else None


def classify(reported: str, kind: str | None = None, log_text: str = "", fixed=frozenset()) -> Failure:
    """The Failure of one attempt: from the executor's data (the Slurm state in its message, the
    PJM plugin's failure kind) and, for what they do not say, the job logs' own words. `fixed`:
    the resources the executor says cannot grow there (PJM's memory on a cluster whose node
    memory is fixed): not retried for them."""
    levers = set()
    state = slurm_state(reported)
    if state in SLURM_STATES:
        levers.add(SLURM_STATES[state])
    if kind in PJM_KINDS:
        levers.add(PJM_KINDS[kind])
    text = log_text.lower()
    levers |= {name for name, words in LOG_WORDS.items() if any(word.lower() in text for word in words)}
    return Failure(frozenset(levers - {NODE} - set(fixed)), NODE in levers, (reported or "").strip())


def pjm_failure(logs) -> dict:
    """The record the PJM plugin wrote for this failed job in its job-failures.jsonl (in its log
    directory, the parent of the job's per-rule PJM logs LOGDIR/RULE/NAME.PJMID.out/.err listed
    among the error record's logs), found by its PJM job id; {} when there is none (another
    executor)."""
    for path in logs or ():
        path = first_log([path])
        name = os.path.basename(path)
        here = os.path.dirname(path)
        for failures in (os.path.join(here, PJM_FAILURES_FILE), os.path.join(os.path.dirname(here), PJM_FAILURES_FILE)):
            if not os.path.exists(failures):
                continue
            for line in reversed(log_tail(failures, 256 * 1024).splitlines()):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                job_id = str(record.get("pjm_jobid", ""))
                if job_id and name.endswith((f".{job_id}.out", f".{job_id}.err")):
                    return record
    return {}


def pjm_fixed(record: dict) -> frozenset:
    """The resources a PJM failure record says a retry cannot grow (retry: false for its kind)."""
    lever = PJM_KINDS.get(record.get("kind"))
    return frozenset({lever}) if lever and lever != NODE and record.get("retry") is False else frozenset()


def log_tail(path: str, size: int = LOG_TAIL_BYTES) -> str:
    """The last `size` bytes of a file, "" if it cannot be read."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - size))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def marker_path(log: str, workdir: str = ".") -> str:
    """Where the first error of the job whose (first) log file is `log` is kept for its next
    attempt: one small file per job under .snakemake/ of the working directory, which the
    cluster jobs share."""
    key = hashlib.sha1(os.path.normpath(log).encode()).hexdigest()[:20]
    return os.path.join(workdir, MARKER_DIR, key)


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*")


def scaled(value, factor: int):
    """A resource value times factor: a number, or a size such as PJM's '16Gi' (kept in its
    unit, rounded up); anything else (an unevaluated value) as it is."""
    if factor == 1 or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return int(value * factor)
    if isinstance(value, str) and (found := _SIZE.fullmatch(value)):
        number = float(found.group(1)) * factor
        return f"{int(number) if number == int(number) else int(number) + 1}{found.group(2)}"
    return value


@dataclass
class Attempts:
    """The failures of this run's jobs, by their (first) log file, as the Snakemake process saw
    them; each job's state is also written to its marker file for the job process of its next
    attempt: {"short_of": {resource: attempts short of it}, "stop": first error or null}."""

    workdir: str = "."
    jobs: dict[str, dict] = field(default_factory=dict)

    def failed(self, log: str, failure: Failure) -> None:
        """Record one failed attempt: count what it was short of; or, for a failure that is
        not retried, keep its words for the next attempts (the first such error of this run)."""
        log = os.path.normpath(log)
        state = self.jobs.setdefault(log, {"short_of": {}, "stop": None})
        if failure.retried:
            for resource in failure.short_of:
                state["short_of"][resource] = state["short_of"].get(resource, 0) + 1
            state["stop"] = None
        elif state["stop"] is None:  # else a refused attempt failing: keep the first error
            state["stop"] = failure.reported or "(no reason reported)"
        path = marker_path(log, self.workdir)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(f"{path}.tmp", "w") as out:
            json.dump(state, out)
        os.replace(f"{path}.tmp", path)

    def state(self, log: str, in_job: bool) -> dict:
        """The job's state: this process's record, or in a job process its marker file."""
        log = os.path.normpath(log)
        if not in_job:
            return self.jobs.get(log, {})
        try:
            with open(marker_path(log, self.workdir)) as marker:
                return json.load(marker)
        except (OSError, ValueError):
            return {}

    def forget(self) -> None:
        """After a successful run: remove the marker files of this run's failed attempts."""
        for log in self.jobs:
            remove_quietly(marker_path(log, self.workdir))
        self.jobs.clear()

    def factor(self, log: str, resource: str, in_job: bool = False) -> int:
        """1 + the earlier attempts of the job that were short of `resource`."""
        return 1 + self.state(log, in_job).get("short_of", {}).get(resource, 0)


def remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def refusal(state: dict, log: str, attempt: int) -> str | None:
    """In the job process of attempt > 1: why this attempt is not run (the first error of an
    earlier attempt that was not short of a resource), or None."""
    if not state.get("stop"):
        return None
    return (
        f"attempt {attempt} of this job does not run: an earlier attempt failed, and not for lack "
        f"of memory, run time or local disk (those retries get more of it), so it would fail the "
        f"same way. Its error: {state['stop'].strip()} (the rule's log: {log}). Fix the cause and rerun."
    )


def first_log(logs) -> str | None:
    """A job's first log file as the error record lists it ('path' or 'path (flags)')."""
    for entry in logs or ():
        return str(entry).split(" (", 1)[0]
    return None


# What a resource is, in the console line of a failure (verdict).
RESOURCE_WORDS = {"runtime": "run time", "mem_mb": "memory", "pjm_localtmp": "LLIO local disk (pjm_localtmp)"}


def verdict(failure: Failure, log: str) -> str:
    """The console line of a failed job (named by its first log): what its retry, if the rule has
    one left, will do. Snakemake's own error block says only that the job failed. Printed for the
    failures that are retried."""
    if failure.short_of:
        short = " and ".join(RESOURCE_WORDS.get(name, name) for name in sorted(failure.short_of))
        return f"genomon-smk: the job of {log} ran short of {short}: a retry asks for more of it"
    if failure.node:
        return f"genomon-smk: the job of {log} lost its node: a retry runs it as it was"
    return (f"genomon-smk: the job of {log} failed, not for lack of run time, memory or disk: a retry"
            " stops at once with this error (fix the cause and run again)")


class FailureHandler(logging.Handler):
    """Reads Snakemake's job error records (the `extra` of its log events: rule_msg, log,
    aux_logs, job_error_info) into an Attempts. A group job's record carries no message in
    Snakemake 9 (GroupJob.log_error drops it): its scheduler log is read. An executor that
    reports no reason (cluster-generic, whose status scripts say only `failed`; the local
    executor) gives a failure that is not retried."""

    def __init__(self, attempts: Attempts):
        super().__init__(logging.ERROR)
        self.attempts = attempts

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event = str(getattr(record, "event", ""))
            if event.endswith("job_error") and not getattr(record, "indent", False):
                # (indented: a member of a group job, after the group's record)
                self.job_failed(getattr(record, "rule_msg", None) or "", getattr(record, "log", []))
            elif event.endswith("group_error"):
                aux_logs = list(getattr(record, "aux_logs", []) or [])
                for info in getattr(record, "job_error_info", []) or []:
                    logs = list(info.get("log", []) or [])
                    self.job_failed(f"group job {getattr(record, 'groupid', '')} failed", logs[:1] + aux_logs)
        except Exception:  # never let the bookkeeping break Snakemake's logging
            self.handleError(record)

    def job_failed(self, message: str, logs: list) -> None:
        log = first_log(logs)
        if log is None:
            return
        # The scheduler's logs (listed after the rule's own) may say what the executor does not.
        log_text = "\n".join(log_tail(first_log([path])) for path in list(logs)[1:])
        record = pjm_failure(list(logs)[1:])
        failure = classify(message, record.get("kind"), log_text, pjm_fixed(record))
        named = ", ".join(first_log([path]) for path in logs)
        self.attempts.failed(log, Failure(failure.short_of, failure.node, f"{message.strip()} [logs: {named}]"))
        if failure.retried:  # (a refused retry explains itself when its job process stops)
            print(verdict(failure, log), file=sys.stderr)


def watch_failures(workflow, attempts: Attempts) -> None:
    """In the Snakemake process only (not in a job's own Snakemake, --mode remote/subprocess):
    read its job error records into `attempts`. The logger is Snakemake's, whose records carry
    the error's `extra` (Snakemake 9)."""
    if snakemake_adapter.is_job_process(workflow):
        return
    logger = snakemake_adapter.snakemake_logger()
    if not any(isinstance(handler, FailureHandler) for handler in logger.handlers):
        logger.addHandler(FailureHandler(attempts))


def grow_on_retry(workflow, attempts: Attempts, under=None) -> None:
    """Make every rule's run time, memory and PJM local disk grow on the attempts after one short
    of them, and make the job process of an attempt after a failure that is not retried fail at
    once (refusal). Call once all rules are defined (the resources Snakemake ends with: after
    default-resources, the rule's own and set-resources; snakemake_adapter.wrap_resources).
    under: the workflow's directory, so that a host workflow's own rules are left as they are."""
    snakemake_adapter.wrap_resources(
        workflow, tuple(GROWN), lambda name, value, log_of: grown(name, value, log_of, attempts, workflow), under
    )


def grown(name: str, value, log_of, attempts: Attempts, workflow):
    """A resource function: the original value times the job's factor (Attempts.factor). value:
    the rule's own resource function; log_of: a job's first log file from its wildcards."""

    def evaluate(wildcards, input, attempt, threads, rulename, async_run):
        original = value(wildcards, input, attempt, threads, rulename, async_run)
        if attempt == 1:
            return original
        log = log_of(wildcards)
        # In the job process of this attempt: its marker; in the Snakemake process: its record.
        in_job = attempt == snakemake_adapter.job_attempt(workflow)
        state = attempts.state(log, in_job)
        if in_job and (why := refusal(state, log, attempt)):
            raise RetryRefused(why)
        return scaled(original, 1 + state.get("short_of", {}).get(name, 0))

    return evaluate


class RetryRefused(Exception):
    """The job process of an attempt after a failure that is not retried: ends the job."""
