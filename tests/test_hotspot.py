"""Tests of the clean-room `hotspotCall` (genomon_smk.tools.hotspot) and `mutil merge_hotspot`,
against the facts of genomon-stages-spec.md section 1 (the LOD's per-base values and worked
examples, the thresholds, the row format, the merge)."""

from __future__ import annotations

import gzip
import math
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import fisher_exact

from genomon_smk.plan.hotspot import hotspot_db_problems, region_rows
from genomon_smk.tools import fisher, hotspot, mutil
from genomon_smk.tools.hotspot import Bases, Thresholds, base_lod, lod_score, read_sites, sample_bases, site_rows
from test_fisher import ReadSet, make_reference

PARAMS = "-B -q 20 -Q2 -d 10000000"


# ----------------------------------------------------------------------------- the LOD

@pytest.mark.parametrize("quality, share", [(41, 4.1), (50, 4.1), (40, 4.0), (30, 3.0), (20, 1.996),
                                            (10, 0.954), (3, -0.002), (2, -0.233)])
def test_per_base_lod_values_of_the_spec(quality, share):
    assert round(base_lod(quality), 3) == share


def bases(ref, ref_count, alt, alt_count, quality=30, reverse_alt=0):
    """A sample's bases: ref_count reference letters (Q30) and alt_count alt letters at
    `quality`, the last reverse_alt of them on the reverse strand."""
    letters = ref * ref_count + alt * (alt_count - reverse_alt) + alt.lower() * reverse_alt
    return Bases(letters, [30] * ref_count + [quality] * alt_count)


@pytest.mark.parametrize("alt_reads, quality, lod, called", [(2, 41, 8.2, True), (3, 30, 9.0, True),
                                                              (2, 30, 6.0, False)])
def test_worked_examples_of_the_spec_with_the_default_lod_of_8(alt_reads, quality, lod, called):
    tumor, normal = bases("A", 10, "T", alt_reads, quality), bases("A", 20, "T", 0)
    assert round(lod_score(tumor.alt_qualities("T")), 1) == lod
    assert bool(list(site_rows("1", "5", "A", ("T",), tumor, normal, Thresholds()))) == called


def test_each_threshold_passes_at_equality_and_fails_just_past_it():
    # tumor: 10 alt of 100 (rate 0.1); normal 1 of 100 (0.01 = 0.1 x tumor's)
    tumor, normal = bases("C", 90, "G", 10), bases("C", 99, "G", 1)
    lod = lod_score(tumor.alt_qualities("G"))  # 10 x 2.9996
    at_bounds = Thresholds(min_tumor_misrate=0.1, max_control_misrate=0.01, ratio_control=0.1, min_lod_score=lod)
    assert len(list(site_rows("1", "5", "C", ("G",), tumor, normal, at_bounds))) == 1
    for past in (dict(min_tumor_misrate=0.1001), dict(max_control_misrate=0.0099), dict(ratio_control=0.099),
                 dict(min_lod_score=lod + 1e-9)):
        th = Thresholds(**{**at_bounds.__dict__, **past})
        assert list(site_rows("1", "5", "C", ("G",), tumor, normal, th)) == [], past


def test_only_the_tumor_alt_bases_enter_the_lod():
    tumor, _normal = bases("A", 5, "T", 3, quality=20), bases("A", 5, "T", 3, quality=40)
    assert lod_score(tumor.alt_qualities("T")) == pytest.approx(3 * base_lod(20))
    assert lod_score([]) == 0


# ----------------------------------------------------------------------------- parsing

def test_pileup_bases_drop_marks_indels_and_non_acgt_letters():
    # ^] starts a read (']' is its MAPQ), $ ends one, +2AG is an insertion, N and * are not counted
    parsed = sample_bases("^]A$c+2AGgN*T", "IIII#I")
    assert parsed.letters == "AcgT" and parsed.qualities == [40, 40, 40, 40]
    assert sample_bases("*", "*").depth == 0
    with pytest.raises(ValueError, match="line up"):
        sample_bases("AC", "I")


