"""Genomon's pmsignature stages in the workflow (genomon_smk.plan.pmsignature,
workflow/rules/pmsignature.smk): which modes and K run, the background's build in resources/, the
refusals before any job. The stage's run on the Genomon-sheet scenario is in test_scenarios.py;
here it runs on planted signatures."""

import copy

import pytest
from snakemake.exceptions import WorkflowError

from conftest import parse_workflow, write_config
from genomon_smk.plan import pmsignature as plan
from genomon_smk.plan.resources import ReferencePlan
from genomon_smk.tools import pmsignature as tool

CONFIG = {
    "paplot": {"include_unpanel": True, "include_unpair": True},
    "pmsignature": {"annotation": "genes.gtf", "seed": 1, "background_positions": 1000},
    "pmsignature_ind": {"enable": True, "signum_min": 2, "signum_max": 6, "trialnum": 10, "threads": 1},
    "pmsignature_full": {"enable": False, "signum_min": 2, "signum_max": 6, "trialnum": 10, "threads": 1},
}


def planned(tmp_path, cases=("pair_controlpanel",), **changes):
    config = copy.deepcopy(CONFIG)
    for key, value in changes.items():
        section, name = key.split("__")
        config[section][name] = value
    reference = ReferencePlan(str(tmp_path / "genome.fa"), (str(tmp_path / "genome.fa"),), built=False)
    return plan.plan_pmsignature(config, list(cases), reference, str(tmp_path / "resources"),
                                 lambda path: str(tmp_path / path)), config


def test_one_job_per_k_of_each_enabled_mode_when_a_drawn_table_has_tumors(tmp_path):
    ind, _ = planned(tmp_path)
    assert ind.ks == {"ind": [2, 3, 4, 5, 6]} and ind.jobs("full") == 0
    assert ind.annotation == str(tmp_path / "genes.gtf")
    both, _ = planned(tmp_path, pmsignature_full__enable=True, pmsignature_full__signum_max=3)
    assert both.ks == {"ind": [2, 3, 4, 5, 6], "full": [2, 3]}
    # Genomon's condition: some tumor's filtered table is one paplot draws.
    assert planned(tmp_path, cases=())[0].ks == {}
    assert planned(tmp_path, cases=("unpair",), paplot__include_unpair=False)[0].ks == {}
    assert planned(tmp_path, cases=("unpair",))[0].ks == {"ind": [2, 3, 4, 5, 6]}
    assert planned(tmp_path, pmsignature_ind__enable=False)[0].background is None


def test_the_background_is_keyed_by_reference_annotation_seed_and_draw(tmp_path):
    (tmp_path / "genes.gtf").write_text("")
    first, _ = planned(tmp_path)
    assert first.background.directory.startswith(f"{tmp_path}/resources/pmsignature/genome-")
    assert [name.rsplit("/", 1)[1] for name in first.background.files] == list(plan.BACKGROUND_TABLES)
    assert planned(tmp_path)[0].background == first.background
    assert planned(tmp_path, pmsignature__seed=2)[0].background.directory != first.background.directory
    assert planned(tmp_path, pmsignature__background_positions=2000)[0].background.directory != \
        first.background.directory
    (tmp_path / "genes.gtf").write_text("changed\n")
    assert planned(tmp_path)[0].background.directory != first.background.directory


def test_the_plans_table_names_are_the_tools():
    assert {mode.table_name for mode in (tool.IND, tool.Mode("ind", 5, False), tool.FULL)} == \
        set(plan.BACKGROUND_TABLES)


def test_problems_name_the_key(tmp_path):
    gtf, config = planned(tmp_path)
    assert plan.problems(config, gtf, []) == [(("pmsignature", "annotation"), f"file not found: {tmp_path}/genes.gtf")]
    (tmp_path / "genes.gtf").write_text("")
    assert plan.problems(config, gtf, []) == []
    low, config = planned(tmp_path, pmsignature_ind__signum_min=4, pmsignature_ind__signum_max=3)
    assert plan.problems(config, low, []) == [(("pmsignature_ind", "signum_max"), "3 is below signum_min (4)")]


def test_the_default_annotation_is_refused_for_another_genome(tmp_path):
    """hg19 (annot_utils' refGene, installed by bin/install) fits GRCh37 named either way."""
    hg19, config = planned(tmp_path, pmsignature__annotation="hg19")
    assert hg19.annotation.endswith("annot_utils/data/hg19/refGene.txt.gz")
    assert plan.problems(config, hg19, [("1", 249250621), ("2", 243199373)]) == []
    assert plan.problems(config, hg19, [("chr1", 249250621)]) == []
    (key, problem), = plan.problems(config, hg19, [("chr1", 248956422)])
    assert key == ("pmsignature", "annotation") and "chromosome 1 is 248,956,422 bp" in problem


def test_the_workflow_refuses_hg19_genes_for_the_test_genome(tmp_path, testdata):
    config = write_config(tmp_path, testdata, pmsignature_ind={"enable": True})
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config)
    assert "key 'pmsignature.annotation': hg19 is the refGene table" in str(refused.value)
    assert "it has no chromosome 1 (or chr1)" not in str(refused.value)  # the test genome has chr1
    assert not (tmp_path / "results").exists()
