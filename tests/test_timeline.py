"""The utilisation timeline: slot assignment, utilisation, job records from benchmark files, and
the chart the workflow draws at the end of the shared test run."""

import csv
import os
import random
import re
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import run_snakemake, scenario_variant

from genomon_smk.plan.timeline import (
    JobRecord,
    assign_lines,
    main,
    read_benchmarks,
    summarise,
)


def overlap(a, b, tolerance=0.0):
    """Do two (start, end) intervals overlap by more than tolerance seconds?"""
    return min(a[1], b[1]) - max(a[0], b[0]) > tolerance


def check_no_line_holds_two_jobs_at_once(intervals, lines, tolerance=0.0):
    by_line = {}
    for interval, taken in zip(intervals, lines):
        for line in taken:
            by_line.setdefault(line, []).append(interval)
    for jobs in by_line.values():
        jobs.sort()
        for before, after in zip(jobs, jobs[1:]):
            assert not overlap(before, after, tolerance), (before, after)


def max_concurrency(intervals):
    """Most slots busy at one instant (ends before starts at equal times), by a sweep."""
    events = sorted([(end, -threads) for start, end, threads in intervals]
                    + [(start, threads) for start, end, threads in intervals])
    busy = peak = 0
    for _, change in events:
        busy += change
        peak = max(peak, busy)
    return peak


def test_a_slot_is_reused_once_its_job_ended():
    records = [JobRecord("map_reads", "a", 0, 10), JobRecord("map_reads", "b", 5, 15), JobRecord("markdup", "c", 10, 20)]
    assert assign_lines(records, tolerance=0.0) == [(0,), (1,), (0,)]


def test_greedy_colouring_uses_the_fewest_lines_and_never_overlaps():
    rng = random.Random(7)
    for _ in range(20):
        records = []
        for i in range(60):
            start = rng.uniform(0, 100)
            records.append(JobRecord("map_reads", str(i), start, start + rng.uniform(0.5, 30)))
        lines = assign_lines(records, tolerance=0.0)
        intervals = [(r.start, r.end) for r in records]
        check_no_line_holds_two_jobs_at_once(intervals, lines)
        used = 1 + max(max(t) for t in lines)
        assert used == max_concurrency([(r.start, r.end, 1) for r in records])


def test_a_job_with_threads_holds_that_many_lines():
    records = [JobRecord("markdup", "a", 0, 10, threads=2), JobRecord("map_reads", "b", 0, 5), JobRecord("map_reads", "c", 5, 12)]
    lines = assign_lines(records, tolerance=0.0)
    assert len(lines[0]) == 2 and len(set(lines[0])) == 2
    assert 1 + max(max(t) for t in lines) == 3
    check_no_line_holds_two_jobs_at_once([(r.start, r.end) for r in records], lines)


def test_a_job_without_threads_is_listed_but_holds_no_slot(tmp_path):
    records = [JobRecord("stagger_start", "tumor", 0, 300, threads=0), JobRecord("split_fastq", "normal", 0, 10)]
    assert assign_lines(records) == [(), (0,)]
    assert summarise(records, slots=1).busy == 10
    write_benchmark(tmp_path / "bench", "stagger_start", "tumor", [300.0], end=1300.0)
    write_benchmark(tmp_path / "bench", "split_fastq", "normal", [10.0], end=1010.0)
    assert main(["--benchmarks", str(tmp_path / "bench"), "--threads", "stagger_start=0",
                 "--summary", str(tmp_path / "s.tsv"), "--png", str(tmp_path / "t.png")]) == 0
    summary = dict(line.split("\t") for line in (tmp_path / "s.tsv").read_text().splitlines()[1:])
    assert (summary["slots"], summary["jobs"], summary["busy_slot_s"]) == ("1", "2", "10.000")


def test_tolerance_absorbs_a_measured_start_just_before_the_previous_end():
    records = [JobRecord("map_reads", "a", 0, 10), JobRecord("map_reads", "b", 9.7, 20)]
    assert assign_lines(records, tolerance=0.0) == [(0,), (1,)]
    assert assign_lines(records, tolerance=1.0) == [(0,), (0,)]


def test_utilisation_and_samples_per_hour():
    records = [JobRecord("markdup", "a", 100, 110, threads=2), JobRecord("merge_mutation", "t", 110, 120)]
    summary = summarise(records, slots=2)
    assert summary.makespan == 20 and summary.busy == 30
    assert summary.utilisation == pytest.approx(30 / 40)
    assert summary.samples == 1 and summary.samples_per_hour == pytest.approx(3600 / 20)
    assert "utilisation 75.0 %" in summary.title() and "180.00 samples/h" in summary.title()
    # Without mutation jobs the samples are the merged BAMs.
    assert summarise([JobRecord("merge_bam", "n", 0, 1), JobRecord("merge_bam", "t", 0, 1)], 1).samples == 2


