"""Reliability: a killed run resumes to the uninterrupted run's results, and a failing job is
reported with its log, leaves no outputs and no job temporaries behind.

Every Snakemake run here works in its own directory (`--snakefile` and `--profile` from the
repository), so its `.snakemake` (locks, incomplete markers) and the `--unlock` after a kill touch
nothing but this test's run.
"""

import gzip
import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, SNAKEMAKE, write_config

pytestmark = pytest.mark.workflow

SNAKEFILE = REPO / "workflow" / "Snakefile"
PROFILE = REPO / "profiles" / "local"


def bam_records(path: Path) -> list[str]:
    """The BAM's records and its header without @PG lines (they name commands and paths)."""
    text = subprocess.run(["samtools", "view", "-h", str(path)], capture_output=True, text=True, check=True).stdout
    return [line for line in text.splitlines() if not line.startswith("@PG")]


def result_rows(path: Path) -> list[str]:
    """A mutation result without Genomon's `#` meta lines (they name dates and paths)."""
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


def snakemake_command(config: Path, *args: str) -> list[str]:
    """The README's command (`--profile profiles/local --configfile FILE --cores 2`), runnable from any directory."""
    return [SNAKEMAKE, "--snakefile", str(SNAKEFILE), "--profile", str(PROFILE), "--configfile", str(config),
            "--cores", "2", *args]


