"""Parsing of `samtools mpileup` output: read-base strings, per-strand counts, streaming runs.

Clean-room implementation from the facts in genomon-tools-spec.md sections 2 and 4.

A pileup line is ``chrom pos ref`` followed by one ``depth read_bases qualities`` triple per BAM.
In ``read_bases``:

* ``^`` starts a read and is followed by ONE character encoding its MAPQ (any character,
  including ``+``, ``-``, ``.``, ``$``), which is not a base;
* ``$`` ends a read (not a base);
* ``+N<seq>`` / ``-N<seq>`` is an insertion / deletion of N letters after this base;
  the letters are upper-case on the forward strand and lower-case on the reverse strand;
* ``.`` / ``,`` is a reference match on the forward / reverse strand; letters are mismatches
  (upper = forward, lower = reverse); ``*`` / ``#`` are deleted-base placeholders; ``<`` / ``>``
  are reference skips. Each of these carries one quality character.

The API is small and pure so that other tools (fisher, EBFilter) can share it.

Deliberate difference from upstream Genomon (docs/differences.md): an htslib error line in
samtools' stderr fails the run even when mpileup exits 0 (:func:`stream_mpileup`).
"""

from __future__ import annotations

import contextlib
import functools
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator, Sequence

import numpy as np

BASES = "ACGTN"
SNV_BASES = "ACGT"

# Characters that need special handling; everything in between is one base per character.
_SPECIAL_CHARS = re.compile(r"[\^$+\-]")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class IndelToken:
    """One indel found in a read-base string.

    kind: ``+`` (insertion) or ``-`` (deletion); sequence: the letters as printed;
    is_reverse: True when the letters are lower-case (read on the reverse strand).
    """

    kind: str
    sequence: str
    is_reverse: bool


def tokenize_read_bases(read_bases: str) -> tuple[str, list[IndelToken]]:
    """Split a read-base string into the per-read base characters and the indel tokens.

    Removes ``^`` with its MAPQ character, ``$`` and every indel token (sign, length and
    exactly that many letters). The returned base string has one character per read,
    which must line up with the quality string.
    """
    if not _SPECIAL_CHARS.search(read_bases):
        return read_bases, []
    pieces: list[str] = []
    indels: list[IndelToken] = []
    position = 0
    length = len(read_bases)
    while position < length:
        match = _SPECIAL_CHARS.search(read_bases, position)
        if match is None:
            pieces.append(read_bases[position:])
            break
        start = match.start()
        pieces.append(read_bases[position:start])
        char = read_bases[start]
        if char == "^":
            position = start + 2  # '^' and the MAPQ character
        elif char == "$":
            position = start + 1
        else:
            digits = _DIGITS.match(read_bases, start + 1)
            if digits is None:  # a bare sign cannot occur in valid output; treat as a base
                pieces.append(char)
                position = start + 1
                continue
            size = int(digits.group())
            sequence = read_bases[digits.end(): digits.end() + size]
            indels.append(IndelToken(char, sequence, sequence.islower()))
            position = digits.end() + size
    return "".join(pieces), indels


def variant_read_upper_bound(depth: int, read_bases: str) -> int:
    """Cheap pre-filter count: depth − (#``.`` + #``,``) + #``+`` + #``-`` on the raw string.

    Counted on the raw string exactly as the upstream pre-filter does (so a MAPQ character
    that happens to be one of these is counted too).
    """
    return (depth - read_bases.count(".") - read_bases.count(",")
            + read_bases.count("+") + read_bases.count("-"))


@functools.lru_cache(maxsize=256)
def _passing_quality_chars(min_base_quality: int) -> frozenset[str]:
    """The quality characters whose Phred value (ASCII − 33) is ≥ min_base_quality."""
    return frozenset(chr(code) for code in range(33, 127) if code - 33 >= min_base_quality)


