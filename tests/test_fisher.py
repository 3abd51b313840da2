"""Tests of the clean-room `fisher` caller on small BAMs built here with known reads."""

from __future__ import annotations

import math
import os
import random
import stat
import subprocess
import sys

import pysam
import pytest
from scipy.stats import beta as beta_dist
from scipy.stats import fisher_exact

from genomon_smk.tools import fisher

GENOMON_PARAMS = "-q 20 -BQ0 -d 10000000 --ff UNMAP,SECONDARY,QCFAIL,DUP"
READ_LENGTH = 40


# ----------------------------------------------------------------------------- data builders

def make_reference(tmp_path, length=400, seed=7):
    """Random two-contig reference with .fai and .dict; returns (fasta path, {name: seq})."""
    rng = random.Random(seed)
    contigs = {name: "".join(rng.choice("ACGT") for _ in range(length)) for name in ("chr1", "chr2")}
    fasta = tmp_path / "ref.fa"
    with open(fasta, "w") as handle:
        for name, seq in contigs.items():
            handle.write(">%s\n%s\n" % (name, seq))
    subprocess.run(["samtools", "faidx", str(fasta)], check=True)
    subprocess.run(["samtools", "dict", "-o", str(tmp_path / "ref.dict"), str(fasta)], check=True)
    return str(fasta), contigs


class ReadSet:
    """Collects reads against a reference and writes a sorted, indexed BAM."""

    def __init__(self, contigs):
        self.contigs = contigs
        self.reads = []

    def add(self, contig, start0, seq, *, reverse=False, bq=30, mapq=60, flag=0, cigar=None,
            low_bq_offset=None):
        """Add one single-end read; low_bq_offset gives one base quality 10."""
        quals = [bq] * len(seq)
        if low_bq_offset is not None:
            quals[low_bq_offset] = 10
        self.reads.append(dict(contig=contig, start0=start0, seq=seq, reverse=reverse,
                               quals=quals, mapq=mapq, flag=flag,
                               cigar=cigar or [(0, len(seq))]))

    def snv(self, contig, pos, base, count, *, reverse=False, **kwargs):
        """count reads whose base at 1-based pos is `base` (other bases from the reference)."""
        ref = self.contigs[contig]
        for i in range(count):
            offset = 5 + (i * 7 + (3 if reverse else 0)) % 30
            start0 = pos - 1 - offset
            seq = ref[start0:pos - 1] + base + ref[pos:start0 + READ_LENGTH]
            kwargs_i = dict(kwargs)
            if kwargs_i.pop("low_bq", False):
                kwargs_i["low_bq_offset"] = offset
            self.add(contig, start0, seq, reverse=reverse, **kwargs_i)

    def ref_reads(self, contig, pos, forward, reverse, **kwargs):
        """Reference-matching reads over pos on each strand."""
        base = self.contigs[contig][pos - 1]
        self.snv(contig, pos, base, forward, **kwargs)
        self.snv(contig, pos, base, reverse, reverse=True, **kwargs)

    def insertion(self, contig, pos, inserted, count, *, reverse=False, **kwargs):
        """Reads with `inserted` after 1-based pos (20 aligned bases each side)."""
        ref = self.contigs[contig]
        start0 = pos - 20
        seq = ref[start0:pos] + inserted + ref[pos:pos + 20]
        for _ in range(count):
            self.add(contig, start0, seq, reverse=reverse,
                     cigar=[(0, 20), (1, len(inserted)), (0, 20)], **kwargs)

    def deletion(self, contig, pos, length, count, *, reverse=False, **kwargs):
        """Reads deleting `length` bases after 1-based pos."""
        ref = self.contigs[contig]
        start0 = pos - 20
        seq = ref[start0:pos] + ref[pos + length:pos + length + 20]
        for _ in range(count):
            self.add(contig, start0, seq, reverse=reverse,
                     cigar=[(0, 20), (2, length), (0, 20)], **kwargs)

    def write(self, path):
        """Write a coordinate-sorted indexed BAM."""
        names = list(self.contigs)
        header = {"HD": {"VN": "1.6", "SO": "coordinate"},
                  "SQ": [{"SN": n, "LN": len(s)} for n, s in self.contigs.items()]}
        order = sorted(range(len(self.reads)),
                       key=lambda i: (names.index(self.reads[i]["contig"]), self.reads[i]["start0"]))
        with pysam.AlignmentFile(str(path), "wb", header=header) as out:
            for rank, i in enumerate(order):
                read = self.reads[i]
                segment = pysam.AlignedSegment(out.header)
                segment.query_name = "r%d" % rank
                segment.reference_id = names.index(read["contig"])
                segment.reference_start = read["start0"]
                segment.query_sequence = read["seq"]
                segment.query_qualities = pysam.qualitystring_to_array(
                    "".join(chr(q + 33) for q in read["quals"]))
                segment.cigartuples = read["cigar"]
                segment.mapping_quality = read["mapq"]
                segment.flag = read["flag"] | (16 if read["reverse"] else 0)
                out.write(segment)
        pysam.index(str(path))
        return str(path)


