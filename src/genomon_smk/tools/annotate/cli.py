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
from .genes import GeneTableError, resolve_table

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
        if not os.path.exists(f"{args.reference}.fai"):
            raise InputError(f"reference FASTA {args.reference} has no .fai index "
                             f"(samtools faidx {args.reference})")
        began = time.time()
        annotator = Annotator(table, args.reference)
        rows = annotate_table(annotator, args.input, args.output)
        LOG.info("%d rows annotated with %s in %.1f s", rows, table, time.time() - began)
    except (InputError, GeneTableError, KeyError, FileNotFoundError) as error:
        print(f"annotate: error: {error}", file=sys.stderr)
        return 2
    return 0