def write_benchmark(root, rule, name, seconds, end, threads=None):
    path = Path(root) / rule / f"{name}.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = ["s", "h:m:s", "max_rss"] + (["threads"] if threads else [])
    # Snakemake's extended format writes the threads as a tuple: "(3,)".
    rows = [[f"{s}", "0:00:01", "1.0"] + ([f"({threads},)"] if threads else []) for s in seconds]
    path.write_text("\n".join("\t".join(row) for row in [header, *rows]) + "\n")
    os.utime(path, (end, end))
    return path


def test_records_come_from_benchmark_files(tmp_path):
    write_benchmark(tmp_path, "map_reads", "tumor/0001", [4.0], end=1000.0)
    write_benchmark(tmp_path, "markdup", "tumor/r0001", [3.0, 2.0], end=1010.0)  # repeat(): two runs
    write_benchmark(tmp_path, "coverage", "tumor", [1.5], end=1012.0, threads=3)  # extended format
    write_benchmark(tmp_path, "utilisation_timeline", "all", [1.0], end=900.0)  # the chart's own job
    records = {(r.rule, r.name): r for r in read_benchmarks(tmp_path, {"map_reads": 2})}
    assert set(records) == {("map_reads", "tumor/0001"), ("markdup", "tumor/r0001"), ("coverage", "tumor")}
    assert (records["map_reads", "tumor/0001"].start, records["map_reads", "tumor/0001"].end) == (996.0, 1000.0)
    assert records["map_reads", "tumor/0001"].threads == 2
    assert records["markdup", "tumor/r0001"].start == 1005.0 and records["markdup", "tumor/r0001"].threads == 1
    assert records["coverage", "tumor"].threads == 3