def test_database_rows_single_bases_only_deduplicated_and_grouped_in_file_order():
    text = ("#comment\n"
            "7\t140453136\t140453136\tA\tT\tBRAF\n"
            "7\t140453136\t140453136\tA\tT\tBRAF again\n"
            "7\t140453135\t140453136\tAC\tTT\tBRAF V600K\n"
            "1\t10\t10\tC\t-\tdeletion\n"
            "1\t5\t5\tG\tA\n"
            "7\t140453136\t140453136\tA\tG\n"
            "\n")
    sites = read_sites(iter(text.splitlines(True)))
    assert [(s.chrom, s.start, s.ref, s.alts) for s in sites] == [
        ("7", "140453136", "A", ("T", "G")), ("1", "5", "G", ("A",))]


# ----------------------------------------------------------------------------- calls on BAMs

@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Tumor and normal BAMs with hotspot sites: chr1:100 (4 alt reads at Q30 of 24), chr1:200
    (germline: half the normal's reads too), chr1:300 (2 alt reads at Q30: LOD 6), chr2:50 (two
    alts, one of them with a low-MAPQ or BQ 1 read that must not count)."""
    tmp = tmp_path_factory.mktemp("hotspot")
    ref, contigs = make_reference(tmp)
    alt = {site: next(b for b in "ACGT" if b != contigs[c][site[1] - 1])
           for site in [("chr1", 100), ("chr1", 200), ("chr1", 300), ("chr2", 50)] for c in [site[0]]}
    tumor, normal = ReadSet(contigs), ReadSet(contigs)
    tumor.ref_reads("chr1", 100, 10, 10)
    tumor.snv("chr1", 100, alt["chr1", 100], 3)
    tumor.snv("chr1", 100, alt["chr1", 100], 1, reverse=True)
    normal.ref_reads("chr1", 100, 10, 10)
    tumor.ref_reads("chr1", 200, 10, 10)
    tumor.snv("chr1", 200, alt["chr1", 200], 10)
    normal.ref_reads("chr1", 200, 5, 5)
    normal.snv("chr1", 200, alt["chr1", 200], 10)
    tumor.ref_reads("chr1", 300, 5, 5)
    tumor.snv("chr1", 300, alt["chr1", 300], 2)
    normal.ref_reads("chr1", 300, 5, 5)
    second = next(b for b in "ACGT" if b not in (contigs["chr2"][49], alt["chr2", 50]))
    tumor.ref_reads("chr2", 50, 6, 6)
    tumor.snv("chr2", 50, alt["chr2", 50], 3, bq=41)
    tumor.snv("chr2", 50, alt["chr2", 50], 2, mapq=10)
    tumor.snv("chr2", 50, alt["chr2", 50], 2, bq=1)
    tumor.snv("chr2", 50, second, 3, reverse=True, bq=40)
    normal.ref_reads("chr2", 50, 6, 6)
    bams = [tumor.write(tmp / "tumor.bam"), normal.write(tmp / "normal.bam")]
    db = tmp / "hotspot.txt"
    rows = [("chr1", 100, alt["chr1", 100]), ("chr1", 200, alt["chr1", 200]), ("chr1", 300, alt["chr1", 300]),
            ("chr2", 50, alt["chr2", 50]), ("chr2", 50, second), ("chr2", 300, "A")]
    db.write_text("".join(f"{c}\t{p}\t{p}\t{contigs[c][p - 1]}\t{a}\tgene\tp.X1Y\n" for c, p, a in rows)
                  + "chr1\t150\t151\tA\tT\n")
    return dict(tmp=tmp, bams=bams, db=str(db), contigs=contigs, alt=alt, second=second)


def run_hotspot(pair, *options):
    out = pair["tmp"] / "out.txt"
    assert hotspot.main([*options, "-S", PARAMS, *pair["bams"], str(out), pair["db"]]) == 0
    lines = out.read_text().splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def test_calls_the_somatic_hotspots_in_database_order_with_fishers_columns_and_the_lod(pair):
    header, rows = run_hotspot(pair)
    assert header == hotspot.HEADER and header[:18] == fisher.PAIR_HEADER
    contigs, alt = pair["contigs"], pair["alt"]
    ref100 = contigs["chr1"][99]
    assert rows[0] == ["chr1", "100", "100", ref100, alt["chr1", 100], "24", "4", "20", "0",
                       "13,3,11,1", "10,0,10,0",
                       ",".join(str({ref100: 20, alt["chr1", 100]: 4}.get(b, 0)) for b in "ACGT"),
                       ",".join(str({ref100: 20}.get(b, 0)) for b in "ACGT"),
                       "0.167", "0.750", "0.000", "---", "%.3f" % -math.log10(fisher_exact([[20, 20], [4, 0]])[1]),
                       "11.998"]
    # chr1:200 is germline (normal rate 0.5 > 0.1), chr1:300 has LOD 6 < 8, chr2:300 no reads,
    # chr1:150-151 is not one base: none of them is written. chr2:50: MAPQ 10 and BQ 1 reads
    # are left out, both database alts are called, in the database's order.
    assert [(r[0], r[1], r[4]) for r in rows] == [("chr1", "100", alt["chr1", 100]), ("chr2", "50", alt["chr2", 50]),
                                                 ("chr2", "50", pair["second"])]
    first, second = rows[1], rows[2]
    assert (first[5], first[6], first[-1]) == ("18", "3", "12.300")
    assert (second[6], second[9].split(",")[3], second[14], second[-1]) == ("3", "3", "0.000", "12.000")


def test_a_database_with_lower_case_alleles_calls_the_same_sites_in_upper_case(pair, tmp_path):
    """Issue 34: lower-case Ref/Alt rows passed the plan's check and were skipped here ("0 hotspot
    sites piled up"): every hotspot call and score silently lost."""
    lower = tmp_path / "lower.txt"
    lower.write_text("".join(
        "\t".join(cells[:3] + [cells[3].lower(), cells[4].lower()] + cells[5:]) + "\n"
        for cells in (line.split("\t") for line in Path(pair["db"]).read_text().splitlines())))
    assert run_hotspot(dict(pair, db=str(lower))) == run_hotspot(pair)
    assert run_hotspot(pair)[1]


