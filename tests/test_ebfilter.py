"""EBFilter end to end on tiny BAMs with known per-strand counts, plus its counting rules."""

import os
import random
import subprocess
import sys

import pysam
import pytest

from genomon_smk.tools import betabinom, ebfilter
from genomon_smk.tools.ebfilter import VariantKey
from genomon_smk.tools.mpileup import tokenize_read_bases

CONTIG = "chr1"
CONTIG_LENGTH = 3000
READ_LENGTH = 50
OFFSET = 24  # the site is the 25th aligned base of every read built here
CONTROLS = 8  # with <= 5 alt-free controls the penalised fit cannot give high scores (see report)


# --- counting rules -------------------------------------------------------------------------

def test_count_snv_uses_base_quality_and_case():
    quals = "".join(chr(33 + q) for q in (30, 30, 10, 30, 30, 14, 15, 30))
    # passing BQ >= 15: A a t t N n (T has 10; '*' is no base)
    assert ebfilter.count_snv("AaTtt*Nn", quals, "T", 15) == (2, 0, 4, 2)
    assert ebfilter.count_snv("AaTtt*Nn", quals, "A", 15) == (2, 1, 4, 1)
    assert ebfilter.count_snv("AaTtt*Nn", quals, "t", 0) == (3, 1, 4, 2)


def test_indel_counting_tumor_exact_controls_any():
    symbols, indels = tokenize_read_bases("A+2ATa+2atC+3GGGc-2NNg-2nnT")
    insertion = VariantKey("ins", "AT")
    deletion = VariantKey("del", "CC")
    assert ebfilter.count_indel(symbols, indels, insertion, any_sequence=False) == (3, 1, 3, 1)
    assert ebfilter.count_indel(symbols, indels, insertion, any_sequence=True) == (3, 2, 3, 1)
    assert ebfilter.count_indel(symbols, indels, deletion, any_sequence=False) == (3, 1, 3, 1)
    assert ebfilter.count_indel(symbols, indels, VariantKey("del", "CCC"), any_sequence=False) == (3, 0, 3, 0)
    assert ebfilter.count_indel(symbols, indels, VariantKey("del", "CCC"), any_sequence=True) == (3, 1, 3, 1)


def test_count_sample_indels_through_shared_tokenizer():
    # '^+' and '^-' are read starts with MAPQ characters, not indels; '$' ends a read
    read_bases, quals = "^+A$c+2AGg-3NNNt^-*^$G$", "IIIIII"
    insertion, deletion = VariantKey("ins", "AG"), VariantKey("del", "CCC")
    assert ebfilter.count_sample("6", read_bases, quals, insertion, 15, is_control=False) == (2, 1, 3, 0)
    assert ebfilter.count_sample("6", read_bases, quals, deletion, 15, is_control=False) == (2, 1, 3, 0)
    assert ebfilter.count_sample("6", read_bases, quals, VariantKey("del", "CC"), 15,
                                 is_control=False) == (2, 0, 3, 0)
    assert ebfilter.count_sample("6", read_bases, quals, VariantKey("del", "CC"), 15,
                                 is_control=True) == (2, 1, 3, 0)


@pytest.mark.parametrize("ref, alt, key, pos", [
    ("A", "T", VariantKey("snv", "T"), 100), ("-", "at", VariantKey("ins", "AT"), 100),
    ("CG", "-", VariantKey("del", "CG"), 99), ("AC", "GT", None, 100), ("A", "-", VariantKey("del", "A"), 99),
])
def test_anno_classification_and_position(ref, alt, key, pos):
    assert ebfilter.classify_anno_variant(ref, alt) == key
    assert ebfilter.anno_pileup_position(100, key) == pos


def test_vcf_classification():
    assert ebfilter.classify_vcf_variant("A", ("T",)) == VariantKey("snv", "T")
    assert ebfilter.classify_vcf_variant("A", ("ACG",)) == VariantKey("ins", "CG")
    assert ebfilter.classify_vcf_variant("ACG", ("A",)) == VariantKey("del", "CG")
    assert ebfilter.classify_vcf_variant("AC", ("GT",)) is None
    assert ebfilter.classify_vcf_variant("A", ("T", "G")) is None


