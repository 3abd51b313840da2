"""Unit tests of the clean-room gene-based annotator (genomon_smk.tools.annotate) on hand-made
transcripts, against the facts of annotation-spec.md §1 (classes, precedence, strings).

The genome: contig ``1`` (table ``chr1``) with
  GENEP NM_P  (+) exons 101-200, 301-400, 501-600, CDS 151..560 (c.1 = 151)
  GENEP NM_P0 (+) the same (a second transcript of the gene)
  GENEM NM_M  (-) exons 3101-3200, 3301-3400, 3501-3600, CDS 3141..3550 (c.1 = 3550)
  LINC1 NR_L  (+) non-coding, exons 6001-6100, 6201-6300
contig ``3``: GENEU NM_U (premature stop: unknown) and GENEV NM_V over the same exon 11-40;
contig ``MT`` (table ``chrM``): MTG NM_MT (+) exon 11-70 (vertebrate mitochondrial code).
Both coding genes of contig 1 read ATG GCT TGG (GAA CTG AAA CCC ...) ... TAA (70 codons).
"""

from __future__ import annotations

import gzip
import random
import subprocess
import sys

import pysam
import pytest

from genomon_smk.tools.annotate import COLUMNS, Annotator, builtin_table, read_gene_table
from genomon_smk.tools.annotate import cli
from genomon_smk.tools.annotate.genes import Transcript, _make
from genomon_smk.tools.annotate.sequence import revcomp

CODONS = ["ATG", "GCT", "TGG"] + [["GAA", "CTG", "AAA", "CCC"][i % 4] for i in range(66)] + ["TAA"]
MT_CODONS = ["ATG", "TGA", "ATA"] + ["GCT"] * 16 + ["AGA"]


def plus_genomic(n: int) -> int:
    """NM_P: genomic position of c.n."""
    return 150 + n if n <= 50 else 250 + n if n <= 150 else 350 + n


def minus_genomic(n: int) -> int:
    """NM_M: genomic position of c.n."""
    return 3551 - n if n <= 50 else 3451 - n if n <= 150 else 3351 - n


def genepred_row(name, gene, chrom, strand, exons, cds):
    """A refGene.txt row (with bin); exons/cds 1-based inclusive; cds None = non-coding."""
    tx_start, tx_end = exons[0][0] - 1, exons[-1][1]
    cds_start, cds_end = (cds[0] - 1, cds[1]) if cds else (tx_end, tx_end)
    return "\t".join(map(str, [0, name, chrom, strand, tx_start, tx_end, cds_start, cds_end,
                               len(exons), "".join(f"{s - 1}," for s, _ in exons),
                               "".join(f"{e}," for _, e in exons), 0, gene, "cmpl", "cmpl",
                               "0," * len(exons)]))


GENE_ROWS = [
    ("NM_P", "GENEP", "chr1", "+", [(101, 200), (301, 400), (501, 600)], (151, 560)),
    ("NM_P0", "GENEP", "chr1", "+", [(101, 200), (301, 400), (501, 600)], (151, 560)),
    ("NM_M", "GENEM", "chr1", "-", [(3101, 3200), (3301, 3400), (3501, 3600)], (3141, 3550)),
    ("NR_L", "LINC1", "chr1", "+", [(6001, 6100), (6201, 6300)], None),
    ("NM_U", "GENEU", "chr3", "+", [(11, 40)], (11, 40)),
    ("NM_V", "GENEV", "chr3", "+", [(11, 40)], (17, 40)),
    ("NM_MT", "MTG", "chrM", "+", [(11, 70)], (11, 70)),
    ("NM_HAP", "HAPG", "chr6_cox_hap2", "+", [(11, 70)], (11, 70)),
]


