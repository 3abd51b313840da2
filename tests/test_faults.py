"""Reliability: a killed run resumes to the uninterrupted run's results; a failing job (bad
FASTQ content, a tool that exits non-zero or is killed, a full tier) is reported with its log and
leaves no outputs behind; job temporaries are removed, or, when a SIGKILL skipped the cleanup on
shared_tmp, reported and cleared by the rerun; `--retries` rides over a transient failure.

Every Snakemake run here works in its own directory (`--snakefile` and `--profile` from the
repository), so its `.snakemake` (locks, incomplete markers) and the `--unlock` after a kill touch
nothing but this test's run.
"""

import gzip
import json
import os
import shutil
import signal
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import (REPO, SNAKEMAKE, assert_same_pair_results, pair_targets, restore_sigint, scenario_variant,
                      write_config)

pytestmark = pytest.mark.workflow

SNAKEFILE = REPO / "workflow" / "Snakefile"
PROFILE = REPO / "profiles" / "local"


def snakemake_command(config: Path, *args: str) -> list[str]:
    """The README's command (`--profile profiles/local --configfile FILE --cores 2`), runnable from any directory."""
    return [SNAKEMAKE, "--snakefile", str(SNAKEFILE), "--profile", str(PROFILE), "--configfile", str(config),
            "--cores", "2", *args]


def run_in(directory: Path, config: Path, *args: str, env: dict | None = None,
           prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run the workflow to its end with `directory` as Snakemake's working directory."""
    return subprocess.run([*prefix, *snakemake_command(config, *args)], cwd=directory, capture_output=True, text=True,
                          env=env)


# --- 1. kill and resume


def start_in_own_session(directory: Path, config: Path, output: Path, *args: str,
                         env: dict | None = None) -> subprocess.Popen:
    """Start the workflow as the leader of a new process group, so one killpg reaches Snakemake and every job;
    with SIGINT's default action (a test run started in the background of a script inherits it ignored)."""
    with open(output, "w") as out:
        return subprocess.Popen(snakemake_command(config, *args), cwd=directory, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, env=env, preexec_fn=restore_sigint)


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


def fake_tool(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / name).write_text("#!/bin/sh\n" + script)
    (bin_dir / name).chmod(0o755)


def with_path(env: dict, bin_dir: Path) -> dict:
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}


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


def test_run_killed_during_map_and_during_markdup_resumes_to_the_same_results(scenario_root, request,
                                                                             tmp_path, no_slurm_probe):
    config = scenario_variant(scenario_root, "config-pair", tmp_path)
    results = tmp_path / "results"
    targets = pair_targets(results)
    env = no_slurm_probe
    # The documented restart after a kill (docs/usage.md): the same command, no --unlock (the
    # output directory's lock proves the killed run gone, so its Snakemake locks are removed).
    for attempt, rule in enumerate(("map_reads", "markdup")):
        output = tmp_path / f"attempt{attempt}.out"
        proc = start_in_own_session(tmp_path, config, output, *targets, env=env)
        try:
            wait_for_running_job(proc, results, rule, output)
        finally:
            kill_process_group(proc)
        assert running_jobs_marked_incomplete(tmp_path), f"nothing was running when {rule} was killed"
        assert not (results / "bam" / "tumor" / "tumor.markdup.bam.md5").exists()

    resumed = run_in(tmp_path, config, *targets, env=env)
    assert resumed.returncode == 0, resumed.stderr[-5000:]
    assert "removed its Snakemake locks" in resumed.stderr

    # The interrupted jobs' partial outputs were removed and rerun; every temp() file is gone.
    assert_same_pair_results(results, request)
    assert running_jobs_marked_incomplete(tmp_path) == []


