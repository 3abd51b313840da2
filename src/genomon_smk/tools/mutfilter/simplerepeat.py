"""``mutfilter simplerepeat``: overlapping UCSC simpleRepeat records (spec §3 "simplerepeat").

The database is UCSC ``simpleRepeat.txt`` with the ``bin`` column cut (``cut -f2-``), bgzipped
and tabix-indexed, so its columns are ``chrom chromStart chromEnd name period copyNum
consensusSize perMatch perIndel score A C G T entropy sequence``: the repeat unit sequence is
column 16 (index 15). For each candidate the records overlapping ``[s0, End)`` are fetched;
the first five give ``simple_repeat_pos`` = ``chrom:chromStart-chromEnd`` and
``simple_repeat_seq`` = sequence, each joined by ``;``; ``---`` when none or on error.

Contig rule: upstream looks up ``"chr" + Chr``. We try, in order, the ``chr``-prefixed name
(skipped when Chr already starts with ``chr``) and Chr as given, and use the first name the
index knows; so ``1`` finds ``chr1`` in a UCSC db, and ``chr1`` or a db named ``1`` work too.

Deliberate difference from upstream Genomon (docs/differences.md): the contig rule above
(upstream always looks up ``"chr" + Chr``, so a ``chr``-named reference gets ``---`` there).
"""

from __future__ import annotations

from dataclasses import dataclass

import pysam

from .table import NA, Candidate
from .vcf import VcfField, VcfLayout

COLUMNS = ("simple_repeat_pos", "simple_repeat_seq")
VCF_LAYOUT = VcfLayout(info=(VcfField("SR", 0, "0", "Flag", "Overlaps a simple repeat"),))
MAX_HITS = 5
SEQUENCE_INDEX = 15  # column 16 after the bin column is cut


def contig_candidates(chrom: str) -> list[str]:
    """Names to try in the tabix index, most upstream-like first."""
    names = [] if chrom.startswith("chr") else ["chr" + chrom]
    names.append(chrom)
    return names


def repeat_columns(records) -> list[str]:
    """Format up to five tab-split db records into the two output columns."""
    positions, sequences = [], []
    for fields in records:
        if len(positions) == MAX_HITS:
            break
        positions.append(f"{fields[0]}:{fields[1]}-{fields[2]}")
        sequences.append(fields[SEQUENCE_INDEX])
    if not positions:
        return [NA, NA]
    return [";".join(positions), ";".join(sequences)]


@dataclass(frozen=True)
class SimpleRepeatAnnotatorFactory:
    """Picklable recipe for a :class:`SimpleRepeatAnnotator`."""

    simple_repeat_db: str

    def __call__(self) -> "SimpleRepeatAnnotator":
        return SimpleRepeatAnnotator(self.simple_repeat_db)


class SimpleRepeatAnnotator:
    """Looks candidates up in the tabix-indexed simpleRepeat db."""

    def __init__(self, db_path: str):
        self.tabix = pysam.TabixFile(db_path)
        self.contigs = set(self.tabix.contigs)

    def lookup_contig(self, chrom: str) -> str | None:
        """The db contig for ``chrom`` under the rule in the module docstring, or None."""
        for name in contig_candidates(chrom):
            if name in self.contigs:
                return name
        return None

    def __call__(self, cand: Candidate) -> list[str]:
        contig = self.lookup_contig(cand.chrom)
        if contig is None:
            return [NA, NA]
        try:
            rows = self.tabix.fetch(contig, cand.s0, cand.end, parser=pysam.asTuple())
            return repeat_columns(rows)
        except (ValueError, IndexError):
            # upstream prints --- when the lookup fails (bad region, short record)
            return [NA, NA]