def other_base(ref_base, skip=""):
    """A base different from ref_base (and from `skip`)."""
    return next(b for b in "ACGT" if b != ref_base.upper() and b not in skip)


def run_fisher(tmp_path, mode, bams, ref, extra=(), name="out.txt"):
    """Run `fisher` in-process; returns the output rows split into cells."""
    out = tmp_path / name
    argv = [mode, "-1", bams[0]] + (["-2", bams[1]] if mode == "comparison" else [])
    argv += ["-o", str(out), "-r", ref, "-s", "samtools", "-S", GENOMON_PARAMS] + list(extra)
    assert fisher.main(argv) == 0
    return [line.rstrip("\n").split("\t") for line in open(out) if line.strip()]


def rows_at(rows, pos):
    """Rows whose Start equals pos."""
    return [r for r in rows if r[1] == str(pos)]


LOOSE_PAIR = ["-d", "8", "-v", "4", "-m", "0.02", "-M", "0.1", "-f", "0.1", "-Q", "15"]


@pytest.fixture(scope="module")
def snv_pair(tmp_path_factory):
    """A tumor/normal pair with one somatic SNV at chr1:100 (1-based) and known counts.

    Tumor at 100: 12 ref fwd, 8 ref rev, 5 alt fwd, 3 alt rev, plus 3 alt fwd with BQ 10,
    2 alt with MAPQ 10 and 2 alt duplicates. Normal: 10 ref fwd, 10 ref rev, 1 alt fwd.
    """
    tmp_path = tmp_path_factory.mktemp("snv")
    ref, contigs = make_reference(tmp_path)
    pos = 100
    alt = other_base(contigs["chr1"][pos - 1])
    tumor, normal = ReadSet(contigs), ReadSet(contigs)
    tumor.ref_reads("chr1", pos, 12, 8)
    tumor.snv("chr1", pos, alt, 5)
    tumor.snv("chr1", pos, alt, 3, reverse=True)
    tumor.snv("chr1", pos, alt, 3, low_bq=True)
    tumor.snv("chr1", pos, alt, 2, mapq=10)
    tumor.snv("chr1", pos, alt, 2, flag=0x400)
    normal.ref_reads("chr1", pos, 10, 10)
    normal.snv("chr1", pos, alt, 1)
    bams = (tumor.write(tmp_path / "tumor.bam"), normal.write(tmp_path / "normal.bam"))
    return dict(tmp=tmp_path, ref=ref, contigs=contigs, pos=pos, alt=alt, bams=bams)


def expected_score(table):
    """−log10 of scipy's two-sided Fisher p with the tool's clamps, as %.3f."""
    p = fisher_exact(table).pvalue
    score = 60.0 if p < 1e-60 else 0.0 if p > 1 - 1e-10 else -math.log10(p)
    return "%.3f" % score


# Fisher's exact test, its score and the Beta posterior are tested in test_stats.py.


# ----------------------------------------------------------------------------- SNV end to end

