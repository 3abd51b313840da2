"""Tests of the clean-room `mutil filter` (anno mode)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from genomon_smk.tools import mutil

META = ["# Version: fisher-0.1 mutfilter-0.1 mutil-0.1", "# Analysis Date: 2026-01-01 00:00:00",
        "# User: tester"]
PAIR_COLUMNS = ["Chr", "Start", "End", "Ref", "Alt", "depth_tumor", "P-value(fisher)",
                "variantPairNum_tumor", "variantPairNum_normal", "P-value(fisher_realignment)",
                "P-value(EBCall)"]
SINGLE_COLUMNS = ["Chr", "Start", "End", "Ref", "Alt", "10%_posterior_quantile",
                  "variantPairNum", "10%_posterior_quantile(realignment)"]
PAIR_PARAMS = ["--fish_pval", "1.0", "--realign_pval", "1.0", "--eb_pval", "4.0",
               "--tcount", "4", "--ncount", "2"]
SINGLE_PARAMS = ["--post10q", "0.1", "--r_post10q", "0.1", "--count", "4"]
PASSING_PAIR = {"P-value(fisher)": "1.000", "variantPairNum_tumor": "4",
                "variantPairNum_normal": "2", "P-value(fisher_realignment)": "1.000",
                "P-value(EBCall)": "4.0"}
PASSING_SINGLE = {"10%_posterior_quantile": "0.100", "variantPairNum": "4",
                  "10%_posterior_quantile(realignment)": "0.100"}


def make_row(columns, values, key=("1", "100", "100", "A", "T")):
    """A row for `columns`: the first five from key, the rest from values (default `9`)."""
    return list(key) + [values.get(c, "9") for c in columns[5:]]


def run_filter(tmp_path, columns, rows, params, extra=()):
    """Write a result table, run `mutil filter`, return (all output lines, kept data rows)."""
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = META + ["\t".join(columns)] + ["\t".join(r) for r in rows]
    source.write_text("\n".join(lines) + "\n")
    assert mutil.main(["filter", "-i", str(source), "-o", str(target)] + params + list(extra)) == 0
    out = target.read_text().splitlines()
    return out, [line.split("\t") for line in out[len(META) + 1:]]


def test_meta_lines_and_header_copied(tmp_path):
    out, kept = run_filter(tmp_path, PAIR_COLUMNS, [make_row(PAIR_COLUMNS, PASSING_PAIR)], PAIR_PARAMS)
    assert out[:3] == META and out[3] == "\t".join(PAIR_COLUMNS)
    assert kept == [make_row(PAIR_COLUMNS, PASSING_PAIR)]


@pytest.mark.parametrize("column, failing", [
    ("P-value(fisher)", "0.999"),
    ("P-value(EBCall)", "3.999"),
    ("P-value(fisher_realignment)", "0.999"),
    ("P-value(fisher_realignment)", "---"),
    ("variantPairNum_tumor", "3"),
    ("variantPairNum_tumor", "---"),
    ("variantPairNum_normal", "3"),
    ("variantPairNum_normal", "---"),
])
def test_pair_columns_each_side_of_threshold(tmp_path, column, failing):
    good = make_row(PAIR_COLUMNS, PASSING_PAIR)
    bad = make_row(PAIR_COLUMNS, dict(PASSING_PAIR, **{column: failing}), key=("2", "5", "5", "C", "G"))
    _, kept = run_filter(tmp_path, PAIR_COLUMNS, [good, bad], PAIR_PARAMS)
    assert kept == [good]


@pytest.mark.parametrize("column, failing", [
    ("10%_posterior_quantile", "0.099"),
    ("variantPairNum", "3"),
    ("variantPairNum", "---"),
    ("10%_posterior_quantile(realignment)", "0.099"),
    ("10%_posterior_quantile(realignment)", "---"),
])
def test_single_columns_each_side_of_threshold(tmp_path, column, failing):
    good = make_row(SINGLE_COLUMNS, PASSING_SINGLE)
    bad = make_row(SINGLE_COLUMNS, dict(PASSING_SINGLE, **{column: failing}), key=("2", "5", "5", "C", "G"))
    _, kept = run_filter(tmp_path, SINGLE_COLUMNS, [good, bad], SINGLE_PARAMS)
    assert kept == [good]


def test_columns_located_by_name_and_absent_columns_do_not_filter(tmp_path):
    # shuffled order, EBCall and realignment absent: a row failing only those thresholds stays
    columns = ["Chr", "Start", "End", "Ref", "Alt", "variantPairNum_normal", "P-value(fisher)",
               "variantPairNum_tumor"]
    row = make_row(columns, {"variantPairNum_normal": "0", "P-value(fisher)": "2.5",
                             "variantPairNum_tumor": "10"})
    failing = make_row(columns, {"variantPairNum_normal": "0", "P-value(fisher)": "0.5",
                                 "variantPairNum_tumor": "10"}, key=("3", "1", "1", "G", "A"))
    _, kept = run_filter(tmp_path, columns, [row, failing], PAIR_PARAMS)
    assert kept == [row]


def test_defaults_keep_everything_with_values(tmp_path):
    rows = [make_row(PAIR_COLUMNS, {"P-value(fisher)": "0.000", "variantPairNum_tumor": "0",
                                    "variantPairNum_normal": "500",
                                    "P-value(fisher_realignment)": "0.000", "P-value(EBCall)": "0"})]
    _, kept = run_filter(tmp_path, PAIR_COLUMNS, rows, [])
    assert kept == rows


def test_hotspot_score_column_rescues_row(tmp_path):
    columns = PAIR_COLUMNS[:7] + ["score(hotspot)"] + PAIR_COLUMNS[7:]
    weak = dict(PASSING_PAIR, **{"P-value(fisher)": "0.100"})
    rescued = make_row(columns, dict(weak, **{"score(hotspot)": "12.5"}))
    dropped = make_row(columns, dict(weak, **{"score(hotspot)": "---"}), key=("2", "5", "5", "C", "G"))
    _, kept = run_filter(tmp_path, columns, [rescued, dropped], PAIR_PARAMS)
    assert kept == [rescued]


def test_hotspot_db_rescues_matching_key_case_insensitively(tmp_path):
    weak = dict(PASSING_PAIR, **{"variantPairNum_tumor": "1"})
    in_db = make_row(PAIR_COLUMNS, weak, key=("7", "55", "55", "g", "t"))
    not_in_db = make_row(PAIR_COLUMNS, weak, key=("7", "56", "56", "G", "T"))
    db = tmp_path / "hotspot.txt"
    db.write_text("#chr\tstart\tend\tref\talt\n7\t55\t55\tG\tT\tEGFR\n")
    _, kept = run_filter(tmp_path, PAIR_COLUMNS, [in_db, not_in_db], PAIR_PARAMS,
                         ["--hotspot_db", str(db)])
    assert kept == [in_db]
    _, kept = run_filter(tmp_path, PAIR_COLUMNS, [in_db, not_in_db], PAIR_PARAMS)
    assert kept == []


def test_module_runs_as_script(tmp_path):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\t".join(SINGLE_COLUMNS) + "\n"
                      + "\t".join(make_row(SINGLE_COLUMNS, PASSING_SINGLE)) + "\n"
                      + "\t".join(make_row(SINGLE_COLUMNS, {"variantPairNum": "1"})) + "\n")
    subprocess.run([sys.executable, "-m", "genomon_smk.tools.mutil", "filter", "-i", str(source),
                    "-o", str(target)] + SINGLE_PARAMS, check=True)
    assert len(target.read_text().splitlines()) == 2
