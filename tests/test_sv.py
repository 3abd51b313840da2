"""SV detection (workflow/rules/sv.smk): the default scenario's filtered SVs scored against the SVs
the generator planted, Genomon's layout of the results, the VCF, and the guards against
GenomonSV's silent empty result."""

import csv
import re
import subprocess
import sys
from pathlib import Path

import pysam
import pytest

from conftest import REPO, run_snakemake, write_config
from genomon_smk.plan.reference import sv_annotation_naming_problem
from genomon_smk.steps import sv_summary
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
    # The .test reference names its contigs chr1..chr3, UCSC's way, and its configs say so
    # (sv_filt.grc: false): annot_utils' hg19 tables annotate those coordinates, the chr20
    # windows' sequence notwithstanding. hg19's WASH7P spans chr1:14,362-29,370; nothing else
    # lies at the planted SVs' breakpoints (with grc: true every gene column would be ---).
    for row in rows:
        for end in ("1", "2"):
            in_wash7p = row[f"Chr_{end}"] == "chr1" and 14_362 <= int(row[f"Pos_{end}"]) <= 29_370
            assert row[f"Gene_{end}"] == ("WASH7P" if in_wash7p else "---"), row
    assert any(row["Gene_1"] == "WASH7P" for row in filt_rows)
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


def summary_counts(path):
    """(stage, variant type, size class) -> count of an SV summary TSV."""
    with open(path) as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert rows and all(row["tumor"] == "tumor" for row in rows)
    return {(row["stage"], row["variant_type"], row["size_class"]): int(row["count"]) for row in rows}


def size_of(call):
    """The size class of a junction, computed here from its breakpoints."""
    if call["Chr_1"] != call["Chr_2"]:
        return "interchromosomal"
    distance = abs(int(call["Pos_2"]) - int(call["Pos_1"]))
    for name, bound in (("<1kb", 1e3), ("1-10kb", 1e4), ("10-100kb", 1e5), ("100kb-1Mb", 1e6)):
        if distance < bound:
            return name
    return ">=1Mb"