def test_snv_row_columns_counts_and_formats(snv_pair):
    d = snv_pair
    rows = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR)
    assert len(rows) == 1
    row = rows[0]
    assert len(row) == len(fisher.PAIR_HEADER) == 18
    ref_base = d["contigs"]["chr1"][d["pos"] - 1]
    # low-BQ alt bases are dropped; MAPQ-10 and duplicate reads never reach the pileup
    t_ref, t_alt, n_ref, n_alt = 20, 8, 20, 1
    assert row[:5] == ["chr1", "100", "100", ref_base, d["alt"]]
    assert row[5:9] == [str(t_ref + t_alt), str(t_alt), str(n_ref + n_alt), str(n_alt)]
    assert row[9] == "%d,%d,%d,%d" % (12 + 5, 5, 8 + 3, 3)
    assert row[10] == "%d,%d,%d,%d" % (11, 1, 10, 0)
    acgt = {b: 0 for b in "ACGT"}
    acgt[ref_base], acgt[d["alt"]] = t_ref, t_alt
    assert row[11] == ",".join(str(acgt[b]) for b in "ACGT")
    assert row[13] == "%.3f" % (t_alt / (t_ref + t_alt))
    assert row[14] == "%.3f" % (5 / 8)
    assert row[15] == "%.3f" % (n_alt / (n_ref + n_alt))
    assert row[16] == "%.3f" % 1.0
    assert row[17] == expected_score([[t_ref, n_ref], [t_alt, n_alt]])


def test_base_quality_threshold_counts_low_bq_bases_when_lowered(snv_pair):
    d = snv_pair
    extra = [a if a != "15" else "5" for a in LOOSE_PAIR]
    row = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], extra)[0]
    assert row[6] == str(8 + 3)
    assert row[9] == "%d,%d,%d,%d" % (12 + 5 + 3, 5 + 3, 8 + 3, 3)


def test_mapq_and_flag_filters_come_from_samtools_params(snv_pair):
    d = snv_pair
    out = d["tmp"] / "params.txt"
    argv = ["comparison", "-1", d["bams"][0], "-2", d["bams"][1], "-o", str(out), "-r", d["ref"],
            "-S", "-q 5 -BQ0 -d 10000000 --ff UNMAP"] + LOOSE_PAIR
    assert fisher.main(argv) == 0
    row = open(out).readline().split("\t")
    assert row[6] == str(8 + 2 + 2)  # MAPQ-10 reads and duplicates now counted


@pytest.mark.parametrize("option, passing, failing", [
    ("-d", "21", "22"),        # normal depth 21 (tumor 28)
    ("-v", "8", "9"),          # 8 tumor alt reads
    ("-m", "0.285", repr(8 / 28)),  # tumor misRate 8/28 must be strictly greater
    ("-M", "0.048", repr(1 / 21)),  # normal misRate 1/21 must be strictly smaller
])
def test_pair_thresholds_on_both_sides(snv_pair, option, passing, failing):
    d = snv_pair
    def rows_with(value):
        extra = list(LOOSE_PAIR)
        if option in extra:
            extra[extra.index(option) + 1] = value
        else:
            extra += [option, value]
        return run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], extra)
    assert len(rows_with(passing)) == 1
    assert rows_with(failing) == []


def test_fisher_value_threshold_on_both_sides(snv_pair):
    d = snv_pair
    p = fisher_exact([[20, 20], [8, 1]]).pvalue
    score = -math.log10(p)
    def rows_with(fisher_value):
        extra = LOOSE_PAIR[:-4] + ["-f", repr(fisher_value), "-Q", "15"]
        return run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], extra)
    assert len(rows_with(10 ** -(score - 0.01))) == 1
    assert rows_with(10 ** -(score + 0.01)) == []


def test_single_mode_columns_posterior_and_threshold(snv_pair):
    d = snv_pair
    base = ["-d", "8", "-v", "4", "-m", "0.02", "-Q", "15"]
    b10 = beta_dist.ppf(0.1, 8 + 1, 20 + 1)
    rows = run_fisher(d["tmp"], "single", d["bams"][:1], d["ref"], base + ["-p", "%.6f" % (b10 - 1e-4)])
    assert len(rows) == 1
    row = rows[0]
    assert len(row) == len(fisher.SINGLE_HEADER) == 14
    assert row[5:8] == ["28", "8", "17,5,11,3"]
    assert row[9:11] == ["%.3f" % (8 / 28), "%.3f" % (5 / 8)]
    assert row[11:] == ["%.3f" % b10, "%.3f" % (9 / 30), "%.3f" % beta_dist.ppf(0.9, 9, 21)]
    assert run_fisher(d["tmp"], "single", d["bams"][:1], d["ref"],
                      base + ["-p", "%.6f" % (b10 + 1e-4)]) == []


