"""The gate of the planning optimisations (genomon_smk.plan.snakemake_patches): only on the tested
Snakemake, not in a host workflow unless the config opts in, and one line in the plan otherwise.
The patches themselves are tested against the installed Snakemake in tests/test_snakemake_adapter.py."""

import re

import pytest

from conftest import REPO
from genomon_smk.plan.snakemake_patches import TESTED_SNAKEMAKE, patch_decision


def test_the_pinned_snakemake_is_a_tested_one():
    pin = re.search(r"^snakemake==(\S+)", (REPO / "requirements.txt").read_text(), flags=re.M).group(1)
    assert pin in TESTED_SNAKEMAKE


@pytest.mark.parametrize("setting", ["auto", True])
def test_the_tested_snakemake_is_patched_when_the_workflow_runs_by_itself(setting):
    assert patch_decision(TESTED_SNAKEMAKE[0], False, setting) == (True, None)


def test_another_snakemake_plans_unpatched_and_the_plan_says_so_in_one_line():
    patch, note = patch_decision("9.99.0", False, "auto")
    assert not patch and "\n" not in note
    assert note.startswith("genomon-smk: Snakemake 9.99.0 plans unpatched") and TESTED_SNAKEMAKE[0] in note
    assert patch_decision("9.99.0", True, True)[0] is False  # not even when asked for


def test_a_host_workflow_is_patched_only_when_the_config_opts_in():
    patch, note = patch_decision(TESTED_SNAKEMAKE[0], True, "auto")
    assert not patch and "snakemake_patches: true" in note
    assert patch_decision(TESTED_SNAKEMAKE[0], True, True) == (True, None)


def test_off_is_off_and_says_nothing():
    assert patch_decision(TESTED_SNAKEMAKE[0], False, False) == (False, None)