def make_genome() -> dict[str, list[str]]:
    rng = random.Random(7)
    genome = {name: [rng.choice("ACGT") for _ in range(size)]
              for name, size in (("1", 8000), ("3", 100), ("MT", 200))}
    one = genome["1"]

    def put(pos, base):
        one[pos - 1] = base

    cds = "".join(CODONS)
    for n, base in enumerate(cds, 1):
        put(plus_genomic(n), base)
        put(minus_genomic(n), revcomp(base))
    put(201, "G"), put(202, "T"), put(299, "A"), put(300, "G")      # NM_P intron 1 GT..AG
    put(3500, "C"), put(3499, "A")                                   # NM_M donor GT (minus)
    genome["3"][10:40] = list("ATGTAAATGGCTGCTGCTGCTGCTGCTTAA")
    genome["MT"][10:70] = list("".join(MT_CODONS))
    return genome


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("annotate")
    genome = make_genome()
    fasta = root / "ref.fa"
    fasta.write_text("".join(f">{name}\n{''.join(seq)}\n" for name, seq in genome.items()))
    pysam.faidx(str(fasta))
    table = root / "refGene.txt"
    table.write_text("".join(genepred_row(*row) + "\n" for row in GENE_ROWS))
    return {"fasta": fasta, "table": table, "genome": genome, "root": root}


@pytest.fixture(scope="module")
def annot(files):
    return Annotator(files["table"], files["fasta"])


def base(files, pos, chrom="1"):
    return files["genome"][chrom][pos - 1]


def snv(annot, files, pos, alt, chrom="1"):
    return annot.annotate(chrom, pos, pos, base(files, pos, chrom), alt)


# ----------------------------------------------------------------------------- SNV classes

@pytest.mark.parametrize("n, alt, kind, change", [
    (6, "C", "synonymous SNV", "c.T6C:p.A2A"),
    (4, "A", "nonsynonymous SNV", "c.G4A:p.A2T"),
    (8, "A", "stopgain", "c.G8A:p.W3X"),
    (208, "C", "stoploss", "c.T208C:p.X70Q"),
    (1, "G", "nonsynonymous SNV", "c.A1G:p.M1V"),          # start codon: no startloss in 2018
    (210, "G", "synonymous SNV", "c.A210G:p.X70X"),        # TAA -> TAG
])
def test_snv_classes_on_both_strands(annot, files, n, alt, kind, change):
    exon = 1 if n <= 50 else 2 if n <= 150 else 3
    func, gene, detail, exonic_func, aachange = snv(annot, files, plus_genomic(n), alt)
    assert (func, gene, detail, exonic_func) == ("exonic", "GENEP", "", kind)
    assert aachange == f"GENEP:NM_P:exon{exon}:{change},GENEP:NM_P0:exon{exon}:{change}"
    pos = minus_genomic(n)
    func, gene, detail, exonic_func, aachange = annot.annotate("1", pos, pos, base(files, pos),
                                                               revcomp(alt))
    assert (func, gene, exonic_func, aachange) == ("exonic", "GENEM", kind,
                                                   f"GENEM:NM_M:exon{exon}:{change}")


def test_reference_letter_comes_from_the_genome_not_the_input(annot, files):
    pos = plus_genomic(4)
    assert annot.annotate("1", pos, pos, "T", "A")[4].startswith("GENEP:NM_P:exon1:c.G4A:p.A2T")


# ----------------------------------------------------------------------------- splicing

def test_splice_sites_plus_strand(annot, files):
    assert snv(annot, files, 201, "A")[:4] == ("splicing", "GENEP",
                                               "NM_P:exon1:c.50+1G>A;NM_P0:exon1:c.50+1G>A", "")
    assert snv(annot, files, 202, "C")[2].startswith("NM_P:exon1:c.50+2T>C")
    assert snv(annot, files, 300, "C")[2].startswith("NM_P:exon2:c.51-1G>C")
    assert snv(annot, files, 299, "C")[2].startswith("NM_P:exon2:c.51-2A>C")
    assert snv(annot, files, 203, "C")[:3] == ("intronic", "GENEP", "")
    assert snv(annot, files, 298, "C")[0] == "intronic"


def test_splice_sites_minus_strand(annot, files):
    assert snv(annot, files, 3500, "T")[:3] == ("splicing", "GENEM", "NM_M:exon1:c.50+1G>A")
    ref = base(files, 3401)
    assert snv(annot, files, 3401, "A" if ref != "A" else "C")[2] == \
        f"NM_M:exon2:c.51-1{revcomp(ref)}>{revcomp('A' if ref != 'A' else 'C')}"
    assert snv(annot, files, 3402, "A" if base(files, 3402) != "A" else "C")[2].startswith(
        "NM_M:exon2:c.51-2")


