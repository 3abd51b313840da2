"""mutfilter indel: in-process pileup vs samtools mpileup, and the column values."""

import shutil
import subprocess
from collections import Counter

import pytest

from genomon_smk.tools.mutfilter import cli
from genomon_smk.tools.mutfilter.indel import (COLUMNS, max_indel_mismatch,
                                         parse_samtools_params, pileup_indels)
from synth import ReadSpec, pair, random_sequence, write_bam, write_reference
import pysam

CHROM = "chr1"
REF = random_sequence(1000, seed=5)
GENOMON_PARAMS = "-q 20 -BQ0 -d 10000000 --ff UNMAP,SECONDARY,QCFAIL,DUP"


def del_read(name, **kw):
    """Read 1 at 150 with a 2-base deletion after 1-based 205 (span 206-207)."""
    return pair(name, CHROM, 150, REF[150:205] + REF[207:252], 400, REF[400:500],
                cigar1="55M2D45M", **kw)


def ins_read(name, **kw):
    """Read 1 at 150 with AC inserted after 1-based 230."""
    return pair(name, CHROM, 150, REF[150:230] + "AC" + REF[230:248], 400, REF[400:500],
                cigar1="80M2I18M", **kw)


def normal_reads():
    reads = []
    for i in range(3):
        reads += del_read(f"del{i}")
    for i in range(5):
        reads += ins_read(f"ins{i}")
    for i in range(6):
        reads += pair(f"ref{i}", CHROM, 150, REF[150:250], 400, REF[400:500])
    # filtered by mpileup: low MAPQ, DUP, QCFAIL, anomalous pair, secondary
    reads += del_read("lowmq", mapq=10)
    reads += del_read("dup", extra_flag=0x400)
    reads += del_read("qcfail", extra_flag=0x200)
    reads += del_read("orphan", proper=False)
    reads.append(ReadSpec("sec", CHROM, 150, REF[150:205] + REF[207:252], "55M2D45M", flag=0x100))
    # low base quality (matters for -Q > 0 only) and overlapping mates both carrying the deletion
    low = del_read("lowbq")
    low[0].qual = 5
    reads += low
    reads += pair("overlap", CHROM, 150, REF[150:205] + REF[207:252], 170,
                  REF[170:205] + REF[207:272], cigar1="55M2D45M", cigar2="35M2D65M")
    return reads


# depth at 1-based column 205 with Genomon params: 3 del + 5 ins + 6 ref + lowbq + 2 overlap
DEPTH_205 = 17
DEL_205 = 3 + 1 + 2


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("indel")
    ref = write_reference(str(d / "ref.fa"), {CHROM: REF})
    normal = write_bam(str(d / "normal.bam"), {CHROM: len(REF)}, normal_reads())
    return {"dir": d, "ref": ref, "normal": normal}


def samtools_columns(bam, region, params):
    """Per column (pos, depth, Counter of indel tokens) parsed from `samtools mpileup`."""
    out = subprocess.run(["samtools", "mpileup", "-r", region, *params.split(), bam],
                         check=True, capture_output=True, text=True).stdout
    columns = {}
    for line in out.splitlines():
        fields = line.split("\t")
        bases, i, tokens = fields[4], 0, Counter()
        while i < len(bases):
            c = bases[i]
            if c == "^":
                i += 2
                continue
            if c in "+-":
                j = i + 1
                while bases[j].isdigit():
                    j += 1
                size = int(bases[i + 1:j])
                tokens[(c, bases[j:j + size].upper())] += 1
                i = j + size
                continue
            i += 1
        columns[int(fields[1])] = (int(fields[3]), tokens)
    return columns


@pytest.mark.skipif(shutil.which("samtools") is None, reason="samtools not installed")
@pytest.mark.parametrize("params", [GENOMON_PARAMS, "-q 20 -B -Q 20 -d 10000000",
                                    "-A -q 0 -BQ0", "-q 20 -BQ0 --ff UNMAP"])
