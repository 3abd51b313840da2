"""``mutfilter indel``: the largest nearby indel rate in the normal sample (spec §3 "indel").

Upstream runs ``samtools mpileup <params> -r chr:max(0,s0-L+1)-(End+L) normal.bam`` once per
candidate. We compute the same per-column numbers in-process with ``pysam.AlignmentFile.pileup``
(one BAM handle per run, no subprocess), applying the mpileup read filters parsed from
``--samtools_params``: min MAPQ ``-q``, min BQ ``-Q`` (for the depth column), ``--ff`` flag
filter (samtools' default UNMAP,SECONDARY,QCFAIL,DUP), ``-d`` max depth, and samtools' default
exclusion of anomalous read pairs (paired but not properly paired) unless ``-A`` is given.
BAQ is never computed (Genomon passes ``-B``; BAQ only changes base qualities).

Per column: ``depth`` = reads in the pileup whose base quality passes ``-Q`` (the mpileup depth
column, deletions and ref-skips included); indel tokens are keyed by (type, upper-cased
sequence) - upstream's pileup has no reference so a deletion's sequence is its length in ``N``s;
mates on both strands count together.

Deliberate difference from upstream Genomon (docs/differences.md): the pileup is computed
in-process instead of one ``samtools mpileup`` per candidate (``-s`` is accepted and unused);
the same numbers with Genomon's options.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

import pysam

from .reads import overlapping, prefetch
from .table import NA, Candidate
from .vcf import VcfField, VcfLayout

COLUMNS = ("indel_mismatch_count", "indel_mismatch_rate")
# pysam's CIGAR operation codes of an insertion and a deletion
CIGAR_INS, CIGAR_DEL = pysam.CINS, pysam.CDEL
VCF_LAYOUT = VcfLayout(tumor_format=(
    VcfField("NI", 0, "1", "Integer", "Reads with the top nearby indel in the normal"),
    VcfField("RI", 1, "1", "Float", "Rate of the top nearby indel in the normal"),
))

FLAG_NAMES = {
    "PAIRED": 0x1, "PROPER_PAIR": 0x2, "UNMAP": 0x4, "MUNMAP": 0x8, "REVERSE": 0x10,
    "MREVERSE": 0x20, "READ1": 0x40, "READ2": 0x80, "SECONDARY": 0x100, "QCFAIL": 0x200,
    "DUP": 0x400, "SUPPLEMENTARY": 0x800,
}
DEFAULT_FLAG_FILTER = 0x4 | 0x100 | 0x200 | 0x400


@dataclass(frozen=True)
class PileupFilter:
    """The samtools mpileup read filters that decide the pileup's depth and indel tokens."""

    min_mapq: int = 0
    min_baseq: int = 13
    flag_filter: int = DEFAULT_FLAG_FILTER
    count_orphans: bool = False
    max_depth: int = 8000
    ignored: tuple[str, ...] = field(default=())


def parse_flags(text: str) -> int:
    """Parse a samtools flag list: a number (``3332``, ``0x904``) or names (``UNMAP,DUP``)."""
    text = text.strip()
    try:
        return int(text, 0)
    except ValueError:
        value = 0
        for name in text.split(","):
            value |= FLAG_NAMES[name.strip().upper()]
        return value


# mpileup short options that take a value (so "-BQ0" splits into -B and -Q 0).
_VALUE_OPTS = set("bCdfglmoQqrRtLhFe")
_LONG_ALIASES = {
    "--min-MQ": "q", "--min-BQ": "Q", "--max-depth": "d", "--excl-flags": "ff",
    "--ff": "ff", "--count-orphans": "A", "--no-BAQ": "B",
}


def parse_samtools_params(params: str) -> PileupFilter:
    """Turn an mpileup option string (e.g. ``-q 20 -BQ0 -d 10000000 --ff UNMAP,DUP``) into a
    :class:`PileupFilter`; options that do not affect indel counts are recorded as ignored."""
    tokens = shlex.split(params or "")
    values = {"q": 0, "Q": 13, "d": 8000, "ff": DEFAULT_FLAG_FILTER, "A": False}
    ignored = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token.startswith("--"):
            name, _, inline = token.partition("=")
            key = _LONG_ALIASES.get(name)
            if key in ("A", "B"):
                values[key] = True
                continue
            value = inline
            if not inline and i < len(tokens):
                value, i = tokens[i], i + 1
            if key is None:
                ignored.append(token)
            else:
                values[key] = value
            continue
        if not token.startswith("-") or len(token) < 2:
            ignored.append(token)
            continue
        letters = token[1:]
        j = 0
        while j < len(letters):
            letter = letters[j]
            j += 1
            if letter in _VALUE_OPTS:
                value = letters[j:]
                if not value and i < len(tokens):
                    value, i = tokens[i], i + 1
                values[letter] = value
                break
            values[letter] = True
    return PileupFilter(
        min_mapq=int(values["q"]),
        min_baseq=int(values["Q"]),
        flag_filter=parse_flags(str(values["ff"])),
        count_orphans=bool(values["A"]),
        max_depth=int(values["d"]),
        ignored=tuple(ignored),
    )