def test_splice_indels_and_the_length_rule(annot, files):
    assert annot.annotate("1", 201, 202, "GT", "-")[:3] == (
        "splicing", "GENEP", "NM_P:exon1:r.spl;NM_P0:exon1:r.spl")
    assert annot.annotate("1", 201, 201, "-", "A")[2] == "NM_P:exon1:r.spl;NM_P0:exon1:r.spl"
    # a 6-base deletion over a middle exon's acceptor: exonic (no ;splicing beyond 2 bases)
    ref = "".join(base(files, p) for p in range(298, 304))
    func, gene, detail, kind, change = annot.annotate("1", 298, 303, ref, "-")
    assert (func, gene, kind) == ("exonic", "GENEP", "nonframeshift deletion")
    assert change.split(",")[0] == "GENEP:NM_P:exon2:c.51_53del:p.17_18del"
    # a long deletion wholly in the splice region + intron: splicing without details
    ref = "".join(base(files, p) for p in range(201, 206))
    assert annot.annotate("1", 201, 205, ref, "-")[:3] == ("splicing", "GENEP", "")


# ----------------------------------------------------------------------------- UTRs

def test_utr_notation_both_strands(annot, files):
    b = base(files, 140)
    assert snv(annot, files, 140, "A" if b != "A" else "C")[:3] == (
        "UTR5", "GENEP", f"NM_P:c.-11{b}>{'A' if b != 'A' else 'C'};"
                         f"NM_P0:c.-11{b}>{'A' if b != 'A' else 'C'}")
    b = base(files, 565)
    alt = "A" if b != "A" else "C"
    assert snv(annot, files, 565, alt)[2].startswith(f"NM_P:c.*5{b}>{alt}")
    b = base(files, 3560)
    assert snv(annot, files, 3560, "A" if b != "A" else "C")[:3] == (
        "UTR5", "GENEM", f"NM_M:c.-10{revcomp(b)}>{revcomp('A' if b != 'A' else 'C')}")
    b = base(files, 3130)
    assert snv(annot, files, 3130, "A" if b != "A" else "C")[:2] == ("UTR3", "GENEM")
    assert snv(annot, files, 3130, "A" if b != "A" else "C")[2].startswith("NM_M:c.*11")


def test_utr_indels(annot, files):
    # '+' strand UTR5 deletions print Alt's '-' (ANNOVAR's quirk, kept)
    assert annot.annotate("1", 140, 140, base(files, 140), "-")[2].startswith("NM_P:c.-11del-")
    ref = base(files, 565) + base(files, 566)
    assert annot.annotate("1", 565, 566, ref, "-")[2].startswith(f"NM_P:c.*5_*6del{ref}")
    assert annot.annotate("1", 140, 140, "-", "GA")[2].startswith("NM_P:c.-11_-10insGA")
    # '-' strand: an insertion at Start = cdsEnd (before c.1) is UTR5
    assert annot.annotate("1", 3550, 3550, "-", "T")[:3] == ("UTR5", "GENEM",
                                                             "NM_M:c.-1_1insA")
    # '+' strand: right after the stop codon is still exonic
    assert annot.annotate("1", 560, 560, "-", "T")[0] == "exonic"


# ----------------------------------------------------------------------------- indels

@pytest.mark.parametrize("after, seq, kind, change", [
    (4, "A", "frameshift insertion", "c.4_5insA:p.A2fs"),
    (4, "G", "frameshift insertion", "c.4dupG:p.A2fs"),
    (4, "C", "frameshift insertion", "c.5dupC:p.A2fs"),
    (6, "GGG", "nonframeshift insertion", "c.6_7insGGG:p.A2delinsAG"),
    (6, "TAA", "stopgain", "c.6_7insTAA:p.A2delinsAX"),
    (7, "A", "stopgain", "c.7_8insA:p.W3_E4delinsX"),
    (210, "GG", "frameshift insertion", "c.210_211insGG:p.X70delinsX"),
])
def test_insertions_plus_strand(annot, after, seq, kind, change):
    pos = plus_genomic(after)
    func, _, _, exonic_func, aachange = annot.annotate("1", pos, pos, "-", seq)
    exon = 1 if after <= 50 else 3
    assert (func, exonic_func) == ("exonic", kind)
    assert aachange.split(",")[0] == f"GENEP:NM_P:exon{exon}:{change}"


