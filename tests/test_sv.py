"""SV detection (workflow/rules/sv.smk): the default scenario's filtered SVs scored against the SVs
the generator planted, Genomon's layout of the results, the VCF, and the guards against
GenomonSV's silent empty result."""

import csv
import subprocess
import sys
from pathlib import Path

import pysam
import pytest

from conftest import REPO, run_snakemake, write_config
from genomon_smk.steps.sv_result import COLUMNS, breakend_alt

TOLERANCE = 50  # bp, each breakpoint
SV_VENV_PYTHON = REPO / ".venv-sv" / "bin" / "python"


def sv_file(results, tumor, suffix):
    return results / "sv" / tumor / f"{tumor}.genomonSV.result{suffix}"


def sv_rows(path):
    """(meta lines, header, rows as dicts) of a GenomonSV result."""
    lines = path.read_text().splitlines()
    meta = [line for line in lines if line.startswith("#")]
    body = [line.split("\t") for line in lines if not line.startswith("#")]
    return meta, body[0], [dict(zip(body[0], cells)) for cells in body[1:]]


def planted_svs(testdata):
    with open(testdata / "truth" / "somatic_sv.tsv") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def matches(call, truth):
    """Both breakpoints of a call within TOLERANCE of a planted SV's (either order)."""
    ends = [(call["Chr_1"], int(call["Pos_1"])), (call["Chr_2"], int(call["Pos_2"]))]
    planted = [(truth["chrom_1"], int(truth["pos_1"])), (truth["chrom_2"], int(truth["pos_2"]))]

    def close(a, b):
        return a[0] == b[0] and abs(a[1] - b[1]) <= TOLERANCE

    return (close(ends[0], planted[0]) and close(ends[1], planted[1])) or (
        close(ends[0], planted[1]) and close(ends[1], planted[0]))


def score(calls, truth):
    """(recall over planted SVs, precision over called junctions, the planted SVs missed)."""
    found = [sv for sv in truth if any(matches(call, sv) for call in calls)]
    true_calls = [call for call in calls if any(matches(call, sv) for sv in truth)]
    missed = [sv for sv in truth if sv not in found]
    return len(found) / len(truth), (len(true_calls) / len(calls) if calls else 0.0), missed


def test_scoring_matches_both_breakpoints_within_the_tolerance():
    truth = [dict(chrom_1="chr1", pos_1="1000", chrom_2="chr1", pos_2="3000", type="deletion")]
    call = dict(Chr_1="chr1", Pos_1="1040", Chr_2="chr1", Pos_2="2960")
    assert score([call], truth)[:2] == (1.0, 1.0)
    assert score([dict(call, Pos_2="2940")], truth)[:2] == (0.0, 0.0)  # one end 60 bp off
    assert score([dict(call, Chr_2="chr2")], truth)[:2] == (0.0, 0.0)
    swapped = dict(Chr_1="chr1", Pos_1="3000", Chr_2="chr1", Pos_2="1000")
    assert score([swapped, dict(call, Pos_1="9000")], truth)[:2] == (1.0, 0.5)
    assert score([], truth)[:2] == (0.0, 0.0)  # the silent empty result scores nothing


@pytest.mark.workflow
def test_filtered_svs_find_the_planted_ones(pipeline_run, testdata):
    """GenomonSV + sv_utils with Genomon's parameters on the tumor/normal pair with the panel:
    most planted SVs found, few calls elsewhere (README: what they miss). An empty result (the
    pysam >= 0.24 failure: 0 SVs, exit 0) fails here."""
    truth = planted_svs(testdata)
    _, _, calls = sv_rows(sv_file(pipeline_run, "tumor", ".filt.txt"))
    assert calls, "no SV passed: GenomonSV found nothing (pysam >= 0.24 in its environment?)"
    recall, precision, missed = score(calls, truth)
    assert recall >= 0.7 and precision >= 0.75, (recall, precision, missed)
    # Every kind the generator plants is found at least once, the translocation included.
    found_kinds = {sv["type"] for sv in truth if sv not in missed}
    assert found_kinds == {"deletion", "tandem_duplication", "inversion", "translocation"}
    # Genomon's classes follow the junction directions.
    assert {call["Variant_Type"] for call in calls} <= found_kinds


@pytest.mark.workflow
def test_results_have_genomons_meta_lines_columns_and_a_vcf_bcftools_reads(pipeline_run):
    result = sv_file(pipeline_run, "tumor", ".txt")
    filtered = sv_file(pipeline_run, "tumor", ".filt.txt")
    meta, header, rows = sv_rows(result)
    assert [line.split(":")[0] for line in meta] == ["# Version", "# Analysis Date", "# User"]
    assert "GenomonSV-0.8.2" in meta[0] and "sv_utils-0.6.1" in meta[0]
    assert header == COLUMNS and len(COLUMNS) == 23
    filt_meta, filt_header, filt_rows = sv_rows(filtered)
    assert filt_meta == meta and filt_header == header
    assert 0 < len(filt_rows) <= len(rows) and all(row in rows for row in filt_rows)
    # The pair has a normal: its read pairs are counted; the panel was merged and read.
    assert all(row["Num_Control_Ref_Read_Pair"] != "---" for row in rows)
    control_info = pipeline_run / "sv" / "control_panel" / "panel1.control_info.txt"
    assert [line.split("\t")[0] for line in control_info.read_text().splitlines()] == ["pon1", "pon2", "pon3"]
    # The .test reference names its contigs chr1..chr3, which the GRC tables (sv_filt.grc) do
    # not know: no gene annotation, as documented.
    assert {row["Gene_1"] for row in rows} == {"---"}
    vcf = sv_file(pipeline_run, "tumor", ".filt.vcf.gz")
    view = subprocess.run(["bcftools", "view", "-H", str(vcf)], capture_output=True, text=True, check=True)
    assert len(view.stdout.splitlines()) == 2 * len(filt_rows)
    with pysam.VariantFile(str(vcf)) as handle:
        assert list(handle.header.samples) == ["tumor", "normal"]
        records = {record.id: record for record in handle}
    for record in records.values():
        mate = records[record.info["MATEID"]]
        assert mate.info["MATEID"] == record.id and mate.info["SVCLASS"] == record.info["SVCLASS"]
        assert f"{mate.chrom}:{mate.pos}" in record.alts[0]


