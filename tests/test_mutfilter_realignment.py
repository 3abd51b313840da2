"""mutfilter realignment on a tiny synthetic reference and hand-made tumor/normal BAMs."""

import math

import pytest
from scipy.stats import beta, fisher_exact

from genomon_smk.tools.mutfilter import cli
from genomon_smk.tools.mutfilter.realignment import (PAIR_COLUMNS, SINGLE_COLUMNS, alt_template,
                                               build_templates)
from synth import ReadSpec, pair, random_sequence, write_bam, write_reference
from genomon_smk.tools.mutfilter.table import parse_candidate
import pysam

CHROM = "chr1"
REF = random_sequence(3000, seed=11)
SNV_POS = 1000  # 0-based; anno Start = 1001
INS_POS = 2000  # insertion after 0-based 2000 (anno Start = End = 2001)
DEL_START = 2500  # deletion of 0-based 2500..2502 (anno Start 2501, End 2503)
INS_SEQ = "GTC"


def other_base(base, skip=()):
    return next(b for b in "ACGT" if b != base and b not in skip)


SNV_ALT = other_base(REF[SNV_POS])
SNV_THIRD = other_base(REF[SNV_POS], skip=(SNV_ALT,))


def snv_read(start, base, length=100):
    """A read copy of the reference at ``start`` with ``base`` at SNV_POS."""
    seq = REF[start:start + length]
    i = SNV_POS - start
    return seq[:i] + base + seq[i + 1:]


def snv_fragment(name, base1, base2, extra_flag=0):
    """A pair whose both mates cover the SNV, carrying base1 / base2 there."""
    return pair(name, CHROM, 950, snv_read(950, base1), 970, snv_read(970, base2),
                extra_flag=extra_flag)


def ins_fragment(name, alt):
    if alt:
        seq = REF[1950:2001] + INS_SEQ + REF[2001:2047]
        return pair(name, CHROM, 1950, seq, 2100, REF[2100:2200], cigar1="51M3I46M")
    return pair(name, CHROM, 1950, REF[1950:2050], 2100, REF[2100:2200])


def del_fragment(name, alt):
    if alt:
        seq = REF[2450:2500] + REF[2503:2553]
        return pair(name, CHROM, 2450, seq, 2600, REF[2600:2700], cigar1="50M3D50M")
    return pair(name, CHROM, 2450, REF[2450:2550], 2600, REF[2600:2700])


# expected fragment counts (ref, alt, other) per sample and candidate
TUMOR_SNV = (7, 5, 1)  # + one fragment with disagreeing mates counted as ref and alt
NORMAL_SNV = (10, 1, 0)


def tumor_reads():
    reads = []
    for i in range(6):
        reads += snv_fragment(f"tref{i}", REF[SNV_POS], REF[SNV_POS])
    for i in range(4):
        reads += snv_fragment(f"talt{i}", SNV_ALT, SNV_ALT)
    reads += snv_fragment("tmixed", SNV_ALT, REF[SNV_POS])  # mates disagree: ref and alt
    reads += snv_fragment("tthird", SNV_THIRD, SNV_THIRD)  # tie on both templates: other
    # excluded by the default --exclude_sam_flags 3328 (dup 0x400, secondary 0x100, supp 0x800)
    reads += snv_fragment("tdup", SNV_ALT, SNV_ALT, extra_flag=0x400)
    reads.append(ReadSpec("tsec", CHROM, 950, snv_read(950, SNV_ALT), flag=0x100))
    reads.append(ReadSpec("tsupp", CHROM, 950, snv_read(950, SNV_ALT), flag=0x800))
    for i in range(3):
        reads += ins_fragment(f"tinsalt{i}", True) + del_fragment(f"tdelalt{i}", True)
    for i in range(2):
        reads += ins_fragment(f"tinsref{i}", False) + del_fragment(f"tdelref{i}", False)
    return reads


def normal_reads():
    reads = []
    for i in range(10):
        reads += snv_fragment(f"nref{i}", REF[SNV_POS], REF[SNV_POS])
    reads += snv_fragment("nalt", SNV_ALT, SNV_ALT)
    for i in range(4):
        reads += ins_fragment(f"ninsref{i}", False) + del_fragment(f"ndelref{i}", False)
    return reads