def test_insertion_between_codons_goes_to_the_next_codon_on_minus(annot):
    # between c.6 and c.7: genomic after 3544 (c.7); '+' gives p.A2delinsAG (codon 2)
    func, _, _, kind, change = annot.annotate("1", 3544, 3544, "-", "CCC")
    assert (func, kind, change) == ("exonic", "nonframeshift insertion",
                                    "GENEM:NM_M:exon1:c.6_7insGGG:p.W3delinsGW")


@pytest.mark.parametrize("first, last, kind, change", [
    (4, 4, "frameshift deletion", "exon1:c.4delG:p.A2fs"),
    (4, 6, "nonframeshift deletion", "exon1:c.4_6del:p.2_2del"),
    (4, 5, "frameshift deletion", "exon1:c.4_5del:p.A2fs"),
    (5, 10, "nonframeshift deletion", "exon1:c.5_10del:p.2_4del"),
    (209, 212, "frameshift deletion", "exon3:c.209_212del:p.X70fs"),
    (1, 3, "frameshift deletion", "wholegene"),
])
def test_deletions_both_strands(annot, files, first, last, kind, change):
    lo, hi = plus_genomic(first), plus_genomic(last)
    if last > 210:
        hi = plus_genomic(210) + last - 210
    ref = "".join(base(files, p) for p in range(lo, hi + 1))
    func, _, _, exonic_func, aachange = annot.annotate("1", lo, hi, ref, "-")
    assert (func, exonic_func) == ("exonic", kind)
    assert aachange.split(",")[0] == f"GENEP:NM_P:{change}"
    if last <= 210:
        lo, hi = minus_genomic(last), minus_genomic(first)
        ref = "".join(base(files, p) for p in range(lo, hi + 1))
        func, _, _, exonic_func, aachange = annot.annotate("1", lo, hi, ref, "-")
        assert (func, exonic_func, aachange) == ("exonic", kind, f"GENEM:NM_M:{change}")


def test_one_base_deletion_of_a_stop_codon_base(annot, files):
    pos = plus_genomic(209)            # TAA -> TA + next base
    func, _, _, kind, change = annot.annotate("1", pos, pos, "A", "-")
    nxt = base(files, pos + 2)
    assert kind == ("nonframeshift deletion" if nxt in "AG" else "stoploss")


def test_block_substitution(annot, files):
    lo = plus_genomic(4)
    ref = "".join(base(files, p) for p in range(lo, lo + 2))
    func, _, _, kind, change = annot.annotate("1", lo, lo + 1, ref, "TTTTT")
    assert (kind, change.split(",")[0]) == ("nonframeshift substitution",
                                            "GENEP:NM_P:exon1:c.4_5TTTTT")


# ----------------------------------------------------------------------------- ncRNA, neighbours

def test_non_coding_transcripts(annot, files):
    assert snv(annot, files, 6050, "A" if base(files, 6050) != "A" else "C")[:5] == (
        "ncRNA_exonic", "LINC1", "", "", "")
    assert snv(annot, files, 6150, "A" if base(files, 6150) != "A" else "C")[:2] == (
        "ncRNA_intronic", "LINC1")
    assert snv(annot, files, 6101, "A" if base(files, 6101) != "A" else "C")[:2] == (
        "ncRNA_splicing", "LINC1")