def test_lowered_lod_and_raised_control_rate_call_more(pair):
    _, rows = run_hotspot(pair, "-m", "5.9", "-c", "0.6", "-R", "2")
    assert {(r[0], r[1]) for r in rows} == {("chr1", "100"), ("chr1", "200"), ("chr1", "300"), ("chr2", "50")}
    germline = next(r for r in rows if r[1] == "200")
    assert germline[16] == "1.000"  # the normal's alt reads all forward


def test_an_empty_result_still_has_the_header(pair):
    header, rows = run_hotspot(pair, "-m", "100")
    assert header == hotspot.HEADER and rows == []


def test_rna_bam_adds_four_columns(pair):
    header, rows = run_hotspot(pair, "-r", pair["bams"][0])
    assert header[-4:] == hotspot.RNA_HEADER and rows[0][-4:] == ["24", "4", "13,3,11,1", "0.167"]


def test_module_runs_as_script_with_upstream_positional_order(pair):
    out = pair["tmp"] / "script.txt"
    subprocess.run([sys.executable, "-m", "genomon_smk.tools.hotspot", *pair["bams"], str(out), pair["db"]],
                   check=True, capture_output=True)
    assert len(out.read_text().splitlines()) == 4
    version = subprocess.run([sys.executable, "-m", "genomon_smk.tools.hotspot", "--version"],
                             capture_output=True, text=True, check=True).stdout
    assert version.startswith("hotspotCall-genomon_smk-")


def test_samtools_failure_is_an_error(pair, tmp_path, capsys):
    code = hotspot.main([str(tmp_path / "missing.bam"), pair["bams"][1], str(tmp_path / "o.txt"), pair["db"]])
    assert code == 1 and "failed" in capsys.readouterr().err


# ----------------------------------------------------------------------------- mutil merge_hotspot

def fisher_row(chrom, pos, ref="A", alt="T", end=None):
    return [chrom, str(pos), str(end or pos), ref, alt] + ["x"] * 13


def hotspot_row(chrom, pos, lod, ref="A", alt="T"):
    return [chrom, str(pos), str(pos), ref, alt] + ["y"] * 13 + [lod]


def test_merge_places_hotspot_rows_in_position_order_and_keeps_the_lod_of_shared_sites():
    fisher = [fisher_row("chr2", 10), fisher_row("chr2", 30), fisher_row("chr2", 31, "AC", "-", 32),
              fisher_row("chr2", 31), fisher_row("chr3", 5)]
    hot = [hotspot_row("chr1", 7, "9.000"), hotspot_row("chr3", 1, "8.100"), hotspot_row("chr2", 30, "12.000"),
           hotspot_row("chr2", 20, "8.500"), hotspot_row("chr2", 40, "10.000")]
    merged = mutil.merge_hotspot_rows(hot, fisher)
    assert [(r[0], r[1], r[3], r[-1]) for r in merged] == [
        ("chr2", "10", "A", "---"), ("chr2", "20", "A", "8.500"), ("chr2", "30", "A", "12.000"),
        ("chr2", "31", "AC", "---"), ("chr2", "31", "A", "---"), ("chr2", "40", "A", "10.000"),
        ("chr3", "1", "A", "8.100"), ("chr3", "5", "A", "---"), ("chr1", "7", "A", "9.000")]
    assert all(len(r) == 19 for r in merged)