def test_header_flag_writes_header(snv_pair):
    d = snv_pair
    rows = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR + ["-e"])
    assert rows[0] == fisher.PAIR_HEADER and len(rows) == 2
    rows = run_fisher(d["tmp"], "single", d["bams"][:1], d["ref"], ["-d", "8", "-e"])
    assert rows[0] == fisher.SINGLE_HEADER


# ----------------------------------------------------------------------------- indels

@pytest.fixture(scope="module")
def indel_pair(tmp_path_factory):
    """Insertion `GA` after chr2:60 (6 fwd + 4 rev), deletion of 3 bases after chr2:200
    (5 reads, one with a low-BQ anchor base); 20 reference reads at each in both samples,
    plus a strong SNV (150 alt vs 150 ref in the normal) at chr1:300 for the 60 clamp."""
    tmp_path = tmp_path_factory.mktemp("indel")
    ref, contigs = make_reference(tmp_path, seed=11)
    tumor, normal = ReadSet(contigs), ReadSet(contigs)
    for sample in (tumor, normal):
        sample.ref_reads("chr2", 60, 10, 10)
        sample.ref_reads("chr2", 200, 10, 10)
    tumor.insertion("chr2", 60, "GA", 6)
    tumor.insertion("chr2", 60, "GA", 4, reverse=True)
    tumor.deletion("chr2", 200, 3, 4)
    tumor.deletion("chr2", 200, 3, 1, low_bq_offset=19)
    alt = other_base(contigs["chr1"][299])
    tumor.snv("chr1", 300, alt, 150)
    normal.ref_reads("chr1", 300, 75, 75)
    bams = (tumor.write(tmp_path / "tumor.bam"), normal.write(tmp_path / "normal.bam"))
    return dict(tmp=tmp_path, ref=ref, contigs=contigs, bams=bams)


def test_indel_coordinates_and_columns(indel_pair):
    d = indel_pair
    rows = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR)
    ins = [r for r in rows if r[0] == "chr2" and r[3] == "-"]
    dele = [r for r in rows if r[0] == "chr2" and r[4] == "-"]
    assert len(ins) == 1 and len(dele) == 1
    seq2 = d["contigs"]["chr2"]
    assert ins[0][:5] == ["chr2", "60", "60", "-", "GA"]
    assert dele[0][:5] == ["chr2", "201", "203", seq2[200:203], "-"]
    # insertion: depth_indel 30 tumor (20 ref + 10 ins), 20 normal; bases = depth+,n+,depth-,n-
    assert ins[0][5:11] == ["30", "10", "20", "0", "16,6,14,4", "10,0,10,0"]
    assert ins[0][11:13] == ["---", "---"]
    assert ins[0][13:17] == ["%.3f" % (10 / 30), "%.3f" % 0.6, "0.000", "---"]
    assert ins[0][17] == expected_score([[20, 10], [20, 0]])
    # deletion: the low-BQ anchor base still counts in depth_indel (25 = 20 + 5)
    assert dele[0][5:9] == ["25", "5", "20", "0"]


def test_indel_single_mode_and_bq_independence(indel_pair):
    d = indel_pair
    rows = run_fisher(d["tmp"], "single", d["bams"][:1], d["ref"], ["-d", "8", "-m", "0.02", "-Q", "40"])
    dele = [r for r in rows if r[0] == "chr2" and r[4] == "-"]
    assert len(dele) == 1 and dele[0][5:7] == ["25", "5"]  # BQ 30 < 40: SNV counts gone, indel kept
    assert dele[0][8] == "---"
    assert dele[0][11] == "%.3f" % beta_dist.ppf(0.1, 6, 21)
    assert not [r for r in rows if r[0] == "chr1"]  # every base fails -Q 40: no SNV


def test_strong_snv_score_clamped_to_60(indel_pair):
    d = indel_pair
    rows = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR)
    snv = [r for r in rows if r[0] == "chr1"]
    assert len(snv) == 1 and snv[0][17] == "60.000"


# ----------------------------------------------------------------------------- regions, VCF