@dataclass
class SampleCounts:
    """Counts of one sample at one pileup column.

    forward / reverse: BQ-passing counts of A,C,G,T,N on each strand (index = BASES order).
    indel_depth_forward / _reverse: #ACGTN letters per strand regardless of base quality.
    indels: (kind, upper-cased sequence) -> [forward count, reverse count], in first-seen order.
    """

    forward: list[int]
    reverse: list[int]
    indel_depth_forward: int
    indel_depth_reverse: int
    indels: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def base_total(self, base: str) -> int:
        """BQ-passing count of an upper-case base over both strands."""
        index = BASES.index(base)
        return self.forward[index] + self.reverse[index]

    @property
    def depth_forward(self) -> int:
        """BQ-passing A,C,G,T on the forward strand (N excluded)."""
        return sum(self.forward[:4])

    @property
    def depth_reverse(self) -> int:
        """BQ-passing A,C,G,T on the reverse strand (N excluded)."""
        return sum(self.reverse[:4])

    @property
    def depth(self) -> int:
        """BQ-passing A,C,G,T over both strands: the SNV depth."""
        return self.depth_forward + self.depth_reverse

    @property
    def indel_depth(self) -> int:
        """#ACGTN letters over both strands, without BQ filter: the indel depth."""
        return self.indel_depth_forward + self.indel_depth_reverse

    def indel_count(self, kind: str, sequence: str) -> tuple[int, int]:
        """(forward, reverse) reads carrying this indel; (0, 0) if absent."""
        counts = self.indels.get((kind, sequence))
        return (counts[0], counts[1]) if counts else (0, 0)


def count_sample(read_bases: str, qualities: str, ref_base: str,
                 min_base_quality: int) -> SampleCounts | None:
    """Count one sample's pileup column; None if bases and qualities do not line up.

    ``.``/``,`` become the upper/lower-case reference base. Base counts keep only bases whose
    Phred quality is ≥ min_base_quality; the indel depth counts every ACGTN letter.
    """
    bases, tokens = tokenize_read_bases(read_bases)
    if len(bases) != len(qualities):
        return None
    ref_upper = ref_base.upper()
    bases = bases.replace(".", ref_upper).replace(",", ref_upper.lower())
    indel_depth_forward = sum(bases.count(b) for b in BASES)
    indel_depth_reverse = sum(bases.count(b) for b in BASES.lower())
    if min_base_quality > 0:
        passing = _passing_quality_chars(min_base_quality)
        bases = "".join([b for b, q in zip(bases, qualities) if q in passing])
    forward = [bases.count(b) for b in BASES]
    reverse = [bases.count(b) for b in BASES.lower()]
    indels: dict[tuple[str, str], list[int]] = {}
    for token in tokens:
        counts = indels.setdefault((token.kind, token.sequence.upper()), [0, 0])
        counts[1 if token.is_reverse else 0] += 1
    return SampleCounts(forward, reverse, indel_depth_forward, indel_depth_reverse, indels)


def build_mpileup_command(samtools: str, bams: Sequence[str], ref_fasta: str | None = None,
                          region: str | None = None, positions_bed: str | None = None,
                          params: str | Sequence[str] = ()) -> list[str]:
    """``samtools mpileup [-r REGION] [-l BED] [-f REF] <params> bam...`` as an argv list.

    params may be a shell-quoted string (as given on the command line) or a list.
    """
    command = [samtools, "mpileup"]
    if region:
        command += ["-r", region]
    if positions_bed:
        command += ["-l", positions_bed]
    if ref_fasta:
        command += ["-f", ref_fasta]
    command += shlex.split(params) if isinstance(params, str) else list(params)
    command += list(bams)
    return command


