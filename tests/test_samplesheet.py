"""Cohort input: the TSV tables and Genomon's sample sheet, and every check a schema cannot make."""

import gzip
import os
import re
from pathlib import Path

import pytest

from genomon_smk.plan.samplesheet import LAYOUT_NAMES, InputError, imported_name_warnings, load_cohort

SCHEMAS = str(Path(__file__).resolve().parents[1] / "workflow" / "schemas")


@pytest.fixture
def fastqs(tmp_path):
    for name in ["t1", "t2", "n1", "p1"]:
        for mate in (1, 2):
            (tmp_path / f"{name}_R{mate}.fq.gz").write_bytes(gzip.compress(f"@{name}_r1/{mate}\nACGT\n+\nIIII\n".encode()))
    (tmp_path / "empty.fq").write_bytes(b"")
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
        (GOOD.replace("p1_R2.fq.gz", "empty.fq"), None, {}, r"samples.tsv:5: field 'fq2': holds no reads: .*empty.fq"),
        (GOOD.replace("pon1\t", "p" * 101 + "\t"), None, {}, r"samples.tsv:5: field 'sample': .* is too long"),
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


def test_a_name_that_would_not_fit_a_file_name_is_refused():
    from genomon_smk.plan.samplesheet import name_problem

    assert "must fit the file system's 255 bytes" in name_problem("s" * 101)
    assert name_problem(("sample-" * 15)[:100]) is None  # ("s" * 100: Snakemake refuses a long repeat)
    assert "'None' means 'no sample'" in name_problem("None")


def test_genomon_sheet_sections_bam_import_tofastq_qc_and_sv_detection(fastqs, tmp_path):
    import pysam

    bam, other = fastqs / "x.bam", fastqs / "y.bam"
    for path, sample in ((bam, "converted"), (other, "imported")):  # two samples' data: two BAMs
        header = {"HD": {"VN": "1.6"}, "SQ": [{"SN": "chr1", "LN": 1000}], "RG": [{"ID": sample, "SM": sample}]}
        with pysam.AlignmentFile(str(path), "wb", header=header):
            pass
        pysam.index(str(path))
    sheet = fastqs / "genomon.csv"
    sheet.write_text(
        "[fastq]\ntumor,t1_R1.fq.gz,t1_R2.fq.gz\n[bam_tofastq]\nconverted,x.bam\n[bam_import]\nimported,y.bam\n"
        "[mutation_call]\ntumor,imported,None\nconverted,None,None\n[sv_detection]\ntumor,imported,None\n"
        "[summary]\ntumor\n[controlpanel]\npanel1,converted\n"
    )
    cohort = load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet))
    assert cohort.samples == ["tumor", "converted", "imported"] and cohort.mapped_samples == ["tumor", "converted"]
    assert cohort.imported == {"imported": str(other)} and cohort.bam_sources == {"converted": [str(bam)]}
    assert cohort.qc_samples == ["tumor"] and [p.normal for p in cohort.sv_pairs] == ["imported"]
    assert cohort.read_group("converted")["PL"] == "ILLUMINA"
    sheet.write_text("[fastq]\nx,t1_R1.fq.gz,t1_R2.fq.gz\n[bam_import]\nx,x.bam\nNone,x.bam\n[qc]\nghost\n")
    with pytest.raises(InputError) as refused:
        load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet))
    message = str(refused.value)
    assert "sample 'x' is defined twice in [bam_import]" in message
    assert "'None' means 'no sample'" in message and "[qc] names unknown sample 'ghost'" in message


def indexed_bam(path, contigs=(("chr1", 1000),), read_group_samples=()):
    """A header-only BAM and its index: enough for every check made at plan time."""
    import pysam

    header = {"HD": {"VN": "1.6"}, "SQ": [{"SN": name, "LN": length} for name, length in contigs]}
    if read_group_samples:
        header["RG"] = [{"ID": f"rg{i}", "SM": name} for i, name in enumerate(read_group_samples)]
    with pysam.AlignmentFile(str(path), "wb", header=header):
        pass
    pysam.index(str(path))
    return path


def test_samples_table_may_give_an_imported_bam_instead_of_fastq(fastqs):
    indexed_bam(fastqs / "n.bam")
    samples = "sample\tfq1\tfq2\tbam\ntumor\tt1_R1.fq.gz\tt1_R2.fq.gz\t\nnormal\t\t\tn.bam\npon1\tp1_R1.fq.gz\tp1_R2.fq.gz\t\n"
    (fastqs / "fai").write_text("chr1\t1000\t6\t60\t61\n")
    cohort = load_cohort(SCHEMAS, control_panels={"panel1": ["pon1"]}, reference_fai=str(fastqs / "fai"),
                         **tables(fastqs, samples))
    assert cohort.samples == ["tumor", "pon1", "normal"] and cohort.mapped_samples == ["tumor", "pon1"]
    assert cohort.imported == {"normal": str(fastqs / "n.bam")} and cohort.pairs[0].normal == "normal"
    # A table of imported BAMs only needs no FASTQ columns.
    cohort = load_cohort(SCHEMAS, **tables(fastqs, "sample\tbam\nnormal\tn.bam\n", "tumor\tnormal\tpanel\n"))
    assert cohort.imported == {"normal": str(fastqs / "n.bam")} and not cohort.lanes


