"""Cohort input: the TSV tables and Genomon's sample sheet, and every check a schema cannot make."""

from pathlib import Path

import pytest

from genomon_smk.samplesheet import InputError, load_cohort

SCHEMAS = str(Path(__file__).resolve().parents[1] / "workflow" / "schemas")


@pytest.fixture
def fastqs(tmp_path):
    for name in ["t1", "t2", "n1", "p1"]:
        for mate in (1, 2):
            (tmp_path / f"{name}_R{mate}.fq.gz").write_bytes(b"")
    return tmp_path


def tables(tmp_path, samples, pairs="tumor\tnormal\tpanel\ntumor\tnormal\tpanel1\n"):
    (tmp_path / "samples.tsv").write_text(samples)
    (tmp_path / "pairs.tsv").write_text(pairs)
    return dict(samples=str(tmp_path / "samples.tsv"), pairs=str(tmp_path / "pairs.tsv"))


GOOD = (
    "sample\tfq1\tfq2\tplatform\tlibrary\n"
    "tumor\tt1_R1.fq.gz\tt1_R2.fq.gz\tILLUMINA\tlibT\n"
    "tumor\tt2_R1.fq.gz\tt2_R2.fq.gz\tILLUMINA\tlibT\n"
    "normal\tn1_R1.fq.gz\tn1_R2.fq.gz\t\t\n"
    "pon1\tp1_R1.fq.gz\tp1_R2.fq.gz\t\t\n"
)


def test_good_tables_give_lanes_pairs_panels_and_read_groups(fastqs):
    cohort = load_cohort(SCHEMAS, control_panels={"panel1": ["pon1"]}, **tables(fastqs, GOOD))
    assert cohort.samples == ["tumor", "normal", "pon1"]
    assert [Path(lane.fq1).name for lane in cohort.lanes["tumor"]] == ["t1_R1.fq.gz", "t2_R1.fq.gz"]
    assert Path(cohort.lanes["normal"][0].fq2) == fastqs / "n1_R2.fq.gz"
    assert cohort.read_group("tumor") == {"ID": "tumor", "SM": "tumor", "PL": "ILLUMINA", "LB": "libT"}
    assert cohort.read_group("normal") == {"ID": "normal", "SM": "normal", "PL": "ILLUMINA", "LB": "normal"}
    assert (cohort.pairs[0].tumor, cohort.pairs[0].normal, cohort.pairs[0].panel) == ("tumor", "normal", "panel1")


@pytest.mark.parametrize(
    "samples, pairs, panels, message",
    [
        ("sample\tfq1\n", None, {}, r"samples.tsv:1: missing column\(s\): fq2"),
        (GOOD.replace("pon1\t", "pon 1\t"), None, {"panel1": ["pon 1"]}, r"samples.tsv:5: field 'sample': 'pon 1' is not a safe name"),
        (GOOD.replace("pon1\t", "a/../b\t"), None, {}, r"samples.tsv:5: field 'sample': 'a/../b' is not a safe name"),
        (GOOD.replace("pon1\t", "x$(rm)\t"), None, {}, r"'x\$\(rm\)' is not a safe name"),
        (GOOD.replace("pon1\t", "x;y\t"), None, {}, r"'x;y' is not a safe name"),
        (GOOD.replace("n1_R1", "t1_R1"), None, {}, r"samples.tsv:4: field 'fq1': .*t1_R1.fq.gz is already used at .*samples.tsv:2"),
        (GOOD.replace("p1_R2", "missing"), None, {}, r"samples.tsv:5: field 'fq2': file not found: .*missing"),
        (GOOD, "tumor\tnormal\tpanel\ntumor\tnobody\t\n", {}, r"pairs.tsv:2: field 'normal': unknown sample 'nobody'"),
        (GOOD, "tumor\tnormal\tpanel\ntumor\tnormal\tpanelX\n", {}, r"pairs.tsv:2: field 'panel': unknown control panel 'panelX'"),
        (GOOD, "tumor\tnormal\ntumor\tnormal\ntumor\t\n", {}, r"pairs.tsv:3: tumor 'tumor' already has a row at .*pairs.tsv:2"),
        (GOOD, "tumor\tnormal\tpanel\n", {"panel1": ["pon1", "ghost"]}, r"panel 'panel1' names unknown sample 'ghost'"),
        (GOOD, "tumor\tnormal\tcolour\ntumor\tnormal\tred\n", {}, r"pairs.tsv:1: unknown column\(s\): colour"),
        (GOOD.replace("\tlibT\n", "\tlibU\n", 1), None, {}, r"samples.tsv:3: sample 'tumor': every lane needs the same platform and library"),
        (GOOD.replace("libT", "lib'T"), None, {}, r"samples.tsv:2: field 'library': \"lib'T\" is not a safe name"),
    ],
)
def test_bad_tables_are_refused_naming_file_line_and_field(fastqs, samples, pairs, panels, message):
    kwargs = tables(fastqs, samples, *([pairs] if pairs else []))
    with pytest.raises(InputError, match=message):
        load_cohort(SCHEMAS, control_panels=panels or {"panel1": ["pon1"]}, **kwargs)


def test_genomon_sample_sheet_gives_the_same_cohort(fastqs):
    sheet = fastqs / "genomon.csv"
    sheet.write_text(
        "# a comment\n[fastq]\ntumor,t1_R1.fq.gz;t2_R1.fq.gz,t1_R2.fq.gz;t2_R2.fq.gz\n"
        "normal,n1_R1.fq.gz,n1_R2.fq.gz\npon1,p1_R1.fq.gz,p1_R2.fq.gz\n\n"
        "[mutation_call]\ntumor,normal,panel1\n[controlpanel]\npanel1,pon1\n"
    )
    cohort = load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet))
    assert cohort.samples == ["tumor", "normal", "pon1"]
    assert [Path(lane.fq2).name for lane in cohort.lanes["tumor"]] == ["t1_R2.fq.gz", "t2_R2.fq.gz"]
    assert cohort.panels == {"panel1": ["pon1"]}
    assert (cohort.pairs[0].normal, cohort.pairs[0].panel) == ("normal", "panel1")


@pytest.mark.parametrize(
    "text, message",
    [
        ("[fastq]\ntumor,t1_R1.fq.gz\n", r"genomon.csv:2: \[fastq\] rows have 3 cells"),
        ("[bogus]\n", r"genomon.csv:1: unknown section \[bogus\]"),
        ("[fastq]\nt,t1_R1.fq.gz,t1_R2.fq.gz\nt,n1_R1.fq.gz,n1_R2.fq.gz\n", r"genomon.csv:3: sample 't' is defined twice"),
        ("[fastq]\nt,t1_R1.fq.gz,t1_R2.fq.gz\n[mutation_call]\nt,None,nopanel\n", r"genomon.csv:4: field 'panel': unknown control panel"),
    ],
)
def test_bad_genomon_sheets_are_refused(fastqs, text, message):
    sheet = fastqs / "genomon.csv"
    sheet.write_text(text)
    with pytest.raises(InputError, match=message):
        load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet))
