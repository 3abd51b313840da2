"""The gene annotation stage around the annotator: the genes a run reads (gene_annotation: auto
by chromosome 1, a built-in name, a file), when the stage runs or is refused (annotation.enable),
ANNOVAR's files checked before any job, Genomon's table_annovar.pl command line and column
handling (a stand-in table_annovar.pl writing a recorded multianno layout), and the refGene
columns in the VCF's INFO. The stage's run is checked on the Genomon-sheet scenario
(test_scenarios.py), its job count in the stage-plan tests."""

import os
import re
import stat
import sys

import pysam
import pytest

from genomon_smk.plan import annotation as plan
from genomon_smk.steps import annovar
from genomon_smk.steps.merge_mutation import gene_info_values, header_columns, write_vcf

GRCH37 = [("1", 249250621), ("2", 243199373)]
HG38 = [("chr1", 248956422)]
CUT = [("chr1", 80000), ("chr2", 60000)]


def config(**annotation):
    return {"gene_annotation": annotation.pop("genes", plan.AUTO),
            "annotation": {"enable": "auto", "tool": "genomon", "annovar_dir": None, "annovar_database": None,
                           "annovar_buildver": "hg19", "table_annovar_params": plan.GENOMON_TABLE_ANNOVAR_PARAMS,
                           **annotation}}


def planned(tmp_path, contigs, **annotation):
    settings = config(**annotation)
    resolve = lambda path: str(tmp_path / path)  # noqa: E731
    found = plan.plan_annotation(settings, contigs, resolve)
    return found, plan.problems(settings, found, contigs, resolve)


def test_auto_picks_the_built_in_table_of_the_references_genome_by_chromosome_1(tmp_path):
    grch37, problems = planned(tmp_path, GRCH37)
    assert grch37.enabled and grch37.genes.name == "hg19" and not grch37.genes.explicit and problems == []
    assert grch37.genes.path and os.path.isfile(grch37.genes.path)  # annot_utils' table in .venv-sv
    assert planned(tmp_path, HG38)[0].genes.name == "hg38"


def test_a_reference_no_table_fits_runs_without_annotation_unless_asked_for(tmp_path):
    cut, problems = planned(tmp_path, CUT)
    assert not cut.enabled and problems == [] and "no built-in gene table fits this reference" in cut.note
    assert "80,000 bp" in cut.note
    _, refused = planned(tmp_path, CUT, enable=True)
    assert refused == [(("annotation", "enable"), f"true, but {cut.note}")]
    off, problems = planned(tmp_path, GRCH37, enable=False)
    assert not off.enabled and problems == []


def test_a_named_table_is_checked(tmp_path):
    _, problems = planned(tmp_path, CUT, genes="hg19")
    assert len(problems) == 1 and problems[0][0] == ("gene_annotation",)
    assert "chromosome 1 is 249,250,621 bp, but its chromosome 1 is 80,000 bp" in problems[0][1]
    _, problems = planned(tmp_path, CUT, genes="genes.gtf")
    assert problems == [(("gene_annotation",), f"file not found: {tmp_path}/genes.gtf")]
    (tmp_path / "genes.gtf").write_text("")
    found, problems = planned(tmp_path, CUT, genes="genes.gtf")
    assert found.enabled and found.genes.path == str(tmp_path / "genes.gtf") and problems == []


def test_humandb_file_names_follow_annovars_naming():
    assert plan.humandb_files("hg19", "refGene", "g") == ["hg19_refGene.txt", "hg19_refGeneMrna.fa"]
    assert plan.humandb_files("hg19", "1000g2014oct_eas", "f") == ["hg19_EAS.sites.2014_10.txt"]
    assert plan.humandb_files("hg19", "1000g2010nov_all", "f") == ["hg19_ALL.sites.2010_11.txt"]
    assert plan.humandb_files("hg19", "cosmic70", "f") == ["hg19_cosmic70.txt"]


GENOMON_HUMANDB = ["hg19_refGene.txt", "hg19_refGeneMrna.fa", "hg19_cytoBand.txt", "hg19_genomicSuperDups.txt",
                   "hg19_esp6500siv2_all.txt", "hg19_ALL.sites.2010_11.txt", "hg19_ALL.sites.2014_10.txt",
                   "hg19_AFR.sites.2014_10.txt", "hg19_EAS.sites.2014_10.txt", "hg19_EUR.sites.2014_10.txt",
                   "hg19_snp131.txt", "hg19_snp138.txt", "hg19_snp131NonFlagged.txt", "hg19_snp138NonFlagged.txt",
                   "hg19_cosmic68wgs.txt", "hg19_cosmic70.txt", "hg19_clinvar_20150629.txt", "hg19_ljb26_all.txt"]