BAM_TABLE = "sample\tfq1\tfq2\tbam\ntumor\tt1_R1.fq.gz\tt1_R2.fq.gz\t\nnormal\t\t\tn.bam\n"


@pytest.mark.parametrize(
    "samples, message",
    [
        (BAM_TABLE.replace("\t\t\tn.bam", "\tn1_R1.fq.gz\tn1_R2.fq.gz\tn.bam"),
         r"samples.tsv:3: field 'bam': a row gives fq1 and fq2 \(a lane to map\) or bam"),
        (BAM_TABLE + "normal\t\t\tn.bam\n", r"samples.tsv:4: field 'sample': 'normal' already has a row at .*samples.tsv:3"),
        (BAM_TABLE + "normal\tn1_R1.fq.gz\tn1_R2.fq.gz\t\n", r"samples.tsv:4: field 'sample': 'normal' is imported as a BAM at .*samples.tsv:3"),
        (BAM_TABLE + "tumor\t\t\tn.bam\n", r"samples.tsv:4: field 'sample': 'tumor' already has a row at .*samples.tsv:2"),
        (BAM_TABLE + "pon1\tp1_R1.fq.gz\t\t\n", r"samples.tsv:4: field 'fq2': required \(a lane has fq1 and fq2; an imported sample has bam instead\)"),
        (BAM_TABLE.replace("n.bam", "nothere.bam"), r"samples.tsv:3: field 'bam': BAM not found: .*nothere.bam"),
        (BAM_TABLE.replace("n.bam", "noindex.bam"), r"samples.tsv:3: field 'bam': BAM has no index .*samtools index"),
        (BAM_TABLE.replace("n.bam", "other.bam"), r"samples.tsv:3: field 'bam': BAM .*other.bam was mapped to another reference"),
        (BAM_TABLE.replace("normal\t", "None\t"), r"samples.tsv:3: field 'sample': 'None' means 'no sample'"),
        ("sample\tlibrary\nnormal\tx\n", r"samples.tsv:1: missing column\(s\): fq1, fq2 \(header is: sample, library\); or give bam instead"),
        ("sample fq1 fq2\nnormal a b\n", r"samples.tsv:1: missing column\(s\): sample, fq1, fq2 .*; columns are separated by tabs, not spaces"),
    ],
)
def test_bad_bam_rows_are_refused_naming_file_line_and_field(fastqs, samples, message):
    indexed_bam(fastqs / "n.bam")
    indexed_bam(fastqs / "other.bam", (("chr1", 2000),))
    indexed_bam(fastqs / "noindex.bam")
    (fastqs / "noindex.bam.bai").unlink()
    (fastqs / "fai").write_text("chr1\t1000\t6\t60\t61\n")
    with pytest.raises(InputError, match=message):
        load_cohort(SCHEMAS, reference_fai=str(fastqs / "fai"), **tables(fastqs, samples, "tumor\tnormal\tpanel\n"))


def test_an_imported_bam_indexed_as_prefix_bai_is_accepted(fastqs):
    indexed_bam(fastqs / "n.bam")
    (fastqs / "n.bam.bai").rename(fastqs / "n.bai")
    cohort = load_cohort(SCHEMAS, **tables(fastqs, "sample\tbam\nnormal\tn.bam\n", "tumor\tnormal\tpanel\n"))
    assert cohort.imported == {"normal": str(fastqs / "n.bam")}