def passes_base_quality(entry: pysam.PileupRead, min_baseq: int) -> bool:
    """Whether mpileup keeps the entry in its depth column and bases string (-Q)."""
    qpos = entry.query_position_or_next
    quals = entry.alignment.query_qualities
    return quals is None or qpos >= len(quals) or quals[qpos] >= min_baseq


def pileup_indels(bam: pysam.AlignmentFile, chrom: str, start0: int, end0: int,
                  filt: PileupFilter) -> Iterator[tuple[int, int, Counter]]:
    """Yield ``(pos1, depth, indel_counts)`` for each pileup column in ``[start0, end0)``.

    ``indel_counts`` maps ``("+", SEQ)`` / ``("-", "N" * len)`` to the number of reads whose
    pileup entry at this column carries that indel token (``pos1`` is the base before it).
    """
    if chrom not in bam.references:
        return
    columns = bam.pileup(
        chrom, start0, end0, truncate=True, stepper="samtools",
        flag_filter=filt.flag_filter, min_mapping_quality=filt.min_mapq,
        min_base_quality=0, ignore_orphans=not filt.count_orphans, ignore_overlaps=True,
        compute_baq=False, max_depth=filt.max_depth,
    )
    for column in columns:
        entries = column.pileups
        if filt.min_baseq:  # Genomon's -Q0 reads no quality
            entries = [entry for entry in entries if passes_base_quality(entry, filt.min_baseq)]
        indels: Counter = Counter()
        for entry in entries:
            size = entry.indel
            if size > 0:
                qpos = entry.query_position_or_next
                seq = entry.alignment.query_sequence[qpos + 1: qpos + 1 + size].upper()
                indels[("+", seq)] += 1
            elif size < 0:
                indels[("-", "N" * -size)] += 1
        yield column.reference_pos + 1, len(entries), indels


def any_indel_read(reads) -> bool:
    """Whether any of the records has an insertion or a deletion (a pileup of them has an indel
    token only then; the pileup's filters can only drop records)."""
    return any(op in (CIGAR_INS, CIGAR_DEL) for read in reads for op, _ in (read.cigartuples or ()))


def max_indel_mismatch(columns, start: int, end: int, neighbor: int,
                       min_depth: int) -> tuple[int, float]:
    """Return ``(count, rate)`` of the highest-rate indel whose span touches the candidate.

    Span is ``[pos, pos]`` (insertion) or ``[pos+1, pos+len]`` (deletion), widened by
    ``neighbor`` on both sides; it qualifies if it holds the 1-based Start or End. Columns
    with depth 0 or below ``min_depth`` are skipped; equal rates later in the region win
    (upstream compares with >=). No qualifying indel gives (0, 0.0).
    """
    best_count, best_rate = 0, 0.0
    for pos, depth, indels in columns:
        if depth == 0 or depth < min_depth:
            continue
        for (kind, seq), count in indels.items():
            rate = count / depth
            if kind == "+":
                span_start, span_end = pos, pos
            else:
                span_start, span_end = pos + 1, pos + len(seq)
            lo, hi = span_start - neighbor, span_end + neighbor
            if rate >= best_rate and (lo <= start <= hi or lo <= end <= hi):
                best_count, best_rate = count, rate
    return best_count, best_rate


@dataclass(frozen=True)
class IndelAnnotatorFactory:
    """Picklable recipe for an :class:`IndelAnnotator`."""

    normal_bam: str
    search_length: int = 40
    neighbor: int = 5
    min_depth: int = 8
    min_mismatch: int = 100000
    af_thres: float = 1.0
    samtools_params: str = "-q 20 -BQ0 -d 10000000"
    reference: str | None = None

    def __call__(self) -> "IndelAnnotator":
        return IndelAnnotator(self)


class IndelAnnotator:
    """Computes ``indel_mismatch_count`` / ``indel_mismatch_rate`` for candidates."""

    def __init__(self, config: IndelAnnotatorFactory):
        self.config = config
        self.filter = parse_samtools_params(config.samtools_params)
        self.bam = pysam.AlignmentFile(config.normal_bam, reference_filename=config.reference)

    def prefetch(self, candidates: list[Candidate]) -> None:
        """The reads of these candidates (the next rows), fetched together (reads.prefetch)."""
        length, contigs = self.config.search_length, set(self.bam.references)
        prefetch(self.bam, [(cand.chrom, max(0, cand.s0 - length), cand.end + length)
                            for cand in candidates if cand.chrom in contigs], self.config.reference)

    def __call__(self, cand: Candidate) -> list[str] | None:
        """New columns for ``cand``; None when both keep conditions fail."""
        c = self.config
        # samtools region chr:max(0, s0-L+1)-(End+L) is 1-based inclusive.
        start0 = max(0, cand.s0 - c.search_length)
        end0 = cand.end + c.search_length
        if cand.chrom not in self.bam.references:
            return [NA, NA]
        # Most candidates have no read with an indel near them in the normal: no pileup column
        # can then carry an indel, and the pileup (the filter's cost) is not made.
        if any_indel_read(overlapping(self.bam, cand.chrom, start0, end0)):
            columns = pileup_indels(self.bam, cand.chrom, start0, end0, self.filter)
        else:
            columns = []
        count, rate = max_indel_mismatch(columns, cand.start, cand.end, c.neighbor, c.min_depth)
        if not (count <= c.min_mismatch or rate <= c.af_thres):
            return None
        return [str(count), "%.3f" % rate]
