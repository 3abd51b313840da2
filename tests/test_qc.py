"""QC: duplicate metrics summed over regions, the read-pair integrity check, the coverage summary,
and the QC stage of the workflow (samtools stats/flagstat, mosdepth, MultiQC) on the .test run."""

import csv
import json
import math
import shutil
import subprocess
import sys

import pysam
import pytest

from conftest import run_snakemake, write_config
from genomon_smk.steps import qc
from genomon_smk.plan.regions import read_regions

COLUMNS = (
    "LIBRARY\tUNPAIRED_READS_EXAMINED\tREAD_PAIRS_EXAMINED\tUNMAPPED_READS\tUNPAIRED_READ_DUPLICATES\t"
    "READ_PAIR_DUPLICATES\tREAD_PAIR_OPTICAL_DUPLICATES\tPERCENT_DUPLICATION\tESTIMATED_LIBRARY_SIZE"
)


def bammarkduplicates_metrics(*rows):
    """A metrics file as bammarkduplicates writes it: command line, table, histogram."""
    lines = ["# bammarkduplicates O=x.bam M=x.txt", "", "##METRICS", COLUMNS]
    lines += ["\t".join(map(str, row)) for row in rows]
    lines += ["", "## HISTOGRAM", "BIN\tVALUE", "1\t1", "2\t1.9"]
    return "\n".join(lines) + "\n"


# --- duplicate metrics


def test_metrics_table_is_read_and_ends_before_the_histogram():
    text = bammarkduplicates_metrics(("lib1", 3, 100, 0, 1, 7, 2, 0.07, 900))
    columns, rows = qc.read_duplication_metrics(text.splitlines(True))
    assert columns == COLUMNS.split("\t")
    assert rows == [dict(zip(columns, ["lib1", "3", "100", "0", "1", "7", "2", "0.07", "900"]))]


def test_region_without_reads_has_a_header_and_no_rows():
    columns, rows = qc.read_duplication_metrics(bammarkduplicates_metrics().splitlines(True))
    assert columns == COLUMNS.split("\t") and rows == []


def test_region_metrics_sum_by_library_with_derived_columns_recomputed(tmp_path):
    regions = [
        bammarkduplicates_metrics(("libA", 2, 1000, 0, 1, 40, 3, 0.04, 12000), ("libB", 0, 10, 0, 0, 0, 0, 0, "")),
        bammarkduplicates_metrics(("libA", 4, 3000, 5, 1, 110, 4, 0.036, 40000)),
        bammarkduplicates_metrics(),  # the unmapped region
    ]
    paths = []
    for index, text in enumerate(regions):
        paths.append(tmp_path / f"r{index}.txt")
        paths[-1].write_text(text)
    summed = qc.summed_duplication_metrics([str(p) for p in paths], "S1.markdup.bam")
    assert "## METRICS CLASS\tpicard.sam.DuplicationMetrics" in summed
    assert "INPUT=[S1.markdup.bam]" in summed
    columns, rows = qc.read_duplication_metrics(summed.splitlines(True))
    by_library = {row["LIBRARY"]: row for row in rows}
    a = by_library["libA"]
    assert (int(a["READ_PAIRS_EXAMINED"]), int(a["READ_PAIR_DUPLICATES"])) == (4000, 150)
    assert (int(a["UNPAIRED_READS_EXAMINED"]), int(a["UNMAPPED_READS"]), int(a["READ_PAIR_OPTICAL_DUPLICATES"])) == (6, 5, 7)
    assert float(a["PERCENT_DUPLICATION"]) == pytest.approx((2 + 2 * 150) / (6 + 2 * 4000), abs=1e-6)
    # The library size solves Lander-Waterman for the summed pairs, not the sum of the estimates.
    pairs, unique, size = 4000 - 7, 4000 - 150, int(a["ESTIMATED_LIBRARY_SIZE"])
    assert unique / size == pytest.approx(1 - math.exp(-pairs / size), rel=1e-3)
    assert by_library["libB"]["ESTIMATED_LIBRARY_SIZE"] == ""  # no duplicates: no estimate