def test_region_parsing_and_windows():
    assert ebfilter.parse_region("1:10,000-20000") == ("1", 10000, 20000)
    assert ebfilter.parse_region("MT")[0] == "MT"
    assert ebfilter.in_region("1", 20000, ("1", 10000, 20000))
    assert not ebfilter.in_region("1", 20001, ("1", 10000, 20000))
    assert not ebfilter.in_region("2", 15000, ("1", 10000, 20000))
    assert ebfilter.plan_windows([5, 1, 300, 90, 1000], 100) == [(1, 90), (300, 300), (1000, 1000)]


# --- tiny BAMs ------------------------------------------------------------------------------

def reference_sequence():
    rng = random.Random(11)
    return "".join(rng.choice("ACGT") for _ in range(CONTIG_LENGTH))


def read_at(ref, pos, reverse, variant=None, mapq=60, site_bq=30, name="r"):
    """An unpaired read whose 25th aligned base is 1-based ``pos``.

    variant: None (reference), ('snv', base), ('ins', letters) after pos, ('del', length) after pos.
    """
    start = pos - 1 - OFFSET
    window = ref[start:start + READ_LENGTH + 10]
    if variant is None:
        seq, cigar = window[:READ_LENGTH], [(0, READ_LENGTH)]
    elif variant[0] == "snv":
        seq, cigar = window[:OFFSET] + variant[1] + window[OFFSET + 1:READ_LENGTH], [(0, READ_LENGTH)]
    elif variant[0] == "ins":
        tail = READ_LENGTH - OFFSET - 1 - len(variant[1])
        seq = window[:OFFSET + 1] + variant[1] + window[OFFSET + 1:OFFSET + 1 + tail]
        cigar = [(0, OFFSET + 1), (1, len(variant[1])), (0, tail)]
    else:
        length = variant[1]
        tail = READ_LENGTH - OFFSET - 1
        seq = window[:OFFSET + 1] + window[OFFSET + 1 + length:OFFSET + 1 + length + tail]
        cigar = [(0, OFFSET + 1), (2, length), (0, tail)]
    read = pysam.AlignedSegment()
    read.query_name = name
    read.flag = 16 if reverse else 0
    read.reference_id = 0
    read.reference_start = start
    read.mapping_quality = mapq
    read.cigar = cigar
    read.query_sequence = seq
    quals = [30] * len(seq)
    quals[OFFSET] = site_bq
    read.query_qualities = pysam.qualitystring_to_array("".join(chr(33 + q) for q in quals))
    return read


def write_bam(path, reads, index=True):
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": CONTIG, "LN": CONTIG_LENGTH}]}
    reads = sorted(reads, key=lambda r: r.reference_start)
    with pysam.AlignmentFile(str(path), "wb", header=header) as bam:
        for i, read in enumerate(reads):
            read.query_name = f"read{i}"
            bam.write(read)
    if index:
        pysam.index(str(path))
    return str(path)


def strand_reads(ref, pos, variant, plus, minus, **kwargs):
    """``plus``/``minus`` = (reference reads, variant reads) on that strand."""
    reads = []
    for reverse, (n_ref, n_alt) in ((False, plus), (True, minus)):
        reads += [read_at(ref, pos, reverse, None, **kwargs) for _ in range(n_ref)]
        reads += [read_at(ref, pos, reverse, variant, **kwargs) for _ in range(n_alt)]
    return reads


