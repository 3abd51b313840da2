"""Unit tests of the shared samtools-mpileup read-base parser."""

from __future__ import annotations

import io
import random
import subprocess

import pytest

from genomon_smk.tools import mpileup
from genomon_smk.tools.mpileup import IndelToken


def test_plain_string_is_returned_unchanged():
    assert mpileup.tokenize_read_bases("..,,ACgt*") == ("..,,ACgt*", [])


def test_read_start_mapq_char_is_dropped_even_when_special():
    # MAPQ characters '+', '$', '^', '.', '-' must not be read as tokens or bases
    bases, indels = mpileup.tokenize_read_bases("^+.^$,^^A^.c^-G$.$")
    assert bases == ".,AcG."
    assert indels == []


def test_indel_tokens_take_exactly_their_length():
    # '+2AGT' is an insertion AG followed by a mismatch T; '-12' has two digits
    bases, indels = mpileup.tokenize_read_bases(".+2AGT,-12acgtacgtacgt,$^~.-1N")
    assert bases == ".T,,."
    assert indels == [IndelToken("+", "AG", False), IndelToken("-", "acgtacgtacgt", True),
                      IndelToken("-", "N", False)]


def test_bare_sign_and_long_indel_after_special_mapq():
    # '^+T' is a read start (MAPQ '+') then T; '+12' takes exactly 12 letters; a sign
    # without a length is not a token and stays a symbol
    bases, indels = mpileup.tokenize_read_bases("^+T+12ACGTACGTACGTa^$-")
    assert bases == "Ta-"
    assert indels == [IndelToken("+", "ACGTACGTACGT", False)]


def test_tokenizing_concatenated_pieces_concatenates_their_parts():
    """Random strings of valid pieces: bases and tokens are those of the pieces, in order."""
    rng = random.Random(4)
    # piece -> (bases it contributes, indel tokens it contributes)
    pieces = {"A": ("A", []), "c": ("c", []), "*": ("*", []), "#": ("#", []), ">": (">", []),
              ".": (".", []), ",": (",", []), "^+": ("", []), "^$": ("", []), "^-": ("", []),
              "^^": ("", []), "$": ("", []), "+2AG": ("", [IndelToken("+", "AG", False)]),
              "-3nnn": ("", [IndelToken("-", "nnn", True)]),
              "+11ACGTACGTACG": ("", [IndelToken("+", "ACGTACGTACG", False)]),
              "-1a": ("", [IndelToken("-", "a", True)])}
    names = sorted(pieces)
    for _ in range(300):
        chosen = [rng.choice(names) for _ in range(rng.randint(0, 15))]
        expected_bases = "".join(pieces[p][0] for p in chosen)
        expected_indels = [token for p in chosen for token in pieces[p][1]]
        text = "".join(chosen)
        assert mpileup.tokenize_read_bases(text) == (expected_bases, expected_indels), text


def test_count_sample_strands_bq_and_indel_depth():
    # ref C: 3 fwd ref ('.'), 2 rev ref (','), T fwd x2 (one low BQ), t rev, N, '*' placeholder
    read_bases = ".,.+1A.,TTt-2ccN*"
    quals = "IIIIII+III"  # one per base; "+" = Q10 on the second T
    counts = mpileup.count_sample(read_bases, quals, "c", 15)
    assert counts is not None
    # forward A,C,G,T,N (BQ >= 15): C x3, T x1 (second T has Q10), N x1
    assert counts.forward == [0, 3, 0, 1, 1]
    assert counts.reverse == [0, 2, 0, 1, 0]
    assert counts.depth_forward == 4 and counts.depth_reverse == 3 and counts.depth == 7
    # indel depth counts every ACGTN letter regardless of BQ, not '*'
    assert (counts.indel_depth_forward, counts.indel_depth_reverse) == (6, 3)
    assert counts.indels == {("+", "A"): [1, 0], ("-", "CC"): [0, 1]}
    assert counts.indel_count("-", "CC") == (0, 1)
    assert counts.indel_count("+", "G") == (0, 0)
    assert counts.base_total("T") == 2


def test_count_sample_without_bq_filter_counts_all():
    counts = mpileup.count_sample("TTt", "+++", "A", 0)
    assert counts.base_total("T") == 3


def test_count_sample_rejects_misaligned_qualities():
    assert mpileup.count_sample("..+1A.", "II", "A", 15) is None


def test_variant_upper_bound_counts_raw_string():
    assert mpileup.variant_read_upper_bound(5, "..,+1AT-2GG") == 5 - 3 + 1 + 1


def test_build_mpileup_command_orders_region_first():
    command = mpileup.build_mpileup_command("samtools", ["t.bam", "n.bam"], "ref.fa",
                                            "1:10-20", "pos.bed", '-q 20 --ff "UNMAP,DUP"')
    assert command == ["samtools", "mpileup", "-r", "1:10-20", "-l", "pos.bed", "-f", "ref.fa",
                       "-q", "20", "--ff", "UNMAP,DUP", "t.bam", "n.bam"]