@pytest.mark.parametrize("pairs, unique", [(100, 99), (10_000, 5_000), (1_000_000, 999_000), (50, 2)])
def test_library_size_solves_lander_waterman(pairs, unique):
    size = qc.estimate_library_size(pairs, unique)
    assert size >= unique
    assert unique / size == pytest.approx(1 - math.exp(-pairs / size), rel=1e-4)


def test_library_size_is_undefined_without_duplicates_or_reads():
    assert qc.estimate_library_size(100, 100) is None
    assert qc.estimate_library_size(0, 0) is None


def test_files_with_different_columns_are_refused(tmp_path):
    (tmp_path / "a.txt").write_text(bammarkduplicates_metrics())
    (tmp_path / "b.txt").write_text("##METRICS\nLIBRARY\tREAD_PAIRS_EXAMINED\n")
    with pytest.raises(ValueError, match="columns differ"):
        qc.summed_duplication_metrics([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], "x.bam")


# --- coverage


def test_coverage_summary_from_mosdepth_outputs():
    summary = ["chrom\tlength\tbases\tmean\tmin\tmax\n", "c1\t100\t2500\t25.00\t0\t40\n", "total\t100\t2500\t25.00\t0\t40\n"]
    dist = ["c1\t30\t0.40\n", "total\t40\t0.01\n", "total\t30\t0.40\n", "total\t20\t0.70\n", "total\t10\t0.95\n", "total\t0\t1.00\n"]
    assert qc.mean_depth(summary) == 25.0
    fractions = qc.fraction_at_least(dist, [10, 20, 30, 50])
    assert fractions == {10: 0.95, 20: 0.70, 30: 0.40, 50: 0.0}
    table = list(csv.DictReader(qc.coverage_table("S1", 25.0, fractions).splitlines(), delimiter="\t"))
    assert table == [{"sample": "S1", "mean_depth": "25.0000", "fraction_ge_10x": "0.9500",
                      "fraction_ge_20x": "0.7000", "fraction_ge_30x": "0.4000", "fraction_ge_50x": "0.0000"}]


# --- integrity


def test_integrity_problems_name_both_numbers():
    assert qc.integrity_problems("S1", 500, 500, 500) == []
    [problem] = qc.integrity_problems("S1", 500, 437, 437)
    assert "437" in problem and "500" in problem and "S1" in problem
    assert len(qc.integrity_problems("S1", 500, 500, 499)) == 1  # a lost mate


def test_mates_of_length_zero_are_not_taken_for_lost_reads():
    # samtools stats does not count mates trimmed to nothing; the split counted them.
    assert qc.integrity_problems("S1", 500, 490, 497, empty_read1=10, empty_read2=3) == []
    assert len(qc.integrity_problems("S1", 500, 490, 497)) == 2
    assert len(qc.integrity_problems("S1", 500, 489, 497, empty_read1=10, empty_read2=3)) == 2  # one really lost


def write_paired_bam(path, pairs, dropped=()):
    """A coordinate-sorted BAM of `pairs` read pairs, without the pairs whose index is in dropped,
    plus a secondary and a supplementary record that must not count as pairs."""
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": "c1", "LN": 100_000}]}
    records = []
    for index in range(pairs):
        if index in dropped:
            continue
        for is_read1, start in ((True, 100 + 10 * index), (False, 400 + 10 * index)):
            records.append((start, index, is_read1, 0))
    records += [(150, 0, True, 0x100), (160, 1, False, 0x800)]
    with pysam.AlignmentFile(str(path), "wb", header=header) as bam:
        for start, index, is_read1, extra in sorted(records):
            read = pysam.AlignedSegment(bam.header)
            read.query_name = f"pair{index}"
            read.flag = 0x1 | 0x2 | (0x40 if is_read1 else 0x80) | (0x10 if not is_read1 else 0x20) | extra
            read.reference_id = read.next_reference_id = 0
            read.reference_start = start
            read.next_reference_start = 400 + 10 * index if is_read1 else 100 + 10 * index
            read.mapping_quality = 60
            read.cigarstring = "50M"
            read.query_sequence = "A" * 50
            read.query_qualities = pysam.qualitystring_to_array("I" * 50)
            bam.write(read)


