"""The cohort planner: scheduling rules, the paper's figures, and the workflow's real DAG."""

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import RUN_DIR, write_config
from genomon_smk.plan.planner import (
    GENOMON_SECONDS,
    GENOMON_SMK_SECONDS,
    Job,
    benchmark_durations,
    draw_schedule,
    main,
    paper_cohort,
    read_dot,
    recommend_slots,
    replicate,
    simulate,
)
from genomon_smk.plan.rules import PRIORITIES


def test_list_scheduling_on_a_tiny_dag():
    jobs = [Job("a", "map_reads", 10), Job("b", "map_reads", 10), Job("c", "markdup", 10, after=[0, 1])]
    result = simulate(jobs, slots=2, samples=1)
    assert result.makespan == 20 and result.utilisation == pytest.approx(30 / 40)


def test_higher_priority_jobs_take_a_free_slot_first():
    # One slot: after the split, a map and a markdup job are ready at once.
    jobs = [Job("split", "split_fastq", 1), Job("map", "map_reads", 5, after=[0]), Job("markdup", "markdup", 7, after=[0])]
    with_priorities = simulate(jobs, slots=1, samples=1)
    assert with_priorities.starts[2] == 1 and with_priorities.starts[1] == 8  # markdup overtakes the map job
    flat = simulate(jobs, slots=1, samples=1, priority={"split_fastq": 0, "map_reads": 0, "markdup": 0})
    assert flat.starts[1] == 1 and flat.starts[2] == 6  # without priorities: first come, first served


def test_paper_single_pipeline_lands_near_the_measured_figures():
    jobs, release = paper_cohort(1, 300)
    result = simulate(jobs, 383, samples=1, release=release)
    # The paper (Fugaku, 96 nodes, 383 slots): 2.48 h and 22.4 % slot utilisation.
    assert result.makespan / 3600 == pytest.approx(2.48, rel=0.10)
    assert 100 * result.utilisation == pytest.approx(22.4, abs=3.0)


def test_this_pipelines_design_at_the_papers_scale_scales_only_map_and_markdup():
    genomon, ours = (paper_cohort(1, 300, seconds)[0] for seconds in (GENOMON_SECONDS, GENOMON_SMK_SECONDS))
    assert [job.name for job in genomon] == [job.name for job in ours]
    for before, now in zip(genomon, ours):
        expected = {"map": GENOMON_SMK_SECONDS.map / GENOMON_SECONDS.map,
                    "markdup": GENOMON_SMK_SECONDS.markdup / GENOMON_SECONDS.markdup}.get(before.stage, 1.0)
        assert now.duration == pytest.approx(before.duration * expected), before.name
    # The measured ratios (bench/markdup_paths.py) make the markdup stage, the critical one, shorter.
    hours = [simulate(jobs, 383, samples=1, release={0: 0.0}).makespan for jobs in (genomon, ours)]
    assert hours[1] < hours[0]


def test_more_pipelines_at_once_raise_throughput_and_utilisation_as_in_the_paper():
    results = []
    for count in (1, 2, 3, 4):
        jobs, release = paper_cohort(count, 300)
        results.append(simulate(jobs, 383, samples=count, release=release))
    hours = [r.makespan for r in results]
    assert hours == sorted(hours)
    assert [r.samples_per_hour for r in results] == sorted(r.samples_per_hour for r in results)
    assert [r.utilisation for r in results] == sorted(r.utilisation for r in results)
    assert results[1].utilisation == pytest.approx(0.421, abs=0.05)  # Table 7: 42.1 % for two pipelines


def test_read_dot_takes_the_real_jobs_and_edges_of_a_config(tmp_path, testdata):
    config = write_config(tmp_path, testdata)
    dot = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), "-n", "--dag", "--configfile", str(config)],
        cwd=RUN_DIR, capture_output=True, text=True, check=True,
    ).stdout
    jobs = read_dot(dot, {"map_reads": 60.0})
    rules = Counter(job.name.split("#")[0] for job in jobs)
    assert rules["map_reads"] == 5 * 4 and rules["split_fastq"] == 5 and rules["merge_mutation"] == 1
    gather = {i for i, job in enumerate(jobs) if job.name.startswith("gather_map#")}
    assert all(set(job.after) & gather for job in jobs if job.stage == "markdup")
    result = simulate(jobs, slots=4, samples=1)
    assert result.busy == pytest.approx(60.0 * 20)


def test_recommendation_is_the_fewest_slots_within_the_target():
    jobs = [Job(f"j{i}", "map_reads", 10.0) for i in range(4)] + [Job("end", "merge_mutation", 5.0, after=[0, 1, 2, 3])]
    slots, result = recommend_slots(jobs, samples=1, target=25.0)
    assert slots == 2 and result.makespan == 25.0  # 2 rounds of 10 s, then 5 s
    assert recommend_slots(jobs, samples=1, target=24.9)[0] == 4  # 3 slots still need two rounds
    assert recommend_slots(jobs, samples=1, target=14.9) is None  # the critical path is 15 s


