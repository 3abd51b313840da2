"""Snakemake executor plugin for the Fujitsu job manager PJM (Fugaku): every job is submitted
with pjsub; ONE `pjstat -v` per status round for all jobs in flight (plus one `pjstat -H -v`
for the jobs that left the current list); ONE pjdel for all jobs on cancel. Failed jobs are
reported with their PJM state and codes in words, and recorded in LOGDIR/job-failures.jsonl.

Fugaku at first contact: jobs run the compute nodes' own Python (--pjm-compute-venv, checked
against this side's versions before any job); a failing or hung pjstat keeps jobs running and
only a bounded outage ends the run (its jobs cancelled with pjdel first); the per-user accept
limit (`pjstat --limit`) is kept and a pjsub refused for a limit is tried again later; a memory
kill gets more memory only where the site offers -L node-mem (--pjm-node-mem); successful
jobs' logs are removed (--pjm-keep-logs keeps them), the others kept in per-rule directories."""

import asyncio
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import AsyncGenerator, List, Optional

from snakemake_interface_common.exceptions import WorkflowError
from snakemake_interface_executor_plugins.executors.base import SubmittedJobInfo
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.jobs import JobExecutorInterface
from snakemake_interface_executor_plugins.settings import CommonSettings, ExecutorSettingsBase

from .pjm import (
    StatusRounds,
    accept_budget,
    failure_message,
    given_up,
    installed_versions,
    job_exec_prefix,
    job_name,
    log_dir_of,
    log_files,
    normalized,
    parse_limits,
    refused_for_limit,
    retry_advice,
    run_command,
    submit_command,
    submitted_job_id,
    venv_of,
    version_mismatches,
)

FAILURES_FILE = "job-failures.jsonl"
# Checked between the login side and the compute venv before any job is submitted.
CHECKED_PACKAGES = ("snakemake", "snakemake-interface-executor-plugins", "snakemake-executor-plugin-pjm",
                    "genomon-smk")


def _setting(help_text, default=None, **extra):
    return field(default=default, metadata={"help": help_text, "env_var": False, "required": False, **extra})


@dataclass
class ExecutorSettings(ExecutorSettingsBase):
    logdir: Optional[Path] = _setting(
        "Directory of the PJM jobs' stdout/stderr (RULE/NAME.JOBID.out/.err, one directory per rule) "
        f"and of {FAILURES_FILE}; relative to the working directory. Default: .snakemake/pjm-logs")
    keep_logs: bool = _setting("Keep the PJM stdout/stderr of successful jobs too (default: removed when "
                               "the job succeeded; failed jobs' logs are always kept).", False)
    status_grace_seconds: int = _setting(
        "A job listed by neither 'pjstat -v' nor 'pjstat -H -v' (both answered) is still taken as "
        "running for this many seconds (PJM lags between its lists), then cancelled with pjdel and "
        "reported failed.", 120)
    compute_venv: Optional[Path] = _setting(
        "The venv of the compute nodes (its bin/python runs every job, its bin/ comes first on the "
        "job's PATH). On Fugaku the login nodes are x86-64 and the compute nodes aarch64: a venv "
        "built on a compute node with the same versions. Its installed packages (*.dist-info) are "
        "checked against this side's before any job is submitted. Give this venv itself where login "
        "and compute nodes share an architecture.")
    compute_python: Optional[str] = _setting(
        "The interpreter a job runs Snakemake with, as the job sees it: an absolute path, or a name "
        "found on the job's PATH after --pjm-precommand (e.g. python3 after `spack load`). Default: "
        "COMPUTE_VENV/bin/python.")
    precommand: Optional[str] = _setting(
        "Shell commands a job runs before its Snakemake (e.g. '. /vol0004/apps/oss/spack/share/spack/"
        "setup-env.sh && spack load py-pip'), before the compute venv is put on PATH.")
    status_timeout_seconds: int = _setting(
        "A pjstat/pjdel/pjsub call that has not answered after this many seconds is killed and counts "
        "as failed.", 60)
    status_outage_seconds: int = _setting(
        "pjstat failing (or hanging) keeps every job running; the run ends (its jobs cancelled with "
        "pjdel) only when pjstat has failed for this many seconds AND --pjm-status-outage-rounds "
        "rounds in a row.", 1800)
    status_outage_rounds: int = _setting("See --pjm-status-outage-seconds.", 5)
    accept_limit: Optional[int] = _setting(
        "The most jobs of this user PJM accepts at once (default: ru-accept of 'pjstat --limit' at "
        "start; 0 = none). Jobs beyond it wait in the plugin and are submitted as others end; a pjsub "
        "refused for a limit is tried again later.")
    node_mem: bool = _setting(
        "The site offers -L node-mem=: pass each job's mem_mb as -L node-mem=<mem_mb>Mi, so a retry "
        "after a memory kill gets more. Without it a PJM job has its whole node's memory and a memory "
        "kill is not retried.", False)


