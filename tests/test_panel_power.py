"""Small panels are warned about in the plan: the best EB score a clean panel allows a site,
against mutil's --eb_pval (with three shallow normals Genomon's 4.0 removes every call)."""

import pytest

from conftest import run_snakemake, write_config
from genomon_smk.plan import panel_power


def test_the_threshold_is_read_from_mutil_options():
    assert panel_power.eb_threshold("--fish_pval 1.0 --eb_pval 4.0 --tcount 4") == 4.0
    assert panel_power.eb_threshold("--eb_pval=2.5") == 2.5
    assert panel_power.eb_threshold("--post10q 0.1 --count 4") == 0.0


def test_a_bigger_or_deeper_panel_allows_higher_scores():
    three = panel_power.best_clean_site_score(3, 20, 40)
    assert 0.8 < three < 1.5  # the .test panel: upstream EBFilter scores true calls 1.0-1.7 there
    assert panel_power.best_clean_site_score(10, 30, 40) > 4.0 > three
    assert panel_power.best_clean_site_score(6, 30, 40) > panel_power.best_clean_site_score(6, 10, 40)
    # Below about six members the penalised fit stays at its bound whatever their depth.
    assert panel_power.best_clean_site_score(3, 60, 40) == pytest.approx(three, abs=0.05)


def test_a_cached_score_is_the_computed_one_and_only_for_the_code_that_made_it(tmp_path, monkeypatch):
    cache = tmp_path / "snakemake" / "panel-scores.json"
    computed = panel_power.best_clean_site_score(3, 20, 40)
    assert panel_power.best_clean_site_score(3, 20, 40, cache=str(cache)) == computed
    code = panel_power.score_code_digest()
    assert panel_power.read_score_cache(str(cache), code) == {"3 10 20 5": computed}
    # Read back, not computed again: the fit is not called.
    monkeypatch.setattr(panel_power, "clean_site_score", lambda *_: pytest.fail("computed again"))
    assert panel_power.best_clean_site_score(3, 20, 40, cache=str(cache)) == computed
    # Another code's (or a broken) cache is not used.
    assert panel_power.read_score_cache(str(cache), "another") == {}
    cache.write_text("{not json")
    monkeypatch.undo()
    assert panel_power.best_clean_site_score(3, 20, 40, cache=str(cache)) == computed
    assert panel_power.read_score_cache(str(cache), code) == {"3 10 20 5": computed}


def test_a_warning_names_the_threshold_only_when_it_is_out_of_reach():
    check = panel_power.PanelCheck("T", "p", 3, 20.0, 40.0, 1.03, 4.0)
    message = panel_power.warning(check, "config mutation_util.pair_params")
    assert "--eb_pval 4" in message and "at most 1.03" in message and "3 member(s)" in message
    assert panel_power.warning(check.__class__(**{**check.__dict__, "threshold": 0.8}), "k") is None
    # A score just under the threshold is shown under it, and the warning is about calls of the
    # modelled VAF or lower, not every call (calls of higher VAF score higher).
    close = panel_power.warning(check.__class__(**{**check.__dict__, "best_score": 0.9972, "threshold": 1.0}), "k")
    assert "at most 0.997, below --eb_pval 1 " in close and "every call at that VAF or lower" in close, close


def test_a_panel_holding_the_pairs_own_normal_is_warned_about():
    assert "own normal N" in panel_power.own_sample_warning("T", "N", "p", ["N", "P1"])
    assert panel_power.own_sample_warning("T", None, "p", ["P1"]) is None


def test_depth_estimates_from_fastq_and_bam(testdata, truth, pipeline_run):
    genome = truth["genome_length"]
    fastqs = [str(testdata / "fastq" / f"pon1_L1_R{mate}.fastq.gz") for mate in (1, 2)]
    exact = truth["read_pairs"]["pon1"] * 2 * truth["read_length"] / genome
    assert panel_power.fastq_bases(fastqs) / genome == pytest.approx(exact, rel=0.15)
    bam = pipeline_run / "bam" / "pon1" / "pon1.markdup.bam"
    assert panel_power.bam_bases(str(bam)) / genome == pytest.approx(exact, rel=0.15)


@pytest.mark.workflow
def test_the_plan_warns_about_genomons_default_with_the_test_panel(tmp_path, testdata):
    genomon_default = {"pair_params": "--fish_pval 1.0 --realign_pval 1.0 --eb_pval 4.0 --tcount 4 --ncount 2"}
    warned = run_snakemake(write_config(tmp_path, testdata, mutation_util=genomon_default), "-n")
    assert "warning: pair tumor: panel 'panel1' (3 member(s)" in warned.stderr
    assert "below --eb_pval 4 (config mutation_util.pair_params)" in warned.stderr
    quiet = run_snakemake(write_config(tmp_path / "bundled", testdata), "-n")
    assert "warning: pair" not in quiet.stderr