def test_a_job_holds_its_threads_and_a_narrower_one_fills_the_gap():
    jobs = [Job("wide", "markdup", 10.0, threads=2), Job("wide2", "markdup", 10.0, threads=2), Job("narrow", "map_reads", 4.0)]
    result = simulate(jobs, slots=3, samples=1)
    # Both wide jobs want 2 of 3 slots: the second waits, the low-priority map job takes the slot left.
    assert result.starts == (0.0, 10.0, 0.0)
    assert result.makespan == 20.0 and result.busy == pytest.approx(2 * 10 * 2 + 4)
    assert simulate([Job("huge", "map_reads", 5.0, threads=8)], slots=2, samples=1).busy == 10.0  # capped at the slots


def test_replicated_pipelines_are_independent_and_staggered():
    jobs = [Job("a", "map_reads", 10.0), Job("b", "markdup", 10.0, after=[0])]
    cohort, release = replicate(jobs, 3, stagger=5.0)
    assert [job.after for job in cohort] == [[], [0], [], [2], [], [4]]
    assert [job.pipeline for job in cohort] == [0, 0, 1, 1, 2, 2] and release == {0: 0.0, 1: 5.0, 2: 10.0}
    assert simulate(cohort, 10, samples=3, release=release).makespan == 30.0


def test_the_reference_set_up_is_planned_once_for_a_cohort():
    jobs = [Job("map_reads#1", "map_reads", 10.0, after=[1]), Job("reference_bwa_index#2", "reference_bwa_index", 60.0)]
    cohort, _ = replicate(jobs, 3, stagger=0.0)
    assert [job.name for job in cohort] == ["map_reads#1", "reference_bwa_index#2", "map_reads#1", "map_reads#1"]
    assert [job.after for job in cohort] == [[1], [], [1], [1]]
    assert simulate(cohort, 10, samples=3).makespan == 70.0


@pytest.mark.workflow
def test_planner_takes_the_real_dag_and_the_runs_benchmarks(pipeline_run, tmp_path, capsys):
    config = pipeline_run.parent / "config" / "config.yaml"
    dot = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), "-n", "--dag", "--forceall", "--configfile", str(config)],
        cwd=RUN_DIR, capture_output=True, text=True, check=True,
    ).stdout
    nodes = re.findall(r'^\s*(\d+)\[label = "([^"\\]+)', dot, flags=re.M)
    durations = benchmark_durations(str(pipeline_run / "benchmarks"))
    # Every rule of the DAG but the target has a measured mean.
    assert {rule for _, rule in nodes} - {"all"} <= set(durations)
    # A reference set-up job another scenario already built (build_once) may take 0.00 s; the
    # per-sample work never does.
    assert all(seconds >= 0 for seconds in durations.values())
    assert all(durations[rule] > 0 for rule in ("split_fastq", "map_reads", "markdup", "merge_bam"))
    jobs = read_dot(dot, durations)
    assert len(jobs) == len(nodes) and len(nodes) > 90
    single = simulate(jobs, 2, samples=1, priority=PRIORITIES)
    expected_busy = sum(durations.get(rule, 0.0) for _, rule in nodes)
    assert single.busy == pytest.approx(expected_busy)

    # With the jobs' threads on the run's 2 cores, the simulation replays the run: its makespan is
    # near the one the run's timeline measured.
    config_values = yaml.safe_load(config.read_text())
    threads = {"map_reads": config_values["map"]["threads"], "markdup": config_values["markdup"]["threads"]}
    replay = simulate(read_dot(dot, durations, threads), 2, samples=1, priority=PRIORITIES)
    summary = dict(line.split("\t") for line in
                   (pipeline_run / "qc" / "timeline" / "timeline.summary.tsv").read_text().splitlines()[1:])
    assert replay.makespan == pytest.approx(float(summary["makespan_s"]), rel=0.25)

    (tmp_path / "dag.dot").write_text(dot)
    assert main(["--dag", str(tmp_path / "dag.dot"), "--benchmarks", str(pipeline_run / "benchmarks"),
                 "--slots", "2", "--pipelines", "1", "2", "--target-hours", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{len(nodes)} jobs per pipeline (1 pair(s))")
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+[12]\s+2\s", line)]
    assert [row[0] for row in rows] == ["1", "2"]
    assert float(rows[0][2]) == pytest.approx(single.makespan / 3600, abs=0.006)
    assert "slots =" in out  # a recommendation for the 1 h target


def test_a_simulated_schedule_is_drawn_as_a_timeline(tmp_path):
    jobs = [Job("a", "map_reads", 10.0), Job("b", "map_reads", 10.0), Job("c", "markdup", 20.0, after=[0, 1], threads=2)]
    result = simulate(jobs, slots=2, samples=1)
    draw_schedule(jobs, result, str(tmp_path / "plan.svg"))
    svg = (tmp_path / "plan.svg").read_text()
    assert "3 jobs on 2 slots in 30 s: utilisation 100.0 %, 120.00 samples/h" in svg