def run_integrity_cli(tmp_path, bam, expected_pairs):
    stats = tmp_path / "stats.txt"
    stats.write_text(subprocess.run(["samtools", "stats", str(bam)], check=True, capture_output=True, text=True).stdout)
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps({"sample": "S1", "read_pairs": expected_pairs}))
    out = tmp_path / "integrity.txt"
    result = subprocess.run(
        [sys.executable, "-m", "genomon_smk.steps.qc", "integrity", "--sample", "S1",
         "--counts", str(counts), "--stats", str(stats), "--out", str(out)],
        capture_output=True, text=True,
    )
    return result, out


def test_integrity_cli_passes_when_every_pair_is_there(tmp_path):
    write_paired_bam(tmp_path / "all.bam", 60)
    result, out = run_integrity_cli(tmp_path, tmp_path / "all.bam", 60)
    assert result.returncode == 0, result.stderr
    assert "bam_read_pairs\t60" in out.read_text()


def test_integrity_cli_fails_naming_both_numbers_when_a_chunk_is_lost(tmp_path):
    write_paired_bam(tmp_path / "lost.bam", 60, dropped=set(range(0, 60, 4)))  # every 4th pair: one chunk of 4
    result, out = run_integrity_cli(tmp_path, tmp_path / "lost.bam", 60)
    assert result.returncode != 0
    assert "45 read pairs" in result.stderr and "counted 60" in result.stderr
    assert not out.exists() and not (tmp_path / "integrity.txt.partial").exists()


# --- the QC stage of the workflow


def samtools_stats(path):
    with open(path) as handle:
        return qc.samtools_stats_summary(handle)


@pytest.mark.workflow
def test_qc_files_exist_for_every_sample(pipeline_run, truth):
    suffixes = ["samtools_stats.txt", "flagstat.txt", "mosdepth.summary.txt", "mosdepth.global.dist.txt",
                "coverage.tsv", "markdup_metrics.txt", "integrity.txt"]
    for sample in truth["read_pairs"]:
        for suffix in suffixes:
            path = pipeline_run / "qc" / sample / f"{sample}.{suffix}"
            assert path.stat().st_size > 0, path
    assert (pipeline_run / "qc" / "multiqc_report.html").stat().st_size > 0


@pytest.mark.workflow
def test_bam_read_pairs_match_the_generated_read_pairs_exactly(pipeline_run, truth):
    for sample, generated in truth["read_pairs"].items():
        stats = samtools_stats(pipeline_run / "qc" / sample / f"{sample}.samtools_stats.txt")
        assert qc.bam_read_pairs(stats) == (generated, generated), sample
        report = dict(
            line.split("\t") for line in (pipeline_run / "qc" / sample / f"{sample}.integrity.txt").read_text().splitlines()
        )
        assert report == {"sample": sample, "fastq_read_pairs": str(generated),
                          "bam_read_pairs": str(generated), "status": "OK"}
        flagstat = (pipeline_run / "qc" / sample / f"{sample}.flagstat.txt").read_text()
        assert f"{generated} + 0 read1" in flagstat


@pytest.mark.workflow
def test_coverage_agrees_with_the_bases_in_the_bam(pipeline_run, truth):
    for sample in truth["read_pairs"]:
        row = next(csv.DictReader(open(pipeline_run / "qc" / sample / f"{sample}.coverage.tsv"), delimiter="\t"))
        stats = samtools_stats(pipeline_run / "qc" / sample / f"{sample}.samtools_stats.txt")
        # mosdepth leaves out duplicates and counts overlapping mates once: a little below all bases
        all_bases = stats["bases mapped (cigar)"] / truth["genome_length"]
        assert 0.85 * all_bases <= float(row["mean_depth"]) <= all_bases, (sample, row, all_bases)
        fractions = [float(row[f"fraction_ge_{depth}x"]) for depth in (10, 20, 30)]
        assert fractions == sorted(fractions, reverse=True) and 0 < fractions[0] <= 1


