"""The per-pair mutation summary: call counts before/after filtering, pyrimidine-collapsed
substitution classes, tumor VAF histogram; TSV and PNG from the CLI on hand-made result files."""

import csv
import struct
import subprocess
import sys

import pytest

from genomon_smk.steps import mutation_summary as ms
from genomon_smk.steps.merge_mutation import header_columns

# (Chr, Start, End, Ref, Alt, tumor VAF): a hand-made result.txt of a pair.
UNFILTERED = [
    ("chr1", 100, 100, "C", "A", 0.40),  # C>A
    ("chr1", 200, 200, "G", "T", 0.10),  # G>T is C>A on the other strand
    ("chr1", 300, 300, "A", "G", 0.55),  # A>G is T>C
    ("chr1", 400, 400, "T", "C", 0.42),  # T>C
    ("chr1", 500, 500, "G", "A", 0.12),  # G>A is C>T
    ("chr1", 600, 602, "TGT", "-", 0.30),  # deletion
    ("chr1", 700, 700, "-", "AC", 0.41),  # insertion
    ("chr2", 50, 50, "C", "G", 0.03),  # C>G
    ("chr2", 60, 60, "A", "T", 1.00),  # A>T is T>A; VAF 1.0 belongs in the last bin
]
# mutil filter dropped the C>G and the deletion.
FILTERED = [row for row in UNFILTERED if row[3:5] not in (("C", "G"), ("TGT", "-"))]


def result_text(rows, paired=True):
    """A Genomon result file: meta lines, the real header, our rows with filler in other columns."""
    columns = header_columns(paired=paired, with_panel=True)
    vaf_column = "misRate_tumor" if paired else "misRate"
    lines = ["# Version: fisher-test", "# Analysis Date: 2026-01-01 00:00:00", "# User: test", "\t".join(columns)]
    for chrom, start, end, ref, alt, vaf in rows:
        values = dict(zip(("Chr", "Start", "End", "Ref", "Alt"), (chrom, start, end, ref, alt)))
        values[vaf_column] = f"{vaf:.3f}"
        lines.append("\t".join(str(values.get(column, "0")) for column in columns))
    return "\n".join(lines) + "\n"


def run_cli(tmp_path, unfiltered, filtered, paired=True, tumor="T1", subprocess_run=False):
    """The summary's TSV rows (dicts) and PNG path; the CLI in this process or, as the rule runs
    it, with `python -m`."""
    (tmp_path / "r.txt").write_text(result_text(unfiltered, paired))
    (tmp_path / "r.filt.txt").write_text(result_text(filtered, paired))
    tsv, png = tmp_path / "s.tsv", tmp_path / "s.png"
    args = ["--result", str(tmp_path / "r.txt"), "--filtered", str(tmp_path / "r.filt.txt"),
            "--tumor", tumor, "--tsv", str(tsv), "--png", str(png)]
    if subprocess_run:
        subprocess.run([sys.executable, "-m", "genomon_smk.steps.mutation_summary", *args], check=True, capture_output=True)
    else:
        assert ms.main(args) == 0
    with open(tsv) as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return rows, png


def counts(rows, metric, stage, variant_type):
    """category -> count of the TSV rows of one metric/stage/type."""
    return {
        row["category"]: int(row["count"])
        for row in rows
        if (row["metric"], row["stage"], row["variant_type"]) == (metric, stage, variant_type)
    }


@pytest.mark.parametrize(
    "ref, alt, expected",
    [
        ("C", "A", "C>A"), ("G", "T", "C>A"),
        ("C", "G", "C>G"), ("G", "C", "C>G"),
        ("C", "T", "C>T"), ("G", "A", "C>T"),
        ("T", "A", "T>A"), ("A", "T", "T>A"),
        ("T", "C", "T>C"), ("A", "G", "T>C"),
        ("T", "G", "T>G"), ("A", "C", "T>G"),
        ("g", "t", "C>A"),
    ],
)
def test_substitutions_are_named_by_the_pyrimidine_of_the_base_pair(ref, alt, expected):
    assert ms.substitution_class(ref, alt) == expected