def test_intergenic_and_near_genes(annot, files):
    assert snv(annot, files, 2000, "A" if base(files, 2000) != "A" else "C")[:4] == (
        "intergenic", "GENEP;GENEM", "dist=1400;dist=1101", "")
    assert snv(annot, files, 90, "A" if base(files, 90) != "A" else "C")[:3] == (
        "upstream", "GENEP", "dist=11")
    assert snv(annot, files, 650, "A" if base(files, 650) != "A" else "C")[:3] == (
        "downstream", "GENEP", "dist=50")
    assert snv(annot, files, 3650, "A" if base(files, 3650) != "A" else "C")[:3] == (
        "upstream", "GENEM", "dist=50")
    assert snv(annot, files, 3050, "A" if base(files, 3050) != "A" else "C")[:3] == (
        "downstream", "GENEM", "dist=51")
    assert snv(annot, files, 7900, "A" if base(files, 7900) != "A" else "C")[:3] == (
        "intergenic", "LINC1;NONE", "dist=1600;dist=NONE")


def test_contig_names_with_and_without_chr_and_unknown_contigs(annot, files):
    pos = plus_genomic(4)
    assert annot.annotate("chr1", pos, pos, "G", "A") == annot.annotate("1", pos, pos, "G", "A")
    assert annot.annotate("GL000192.1", 5, 5, "A", "C")[:3] == (
        "intergenic", "NONE;NONE", "dist=NONE;dist=NONE")


def test_mitochondrial_contig_uses_the_mitochondrial_code(annot):
    # TGA is Trp in the vertebrate mitochondrial code (a premature stop in the standard code)
    assert annot.annotate("MT", 16, 16, "A", "G")[3:] == (
        "synonymous SNV", "MTG:NM_MT:exon1:c.A6G:p.W2W")
    assert annot.annotate("chrM", 11, 11, "A", "G")[4] == "MTG:NM_MT:exon1:c.A1G:p.M1V"


def test_several_genes_severity_and_unknown(annot):
    # NM_U has a premature stop (unknown); NM_V gives nonsynonymous: only NM_V listed
    func, gene, detail, kind, change = annot.annotate("3", 21, 21, "C", "A")
    assert (func, gene, kind, change) == ("exonic", "GENEU;GENEV", "nonsynonymous SNV",
                                          "GENEV:NM_V:exon1:c.C5A:p.A2D")
    # position 12 is only in NM_U's CDS: unknown
    assert annot.annotate("3", 12, 12, "T", "C")[3:] == ("unknown", "UNKNOWN")


def test_haplotype_contigs_skipped_and_non_coding_of_coding_genes_dropped(files):
    names = {t.name for t in read_gene_table(files["table"])}
    assert "NM_HAP" not in names and {"NM_P", "NR_L"} <= names
    rows = [_make("NR_X", "GENEP", "chr1", "+", 101, 600, 600, 600, [101], [600]),
            _make("NM_Y", "GENEP", "chr1", "+", 101, 600, 150, 560, [101], [600])]
    from genomon_smk.tools.annotate.genes import select_transcripts
    assert [t.name for t in select_transcripts(rows)] == ["NM_Y"]
    assert isinstance(rows[0], Transcript)


def test_invalid_input_lines_get_empty_columns(annot):
    assert annot.annotate("1", 154, 154, "N", "A") == ("",) * 5
    assert annot.annotate("1", 154, 155, "G", "A") == ("",) * 5
    assert annot.annotate("1", 154, 154, "-", "-") == ("",) * 5


# ----------------------------------------------------------------------------- GTF, CLI