@pytest.mark.workflow
def test_summed_duplicate_metrics_match_the_regions_and_the_generated_rate(pipeline_run, truth):
    for sample, generated in truth["duplicate_pairs"].items():
        region_rows = []
        for path in sorted((pipeline_run / "qc" / sample / "markdup_metrics").glob("*.txt")):
            region_rows += qc.read_duplication_metrics(open(path))[1]
        _, [row] = qc.read_duplication_metrics(open(pipeline_run / "qc" / sample / f"{sample}.markdup_metrics.txt"))
        for column in ("READ_PAIRS_EXAMINED", "READ_PAIR_DUPLICATES", "UNPAIRED_READS_EXAMINED"):
            assert int(row[column]) == sum(int(r[column]) for r in region_rows), (sample, column)
        assert 0.85 * generated <= int(row["READ_PAIR_DUPLICATES"]) <= 1.3 * generated
        rate = generated / truth["read_pairs"][sample]
        assert 0.85 * rate <= float(row["PERCENT_DUPLICATION"]) <= 1.3 * rate


@pytest.mark.workflow
def test_multiqc_lists_every_sample_with_general_statistics(pipeline_run, truth):
    with open(pipeline_run / "qc" / "multiqc_data" / "multiqc_general_stats.txt") as handle:
        rows = {row["Sample"]: row for row in csv.DictReader(handle, delimiter="\t")}
    assert set(rows) == set(truth["read_pairs"])
    for sample, row in rows.items():
        values = {key: value for key, value in row.items() if key != "Sample" and value not in ("", None)}
        # every tool's numbers made it in: coverage, duplicates and samtools
        for tool in ("mosdepth", "picard", "samtools_stats", "samtools_flagstat"):
            assert any(key.startswith(tool) for key in values), (sample, tool, row)
        assert float(values["mosdepth-mean_coverage"]) == pytest.approx(truth["coverage"][sample], rel=0.1)


@pytest.mark.workflow
def test_workflow_fails_when_a_region_lost_reads(pipeline_run, testdata, tmp_path):
    """Drop one region's reads from a finished BAM and run only the QC rules on it."""
    run_dir = tmp_path / "lost"
    config = write_config(run_dir, testdata)
    results = run_dir / "results"
    (results / "bam" / "normal").mkdir(parents=True)
    (results / "qc" / "normal").mkdir(parents=True)
    shutil.copy(pipeline_run / "qc" / "normal" / "normal.fastq_counts.json", results / "qc" / "normal")
    region = next(r for r in read_regions(str(pipeline_run / "regions.tsv")) if not r.is_unmapped)
    lost = 0
    with pysam.AlignmentFile(str(pipeline_run / "bam" / "normal" / "normal.markdup.bam")) as source, \
            pysam.AlignmentFile(str(results / "bam" / "normal" / "normal.markdup.bam"), "wb", template=source) as kept:
        for read in source.fetch(until_eof=True):
            in_region = any(
                read.reference_name == interval.contig and interval.start <= read.reference_start < interval.end
                for interval in region.intervals
            )
            if in_region:
                lost += read.is_read1 and not (read.is_secondary or read.is_supplementary)
            else:
                kept.write(read)
    assert lost > 0
    target = results / "qc" / "normal" / "normal.integrity.txt"
    result = run_snakemake(config, str(target), "--allowed-rules", "bam_stats", "read_pair_integrity", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    expected = json.loads((results / "qc" / "normal" / "normal.fastq_counts.json").read_text())["read_pairs"]
    read1 = expected - lost
    assert f"holds {read1} read pairs" in output and f"counted {expected}" in output, output[-3000:]
    assert not target.exists()