@pytest.mark.parametrize(
    "text, message",
    [
        ("[bam_tofastq]\nc,x.bam;gone.bam\n", r"genomon.csv:2: field 'bam': BAM not found or not readable: .*gone.bam"),
        ("[bam_tofastq]\nc,x.bam;x.bam\n", r"genomon.csv:2: field 'bam': a file is named twice: .*x.bam"),
        ("[bam_tofastq]\nc,x.bam,extra\n", r"genomon.csv:2: \[bam_tofastq\] rows have 2 cells \(sample, BAM\), found 3"),
        ("[bam_import]\n\nc,other.bam\n", r"genomon.csv:3: field 'bam': BAM .*other.bam was mapped to another reference"),
        ("[bam_import]\nc,x.bam\n[bam_tofastq]\nc,x.bam\n", r"genomon.csv:4: sample 'c' is defined twice in \[bam_tofastq\] \(first at .*genomon.csv:2\)"),
        ("[bam_import]\nc,x.bam\nd,x.bam\n[sv_detection]\nc,d\nc,None\n", r"genomon.csv:6: tumor 'c' already has a row at .*genomon.csv:5"),
        ("[bam_import]\nc,x.bam\n[sv_detection]\nc,ghost,None\n", r"genomon.csv:4: field 'normal': unknown sample 'ghost' \(not in the sheet's \[fastq\], \[bam_tofastq\] or \[bam_import\] sections\)"),
        ("[bam_import]\nc,x.bam\n[qc]\nc\nghost\n", r"genomon.csv:5: \[qc\] names unknown sample 'ghost'"),
        ("[fastq]\nt,t1_R1.fq.gz,empty.fq.gz\n", r"genomon.csv:2: field 'fq2': holds no reads: .*empty.fq.gz"),
        ("[fastq]\nt,t1_R1.fq.gz;empty.fq.gz,t1_R2.fq.gz;t2_R2.fq.gz\n", r"genomon.csv:2: field 'fq1': holds no reads: .*empty.fq.gz"),
    ],
)
def test_genomon_sheet_bam_sections_and_lanes_are_checked_naming_the_line(fastqs, text, message):
    indexed_bam(fastqs / "x.bam")
    indexed_bam(fastqs / "other.bam", (("chr1", 2000),))
    (fastqs / "empty.fq.gz").write_bytes(gzip.compress(b""))  # gzip of nothing: no reads either
    (fastqs / "fai").write_text("chr1\t1000\t6\t60\t61\n")
    sheet = fastqs / "genomon.csv"
    sheet.write_text(text)
    with pytest.raises(InputError, match=message):
        load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet), reference_fai=str(fastqs / "fai"))


def test_a_sample_named_twice_in_qc_gets_its_qc_once(fastqs):
    sheet = fastqs / "genomon.csv"
    sheet.write_text("[fastq]\nt,t1_R1.fq.gz,t1_R2.fq.gz\nn,n1_R1.fq.gz,n1_R2.fq.gz\n[qc]\nn\nt\n[summary]\nn\n")
    assert load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet)).qc_samples == ["n", "t"]


def test_an_imported_bam_of_another_sample_name_is_warned_about(fastqs):
    indexed_bam(fastqs / "n.bam", read_group_samples=["BLOOD_A"])
    indexed_bam(fastqs / "t.bam", read_group_samples=["tumor"])
    cohort = load_cohort(SCHEMAS, **tables(fastqs, "sample\tbam\nnormal\tn.bam\ntumor\tt.bam\n",
                                           "tumor\tnormal\tpanel\ntumor\tnormal\t\n"))
    warnings = imported_name_warnings(cohort)
    assert len(warnings) == 1 and "samples.tsv:2:" in warnings[0] and "'normal'" in warnings[0], warnings
    assert "'BLOOD_A'" in warnings[0]


@pytest.mark.parametrize("name, taken", [
    ("multiqc_data", "qc/multiqc_data/"),
    ("timeline", "qc/timeline/"),
    ("control_panel", "sv/control_panel/"),
    ("non_matched_control_panel", "sv/non_matched_control_panel/"),
])
def test_a_sample_name_the_output_layout_uses_is_refused_at_its_line(fastqs, name, taken):
    samples = GOOD.replace("normal\t", f"{name}\t")
    kwargs = tables(fastqs, samples, f"tumor\tnormal\tpanel\ntumor\t{name}\tpanel1\n")
    with pytest.raises(InputError) as refused:
        load_cohort(SCHEMAS, control_panels={"panel1": ["pon1"]}, **kwargs)
    assert str(refused.value) == (
        f"{fastqs / 'samples.tsv'}:4: field 'sample': '{name}' is taken by the output layout "
        f"({taken} beside the samples' directories, docs/outputs.md): rename the sample"
    )
    sheet = fastqs / "genomon.csv"
    sheet.write_text(f"[fastq]\ntumor,t1_R1.fq.gz,t1_R2.fq.gz\n{name},n1_R1.fq.gz,n1_R2.fq.gz\n"
                     f"[mutation_call]\ntumor,{name},None\n")
    with pytest.raises(InputError, match=rf"^{sheet}:3: field 'sample': '{name}' is taken by the output layout"):
        load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet))


def test_every_name_the_rules_put_beside_the_samples_directories_is_reserved():
    """qc/{sample}/ and sv/{sample}/ share their directories with the run-wide files of the rules:
    each such fixed name, read from workflow/rules, must be refused as a sample name."""
    rules = "".join(path.read_text() for path in (Path(SCHEMAS).parent / "rules").glob("*.smk"))
    beside = re.findall(r"\{OUTPUT_DIR\}/qc/([^/{}\"']+)", rules) + re.findall(r"\{SV_DIR\}/([^/{}\"']+)", rules)
    assert {"multiqc_data", "timeline", "control_panel"} <= set(beside)
    assert set(beside) <= set(LAYOUT_NAMES)