def test_gtf_gives_the_same_annotation(files, annot):
    lines = []
    for name, gene, chrom, strand, exons, cds in GENE_ROWS[:4]:
        attrs = f'gene_id "{gene}"; transcript_id "{name}"; gene_name "{gene}";'
        lines.append(f"{chrom}\tt\ttranscript\t{exons[0][0]}\t{exons[-1][1]}\t.\t{strand}\t.\t{attrs}")
        for s, e in exons:
            lines.append(f"{chrom}\tt\texon\t{s}\t{e}\t.\t{strand}\t.\t{attrs}")
            if cds:     # GTF CDS rows exclude the stop codon
                stop = (cds[1] - 2, cds[1]) if strand == "+" else (cds[0], cds[0] + 2)
                lo, hi = max(s, cds[0]), min(e, cds[1])
                lo, hi = (lo, min(hi, stop[0] - 1)) if strand == "+" else (max(lo, stop[1] + 1), hi)
                if lo <= hi:
                    lines.append(f"{chrom}\tt\tCDS\t{lo}\t{hi}\t.\t{strand}\t0\t{attrs}")
        if cds:
            stop = (cds[1] - 2, cds[1]) if strand == "+" else (cds[0], cds[0] + 2)
            lines.append(f"{chrom}\tt\tstop_codon\t{stop[0]}\t{stop[1]}\t.\t{strand}\t0\t{attrs}")
    gtf = files["root"] / "genes.gtf"
    gtf.write_text("\n".join(lines) + "\n")
    from_gtf = Annotator(gtf, files["fasta"])
    for pos, alt in ((154, "A"), (558, "C"), (201, "A"), (3547, "T"), (2000, "A"), (6150, "A"),
                     (140, "A"), (3130, "A")):
        ref = base(files, pos)
        if ref != alt:
            assert from_gtf.annotate("1", pos, pos, ref, alt) == annot.annotate("1", pos, pos, ref, alt)


def test_cli_inserts_the_columns_after_alt_and_keeps_the_rest(files, tmp_path):
    source = tmp_path / "in.tsv"
    source.write_text("# Version: x\nChr\tStart\tEnd\tRef\tAlt\tdepth_tumor\tP-value\n"
                      f"chr1\t154\t154\tG\tA\t12\t3.5\n1\t2000\t2000\t{base(files, 2000)}\t-\t7\t\n"
                      "1\t154\t154\tN\tA\t1\t2\n")
    target = tmp_path / "out.tsv"
    subprocess.run([sys.executable, "-m", "genomon_smk.tools.annotate", "--genes",
                    str(files["table"]), "--reference", str(files["fasta"]), str(source),
                    str(target)], check=True, capture_output=True)
    lines = target.read_text().splitlines()
    assert lines[0] == "# Version: x"
    assert lines[1].split("\t") == ["Chr", "Start", "End", "Ref", "Alt", *COLUMNS, "depth_tumor",
                                    "P-value"]
    first = lines[2].split("\t")
    assert first[:7] == ["chr1", "154", "154", "G", "A", "exonic", "GENEP"]
    assert first[8] == "nonsynonymous SNV" and first[10:] == ["12", "3.5"]
    assert lines[3].split("\t")[5:8] == ["intergenic", "GENEP;GENEM", "dist=1400;dist=1101"]
    assert lines[3].split("\t")[10:] == ["7", ""]
    assert lines[4].split("\t")[5:10] == [""] * 5
    assert not (tmp_path / "out.tsv.partial").exists()


def test_cli_refuses_a_short_row_and_leaves_no_output(files, tmp_path):
    source = tmp_path / "in.tsv"
    source.write_text("1\t154\t154\tG\n")
    target = tmp_path / "out.tsv"
    run = subprocess.run([sys.executable, "-m", "genomon_smk.tools.annotate", "--genes",
                          str(files["table"]), "--reference", str(files["fasta"]), str(source),
                          str(target)], capture_output=True, text=True)
    assert run.returncode == 2 and "line 1" in run.stderr
    assert not target.exists() and not (tmp_path / "out.tsv.partial").exists()


def test_builtin_table_names():
    try:
        path = builtin_table("GRCh37")
    except FileNotFoundError:
        pytest.skip("annot_utils is not installed in .venv-sv")
    assert path.name == "refGene.txt.gz" and path.parent.name == "hg19"
    with pytest.raises(KeyError):
        builtin_table("hg17")


@pytest.mark.parametrize("vcf, genomon", [
    ((100, "A", "T"), (100, 100, "A", "T")),
    ((100, "A", "AGG"), (100, 100, "-", "GG")),
    ((100, "AGG", "A"), (101, 102, "GG", "-")),
    ((100, "ACT", "AGT"), (101, 101, "C", "G")),
    ((100, "AC", "TG"), (100, 101, "AC", "TG")),
])
def test_vcf_alleles_in_genomon_notation(vcf, genomon):
    from genomon_smk.tools.annotate.annotator import from_vcf
    assert from_vcf(*vcf) == genomon


