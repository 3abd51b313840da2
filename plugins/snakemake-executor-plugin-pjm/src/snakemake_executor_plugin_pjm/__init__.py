"""Snakemake executor plugin for the Fujitsu job manager PJM (Fugaku): every job is submitted
with pjsub; ONE `pjstat -v` per status round for all jobs in flight (plus one `pjstat -H -v`
for the jobs that left the current list); ONE pjdel for all jobs on cancel. Failed jobs are
reported with their PJM state and codes in words, and recorded in LOGDIR/job-failures.jsonl."""

import json
import os
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncGenerator, List, Optional

from snakemake_interface_executor_plugins.executors.base import SubmittedJobInfo
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.jobs import JobExecutorInterface
from snakemake_interface_executor_plugins.settings import CommonSettings, ExecutorSettingsBase

from .pjm import StatusRounds, job_name, log_files, submit_command, submitted_job_id

FAILURES_FILE = "job-failures.jsonl"


@dataclass
class ExecutorSettings(ExecutorSettingsBase):
    logdir: Optional[Path] = field(
        default=None,
        metadata={
            "help": "Directory of the PJM jobs' stdout/stderr (NAME.JOBID.out/.err) and of "
            f"{FAILURES_FILE}; relative to the working directory. Default: .snakemake/pjm-logs",
            "env_var": False,
            "required": False,
        },
    )
    status_grace_seconds: int = field(
        default=120,
        metadata={
            "help": "A job listed by neither 'pjstat -v' nor 'pjstat -H -v' is still taken as "
            "running for this many seconds (PJM lags between its lists), then as failed.",
            "env_var": False,
            "required": False,
        },
    )


common_settings = CommonSettings(
    non_local_exec=True,
    implies_no_shared_fs=False,
    job_deploy_sources=False,
    pass_default_storage_provider_args=True,
    pass_default_resources_args=True,
    pass_envvar_declarations_to_cmd=True,
    auto_deploy_default_storage_provider=False,
)


class Executor(RemoteExecutor):
    def __post_init__(self):
        settings = self.workflow.executor_settings
        logdir = Path(settings.logdir or ".snakemake/pjm-logs")
        self.logdir = (Path(self.workflow.workdir_init) / logdir).resolve()
        self.rounds = StatusRounds(self.pjstat, settings.status_grace_seconds)

    # --- submission -------------------------------------------------------------------------

    def get_job_exec_prefix(self, job: JobExecutorInterface):
        return f"cd {shlex.quote(os.path.abspath(self.workflow.workdir_init))}"

    def run_job(self, job: JobExecutorInterface):
        jobscript = self.get_jobscript(job)
        self.write_jobscript(job, jobscript)
        name = job_name(job.name)
        self.logdir.mkdir(parents=True, exist_ok=True)
        command = submit_command(jobscript, name, job.resources, self.logdir)
        # The job gets this environment (-X), but its Snakemake must run the job, not the profile.
        env = {key: value for key, value in os.environ.items() if key != "SNAKEMAKE_PROFILE"}
        try:
            done = subprocess.run(command, cwd=self.workflow.workdir_init, env=env, capture_output=True,
                                  text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            self.report_job_error(SubmittedJobInfo(job), msg=f"pjsub could not be started: {error}\n")
            return
        job_id = submitted_job_id(done.stdout) if done.returncode == 0 else None
        if job_id is None:
            self.report_job_error(
                SubmittedJobInfo(job),
                msg=f"pjsub failed (exit {done.returncode}): {shlex.join(command)}\n"
                f"{done.stdout}{done.stderr}\n",
            )
            return
        logs = log_files(self.logdir, name, job_id)
        self.logger.info(f"Job {job.jobid} has been submitted with PJM jobid {job_id} (log: {logs[0]}).")
        self.report_job_submission(SubmittedJobInfo(job, external_jobid=job_id, aux={"logs": logs}))

    # --- status -------------------------------------------------------------------------------

    def pjstat(self, args):
        """The stdout of one pjstat call; "" if it fails (the job's grace period then applies)."""
        try:
            done = subprocess.run(["pjstat", *args], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as error:
            self.logger.warning(f"pjstat {' '.join(args)} failed: {error}")
            return ""
        if done.returncode != 0:
            self.logger.debug(f"pjstat {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    async def check_active_jobs(
        self, active_jobs: List[SubmittedJobInfo]
    ) -> AsyncGenerator[SubmittedJobInfo, None]:
        # RemoteExecutor starts the thread that calls this before its own __init__ and our
        # __post_init__ are done (no rate limiter, no self.rounds yet): nothing to do until the
        # first job is submitted, which is after both.
        if not active_jobs:
            return
        async with self.status_rate_limiter:
            status = self.rounds.check([info.external_jobid for info in active_jobs])
        for info in active_jobs:
            end = status.get(info.external_jobid)
            if end is None:
                yield info
            elif end.success:
                self.report_job_success(info)
            else:
                self.record_failure(info, end)
                self.report_job_error(info, msg=end.reason + "\n", aux_logs=info.aux.get("logs", []))

    def record_failure(self, info, end):
        """One JSON line per failed job in LOGDIR/job-failures.jsonl: what a retry policy needs
        (rule, wildcards, attempt, kind: elapse, memory, disk, node, cancelled, exit, ...)."""
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
            **{("pjm_reason" if key == "REASON" else key.lower()): value for key, value in end.codes.items()},
        }
        try:
            with open(self.logdir / FAILURES_FILE, "a") as out:
                out.write(json.dumps(record) + "\n")
        except OSError as error:
            self.logger.warning(f"cannot record the failure in {self.logdir / FAILURES_FILE}: {error}")

    # --- cancel -------------------------------------------------------------------------------

    def cancel_jobs(self, active_jobs: List[SubmittedJobInfo]):
        """One pjdel for all jobs in flight."""
        ids = [info.external_jobid for info in active_jobs if info.external_jobid]
        if not ids:
            return
        try:
            done = subprocess.run(["pjdel", *ids], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as error:
            self.logger.warning(f"pjdel {' '.join(ids)} failed: {error}")
            return
        self.logger.info((done.stdout + done.stderr).strip())