@pytest.mark.parametrize("to_group", [True, False], ids=["ctrl-c", "sigint-to-snakemake"])
def test_a_run_stopped_on_request_says_so_and_names_the_stopped_jobs(testdata, tmp_path, no_slurm_probe, to_group):
    """Ctrl-C in a terminal (SIGINT to Snakemake and its jobs) or SIGINT to Snakemake alone
    (`timeout -s INT`, a batch system's notice): the closing lines say the run was stopped on
    request, not that jobs failed, and how to go on."""
    config = write_config(tmp_path, testdata, split={"chunks": 1})
    results = tmp_path / "results"
    output = tmp_path / "run.out"
    # A bwa that is still at work when the signal comes (a real one on the test data can be done
    # first on a busy machine): it waits 8 s, then runs the real bwa, and dies a second after a
    # SIGINT, as a real tool's clean-up takes a moment, so that Snakemake's stop comes before the
    # job's end. Snakemake alone stopped waits for its running local jobs to end.
    slow = tmp_path / "slow-bin"
    fake_tool(slow, "bwa", "trap 'sleep 1; exit 130' INT TERM\ni=0\n"
                           "while [ $i -lt 80 ]; do sleep 0.1; i=$((i + 1)); done\n"
                           'PATH="${PATH#*:}" exec bwa "$@"\n')
    proc = start_in_own_session(tmp_path, config, output, str(results / ".tiers" / "shared_tmp" / "map" / "pon1"
                                                                / "chunk_0000"), env=with_path(no_slurm_probe, slow))
    try:
        wait_for_running_job(proc, results, "map_reads", output)
        if to_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            kill_process_group(proc)
    text = output.read_text()
    assert proc.returncode != 0
    assert "genomon-smk: the run was stopped on request (Ctrl-C, SIGINT)" in text, text[-3000:]
    assert "job(s) failed" not in text
    assert "Run the same command again to go on" in text
    # The split's chunks the stopped map job was reading are still on the scratch tier.
    assert "Left on the scratch tiers after this failed or stopped run:" in text
    if to_group:  # the job died of the signal: named, with its log
        assert "running job(s) stopped" in text and "map_reads #" in text and "logs/map_reads/pon1/0000.log" in text


# --- 2. a failing job


def test_a_failing_map_job_is_reported_with_its_log_and_leaves_nothing_behind(testdata, tmp_path, no_slurm_probe):
    config = write_config(tmp_path, testdata)
    results = tmp_path / "results"
    chunks = results / ".tiers" / "shared_tmp" / "split" / "pon1"
    split = run_in(tmp_path, config, str(chunks), env=no_slurm_probe)
    assert split.returncode == 0, split.stderr[-3000:]
    # A chunk that passed the split's checks but whose first R1 name no longer matches its mate:
    # bwa mem stops on it mid-job, after the job has made its node-local work directory.
    chunk_r1 = chunks / "0000_R1.fastq"
    lines = chunk_r1.read_text().split("\n")
    lines[0] = "@renamed_" + lines[0][1:]
    chunk_r1.write_text("\n".join(lines))

    pieces = results / ".tiers" / "shared_tmp" / "map" / "pon1" / "chunk_0000"
    failed = run_in(tmp_path, config, str(pieces), env=no_slurm_probe)
    output = failed.stdout + failed.stderr
    log = results / "logs" / "map_reads" / "pon1" / "0000.log"
    assert failed.returncode != 0
    assert "Error in rule map_reads" in output
    assert str(log) in output
    assert "paired reads have different names" in log.read_text()
    # The failed run ends with the failed job and its log once more, after the error blocks.
    closing = output[output.index("genomon-smk: the run failed: 1 job(s) failed") :]
    assert re.search(r"^  map_reads #\d+: logs/map_reads/pon1/0000\.log$", closing, flags=re.M), closing
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


def gzipped(records: list[bytes]) -> bytes:
    return gzip.compress(b"".join(records))