@contextlib.contextmanager
def stream_mpileup(command: Sequence[str], binary: bool = False) -> Iterator[Iterator[str]]:
    """Run one mpileup process and yield an iterator over its output lines (newline kept), or
    with binary, its output as a byte stream (for candidate_lines).

    Raises subprocess.CalledProcessError (with samtools' stderr) if samtools fails, once the
    caller has consumed the output and left the ``with`` block normally. stderr goes to a
    temporary file, so a chatty samtools can never block on a full pipe.
    """
    with tempfile.TemporaryFile(mode="w+", encoding="latin-1") as stderr_file:
        process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=stderr_file,
                                   encoding=None if binary else "latin-1", bufsize=1 << 20)
        try:
            yield process.stdout
        except BaseException:
            process.kill()
            process.communicate()
            raise
        process.communicate()
        stderr_file.seek(0)
        stderr = stderr_file.read()
        errors = htslib_errors(stderr)
        if process.returncode != 0 or errors:
            # mpileup exits 0 after "[E::...] Failed to retrieve block" (a .fai of another FASTA):
            # its output then lacks sites, so an error line is a failure too.
            raise subprocess.CalledProcessError(process.returncode or 1, list(command),
                                                stderr="\n".join(errors) or stderr)



# Read-base characters that never make a read non-reference: the matches and the read start and
# end marks (a start mark's MAPQ character is not among them, so it counts: an over-count only).
_MATCH_MARKS = b".,$^"


def candidate_lines(stream: BinaryIO, samples: int, minimum: int, block_bytes: int = 1 << 23) -> Iterator[str]:
    """The pileup lines (of `samples` BAMs, from a byte stream) on which the first sample could
    have `minimum` non-reference reads by variant_read_upper_bound's count, and a few more: a
    superset, in order, for the exact screen to run on. Screens a block of lines at a time in C
    (bytes.translate, numpy): a pileup holds a line per covered base, and parsing each in Python
    costs more than samtools takes to write it.

    With the match marks deleted, the first sample's read-base field is as long as its count of
    characters that can be a mismatch, an indel mark or a MAPQ character, which bounds
    depth - #. - #, + #+ + #- from above. A block whose tab count does not fit `samples` is
    passed whole, unscreened."""
    tabs_per_line = 2 + 3 * samples
    rest = b""
    while block := stream.read(block_bytes):
        data = rest + block
        cut = data.rfind(b"\n") + 1
        lines, rest = data[:cut], data[cut:]
        if not lines:
            continue
        ends = np.flatnonzero(np.frombuffer(lines, np.uint8) == ord("\n"))
        tabs = np.flatnonzero(np.frombuffer(lines.translate(None, _MATCH_MARKS), np.uint8) == ord("\t"))
        if len(tabs) != len(ends) * tabs_per_line:
            yield from lines.decode("latin-1").splitlines(True)
            continue
        tabs = tabs.reshape(-1, tabs_per_line)
        starts = np.concatenate(([0], ends[:-1] + 1))
        for line in np.flatnonzero(tabs[:, 4] - tabs[:, 3] - 1 >= minimum).tolist():
            yield lines[starts[line] : ends[line] + 1].decode("latin-1")
    if rest:
        yield rest.decode("latin-1")

HTSLIB_ERROR = re.compile(r"^\[E::|Failed to retrieve block|^\[mpileup\] .*(fail|error)", re.IGNORECASE)


def htslib_errors(stderr: str) -> list[str]:
    """The error lines in samtools' stderr (htslib's `[E::...]` and mpileup's own)."""
    return [line for line in stderr.splitlines() if HTSLIB_ERROR.search(line)]


def parse_region(region: str) -> tuple[str, int | None, int | None]:
    """Split a samtools region ``chr``, ``chr:start`` or ``chr:start-end`` (1-based inclusive)."""
    chrom, sep, span = region.rpartition(":")
    if not sep or not re.fullmatch(r"[\d,]+(-[\d,]*)?", span):
        return region, None, None
    start_text, _, end_text = span.replace(",", "").partition("-")
    return chrom, int(start_text), int(end_text) if end_text else None
