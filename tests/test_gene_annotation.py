"""A gene annotation read whole before any job (issue 34): garbage, another genome's contig names
or no exon on the reference are refused naming the file and what was found, where the
pmsignature background job used to fail (genomon_smk.plan.gene_annotation)."""

import gzip

import pytest
from snakemake.exceptions import WorkflowError

from conftest import parse_workflow, write_config
from genomon_smk.plan.gene_annotation import check_gene_annotation
from genomon_smk.plan.regions import read_fai

CONTIGS = [("1", 5000), ("2", 4000), ("MT", 100), ("decoy", 50)]
GTF_EXON = '{}\tsrc\texon\t{}\t{}\t.\t{}\t.\tgene_id "g1"; transcript_id "t1";\n'
REFGENE = "585\tNM_1\t{}\t+\t10\t900\t20\t800\t2\t10,500,\t100,900,\t0\tG1\tcmpl\tcmpl\t0,0,\n"


def write(tmp_path, name, text, compress=False):
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    return str(path)


@pytest.mark.parametrize("text, compress", [
    (GTF_EXON.format("chr1", 10, 100, "+") + GTF_EXON.format("2", 5, 50, "-"), False),
    ("#comment\n" + REFGENE.format("chr1"), True),
    (REFGENE.format("1").split("\t", 1)[1], False),  # genePred without the bin column
])
def test_a_gtf_or_genepred_of_the_reference_passes(tmp_path, text, compress):
    assert check_gene_annotation(write(tmp_path, "genes", text, compress), CONTIGS) == []


def test_garbage_is_refused_with_its_lines(tmp_path):
    path = write(tmp_path, "genes.gtf", "# header\nhello world\n" + GTF_EXON.format("1", 10, 100, "+")
                 + "1\tsrc\texon\tten\t100\t.\t+\t.\tx\n" + "a\tb\n" * 5)
    problems = check_gene_annotation(path, CONTIGS, key="pmsignature.annotation")
    assert problems[0].startswith(f"{path}:2: pmsignature.annotation: neither a GTF row") and "'hello world'" in problems[0]
    assert problems[1].startswith(f"{path}:4: ") and problems[2].startswith(f"{path}:5: ")
    assert problems[3] == f"{path}: pmsignature.annotation: 4 more rows that are neither GTF nor genePred"


def test_a_binary_or_empty_file_is_refused(tmp_path):
    binary = tmp_path / "genes.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    [problem] = check_gene_annotation(str(binary), CONTIGS)[:1]
    assert str(binary) in problem
    [empty] = check_gene_annotation(write(tmp_path, "empty.gtf", "# nothing\n"), CONTIGS)
    assert "no GTF or genePred row" in empty


def test_another_genome_s_contig_names_are_refused_naming_them(tmp_path):
    path = write(tmp_path, "mouse.gtf", GTF_EXON.format("NC_000067.7", 10, 100, "+"))
    [problem] = check_gene_annotation(path, CONTIGS)
    assert problem.startswith(f"{path}: none of its contigs (NC_000067.7) is a reference contig (1, 2, MT, decoy)")


def test_no_exon_on_the_reference_s_chromosomes_is_refused(tmp_path):
    genes_only = write(tmp_path, "genes.gtf", GTF_EXON.replace("exon", "gene").format("1", 10, 100, "+"))
    [problem] = check_gene_annotation(genes_only, CONTIGS)
    assert problem.startswith(f"{genes_only}: no exon on the reference's chromosomes (1, 2)")
    assert "exons found on reference contigs: none" in problem
    decoy_only = write(tmp_path, "decoy.gtf", GTF_EXON.format("decoy", 1, 20, "+"))
    [problem] = check_gene_annotation(decoy_only, CONTIGS)
    assert "exons found on reference contigs: decoy" in problem


def test_the_workflow_refuses_a_foreign_annotation_before_any_job(tmp_path, testdata):
    genes = write(tmp_path, "genes.gtf", GTF_EXON.format("scaffold_9", 10, 100, "+"))
    config = write_config(tmp_path, testdata, pmsignature={"annotation": genes}, pmsignature_ind={"enable": True},
                          resources_dir=str(tmp_path / "resources"))
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config)
    contigs = read_fai(str(testdata / "ref" / "genome.fa.fai"))
    assert "key 'pmsignature.annotation': " in str(refused.value)
    assert f"{genes}: none of its contigs (scaffold_9) is a reference contig ({contigs[0][0]}" in str(refused.value)