def test_stream_mpileup_yields_lines_and_reports_failure():
    with mpileup.stream_mpileup(["printf", "a\\tb\\nc\\n"]) as lines:
        assert list(lines) == ["a\tb\n", "c\n"]
    with pytest.raises(subprocess.CalledProcessError) as failure:
        with mpileup.stream_mpileup(["sh", "-c", "echo x; echo oops >&2; exit 3"]) as lines:
            list(lines)
    assert failure.value.returncode == 3 and "oops" in failure.value.stderr


@pytest.mark.parametrize("text, expected", [
    ("chr1:100-200", ("chr1", 100, 200)),
    ("1:1,000-2,000", ("1", 1000, 2000)),
    ("chrX", ("chrX", None, None)),
    ("chr1:500", ("chr1", 500, None)),
])
def test_parse_region(text, expected):
    assert mpileup.parse_region(text) == expected


def test_base_quality_threshold_is_inclusive():
    # '0' is Phred 15 (kept at -Q 15), '/' is Phred 14 (dropped)
    counts = mpileup.count_sample("TTt", "0/0", "A", 15)
    assert (counts.forward[3], counts.reverse[3]) == (1, 1)
    assert counts.indel_depth == 3


def test_an_error_line_fails_the_pileup_although_samtools_exits_0():
    """mpileup prints "Failed to retrieve block" for every site when the .fai is of another FASTA,
    and exits 0: the calls it could not make would vanish silently."""
    import subprocess

    from genomon_smk.tools.mpileup import stream_mpileup

    command = ["sh", "-c", "echo 'chr1\t1\tA\t0\t*\t*'; "
               "echo '[E::fai_retrieve] Failed to retrieve block: unexpected end of file' >&2"]
    with pytest.raises(subprocess.CalledProcessError) as raised:
        with stream_mpileup(command) as lines:
            assert list(lines) == ["chr1\t1\tA\t0\t*\t*\n"]
    assert "Failed to retrieve block" in raised.value.stderr
    with stream_mpileup(["sh", "-c", "echo ok; echo '[W::hts_idx_load3] The index file is older' >&2"]) as lines:
        assert list(lines) == ["ok\n"]


def random_read_bases(rng: random.Random, depth: int) -> str:
    """A read-base string of `depth` reads with every kind of token mpileup prints: start marks
    with any MAPQ character (`+`, `-`, `.`, `,` and letters included), end marks, matches,
    mismatches, deleted bases and indels."""
    pieces = []
    for _ in range(depth):
        if rng.random() < 0.1:
            pieces.append("^" + chr(rng.randint(33, 126)))
        pieces.append(rng.choice(".,") if rng.random() < 0.85 else rng.choice("ACGTNacgtn*#"))
        if rng.random() < 0.05:
            size = rng.randint(1, 3)
            pieces.append(rng.choice("+-") + str(size) + "".join(rng.choice("ACGTacgt") for _ in range(size)))
        if rng.random() < 0.05:
            pieces.append("$")
    return "".join(pieces)


def pileup_line(rng: random.Random, pos: int, samples: int) -> str:
    fields = ["chr1", str(pos), "A"]
    for _ in range(samples):
        depth = rng.randint(0, 20)
        fields += [str(depth), random_read_bases(rng, depth) if depth else "*", "I" * depth if depth else "*"]
    return "\t".join(fields) + "\n"


@pytest.mark.parametrize("samples", [1, 2])
def test_candidate_lines_keep_every_line_the_exact_screen_keeps_in_order(samples):
    rng = random.Random(samples)
    lines = [pileup_line(rng, pos, samples) for pos in range(1, 5001)]
    data = "".join(lines).encode("latin-1")
    # Small blocks: lines are cut across block boundaries and carried over.
    candidates = list(mpileup.candidate_lines(io.BytesIO(data), samples, 4, block_bytes=997))
    exact = [line for line in lines
             if mpileup.variant_read_upper_bound(int(line.split("\t")[3]), line.split("\t")[4]) >= 4]
    assert 0 < len(exact) <= len(candidates) < len(lines) / 2
    remaining = iter(lines)  # candidates are a subsequence of the input
    assert all(any(candidate == line for line in remaining) for candidate in candidates)
    assert set(exact) <= set(candidates)


def test_candidate_lines_pass_unscreened_what_they_cannot_parse():
    lines = ["chr1\t1\tA\t3\t...\tIII\n", "a line of another shape\n", "chr1\t2\tA\t1\t.\tI"]
    data = "".join(lines).encode("latin-1")
    assert list(mpileup.candidate_lines(io.BytesIO(data), 1, 4)) == lines