def test_variant_types_from_genomon_alleles():
    assert ms.variant_type("A", "G") == "SNV"
    assert ms.variant_type("-", "TTG") == "indel"
    assert ms.variant_type("TGT", "-") == "indel"
    assert ms.variant_type("AC", "GT") == "other"
    assert ms.variant_type("A", "A") == "other"


def test_summary_tsv_counts_calls_classes_and_vaf_bins(tmp_path):
    rows, _ = run_cli(tmp_path, UNFILTERED, FILTERED)
    assert set(rows[0]) == set(ms.TSV_COLUMNS)
    assert {row["tumor"] for row in rows} == {"T1"}

    assert counts(rows, "calls", "unfiltered", "SNV") == {"all": 7}
    assert counts(rows, "calls", "unfiltered", "indel") == {"all": 2}
    assert counts(rows, "calls", "filtered", "SNV") == {"all": 6}
    assert counts(rows, "calls", "filtered", "indel") == {"all": 1}
    assert counts(rows, "calls", "filtered", "other") == {"all": 0}

    assert counts(rows, "substitution", "filtered", "SNV") == {
        "C>A": 2, "C>G": 0, "C>T": 1, "T>A": 1, "T>C": 2, "T>G": 0,
    }

    snv_bins = {label: n for label, n in counts(rows, "vaf", "filtered", "SNV").items() if n}
    assert snv_bins == {"[0.10,0.15)": 2, "[0.40,0.45)": 2, "[0.55,0.60)": 1, "[0.95,1.00]": 1}
    assert {label: n for label, n in counts(rows, "vaf", "filtered", "indel").items() if n} == {"[0.40,0.45)": 1}


def test_every_combination_is_written_with_zeros(tmp_path):
    rows, _ = run_cli(tmp_path, UNFILTERED[:1], [])
    bins = 20  # default width 0.05
    assert len(rows) == 2 * len(ms.VARIANT_TYPES) + len(ms.SUBSTITUTION_CLASSES) + bins * len(ms.VARIANT_TYPES)
    assert counts(rows, "calls", "filtered", "SNV") == {"all": 0}
    assert sum(int(row["count"]) for row in rows if row["metric"] != "calls" or row["stage"] == "filtered") == 0
    assert counts(rows, "calls", "unfiltered", "SNV") == {"all": 1}


def test_vaf_histogram_holds_every_filtered_call(tmp_path):
    rows, _ = run_cli(tmp_path, UNFILTERED, UNFILTERED)
    for kind in ms.VARIANT_TYPES:
        assert sum(counts(rows, "vaf", "filtered", kind).values()) == counts(rows, "calls", "filtered", kind)["all"]


def test_tumor_only_results_use_the_misrate_column(tmp_path):
    rows, _ = run_cli(tmp_path, UNFILTERED, FILTERED, paired=False)
    assert counts(rows, "calls", "filtered", "SNV") == {"all": 6}
    assert counts(rows, "vaf", "filtered", "SNV")["[0.40,0.45)"] == 2


def png_size(path):
    """(width, height) from a PNG's signature and IHDR chunk."""
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_module_cli_writes_a_three_panel_png(tmp_path):
    rows, png = run_cli(tmp_path, UNFILTERED, FILTERED, subprocess_run=True)
    assert counts(rows, "calls", "filtered", "SNV") == {"all": 6}
    width, height = png_size(png)
    assert width > 2.5 * height  # three panels side by side


def test_bin_width_must_divide_the_unit_interval():
    assert len(ms.vaf_bins(0.1)) == 11
    with pytest.raises(ValueError):
        ms.vaf_bins(0.3)


def test_a_file_without_the_allele_columns_is_refused():
    with pytest.raises(ValueError, match="Ref"):
        list(ms.read_calls(["# meta\n", "chrom\tpos\n", "chr1\t5\n"]))
