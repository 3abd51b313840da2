"""Tests against a real single-node Slurm on localhost, started by `.test/slurm/start-slurm` (one
module: the pytest-xdist workers take a module as one unit, and one Slurm serves them all).

What is proven here, on Debian's Slurm 22.05 without accounting (see `.test/slurm/README.md`):
a plain `sbatch` job runs with a TMPDIR; Snakemake's `--executor slurm` (plugin 2.8.0) reports a
failing rule with its SLURM status and cancels its jobs on SIGINT; start-slurm is idempotent. Then
the pair scenario through profiles/slurm and profiles/slurm-allocation, run from a project
directory outside the checkout, gives the local run's results; a cancelled Slurm job is reported
and a rerun completes.

Snakemake is always started with SIGINT restored to its default: a process started in the background by a
non-interactive shell inherits SIGINT as *ignored*, and SIGINT is the only signal that makes a waiting
Snakemake cancel its Slurm jobs (SIGTERM does not). On a timeout the helper sends SIGINT, so no job is
left behind.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from conftest import (REPO, START_SLURM, assert_same_pair_results, finish_interruptible, pair_targets,
                      run_interruptible, scenario_variant, start_interruptible)

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]

FINAL_JOB_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
                    "PREEMPTED", "BOOT_FAIL", "DEADLINE"}


def sbatch_and_wait(args: list[str], cwd: Path, timeout: float, env: dict | None = None) -> tuple[int, str]:
    """Submit a batch job and poll squeue until it ends; return (job id, final state). Cancels on timeout.

    Not `sbatch --wait`: it polls with a growing interval and noticed an 11 s job only after 42 s.
    """
    submitted = subprocess.run(
        ["sbatch", "--parsable", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = int(submitted.stdout.strip().split(";")[0])
    deadline = time.monotonic() + timeout
    while (state := job_state(job_id)) not in FINAL_JOB_STATES:
        if time.monotonic() > deadline:
            subprocess.run(["scancel", str(job_id)], check=False)
            pytest.fail(f"Slurm job {job_id} still {state or 'unknown'} after {timeout} s")
        time.sleep(0.3)
    return job_id, state


def job_state(job_id: int | str) -> str:
    """Final or current state of a job as squeue reports it (finished jobs stay for MinJobAge)."""
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--jobs", str(job_id), "--format=%T"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    return out[0] if out else ""


def parse_job_fields(line: str) -> dict[str, str]:
    """'x job=12 step=0' -> {'job': '12', 'step': '0'}."""
    return dict(field.split("=", 1) for field in line.split() if "=" in field)


def test_sbatch_wrap_runs_on_this_node_with_tmpdir(slurm, tmp_path):
    """A plain batch job completes on this machine; Slurm gives it a job id and a TMPDIR."""
    script = 'hostname; echo "job=${SLURM_JOB_ID:-}"; echo "tmpdir=${TMPDIR:-}"; echo "slurm_tmpdir=${SLURM_TMPDIR:-}"'
    env_without_tmpdir = {key: value for key, value in os.environ.items() if key != "TMPDIR"}
    job_id, state = sbatch_and_wait(
        ["--output=job.out", "--wrap", script], cwd=tmp_path, timeout=60, env=env_without_tmpdir
    )
    assert state == "COMPLETED", (tmp_path / "job.out").read_text()
    lines = (tmp_path / "job.out").read_text().split()
    assert lines[0] == socket.gethostname()
    fields = parse_job_fields(" ".join(lines[1:]))
    assert fields["job"] == str(job_id)
    # With TMPDIR unset at submission, slurmd sets it to TmpFS (/tmp); SLURM_TMPDIR is not a Slurm variable.
    assert fields["tmpdir"] == "/tmp"
    assert fields["slurm_tmpdir"] == ""


def test_failing_rule_reports_slurm_status(slurm, tmp_path):
    """A rule exiting 3 fails the run and Snakemake names the SLURM job and its FAILED state.

    A succeeding job runs alongside on purpose: the plugin backs off by 10 s after a status round in which
    nothing succeeded, and shutdown waits for that sleep (a lone failing job costs ~22 s extra).
    """
    (tmp_path / "Snakefile").write_text(textwrap.dedent("""\
        rule boom:
            output: "boom.txt"
            shell: "echo boom-stderr >&2; exit 3"

        rule ok:
            output: "ok.txt"
            shell: "echo ok > {output}"
        """))
    rc, out = run_interruptible(
        # targets first: --default-resources takes all following words as resources
        ["boom.txt", "ok.txt", "--executor", "slurm", "--jobs", "2", "--keep-going",
         "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
         "--default-resources", "slurm_partition=debug", "mem_mb=500", "runtime=10"],
        cwd=tmp_path, timeout=120,
    )
    assert rc != 0, out[-4000:]
    failed = re.findall(r"SLURM-job '(\d+)' failed, SLURM status is: '(\w+)'", out)
    assert len(failed) == 1, out[-4000:]
    job_id, status = failed[0]
    assert status == "FAILED"
    assert job_state(job_id) == "FAILED"
    assert "Error in rule boom" in out
    assert not (tmp_path / "boom.txt").exists()
    assert (tmp_path / "ok.txt").read_text() == "ok\n"
    # the rule's own stderr is kept in the per-job Slurm log
    logs = list((tmp_path / ".snakemake/slurm_logs/rule_boom").glob(f"{job_id}.log"))
    assert logs and "boom-stderr" in logs[0].read_text()


def test_start_slurm_rerun_keeps_running_daemons(slurm):
    """A second start-slurm is a no-op check: same slurmctld/slurmd processes, node still usable."""
    state_dir = Path(re.search(r"state (\S+)", slurm).group(1))
    pids_before = {name: (state_dir / "run" / f"{name}.pid").read_text() for name in ("slurmctld", "slurmd")}
    result = subprocess.run([str(START_SLURM)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("start-slurm: ok:") and len(result.stdout.splitlines()) == 1
    pids_after = {name: (state_dir / "run" / f"{name}.pid").read_text() for name in ("slurmctld", "slurmd")}
    assert pids_after == pids_before
    assert "restarting" not in result.stderr


def test_sigint_makes_snakemake_cancel_its_slurm_job(slurm, tmp_path):
    """SIGINT (restored in the child) stops a waiting Snakemake, which scancels its running job."""
    (tmp_path / "Snakefile").write_text(textwrap.dedent("""\
        rule slow:
            output: "slow.txt"
            shell: "sleep 300; touch {output}"
        """))
    proc, log_path = start_interruptible(
        ["--executor", "slurm", "--jobs", "1",
         "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
         "--default-resources", "slurm_partition=debug", "mem_mb=500", "runtime=10"],
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 60
    while not (match := re.search(r"submitted with SLURM jobid (\d+)", log_path.read_text())):
        if proc.poll() is not None or time.monotonic() > deadline:
            finish_interruptible(proc, log_path, timeout=1)
            pytest.fail(f"no job submitted:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    job_id = match.group(1)
    proc.send_signal(signal.SIGINT)
    rc, out = finish_interruptible(proc, log_path, timeout=30)
    assert rc != 0
    assert "Terminating processes on user request" in out
    assert job_state(job_id) in {"CANCELLED", "COMPLETING"}  # COMPLETING while slurmd kills the step
    assert not (tmp_path / "slow.txt").exists()


# --- the pipeline through the Slurm profiles

# This test cluster has no accounting (poll with squeue), one 2-CPU node and a `debug` partition;
# one thread per job lets two jobs run at once. bwa -K keeps alignments independent of threads.
TEST_CLUSTER = [
    "--slurm-status-command", "squeue",
    "--slurm-init-seconds-before-status-checks", "2",
    "--latency-wait", "5",
    "--jobs", "4",
    # One group job (the profile bundles map jobs) fits the 2-CPU node: at most 2 map jobs at once.
    "--cores", "2", "--resources", "mem_mb=2000",
    "--set-resources", "map_reads:mem_mb=1000", "markdup:mem_mb=1500", "merge_bam:mem_mb=800",
    "identify_mutations:mem_mb=1000",
    "--default-resources", "slurm_partition=debug", "mem_mb=800", "runtime=30",
]
# On this one-node test cluster the plugin's status polling (it backs off by 10 s after every
# round in which no job finished) dominates: the many short markdup and mutation jobs of the
# pair also go in bundles (a site may do the same), so every rule still runs as a Slurm job.
# (--groups replaces the profile's list: its map bundle is repeated here.)
BUNDLES = ["--groups", "map_reads=map_bundle", "markdup=markdup_bundle", "identify_mutations=identify_bundle",
           "--group-components", "map_bundle=4", "markdup_bundle=6", "identify_bundle=5"]


def cancel_a_running_map_job(proc, timeout=300):
    """scancel the first map_reads job (a bundle of them: the profile groups map jobs) seen
    running while Snakemake runs; returns its Slurm job id, or None."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        queue = subprocess.run(["squeue", "--noheader", "--states=RUNNING", "--format=%i %k"],
                               capture_output=True, text=True).stdout
        for line in queue.splitlines():
            job_id, comment = (line.split(maxsplit=1) + [""])[:2]
            if "map_reads" in comment:
                subprocess.run(["scancel", job_id], check=True)
                return job_id
        time.sleep(0.5)
    return None