CANDIDATES = [
    # Chr Start End Ref Alt + one upstream column that must be kept
    (CHROM, SNV_POS + 1, SNV_POS + 1, REF[SNV_POS], SNV_ALT, "x1"),
    (CHROM, INS_POS + 1, INS_POS + 1, "-", INS_SEQ, "x2"),
    (CHROM, DEL_START + 1, DEL_START + 3, REF[DEL_START:DEL_START + 3], "-", "x3"),
    (CHROM, 150, 150, REF[149], other_base(REF[149]), "x4"),  # s0 < window: all ---
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("realign")
    ref = write_reference(str(d / "ref.fa"), {CHROM: REF})
    tumor = write_bam(str(d / "tumor.bam"), {CHROM: len(REF)}, tumor_reads())
    normal = write_bam(str(d / "normal.bam"), {CHROM: len(REF)}, normal_reads())
    target = d / "target.txt"
    target.write_text("".join("\t".join(map(str, row)) + "\n" for row in CANDIDATES))
    return {"dir": d, "ref": ref, "tumor": tumor, "normal": normal, "target": str(target)}


def run(data, name, *extra, normal=True):
    out = data["dir"] / name
    argv = ["realignment", "-t", data["target"], "-1", data["tumor"], "-o", str(out),
            "-r", data["ref"], *extra]
    if normal:
        argv += ["-2", data["normal"]]
    assert cli.main(argv) == 0
    return [line.split("\t") for line in out.read_text().splitlines()]


def expected_fisher(t, n):
    p = fisher_exact([[t[0], n[0]], [t[1], n[1]]])[1]
    score = 60.0 if p < 1e-60 else 0.0 if p > 1 - 1e-10 else -math.log10(p)
    return "%.3f" % score


def test_templates_splice_alleles():
    ref = "AAAACGGGG"
    assert alt_template(ref, "C", "T", 4) == "AAAATGGGG"
    assert alt_template("AAAAXGGGG", "-", "TT", 4) == "AAAAXTTGGGG"
    assert alt_template("AAAACCGGGG", "CC", "-", 4) == "AAAAGGGG"


def test_parasail_scores_equal_ssw_score1():
    """Profile-based striped SW must give the same scores as an ssw local alignment."""
    import random

    import parasail

    from genomon_smk.tools.mutfilter.realignment import GAP_EXTEND, GAP_OPEN, ParasailScorer

    rng = random.Random(3)
    ref_t = REF[800:1201]
    alt_t = ref_t[:200] + SNV_ALT + ref_t[201:]
    scorer = ParasailScorer(ref_t, alt_t)
    matrix = parasail.matrix_create("ACGTN", 2, -2)
    for _ in range(60):
        start = rng.randrange(0, 250)
        read = list(alt_t[start:start + 150])
        for _ in range(rng.randrange(4)):  # random substitutions, deletions, insertions, N
            i = rng.randrange(len(read))
            kind = rng.randrange(4)
            if kind == 0:
                read[i] = rng.choice("ACGT")
            elif kind == 1:
                del read[i:i + rng.randrange(1, 4)]
            elif kind == 2:
                read.insert(i, rng.choice("ACGT") * rng.randrange(1, 3))
            else:
                read[i] = "N"
        read = "".join(read)
        ref_score = parasail.ssw(read, ref_t, GAP_OPEN, GAP_EXTEND, matrix).score1
        alt_score = parasail.ssw(read, alt_t, GAP_OPEN, GAP_EXTEND, matrix).score1
        expected = "alt" if alt_score > ref_score else "ref" if alt_score < ref_score else "other"
        assert scorer.classify(read) == expected


def test_a_read_found_whole_in_a_template_gets_the_class_its_alignment_scores_give():
    """The exact-match shortcut decides as the Smith-Waterman scores do, on reads found in the
    ref template, the alt one, both, neither, with N and with a letter off the matrix."""
    import random

    import parasail

    from genomon_smk.tools.mutfilter import realignment as r

    matrix = parasail.matrix_create("ACGTN", r.MATCH, r.MISMATCH)
    window = 60
    region = REF[SNV_POS - window : SNV_POS + window + 1]
    templates = {
        "snv": (region, alt_template(region, REF[SNV_POS], SNV_ALT, window)),
        "deletion": (region, alt_template(region, REF[SNV_POS], "-", window)),
        "repeat": ("ACGT" * 30 + "NNAC", "ACGT" * 20 + "G" + "ACGT" * 10 + "NNAC"),
    }
    rng = random.Random(5)
    decided = 0
    for ref_t, alt_t in templates.values():
        scorer = r.ParasailScorer(ref_t, alt_t)
        reads = []
        for template in (ref_t, alt_t):
            for start in range(0, len(template) - 40, 7):
                piece = template[start : start + 40]
                reads += [piece, piece[:20] + "N" + piece[21:], piece[:10] + "R" + piece[11:]]
                reads.append(piece[:30] + rng.choice("ACGT") + piece[31:])
        for read in reads:
            ref_score = parasail.sw_striped_profile_16(parasail.profile_create_16(ref_t, matrix), read,
                                                       r.GAP_OPEN, r.GAP_EXTEND).score
            alt_score = parasail.sw_striped_profile_16(parasail.profile_create_16(alt_t, matrix), read,
                                                       r.GAP_OPEN, r.GAP_EXTEND).score
            expected = r._higher_wins(alt_score, ref_score)
            assert scorer.classify(read) == expected, read
            exact = r.exact_match_class(read, ref_t, alt_t)
            assert exact in (None, expected)
            decided += exact is not None
    assert decided > 50  # the shortcut is taken
    assert r.exact_match_class("ACGT" * 5, "ACGT" * 9, "ACGT" * 9) == r.OTHER
    assert r.exact_match_class("ACRT", "ACRTT", "ACGTT") is None


def test_templates_from_reference(data):
    fasta = pysam.FastaFile(data["ref"])
    cand = parse_candidate("\t".join(map(str, CANDIDATES[0])))
    ref_t, alt_t = build_templates(fasta, cand, 200)
    assert ref_t == REF[SNV_POS - 200:SNV_POS + 201]
    assert alt_t[:200] == ref_t[:200] and alt_t[201:] == ref_t[201:] and alt_t[200] == SNV_ALT


def test_pair_columns(data):
    rows = run(data, "pair.txt")
    assert [r[5] for r in rows] == ["x1", "x2", "x3", "x4"]  # input kept, order kept
    assert all(len(r) == 6 + len(PAIR_COLUMNS) for r in rows)
    snv = rows[0][6:]
    assert tuple(map(int, snv[0:3])) == TUMOR_SNV
    assert tuple(map(int, snv[3:6])) == NORMAL_SNV
    assert snv[6] == expected_fisher(TUMOR_SNV, NORMAL_SNV)
    assert 0.0 < float(snv[6]) < 60.0
    ins, dele = rows[1][6:], rows[2][6:]
    assert tuple(map(int, ins[0:6])) == (2, 3, 0, 4, 0, 0)
    assert tuple(map(int, dele[0:6])) == (2, 3, 0, 4, 0, 0)
    assert ins[6] == expected_fisher((2, 3), (4, 0))
    assert rows[3][6:] == ["---"] * 7


def test_single_columns_beta(data):
    rows = run(data, "single.txt", normal=False)
    assert all(len(r) == 6 + len(SINGLE_COLUMNS) for r in rows)
    ref_n, alt_n, other_n, q10, mean, q90 = rows[0][6:]
    assert (int(ref_n), int(alt_n), int(other_n)) == TUMOR_SNV
    a, b = TUMOR_SNV[1] + 1, TUMOR_SNV[0] + 1
    assert q10 == "%.3f" % beta.ppf(0.1, a, b)
    assert q90 == "%.3f" % beta.ppf(0.9, a, b)
    assert mean == "%.3f" % (a / (a + b))
    assert float(q10) < float(mean) < float(q90)
    assert rows[3][6:] == ["---"] * 6


def test_max_depth_gives_dashes_per_sample(data):
    # tumor SNV region holds 28 records (excluded flags count too), normal 22
    rows = run(data, "depth.txt", "-d", "23")
    snv = rows[0][6:]
    assert snv[0:3] == ["---"] * 3
    assert tuple(map(int, snv[3:6])) == NORMAL_SNV
    assert snv[6] == "---"
    # the test is count >= max_depth: 28 records blank the tumor, 29 do not
    assert run(data, "depth28.txt", "-d", "28")[0][6] == "---"
    assert tuple(map(int, run(data, "depth29.txt", "-d", "29")[0][6:9])) == TUMOR_SNV


def test_edlib_mode_agrees_on_clean_reads(data):
    assert run(data, "edlib.txt", "--edlib") == run(data, "pair2.txt")


def test_threads_keep_order_and_values(data):
    assert run(data, "t2.txt", "-T", "2") == run(data, "t1.txt")


def test_min_mismatch_filters_rows(data):
    rows = run(data, "filt.txt", "-m", "4")
    # SNV has 5 alt fragments (kept), indels 3 (dropped), the --- row is kept
    assert [r[5] for r in rows] == ["x1", "x4"]
    rows = run(data, "filt2.txt", "-M", "0")
    assert [r[5] for r in rows] == ["x2", "x3", "x4"]


def test_header_mode(data, tmp_path):
    target = tmp_path / "h.txt"
    target.write_text("Chr\tStart\tEnd\tRef\tAlt\tcol\n" + open(data["target"]).read())
    out = tmp_path / "h.out"
    assert cli.main(["realignment", "-t", str(target), "-1", data["tumor"], "-2", data["normal"],
                     "-o", str(out), "-r", data["ref"], "--header"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].split("\t") == ["Chr", "Start", "End", "Ref", "Alt", "col", *PAIR_COLUMNS]
    assert len(lines) == 1 + len(CANDIDATES)


def test_blat_refused_without_blat(data, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    status = cli.main(["realignment", "-t", data["target"], "-1", data["tumor"], "-o",
                       str(tmp_path / "o"), "-r", data["ref"], "--blat"])
    assert status != 0
    assert "blat" in capsys.readouterr().err


def test_vcf_candidate_coordinates():
    from genomon_smk.tools.mutfilter.vcf import vcf_candidate

    def key(line):
        c = vcf_candidate(line)
        return c.chrom, c.start, c.end, c.ref, c.alt

    assert key("1\t100\t.\tA\tT\t.\t.\t.") == ("1", 100, 100, "A", "T")
    assert key("1\t100\t.\tA\tAGT\t.\t.\t.") == ("1", 100, 100, "-", "GT")
    assert key("1\t100\t.\tATG\tA\t.\t.\t.") == ("1", 101, 102, "TG", "-")
    assert key("1\t100\t.\tAC\tGT\t.\t.\t.") == ("1", 100, 101, "AC", "GT")


def test_vcf_mode_matches_anno(data):
    """The VCF values are the anno columns, placed in INFO FPR and FORMAT NNR/NAR/NOR."""
    records = [  # the anno candidates as left-anchored VCF alleles
        (SNV_POS + 1, REF[SNV_POS], SNV_ALT),
        (INS_POS + 1, REF[INS_POS], REF[INS_POS] + INS_SEQ),
        (DEL_START, REF[DEL_START - 1:DEL_START + 3], REF[DEL_START - 1]),
    ]
    vcf = data["dir"] / "in.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO"
                   "\tFORMAT\tNORMAL\tTUMOR\n" + "".join(
                       f"{CHROM}\t{pos}\t.\t{ref}\t{alt}\t.\tPASS\tFP=2.0\tGT\t0/0\t0/1\n"
                       for pos, ref, alt in records))
    out = data["dir"] / "out.vcf"
    assert cli.main(["realignment", "-t", str(vcf), "-1", data["tumor"], "-2", data["normal"],
                     "-o", str(out), "-r", data["ref"], "-O", "vcf", "-A", "TUMOR",
                     "-B", "NORMAL"]) == 0
    body = [line.split("\t") for line in out.read_text().splitlines() if line[0] != "#"]
    assert "##FORMAT=<ID=NAR" in out.read_text()
    anno = run(data, "anno_for_vcf.txt")[:3]
    for record, row in zip(body, anno):
        t_ref, t_alt, t_other, n_ref, n_alt, n_other, score = row[6:]
        assert record[7] == f"FP=2.0;FPR={score}"
        assert record[8] == "GT:NNR:NAR:NOR"
        assert record[10] == f"0/1:{t_ref}:{t_alt}:{t_other}"  # TUMOR is the second column
        assert record[9] == f"0/0:{n_ref}:{n_alt}:{n_other}"
