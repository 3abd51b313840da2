"""Every Genomon analysis pattern and input class as a scenario config under .test/, run end to
end as a user replays it (`--configfile .test/config-<name>/config.yaml`), its calls scored
against the generator's truth.

Scenarios that do not test the mapping reuse the default scenario's mapped samples
(conftest.reuse_mapped_samples), so that only the stages they test run.
"""

import subprocess

import pysam
import pytest

from conftest import SCENARIO_DIRS, result_rows as rows_without_meta, run_scenario, scenario_output
from test_mutation_workflow import called, result_rows, truth_sites

pytestmark = pytest.mark.workflow
PANEL = ["pon1", "pon2", "pon3"]
EB_COLUMN = "P-value(EBCall)"


def result(results, tumor, suffix):
    return results / "mutation" / tumor / f"{tumor}.genomon_mutation.result{suffix}"


def clonal_snvs(testdata):
    return {(c, s) for c, s, kind, vaf in truth_sites(testdata, "somatic") if kind == "SNV" and vaf >= 0.2}


def snv_recall(rows, truth):
    snvs = {(row["Chr"], int(row["Start"])) for row in rows if row["Ref"] != "-" and row["Alt"] != "-"}
    return len(snvs & truth) / len(truth)


def vcf_samples(path):
    with pysam.VariantFile(str(path)) as handle:
        return list(handle.header.samples)


def ran_jobs(results, rule):
    """The jobs of a rule this run ran (one log file each)."""
    return sorted(path.stem for path in (results / "logs" / rule).rglob("*.log"))


def test_every_scenario_directory_is_run_by_a_test():
    tested = {"config", "config-pair", "config-tumor-panel", "config-tumor-only", "config-shared-normal",
              "config-panel-bams", "config-genomon-sheet", "config-trimmed"}
    assert set(SCENARIO_DIRS) == tested


def test_pair_without_panel(scenario_root, pipeline_run, testdata):
    """Pattern 2: tumor/normal without a panel: no EBFilter column, and the panel artifacts stay."""
    results, _ = run_scenario(scenario_root, "config-pair", reuse=["tumor", "normal"])
    header, rows = result_rows(result(results, "tumor", ".txt"))
    assert "depth_normal" in header and EB_COLUMN not in header
    assert clonal_snvs(testdata) <= called(rows)
    _, filtered = result_rows(result(results, "tumor", ".filt.txt"))
    artifacts = {(c, s) for c, s, _, _ in truth_sites(testdata, "artifacts")}
    assert len(artifacts & called(filtered)) >= 3, "without a panel, nothing removes the panel artifacts"
    assert vcf_samples(result(results, "tumor", ".filt.vcf.gz")) == ["tumor", "normal"]
    assert ran_jobs(results, "map_reads") == []


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


def test_panel_given_as_bam_files(scenario_root, pipeline_run):
    """The default scenario's panel BAMs named as files: nothing is mapped for the panel, and the
    calls equal the default scenario's, which mapped the same normals itself."""
    results, _ = run_scenario(scenario_root, "config-panel-bams", reuse=["tumor", "normal"])
    assert not (results / "bam" / "pon1").exists()
    assert ran_jobs(results, "split_fastq") == []
    for suffix in (".txt", ".filt.txt"):
        ours = rows_without_meta(result(results, "tumor", suffix))
        assert len(ours) > 1 and ours == rows_without_meta(result(pipeline_run, "tumor", suffix))