def test_pileup_matches_samtools(data, params):
    expected = samtools_columns(data["normal"], f"{CHROM}:100-300", params)
    bam = pysam.AlignmentFile(data["normal"])
    ours = {pos: (depth, counts) for pos, depth, counts in
            pileup_indels(bam, CHROM, 99, 300, parse_samtools_params(params))}
    assert set(ours) == set(expected)
    assert ours == expected
    assert any(counts for _, counts in ours.values())


def test_genomon_pileup_counts(data):
    bam = pysam.AlignmentFile(data["normal"])
    cols = {pos: (depth, counts) for pos, depth, counts in
            pileup_indels(bam, CHROM, 99, 300, parse_samtools_params(GENOMON_PARAMS))}
    assert cols[205] == (DEPTH_205, Counter({("-", "NN"): DEL_205}))
    assert cols[230][1] == Counter({("+", "AC"): 5})


def test_parse_samtools_params():
    f = parse_samtools_params(GENOMON_PARAMS)
    assert (f.min_mapq, f.min_baseq, f.max_depth, f.flag_filter, f.count_orphans) == \
        (20, 0, 10000000, 0x4 | 0x100 | 0x200 | 0x400, False)
    f = parse_samtools_params("-A -q 5 --ff 0x704 -Q 13")
    assert (f.min_mapq, f.min_baseq, f.flag_filter, f.count_orphans) == (5, 13, 0x704, True)


def test_max_indel_mismatch_rules():
    cols = [
        (100, 10, Counter({("-", "NN"): 2})),  # span 101-102
        (120, 10, Counter({("+", "A"): 9})),  # far from the candidate
        (104, 4, Counter({("+", "G"): 4})),  # below min_depth 8
        (103, 0, Counter()),
    ]
    assert max_indel_mismatch(cols, 107, 107, 5, 8) == (2, 0.2)  # 107 = 102 + 5
    assert max_indel_mismatch(cols, 108, 108, 5, 8) == (0, 0.0)
    assert max_indel_mismatch(cols, 96, 96, 5, 8) == (2, 0.2)  # 96 = 101 - 5
    assert max_indel_mismatch(cols, 100, 100, 5, 8) == (2, 0.2)
    assert max_indel_mismatch(cols, 100, 100, 5, 4) == (4, 1.0)  # 104 - 5 <= 100
    # End may be the one in range
    assert max_indel_mismatch(cols, 50, 99, 0, 8) == (0, 0.0)
    assert max_indel_mismatch(cols, 50, 101, 0, 8) == (2, 0.2)


def run(data, rows, *extra):
    target = data["dir"] / "target.txt"
    target.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    out = data["dir"] / "out.txt"
    assert cli.main(["indel", "-t", str(target), "-2", data["normal"], "-o", str(out),
                     "-s", "samtools", "-S", GENOMON_PARAMS, *extra]) == 0
    return [line.split("\t") for line in out.read_text().splitlines()]


ROWS = [
    (CHROM, 201, 201, REF[200], "A"),  # the deletion's span 206-207 minus 5 reaches 201
    (CHROM, 228, 228, REF[227], "A"),  # near the insertion at 230
    (CHROM, 700, 700, REF[699], "A"),  # nothing nearby
    ("chrX", 10, 10, "A", "C"),  # contig not in the BAM
]


def test_columns_and_formats(data):
    rows = run(data, ROWS)
    assert [r[5:] for r in rows] == [
        [str(DEL_205), "%.3f" % (DEL_205 / DEPTH_205)],
        ["5", "%.3f" % (5 / DEPTH_205)],
        ["0", "0.000"],
        ["---", "---"],
    ]
    assert run(data, ROWS, "-T", "2") == rows  # worker processes give the same rows