def fake_annovar(tmp_path, script):
    directory = tmp_path / "annovar"
    directory.mkdir()
    path = directory / "table_annovar.pl"
    path.write_text(script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return directory


def test_annovars_files_are_checked_before_any_job(tmp_path):
    humandb = tmp_path / "humandb"
    humandb.mkdir()
    settings = dict(tool="annovar", annovar_dir="annovar", annovar_database="humandb")
    found, problems = planned(tmp_path, CUT, **settings)
    assert found.enabled  # ANNOVAR brings its own genes: on whatever the reference
    assert [key for key, _ in problems] == [("annotation", "annovar_dir"), ("annotation", "annovar_database")]
    assert "no table_annovar.pl in" in problems[0][1]
    assert all(name in problems[1][1] for name in GENOMON_HUMANDB)  # Genomon's 17 protocols' files
    fake_annovar(tmp_path, "#!/bin/sh\n")
    for name in GENOMON_HUMANDB:
        (humandb / name).write_text("")
    assert planned(tmp_path, CUT, **settings)[1] == []
    (humandb / "hg19_EAS.sites.2014_10.txt").unlink()
    _, problems = planned(tmp_path, CUT, **settings)
    assert len(problems) == 1 and "lacks hg19_EAS.sites.2014_10.txt (" in problems[0][1]
    _, problems = planned(tmp_path, CUT, **settings, annovar_buildver="hg38")
    assert (("annotation", "annovar_buildver"), "hg38, but table_annovar_params says -buildver hg19 "
            "(the multianno file is named by it)") in problems
    _, problems = planned(tmp_path, CUT, **settings, table_annovar_params="-buildver hg19 -protocol refGene,cytoBand "
                                                                        "-operation g")
    assert problems == [(("annotation", "table_annovar_params"), "-protocol names 2 protocols and -operation 1 "
                         "operations: give one operation per protocol")]


# A stand-in table_annovar.pl: records its command line, checks what Genomon gives it (a header-less
# input, the database last), and writes the multianno layout of ANNOVAR's 2018 release (gene
# columns, region and filter columns, then Otherinfo: the rest of the input line) or, with
# OTHERINFO_N set, the 2019Oct24 release's Otherinfo1..N headers.
TABLE_ANNOVAR = f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
open(os.path.join(os.path.dirname(sys.argv[0]), "args.txt"), "w").write("\\n".join(args))
prefix = args[args.index("--outfile") + 1]
buildver = args[args.index("-buildver") + 1]
source, humandb = args[-2], args[-1]
assert os.path.isdir(humandb)
rows = [line.rstrip("\\n").split("\\t") for line in open(source)]
assert not any(row[0] == "Chr" for row in rows), "a header line reached ANNOVAR"
gene = {{"10": ["exonic", "GNAS", "", "nonsynonymous SNV", "GNAS:NM_000516:exon8:c.G601A:p.R201C,GNAS:NM_080425:exon11:c.G1795A:p.R599C"],
        "20": ["splicing", "TG002", "NM_T002:exon2:c.100+1G>A", "", ""],
        "30": ["intergenic", "NONE;TG003", "dist=NONE;dist=40", "", ""]}}
width = len(rows[0]) - 5 if rows else 0
others = ["Otherinfo"] if "OTHERINFO_N" not in os.environ else [f"Otherinfo{{i + 1}}" for i in range(width)]
header = ["Chr", "Start", "End", "Ref", "Alt", "Func.refGene", "Gene.refGene", "GeneDetail.refGene",
          "ExonicFunc.refGene", "AAChange.refGene", "cytoBand", "cosmic70"] + others
with open(f"{{prefix}}.{{buildver}}_multianno.txt", "w") as out:
    out.write("\\t".join(header) + "\\n")
    for row in rows:
        out.write("\\t".join(row[:5] + gene[row[1]] + ["20q13.32", ""] + row[5:]) + "\\n")
"""


def calls_file(tmp_path):
    columns = header_columns(paired=True, with_panel=True)
    rows = []
    for start in (10, 20, 30):
        values = dict.fromkeys(columns, "---")
        values.update({"Chr": "chr1", "Start": str(start), "End": str(start), "Ref": "A", "Alt": "T",
                       "depth_tumor": "40", "variantNum_tumor": "12", "depth_normal": "30", "variantNum_normal": "0"})
        rows.append("\t".join(values[column] for column in columns))
    path = tmp_path / "calls.txt"
    path.write_text("# Version: test\n" + "\t".join(columns) + "\n" + "\n".join(rows) + "\n")
    return path, columns, rows


@pytest.mark.parametrize("release", ["2018", "2019"])
def test_annovar_runs_as_genomon_runs_it_and_its_columns_are_genomons(tmp_path, monkeypatch, release):
    if release == "2019":
        monkeypatch.setenv("OTHERINFO_N", "1")
    directory = fake_annovar(tmp_path, TABLE_ANNOVAR)
    (tmp_path / "humandb").mkdir()
    (tmp_path / "work").mkdir()
    calls, columns, rows = calls_file(tmp_path)
    result = tmp_path / "result.txt"
    params = "-buildver hg19 -remove --otherinfo -protocol refGene,cytoBand,cosmic70 -operation g,r,f"
    assert annovar.main(["--annovar-dir", str(directory), "--humandb", str(tmp_path / "humandb"), "--buildver", "hg19",
                         "--params", params, "--work", str(tmp_path / "work"), str(calls), str(result)]) == 0
    # Genomon's command line: --outfile PREFIX, the options as given (no -nastring), input, humandb.
    args = (directory / "args.txt").read_text().split("\n")
    assert args == ["--outfile", str(tmp_path / "work" / "annovar"), *params.split(),
                    str(tmp_path / "work" / "calls.avinput"), str(tmp_path / "humandb")]
    lines = result.read_text().splitlines()
    assert lines[0] == "# Version: test"
    header = lines[1].split("\t")
    # ANNOVAR's columns up to Otherinfo(1), then the calls' own from the 6th on.
    assert header == [*columns[:5], *plan.GENE_COLUMNS, "cytoBand", "cosmic70", *columns[5:]]
    body = [line.split("\t") for line in lines[2:]]
    assert [row[5:10] for row in body][1] == ["splicing", "TG002", "NM_T002:exon2:c.100+1G>A", "", ""]
    assert [row[header.index("cosmic70")] for row in body] == ["", "", ""]  # empty, not '.'
    assert [row[:5] + row[12:] for row in body] == [row.split("\t") for row in rows]


def test_annovar_output_that_does_not_fit_the_calls_is_refused(tmp_path):
    directory = fake_annovar(tmp_path, TABLE_ANNOVAR.replace('+ row[5:]', '+ row[6:]'))
    (tmp_path / "humandb").mkdir()
    (tmp_path / "work").mkdir()
    calls, _, _ = calls_file(tmp_path)
    result = tmp_path / "result.txt"
    assert annovar.main(["--annovar-dir", str(directory), "--humandb", str(tmp_path / "humandb"), "--buildver", "hg19",
                         "--params", "-buildver hg19 --otherinfo -protocol refGene -operation g", "--work",
                         str(tmp_path / "work"), str(calls), str(result)]) == 1
    assert not result.exists()


def test_gene_columns_go_into_info_escaped():
    assert gene_info_values("exonic;splicing") == ("exonic%3Bsplicing",)
    assert gene_info_values("nonsynonymous SNV") == ("nonsynonymous_SNV",)
    assert gene_info_values("dist=NONE;dist=40") == ("dist%3DNONE%3Bdist%3D40",)
    assert gene_info_values("G:NM_1:exon1:c.A1G:p.M1V,G:NM_2:exon2:c.A4G:p.M2V") == \
        ("G:NM_1:exon1:c.A1G:p.M1V", "G:NM_2:exon2:c.A4G:p.M2V")
    assert gene_info_values("") is None


def test_the_vcf_carries_the_consequence(tmp_path):
    fasta = tmp_path / "ref.fa"
    fasta.write_text(">chr1\n" + "A" * 100 + "\n")
    pysam.faidx(str(fasta))
    calls, columns, rows = calls_file(tmp_path)
    annotated = [*columns[:5], *plan.GENE_COLUMNS, *columns[5:]]
    values = [["exonic", "GNAS", "", "nonsynonymous SNV", "GNAS:NM_000516:exon8:c.G601A:p.R201C,GNAS:NM_080425:exon11:c.G1795A:p.R599C"],
              ["exonic;splicing", "TG1;TG2", "NM_T2:exon2:r.spl", "stopgain", "TG1:NM_T1:exon1:c.C3T:p.Q1X"],
              ["intergenic", "NONE;TG003", "dist=NONE;dist=40", "", ""]]
    result = tmp_path / "result.txt"
    result.write_text("\t".join(annotated) + "\n" + "".join(
        "\t".join([*row.split("\t")[:5], *gene, *row.split("\t")[5:]]) + "\n" for row, gene in zip(rows, values)))
    out = tmp_path / "out.vcf.gz"
    assert write_vcf(str(result), str(fasta), str(out), "T", "N") == 3
    with pysam.VariantFile(str(out)) as vcf:
        assert {key for key in vcf.header.info if key.endswith(".refGene")} == set(plan.GENE_COLUMNS)
        records = list(vcf)
    assert records[0].info["ExonicFunc.refGene"] == ("nonsynonymous_SNV",)
    assert len(records[0].info["AAChange.refGene"]) == 2
    assert records[1].info["Func.refGene"] == ("exonic%3Bsplicing",)
    assert "ExonicFunc.refGene" not in records[2].info and records[2].info["GeneDetail.refGene"] == \
        ("dist%3DNONE%3Bdist%3D40",)


def test_the_workflow_plans_genes_for_annotation_and_pmsignature_from_one_key(tmp_path, testdata):
    """gene_annotation names the genes of the annotation stage and of pmsignature (unless its own
    key does); a reference no table fits runs without both, unless annotation.enable is true."""
    from snakemake.exceptions import WorkflowError

    from conftest import parse_workflow, write_config

    common = dict(resources_dir=str(tmp_path / "resources"), pmsignature_ind={"enable": True})
    workflow = parse_workflow(write_config(tmp_path / "without", testdata, **common))
    without = workflow.globals
    assert not without["ANNOTATION"].enabled and without["PMSIGNATURE"].ks == {}
    assert "annotate_mutation" not in {rule.name for rule in workflow.rules}
    assert without["MERGED_CALLS"].endswith("{tumor}.genomon_mutation.result.txt")
    genes = str(testdata / "genes.gtf")
    workflow = parse_workflow(write_config(tmp_path / "with", testdata, gene_annotation=genes, **common))
    found = workflow.globals
    assert found["ANNOTATION"].enabled and found["ANNOTATION"].genes.path == genes
    assert found["PMSIGNATURE"].annotation == genes and found["PMSIGNATURE"].ks == {"ind": [2, 3, 4, 5, 6]}
    assert found["MERGED_CALLS"].endswith("{tumor}.genomon_mutation.calls.txt")
    assert "annotate_mutation" in {rule.name for rule in workflow.rules}
    with pytest.raises(WorkflowError, match=r"annotation.*enable.*true, but no built-in gene table fits"):
        parse_workflow(write_config(tmp_path / "asked", testdata, annotation={"enable": True}))
    with pytest.raises(WorkflowError, match=r"gene_annotation.*hg19 is the refGene table of a genome"):
        parse_workflow(write_config(tmp_path / "hg19", testdata, gene_annotation="hg19"))


@pytest.mark.workflow
def test_the_annovar_stage_is_planned_with_genomons_options(tmp_path, testdata):
    """annotation.tool: annovar: one annotate_mutation job per pair running table_annovar.pl through
    genomon_smk.steps.annovar with the configured directory, humandb, build and options."""
    from conftest import run_snakemake, write_config

    directory = fake_annovar(tmp_path, TABLE_ANNOVAR)
    humandb = tmp_path / "humandb"
    humandb.mkdir()
    for name in GENOMON_HUMANDB:
        (humandb / name).write_text("")
    config = write_config(tmp_path / "run", testdata, annotation={
        "tool": "annovar", "annovar_dir": str(directory), "annovar_database": str(humandb)})
    output = run_snakemake(config, "-n", "-p", "--forceall")
    text = output.stdout + output.stderr
    assert "gene annotation: ANNOVAR's table_annovar.pl" in text
    assert re.search(r"^annotate_mutation +1$", text, flags=re.M), text[-3000:]
    command = next(line for line in text.splitlines() if "genomon_smk.steps.annovar" in line)
    assert f"--annovar-dir {directory} --humandb {humandb} --buildver hg19" in command
    assert f"--params '{plan.GENOMON_TABLE_ANNOVAR_PARAMS}'" in command
    assert "genomon_mutation.calls.txt" in command


def test_auto_without_the_installed_table_runs_on_without_genes(tmp_path, monkeypatch):
    monkeypatch.setattr(plan, "built_in_path", lambda name: None)
    found, problems = planned(tmp_path, GRCH37)
    assert not found.enabled and problems == [] and "refGene table is not installed" in found.note
    assert [key for key, _ in planned(tmp_path, GRCH37, enable=True)[1]] == [("annotation", "enable")]
