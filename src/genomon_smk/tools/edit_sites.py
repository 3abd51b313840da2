"""The reference positions where at least N reads show an edit, read from the reads' MD tags and
CIGARs instead of a pileup: fisher's screen of a tumor this pipeline mapped (``fisher
comparison --screen_edited_reads``).

A site can only be called when at least ``min_variant_read`` reads show its variant there: an
SNV's reads a base other than the reference's (a mismatch in the MD tag, computed by the aligner
against the same reference), an indel's reads an insertion or deletion that starts after that
base (the CIGAR's I or D op, whose pileup mark sits on the base before it). Every read is counted,
whatever its flags, mapping or base quality, so the sites kept are a superset of those the
pileup's exact counts can call: the pair's pileup at these sites then gives exactly the rows of
its whole pileup. Against the pileup of the edited reads it replaced, the same reads (samtools
view's filter) without a pileup line per covered base: about half the CPU.

Deliberate difference from upstream Genomon (docs/differences.md): upstream fisher has no screen;
this one trusts the MD tags to tell every mismatch (given only for BAMs this pipeline mapped).
"""

from __future__ import annotations

import logging
import re
import subprocess
import tempfile
from collections import Counter
from typing import Iterable

LOG = logging.getLogger("fisher")

_MD_SPLIT = re.compile(r"(\D+)").split
# CIGAR ops: I and D mark their anchor base; M, D, N, = and X move along the reference.
_INDEL_OPS = (1, 2)
_REFERENCE_OPS = (0, 2, 3, 7, 8)
_UNMAPPED = 0x4


class MissingMD(Exception):
    """A read without an MD tag: its mismatches are unknown without the reference."""


def edit_positions(start: int, md: str, cigar: Iterable[tuple[int, int]] | None) -> list[int]:
    """0-based reference positions where a read aligned at `start` shows an edit in a pileup:
    its mismatches (from `md`) and the anchor base of each insertion and deletion (from the
    CIGAR's op, length pairs; None when the caller knows there is none)."""
    positions = []
    if not md.isdigit():
        # Matches' counts and what lies between them: a deleted stretch (^ and its bases) or
        # mismatched reference bases (one per base: the tag's grammar puts a 0 between two).
        pieces = _MD_SPLIT(md)
        position = start + int(pieces[0] or 0)
        for index in range(1, len(pieces), 2):
            between = pieces[index]
            if between[0] == "^":
                position += len(between) - 1
            elif len(between) == 1:
                positions.append(position)
                position += 1
            else:
                positions.extend(range(position, position + len(between)))
                position += len(between)
            position += int(pieces[index + 1] or 0)
    if cigar is not None:
        reference = start
        for op, length in cigar:
            if op in _INDEL_OPS:
                positions.append(reference - 1)
            if op in _REFERENCE_OPS:
                reference += length
    return positions


def count_edits(reads) -> dict[str, Counter]:
    """Per contig, the number of reads (pysam records, in any order) showing an edit at each
    0-based position. Raises MissingMD for a mapped read without an MD tag."""
    positions: dict[str, list[int]] = {}
    contig_id, kept = None, []
    for read in reads:
        if read.flag & _UNMAPPED:
            continue
        if read.reference_id != contig_id:
            contig_id = read.reference_id
            kept = positions.setdefault(read.reference_name, [])
        try:
            md = read.get_tag("MD")
        except KeyError:
            raise MissingMD(read.query_name) from None
        cigar = read.cigartuples
        kept += edit_positions(read.reference_start, md, cigar if len(cigar) > 1 else None)
    return {contig: Counter(kept) for contig, kept in positions.items()}


def sites_from_counts(counts: dict[str, Counter], minimum: int) -> list[tuple[str, str]]:
    """(contig, 1-based position as text) with at least `minimum` edits, by contig in the order
    met, then by position: the form of fisher's screened sites."""
    return [(contig, str(position + 1)) for contig, counter in counts.items()
            for position in sorted(p for p, n in counter.items() if n >= minimum)]


def edited_read_sites(view: list[str], minimum: int) -> list[tuple[str, str]] | None:
    """The sites where at least `minimum` of the reads `view` (a samtools view command writing
    BAM to stdout) show an edit; None when a read has no MD tag (the caller then piles them up)."""
    import pysam  # the screen's only use of it; fisher's other paths run without

    LOG.info("running %s", " ".join(view))
    with tempfile.TemporaryFile() as errors, subprocess.Popen(view, stdout=subprocess.PIPE, stderr=errors) as process:
        try:
            with pysam.AlignmentFile(process.stdout, "rb") as stream:
                counts = count_edits(stream)
        except MissingMD as missing:
            LOG.info("read %s has no MD tag: the screen piles the reads up", missing)
            process.kill()
            return None
        except (OSError, ValueError):
            if not process.wait():
                raise  # samtools wrote what pysam cannot read
        if process.wait():
            errors.seek(0)
            raise subprocess.CalledProcessError(process.returncode, view,
                                                stderr=errors.read().decode(errors="replace"))
    return sites_from_counts(counts, minimum)