def test_cli_writes_the_chart_the_records_and_the_same_title(tmp_path):
    for i in range(4):
        write_benchmark(tmp_path / "bench", "map_reads", f"s/{i:04d}", [10.0], end=1010.0 + 10 * (i // 2))
    write_benchmark(tmp_path / "bench", "merge_mutation", "t", [5.0], end=1035.0)
    out = {suffix: tmp_path / f"t.{suffix}" for suffix in ("png", "svg", "tsv", "summary.tsv")}
    assert main(["--benchmarks", str(tmp_path / "bench"), "--slots", "3", "--png", str(out["png"]),
                 "--svg", str(out["svg"]), "--tsv", str(out["tsv"]), "--summary", str(out["summary.tsv"])]) == 0
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = dict(line.split("\t") for line in out["summary.tsv"].read_text().splitlines()[1:])
    # 4 x 10 s + 5 s of work over 3 slots x 35 s.
    assert summary["utilisation_pct"] == f"{100 * 45 / 105:.1f}"
    assert summary["title"] in out["svg"].read_text()
    assert len(out["tsv"].read_text().splitlines()) == 1 + 5


def summary_of(path):
    return dict(line.split("\t") for line in Path(path).read_text().splitlines()[1:])


def test_a_rerun_draws_only_its_own_jobs(tmp_path):
    """The first run's files stay in the directory; the rerun, 13 minutes later, reran two jobs:
    its chart has those two, over their own 30 s, and says it is this run's."""
    bench = tmp_path / "bench"
    for i in range(6):
        write_benchmark(bench, "map_reads", f"s/{i:04d}", [60.0], end=1060.0 + 60 * i)
    write_benchmark(bench, "map_reads", "s/0002", [20.0], end=2200.0)  # rerun of a map job
    write_benchmark(bench, "merge_mutation", "t", [10.0], end=2230.0)
    out = tmp_path / "t"
    assert main(["--benchmarks", str(bench), "--run-started", "2150", "--slots", "2", "--svg", f"{out}.svg",
                 "--tsv", f"{out}.jobs.tsv", "--summary", f"{out}.summary.tsv"]) == 0
    assert [(job["rule"], job["name"]) for job in read_jobs(f"{out}.jobs.tsv")] == [
        ("map_reads", "s/0002"), ("merge_mutation", "t")]
    summary = summary_of(f"{out}.summary.tsv")
    assert (summary["jobs"], summary["makespan_s"], summary["busy_slot_s"]) == ("2", "50.000", "30.000")
    assert summary["title"].startswith("this run: 2 jobs on 2 slots in 50 s: utilisation 30.0 %")
    assert summary["title"] in Path(f"{out}.svg").read_text()
    # Without --run-started every file is drawn, and the title does not claim one run.
    assert main(["--benchmarks", str(bench), "--summary", f"{out}.all.tsv"]) == 0
    assert summary_of(f"{out}.all.tsv")["title"].startswith("7 jobs on ")


def test_a_run_that_only_redraws_the_chart_draws_an_empty_one(tmp_path):
    write_benchmark(tmp_path / "bench", "map_reads", "s/0000", [60.0], end=1060.0)
    out = tmp_path / "t"
    assert main(["--benchmarks", str(tmp_path / "bench"), "--run-started", "2000", "--png", f"{out}.png",
                 "--tsv", f"{out}.jobs.tsv", "--summary", f"{out}.summary.tsv"]) == 0
    assert summary_of(f"{out}.summary.tsv")["title"].startswith("this run: 0 jobs")
    assert len(read_jobs(f"{out}.jobs.tsv")) == 0 and Path(f"{out}.png").stat().st_size > 0


# --- the chart of the shared test run


def read_jobs(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


@pytest.mark.workflow
def test_the_run_draws_its_timeline_last_with_every_job_and_true_figures(pipeline_run):
    directory = pipeline_run / "qc" / "timeline"
    for name in ("timeline.png", "timeline.svg", "timeline.jobs.tsv", "timeline.summary.tsv"):
        assert (directory / name).stat().st_size > 0, name
    jobs = read_jobs(directory / "timeline.jobs.tsv")

    # Every job of the run, once: each one wrote a log, logs/{rule}/{wildcards}.log.
    logs = pipeline_run / "logs"
    logged = {(p.relative_to(logs).parts[0], str(p.relative_to(logs / p.relative_to(logs).parts[0]).with_suffix("")))
              for p in logs.rglob("*.log")}
    logged.discard(("utilisation_timeline", "all"))
    drawn = Counter((job["rule"], job["name"]) for job in jobs)
    assert set(drawn) == logged and max(drawn.values()) == 1

    # The title (read back from the SVG, where it stays text) states the figures of the records.
    summary = dict(line.split("\t") for line in (directory / "timeline.summary.tsv").read_text().splitlines()[1:])
    title = summary["title"]
    assert title in (directory / "timeline.svg").read_text()
    slots = int(re.search(r" on (\d+) slots", title).group(1))
    assert slots == 2  # the fixture's --cores 2
    starts = [float(job["start"]) for job in jobs]
    ends = [float(job["end"]) for job in jobs]
    makespan = max(ends) - min(starts)
    busy = sum(int(job["threads"]) * (float(job["end"]) - float(job["start"])) for job in jobs)
    pairs = sum(job["rule"] == "merge_mutation" for job in jobs)
    assert pairs == 1
    utilisation = float(re.search(r"utilisation ([\d.]+) %", title).group(1))
    rate = float(re.search(r", ([\d.]+) samples/h", title).group(1))
    assert utilisation == pytest.approx(100 * busy / (slots * makespan), abs=0.051)
    assert rate == pytest.approx(pairs * 3600 / makespan, abs=0.0051)
    assert 0 < utilisation <= 100

    # The lines drawn are slots: no two jobs on one line at once (beyond the timing tolerance).
    intervals = [(float(job["start"]), float(job["end"])) for job in jobs]
    lines = [tuple(int(x) for x in job["lines"].split(",")) for job in jobs]
    check_no_line_holds_two_jobs_at_once(intervals, lines, tolerance=1.0)
    assert all(len(taken) == int(job["threads"]) <= slots for taken, job in zip(lines, jobs))

    # Drawn last: the timeline job started after every job it draws had ended.
    own = pipeline_run / "benchmarks" / "utilisation_timeline" / "all.tsv"
    own_seconds = float(own.read_text().splitlines()[1].split("\t")[0])
    assert own.stat().st_mtime - own_seconds >= max(ends) - 1.0


@pytest.mark.workflow
def test_a_rerun_of_a_few_jobs_draws_those_jobs_only(pipeline_run, scenario_root, tmp_path):
    """A copy of the shared run (its benchmark files with their times) loses one sample's coverage
    table; the rerun's timeline draws the jobs that rerun, not the first run's."""
    import shutil

    results = tmp_path / "results"
    shutil.copytree(pipeline_run, results, symlinks=True)  # copies, with their modification times
    (results / "qc" / "tumor" / "tumor.coverage.tsv").unlink()
    config = scenario_variant(scenario_root, "config", tmp_path)
    # With the storage monitor off (as on a cluster): the timeline does not need it.
    settings = yaml.safe_load(config.read_text())
    settings.setdefault("storage", {})["monitor"] = False
    config.write_text(yaml.safe_dump(settings))
    started = time.time()
    run_snakemake(config)
    rerun = {(p.relative_to(results / "logs").parts[0], str(p.relative_to(results / "logs").with_suffix(""))
              .split("/", 1)[1]) for p in (results / "logs").rglob("*.log") if p.stat().st_mtime >= started}
    rerun.discard(("utilisation_timeline", "all"))
    assert ("coverage", "tumor") in rerun and len(rerun) < 5, rerun
    jobs = read_jobs(results / "qc" / "timeline" / "timeline.jobs.tsv")
    assert {(job["rule"], job["name"]) for job in jobs} == rerun
    title = summary_of(results / "qc" / "timeline" / "timeline.summary.tsv")["title"]
    assert title.startswith(f"this run: {len(rerun)} jobs on 2 slots"), title
    tiers = (results / "storage" / "tier_usage.tsv").read_text().splitlines()[1:]
    assert any("not monitored" in line for line in tiers), tiers
    assert all("not monitored" in line or "not visible" in line for line in tiers), tiers