def truncated(records: list[bytes]) -> bytes:
    data = gzipped(records)
    return data[: len(data) // 2]


def without_last_record(records: list[bytes]) -> bytes:
    return gzipped(records[:-1])


def last_record_cut_to_three_lines(records: list[bytes]) -> bytes:
    return gzipped(records[:-1] + [b"".join(records[-1].splitlines(keepends=True)[:3])])


def record_10_without_separator(records: list[bytes]) -> bytes:
    header, sequence, _, quality = records[9].splitlines(keepends=True)
    return gzipped(records[:9] + [header + sequence + quality] + records[10:])


def trimmed_to_mixed_lengths(records: list[bytes]) -> bytes:
    """Every record cut by 0-49 bases at its 3' end (sequence and quality alike): adapter-trimmed reads."""
    trimmed = []
    for index, record in enumerate(records):
        header, sequence, plus, quality = record.splitlines(keepends=True)
        keep = len(sequence) - 1 - index % 50
        trimmed.append(header + sequence[:keep] + b"\n" + plus + quality[:keep] + b"\n")
    return gzipped(trimmed)


RECORDS = 3000

BAD_LANES = {
    # sample: (the mate files of its lane 2 that are bad, how their bytes are made, what the message says)
    "truncated_gzip": (("R1",), truncated, "{bad}: truncated or corrupt gzip after"),
    "different_record_counts": (
        ("R2",), without_last_record,
        f"R1 and R2 have different record counts: {{bad}} ends after {RECORDS - 1} records, {{good}} has more",
    ),
    "last_record_not_4_lines": (
        ("R1",), last_record_cut_to_three_lines,
        f"{{bad}}: record {RECORDS} (line {4 * RECORDS - 3}) is cut short: a record has 4 lines",
    ),
    "record_without_separator": (("R1",), record_10_without_separator,
                                 "{bad}: record 10 (line 39) has no '+' separator line"),
}
# A lane whose files hold no reads never reaches the split: refused at plan time (test_samplesheet).
GOOD_LANES = {"mixed_read_lengths": (("R1", "R2"), trimmed_to_mixed_lengths)}


def write_sample(fastq: Path, source: Path, sample: str, changed_mates: tuple[str, ...], change) -> list[str]:
    """Two lanes of `sample` cut from a real FASTQ pair: lane 1 as it is, in lane 2 the mate files
    changed_mates made by `change`, so the split has written chunks when a problem stops it.
    Returns the sheet rows."""
    for lane in ("L1", "L2"):
        for mate in ("R1", "R2"):
            # Read names of this sample and lane: no two lanes hold the same data (refused).
            records = [b"@" + f"{sample}.{lane}.".encode() + record[1:]
                       for record in fastq_records(source / f"pon1_L1_{mate}.fastq.gz", RECORDS)]
            data = change(records) if lane == "L2" and mate in changed_mates else gzipped(records)
            (fastq / f"{sample}_{lane}_{mate}.fastq.gz").write_bytes(data)
    return [f"{sample}\tfastq/{sample}_{lane}_R1.fastq.gz\tfastq/{sample}_{lane}_R2.fastq.gz\n" for lane in ("L1", "L2")]


def test_bad_fastq_fails_split_fastq_with_the_file_and_problem_named(testdata, tmp_path, no_slurm_probe):
    fastq = tmp_path / "fastq"
    fastq.mkdir()
    lanes = {sample: (mates, change) for sample, (mates, change, _) in BAD_LANES.items()} | GOOD_LANES
    rows = [row for sample, (mates, change) in lanes.items()
            for row in write_sample(fastq, testdata / "fastq", sample, mates, change)]
    sheet = tmp_path / "samples.tsv"
    sheet.write_text("sample\tfq1\tfq2\n" + "".join(rows))
    config = write_config(tmp_path, testdata, samples=str(sheet), pairs=None, control_panels={})
    results = tmp_path / "results"
    counts = {sample: results / "qc" / sample / f"{sample}.fastq_counts.json" for sample in lanes}

    # One run for all: the input checks before the run pass them all, every bad split job fails.
    failed = run_in(tmp_path, config, "--keep-going", *map(str, counts.values()), env=no_slurm_probe)
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert output.count("Error in rule split_fastq") == len(BAD_LANES)
    for sample, (bad_mates, _, expected) in BAD_LANES.items():
        good_mate = "R2" if bad_mates == ("R1",) else "R1" if bad_mates == ("R2",) else bad_mates[1]
        message = f"split_fastq: sample {sample}: " + expected.format(
            bad=fastq / f"{sample}_L2_{bad_mates[0]}.fastq.gz", good=fastq / f"{sample}_L2_{good_mate}.fastq.gz")
        log = results / "logs" / "split_fastq" / f"{sample}.log"
        assert str(log) in output, sample
        assert message in log.read_text(), sample
        assert message in output, sample  # the log is shown to the user, not only written
        assert not counts[sample].exists()
        assert not (results / ".tiers" / "shared_tmp" / "split" / sample).exists(), sample
    # Reads of many lengths (trimmed reads) are fine: every pair is split and counted.
    assert json.loads(counts["mixed_read_lengths"].read_text())["read_pairs"] == 2 * RECORDS


# --- 4. a job killed mid-way on shared_tmp, and a transient failure


def leftovers_tsv(results: Path) -> list[dict]:
    lines = (results / "storage" / "scratch_leftovers.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def test_a_job_killed_on_shared_tmp_is_reported_and_its_rerun_with_a_transient_failure_is_retried(
        testdata, tmp_path, no_slurm_probe):
    """A map job whose work directory is on shared_tmp dies by SIGKILL mid-way (its EXIT trap
    does not run): the failed run lists the work directory it left, the next run lists it at its
    start, clears it and, with `--retries 1` as in the cluster profiles, gets past a bwa that
    fails once."""
    config = write_config(tmp_path, testdata, split={"chunks": 1}, storage={"rules": {"map": {"temp": "shared_tmp"}}})
    results = tmp_path / "results"
    shared_tmp = results / ".tiers" / "shared_tmp"
    pieces = shared_tmp / "map" / "pon1" / "chunk_0000"
    killer = tmp_path / "killer-bin"
    # bwa dies with its job shell once the scatter has begun its sort in the work directory (not
    # before: which of the two comes first would be a race).
    fake_tool(killer, "bwa", f'echo "@HD\tVN:1.6"\nfor _ in $(seq 300); do\n'
                             f'    ls {shared_tmp}/map.*/sorted.bam >/dev/null 2>&1 && break\n    sleep 0.1\ndone\n'
                             'echo "bwa: killing the job shell" >&2\nkill -9 $PPID\n')

    failed = run_in(tmp_path, config, str(pieces), env=with_path(no_slurm_probe, killer))
    output = failed.stdout + failed.stderr
    log = results / "logs" / "map_reads" / "pon1" / "0000.log"
    assert failed.returncode != 0
    assert "Error in rule map_reads" in output and str(log) in output
    assert not pieces.exists()
    left = leftovers_tsv(results)
    work_dirs = [Path(row["path"]) for row in left if row["kind"].startswith("work directory")]
    assert len(work_dirs) == 1 and work_dirs[0].parent == shared_tmp and work_dirs[0].name.startswith("map.")
    assert work_dirs[0].is_dir() and int(next(r for r in left if Path(r["path"]) == work_dirs[0])["files"]) >= 1
    assert {row["when"] for row in left} == {"after this failed or stopped run"}
    assert str(shared_tmp / "split" / "pon1") in [row["path"] for row in left]  # kept for the rerun
    assert f"Left on the scratch tiers after this failed or stopped run: {len(left)} item(s)" in output
    assert str(work_dirs[0]) in output

    flaky = tmp_path / "flaky-bin"
    calls = tmp_path / "bwa-calls"
    fake_tool(flaky, "bwa", f'echo call >>{calls}\n[ "$(wc -l <{calls})" -gt 1 ] || '
                            f'{{ echo "bwa: transient fault" >&2; exit 1; }}\nexec {shutil.which("bwa")} "$@"\n')
    rerun = run_in(tmp_path, config, "--retries", "1", str(pieces), env=with_path(no_slurm_probe, flaky))
    output = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, output[-5000:]
    assert "Left on the scratch tiers at the start of this run, from an earlier one" in output
    assert "Trying to restart job" in output and len(calls.read_text().split()) == 2
    assert any(pieces.iterdir())
    assert not work_dirs[0].exists()
    assert [row for row in leftovers_tsv(results) if row["kind"].startswith("work directory")] == []


def test_cluster_profiles_retry_failed_jobs():
    """Every profile with a cluster executor retries a failed job (local failures are real ones)."""
    clusters = {}
    for path in sorted((REPO / "profiles").glob("*/config.v8+.yaml")):
        settings = yaml.safe_load(path.read_text())
        if settings.get("executor", "local") != "local":
            clusters[path.parent.name] = settings.get("retries", 0)
    assert {"slurm", "slurm-allocation", "pjm"} <= set(clusters)
    assert {name: retries for name, retries in clusters.items() if retries < 1} == {}


def test_every_profile_selects_jobs_without_writing_to_tmp():
    """Snakemake's ILP scheduler writes its model of every round to /tmp and leaves it there when
    the run is interrupted: every profile chooses the greedy one (nothing outside output_dir, the
    tiers, resources/ and .snakemake/)."""
    schedulers = {path.parent.name: yaml.safe_load(path.read_text()).get("scheduler")
                  for path in sorted((REPO / "profiles").glob("*/config.v8+.yaml"))}
    assert {"local", "slurm", "slurm-allocation", "pjm", "pjm-allocation"} <= set(schedulers)
    assert {name: scheduler for name, scheduler in schedulers.items() if scheduler != "greedy"} == {}


# --- 5. out of space in a tier


def in_mount_namespace_with_tmpfs(place: Path, size: str, listing: Path) -> tuple[str, ...]:
    """A command prefix: run the command in a new user and mount namespace where `place` is a
    tmpfs of `size`, and afterwards list what is left on it into `listing` (the tmpfs is gone
    with the namespace)."""
    script = (f'mount -t tmpfs -o size={size} tmpfs {place} || exit 97\n"$@"\nstatus=$?\n'
              f'find {place} -mindepth 1 >{listing}\nexit $status\n')
    return ("unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh")


def skip_unless_tmpfs_mounts(place):
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "mount", "-t", "tmpfs", "tmpfs",
                            str(place)], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs in a user namespace here: {probe.stderr}")


