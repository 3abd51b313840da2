"""Command line: annotate a Genomon mutation TSV with the five ANNOVAR refGene columns.

    python -m genomon_smk.tools.annotate --genes TABLE --reference FASTA INPUT.tsv OUTPUT.tsv

TABLE: a UCSC genePred table (refGene.txt[.gz], knownGene-style), a GTF, or a built-in name
(hg19, GRCh37, hg38, GRCh38, mm10: annot_utils' refGene in .venv-sv). INPUT: ``#`` meta lines
and the ``Chr Start End Ref Alt ...`` header line are kept; the five columns go right after
``Alt`` (as Genomon's ANNOVAR-merged result has them); every other column is carried through.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from genomon_smk.fileio import open_text
from .annotator import COLUMNS, Annotator
from .genes import BUILTIN_NAMES, CHROMOSOME_1, GeneTableError, chromosome_1, resolve_table

LOG = logging.getLogger("annotate")


class InputError(ValueError):
    """A mutation table that cannot be annotated (names file and line)."""


def annotate_table(annotator: Annotator, source: str, target: str) -> int:
    """Write `target` (via a temporary file, renamed when complete); returns the row count."""
    partial = f"{target}.partial"
    rows = 0
    try:
        with open_text(source) as inp, open(partial, "w") as out:
            header_done = False
            for number, line in enumerate(inp, 1):
                text = line.rstrip("\r\n")
                if text.startswith("#"):
                    out.write(text + "\n")
                    continue
                if not text.strip():
                    continue
                fields = text.split("\t")
                if not header_done:
                    header_done = True
                    if fields[0] == "Chr":
                        if any(name in fields for name in COLUMNS):
                            raise InputError(f"{source} line {number}: the header already has "
                                             f"the annotation columns")
                        out.write("\t".join(fields[:5] + COLUMNS + fields[5:]) + "\n")
                        continue
                if len(fields) < 5:
                    raise InputError(f"{source} line {number}: {len(fields)} fields, a mutation "
                                     f"row starts with Chr, Start, End, Ref, Alt")
                values = annotator.annotate(*fields[:5])
                out.write("\t".join(fields[:5] + list(values) + fields[5:]) + "\n")
                rows += 1
        os.replace(partial, target)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise
    return rows


def plain_gzip(path: str) -> bool:
    """A gzip file that is not BGZF (bgzip's blocks: the FEXTRA field with a `BC` subfield)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(14)
    except OSError:
        return False
    return head[:2] == b"\x1f\x8b" and not (len(head) == 14 and head[3] & 4 and head[12:14] == b"BC")


def other_genome(genes: str, fai: str) -> str | None:
    """Why a built-in table is another genome's than the reference's (its chromosome 1's length,
    as the workflow's gene_annotation check tells), or None."""
    with open(fai) as handle:
        first = chromosome_1((fields[0], int(fields[1])) for fields in (line.split("\t") for line in handle)
                             if len(fields) > 1)
    if first == CHROMOSOME_1[genes]:
        return None
    have = f"its chromosome 1 is {first:,} bp" if first else "it has no chromosome 1 (or chr1)"
    return (f"{genes} is the refGene table of a genome whose chromosome 1 is {CHROMOSOME_1[genes]:,} bp, "
            f"but {have} ({fai}): the columns are another genome's (give this reference's genePred or GTF)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m genomon_smk.tools.annotate",
        description="Gene-based annotation (ANNOVAR refGene columns) of a Genomon mutation TSV.")
    parser.add_argument("--genes", required=True,
                        help="genePred table, GTF, or hg19/GRCh37/hg38/GRCh38/mm10")
    parser.add_argument("--reference", required=True, help="reference FASTA (with .fai)")
    parser.add_argument("input", help="Genomon mutation TSV (Chr Start End Ref Alt ...)")
    parser.add_argument("output", help="the TSV with the five *.refGene columns after Alt")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[annotate] %(message)s")
    try:
        table = resolve_table(args.genes)
        for path, what in ((table, "gene table"), (args.reference, "reference FASTA"),
                           (args.input, "input")):
            if not os.path.exists(path):
                raise InputError(f"{what} {path} does not exist")
        if plain_gzip(args.reference):
            raise InputError(f"reference FASTA {args.reference} is gzip-compressed, which samtools faidx "
                             "cannot index: give it uncompressed or bgzip-compressed (gunzip it, or "
                             "zcat | bgzip), then samtools faidx it")
        if not os.path.exists(f"{args.reference}.fai"):
            raise InputError(f"reference FASTA {args.reference} has no .fai index "
                             f"(samtools faidx {args.reference})")
        if args.genes in BUILTIN_NAMES and not os.path.exists(args.genes):
            warning = other_genome(args.genes, f"{args.reference}.fai")
            if warning:
                print(f"annotate: warning: {warning}", file=sys.stderr)
        began = time.time()
        annotator = Annotator(table, args.reference)
        rows = annotate_table(annotator, args.input, args.output)
        LOG.info("%d rows annotated with %s in %.1f s", rows, table, time.time() - began)
    except (InputError, GeneTableError, KeyError, FileNotFoundError) as error:
        print(f"annotate: error: {error}", file=sys.stderr)
        return 2
    return 0
