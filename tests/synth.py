"""Tiny synthetic references and BAMs for the mutfilter tests and the speed benchmark.

Reads are described as :class:`ReadSpec` (0-based position, sequence, CIGAR string, flag,
MAPQ); :func:`write_bam` writes them coordinate-sorted and indexed with pysam only.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pysam


def random_sequence(length: int, seed: int) -> str:
    """A reproducible random ACGT sequence (no repeats to speak of, so alignments are unique)."""
    rng = random.Random(seed)
    return "".join(rng.choice("ACGT") for _ in range(length))


def write_reference(path: str, contigs: dict[str, str]) -> str:
    """Write a FASTA (60 bases a line) and its .fai index; return the path."""
    with open(path, "w") as out:
        for name, seq in contigs.items():
            out.write(f">{name}\n")
            for i in range(0, len(seq), 60):
                out.write(seq[i:i + 60] + "\n")
    pysam.faidx(path)
    return path


@dataclass
class ReadSpec:
    """One alignment record to write."""

    name: str
    chrom: str
    pos: int  # 0-based leftmost aligned base
    seq: str
    cigar: str | None = None  # default: all M
    flag: int = 0
    mapq: int = 60
    qual: int = 30
    mate_pos: int = -1
    tlen: int = 0


def pair(name: str, chrom: str, pos1: int, seq1: str, pos2: int, seq2: str, *,
         cigar1: str | None = None, cigar2: str | None = None, extra_flag: int = 0,
         mapq: int = 60, proper: bool = True) -> list[ReadSpec]:
    """A forward read 1 and reverse read 2 of one fragment (``extra_flag`` OR-ed into both)."""
    base = 0x1 | (0x2 if proper else 0) | extra_flag
    tlen = pos2 + len(seq2) - pos1
    return [
        ReadSpec(name, chrom, pos1, seq1, cigar1, base | 0x20 | 0x40, mapq,
                 mate_pos=pos2, tlen=tlen),
        ReadSpec(name, chrom, pos2, seq2, cigar2, base | 0x10 | 0x80, mapq,
                 mate_pos=pos1, tlen=-tlen),
    ]


def write_bam(path: str, contigs: dict[str, int], reads: list[ReadSpec]) -> str:
    """Write ``reads`` to a sorted, indexed BAM at ``path``; return the path."""
    header = {"HD": {"VN": "1.6", "SO": "coordinate"},
              "SQ": [{"SN": name, "LN": length} for name, length in contigs.items()]}
    ordered = sorted(reads, key=lambda r: (list(contigs).index(r.chrom), r.pos, r.name))
    with pysam.AlignmentFile(path, "wb", header=header) as bam:
        for spec in ordered:
            record = pysam.AlignedSegment(bam.header)
            record.query_name = spec.name
            record.flag = spec.flag
            record.reference_name = spec.chrom
            record.reference_start = spec.pos
            record.mapping_quality = spec.mapq
            record.cigarstring = spec.cigar or f"{len(spec.seq)}M"
            record.query_sequence = spec.seq
            record.query_qualities = pysam.qualitystring_to_array(
                chr(spec.qual + 33) * len(spec.seq))
            if spec.flag & 0x1:
                record.next_reference_name = spec.chrom
                record.next_reference_start = spec.mate_pos
                record.template_length = spec.tlen
            bam.write(record)
    pysam.index(path)
    return path


def simulate_snv_bam(path: str, chrom: str, reference: str, sites: list[tuple[int, str]],
                     depth: int, read_length: int = 150, fragment: int = 350,
                     alt_fraction: float = 0.3, seed: int = 1) -> str:
    """Paired reads at roughly ``depth``x around each ``(0-based pos, alt base)`` site.

    Fragments are placed uniformly so that about ``depth`` reads cover each site; a fragment
    carries the alt base with probability ``alt_fraction``.
    """
    rng = random.Random(seed)
    reads: list[ReadSpec] = []
    # a fragment starting in (site - fragment, site] covers the site with one of its two
    # reads with probability 2 * read_length / fragment
    n_fragments = max(1, round(depth * fragment / (2 * read_length)))
    for index, (site, alt) in enumerate(sites):
        haplotype_alt = reference[:site] + alt + reference[site + 1:]
        for k in range(n_fragments):
            start = max(0, min(site - rng.randrange(fragment), len(reference) - fragment))
            source = haplotype_alt if rng.random() < alt_fraction else reference
            pos2 = start + fragment - read_length
            reads += pair(f"s{index}f{k}", chrom, start, source[start:start + read_length],
                          pos2, source[pos2:pos2 + read_length])
    return write_bam(path, {chrom: len(reference)}, reads)
