"""The pipeline end to end on the .test data: split -> map -> markdup -> merge bam."""

import collections
import gzip
import hashlib
import json
import random
from pathlib import Path
import subprocess

import pysam
import pytest

from conftest import result_rows, run_snakemake
from genomon_smk.plan.regions import read_regions

SAMPLES = ["tumor", "normal", "pon1", "pon2", "pon3"]
pytestmark = pytest.mark.workflow


def fastq_names(testdata, sample):
    names = []
    for fq1 in sorted((testdata / "fastq").glob(f"{sample}_L*_R1.fastq.gz")):
        with gzip.open(fq1, "rt") as handle:
            names += [line[1:].split()[0].removesuffix("/1") for i, line in enumerate(handle) if i % 4 == 0]
    return names


def final_bam(results, sample):
    return results / "bam" / sample / f"{sample}.markdup.bam"


@pytest.mark.parametrize("sample", SAMPLES)
def test_every_input_read_pair_is_in_the_final_bam_exactly_once(pipeline_run, testdata, truth, sample):
    names = fastq_names(testdata, sample)
    assert len(names) == truth["read_pairs"][sample] == len(set(names))
    mates = collections.Counter()
    with pysam.AlignmentFile(str(final_bam(pipeline_run, sample))) as bam:
        for read in bam.fetch(until_eof=True):
            if not (read.is_secondary or read.is_supplementary):
                mates[(read.query_name, read.is_read1)] += 1
    assert set(name for name, _ in mates) == set(names)
    assert all(count == 1 for count in mates.values())
    assert len(mates) == 2 * len(names)


@pytest.mark.parametrize("sample", ["tumor", "normal"])
def test_duplicates_are_flagged_at_the_generated_rate(pipeline_run, truth, sample):
    flagged = 0
    with pysam.AlignmentFile(str(final_bam(pipeline_run, sample))) as bam:
        for read in bam.fetch(until_eof=True):
            if read.is_duplicate and read.is_read1 and not (read.is_secondary or read.is_supplementary):
                flagged += 1
    generated = truth["duplicate_pairs"][sample]
    assert generated > 0
    # Chance duplicates add a little at this depth; lost ones (pairs split over regions) remove a little.
    assert 0.85 * generated <= flagged <= 1.3 * generated, (flagged, generated)


def query(bam_path, index_path, contig, start, end):
    with pysam.AlignmentFile(str(bam_path), index_filename=str(index_path)) as bam:
        return [(r.query_name, r.flag, r.reference_start) for r in bam.fetch(contig, start, end)]


@pytest.mark.parametrize("sample", ["tumor", "pon1"])
def test_merged_index_answers_queries_like_samtools_index(pipeline_run, tmp_path, sample):
    merged = final_bam(pipeline_run, sample)
    subprocess.run(["samtools", "index", "-o", str(tmp_path / "samtools.bai"), str(merged)], check=True)
    ours, theirs = str(merged) + ".bai", tmp_path / "samtools.bai"
    regions = read_regions(str(pipeline_run / "regions.tsv"))
    assert sum(len(r.intervals) for r in regions) > 3  # a contig is cut into several regions
    rng = random.Random(7)
    queries = []
    for region in regions:
        for interval in region.intervals:
            queries.append((interval.contig, interval.start, interval.end))
            for _ in range(25):
                start = rng.randrange(max(1, interval.start - 20000), interval.end)
                queries.append((interval.contig, start, start + rng.choice([1, 100, 5000, 30000])))
    for contig, start, end in queries:
        assert query(merged, ours, contig, start, end) == query(merged, theirs, contig, start, end), (contig, start, end)
    with pysam.AlignmentFile(str(merged), index_filename=str(ours)) as a, pysam.AlignmentFile(
        str(merged), index_filename=str(theirs)
    ) as b:
        assert [s for s in a.get_index_statistics()] == [s for s in b.get_index_statistics()]
        assert a.mapped == b.mapped and a.unmapped == b.unmapped


@pytest.mark.parametrize("sample", SAMPLES)
def test_md5_file_matches_the_bam(pipeline_run, sample):
    bam = final_bam(pipeline_run, sample)
    digest, name = (pipeline_run / "bam" / sample / f"{sample}.markdup.bam.md5").read_text().split()
    assert name == bam.name
    assert digest == hashlib.md5(bam.read_bytes()).hexdigest()


