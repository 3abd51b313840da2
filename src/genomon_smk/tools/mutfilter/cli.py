"""Command line of the clean-room ``mutfilter`` (GenomonMutationFilter-compatible options).

Subcommands ``realignment``, ``indel``, ``breakpoint`` and ``simplerepeat`` read an anno TSV
(``-t``), append their columns and write ``-o``. With ``-O vcf`` the input is a VCF and
the values go into INFO/FORMAT keys instead (see :mod:`.vcf`).

Deliberate difference from upstream Genomon (docs/differences.md): ``realignment --blat`` is
refused (blat mode is not rebuilt; parasail is the default, ``--edlib`` the alternative).
"""

from __future__ import annotations

import argparse
import sys

from genomon_smk import tool_version
from .indel import parse_flags


def _flags(text: str) -> int:
    """argparse type for SAM flag options: decimal, hex or comma-separated names."""
    try:
        return parse_flags(text)
    except KeyError as error:
        raise argparse.ArgumentTypeError(f"unknown SAM flag name {error}") from None


def _common(parser: argparse.ArgumentParser, bam1: bool, bam2_required: bool) -> None:
    """Options shared by the subcommands (same short and long names as upstream)."""
    parser.add_argument("-t", "--target_mutation_file", required=True,
                        help="candidate mutations (anno TSV; a VCF with -O vcf)")
    if bam1:
        parser.add_argument("-1", "--bam1", required=True, help="tumor BAM/CRAM (indexed)")
    if bam2_required is not None:
        parser.add_argument("-2", "--bam2", required=bam2_required,
                            help="normal BAM/CRAM (indexed)")
    parser.add_argument("-A", "--sample1", help="tumor sample name (VCF mode)")
    parser.add_argument("-B", "--sample2", help="normal sample name (VCF mode)")
    parser.add_argument("-o", "--output", required=True, help="output file")
    parser.add_argument("-O", "--output_format", choices=("vcf", "anno"), default="anno")
    parser.add_argument("--header", action="store_true",
                        help="the first input line is a header; new column names are appended")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser with all four subcommands."""
    parser = argparse.ArgumentParser(prog="mutfilter",
                                     description="Filters for Genomon somatic mutation candidates")
    parser.add_argument("--version", action="version", version=tool_version("mutfilter"))
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("realignment", help="realign reads to ref/alt templates")
    _common(p, bam1=True, bam2_required=False)
    p.add_argument("-r", "--ref_genome", required=True, help="reference FASTA (faidx-indexed)")
    p.add_argument("--blat", action="store_true", help="realign with blat (needs blat)")
    p.add_argument("-b", "--blat_path", default=None, help="blat executable")
    p.add_argument("--edlib", action="store_true", help="realign with edlib (HW edit distance)")
    p.add_argument("-m", "--tumor_min_mismatch", type=int, default=0)
    p.add_argument("-M", "--normal_max_mismatch", type=int, default=100000)
    p.add_argument("-s", "--score_difference", type=int, default=5)
    p.add_argument("-w", "--window_size", type=int, default=200)
    p.add_argument("-d", "--max_depth", type=int, default=5000)
    p.add_argument("-F", "--exclude_sam_flags", type=_flags, default=3328)
    p.add_argument("-T", "--thread_num", type=int, default=1)
    p.set_defaults(handler=run_realignment)

    p = sub.add_parser("indel", help="max indel rate near the candidate in the normal")
    _common(p, bam1=False, bam2_required=True)
    p.add_argument("-l", "--search_length", type=int, default=40)
    p.add_argument("-n", "--neighbor", type=int, default=5)
    p.add_argument("-d", "--min_depth", type=int, default=8)
    p.add_argument("-m", "--min_mismatch", type=int, default=100000)
    p.add_argument("-a", "--af_thres", type=float, default=1.0)
    p.add_argument("-s", "--samtools_path", default="samtools",
                   help="accepted for compatibility; the pileup is computed in-process")
    p.add_argument("-S", "--samtools_params", default="-q 20 -BQ0 -d 10000000",
                   help="mpileup read filters to emulate (-q, -Q, -d, --ff, -A)")
    p.add_argument("-r", "--ref_genome", default=None, help="reference FASTA (for CRAM)")
    p.add_argument("-T", "--thread_num", type=int, default=1)
    p.set_defaults(handler=run_indel)

    p = sub.add_parser("breakpoint", help="clipped-read junctions near the candidate")
    _common(p, bam1=False, bam2_required=True)
    p.add_argument("-d", "--max_depth", type=int, default=1000)
    p.add_argument("-c", "--min_clip_size", type=int, default=20)
    p.add_argument("-j", "--junc_num_thres", type=int, default=0)
    p.add_argument("-m", "--mapq_thres", type=int, default=10)
    p.add_argument("-F", "--exclude_sam_flags", type=_flags, default=3332)
    p.add_argument("-r", "--ref_genome", default=None, help="reference FASTA (for CRAM)")
    p.add_argument("-T", "--thread_num", type=int, default=1)
    p.set_defaults(handler=run_breakpoint)

    p = sub.add_parser("simplerepeat", help="overlapping UCSC simpleRepeat records")
    _common(p, bam1=False, bam2_required=None)
    p.add_argument("-S", "--simple_repeat_db", required=True,
                   help="bgzipped, tabix-indexed simpleRepeat (bin column cut)")
    p.set_defaults(handler=run_simplerepeat)
    return parser


def _annotate(args, column_names, factory, vcf_layout, threads=1) -> int:
    """Run an annotator over the input in the requested output format."""
    if args.output_format == "vcf":
        from .vcf import annotate_vcf

        annotate_vcf(args.target_mutation_file, args.output, vcf_layout, factory,
                     tumor_name=args.sample1, normal_name=args.sample2, threads=max(1, threads))
        return 0
    from .table import annotate_file

    annotate_file(args.target_mutation_file, args.output, column_names, factory,
                  header=args.header, threads=max(1, threads))
    return 0


def run_realignment(args) -> int:
    from .realignment import (PAIR_COLUMNS, PAIR_VCF, SINGLE_COLUMNS, SINGLE_VCF,
                              RealignmentAnnotatorFactory, RealignParams, blat_available)

    if args.blat and args.edlib:
        return _fail("realignment: choose one of --blat and --edlib")
    aligner = "blat" if args.blat else "edlib" if args.edlib else "parasail"
    if aligner == "blat":
        if blat_available(args.blat_path) is None:
            return _fail("realignment --blat: blat executable not found "
                         f"({args.blat_path or 'blat'} is not on PATH); use the default "
                         "parasail mode or --edlib")
        return _fail("realignment --blat: blat mode is not implemented in this rebuild; "
                     "use the default parasail mode or --edlib")
    params = RealignParams(
        window_size=args.window_size, score_difference=args.score_difference,
        max_depth=args.max_depth, exclude_sam_flags=args.exclude_sam_flags,
        tumor_min_mismatch=args.tumor_min_mismatch,
        normal_max_mismatch=args.normal_max_mismatch, aligner=aligner,
        blat_path=args.blat_path,
    )
    factory = RealignmentAnnotatorFactory(args.bam1, args.bam2, args.ref_genome, params)
    columns, layout = (PAIR_COLUMNS, PAIR_VCF) if args.bam2 else (SINGLE_COLUMNS, SINGLE_VCF)
    return _annotate(args, columns, factory, layout, args.thread_num)


def run_indel(args) -> int:
    from .indel import COLUMNS, VCF_LAYOUT, IndelAnnotatorFactory

    factory = IndelAnnotatorFactory(
        normal_bam=args.bam2, search_length=args.search_length, neighbor=args.neighbor,
        min_depth=args.min_depth, min_mismatch=args.min_mismatch, af_thres=args.af_thres,
        samtools_params=args.samtools_params, reference=args.ref_genome,
    )
    return _annotate(args, COLUMNS, factory, VCF_LAYOUT, args.thread_num)


def run_breakpoint(args) -> int:
    from .breakpoint import COLUMNS, VCF_LAYOUT, BreakpointAnnotatorFactory

    factory = BreakpointAnnotatorFactory(
        normal_bam=args.bam2, max_depth=args.max_depth, min_clip_size=args.min_clip_size,
        junc_num_thres=args.junc_num_thres, mapq_thres=args.mapq_thres,
        exclude_sam_flags=args.exclude_sam_flags, reference=args.ref_genome,
    )
    return _annotate(args, COLUMNS, factory, VCF_LAYOUT, args.thread_num)


def run_simplerepeat(args) -> int:
    from .simplerepeat import COLUMNS, VCF_LAYOUT, SimpleRepeatAnnotatorFactory

    return _annotate(args, COLUMNS, SimpleRepeatAnnotatorFactory(args.simple_repeat_db),
                     VCF_LAYOUT)


def _fail(message: str) -> int:
    print(f"mutfilter: error: {message}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    """Entry point of the ``mutfilter`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (OSError, ValueError) as error:
        # missing/unindexed BAM, FASTA or db, malformed row: one line instead of a traceback
        print(f"mutfilter {args.command}: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