def test_out_of_space_on_shared_tmp_fails_the_job_with_its_log_and_leaves_no_partial_output(
        testdata, tmp_path, no_slurm_probe):
    place, listing = tmp_path / "small_scratch", tmp_path / "left_on_scratch.txt"
    place.mkdir()
    skip_unless_tmpfs_mounts(place)
    # The split writes about 8 MiB of chunks for pon1; the tier holds 1 MiB.
    config = write_config(tmp_path, testdata, split={"chunks": 1}, storage={"paths": {"shared_tmp": str(place)}})
    results = tmp_path / "results"
    counts = results / "qc" / "pon1" / "pon1.fastq_counts.json"
    failed = run_in(tmp_path, config, str(counts), env=no_slurm_probe,
                    prefix=in_mount_namespace_with_tmpfs(place, "1m", listing))
    output = failed.stdout + failed.stderr
    assert failed.returncode not in (0, 97), output[-3000:]
    log = results / "logs" / "split_fastq" / "pon1.log"
    assert "Error in rule split_fastq" in output and str(log) in output
    assert "No space left on device" in log.read_text()
    # The job shell names the full tier, its place and the plan's expectation (job-shell.sh).
    assert f"genomon-smk: no space left on shared_tmp ({place}): " in output
    assert "the storage plan expected about" in output
    assert f"Removing output files of failed job split_fastq since they might be corrupted:\n{place}/split/pon1" in output
    assert listing.read_text() == ""  # nothing of the failed job stayed on the full tier
    assert not counts.exists()