def test_region_file_equals_concatenated_region_runs(indel_pair):
    d = indel_pair
    regions = ["chr2:150-250", "chr1:1-400", "chr2:1-100"]
    expected = []
    for i, region in enumerate(regions):
        expected += run_fisher(d["tmp"], "comparison", d["bams"], d["ref"],
                               LOOSE_PAIR + ["-R", region], name="r%d.txt" % i)
    assert [r[0] for r in expected] == ["chr2", "chr1", "chr2"]
    region_file = d["tmp"] / "regions.txt"
    region_file.write_text("%s,%s\n%s\n" % tuple(regions))
    # a samtools wrapper that logs each call shows one tumor pileup per region (and one of the
    # pair at the sites it kept)
    log = d["tmp"] / "calls.log"
    wrapper = d["tmp"] / "samtools_wrapper.sh"
    wrapper.write_text('#!/bin/sh\necho "$@" >> %s\nexec samtools "$@"\n' % log)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    out = d["tmp"] / "L.txt"
    argv = ["comparison", "-1", d["bams"][0], "-2", d["bams"][1], "-o", str(out), "-r", d["ref"],
            "-s", str(wrapper), "-S", GENOMON_PARAMS, "-L", str(region_file)] + LOOSE_PAIR
    assert fisher.main(argv) == 0
    assert [line.rstrip("\n").split("\t") for line in open(out)] == expected
    runs = log.read_text().splitlines()
    assert [run.split(" -r ")[1].split()[0] for run in runs if d["bams"][1] not in run] == regions
    assert all(" -l " in run for run in runs if d["bams"][1] in run)


@pytest.mark.parametrize("dense_span", [0, 10 ** 9])
def test_the_pair_pileup_at_the_tumors_screened_sites_gives_the_whole_pileups_rows(indel_pair, snv_pair,
                                                                                 monkeypatch, dense_span):
    """The tumor's pileup screened first, then the pair's at the kept sites (dense_span 0), or
    the pair's whole pileup where the sites are dense (10**9): the same rows either way, and
    the same as one pileup of the pair over the same region given as -P positions of every
    base (the one-run path)."""
    monkeypatch.setattr(fisher, "DENSE_AFTER", 0)
    monkeypatch.setattr(fisher, "DENSE_SPAN", dense_span)
    for d in (indel_pair, snv_pair):
        every = d["tmp"] / "every.bed"
        every.write_text("".join(f"{name}\t0\t{len(seq)}\n" for name, seq in d["contigs"].items()))
        one_run = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR + ["-P", str(every)],
                             name="one.txt")
        assert one_run and run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR) == one_run


def with_nm_tags(bam, ref, out, zero_nm_at=None):
    """The BAM with the NM (and MD) tags samtools calmd computes; zero_nm_at: (contig, 1-based
    position) whose covering reads get a wrong NM:i:0 instead."""
    with open(out, "wb") as handle:
        subprocess.run(["samtools", "calmd", "-b", bam, ref], stdout=handle, stderr=subprocess.DEVNULL, check=True)
    if zero_nm_at:
        contig, position = zero_nm_at
        fixed = str(out) + ".tmp"
        with pysam.AlignmentFile(str(out)) as source, pysam.AlignmentFile(fixed, "wb", template=source) as sink:
            for read in source:
                if read.reference_name == contig and read.reference_start < position <= read.reference_end:
                    read.set_tag("NM", 0)
                sink.write(read)
        os.replace(fixed, out)
    pysam.index(str(out))
    return str(out)