def test_merge_hotspot_command_line_with_headers_and_meta_lines(tmp_path):
    hot, fish, out = tmp_path / "h.txt", tmp_path / "f.txt", tmp_path / "o.txt"
    hot.write_text("\t".join(hotspot.HEADER) + "\n" + "\t".join(hotspot_row("1", 5, "9.000")) + "\n")
    fish.write_text("# meta\n" + "\t".join(fisher_row("1", 3)) + "\n")
    assert mutil.main(["merge_hotspot", "-i", str(hot), "-f", str(fish), "-o", str(out), "--hotspot_header"]) == 0
    assert [line.split("\t")[-1] for line in out.read_text().splitlines()] == ["---", "9.000"]
    fish.write_text("Chr\tStart\n" + "\t".join(fisher_row("1", 3)) + "\n")
    mutil.main(["merge_hotspot", "-i", str(hot), "-f", str(fish), "-o", str(out), "--hotspot_header",
                "--fisher_header"])
    assert out.read_text().splitlines()[0] == "Chr\tStart\tscore(hotspot)"


# ----------------------------------------------------------------------------- the database's checks

CONTIGS = [("chr1", 1000), ("chr2", 500)]


def test_a_database_that_fits_the_reference_has_no_problem(tmp_path):
    db = tmp_path / "db.txt"
    db.write_text("# comment\nchr1\t5\t5\tA\tT\tgene\nchr2\t10\t11\tAC\tTT\n\nchr1\t7\t8\tAC\t-\n")
    assert hotspot_db_problems(str(db), CONTIGS) == []
    gz = tmp_path / "db.txt.gz"
    gz.write_bytes(gzip.compress(db.read_bytes()))
    assert hotspot_db_problems(str(gz), CONTIGS) == []


def test_malformed_rows_and_unknown_contigs_are_named_by_file_and_line(tmp_path):
    db = tmp_path / "db.txt"
    db.write_text("Chr\tStart\tEnd\tRef\tAlt\n"      # 1: a header
                  "chr1\t5\t5\tA\tT\n"               # 2: fine
                  "1\t5\t5\tA\tT\n"                  # 3: GRCh37's name, the reference has chr1
                  "chr1 6 6 A T\n"                   # 4: spaces, not tabs
                  "chr1\t9\t8\tA\tT\n"               # 5: Start > End
                  "chr2\t501\t501\tA\tT\n"           # 6: past the contig's end
                  "chr2\t7\t7\tA\tV600E\n")          # 7: not a base
    problems = hotspot_db_problems(str(db), CONTIGS)
    assert [p.split(": hotspot_db: ")[0] for p in problems] == [f"{db}:{line}" for line in (1, 3, 4, 5, 6, 7)]
    assert "whole numbers" in problems[0] and "contig '1' is not in the reference (its contigs: chr1, chr2)" in problems[1]
    assert "1 tab-separated columns" in problems[2] and "past the end of chr2 (500 bp)" in problems[4]
    assert hotspot_db_problems(str(db), CONTIGS, limit=2)[-1] == f"{db}: hotspot_db: 4 more bad rows"


def test_region_rows_take_the_rows_starting_inside_in_interval_order():
    lines = ["chr2\t40\t40\tC\tT\n", "chr1\t100\t100\tA\tG\n", "chr1\t101\t101\tA\tG\n", "#x\n",
             "chr1\t1\t1\tA\tG\n", "chr3\t5\t5\tA\tG\n", "chr1\t50\t51\tAC\tGT\n"]
    chosen = region_rows(lines, ["chr2:1-50", "chr1:1-100", "chr3"])
    assert [line.split("\t")[:2] for line in chosen] == [["chr2", "40"], ["chr1", "1"], ["chr1", "50"],
                                                         ["chr1", "100"], ["chr3", "5"]]