def run_in(directory: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the workflow to its end with `directory` as Snakemake's working directory."""
    return subprocess.run(snakemake_command(config, *args), cwd=directory, capture_output=True, text=True)


# --- 1. kill and resume


def start_in_own_session(directory: Path, config: Path, output: Path, *args: str) -> subprocess.Popen:
    """Start the workflow as the leader of a new process group, so one killpg reaches Snakemake and every job."""
    with open(output, "w") as out:
        return subprocess.Popen(snakemake_command(config, *args), cwd=directory, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def wait_for_running_job(proc: subprocess.Popen, results: Path, rule: str, output: Path, timeout: float = 240) -> None:
    """Return half a second after a job of `rule` started (its log file appeared); the caller checks,
    from Snakemake's incomplete markers, that a job was still running when it killed the run."""
    deadline = time.monotonic() + timeout
    logs = results / "logs" / rule
    while not (logs.is_dir() and any(logs.rglob("*.log"))):
        if proc.poll() is not None:
            pytest.fail(f"snakemake ended ({proc.returncode}) before {rule} ran:\n{output.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {rule} job started in {timeout} s:\n{output.read_text()[-3000:]}")
        time.sleep(0.05)
    time.sleep(0.5)  # into the job's work, not only its first line


def kill_process_group(proc: subprocess.Popen) -> None:
    """SIGKILL Snakemake and its jobs (one process group), and wait until none of them is left."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while True:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            pytest.fail("processes of the killed run are still alive")
        time.sleep(0.05)


def running_jobs_marked_incomplete(directory: Path) -> list[Path]:
    """Snakemake's markers of jobs that started and did not finish (left behind by a kill)."""
    incomplete = directory / ".snakemake" / "incomplete"
    return [p for p in incomplete.rglob("*") if p.is_file()] if incomplete.is_dir() else []


SAMPLES = ("tumor", "normal", "pon1", "pon2", "pon3")


def compared_targets(results: Path) -> list[str]:
    """The final BAMs and mutation results (QC, not compared here, would only add run time)."""
    bams = [f"bam/{s}/{s}.markdup.bam{suffix}" for s in SAMPLES for suffix in ("", ".bai", ".md5")]
    mutations = [f"mutation/tumor/tumor.genomon_mutation.result{suffix}" for suffix in (".txt", ".filt.txt")]
    return [str(results / name) for name in bams + mutations]


def test_run_killed_during_map_and_during_markdup_resumes_to_the_same_results(testdata, pipeline_run, tmp_path):
    config = write_config(tmp_path, testdata)
    results = tmp_path / "results"
    targets = compared_targets(results)
    for attempt, rule in enumerate(("map_reads", "markdup")):
        if attempt:  # the README's restart after a kill: unlock, then the same command
            unlock = run_in(tmp_path, config, "--unlock")
            assert unlock.returncode == 0, unlock.stderr[-3000:]
        output = tmp_path / f"attempt{attempt}.out"
        proc = start_in_own_session(tmp_path, config, output, *targets)
        try:
            wait_for_running_job(proc, results, rule, output)
        finally:
            kill_process_group(proc)
        assert running_jobs_marked_incomplete(tmp_path), f"nothing was running when {rule} was killed"
        assert not (results / "bam" / "tumor" / "tumor.markdup.bam.md5").exists()

    # Without --unlock the killed run's lock refuses a restart; with it, the same command finishes.
    locked = run_in(tmp_path, config, *targets)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    assert run_in(tmp_path, config, "--unlock").returncode == 0
    resumed = run_in(tmp_path, config, *targets)
    assert resumed.returncode == 0, resumed.stderr[-5000:]

    for sample in SAMPLES:
        name = f"bam/{sample}/{sample}.markdup.bam"
        assert bam_records(results / name) == bam_records(pipeline_run / name), sample
        digest, _ = (results / f"{name}.md5").read_text().split()
        assert digest == hashlib.md5((results / name).read_bytes()).hexdigest(), sample
    for suffix in (".txt", ".filt.txt"):
        name = f"mutation/tumor/tumor.genomon_mutation.result{suffix}"
        rows = result_rows(results / name)
        assert len(rows) > 1 and rows == result_rows(pipeline_run / name)
    # The interrupted jobs' partial outputs were removed and rerun; every temp() file is gone.
    assert [p for p in (results / ".tiers" / "shared_tmp").rglob("*") if p.is_file()] == []
    assert running_jobs_marked_incomplete(tmp_path) == []


# --- 2. a failing job


def test_a_failing_map_job_is_reported_with_its_log_and_leaves_nothing_behind(testdata, tmp_path):
    config = write_config(tmp_path, testdata)
    results = tmp_path / "results"
    chunks = results / ".tiers" / "shared_tmp" / "split" / "pon1"
    split = run_in(tmp_path, config, str(chunks))
    assert split.returncode == 0, split.stderr[-3000:]
    # A chunk that passed the split's checks but whose first R1 name no longer matches its mate:
    # bwa mem stops on it mid-job, after the job has made its node-local work directory.
    chunk_r1 = chunks / "0000_R1.fastq"
    lines = chunk_r1.read_text().split("\n")
    lines[0] = "@renamed_" + lines[0][1:]
    chunk_r1.write_text("\n".join(lines))

    pieces = results / ".tiers" / "shared_tmp" / "map" / "pon1" / "chunk_0000"
    failed = run_in(tmp_path, config, str(pieces))
    output = failed.stdout + failed.stderr
    log = results / "logs" / "map_reads" / "pon1" / "0000.log"
    assert failed.returncode != 0
    assert "Error in rule map_reads" in output
    assert str(log) in output
    assert "paired reads have different names" in log.read_text()
    assert not pieces.exists()
    node_local = results / ".tiers" / "node_local"
    assert node_local.is_dir(), "the map job never made its work directory"
    assert list(node_local.iterdir()) == []


# --- 3. bad FASTQ content, reported through the workflow


def fastq_records(path: Path, count: int) -> list[bytes]:
    """The first `count` records of a gzipped FASTQ, each as its 4 lines."""
    with gzip.open(path, "rb") as handle:
        lines = [next(handle) for _ in range(4 * count)]
    return [b"".join(lines[i:i + 4]) for i in range(0, len(lines), 4)]


def drop_last_record(records: list[bytes]) -> bytes:
    return b"".join(records[:-1])


def cut_last_record_to_three_lines(records: list[bytes]) -> bytes:
    return b"".join(records[:-1]) + b"".join(records[-1].splitlines(keepends=True)[:3])


def drop_separator_of_record_10(records: list[bytes]) -> bytes:
    header, sequence, _, quality = records[9].splitlines(keepends=True)
    return b"".join(records[:9]) + header + sequence + quality + b"".join(records[10:])


RECORDS = 3000

BAD_LANES = {
    # sample: (which mate file of its lane 2 is bad, how its text is made, what the message says)
    "truncated_gzip": ("R1", None, "{bad}: truncated or corrupt gzip after"),
    "different_record_counts": (
        "R2", drop_last_record,
        f"R1 and R2 have different record counts: {{bad}} ends after {RECORDS - 1} records, {{good}} has more",
    ),
    "last_record_not_4_lines": (
        "R1", cut_last_record_to_three_lines,
        f"{{bad}}: record {RECORDS} (line {4 * RECORDS - 3}) is cut short: a record has 4 lines",
    ),
    "record_without_separator": ("R1", drop_separator_of_record_10, "{bad}: record 10 (line 39) has no '+' separator line"),
}


def write_bad_sample(fastq: Path, source: Path, sample: str) -> list[str]:
    """Two lanes of `sample` cut from a real FASTQ pair: lane 1 good, lane 2 broken as BAD_LANES says,
    so the split has written chunks when the problem stops it. Returns the sheet rows."""
    bad_mate, make_bad, _ = BAD_LANES[sample]
    for lane in ("L1", "L2"):
        for mate in ("R1", "R2"):
            records = fastq_records(source / f"pon1_L1_{mate}.fastq.gz", RECORDS)
            broken = lane == "L2" and mate == bad_mate
            data = gzip.compress(make_bad(records) if broken and make_bad else b"".join(records))
            if broken and make_bad is None:
                data = data[: len(data) // 2]
            (fastq / f"{sample}_{lane}_{mate}.fastq.gz").write_bytes(data)
    return [f"{sample}\tfastq/{sample}_{lane}_R1.fastq.gz\tfastq/{sample}_{lane}_R2.fastq.gz\n" for lane in ("L1", "L2")]


def test_bad_fastq_fails_split_fastq_with_the_file_and_problem_named(testdata, tmp_path):
    fastq = tmp_path / "fastq"
    fastq.mkdir()
    rows = [row for sample in BAD_LANES for row in write_bad_sample(fastq, testdata / "fastq", sample)]
    sheet = tmp_path / "samples.tsv"
    sheet.write_text("sample\tfq1\tfq2\n" + "".join(rows))
    config = write_config(tmp_path, testdata, samples=str(sheet), pairs=None, control_panels={})
    results = tmp_path / "results"
    counts = {sample: results / "qc" / sample / f"{sample}.fastq_counts.json" for sample in BAD_LANES}

    # One run for all four: the input checks before the run pass them all, every split job fails.
    failed = run_in(tmp_path, config, "--keep-going", *map(str, counts.values()))
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert output.count("Error in rule split_fastq") == len(BAD_LANES)
    for sample, (bad_mate, _, expected) in BAD_LANES.items():
        good_mate = "R2" if bad_mate == "R1" else "R1"
        message = f"split_fastq: sample {sample}: " + expected.format(
            bad=fastq / f"{sample}_L2_{bad_mate}.fastq.gz", good=fastq / f"{sample}_L2_{good_mate}.fastq.gz")
        log = results / "logs" / "split_fastq" / f"{sample}.log"
        assert str(log) in output, sample
        assert message in log.read_text(), sample
        assert message in output, sample  # the log is shown to the user, not only written
        assert not counts[sample].exists()
        assert not (results / ".tiers" / "shared_tmp" / "split" / sample).exists(), sample
