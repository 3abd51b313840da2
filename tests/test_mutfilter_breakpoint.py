"""mutfilter breakpoint: clipped-read junction counting around candidates."""

import pytest

from genomon_smk.tools.mutfilter import cli
from genomon_smk.tools.mutfilter.breakpoint import COLUMNS, best_junction, junction_votes
from synth import ReadSpec, random_sequence, write_bam, write_reference
import pysam

CHROM = "chr1"
REF = random_sequence(1000, seed=7)
JUNK = random_sequence(40, seed=99)


def right_clipped(name, end, clip, op="S", **kw):
    """Aligned bases end at 0-based ``end - 1`` (1-based ``end``), then ``clip`` clipped bases."""
    start = end - 80
    seq = REF[start:end] + (JUNK[:clip] if op == "S" else "")
    return ReadSpec(name, CHROM, start, seq, f"80M{clip}{op}", **kw)


def left_clipped(name, start, clip, **kw):
    return ReadSpec(name, CHROM, start, JUNK[:clip] + REF[start:start + 80], f"{clip}S80M", **kw)


def normal_reads():
    reads = [right_clipped(f"r305_{i}", 305, 25) for i in range(4)]
    reads.append(right_clipped("r305_hard", 305, 30, op="H"))
    reads += [left_clipped(f"l310_{i}", 310, 22) for i in range(2)]
    reads += [right_clipped(f"r400_{i}", 400, 20) for i in range(6)]
    # not counted: clip below 20, MAPQ below 10, duplicate, unmapped-flag filter (3332)
    reads.append(right_clipped("short", 305, 19))
    reads.append(right_clipped("lowmq", 305, 25, mapq=5))
    reads.append(right_clipped("dup", 305, 25, flag=0x400))
    reads.append(right_clipped("supp", 305, 25, flag=0x800))
    reads += [ReadSpec(f"plain{i}", CHROM, 250 + i, REF[250 + i:350 + i]) for i in range(5)]
    return reads


ROWS = [
    (CHROM, 301, 301, "A", "C"),  # (305,R): 5 reads, distance min(4, 4)
    (CHROM, 395, 395, "A", "C"),  # (400,R): 6 reads, distance min(6, 5)
    (CHROM, 306, 309, "ACGT", "-"),  # (305,R) wins over (310,L); distance 0
    (CHROM, 700, 700, "A", "C"),  # nothing near
    ("chrUn", 5, 5, "A", "C"),  # contig not in the BAM
]
EXPECTED = [["5", "4"], ["6", "5"], ["5", "0"], ["0", "0"], ["---", "---"]]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("bp")
    write_reference(str(d / "ref.fa"), {CHROM: REF})
    normal = write_bam(str(d / "normal.bam"), {CHROM: len(REF)}, normal_reads())
    target = d / "target.txt"
    target.write_text("".join("\t".join(map(str, r)) + "\n" for r in ROWS))
    return {"dir": d, "normal": normal, "target": str(target)}


def run(data, *extra):
    out = data["dir"] / "out.txt"
    assert cli.main(["breakpoint", "-t", data["target"], "-2", data["normal"], "-o", str(out),
                     *extra]) == 0
    return [line.split("\t") for line in out.read_text().splitlines()]


def test_columns(data):
    rows = run(data)
    assert [r[:5] for r in rows] == [list(map(str, r)) for r in ROWS]
    assert [r[5:] for r in rows] == EXPECTED


def test_votes_per_junction_and_side(data):
    bam = pysam.AlignmentFile(data["normal"])
    votes = junction_votes(bam.fetch(CHROM, 280, 315), 20, 10, 3332)
    assert votes == {(305, "R"): 5, (310, "L"): 2}


def test_ties_keep_first_and_eligibility():
    votes = {(100, "R"): 3, (110, "L"): 3, (200, "R"): 9}
    assert best_junction(votes, 105, 105, 20) == (3, 5)
    assert best_junction(votes, 170, 170, 20) == (0, 0)  # 170 < 200 - 20: not eligible
    assert best_junction(votes, 180, 180, 20) == (9, 20)  # j - c <= s0 <= j
    assert best_junction({(50, "L"): 2}, 55, 58, 10) == (2, 5)  # only j <= End <= j + c
    assert best_junction({(50, "L"): 2}, 55, 61, 10) == (0, 0)


def test_max_depth_dashes(data):
    # count(chr, s0, s0 + 1) at s0 = 300 covers the 305 reads (12 records) and 5 plain reads
    bam = pysam.AlignmentFile(data["normal"])
    depth = bam.count(CHROM, 300, 301)
    rows = run(data, "-d", str(depth))
    assert rows[0][5:] == ["---", "---"]
    rows = run(data, "-d", str(depth + 1))
    assert rows[0][5:] == EXPECTED[0]


def test_junction_threshold_filters(data):
    rows = run(data, "-j", "6")
    assert [r[1] for r in rows] == ["395", "5"]  # count >= 6 or ---


def test_header(data, tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("Chr\tStart\tEnd\tRef\tAlt\n" + "\t".join(map(str, ROWS[0])) + "\n")
    out = tmp_path / "o.txt"
    assert cli.main(["breakpoint", "-t", str(target), "-2", data["normal"], "-o", str(out),
                     "--header"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].split("\t")[5:] == list(COLUMNS)
    assert lines[1].split("\t")[5:] == EXPECTED[0]
