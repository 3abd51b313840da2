"""The .test pipeline through profiles/slurm and profiles/slurm-allocation on a real Slurm gives
the local run's results."""

import re
import subprocess
import time

import pytest

from conftest import REPO, bam_records, result_rows, finish_interruptible, run_interruptible, start_interruptible, write_config

pytestmark = [pytest.mark.slurm, pytest.mark.workflow, pytest.mark.timeout(1500)]

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


def assert_same_results(results, pipeline_run):
    for sample in ("tumor", "normal", "pon1"):
        name = f"bam/{sample}/{sample}.markdup.bam"
        assert bam_records(results / name) == bam_records(pipeline_run / name), sample
    for suffix in (".txt", ".filt.txt"):
        name = f"mutation/tumor/tumor.genomon_mutation.result{suffix}"
        assert result_rows(results / name) == result_rows(pipeline_run / name)
    assert [p for p in (results / ".tiers").rglob("*") if p.is_file() and "cache" not in p.parts] == []


def test_slurm_profile_runs_the_pipeline_with_the_local_results(slurm, testdata, pipeline_run, tmp_path):
    config = write_config(tmp_path, testdata, map={"threads": 1}, markdup={"threads": 1})
    args = ["--profile", str(REPO / "profiles" / "slurm"), "--configfile", str(config), *TEST_CLUSTER]
    rc, output = run_interruptible(args, cwd=REPO, timeout=1400, log_path=tmp_path / "snakemake.out")
    assert rc == 0, output[-5000:]
    # Every job went through Slurm (the profile's path names it, so look for the plugin's own line).
    assert len(re.findall(r"has been submitted with SLURM jobid \d+", output)) > 10, output[-3000:]
    assert_same_results(tmp_path / "results", pipeline_run)


def slurm_job_state(job_id):
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--jobs", job_id, "--format=%T"], capture_output=True, text=True
    ).stdout.split()
    return out[0] if out else ""


def test_slurm_allocation_profile_runs_rule_jobs_as_steps_of_one_allocation(slurm, testdata, pipeline_run, tmp_path):
    config = write_config(tmp_path, testdata, map={"threads": 1}, markdup={"threads": 1})
    log = tmp_path / "allocation.log"
    submitted = subprocess.run(
        ["bash", "profiles/slurm-allocation/submit", "-N", "1", "-c", "2", "--mem=4000", f"--output={log}", "--",
         "--configfile", str(config), "--set-resources", "map_reads:mem_mb=900", "markdup:mem_mb=900",
         "identify_mutations:mem_mb=900", "--default-resources", "mem_mb=600", "--latency-wait", "5"],
        cwd=REPO, capture_output=True, text=True,
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    deadline = time.monotonic() + 1200
    steps_seen = set()
    while (state := slurm_job_state(job_id)) in ("", "PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
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
    assert len(steps_seen) >= 20, steps_seen
    assert_same_results(tmp_path / "results", pipeline_run)


def test_a_cancelled_slurm_job_is_reported_and_a_rerun_completes_without_leftovers(slurm, testdata, tmp_path):
    rows = (testdata / "samples.tsv").read_text().splitlines()
    samples = testdata / "normal_only.tsv"  # beside the FASTQs, so their relative paths resolve
    samples.write_text("\n".join([rows[0]] + [row for row in rows[1:] if row.startswith("normal\t")]) + "\n")
    config = write_config(tmp_path, testdata, samples=str(samples), pairs=None, control_panels={},
                          map={"threads": 1}, markdup={"threads": 1})
    args = ["--profile", str(REPO / "profiles" / "slurm"), "--configfile", str(config), *TEST_CLUSTER]
    # Without retries (the profile retries once, which would simply run the job again).
    proc, log_path = start_interruptible([*args, "--retries", "0"], cwd=REPO, log_path=tmp_path / "first.out")
    deadline = time.monotonic() + 300
    cancelled = None
    while cancelled is None and proc.poll() is None and time.monotonic() < deadline:
        queue = subprocess.run(["squeue", "--noheader", "--states=RUNNING", "--format=%i %k"],
                               capture_output=True, text=True).stdout
        for line in queue.splitlines():
            job_id, comment = (line.split(maxsplit=1) + [""])[:2]
            if "map_reads" in comment:
                subprocess.run(["scancel", job_id], check=True)
                cancelled = job_id
                break
        time.sleep(0.5)
    rc, output = finish_interruptible(proc, log_path, timeout=600)
    assert cancelled, f"no map_reads job seen running:\n{output[-3000:]}"
    assert rc != 0
    # The map jobs run bundled (a group job): Snakemake names the cancelled Slurm job as failed.
    assert re.search(rf"\b{cancelled}\b", output) and "failed" in output, output[-3000:]
    rc, output = run_interruptible(args, cwd=REPO, timeout=600, log_path=tmp_path / "rerun.out")
    assert rc == 0, output[-4000:]
    assert (tmp_path / "results" / "bam" / "normal" / "normal.markdup.bam").exists()
    tiers = tmp_path / "results" / ".tiers"
    assert [p for p in tiers.rglob("*") if p.is_file() and "cache" not in p.parts] == []