def test_a_candidate_without_indel_reads_near_it_skips_the_pileup_and_gets_its_columns(data, monkeypatch):
    """Reads around 460 in the normal (mates at 400-500) carry no indel: the columns the
    pileup would give (0, 0.000) come without it; a candidate near the deletion reads piles up."""
    from genomon_smk.tools.mutfilter import indel, reads

    bam = pysam.AlignmentFile(data["normal"])
    assert not indel.any_indel_read(bam.fetch(CHROM, 420, 500))
    assert indel.any_indel_read(bam.fetch(CHROM, 160, 241))
    params = indel.parse_samtools_params(GENOMON_PARAMS)
    assert indel.max_indel_mismatch(indel.pileup_indels(bam, CHROM, 420, 500, params), 460, 460, 5, 8) == (0, 0.0)
    piled = []
    monkeypatch.setattr(indel, "pileup_indels", lambda *args: piled.append(args[1:4]) or iter(()))
    reads.clear()
    rows = run(data, [(CHROM, 460, 460, REF[459], "A"), ROWS[0]])
    assert [r[5:] for r in rows] == [["0", "0.000"], ["0", "0.000"]]  # the second from the stub
    assert piled == [(CHROM, 160, 241)]  # only the candidate with deletion reads near it


def test_min_depth_and_filters(data):
    assert run(data, ROWS[:1], "-d", str(DEPTH_205 + 1))[0][5:] == ["0", "0.000"]
    # keep iff count <= min_mismatch or rate <= af_thres
    assert (DEL_205, round(DEL_205 / DEPTH_205, 3)) == (6, 0.353)  # the cases below rely on it
    kept = run(data, ROWS[:3], "-m", "5", "-a", "0.36")  # 201 kept by its rate
    assert [r[1] for r in kept] == ["201", "228", "700"]
    kept = run(data, ROWS[:3], "-m", "5", "-a", "0.3")  # 201 fails both, 228 has count 5
    assert [r[1] for r in kept] == ["228", "700"]
    kept = run(data, ROWS[:3], "-m", "4", "-a", "0.29")  # 228: 5 > 4 and 0.294 > 0.29
    assert [r[1] for r in kept] == ["700"]


def test_header(data):
    target = data["dir"] / "h.txt"
    target.write_text("Chr\tStart\tEnd\tRef\tAlt\n")
    out = data["dir"] / "h.out"
    assert cli.main(["indel", "-t", str(target), "-2", data["normal"], "-o", str(out),
                     "--header"]) == 0
    assert out.read_text() == "Chr\tStart\tEnd\tRef\tAlt\t" + "\t".join(COLUMNS) + "\n"


def test_vcf_mode_tumor_column(data):
    vcf = data["dir"] / "in.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT"
                   "\tT\tN\n"
                   f"{CHROM}\t201\t.\t{REF[200]}\tA\t.\tPASS\t.\tGT\t0/1\t0/0\n"
                   f"{CHROM}\t700\t.\t{REF[699]}\tA\t.\tPASS\t.\tGT\t0/1\t0/0\n")
    out = data["dir"] / "out.vcf"
    assert cli.main(["indel", "-t", str(vcf), "-2", data["normal"], "-o", str(out),
                     "-O", "vcf", "-A", "T", "-B", "N"]) == 0
    body = [line.split("\t") for line in out.read_text().splitlines() if line[0] != "#"]
    assert [r[8:] for r in body] == [
        ["GT:NI:RI", f"0/1:{DEL_205}:{DEL_205 / DEPTH_205:.3f}", "0/0:.:."],
        ["GT:NI:RI", "0/1:0:0.000", "0/0:.:."],
    ]


def test_vcf_mode_unknown_sample(data, capsys):
    vcf = data["dir"] / "bad.vcf"
    vcf.write_text("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\tT\n")
    assert cli.main(["indel", "-t", str(vcf), "-2", data["normal"], "-o",
                     str(data["dir"] / "bad.out"), "-O", "vcf", "-A", "X"]) != 0
    assert "'X'" in capsys.readouterr().err