def test_read_groups_and_sort_order(pipeline_run, testdata):
    rows = [line.split("\t") for line in (testdata / "samples.tsv").read_text().splitlines()]
    library = next(row[rows[0].index("library")] for row in rows[1:] if row[0] == "tumor")
    with pysam.AlignmentFile(str(final_bam(pipeline_run, "tumor"))) as bam:
        header = bam.header.to_dict()
        assert header["RG"] == [{"ID": "tumor", "SM": "tumor", "PL": "ILLUMINA", "LB": library}]
        previous = (-1, -1)
        for read in bam.fetch(until_eof=True):
            key = (read.reference_id if read.reference_id >= 0 else 1 << 30, read.reference_start)
            assert key >= previous
            previous = key
            assert read.get_tag("RG") == "tumor"


def test_counts_and_logs_and_no_temporaries_left(pipeline_run, truth):
    for sample in SAMPLES:
        counts = json.loads((pipeline_run / "qc" / sample / f"{sample}.fastq_counts.json").read_text())
        assert counts["read_pairs"] == truth["read_pairs"][sample]
        assert (pipeline_run / "logs" / "merge_bam" / f"{sample}.log").exists()
    # Only the pre-staged reference stays (the cache tier is there to be reused).
    leftovers = [p for p in (pipeline_run / ".tiers").rglob("*") if p.is_file() and "cache" not in p.parts]
    assert leftovers == []
    staged = json.loads((pipeline_run / "reference" / "staged.json").read_text())
    assert [Path(entry["source"]).name for entry in staged][:2] == ["genome.fa", "genome.fa.fai"]


def test_rerun_has_nothing_to_do_and_ends_with_the_results_summary(pipeline_run):
    """Nothing to run: the closing summary still says where the results are and counts the calls
    the final filter kept and removed, and the SV junctions, from the files themselves."""
    result = run_snakemake(pipeline_run.parent / "config" / "config.yaml")
    output = result.stdout + result.stderr
    assert "Nothing to be done" in output
    summary = output[output.index(f"genomon-smk: the results are in {pipeline_run}\n"):].splitlines()
    mutation = pipeline_run / "mutation" / "tumor" / "tumor.genomon_mutation.result"
    kept = len(result_rows(mutation.with_name(mutation.name + ".filt.txt"))) - 1  # less the header
    everything = len(result_rows(mutation.with_name(mutation.name + ".txt"))) - 1
    svs = len(result_rows(pipeline_run / "sv" / "tumor" / "tumor.genomonSV.result.filt.txt")) - 1
    assert 0 < kept < everything and svs > 0
    assert summary[1].split() == ["pair", "kept", "removed", "SVs", "filtered", "result"]
    assert summary[2].split() == ["tumor", str(kept), str(everything - kept), str(svs),
                                  "mutation/tumor/tumor.genomon_mutation.result.filt.txt"]
    assert "  MultiQC:  qc/multiqc_report.html" in summary and "  job logs: logs" in summary


def test_tier_use_is_measured_and_only_results_reach_global(pipeline_run):
    rows = {}
    for line in (pipeline_run / "storage" / "tier_usage.tsv").read_text().splitlines()[1:]:
        tier, place, peak, final, _note = line.split("\t")
        rows[tier] = (place, int(peak), int(final))
    assert set(rows) == {"global", "shared_tmp", "node_local", "cache"}
    assert rows["shared_tmp"][1] > 0 and rows["shared_tmp"][2] == 0  # used during the run, empty after it
    assert rows["node_local"][2] == 0
    assert rows["cache"][2] > 0  # the staged reference stays for the next run
    assert rows["global"][2] >= sum(p.stat().st_size for p in (pipeline_run / "bam").rglob("*.bam"))
    top = {p.name for p in pipeline_run.iterdir()}
    assert top <= {"bam", "mutation", "sv", "qc", "post_analysis", "paplot", "logs", "benchmarks", "regions.tsv",
                   "reference", "simple_repeat", "storage", ".tiers"}


def test_each_work_dir_job_reports_its_own_node_local_peak(pipeline_run, testdata):
    """Per job, as on a cluster where the node-local disks are out of the Snakemake process's sight:
    the map jobs' peaks hold their uncompressed region pieces, larger than the gzipped reads."""
    rows = {}
    for line in (pipeline_run / "storage" / "job_tier_use.tsv").read_text().splitlines()[1:]:
        rule, tier, jobs, largest, total = line.split("\t")
        rows[rule] = (tier, int(jobs), int(largest), int(total))
    map_jobs = len(list((pipeline_run / "logs" / "map_reads").rglob("*.log")))
    assert rows["map_reads"][:2] == ("node_local", map_jobs)
    gzipped_reads = sum(p.stat().st_size for p in (testdata / "fastq").glob("*.fastq.gz"))
    assert rows["map_reads"][3] > gzipped_reads
    assert 0 < rows["map_reads"][2] <= rows["map_reads"][3]
    assert {"markdup", "identify_mutations", "merge_mutation"} <= set(rows)