common_settings = CommonSettings(
    non_local_exec=True,
    implies_no_shared_fs=False,
    job_deploy_sources=False,
    pass_default_storage_provider_args=True,
    pass_default_resources_args=True,
    pass_envvar_declarations_to_cmd=True,
    auto_deploy_default_storage_provider=False,
)


def login_versions(names):
    """{normalized name: version} of this interpreter's installed distributions among names."""
    versions = {}
    for name in names:
        try:
            versions[normalized(name)] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


class Executor(RemoteExecutor):
    def __post_init__(self):
        settings = self.workflow.executor_settings
        self.settings = settings
        logdir = Path(settings.logdir or ".snakemake/pjm-logs")
        self.logdir = (Path(self.workflow.workdir_init) / logdir).resolve()
        self.timeout = max(1, settings.status_timeout_seconds)
        self.rounds = StatusRounds(self.pjstat, settings.status_grace_seconds, settings.status_outage_seconds,
                                   max(1, settings.status_outage_rounds))
        self.compute_venv, self.compute_python = self.check_compute_side(settings)
        self.submit_lock = threading.Lock()
        self.in_flight = set()  # PJM ids of this run's jobs not yet seen ending
        self.limit = self.read_accept_limit(settings.accept_limit)
        self.budget = self.limit
        self.reserved = 0  # submissions under way (see room)
        self.refused_until = 0.0
        self.gave_up = None

    # --- the compute side -----------------------------------------------------------------------

    def check_compute_side(self, settings):
        """(compute venv or None, the job's interpreter); refuses a run whose job script would run
        the login node's interpreter unasked, or whose compute venv has other versions."""
        venv = Path(settings.compute_venv).expanduser().resolve() if settings.compute_venv else None
        python = settings.compute_python or (str(venv / "bin" / "python") if venv else None)
        if python is None:
            raise WorkflowError(
                "PJM: no interpreter for the compute nodes. Give --pjm-compute-venv DIR (profile key "
                "pjm-compute-venv): a venv built on a compute node with the same versions as this one "
                f"({sys.executable}); on Fugaku the login nodes are x86-64 and the compute nodes aarch64, "
                "so this interpreter cannot run in a job. Where both share an architecture, give this "
                f"venv itself (--pjm-compute-venv {Path(sys.prefix)}).")
        venv = venv or venv_of(python)
        if venv is None:
            self.logger.warning(f"PJM: jobs run Snakemake with '{python}' (from the job's PATH after "
                                "--pjm-precommand): its versions cannot be checked from here; they must "
                                "equal this side's.")
            return None, python
        if not (venv / "pyvenv.cfg").is_file():
            raise WorkflowError(f"PJM: --pjm-compute-venv {venv} is not a venv (no pyvenv.cfg).")
        compute = installed_versions(venv)
        problems = version_mismatches(login_versions(CHECKED_PACKAGES), compute, CHECKED_PACKAGES)
        if problems:
            raise WorkflowError(
                f"PJM: the compute venv {venv} does not match this side ({sys.prefix}); no job was "
                "submitted: " + "; ".join(problems) + ". Install the same versions in both (docs/clusters.md, "
                "Fugaku).")
        self.logger.info(f"PJM: jobs run {python} (compute venv {venv}; snakemake "
                         f"{compute.get('snakemake', '?')}, versions checked).")
        return venv, python

    def get_python_executable(self):
        return self.compute_python

    def additional_general_args(self):
        """The job's own Snakemake only runs its target job; whether anything upstream must run
        again was decided here. Its params naming the interpreter (the workflow's sys.executable)
        differ between this side and the compute venv, so `params` must not make the job's
        Snakemake rerun upstream rules inside the job: every other trigger stays."""
        if self.compute_python == sys.executable:
            return ""
        return "--rerun-triggers code input mtime software-env"

    def get_job_exec_prefix(self, job: JobExecutorInterface):
        return job_exec_prefix(os.path.abspath(self.workflow.workdir_init), self.compute_venv,
                               self.settings.precommand)

    # --- limits ---------------------------------------------------------------------------------

    def run_sync(self, args, timeout=None):
        """(exit code, stdout, stderr) or None (could not start, or timed out)."""
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=timeout or self.timeout,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.returncode, done.stdout, done.stderr

    def read_accept_limit(self, setting):
        """The accept limit: the setting, else ru-accept of `pjstat --limit` (None = no limit)."""
        if setting is not None:
            return setting or None
        answer = self.run_sync(["pjstat", "--limit"])
        if answer is None or answer[0] != 0:
            self.logger.warning("PJM: 'pjstat --limit' failed: the accept limit is unknown (a pjsub "
                                "refused for a limit is tried again later).")
            return None
        limit = parse_limits(answer[1]).get("ru-accept")
        if limit is not None:
            self.logger.info(f"PJM: at most {limit} jobs accepted at once (ru-accept of 'pjstat --limit').")
        return limit

    def room(self):
        """True while another job may be accepted (call with submit_lock held); a True reserves
        a place until submit() ends, so that the scheduler's and the status round's submissions
        never pass the limit together."""
        if time.monotonic() < self.refused_until:
            return False
        if self.budget is not None and len(self.in_flight) + self.reserved >= self.budget:
            return False
        self.reserved += 1
        return True

    # --- submission -----------------------------------------------------------------------------

    def run_job(self, job: JobExecutorInterface):
        jobscript = self.get_jobscript(job)
        self.write_jobscript(job, jobscript)
        info = SubmittedJobInfo(job, aux={"jobscript": jobscript})
        if self.gave_up:
            self.report_job_error(info, msg=f"not submitted: {self.gave_up}\n")
            return
        with self.submit_lock:
            waiting = not self.room()
        if waiting:  # submitted by a status round when a job ends (the accept limit)
            self.report_job_submission(info)
            return
        if self.submit(info):
            self.report_job_submission(info)

    def submit(self, info):
        """pjsub for one job (a place reserved by room()): True when submitted
        (info.external_jobid set) or held back for a limit (tried again later); False when the
        job failed (reported)."""
        try:
            return self._submit(info)
        finally:
            with self.submit_lock:
                self.reserved -= 1

    def _submit(self, info):
        job = info.job
        name = job_name(job.name)
        log_dir = log_dir_of(self.logdir, job.name)
        log_dir.mkdir(parents=True, exist_ok=True)
        command = submit_command(info.aux["jobscript"], name, job.resources, log_dir, node_mem=self.settings.node_mem)
        # The job gets this environment (-X), but its Snakemake must run the job, not the profile.
        env = {key: value for key, value in os.environ.items() if key != "SNAKEMAKE_PROFILE"}
        try:
            done = subprocess.run(command, cwd=self.workflow.workdir_init, env=env, capture_output=True,
                                  text=True, timeout=300, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            self.report_job_error(info, msg=f"pjsub could not be started: {error}\n")
            return False
        job_id = submitted_job_id(done.stdout) if done.returncode == 0 else None
        if job_id is None and refused_for_limit(done.stdout + done.stderr):
            with self.submit_lock:
                self.budget = max(1, len(self.in_flight))
                self.refused_until = time.monotonic() + 10
            self.logger.warning(f"PJM refused job {job.jobid} ({job.name}) for a limit; it is submitted again "
                                f"when fewer jobs are in flight (now {len(self.in_flight)}): "
                                f"{(done.stdout + done.stderr).strip()}")
            return True
        if job_id is None:
            self.report_job_error(
                info,
                msg=f"pjsub failed (exit {done.returncode}): {shlex.join(command)}\n{done.stdout}{done.stderr}\n",
            )
            return False
        with self.submit_lock:
            self.in_flight.add(job_id)
        info.external_jobid = job_id
        info.aux["logs"] = log_files(log_dir, name, job_id)
        self.logger.info(f"Job {job.jobid} has been submitted with PJM jobid {job_id} (log: {info.aux['logs'][0]}).")
        return True

    # --- status ---------------------------------------------------------------------------------

    async def pjstat(self, args):
        """The stdout of one pjstat call, None if it failed or did not answer in time."""
        answer = await run_command(["pjstat", *args], self.timeout)
        if answer is None:
            self.logger.warning(f"pjstat {' '.join(args)} did not answer within {self.timeout}s (or could not start)")
            return None
        rc, out, err = answer
        if rc != 0:
            self.logger.warning(f"pjstat {' '.join(args)} failed (exit {rc}): {err.strip()[:300]}")
            return None
        return out

    async def pjdel(self, ids):
        """One pjdel for ids; True when pjdel answered (a finished job's 'does not exist' included)."""
        if not ids:
            return True
        answer = await run_command(["pjdel", *ids], self.timeout)
        if answer is None:
            self.logger.warning(f"pjdel {' '.join(ids)} did not answer within {self.timeout}s")
            return False
        self.logger.info((answer[1] + answer[2]).strip())
        return True

    async def check_active_jobs(
        self, active_jobs: List[SubmittedJobInfo]
    ) -> AsyncGenerator[SubmittedJobInfo, None]:
        # RemoteExecutor starts the thread that calls this before its own __init__ and our
        # __post_init__ are done (no rate limiter, no self.rounds yet): nothing to do until the
        # first job is submitted, which is after both.
        if not active_jobs:
            return
        submitted = [info for info in active_jobs if info.external_jobid]
        async with self.status_rate_limiter:
            round_ = await self.rounds.check([info.external_jobid for info in submitted])
        if round_.others is not None and self.limit is not None:
            with self.submit_lock:
                self.budget = accept_budget(self.limit, round_.others)
        if not round_.answered and not round_.skipped:
            self.logger.warning(
                f"PJM: pjstat failed {round_.failed_rounds} round(s) in a row ({round_.outage_seconds:.0f}s): "
                f"{len(submitted)} job(s) kept as running; the run ends only after "
                f"{self.settings.status_outage_seconds}s and {self.settings.status_outage_rounds} rounds.")
        if round_.give_up:
            async for info in self.give_up(active_jobs, round_):
                yield info
            return
        missing = [info for info in submitted if (end := round_.status.get(info.external_jobid)) is not None
                   and end.kind == "missing"]
        if missing:  # it may still run, unseen: never report a job failed that could still write
            await self.pjdel([info.external_jobid for info in missing])
        for info in submitted:
            end = round_.status.get(info.external_jobid)
            if end is None:
                yield info
                continue
            with self.submit_lock:
                self.in_flight.discard(info.external_jobid)
            if end.success:
                self.remove_logs(info)
                self.report_job_success(info)
            else:
                self.job_failed(info, end)
        for info in active_jobs:
            if info.external_jobid:
                continue
            if self.gave_up:
                self.report_job_error(info, msg=f"not submitted: {self.gave_up}\n")
                continue
            with self.submit_lock:
                ready = self.room()
            if not ready or await asyncio.to_thread(self.submit, info):  # (held back again: True)
                yield info

    async def give_up(self, active_jobs, round_):
        """A bounded outage is over its bound: cancel every job in flight with pjdel, report them
        failed, and end the run with the reason."""
        self.gave_up = (f"pjstat failed for {round_.outage_seconds:.0f}s ({round_.failed_rounds} status rounds in "
                        "a row): the run ends")
        submitted = [info for info in active_jobs if info.external_jobid]
        cancelled = await self.pjdel([info.external_jobid for info in submitted])
        for info in active_jobs:
            if not info.external_jobid:
                self.report_job_error(info, msg=f"not submitted: {self.gave_up}\n")
                continue
            end = given_up(info.external_jobid, round_.outage_seconds, round_.failed_rounds)
            if not cancelled:
                end.reason += " (pjdel did not answer either: check with pjstat and pjdel it by hand)"
            self.job_failed(info, end)
        raise WorkflowError(f"PJM: {self.gave_up}; its {len(submitted)} job(s) in flight were cancelled with "
                            "pjdel. Rerun when pjstat answers again (the run resumes where it stopped).")
        yield  # an async generator

    def remove_logs(self, info):
        if self.settings.keep_logs:
            return
        for path in info.aux.get("logs", []):
            try:
                os.remove(path)
            except OSError:
                pass

    def job_failed(self, info, end):
        grow, why_not = retry_advice(end, self.settings.node_mem)
        logs = info.aux.get("logs", [])
        self.record_failure(info, end, grow, why_not, logs)
        self.report_job_error(info, msg=failure_message(end, self.settings.node_mem, logs) + "\n", aux_logs=logs)

    def record_failure(self, info, end, grow=None, why_not=None, logs=()):
        """One JSON line per failed job in LOGDIR/job-failures.jsonl: what a retry policy needs
        (rule, wildcards, attempt, kind: elapse, memory, disk, node, cancelled, exit, missing,
        status-outage, ...; grow: the resource a retry should ask more of, or null; retry: false
        with why_not when a retry cannot help) and the job's PJM logs (kept)."""
        job = info.job
        try:
            wildcards = dict(job.wildcards.items())
        except AttributeError:
            wildcards = {}
        record = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "pjm_jobid": info.external_jobid,
            "rule": job.name,
            "wildcards": wildcards,
            "attempt": job.attempt,
            "kind": end.kind,
            "reason": end.reason,
            "grow": grow,
            "retry": why_not is None and end.kind not in ("status-outage",),
            "why_not": why_not,
            "logs": list(logs),
            **{("pjm_reason" if key == "REASON" else key.lower()): value for key, value in end.codes.items()},
        }
        try:
            self.logdir.mkdir(parents=True, exist_ok=True)
            with open(self.logdir / FAILURES_FILE, "a") as out:
                out.write(json.dumps(record) + "\n")
        except OSError as error:
            self.logger.warning(f"cannot record the failure in {self.logdir / FAILURES_FILE}: {error}")

    # --- cancel ---------------------------------------------------------------------------------

    def cancel_jobs(self, active_jobs: List[SubmittedJobInfo]):
        """One pjdel for all jobs in flight."""
        ids = [info.external_jobid for info in active_jobs if info.external_jobid]
        if not ids:
            return
        answer = self.run_sync(["pjdel", *ids], timeout=120)
        if answer is None:
            self.logger.warning(f"pjdel {' '.join(ids)} failed or did not answer")
            return
        self.logger.info((answer[1] + answer[2]).strip())