# The pair scenario in full: longer than the module's limit.
@pytest.mark.workflow
@pytest.mark.timeout(1500)
def test_slurm_profile_reports_a_cancelled_job_and_its_rerun_gives_the_local_results(
        slurm, scenario_root, request, tmp_path):
    """The pair scenario through profiles/slurm: a map job cancelled with scancel is reported
    failed (no retry in that run, --keep-going), and the rerun completes with the local results."""
    # From a project directory outside the checkout, as the README suggests.
    project = tmp_path / "project"
    scenario_variant(scenario_root, "config-pair", project, map={"threads": 1}, markdup={"threads": 1})
    results = project / "results"
    args = ["--snakefile", str(REPO / "workflow" / "Snakefile"), "--profile", str(REPO / "profiles" / "slurm"),
            "--configfile", "config.yaml", *TEST_CLUSTER, *BUNDLES]
    proc, log_path = start_interruptible([*args, "--retries", "0", "--keep-going", "--", *pair_targets(results)],
                                         cwd=project, log_path=tmp_path / "first.out")
    cancelled = cancel_a_running_map_job(proc)
    rc, first = finish_interruptible(proc, log_path, timeout=600)
    assert cancelled, f"no map_reads job seen running:\n{first[-3000:]}"
    assert rc != 0
    # The map jobs run bundled (a group job): Snakemake names the cancelled Slurm job as failed.
    assert re.search(rf"\b{cancelled}\b", first) and "failed" in first, first[-3000:]

    rc, rerun = run_interruptible([*args, "--", *pair_targets(results)], cwd=project, timeout=900,
                                  log_path=tmp_path / "rerun.out")
    assert rc == 0, rerun[-5000:]
    # Every job went through Slurm (the profile's path names it, so look for the plugin's own line).
    submitted = re.findall(r"has been submitted with SLURM jobid \d+", first + rerun)
    assert len(submitted) > 10, rerun[-3000:]
    assert_same_pair_results(results, request)


