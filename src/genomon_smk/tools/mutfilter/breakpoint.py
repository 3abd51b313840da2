"""``mutfilter breakpoint``: clipped-read junctions near a candidate in the normal sample
(spec §3 "breakpoint").

Reads of ``[max(0, s0 - c), End + c)`` with no excluded flag, at least two CIGAR operations and
MAPQ >= ``--mapq_thres`` vote for junctions: a right clip (last op S/H) of >= ``c`` bases votes
for the last aligned base (1-based, = ``reference_end``), a left clip (first op S/H) of >= ``c``
bases for ``reference_start`` (0-based start = 1-based base before the alignment). Votes are
counted per (junction, side). A junction ``j`` is eligible if ``j - c <= s0 <= j``,
``s0 <= j <= End`` or ``j <= End <= j + c``; the eligible (junction, side) with the most reads
wins (first seen in fetch order on ties) and is reported as ``count`` and
``min(|s0 - j|, |End - j|)``. No eligible junction gives ``0 0``; ``--- ---`` when
``count(chr, s0, s0 + 1) >= max_depth``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pysam

from .reads import overlapping, prefetch
from .table import NA, Candidate
from .vcf import VcfField, VcfLayout

COLUMNS = ("bp_mismatch_count", "distance_from_breakpoint")
VCF_LAYOUT = VcfLayout(tumor_format=(
    VcfField("NB", 0, "1", "Integer", "Normal reads clipped at the nearest junction"),
    VcfField("LB", 1, "1", "Integer", "Distance from the junction"),
))

SOFT_CLIP, HARD_CLIP = 4, 5
CLIPS = (SOFT_CLIP, HARD_CLIP)


def junction_votes(reads, min_clip: int, mapq_thres: int, exclude_flags: int) -> dict:
    """Count reads per ``(junction, side)``, side ``"L"`` or ``"R"``, in first-seen order."""
    votes: dict[tuple[int, str], int] = {}
    for read in reads:
        if read.flag & exclude_flags or read.mapping_quality < mapq_thres:
            continue
        cigar = read.cigartuples
        if not cigar or len(cigar) < 2:
            continue
        last_op, last_len = cigar[-1]
        if last_op in CLIPS and last_len >= min_clip:
            key = (read.reference_end, "R")
            votes[key] = votes.get(key, 0) + 1
        first_op, first_len = cigar[0]
        if first_op in CLIPS and first_len >= min_clip:
            key = (read.reference_start, "L")
            votes[key] = votes.get(key, 0) + 1
    return votes


def best_junction(votes: dict, s0: int, end: int, min_clip: int) -> tuple[int, int]:
    """Return ``(count, distance)`` of the most supported eligible junction, or ``(0, 0)``."""
    best_count, best_distance = 0, 0
    for (junction, _side), count in votes.items():
        eligible = (junction - min_clip <= s0 <= junction or s0 <= junction <= end
                    or junction <= end <= junction + min_clip)
        if eligible and count > best_count:
            best_count = count
            best_distance = min(abs(s0 - junction), abs(end - junction))
    return best_count, best_distance


@dataclass(frozen=True)
class BreakpointAnnotatorFactory:
    """Picklable recipe for a :class:`BreakpointAnnotator`."""

    normal_bam: str
    max_depth: int = 1000
    min_clip_size: int = 20
    junc_num_thres: int = 0
    mapq_thres: int = 10
    exclude_sam_flags: int = 3332
    reference: str | None = None

    def __call__(self) -> "BreakpointAnnotator":
        return BreakpointAnnotator(self)


class BreakpointAnnotator:
    """Computes ``bp_mismatch_count`` / ``distance_from_breakpoint`` for candidates."""

    def __init__(self, config: BreakpointAnnotatorFactory):
        self.config = config
        self.bam = pysam.AlignmentFile(config.normal_bam, reference_filename=config.reference)

    def prefetch(self, candidates: list[Candidate]) -> None:
        """The reads of these candidates (the next rows), fetched together (reads.prefetch)."""
        clip, contigs = self.config.min_clip_size, set(self.bam.references)
        prefetch(self.bam, [query for cand in candidates if cand.chrom in contigs
                            for query in ((cand.chrom, cand.s0, cand.s0 + 1),
                                          (cand.chrom, max(0, cand.s0 - clip), cand.end + clip))],
                 self.config.reference)

    def __call__(self, cand: Candidate) -> list[str] | None:
        """New columns for ``cand``; None when the count is below ``--junc_num_thres``."""
        c = self.config
        if cand.chrom not in self.bam.references:
            return [NA, NA]
        # AlignmentFile.count and .fetch, from the window the realignment already fetched
        if len(overlapping(self.bam, cand.chrom, cand.s0, cand.s0 + 1)) >= c.max_depth:
            return [NA, NA]
        reads = overlapping(self.bam, cand.chrom, max(0, cand.s0 - c.min_clip_size),
                            cand.end + c.min_clip_size)
        votes = junction_votes(reads, c.min_clip_size, c.mapq_thres, c.exclude_sam_flags)
        count, distance = best_junction(votes, cand.s0, cand.end, c.min_clip_size)
        if count < c.junc_num_thres:
            return None
        return [str(count), str(distance)]