def test_annotate_vcf_equals_genomon_notation(annot):
    assert annot.annotate_vcf("1", 153, "GG", "G") == annot.annotate("1", 154, 154, "G", "-")


def test_exonic_in_one_gene_splicing_in_another(files):
    """`exonic;splicing` is exonic in one gene and in another's splice region, for <= 2 bases."""
    rows = read_gene_table(files["table"]) + [
        _make("NM_Z", "GENEZ", "chr1", "+", 195, 215, 194, 215, [195], [215])]
    annot = Annotator(rows, files["fasta"])
    func, gene, detail, _, aachange = snv(annot, files, 201, "A")
    assert (func, gene, detail) == ("exonic;splicing", "GENEZ;GENEP",
                                    "NM_P:exon1:c.50+1G>A;NM_P0:exon1:c.50+1G>A")
    assert aachange.startswith("GENEZ:NM_Z:exon1:c.G7A") or aachange == "UNKNOWN"
    ref = "".join(base(files, p) for p in range(201, 204))
    assert annot.annotate("1", 201, 203, ref, "-")[:3] == ("exonic", "GENEZ", "")


def test_several_near_genes_share_one_distance_and_far_neighbours_are_none():
    rows = [_make("NM_A", "GENEA", "chr2", "+", 5001, 6000, 5100, 5900, [5001], [6000]),
            _make("NM_B", "GENEB", "chr2", "+", 5201, 6000, 5300, 5900, [5201], [6000]),
            _make("NM_C", "GENEC", "chr2", "+", 3001, 4600, 3100, 4500, [3001], [4600]),
            _make("NM_D", "GENED", "chr2", "+", 9_000_001, 9_001_000, 9_000_100, 9_000_900,
                  [9_000_001], [9_001_000])]
    annot = Annotator(rows)
    assert annot.annotate("2", 4700, 4700, "A", "C")[:3] == (
        "upstream;downstream", "GENEA;GENEB;GENEC", "dist=301;dist=100")
    assert annot.annotate("2", 4900, 4900, "A", "C")[:3] == (
        "upstream;downstream", "GENEA;GENEB;GENEC", "dist=101;dist=300")
    assert annot.annotate("2", 5100, 5100, "A", "C")[:3] == ("UTR5", "GENEA", "NM_A:c.-1A>C")
    # GENED is 9 Mb away: beyond the 20 bins of 100 kb searched for neighbours
    assert annot.annotate("2", 10_000, 10_000, "A", "C")[:3] == (
        "intergenic", "GENEA;NONE", "dist=4000;dist=NONE")
    assert annot.annotate("2", 8_950_000, 8_950_000, "A", "C")[:3] == (
        "intergenic", "NONE;GENED", "dist=NONE;dist=50001")


VT_CHR20 = "/usr/share/doc/vt/examples/ref/20.fa.gz"


def test_gnas_r201c_on_grch37_chr20_with_hg19_refgene(tmp_path):
    """The issue's example: chr20 57484420 C>T is GNAS exonic nonsynonymous SNV p.R201C."""
    import gzip
    import os
    try:
        table = builtin_table("hg19")
    except FileNotFoundError:
        pytest.skip("annot_utils is not installed in .venv-sv")
    if not os.path.exists(VT_CHR20):
        pytest.skip("vt-examples' chr20 FASTA is not installed")
    chr20 = tmp_path / "refGene.chr20.txt"
    with gzip.open(table, "rt") as source:
        chr20.write_text("".join(line for line in source if line.split("\t", 3)[2] == "chr20"))
    func, gene, detail, kind, aachange = Annotator(chr20, VT_CHR20).annotate(
        "20", 57484420, 57484420, "C", "T")
    assert (func, gene, detail, kind) == ("exonic", "GNAS", "", "nonsynonymous SNV")
    assert "GNAS:NM_000516:exon8:c.C601T:p.R201C" in aachange.split(",")