# The pair scenario in full: longer than the module's limit.
@pytest.mark.workflow
@pytest.mark.timeout(1500)
def test_slurm_allocation_profile_runs_rule_jobs_as_steps_of_one_allocation(
        slurm, scenario_root, request, tmp_path):
    # From a project directory outside the checkout: the allocation runs Snakemake there, so the
    # config is named relative to it.
    project = tmp_path / "project"
    scenario_variant(scenario_root, "config-pair", project, map={"threads": 1}, markdup={"threads": 1})
    log = tmp_path / "allocation.log"
    submitted = subprocess.run(
        ["bash", str(REPO / "profiles" / "slurm-allocation" / "submit"), "-N", "1", "-c", "2", "--mem=4000",
         f"--output={log}", "--", "--configfile", "config.yaml", "--set-resources", "map_reads:mem_mb=900", "markdup:mem_mb=900",
         "merge_bam:mem_mb=900", "identify_mutations:mem_mb=900", "--default-resources", "mem_mb=600", "--latency-wait", "5",
         "--", *pair_targets(project / "results")],
        cwd=project, capture_output=True, text=True,
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    deadline = time.monotonic() + 1200
    steps_seen = set()
    while (state := job_state(job_id)) in ("", "PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
        steps = subprocess.run(
            ["squeue", "--steps", "--noheader", "--format=%i", "--jobs", job_id], capture_output=True, text=True
        ).stdout.split()
        steps_seen.update(step for step in steps if step.startswith(f"{job_id}.") and step.split(".")[1].isdigit())
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job_id])
            pytest.fail(f"allocation {job_id} did not finish:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    output = log.read_text()
    assert state == "COMPLETED", output[-5000:]
    assert re.search(r"(\d+) of \1 steps \(100%\) done", output)
    # Rule jobs ran as job steps of this one allocation (polled while it ran; most are seen).
    assert len(steps_seen) >= 15, steps_seen
    assert_same_pair_results(project / "results", request)