def test_the_screen_of_the_tumors_edited_reads_gives_the_same_rows(indel_pair, snv_pair, monkeypatch):
    """--screen_edited_reads screens the tumor's reads with an edit (NM), a non-ACGT base or no NM
    tag: the same rows as the screen of every read, with bwa-like NM tags and without any; the
    screen relies on the tags (a variant read marked NM:i:0 is not screened, and its site is lost)."""
    monkeypatch.setattr(fisher, "DENSE_AFTER", 0)
    monkeypatch.setattr(fisher, "DENSE_SPAN", 0)  # never the dense fallback: the screen decides
    screened = "--screen_edited_reads"
    for d in (indel_pair, snv_pair):
        every_read = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR, name="all.txt")
        assert every_read
        untagged = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR + [screened], name="untagged.txt")
        assert untagged == every_read  # no NM tag: every read is screened
        tagged = (with_nm_tags(d["bams"][0], d["ref"], d["tmp"] / "tumor.nm.bam"), d["bams"][1])
        assert run_fisher(d["tmp"], "comparison", tagged, d["ref"], LOOSE_PAIR, name="t_all.txt") == every_read
        assert run_fisher(d["tmp"], "comparison", tagged, d["ref"], LOOSE_PAIR + [screened], name="t_edit.txt") == every_read
    d = snv_pair
    wrong = (with_nm_tags(d["bams"][0], d["ref"], d["tmp"] / "tumor.wrong.bam", ("chr1", d["pos"])), d["bams"][1])
    assert rows_at(run_fisher(d["tmp"], "comparison", wrong, d["ref"], LOOSE_PAIR, name="w_all.txt"), d["pos"])
    assert not rows_at(run_fisher(d["tmp"], "comparison", wrong, d["ref"], LOOSE_PAIR + [screened], name="w.txt"),
                       d["pos"])


def test_vcf_output_parses_with_pysam(indel_pair):
    d = indel_pair
    out = d["tmp"] / "out.vcf"
    argv = ["comparison", "-1", d["bams"][0], "-2", d["bams"][1], "-o", str(out), "-r", d["ref"],
            "-S", GENOMON_PARAMS, "-O", "vcf", "-a", "TUMOR", "-b", "NORMAL"] + LOOSE_PAIR
    assert fisher.main(argv) == 0
    with pysam.VariantFile(str(out)) as vcf:
        assert list(vcf.header.samples) == ["TUMOR", "NORMAL"]
        assert dict((k, v.length) for k, v in vcf.header.contigs.items()) == {"chr1": 400, "chr2": 400}
        records = list(vcf)
    seq2 = d["contigs"]["chr2"]
    by_pos = {(r.chrom, r.pos): r for r in records}
    ins = by_pos[("chr2", 60)]
    assert (ins.ref, ins.alts) == (seq2[59], (seq2[59] + "GA",))
    assert ins.samples["TUMOR"]["AD"] == 10 and ins.samples["NORMAL"]["SB"] is None
    dele = by_pos[("chr2", 200)]
    assert (dele.ref, dele.alts) == (seq2[199:203], (seq2[199],))
    assert by_pos[("chr1", 300)].info["FP"] == 60.0
    # single-sample VCF
    argv = ["single", "-1", d["bams"][0], "-o", str(out), "-r", d["ref"], "-S", GENOMON_PARAMS,
            "-O", "vcf", "-a", "TUMOR", "-d", "8"]
    assert fisher.main(argv) == 0
    with pysam.VariantFile(str(out)) as vcf:
        records = list(vcf)
    assert records and all(0 < r.info["B10"] < r.info["BM"] < r.info["B90"] < 1 for r in records)


def test_module_runs_as_script(snv_pair):
    d = snv_pair
    out = d["tmp"] / "module.txt"
    subprocess.run([sys.executable, "-m", "genomon_smk.tools.fisher", "comparison", "-1", d["bams"][0],
                    "-2", d["bams"][1], "-o", str(out), "-r", d["ref"], "-S", GENOMON_PARAMS]
                   + LOOSE_PAIR, check=True)
    assert len(open(out).read().splitlines()) == 1


def test_samtools_failure_is_an_error(snv_pair, tmp_path, capsys):
    d = snv_pair
    status = fisher.main(["single", "-1", str(tmp_path / "missing.bam"), "-o", str(tmp_path / "x"),
                          "-r", d["ref"]])
    assert status == 1
    assert "missing.bam" in capsys.readouterr().err


# ----------------------------------------------------------------------------- synthetic pileup lines

SYNTHETIC = fisher.Thresholds(min_depth=8, min_variant_read=2, base_quality=15,
                              min_allele_freq=0.02, max_allele_freq=0.1, fisher_score=0.0)


def pair_line(ref, tumor_bases, normal_bases="..........", pos=10):
    """A two-sample mpileup line with quality I for every base (tokens stripped for counting)."""
    def sample(bases):
        plain = "".join(c for c in bases if c not in "^$")  # tests use no ^ here
        stripped = plain
        for token in ("+1A", "-2AC", "+1a"):
            stripped = stripped.replace(token, "")
        return "%d\t%s\t%s" % (len(stripped), bases, "I" * len(stripped))
    return "chr1\t%d\t%s\t%s\t%s\n" % (pos, ref, sample(tumor_bases), sample(normal_bases))