@pytest.mark.parametrize("samples, pairs, panels", [
    # A name too long for the schema: its row is refused, and the pair naming it says nothing more.
    (GOOD.replace("normal\t", "n" * 101 + "\t"), f"tumor\tnormal\tpanel\ntumor\t{'n' * 101}\tpanel1\n", None),
    # A lane without its R2: the row is refused; the panel naming its sample says nothing more.
    (GOOD.replace("p1_R2.fq.gz", ""), None, {"panel1": ["pon1"]}),
])
def test_one_problem_of_a_sample_row_gives_one_message(fastqs, samples, pairs, panels):
    kwargs = tables(fastqs, samples, *([pairs] if pairs else []))
    with pytest.raises(InputError) as refused:
        load_cohort(SCHEMAS, control_panels=panels or {"panel1": ["pon1"]}, **kwargs)
    assert len(str(refused.value).splitlines()) == 1, str(refused.value)
    assert "samples.tsv:" in str(refused.value)


def test_one_problem_of_a_genomon_sheet_row_gives_one_message(fastqs):
    sheet = fastqs / "genomon.csv"
    sheet.write_text("[fastq]\ntumor,t1_R1.fq.gz,t1_R2.fq.gz\nnormal,n1_R1.fq.gz\n[mutation_call]\ntumor,normal,None\n"
                     "[sv_detection]\ntumor,normal,None\n[qc]\nnormal\n")
    with pytest.raises(InputError) as refused:
        load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet))
    assert str(refused.value) == f"{sheet}:3: [fastq] rows have 3 cells (sample, R1, R2), found 2"


def test_a_name_ending_in_a_long_repeat_is_refused_at_its_line_before_snakemake_would(fastqs):
    """Issue 34: a 100-character sample name ending in a long repeat passed the sheet check and
    stopped the plan with Snakemake's PeriodicWildcardError, without the sheet's line."""
    from snakemake.io import PeriodicityDetector

    from genomon_smk.plan.samplesheet import name_problem

    name = "T" + "ab" * 30
    assert PeriodicityDetector().is_periodic(name)  # what Snakemake refuses
    assert "ends in 30 repeats of 'ab'" in name_problem(name)
    assert name_problem("tumor" + "0" * 19) is None and not PeriodicityDetector().is_periodic("tumor" + "0" * 19)
    assert name_problem("tumor" + "0" * 20) and PeriodicityDetector().is_periodic("tumor" + "0" * 20)
    sheet = fastqs / "genomon.csv"
    sheet.write_text(f"[fastq]\ntumor,t1_R1.fq.gz,t1_R2.fq.gz\n{name},n1_R1.fq.gz,n1_R2.fq.gz\n"
                     f"[mutation_call]\ntumor,{name},None\n")
    with pytest.raises(InputError, match=rf"^{sheet}:3: field 'sample': '{name}' ends in 30 repeats"):
        load_cohort(SCHEMAS, genomon_sample_sheet=str(sheet))


def test_the_config_schema_as_json_validates_and_sets_defaults_as_the_yaml(tmp_path):
    """Snakemake's validate reads the schema's JSON copy (kept under the YAML's digest, made once)
    with the same result: the same defaults set, the same refusals."""
    import copy

    import yaml
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    from genomon_smk.plan.samplesheet import load_schema, schema_as_json

    schemas = Path(__file__).resolve().parents[1] / "workflow" / "schemas"
    schema_yaml = str(schemas / "config.schema.yaml")
    path = schema_as_json(load_schema(str(schemas), "config"), schema_yaml, str(tmp_path / "cache"))
    assert path.endswith(".json") and os.path.dirname(path) == str(tmp_path / "cache")
    assert schema_as_json({"changed": True}, schema_yaml, str(tmp_path / "cache")) == path  # made once
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    by_yaml, by_json = copy.deepcopy(config), copy.deepcopy(config)
    validate(by_yaml, schema_yaml, set_default=True)
    validate(by_json, path, set_default=True)
    assert by_json == by_yaml and by_json != config  # defaults were set, the same ones
    bad = dict(config, split={"chunks": "many"})
    for schema in (schema_yaml, path):
        with pytest.raises(WorkflowError):
            validate(copy.deepcopy(bad), schema, set_default=True)
    # where no copy can be written, or the schema holds what JSON has not: the YAML file
    (tmp_path / "file").write_text("")
    assert schema_as_json({"a": 1}, schema_yaml, str(tmp_path / "file" / "cache")) == schema_yaml
    assert schema_as_json({"a": {1, 2}}, schema_yaml, str(tmp_path / "other")) == schema_yaml