def test_a_map_job_that_fills_node_local_is_reported_as_no_space_left_there(testdata, tmp_path, no_slurm_probe):
    """The issue's case: bamsort aborts (SIGABRT, a stack trace) when node_local fills up and does
    not say why; the job shell names the tier, its place and the plan's per-job expectation."""
    place, listing = tmp_path / "small_node_local", tmp_path / "left_on_node_local.txt"
    place.mkdir()
    skip_unless_tmpfs_mounts(place)
    config = write_config(tmp_path, testdata, split={"chunks": 1}, storage={"paths": {"node_local": str(place)}})
    results = tmp_path / "results"
    pieces = results / ".tiers" / "shared_tmp" / "map" / "pon1" / "chunk_0000"
    failed = run_in(tmp_path, config, str(pieces), env=no_slurm_probe,
                    prefix=in_mount_namespace_with_tmpfs(place, "1m", listing))
    output = failed.stdout + failed.stderr
    assert failed.returncode not in (0, 97), output[-3000:]
    log = results / "logs" / "map_reads" / "pon1" / "0000.log"
    assert "Error in rule map_reads" in output and str(log) in output
    message = f"genomon-smk: no space left on node_local ({place}): "
    assert message in log.read_text() and message in output
    assert output.count("genomon-smk: no space left") == 2  # the job's stderr and its log, shown once each
    assert not pieces.exists()
    assert listing.read_text() == ""
