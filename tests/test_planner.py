"""The cohort planner: scheduling rules, the paper's figures, and the workflow's real DAG."""

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO, write_config
from genomon_smk.planner import Job, paper_cohort, read_dot, simulate


def test_list_scheduling_on_a_tiny_dag():
    jobs = [Job("a", "map", 10), Job("b", "map", 10), Job("c", "markdup", 10, after=[0, 1])]
    result = simulate(jobs, slots=2, samples=1)
    assert result.makespan == 20 and result.utilisation == pytest.approx(30 / 40)


def test_higher_priority_jobs_take_a_free_slot_first():
    # One slot: after the split, a map and a markdup job are ready at once.
    jobs = [Job("split", "split", 1), Job("map", "map", 5, after=[0]), Job("markdup", "markdup", 7, after=[0])]
    with_priorities = simulate(jobs, slots=1, samples=1)
    assert with_priorities.starts[2] == 1 and with_priorities.starts[1] == 8  # markdup overtakes the map job
    flat = simulate(jobs, slots=1, samples=1, priority={"split": 0, "map": 0, "markdup": 0})
    assert flat.starts[1] == 1 and flat.starts[2] == 6  # without priorities: first come, first served


def test_paper_single_pipeline_lands_near_the_measured_figures():
    jobs, release = paper_cohort(1, 300)
    result = simulate(jobs, 383, samples=1, release=release)
    # The paper (Fugaku, 96 nodes, 383 slots): 2.48 h and 22.4 % slot utilisation.
    assert result.makespan / 3600 == pytest.approx(2.48, rel=0.10)
    assert 100 * result.utilisation == pytest.approx(22.4, abs=3.0)


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
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout
    jobs = read_dot(dot, {"map_reads": "map", "markdup": "markdup"}, {"map_reads": 60.0})
    rules = Counter(job.name.split("#")[0] for job in jobs)
    assert rules["map_reads"] == 5 * 4 and rules["split_fastq"] == 5 and rules["merge_mutation"] == 1
    gather = {i for i, job in enumerate(jobs) if job.name.startswith("gather_map#")}
    assert all(set(job.after) & gather for job in jobs if job.stage == "markdup")
    result = simulate(jobs, slots=4, samples=1)
    assert result.busy == pytest.approx(60.0 * 20)
