"""Tests against a real single-node Slurm on localhost, started by `.test/slurm/start-slurm` (one
module: the pytest-xdist workers take a module as one unit, and one Slurm serves them all).

What is proven here, on Debian's Slurm 22.05 without accounting (see `.test/slurm/README.md`):
start-slurm is idempotent; the pair scenario through profiles/slurm and
profiles/slurm-allocation, run from a project directory outside the checkout, gives the local
run's results; a cancelled Slurm job is reported and a rerun completes. Slurm itself and Snakemake's Slurm executor plugin (a batch job's TMPDIR, a
failing rule's SLURM status, SIGINT cancelling a job) are not tested here: they are other
projects' software, and the profile runs exercise what this project relies on.

Snakemake is always started with SIGINT restored to its default: a process started in the background by a
non-interactive shell inherits SIGINT as *ignored*, and SIGINT is the only signal that makes a waiting
Snakemake cancel its Slurm jobs (SIGTERM does not). On a timeout the helper sends SIGINT, so no job is
left behind.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (REPO, START_SLURM, assert_same_pair_results, finish_interruptible, interrupt,
                      pair_targets, run_interruptible, scenario_variant, start_interruptible)

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]

def job_state(job_id: int | str) -> str:
    """Final or current state of a job as squeue reports it (finished jobs stay for MinJobAge)."""
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--jobs", str(job_id), "--format=%T"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    return out[0] if out else ""


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
    # profiles/slurm's log settings: the cancelled job's Slurm log stays, successful jobs' are gone.
    slurm_logs = [path.stem for path in (project / ".snakemake" / "slurm_logs").rglob("*.log")]
    assert cancelled in slurm_logs and len(slurm_logs) < len(submitted) / 2, slurm_logs
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


# A rule that needs more memory than it asks for on its first attempt, and one whose tool fails,
# with the project's retry mechanism (workflow/rules/retries.smk) included as the pipeline does.
RETRY_SNAKEFILE = """
rule all:
    input: "grown.txt", "broken.txt", "slow.txt"

rule slow:
    output: "slow.txt"
    log: "logs/slow.log"
    resources: runtime=1
    shell: "echo {resources.runtime} >> slow-attempts.txt; sleep 75; touch {output}"

rule grow:
    output: "grown.txt"
    log: "logs/grow.log"
    resources: mem_mb=400
    shell: "echo {resources.mem_mb} >> grow-attempts.txt; python3 -c 'b = bytes(1) * (350 << 20); import time; time.sleep(3)'; touch {output}"

rule broken:
    output: "broken.txt"
    log: "logs/broken.log"
    # Room for the job's own Snakemake (about 400 MB at its peak): only the tool's error counts.
    resources: mem_mb=1500
    shell: "echo {resources.mem_mb} >> broken-attempts.txt; exit 3"

include: "RETRIES"
"""


@pytest.fixture(scope="module")
def retry_run(slurm, tmp_path_factory):
    """The run of RETRY_SNAKEFILE, started once and left to run: its jobs mostly wait (for Slurm's
    1-minute time limit, then a 75 s sleep), so it runs beside the profile runs (started_early,
    below) and the retry test collects it. (directory, process, log, monotonic start time)."""
    directory = tmp_path_factory.mktemp("retry")
    (directory / "Snakefile").write_text(
        RETRY_SNAKEFILE.replace("RETRIES", str(REPO / "workflow" / "rules" / "retries.smk")))
    proc, log_path = start_interruptible(
        ["--executor", "slurm", "--jobs", "3", "--retries", "1", "--keep-going", "--slurm-status-command", "squeue",
         "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "2",
         "--latency-wait", "5", "--default-resources", "slurm_partition=debug", "runtime=5"],
        cwd=directory)
    yield directory, proc, log_path, time.monotonic()
    if proc.poll() is None:  # not collected (the retry test failed early): SIGINT cancels its jobs
        interrupt(proc)


@pytest.fixture(autouse=True)
def started_early(request):
    """The retry run starts with this module's first test when the retry test is selected: it
    overlaps the profile runs instead of adding its minutes after them (its jobs take one CPU
    each and mostly sleep; the profile runs' jobs share the node's two with them)."""
    if any(item.name.startswith(RETRY_TEST) for item in request.session.items):
        request.getfixturevalue("retry_run")


RETRY_TEST = "test_slurm_retry_grows"


@pytest.mark.timeout(600)
def test_slurm_retry_grows_the_time_or_memory_a_job_was_short_of_and_does_not_rerun_a_tool_error(retry_run):
    """A job Slurm ends at its time limit is retried with twice the run time and succeeds; a job
    Slurm kills for using more memory than it asked for is retried with twice the memory and
    succeeds; a job whose tool fails is not run again (its second attempt ends at once with the
    first error). The time-out takes minutes (Slurm's shortest limit is a minute, checked every
    30 s); the three run side by side. This test Slurm (no cgroups) enforces memory by sampling
    each step every second (OverMemoryKill) and reports the job FAILED with `exceeded memory
    limit` in its log, which is read like the OUT_OF_MEMORY state a cgroup cluster reports
    (tests/test_retries.py)."""
    tmp_path, proc, log_path, started = retry_run
    # 400 s from its start by itself; beside the profile runs its jobs may wait for the node.
    rc, output = finish_interruptible(proc, log_path, timeout=max(600 - (time.monotonic() - started), 1))
    assert rc != 0, output[-3000:]  # the broken rule fails for good
    assert (tmp_path / "grown.txt").exists(), output[-5000:]
    # Submitted with 400 MB, killed (the job's Snakemake and the tool are over it), resubmitted
    # with 800 MB, which the job itself sees too (the last attempt's line).
    submitted = re.findall(r"rule grow:\n(?:    .*\n)*?    resources: .*?mem_mb=(\d+)", output)
    assert submitted == ["400", "800"], output[-5000:]
    assert (tmp_path / "grow-attempts.txt").read_text().split()[-1] == "800", output[-5000:]
    killed = (tmp_path / ".snakemake" / "slurm_logs" / "rule_grow").glob("*.log")
    assert any("exceeded memory limit" in path.read_text() for path in killed), output[-5000:]
    # Submitted with a 1-minute limit, ended by Slurm at it, resubmitted with 2 minutes.
    assert (tmp_path / "slow.txt").exists(), output[-5000:]
    assert (tmp_path / "slow-attempts.txt").read_text().split() == ["1", "2"], output[-5000:]
    assert re.search(r"Error in rule slow:\n.*SLURM status is: 'TIMEOUT'", output), output[-5000:]
    # The tool of the broken rule ran once; its second attempt was a Slurm job that did no work.
    assert (tmp_path / "broken-attempts.txt").read_text().split() == ["1500"], output[-5000:]
    refused = [path.read_text() for path in (tmp_path / ".snakemake" / "slurm_logs" / "rule_broken").glob("*.log")]
    assert any("attempt 2 of this job does not run" in text and "'FAILED'" in text for text in refused), refused


# Last: a worker is given its next module when one test of this one is left (tests/conftest.py),
# so that the one left is this short one, not a profile run.
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
