"""genomon_smk.plan.name_pattern: the wildcard constraint of a set of names."""

import re

from genomon_smk.plan.name_pattern import one_of


def test_matches_exactly_the_names():
    names = ["T1", "T10", "T", "tumor.a", "x|y", "n(1)", "normal999", "normal998"]
    pattern = re.compile(f"(?:{one_of(names)})")
    assert all(pattern.fullmatch(name) for name in names)
    for other in ["T2", "T100", "", "tumorXa", "x", "y", "n1", "normal99", "normal9990", "Normal999"]:
        assert not pattern.fullmatch(other), other


def test_inside_a_path_pattern_as_snakemake_uses_it():
    names = [f"{role}{index:03d}" for index in range(1000) for role in ("tumor", "normal")]
    pattern = re.compile(rf"/out/(?P<sample>{one_of(names)})/(?P<region>[^/]+)\.bam$")
    match = pattern.match("/out/normal999/r0001.bam")
    assert match and match["sample"] == "normal999" and match["region"] == "r0001"
    assert not pattern.match("/out/normal1000/r0001.bam")
    assert pattern.groups == 2  # no groups of its own


def test_no_names_match_nothing():
    assert not re.compile(one_of([])).match("")
    assert not re.compile(one_of([])).match("x")
