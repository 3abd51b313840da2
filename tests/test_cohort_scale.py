"""Cohorts at a cluster's granularity (issue 39): the stage plan of any cohort without Snakemake's
DAG, and a cohort run in batches (Snakemake's --batch) whose results equal a one-shot run's."""

import os
import re
import subprocess
import sys
import time

import pytest

from conftest import (
    RUN_DIR,
    job_stats,
    result_rows,
    reuse_mapped_samples,
    run_snakemake,
    scenario_variant,
)
from genomon_smk.plan import batches
from genomon_smk.plan.stage_plan import cohort_shape, main, rule_jobs, stage_jobs
from test_stage_plan import printed_plan, scenario_copy

SAMPLES = ("tumor", "normal", "pon1", "pon2", "pon3")  # the default scenario's


def test_the_stage_plan_of_10000_pairs_at_the_papers_granularity_in_well_under_a_second(capsys):
    start = time.monotonic()
    assert main(["--pairs", "10000", "--chunks", "2712", "--regions", "87"]) == 0
    assert time.monotonic() - start < 1
    stages, rules = printed_plan(capsys.readouterr().out)
    expected = rule_jobs(cohort_shape(10_000, 2712, 87, 86))
    assert rules == {rule: count for rule, count in expected.items() if rule != "all"}
    assert stages == stage_jobs(expected)
    assert rules["map_reads"] == 20_000 * 2712 and rules["identify_mutations"] == 10_000 * 86


def test_a_hypothetical_cohorts_regions_default_to_grch37_at_the_schemas_cut(capsys):
    main(["--pairs", "2"])
    out = capsys.readouterr().out
    assert "4 samples (4 mapped, 0 imported)" in out and "8 chunks per mapped sample" in out


def test_batches_follow_the_planned_jobs_and_end_with_the_cohorts_end_stages():
    assert batches.batch_count(100, 400_000) == 1 and batches.batch_count(570_000, 400_000) == 3
    runs = batches.commands(["--configfile", "c.yaml"], 3)
    assert [run[-1] for run in runs[:3]] == [f"cohort_results={i}/3" for i in (1, 2, 3)]
    assert runs[0].index("cohort_results") < runs[0].index("--configfile")  # not taken as a config file
    final = runs[-1]
    allowed = final[final.index("--allowed-rules") + 1:]
    assert {"post_analysis_mutation", "paplot", "multiqc", "utilisation_timeline", "all"} <= set(allowed)
    assert not {"map_reads", "markdup", "identify_mutations", "merge_bam"} & set(allowed)


@pytest.mark.workflow
def test_the_stage_plan_from_a_config_counts_what_snakemakes_dag_does(tmp_path, testdata):
    """`python -m genomon_smk.plan.stage_plan --configfile` (the workflow's parse, no DAG) against
    the Job stats of the dry run, in the pair scenario."""
    config = scenario_copy(tmp_path, testdata, "config-pair")
    plan = subprocess.run(
        [sys.executable, "-m", "genomon_smk.plan.stage_plan", "--configfile", str(config), "--",
         "--profile", "profiles/local", "--cores", "2"],
        cwd=RUN_DIR, capture_output=True, text=True, check=True,
    )
    stages, rules = printed_plan(plan.stderr)
    result = run_snakemake(config, "-n", "--quiet", "rules")
    snakemake = job_stats(result.stdout + result.stderr)
    assert rules == {rule: count for rule, count in snakemake.items() if rule != "all"}
    assert stages == stage_jobs(snakemake)
    # The batches' default count reads the same plan's total.
    args = ["--profile", str(RUN_DIR / "profiles" / "local"), "--configfile", str(config), "--cores", "2"]
    assert batches.planned_jobs(args) == sum(snakemake.values())


@pytest.mark.workflow
def test_a_cohort_run_in_batches_equals_the_one_shot_run_and_resumes(tmp_path, scenario_root, pipeline_run):
    """The default scenario (a pair with a panel of three normals) on its own run's BAMs, in two
    batches of Snakemake's --batch (the pair's marker, then the panel samples' files) and the end
    stages' run (genomon_smk.plan.batches): every per-pair result and the cohort's merged tables
    are the one-shot run's (pipeline_run); run again, nothing is left to do."""
    config = scenario_variant(scenario_root, "config", tmp_path)
    results = tmp_path / "results"
    reuse_mapped_samples(pipeline_run, results, SAMPLES)
    command = [sys.executable, "-m", "genomon_smk.plan.batches", "--batches", "2", "--",
               "--profile", "profiles/local", "--configfile", str(config), "--cores", "2"]
    run = subprocess.run(command, cwd=RUN_DIR, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-6000:]
    assert "batch 2/2" in run.stderr and "the cohort's end stages" in run.stderr
    assert run.stderr.count("Considering only batch") == 2  # each batch plans its share only
    compared = [
        *(f"mutation/tumor/tumor.genomon_mutation.result{suffix}" for suffix in (".txt", ".filt.txt")),
        *(f"sv/tumor/tumor.genomonSV.result{suffix}" for suffix in (".txt", ".filt.txt")),
        "mutation/tumor/tumor.genomon_mutation.summary.tsv",
        *(path.relative_to(pipeline_run).as_posix()
          for path in sorted((pipeline_run / "post_analysis").rglob("*.txt"))),
    ]
    assert any("post_analysis" in name for name in compared)
    for name in compared:
        assert result_rows(results / name) == result_rows(pipeline_run / name), name
    assert (results / "paplot").is_dir() and (results / "qc" / "multiqc_report.html").is_file()
    again = subprocess.run(command, cwd=RUN_DIR, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-6000:]
    assert again.stderr.count("Nothing to be done") == 3, again.stderr[-6000:]


@pytest.mark.workflow
def test_the_planning_patches_plan_the_same_jobs_with_the_same_records(tmp_path, testdata):
    """A dry run of the pair scenario with every job's record shown (-p: each job's rule, files,
    wildcards, reason, resources and shell command) prints the same with Snakemake's planning
    patched as with `snakemake_patches: false` (genomon_smk.plan.snakemake_patches)."""
    config = scenario_copy(tmp_path, testdata, "config-pair")

    def records(*args):
        # One hash seed for both: a job's reason lists a set of files in the set's order.
        result = run_snakemake(config, "-n", "-p", *args, env={**os.environ, "PYTHONHASHSEED": "0"})
        assert "genomon-smk: Snakemake" not in result.stderr  # patched unless told not to
        lines = result.stdout.splitlines()
        # From the first job's record on (the run's header names the command, config and date);
        # the records and the temporary files that would be removed (printed where the
        # scheduler's order puts them), each in any order.
        first = next(n for n, line in enumerate(lines) if line.startswith("[") and line.endswith("]"))
        removed = sorted(line for line in lines[first:] if line.startswith("Would remove temporary output"))
        text = "\n".join(line.rstrip() for line in lines[first:] if not line.startswith("Would remove"))
        records = re.split(r"^\[\w{3} \w{3} [ \d]\d [\d:]{8} \d{4}\]$", text, flags=re.MULTILINE)
        records = sorted(record.strip() for record in records if record.strip())
        assert len(records) == sum(job_stats(result.stdout).values())  # one record per job
        return records, removed

    patched, unpatched = records(), records("--config", "snakemake_patches=false")
    assert len(patched[0]) > 40 and patched[1]
    assert patched == unpatched