def test_genepred_variants_without_bin_and_knowngene(tmp_path):
    with_bin = genepred_row("NM_P", "GENEP", "chr1", "+", [(101, 200), (301, 400)], (151, 350))
    no_bin = with_bin.split("\t", 1)[1]
    fields = no_bin.split("\t")
    known = "\t".join(["uc001abc.1"] + fields[1:10] + ["P12345", "uc001abc.1"])
    for text, gene in ((with_bin, "GENEP"), (no_bin, "GENEP"), (known, "uc001abc.1")):
        path = tmp_path / "table.txt"
        path.write_text(text + "\n")
        [t] = read_gene_table(path)
        assert (t.gene, t.chrom, t.strand, t.tx_start, t.tx_end, t.cds_start, t.cds_end,
                t.exon_starts, t.exon_ends, t.coding) == (
            gene, "1", "+", 101, 400, 151, 350, [101, 301], [200, 400], True)
    path.write_text("NM_P\tchr1\t+\t100\n")
    from genomon_smk.tools.annotate.genes import GeneTableError
    with pytest.raises(GeneTableError, match="line 1"):
        read_gene_table(path)


def test_a_deletion_across_a_junction_uses_its_exonic_part(annot, files):
    """Only the exonic base of 200..202 (c.50) is deleted: the one-base rule, c.50delX."""
    ref = "".join(base(files, p) for p in range(200, 203))
    func, _, _, kind, change = annot.annotate("1", 200, 202, ref, "-")
    assert func == "exonic" and kind in ("frameshift deletion", "stopgain", "stoploss")
    assert change.split(",")[0].startswith(f"GENEP:NM_P:exon1:c.50del{base(files, 200)}:p.")


def test_a_gff3_or_empty_table_is_refused(tmp_path):
    from genomon_smk.tools.annotate.genes import GeneTableError
    gff3 = tmp_path / "genes.gff3"
    gff3.write_text("##gff-version 3\nchr1\tt\texon\t101\t200\t.\t+\t.\tParent=transcript:NM_P\n")
    with pytest.raises(GeneTableError, match="no transcripts"):
        read_gene_table(gff3)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(GeneTableError, match="no transcripts"):
        read_gene_table(empty)


def test_cli_names_a_plain_gzip_reference_as_such(files, tmp_path, capsys):
    """samtools faidx cannot index a plain gzip FASTA: the CLI says to give it uncompressed or
    bgzip-compressed (not `samtools faidx X.fa.gz`, which would fail)."""
    plain = tmp_path / "ref.fa.gz"
    with gzip.open(plain, "wb") as out:
        out.write(files["fasta"].read_bytes())
    source = tmp_path / "in.tsv"
    source.write_text("Chr\tStart\tEnd\tRef\tAlt\n")
    assert cli.main(["--genes", str(files["table"]), "--reference", str(plain), str(source),
                     str(tmp_path / "out.tsv")]) == 2
    error = capsys.readouterr().err
    assert "is gzip-compressed" in error and "uncompressed or bgzip-compressed" in error, error
    assert "(samtools faidx" not in error
    bgzipped = tmp_path / "ref.bgz.fa.gz"
    pysam.tabix_compress(str(files["fasta"]), str(bgzipped))
    assert not cli.plain_gzip(str(bgzipped)) and not cli.plain_gzip(str(files["fasta"])) and cli.plain_gzip(str(plain))


def test_cli_warns_when_a_built_in_table_is_another_genomes(files, tmp_path):
    """--genes hg19 on a reference whose chromosome 1 is not hg19's: the workflow refuses it; the
    CLI warns (the same chromosome-1 lengths)."""
    fai = tmp_path / "genome.fa.fai"
    fai.write_text("chr1\t1000\t6\t60\t61\n")
    warning = cli.other_genome("hg19", str(fai))
    assert "hg19 is the refGene table of a genome whose chromosome 1 is 249,250,621 bp, but its chromosome 1 " \
           "is 1,000 bp" in warning
    fai.write_text("chr1\t249250621\t6\t60\t61\n")
    assert cli.other_genome("GRCh37", str(fai)) is None
    fai.write_text("chrX\t1000\t6\t60\t61\n")
    assert "no chromosome 1" in cli.other_genome("mm10", str(fai))