# Sites: (name, anno Start, Ref, Alt builder, tumor reads, per-control reads, expected counts).
SNV_CLEAN, SNV_PANEL, INSERTION, INS_PANEL_OTHER, DELETION, LOW_BQ, LOW_MAPQ, COMPLEX = (
    300, 600, 900, 1200, 1500, 1800, 2100, 2400)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Tumor + 4 controls and an anno target; returns paths and the expected counts per row."""
    tmp = tmp_path_factory.mktemp("eb")
    ref = reference_sequence()
    alt_of = {pos: "ACGT"[("ACGT".index(ref[pos - 1]) + 1) % 4] for pos in (SNV_CLEAN, SNV_PANEL, LOW_BQ, LOW_MAPQ)}
    tumor, controls = [], [[] for _ in range(CONTROLS)]
    expected = {}  # anno row -> (tumor counts, control counts)

    def add(row, tumor_reads, control_reads, tumor_counts, control_counts):
        tumor.extend(tumor_reads)
        for i in range(CONTROLS):
            controls[i].extend(control_reads(i))
        expected[row] = (tumor_counts, control_counts)

    # clean SNV: tumor 14/6 and 15/5, controls carry no alt
    pos = SNV_CLEAN
    add(f"{CONTIG}\t{pos}\t{pos}\t{ref[pos-1]}\t{alt_of[pos]}",
        strand_reads(ref, pos, ("snv", alt_of[pos]), (14, 6), (15, 5)),
        lambda i: strand_reads(ref, pos, None, (22 + i % 4, 0), (20 + i % 4, 0)),
        (20, 6, 20, 5), [(22 + i % 4, 0, 20 + i % 4, 0) for i in range(CONTROLS)])
    # SNV the panel also carries at ~10%
    pos = SNV_PANEL
    add(f"{CONTIG}\t{pos}\t{pos}\t{ref[pos-1]}\t{alt_of[pos]}",
        strand_reads(ref, pos, ("snv", alt_of[pos]), (17, 3), (18, 2)),
        lambda i: strand_reads(ref, pos, ("snv", alt_of[pos]), (18, 2 + i % 2), (19 - i, 2)),
        (20, 3, 20, 2), [(20 + i % 2, 2 + i % 2, 21 - i, 2) for i in range(CONTROLS)])
    # insertion +AT after pos; tumor also has 2 reads with +GG that must not count
    pos = INSERTION
    add(f"{CONTIG}\t{pos}\t{pos}\t-\tAT",
        strand_reads(ref, pos, ("ins", "AT"), (12, 5), (13, 4)) + strand_reads(ref, pos, ("ins", "GG"), (0, 1), (0, 1)),
        lambda i: strand_reads(ref, pos, None, (24, 0), (25, 0)),
        (18, 5, 18, 4), [(24, 0, 25, 0)] * CONTROLS)
    # insertion +AT, the panel carries a DIFFERENT insertion (+GGG): controls count it anyway
    pos = INS_PANEL_OTHER
    add(f"{CONTIG}\t{pos}\t{pos}\t-\tAT",
        strand_reads(ref, pos, ("ins", "AT"), (15, 4), (15, 4)),
        lambda i: strand_reads(ref, pos, ("ins", "GGG"), (16, 3), (17, 2)),
        (19, 4, 19, 4), [(19, 3, 19, 2)] * CONTROLS)
    # deletion of the 2 bases after pos: anno Start = pos + 1; a 3-base deletion does not count
    pos = DELETION
    add(f"{CONTIG}\t{pos + 1}\t{pos + 2}\t{ref[pos:pos + 2]}\t-",
        strand_reads(ref, pos, ("del", 2), (14, 6), (16, 4)) + strand_reads(ref, pos, ("del", 3), (0, 1), (0, 0)),
        lambda i: strand_reads(ref, pos, None, (24, 0), (24, 0)) + strand_reads(ref, pos, ("del", 1), (0, i % 4 == 0), (0, 0)),
        (21, 6, 20, 4), [(24 + (i % 4 == 0), int(i % 4 == 0), 24, 0) for i in range(CONTROLS)])
    # SNV whose alt bases have BQ 10 in 4 of the 6 forward alt reads (below -Q 15)
    pos = LOW_BQ
    low_bq = [read_at(ref, pos, False, ("snv", alt_of[pos])) for _ in range(4)]
    for read in low_bq:
        quals = read.query_qualities
        quals[OFFSET] = 10
        read.query_qualities = quals
    add(f"{CONTIG}\t{pos}\t{pos}\t{ref[pos-1]}\t{alt_of[pos]}",
        strand_reads(ref, pos, ("snv", alt_of[pos]), (14, 2), (15, 5)) + low_bq,
        lambda i: strand_reads(ref, pos, None, (12, 0), (12, 0)),
        (16, 2, 20, 5), [(12, 0, 12, 0)] * CONTROLS)
    # SNV whose reference reads partly have MAPQ 10 (below -q 20): depth drops, alt stays
    pos = LOW_MAPQ
    add(f"{CONTIG}\t{pos}\t{pos}\t{ref[pos-1]}\t{alt_of[pos]}",
        strand_reads(ref, pos, ("snv", alt_of[pos]), (10, 5), (10, 5))
        + strand_reads(ref, pos, None, (10, 0), (10, 0), mapq=10),
        lambda i: strand_reads(ref, pos, None, (12, 0), (12, 0)) + strand_reads(ref, pos, ("snv", alt_of[pos]), (0, 3), (0, 3), mapq=10),
        (15, 5, 15, 5), [(12, 0, 12, 0)] * CONTROLS)
    # complex substitution: not scored
    pos = COMPLEX
    add(f"{CONTIG}\t{pos}\t{pos + 1}\tAC\tGT", strand_reads(ref, pos, None, (5, 0), (5, 0)),
        lambda i: [], None, None)

    tumor_bam = write_bam(tmp / "tumor.bam", tumor)
    control_bams = [write_bam(tmp / f"control{i}.bam", reads) for i, reads in enumerate(controls)]
    control_list = tmp / "controls.txt"
    control_list.write_text("".join(f"{bam}\n" for bam in control_bams))
    rows = list(expected)
    target = tmp / "target.txt"
    target.write_text("".join(f"{row}\tX\t{i}\n" for i, row in enumerate(rows)))
    return {"tmp": tmp, "ref": ref, "tumor": tumor_bam, "controls": control_bams,
            "control_list": str(control_list), "target": str(target), "rows": rows, "expected": expected,
            "alt_of": alt_of}


def expected_score(counts):
    tumor_counts, control_counts = counts
    if tumor_counts is None:
        return "."
    return betabinom.format_score(ebfilter.score_counts(tumor_counts, control_counts))


def run_eb(dataset, out_name, *options, target=None):
    out = dataset["tmp"] / out_name
    argv = ["-f", "anno", *options, target or dataset["target"], dataset["tumor"], dataset["control_list"], str(out)]
    assert ebfilter.main(argv) == 0
    return out.read_text().splitlines()


def test_pileup_counts_match_the_reads_we_wrote(dataset, tmp_path):
    """The raw counting of each sample at each site equals what the BAMs were built with."""
    bams = [dataset["tumor"], *dataset["controls"]]
    for row, (tumor_counts, control_counts) in dataset["expected"].items():
        if tumor_counts is None:
            continue
        chrom, start, _, ref, alt = row.split("\t")[:5]
        key = ebfilter.classify_anno_variant(ref, alt)
        pos = ebfilter.anno_pileup_position(int(start), key)
        [(found_pos, fields)] = list(ebfilter.pileup_sites(chrom, [pos], bams, 20, 15,
                                                           "UNMAP,SECONDARY,QCFAIL,DUP", 0, str(tmp_path)))
        assert found_pos == pos
        counts = [ebfilter.count_sample(*fields[3 * i:3 * i + 3], key, 15, is_control=i > 0) for i in range(len(bams))]
        assert counts[0] == tumor_counts, row
        assert counts[1:] == control_counts, row


def test_anno_output_exact(dataset):
    lines = run_eb(dataset, "out.txt", "-q", "20", "-Q", "15", "--ff", "UNMAP,SECONDARY,QCFAIL,DUP")
    assert len(lines) == len(dataset["rows"])
    for i, (line, row) in enumerate(zip(lines, dataset["rows"])):
        assert line == f"{row}\tX\t{i}\t{expected_score(dataset['expected'][row])}"
    scores = {int(line.split("\t")[1]): line.split("\t")[-1] for line in lines}
    # clean sites score high, sites the panel also carries score low
    assert float(scores[SNV_CLEAN]) > 4 and float(scores[INSERTION]) > 4
    assert float(scores[DELETION + 1]) > 3  # 2 of 8 controls carry one (other-length) deletion read
    assert float(scores[SNV_PANEL]) < 2 and float(scores[INS_PANEL_OTHER]) < 2
    assert scores[COMPLEX] == "."


def test_quality_filters_change_the_score(dataset):
    """Without the BQ/MAPQ filters the low-quality reads count and the scores change."""
    strict = {int(line.split("\t")[1]): line.split("\t")[-1] for line in run_eb(dataset, "strict.txt")}
    loose = {int(line.split("\t")[1]): line.split("\t")[-1] for line in run_eb(dataset, "loose.txt", "-q", "0", "-Q", "0")}
    # 4 more forward alt reads at LOW_BQ; MAPQ-10 reads add tumor depth and panel alt reads
    low_bq_loose = ebfilter.score_counts((20, 6, 20, 5), [(12, 0, 12, 0)] * CONTROLS)
    low_mapq_loose = ebfilter.score_counts((25, 5, 25, 5), [(15, 3, 15, 3)] * CONTROLS)
    assert loose[LOW_BQ] == betabinom.format_score(low_bq_loose) != strict[LOW_BQ]
    assert loose[LOW_MAPQ] == betabinom.format_score(low_mapq_loose) != strict[LOW_MAPQ]
    assert float(loose[LOW_MAPQ]) < float(strict[LOW_MAPQ])
    assert loose[SNV_CLEAN] == strict[SNV_CLEAN]


def test_region_drops_rows_using_deletion_position(dataset):
    lines = run_eb(dataset, "region1.txt", "--loption", "--region", f"{CONTIG}:1-{DELETION}")
    starts = [int(line.split("\t")[1]) for line in lines]
    # the deletion row (Start = DELETION + 1) is piled up at DELETION: inside the region
    assert starts == [SNV_CLEAN, SNV_PANEL, INSERTION, INS_PANEL_OTHER, DELETION + 1]
    lines2 = run_eb(dataset, "region2.txt", "--loption", "--region", f"{CONTIG}:{DELETION + 1}-{CONTIG_LENGTH}")
    assert [int(line.split("\t")[1]) for line in lines2] == [LOW_BQ, LOW_MAPQ, COMPLEX]
    # the scores do not depend on the windowing
    full = run_eb(dataset, "full.txt")
    assert lines + lines2 == full
    assert run_eb(dataset, "otherchrom.txt", "--loption", "--region", "chr2:1-100") == []


def test_threads_give_identical_output(dataset):
    assert run_eb(dataset, "t1.txt", "--loption") == run_eb(dataset, "t3.txt", "--loption", "-t", "3")


def test_vcf_mode_adds_eb_info(dataset):
    tmp, ref = dataset["tmp"], dataset["ref"]
    vcf = tmp / "target.vcf"
    rows = [(SNV_CLEAN, ref[SNV_CLEAN - 1], dataset["alt_of"][SNV_CLEAN]),
            (DELETION, ref[DELETION - 1:DELETION + 2], ref[DELETION - 1]),
            (INSERTION, ref[INSERTION - 1], ref[INSERTION - 1] + "AT"),
            (COMPLEX, "AC", "GT")]
    vcf.write_text("##fileformat=VCFv4.2\n" f"##contig=<ID={CONTIG},length={CONTIG_LENGTH}>\n"
                   "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   + "".join(f"{CONTIG}\t{p}\t.\t{r}\t{a}\t.\tPASS\t.\n" for p, r, a in rows))
    out = tmp / "out.vcf"
    assert ebfilter.main([str(vcf), dataset["tumor"], dataset["control_list"], str(out)]) == 0
    anno = {int(line.split("\t")[1]): line.split("\t")[-1] for line in run_eb(dataset, "for_vcf.txt")}
    with pysam.VariantFile(str(out)) as result:
        assert result.header.info["EB"].type == "Float"
        records = list(result)
    assert [r.pos for r in records] == [p for p, _, _ in rows]
    assert records[0].info["EB"] == pytest.approx(float(anno[SNV_CLEAN]), abs=1e-4)
    assert records[1].info["EB"] == pytest.approx(float(anno[DELETION + 1]), abs=1e-4)
    assert records[2].info["EB"] == pytest.approx(float(anno[INSERTION]), abs=1e-4)
    assert "EB" not in records[3].info


def test_missing_index_is_refused(dataset, tmp_path, capsys):
    unindexed = write_bam(tmp_path / "noindex.bam", [read_at(dataset["ref"], 300, False)], index=False)
    controls = tmp_path / "controls.txt"
    controls.write_text(f"{dataset['controls'][0]}\n{unindexed}\n")
    with pytest.raises(SystemExit) as error:
        ebfilter.main(["-f", "anno", dataset["target"], dataset["tumor"], str(controls), str(tmp_path / "o.txt")])
    assert "no index" in str(error.value) and "noindex.bam" in str(error.value)
    assert not (tmp_path / "o.txt").exists()


def test_module_entry_point(dataset):
    out = dataset["tmp"] / "module.txt"
    result = subprocess.run([sys.executable, "-m", "genomon_smk.tools.ebfilter", "-f", "anno", "--loption",
                             dataset["target"], dataset["tumor"], dataset["control_list"], str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert out.read_text().splitlines() == run_eb(dataset, "api.txt", "--loption")


def test_uncovered_site_scores_zero():
    empty = ["0", "*", "*"]
    counts = ebfilter.count_sample(*empty, VariantKey("snv", "A"), 15, is_control=False)
    assert counts == (0, 0, 0, 0)
    assert betabinom.format_score(ebfilter.score_counts(counts, [counts] * 3)) == "0"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("broken", ["mpileup", "a BAM", "a contig"])
def test_a_failing_samtools_fails_the_pileup_and_leaves_no_process_waiting(dataset, tmp_path, broken):
    """The BAMs' records reach mpileup through FIFOs: when mpileup fails (before it opens them:
    a bad option) or a reader does (a truncated BAM), or the sites are on a contig the BAMs do not
    have (as mpileup -r failed), the pileup fails and no reader is left."""
    bams = [dataset["tumor"], *dataset["controls"]]
    flags = "UNMAP,SECONDARY,QCFAIL,DUP"
    if broken == "mpileup":
        flags = "NO_SUCH_FLAG"
    elif broken == "a BAM":
        truncated = tmp_path / "truncated.bam"
        data = open(bams[1], "rb").read()
        truncated.write_bytes(data[: len(data) // 2])
        os.symlink(ebfilter.find_index(bams[1]), str(truncated) + ".bai")
        bams[1] = str(truncated)
    chrom = "chrNotInTheBams" if broken == "a contig" else next(iter(dataset["expected"])).split("\t")[0]
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(RuntimeError, match="samtools mpileup failed"):
        list(ebfilter.pileup_sites(chrom, [1, 10, 100, 1000, 5000], bams, 20, 15, flags, 0, str(work)))


def test_without_fifos_mpileup_reads_the_bams_and_gives_the_same_lines(dataset, tmp_path, monkeypatch):
    bams = [dataset["tumor"], *dataset["controls"]]
    sites = sorted({ebfilter.anno_pileup_position(int(row.split("\t")[1]), None) for row in dataset["expected"]})
    chrom = next(iter(dataset["expected"])).split("\t")[0]
    flags = "UNMAP,SECONDARY,QCFAIL,DUP"
    (tmp_path / "fifos").mkdir()
    streamed = list(ebfilter.pileup_sites(chrom, sites, bams, 20, 15, flags, 0, str(tmp_path / "fifos")))

    def no_fifo(path):
        raise OSError("no FIFOs here")

    monkeypatch.setattr(ebfilter.os, "mkfifo", no_fifo)
    (tmp_path / "files").mkdir()
    direct = list(ebfilter.pileup_sites(chrom, sites, bams, 20, 15, flags, 0, str(tmp_path / "files")))
    assert direct == streamed and len(streamed) >= 5
    assert (tmp_path / "files" / "bams.txt").read_text().split() == bams


def test_betabinom_uses_scipys_own_functions_without_its_package_imports():
    """betabinom takes betaln, gammaln, digamma and minimize from their scipy modules (not
    scipy.special's and scipy.optimize's __init__): the very objects the public names are, so
    the same numbers; and a later public import still works."""
    probe = (
        "import sys\n"
        "from genomon_smk.tools import betabinom\n"
        "fit = betabinom.fit_panel([30, 40, 50], [1, 0, 2])\n"
        "assert 'scipy.special' not in sys.modules and 'scipy.optimize' not in sys.modules\n"
        "import scipy.special, scipy.optimize\n"
        "assert betabinom.betaln is scipy.special.betaln\n"
        "assert betabinom.gammaln is scipy.special.gammaln\n"
        "assert betabinom.digamma is scipy.special.digamma\n"
        "from genomon_smk.tools.scipy_parts import function\n"
        "assert function('scipy.optimize', '_minimize', 'minimize') is scipy.optimize.minimize\n"
        "assert function('scipy.special', '_ufuncs', 'betaincinv') is scipy.special.betaincinv\n"
        "betabinom._fit_cached.cache_clear()\n"
        "assert betabinom.fit_panel([30, 40, 50], [1, 0, 2]) == fit\n"
        "print(repr(fit))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(betabinom.fit_panel([30, 40, 50], [1, 0, 2]))


def test_scipy_function_falls_back_to_the_public_name_when_its_module_moved():
    """Another scipy, where a private module is gone: the public name (here after a real import)."""
    from genomon_smk.tools.scipy_parts import function

    import scipy.special

    assert function("scipy.special", "_no_such_module", "psi", "digamma") is scipy.special.digamma
    assert function("scipy.special", "_ufuncs", "no_such_name", "gammaln") is scipy.special.gammaln
