"""The scenarios of the normal's forms (tests/test_scenarios.py runs the others; a module of its
own so that another pytest-xdist worker runs it beside them, on the same default run): a tumor
without a matched normal, with and without a panel; two pairs sharing a normal; a panel given as
BAM files. Each reuses the default scenario's mapped samples and runs only what it tests."""

import subprocess

import pytest

from conftest import result_rows as rows_without_meta, retuned_jobs, run_scenario
from test_mutation_workflow import MUTATION_FILTER_JOBS, called, result_rows, truth_sites
from test_scenarios import (EB_COLUMN, PANEL, clonal_snvs, ran_jobs, result, snv_recall, sv_calls_but_panel_names,
                            sv_recall, vcf_samples)
from test_sv import sv_file, sv_rows

pytestmark = pytest.mark.workflow


@pytest.mark.parametrize("name, panel", [("config-tumor-panel", True), ("config-tumor-only", False)])
def test_tumor_without_normal(scenario_root, pipeline_run, testdata, name, panel):
    """Patterns 3 and 4: Genomon's single-mode columns, mutil single mode, a one-sample VCF."""
    results, _ = run_scenario(scenario_root, name, reuse=["tumor"] + (PANEL if panel else []))
    header, rows = result_rows(result(results, "tumor", ".txt"))
    assert header[:8] == ["Chr", "Start", "End", "Ref", "Alt", "depth", "variantNum", "bases"]
    assert "depth_normal" not in header and "posterior_mean" in header
    assert (EB_COLUMN in header) == panel
    truth = clonal_snvs(testdata)
    assert truth <= called(rows)
    _, filtered = result_rows(result(results, "tumor", ".filt.txt"))
    assert snv_recall(filtered, truth) >= 0.9
    for suffix in (".filt.vcf.gz", ".vcf.gz"):
        assert vcf_samples(result(results, "tumor", suffix)) == ["tumor"]
    records = subprocess.run(["bcftools", "view", "-H", "-f", "PASS", str(result(results, "tumor", ".vcf.gz"))],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(records) == len(filtered) > 0
    # SVs of a tumor without a matched normal (GenomonSV filt without control BAM): no control counts.
    assert sv_recall(results, testdata) >= 0.7
    _, _, sv_calls = sv_rows(sv_file(results, "tumor", ".txt"))
    assert {row["Num_Control_Ref_Read_Pair"] for row in sv_calls} == {"---"}
    assert ran_jobs(results, "sv_merge_control") == (["panel1"] if panel else [])
    assert vcf_samples(sv_file(results, "tumor", ".filt.vcf.gz")) == ["tumor"]
    # The second day: mutil's single mode retuned reruns its filter only, not the calls.
    assert set(retuned_jobs(scenario_root / name / "config.yaml", "mutation_util", "single_params",
                            "--post10q 0.2 --r_post10q 0.2 --count 4")) == MUTATION_FILTER_JOBS


def test_two_pairs_sharing_a_normal_map_it_once(scenario_root, pipeline_run, testdata):
    """The normal is mapped here (the tumor and the panel are reused): once, for both pairs."""
    results, _ = run_scenario(scenario_root, "config-shared-normal", reuse=["tumor"] + PANEL)
    assert ran_jobs(results, "merge_bam") == ["normal"]
    assert ran_jobs(results, "split_fastq") == ["normal"]
    # The same normal BAM as the default scenario's, so the same calls for the tumor.
    for suffix in (".txt", ".filt.txt"):
        assert rows_without_meta(result(results, "tumor", suffix)) == rows_without_meta(
            result(pipeline_run, "tumor", suffix))
    _, second = result_rows(result(results, "pon1", ".filt.txt"))
    planted = {(c, s) for c, s, _, _ in truth_sites(testdata, "somatic")}
    assert not planted & called(second), "pon1 carries none of the tumor's mutations"
    # SVs of both pairs: pon1, a tumor here and a panel member, is parsed once.
    assert ran_jobs(results, "sv_parse") == ["pon1", "pon2", "pon3", "tumor"]
    assert ran_jobs(results, "sv_filt") == ["pon1", "tumor"]
    assert sv_calls_but_panel_names(results) == sv_calls_but_panel_names(pipeline_run)


def test_panel_given_as_bam_files(scenario_root, pipeline_run):
    """The default scenario's panel BAMs named as files: nothing is mapped for the panel, and the
    calls equal the default scenario's, which mapped the same normals itself."""
    results, _ = run_scenario(scenario_root, "config-panel-bams", reuse=["tumor", "normal"])
    assert not (results / "bam" / "pon1").exists()
    assert ran_jobs(results, "split_fastq") == []
    for suffix in (".txt", ".filt.txt"):
        ours = rows_without_meta(result(results, "tumor", suffix))
        assert len(ours) > 1 and ours == rows_without_meta(result(pipeline_run, "tumor", suffix))
    # GenomonSV parses the panel's BAMs under their file names; the same SVs as the default's.
    assert ran_jobs(results, "sv_parse") == ["pon1.markdup", "pon2.markdup", "pon3.markdup", "tumor"]
    assert sv_calls_but_panel_names(results) == sv_calls_but_panel_names(pipeline_run)
