"""The set-up steps that write resources/ (workflow/rules/reference.smk), each file written under a
`.partial` name and renamed when complete: resources/ is shared by runs from other working
directories, whose Snakemake has no record of an interrupted job, so a file there is whole.

fasta:         FASTA(s), plain, gzip or bgzip -> one uncompressed FASTA, concatenated in order.
simple-repeat: UCSC simpleRepeat.txt(.gz) -> Genomon's simple-repeat database: the bin column cut,
               rows sorted by position, bgzipped and tabix-indexed (mutfilter simplerepeat).
"""

from __future__ import annotations

import argparse
import os
import sys

import pysam

from genomon_smk.fileio import open_maybe_gzipped
from genomon_smk.plan.setup_build import BLOCK, ucsc_rows


def concatenate_fasta(sources: list[str], out: str) -> None:
    """The sources' sequences into `out`, each source ending with a line end (so that the next
    one's first header starts a line)."""
    partial = out + ".partial"
    with open(partial, "wb") as target:
        for source in sources:
            last = b"\n"
            with open_maybe_gzipped(source) as handle:
                while block := handle.read(BLOCK):
                    target.write(block)
                    last = block[-1:]
            if last != b"\n":
                target.write(b"\n")
    os.replace(partial, out)


def build_simple_repeat_db(source: str, out: str) -> int:
    """Write the database and its .tbi (the bin column cut, rows sorted by contig name and
    position as `sort -k1,1 -k2,2n -k3,3n` would, for tabix; BED coordinates: chromStart is
    0-based); the rows written."""
    rows = sorted((fields[1:] for fields in ucsc_rows(source)), key=lambda row: (row[0], int(row[1]), int(row[2])))
    plain = out + ".partial.bed"
    try:
        with open(plain, "w") as handle:
            handle.writelines("\t".join(row) + "\n" for row in rows)
        # tabix_index bgzips plain to plain.gz and indexes it (plain.gz.tbi), removing plain.
        zipped = pysam.tabix_index(plain, preset="bed", force=True)
        os.replace(zipped + ".tbi", out + ".tbi")
        os.replace(zipped, out)
    finally:
        for leftover in (plain, plain + ".gz", plain + ".gz.tbi"):
            if os.path.exists(leftover):
                os.remove(leftover)
    return len(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build what the pipeline reads into resources/.")
    commands = parser.add_subparsers(dest="command", required=True)
    fasta = commands.add_parser("fasta", help="concatenate and decompress FASTAs")
    fasta.add_argument("--out", required=True)
    fasta.add_argument("sources", nargs="+")
    repeats = commands.add_parser("simple-repeat", help="UCSC simpleRepeat table -> tabix-indexed database")
    repeats.add_argument("--out", required=True)
    repeats.add_argument("source")
    args = parser.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    if args.command == "fasta":
        concatenate_fasta(args.sources, args.out)
        print(f"reference_setup: {len(args.sources)} FASTA(s) -> {args.out}", file=sys.stderr)
    else:
        try:
            rows = build_simple_repeat_db(args.source, args.out)
        except ValueError as error:
            sys.exit(f"reference_setup: {error}")
        print(f"reference_setup: {rows} simple repeats -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
