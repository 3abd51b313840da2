"""Scatter one chunk's alignments by region (Genomon's "scatter sam" into chr dirs).

Each record goes to the region holding its position (reads without a position go to the
`unmapped` region), so a region's markdup job finds all its reads in one file per chunk.
Every region gets a file, empty or not, so later stages never have to guess which exist.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack

import pysam

from genomon_smk.plan.regions import RegionLookup, read_regions

# Region pieces are read once by the next stage on the same file system: light compression
# keeps them small without making bwa's partner step wait on zlib.
PIECE_OPTIONS = ["level=1"]


def scatter(alignments: str, regions_tsv: str, out_dir: str) -> dict[str, int]:
    """Write `<out_dir>/<region>.bam` for every region; return records written per region."""
    regions = read_regions(regions_tsv)
    lookup = RegionLookup(regions)
    os.makedirs(out_dir, exist_ok=True)
    counts = [0] * len(regions)
    with ExitStack() as stack:
        source = stack.enter_context(pysam.AlignmentFile(alignments, "r", check_sq=False))
        missing = set(source.references) - lookup.contigs
        if missing:
            raise ValueError(f"{alignments}: contigs in no region: {', '.join(sorted(missing)[:5])}")
        pieces = [
            stack.enter_context(
                pysam.AlignmentFile(os.path.join(out_dir, f"{r.name}.bam"), "wb", template=source, format_options=PIECE_OPTIONS)
            )
            for r in regions
        ]
        for record in source:
            index = lookup.index(record.reference_name, record.reference_start)
            pieces[index].write(record)
            counts[index] += 1
    return {region.name: n for region, n in zip(regions, counts)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Scatter a SAM/BAM by region into one BAM per region.")
    parser.add_argument("--regions", required=True, help="region table (genomon_smk.plan.regions)")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("alignments", help="SAM or BAM from the aligner")
    args = parser.parse_args(argv)
    counts = scatter(args.alignments, args.regions, args.out_dir)
    print(f"scatter: {sum(counts.values())} records into {len(counts)} regions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