def test_soft_masked_reference_gives_an_upper_case_ref_as_in_the_vcf_alt_ties_to_acgt_order():
    """A soft-masked (lower-case) reference base: the anno's Ref (result.txt's) is upper-case like
    the VCF's REF; upstream prints mpileup's letter as it is (a deliberate difference)."""
    calls = list(fisher.call_pileup_lines([pair_line("g", "......TTAAT")], True, SYNTHETIC))
    assert [(c.ref, c.alt) for c in calls] == [("G", "T")]
    assert fisher.format_anno(calls[0], True).split("\t")[3] == "G" == fisher.vcf_alleles(calls[0])[0]
    single = list(fisher.call_pileup_lines([pair_line("g", "......TTTTT")], False, SYNTHETIC))
    assert [(c.ref, c.alt) for c in single] == [("G", "T")]
    # A and T tied (3 each): A wins as first in A,C,G,T
    calls = list(fisher.call_pileup_lines([pair_line("g", "......TTAAAT")], True, SYNTHETIC))
    assert [(c.ref, c.alt, c.tumor.variant) for c in calls] == [("G", "A", 3)]


def test_reference_n_gives_indels_only_and_iupac_reference_is_skipped():
    tumor = ".+1A.+1A.+1a,,,,,,,TT"
    calls = list(fisher.call_pileup_lines([pair_line("N", tumor)], True, SYNTHETIC))
    assert [(c.kind, c.start, c.ref, c.alt, c.tumor.variant) for c in calls] == [("ins", 10, "-", "A", 3)]
    assert (calls[0].tumor.variant_forward, calls[0].tumor.depth, calls[0].tumor.depth_forward) == (2, 12, 5)
    assert list(fisher.call_pileup_lines([pair_line("R", tumor)], True, SYNTHETIC)) == []


def test_deletions_listed_before_insertions_after_the_snv():
    tumor = ".+1A.+1A.-2AC.-2AC..TTT"
    calls = list(fisher.call_pileup_lines([pair_line("C", tumor)], True, SYNTHETIC))
    assert [c.kind for c in calls] == ["snv", "del", "ins"]
    assert (calls[1].start, calls[1].end, calls[1].ref) == (11, 12, "AC")


def test_misaligned_qualities_or_zero_normal_depth_skip_the_column():
    bad = "chr1\t5\tA\t10\t....TTTTTT\tIIIII\t10\t..........\tIIIIIIIIII\n"
    zero = "chr1\t5\tA\t10\t....TTTTTT\tIIIIIIIIII\t0\t*\t*\n"
    assert list(fisher.call_pileup_lines([bad, zero], True, SYNTHETIC)) == []
    single = list(fisher.call_pileup_lines([zero], False, SYNTHETIC))
    assert [(c.alt, c.tumor.variant) for c in single] == [("T", 6)]


def test_positions_bed_restricts_the_pileup(indel_pair):
    d = indel_pair
    bed = d["tmp"] / "positions.bed"
    bed.write_text("chr1\t299\t300\nchr2\t199\t200\n")  # 1-based 300 and 200 (deletion anchor)
    rows = run_fisher(d["tmp"], "comparison", d["bams"], d["ref"], LOOSE_PAIR + ["-P", str(bed)])
    assert [(r[0], r[1], r[4]) for r in rows] == [("chr1", "300", rows[0][4]), ("chr2", "201", "-")]


def test_pair_indel_normal_rate_uses_raw_depth_column():
    tumor = ".+1A" * 8 + "." * 12
    normal = ".+1A" + "." * 18 + "*"  # raw depth 20, depth_indel 19 (the '*' is no letter)
    calls = list(fisher.call_pileup_lines([pair_line("C", tumor, normal)], True, SYNTHETIC))
    assert len(calls) == 1 and calls[0].kind == "ins"
    row = fisher.format_anno(calls[0], True).split("\t")
    assert row[5:9] == ["20", "8", "19", "1"]
    assert row[13:17] == ["0.400", "1.000", "%.3f" % (1 / 20), "1.000"]