def test_breakend_alts_follow_the_junction_directions():
    # A deletion joins the left side of pos 100 to the right side of pos 200.
    assert breakend_alt("A", "+", "chr1", 200, "-") == "A[chr1:200["
    assert breakend_alt("C", "-", "chr1", 100, "+") == "]chr1:100]C"
    # An inversion's junctions: ++ and --.
    assert breakend_alt("A", "+", "chr1", 200, "+") == "A]chr1:200]"
    assert breakend_alt("A", "-", "chr1", 200, "-") == "[chr1:200[A"


def test_the_sv_tools_environment_passes_the_pysam_guard_and_a_newer_pysam_fails_it():
    """GenomonSV 0.8.2 with pysam >= 0.24 finds no SV and exits 0; sv_filt's first command
    refuses such an environment. The tools' venv passes it, the project's (newer pysam) not."""
    namespace = {}
    text = (REPO / "workflow" / "rules" / "paths.smk").read_text()
    start = text.index("SV_PYSAM_CHECK = (")
    exec(text[start:text.index(")\n", start) + 2], namespace)
    check = namespace["SV_PYSAM_CHECK"]
    ours = subprocess.run([str(SV_VENV_PYTHON), "-c", check], capture_output=True, text=True)
    assert ours.returncode == 0, ours.stderr
    newer = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert pysam.__version__ >= "0.24" and newer.returncode == 1
    assert "needs pysam < 0.24" in newer.stderr


SHEET = """[fastq]
tumor,{d}/fastq/tumor_L1_R1.fastq.gz;{d}/fastq/tumor_L2_R1.fastq.gz,{d}/fastq/tumor_L1_R2.fastq.gz;{d}/fastq/tumor_L2_R2.fastq.gz
normal,{d}/fastq/normal_L1_R1.fastq.gz,{d}/fastq/normal_L1_R2.fastq.gz
pon1,{d}/fastq/pon1_L1_R1.fastq.gz,{d}/fastq/pon1_L1_R2.fastq.gz
pon2,{d}/fastq/pon2_L1_R1.fastq.gz,{d}/fastq/pon2_L1_R2.fastq.gz
[mutation_call]
tumor,normal,None
pon1,None,None
[controlpanel]
panel1,pon1,pon2
"""


def planned_jobs(config):
    """Jobs per rule of a dry run of everything."""
    run = run_snakemake(config, "-n", "--forceall", "--quiet", "rules")
    counts = {}
    for line in run.stdout.splitlines():
        cells = line.split()
        if len(cells) == 2 and cells[1].isdigit():
            counts[cells[0]] = int(cells[1])
    return counts


@pytest.mark.workflow
def test_genomon_sheets_sv_detection_section_selects_the_pairs(tmp_path, testdata):
    """[sv_detection] rows get SVs, with their own normal and panel; without the section none
    (as Genomon); with a pairs table every pair, or config sv_detection.tumors."""
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(SHEET.format(d=testdata) + "[sv_detection]\ntumor,normal,panel1\n")
    config = write_config(tmp_path / "with", testdata, samples=None, pairs=None, control_panels=None,
                          genomon_sample_sheet=str(sheet))
    jobs = planned_jobs(config)
    # tumor and the panel's two members parsed (once each), one panel merged, one pair filtered.
    assert (jobs["sv_parse"], jobs["sv_merge_control"], jobs["sv_filt"]) == (3, 1, 1)
    assert jobs["identify_mutations"] > 0
    without = tmp_path / "without.csv"
    without.write_text(SHEET.format(d=testdata))
    config = write_config(tmp_path / "without", testdata, samples=None, pairs=None, control_panels=None,
                          genomon_sample_sheet=str(without))
    assert not {"sv_parse", "sv_filt"} & set(planned_jobs(config))
    # A pairs table: every pair by default (the default scenario), none with tumors: [].
    config = write_config(tmp_path / "none", testdata, sv_detection={"tumors": []})
    assert "sv_filt" not in planned_jobs(config)
    config = write_config(tmp_path / "bad", testdata, sv_detection={"tumors": ["nobody"]})
    refused = run_snakemake(config, "-n", check=False)
    assert refused.returncode != 0 and "sv_detection.tumors: nobody not a tumor" in refused.stdout + refused.stderr