@pytest.mark.workflow
def test_sv_summary_counts_the_results_rows_by_type_and_size(pipeline_run, testdata):
    """The summary TSV's counts are the result files' rows counted here by Variant_Type and the
    breakpoints' distance; the filtered ones are the planted SVs' classes (1-3 kb, the
    translocation between contigs), one row per junction found."""
    prefix = pipeline_run / "sv" / "tumor" / "tumor.genomonSV.summary"
    counts = summary_counts(f"{prefix}.tsv")
    assert len(counts) == 2 * 4 * 6  # every combination, zeros included
    for stage, suffix in (("unfiltered", ".txt"), ("filtered", ".filt.txt")):
        _, _, calls = sv_rows(sv_file(pipeline_run, "tumor", suffix))
        expected = {}
        for call in calls:
            key = (stage, call["Variant_Type"], size_of(call))
            expected[key] = expected.get(key, 0) + 1
        assert {key: count for key, count in counts.items() if key[0] == stage and count} == expected, stage
    truth = planted_svs(testdata)
    _, _, filtered = sv_rows(sv_file(pipeline_run, "tumor", ".filt.txt"))
    planted = {}
    for call in filtered:
        [sv] = [sv for sv in truth if matches(call, sv)]  # the default scenario calls nothing else
        size = "interchromosomal" if sv["chrom_1"] != sv["chrom_2"] else "1-10kb"
        planted[("filtered", sv["type"], size)] = planted.get(("filtered", sv["type"], size), 0) + 1
    assert {key: count for key, count in counts.items() if key[0] == "filtered" and count} == planted
    png = Path(f"{prefix}.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_size_classes_and_unknown_types():
    row = dict(Chr_1="chr1", Pos_1="1000", Chr_2="chr1", Pos_2="1999", Variant_Type="deletion")
    assert sv_summary.size_class(row) == "<1kb"
    assert sv_summary.size_class(dict(row, Pos_2="2000")) == "1-10kb"
    assert sv_summary.size_class(dict(row, Pos_2="1001000")) == ">=1Mb"
    assert sv_summary.size_class(dict(row, Chr_2="chr2")) == "interchromosomal"
    with pytest.raises(ValueError, match="unknown Variant_Type 'fusion'"):
        sv_summary.count_junctions([dict(row, Variant_Type="fusion")])


@pytest.mark.workflow
def test_multiqc_report_shows_the_sv_tables(pipeline_run):
    """MultiQC's data JSON holds each SV tumor's filtered junctions by type (the summary's) and
    each parsed sample's clustered parse records (counted here from GenomonSV parse's files)."""
    import gzip
    import json

    data = json.loads((pipeline_run / "qc" / "multiqc_data" / "multiqc_data.json").read_text())
    tables = {key: value for key, value in data["report_saved_raw_data"].items() if "genomon_sv" in key}
    svs = next(value for key, value in tables.items() if "parse" not in key)
    parse = next(value for key, value in tables.items() if "parse" in key)
    counts = summary_counts(pipeline_run / "sv" / "tumor" / "tumor.genomonSV.summary.tsv")
    assert set(svs) == {"tumor"}
    for kind in ("deletion", "tandem_duplication", "inversion", "translocation"):
        expected = sum(count for (stage, type_, _), count in counts.items() if stage == "filtered" and type_ == kind)
        assert svs["tumor"][kind] == expected, kind
    assert sum(svs["tumor"].values()) > 0
    assert set(parse) == {"tumor", "pon1", "pon2", "pon3"}  # the matched normal is not parsed
    for name, values in parse.items():
        for kind, members in (("junction", "reads"), ("improper", "read_pairs")):
            with gzip.open(pipeline_run / "sv" / name / f"{name}.{kind}.clustered.bedpe.gz", "rt") as handle:
                # The last column names a cluster's reads: tumor:READ/1 (junction), tumor:READ (improper).
                names = [line.rstrip("\n").split("\t")[-1].split(";") for line in handle]
            assert values[f"{kind}_clusters"] == len(names), (name, kind)
            assert values[f"{kind}_{members}"] == sum(map(len, names)), (name, kind)
    # The planted SVs: the tumor's junctions hold several reads each, the normals' none.
    assert parse["tumor"]["junction_reads"] >= 2 * parse["tumor"]["junction_clusters"] > 0
    assert parse["tumor"]["improper_read_pairs"] > parse["pon1"]["improper_read_pairs"]
    report = (pipeline_run / "qc" / "multiqc_report.html").read_text()
    assert "GenomonSV parse" in report and 'id="genomon_sv' in report


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
    text = (REPO / "workflow" / "rules" / "sv_paths.smk").read_text()
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
    config = write_config(tmp_path / "bad", testdata, sv_detection={"tumors": ["nobody", "tumor"]})
    refused = run_snakemake(config, "-n", check=False)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert (f"{config}:" in output and "key 'sv_detection.tumors': 'nobody': not a tumor of the pairs "
            "table (its tumors: tumor)" in output), output[-2000:]


@pytest.mark.workflow
def test_sv_only_sheet_plans_its_pairs_and_the_annotation_naming_is_checked(tmp_path, testdata):
    """A Genomon sheet with [sv_detection] and no [mutation_call]: the stage plan says so (not
    "0 pairs"); sv_filt.grc: true on the UCSC-named .test reference warns, naming the fix."""
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(SHEET.format(d=testdata).replace("[mutation_call]\ntumor,normal,None\npon1,None,None\n", "")
                     + "[sv_detection]\ntumor,normal,panel1\n")
    config = write_config(tmp_path / "sv-only", testdata, samples=None, pairs=None, control_panels=None,
                          genomon_sample_sheet=str(sheet), sv_filt={"grc": True})
    run = run_snakemake(config, "-n", "--quiet", "rules")
    assert "pairs: 0 for mutation calls, 1 for SV detection;" in run.stderr, run.stderr[:3000]
    assert "identify_mutations" not in run.stdout and "sv_filt" in run.stdout
    warning = [line for line in run.stderr.splitlines() if "sv_filt.grc" in line]
    assert len(warning) == 1 and warning[0].startswith(f"warning: {config}")
    assert "chr1, chr2, chr3" in warning[0] and "Set sv_filt.grc: false" in warning[0]
    # The .test configs set grc: false (UCSC names): no warning.
    quiet = run_snakemake(write_config(tmp_path / "quiet", testdata), "-n", "--quiet", "rules")
    assert "sv_filt.grc" not in quiet.stderr
    # A UCSC repeat table still to be built serves only mutation calls: without them the stage
    # plan counts no set-up job for it, and its total is Snakemake's.
    config = write_config(tmp_path / "sv-only-repeats", testdata, samples=None, pairs=None, control_panels=None,
                          genomon_sample_sheet=str(sheet), simple_repeat_db=str(testdata / "bare" / "simpleRepeat.txt.gz"),
                          resources_dir=str(tmp_path / "resources"))
    plan = run_snakemake(config, "-n", "--quiet", "rules")
    planned = int(re.search(r"total \(with rule all\) +(\d+)", plan.stderr).group(1))
    counted = int(re.search(r"^total +(\d+)$", plan.stdout, flags=re.M).group(1))
    assert planned == counted and "simple_repeat_db" not in plan.stdout, plan.stderr[:3000]


def test_annotation_naming_check_compares_the_conventions():
    ucsc, grc = ["chr1", "chr2", "chrX", "chrM"], ["1", "2", "X", "MT", "GL000192.1"]
    assert sv_annotation_naming_problem(ucsc, grc=False) is None and sv_annotation_naming_problem(grc, grc=True) is None
    assert "Set sv_filt.grc: false" in sv_annotation_naming_problem(ucsc, grc=True)
    assert "Set sv_filt.grc: true" in sv_annotation_naming_problem(grc, grc=False)
    # A reference named neither way (e.g. another species' scaffolds) or both ways is not judged.
    assert sv_annotation_naming_problem(["scaffold_1", "scaffold_2"], grc=True) is None
    assert sv_annotation_naming_problem(["chr1", "1"], grc=True) is None


def test_a_step_reports_bad_input_in_one_line_and_fails(capsys):
    from genomon_smk.steps import exit_status

    def bad_row():
        raise ValueError("result.txt line 3: 12 columns, GenomonSV writes 28")

    assert exit_status("sv_result", bad_row) == 1
    assert capsys.readouterr().err == "sv_result: result.txt line 3: 12 columns, GenomonSV writes 28\n"
    assert exit_status("sv_result", lambda: None) == 0
