"""fisher's screen of edited reads by their MD tags and CIGARs (tools/edit_sites.py) against
samtools' own pileup of the same reads: the same count of edits at every position."""

from __future__ import annotations

import random
import subprocess
from collections import Counter

import pysam
import pytest

from genomon_smk.tools.edit_sites import count_edits, edit_positions, edited_read_sites, sites_from_counts
from genomon_smk.tools.mpileup import tokenize_read_bases

CONTIG_LENGTH = 3000


def random_read(rng: random.Random, reference: str, index: int) -> pysam.AlignedSegment:
    """A read at a random place with soft clips, mismatches, insertions and deletions inside it
    (never at its ends, where a pileup has no base to mark them on)."""
    start = rng.randrange(20, CONTIG_LENGTH - 200)
    cigar, sequence, position = [], [], start
    if rng.random() < 0.3:
        clip = rng.randint(1, 10)
        cigar.append((4, clip))
        sequence += rng.choices("ACGT", k=clip)
    for block in range(rng.randint(1, 4)):
        if block:
            if rng.random() < 0.5:
                length = rng.randint(1, 5)
                cigar.append((1, length))
                sequence += rng.choices("ACGT", k=length)
            else:
                length = rng.randint(1, 5)
                cigar.append((2, length))
                position += length
        length = rng.randint(10, 40)
        for offset in range(length):
            base = reference[position + offset]
            if rng.random() < 0.03:
                base = rng.choice([b for b in "ACGTN" if b != base])
            sequence.append(base)
        cigar.append((0, length))
        position += length
    if rng.random() < 0.3:
        clip = rng.randint(1, 10)
        cigar.append((4, clip))
        sequence += rng.choices("ACGT", k=clip)
    read = pysam.AlignedSegment()
    read.query_name = f"read{index}"
    read.flag = rng.choice((0, 16))
    read.reference_id = 0
    read.reference_start = start
    read.mapping_quality = 60
    read.cigartuples = cigar
    read.query_sequence = "".join(sequence)
    read.query_qualities = pysam.qualitystring_to_array("I" * len(sequence))
    return read


@pytest.fixture(scope="module")
def edited_bam(tmp_path_factory):
    """(reference FASTA, a sorted indexed BAM of random edited reads with samtools calmd's MD
    and NM tags, the same BAM without them)."""
    tmp = tmp_path_factory.mktemp("edits")
    rng = random.Random(5)
    reference = "".join(rng.choices("ACGT", k=CONTIG_LENGTH))
    fasta = tmp / "ref.fa"
    fasta.write_text(f">chr1\n{reference}\n")
    pysam.faidx(str(fasta))
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": "chr1", "LN": CONTIG_LENGTH}]}
    reads = sorted((random_read(rng, reference, index) for index in range(1500)), key=lambda r: r.reference_start)
    untagged = tmp / "untagged.bam"
    with pysam.AlignmentFile(str(untagged), "wb", header=header) as out:
        for read in reads:
            out.write(read)
    pysam.index(str(untagged))
    tagged = tmp / "tagged.bam"
    with open(tagged, "wb") as handle:
        subprocess.run(["samtools", "calmd", "-b", str(untagged), str(fasta)], stdout=handle,
                       stderr=subprocess.DEVNULL, check=True)
    pysam.index(str(tagged))
    return str(fasta), str(tagged), str(untagged)


def pileup_edit_counts(bam: str, fasta: str) -> Counter:
    """0-based position -> the reads samtools' pileup shows a mismatch, an insertion or a
    deletion start on there (every read and base kept: no filters, no BAQ, no overlap test)."""
    pileup = subprocess.run(["samtools", "mpileup", "-B", "-Q", "0", "-q", "0", "-x", "-A", "-f", fasta, bam],
                            capture_output=True, text=True, check=True).stdout
    counts = Counter()
    for line in pileup.splitlines():
        fields = line.split("\t")
        bases, indels = tokenize_read_bases(fields[4])
        edits = sum(base not in ".,*" for base in bases) + len(indels)
        if edits:
            counts[int(fields[1]) - 1] = edits
    return counts


def test_the_edits_by_md_and_cigar_are_the_pileups_edits_at_every_position(edited_bam):
    fasta, tagged, _ = edited_bam
    with pysam.AlignmentFile(tagged) as bam:
        counts = count_edits(bam)
    expected = pileup_edit_counts(tagged, fasta)
    assert len(expected) > 500  # the reads have edits all over the contig
    assert {position: n for position, n in counts["chr1"].items()} == dict(expected)


def test_the_sites_are_those_with_at_least_the_minimum_in_order(edited_bam):
    fasta, tagged, _ = edited_bam
    expected = pileup_edit_counts(tagged, fasta)
    for minimum in (1, 2, 3):
        sites = edited_read_sites(["samtools", "view", "-u", tagged], minimum)
        assert sites == [("chr1", str(p + 1)) for p in sorted(expected) if expected[p] >= minimum]
        assert sites  # some positions have that many
    assert sites_from_counts({"chr2": Counter({5: 2}), "chr1": Counter({9: 3, 1: 2})}, 2) == [
        ("chr2", "6"), ("chr1", "2"), ("chr1", "10")]


def test_a_read_without_an_md_tag_leaves_the_screen_to_the_pileup(edited_bam):
    _, _, untagged = edited_bam
    assert edited_read_sites(["samtools", "view", "-u", untagged], 2) is None


def test_a_failing_view_is_an_error(tmp_path):
    with pytest.raises(subprocess.CalledProcessError):
        edited_read_sites(["samtools", "view", "-u", str(tmp_path / "missing.bam")], 2)


def test_edit_positions_reads_mismatches_deletions_and_anchors():
    # 10 matches, A and C mismatched, 5 matches, 2 deleted, 3 matches, T, 2 matches
    assert edit_positions(100, "10A0C5^GT3T2", None) == [110, 111, 122]
    # an insertion after the second base and a deletion after the fourth: anchors 101 and 103
    assert edit_positions(100, "4^A3", [(4, 2), (0, 2), (1, 1), (0, 2), (2, 1), (0, 3)]) == [101, 103]
