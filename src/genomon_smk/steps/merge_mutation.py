"""Merge mutation: the per-region results of a pair joined under Genomon's meta lines and header,
and the filtered calls written as a VCF that bcftools reads.

Per-region rows are header-less (as upstream's intermediate files are); the header is made here
from the pair's shape (tumor/normal or tumor only, with or without a control panel).

Deliberate differences from upstream Genomon (docs/differences.md): the meta line's versions are
each tool's first ``--version`` line; a region row of the wrong width is refused; VCFs of the
filtered and of all calls are written (Genomon writes none).
"""

from __future__ import annotations

import argparse
import datetime
import getpass
import os
import importlib.metadata
import operator
import shlex
import subprocess
import sys
from typing import TYPE_CHECKING

import genomon_smk
from genomon_smk.tools import mutil

if TYPE_CHECKING:
    import pysam

PAIR_COLUMNS = (
    "Chr Start End Ref Alt depth_tumor variantNum_tumor depth_normal variantNum_normal bases_tumor bases_normal "
    "A_C_G_T_tumor A_C_G_T_normal misRate_tumor strandRatio_tumor misRate_normal strandRatio_normal P-value(fisher) "
    "readPairNum_tumor variantPairNum_tumor otherPairNum_tumor readPairNum_normal variantPairNum_normal "
    "otherPairNum_normal P-value(fisher_realignment) indel_mismatch_count indel_mismatch_rate bp_mismatch_count "
    "distance_from_breakpoint simple_repeat_pos simple_repeat_seq"
).split()
SINGLE_COLUMNS = (
    "Chr Start End Ref Alt depth variantNum bases A_C_G_T misRate strandRatio 10%_posterior_quantile posterior_mean "
    "90%_posterior_quantile readPairNum variantPairNum otherPairNum 10%_posterior_quantile(realignment) "
    "posterior_mean(realignment) 90%_posterior_quantile(realignment) simple_repeat_pos simple_repeat_seq"
).split()
EB_COLUMN = "P-value(EBCall)"
HOTSPOT_COLUMN = mutil.HOTSPOT_COLUMN


def header_columns(paired: bool, with_panel: bool, hotspot: bool = False) -> list[str]:
    """Genomon's result columns for a pair (tumor/normal) or a tumor alone, EB column with a panel;
    with the hotspot call (pairs only), score(hotspot) right after P-value(fisher), as Genomon."""
    columns = list(PAIR_COLUMNS if paired else SINGLE_COLUMNS)
    if hotspot and paired:
        columns.insert(columns.index("P-value(fisher)") + 1, HOTSPOT_COLUMN)
    return columns + [EB_COLUMN] if with_panel else columns


def meta_lines(versions: list[str], now: datetime.datetime | None = None) -> list[str]:
    now = now or datetime.datetime.now()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return [
        f"# Version: {' '.join(versions)}",
        f"# Analysis Date: {now:%Y-%m-%d %H:%M:%S}",
        f"# User: {user}",
    ]


def write_result(out_path: str, region_files: list[str], columns: list[str], versions: list[str]) -> int:
    """Meta lines, header, then every region's rows in region order; returns the row count."""
    rows = 0
    with open(out_path, "w") as out:
        out.write("\n".join(meta_lines(versions)) + "\n")
        out.write("\t".join(columns) + "\n")
        for path in region_files:
            with open(path) as region:
                for line in region:
                    if line.strip():
                        cells = line.rstrip("\n").split("\t")
                        if len(cells) != len(columns):
                            raise ValueError(f"{path}: a row has {len(cells)} columns, the header {len(columns)}")
                        out.write(line if line.endswith("\n") else line + "\n")
                        rows += 1
    return rows


# INFO fields of the VCF: result column -> (VCF id, type, description)
INFO_FIELDS = {
    "P-value(fisher)": ("FP", "Float", "-log10 p of Fisher's exact test, tumor vs normal (GenomonFisher)"),
    "P-value(fisher_realignment)": ("FPR", "Float", "-log10 p of Fisher's exact test after realignment"),
    "10%_posterior_quantile": ("B10", "Float", "10% posterior quantile of the allele frequency"),
    "posterior_mean": ("BM", "Float", "posterior mean of the allele frequency"),
    "90%_posterior_quantile": ("B90", "Float", "90% posterior quantile of the allele frequency"),
    "10%_posterior_quantile(realignment)": ("B1R", "Float", "10% posterior quantile after realignment"),
    "indel_mismatch_count": ("IMC", "Integer", "indel reads near the site in the normal (mutfilter indel)"),
    "indel_mismatch_rate": ("IMR", "Float", "indel read rate near the site in the normal (mutfilter indel)"),
    "bp_mismatch_count": ("BPC", "Integer", "normal reads clipped at a nearby breakpoint (mutfilter breakpoint)"),
    "distance_from_breakpoint": ("BPD", "Integer", "distance to that breakpoint"),
    EB_COLUMN: ("EB", "Float", "EBCall score: -log10 p against the control panel (EBFilter)"),
    HOTSPOT_COLUMN: ("LS", "Float", "LOD score of a hotspot site (hotspotCall)"),
}


# ANNOVAR's refGene columns (gene annotation) -> INFO keys of their own names, Number=.: the
# column's comma-separated items; each item VCF-escaped (gene_info_values).
GENE_INFO = {
    "Func.refGene": "region of the variant by refGene (exonic, splicing, UTR5, intronic, intergenic, ...; ANNOVAR's Func)",
    "Gene.refGene": "gene(s) of that region (ANNOVAR's Gene)",
    "GeneDetail.refGene": "transcript details outside coding exons (splice site and UTR c. changes, dist=; ANNOVAR's GeneDetail)",
    "ExonicFunc.refGene": "coding consequence (nonsynonymous SNV, stopgain, frameshift deletion, ...; ANNOVAR's ExonicFunc)",
    "AAChange.refGene": "gene:transcript:exon:c.:p. changes of the transcripts with that consequence (ANNOVAR's AAChange)",
}
VCF_ESCAPES = {"%": "%25", ";": "%3B", "=": "%3D"}


def gene_info_values(value: str) -> tuple[str, ...] | None:
    """An annotation cell as INFO values: its comma-separated items, each with `%`, `;` and `=`
    percent-encoded (VCF 4.3) and white space as `_` (as ANNOVAR's own VCF output writes
    `nonsynonymous_SNV`); None for an empty cell."""
    if not value or value == ".":
        return None
    return tuple(
        "_".join("".join(VCF_ESCAPES.get(char, char) for char in item).split())
        for item in value.split(",")
    )


def source_version() -> str:
    try:
        return importlib.metadata.version("genomon-smk")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def filter_description(rule: mutil.ColumnRule, threshold: float) -> str:
    bound = "below" if rule.compare is operator.ge else "above"
    return f"{rule.column} {bound} {threshold:g} (mutil filter --{rule.option})"


def vcf_header(contigs: list[tuple[str, int]], samples: list[str], columns: list[str],
               reference: str = "", thresholds: dict[str, float] | None = None,
               hotspot_db: bool = False) -> pysam.VariantHeader:
    """The VCF header: contigs, `##reference`, `##source`, the INFO/FORMAT fields of the columns,
    and with thresholds, one FILTER per mutil threshold a call can fail; `HS` with a hotspot
    call or database."""
    import pysam  # the VCFs' (the filter_mutation job's), not the merge's: that job starts sooner

    header = pysam.VariantHeader()
    header.add_line(f"##source=genomon-smk {source_version()}")
    if reference:
        header.add_line(f"##reference=file://{os.path.abspath(reference)}")
    for rule in mutil.active_rules(columns) if thresholds is not None else []:
        header.filters.add(rule.option, None, None, filter_description(rule, thresholds[rule.option]))
    for contig, length in contigs:
        header.contigs.add(contig, length=length)
    for column, (key, kind, text) in INFO_FIELDS.items():
        if column in columns:
            header.info.add(key, 1, kind, text)
    for column, text in GENE_INFO.items():
        if column in columns:
            header.info.add(column, ".", "String", f"{text}; %3B, %3D, %25: ';', '=', '%'")
    header.info.add("SR", 0, "Flag", "in a simple repeat (mutfilter simplerepeat)")
    if HOTSPOT_COLUMN in columns or hotspot_db:
        header.info.add("HS", 0, "Flag", "at a site of the hotspot database: called by hotspotCall, "
                        "or a call the database keeps past the filter (mutil filter --hotspot_db)")
    header.formats.add("GT", 1, "String", "Genotype")
    header.formats.add("DP", 1, "Integer", "Read depth")
    header.formats.add("AD", "R", "Integer", "Reads supporting the reference and the alternate allele")
    header.formats.add("AF", "A", "Float", "Allele frequency")
    for sample in samples:
        header.add_sample(sample)
    return header


def vcf_alleles(fasta: pysam.FastaFile, contig: str, start: int, ref: str, alt: str) -> tuple[int, str, str]:
    """(1-based POS, REF, ALT) of a Genomon row: indels get the preceding reference base as anchor."""
    if ref == "-":  # insertion after Start
        anchor = fasta.fetch(contig, start - 1, start).upper()
        return start, anchor, anchor + alt
    if alt == "-":  # deletion of Start..End
        anchor = fasta.fetch(contig, start - 2, start - 1).upper()
        return start - 1, anchor + ref, anchor
    return start, ref.upper(), alt.upper()


def number(value: str):
    try:
        return float(value)
    except ValueError:
        return None


def depth_and_alt(row: dict, suffix: str) -> tuple[int, int] | None:
    depth, alt = row.get(f"depth{suffix}"), row.get(f"variantNum{suffix}")
    if depth in (None, "---") or alt in (None, "---"):
        return None
    return int(depth), int(alt)


def write_vcf(result_path: str, fasta_path: str, vcf_path: str, tumor: str, normal: str | None,
              filter_params: list[str] | None = None, hotspot_db: str | None = None) -> int:
    """The rows of a result file as VCF records; returns the record count. Without
    filter_params every record PASSes (a filtered result); with `mutil filter` options, FILTER
    names each threshold a call fails (PASS: none), so the records that PASS are the rows that
    `mutil filter` with those options keeps. A record gets `HS` when hotspotCall called it or
    its (Chr, Start, End, Ref, Alt) is in the hotspot database (hotspot_db, or the one named
    by filter_params): the rows the database rescued are flagged too."""
    import pysam

    fasta = pysam.FastaFile(fasta_path)
    contigs = list(zip(fasta.references, fasta.lengths))
    with open(result_path) as handle:
        lines = [line.rstrip("\n") for line in handle if not line.startswith("#")]
    columns = lines[0].split("\t")
    contig_order = {name: index for index, (name, _) in enumerate(contigs)}
    samples = [tumor] + ([normal] if normal else [])
    thresholds, hotspots = mutil.thresholds_of(filter_params) if filter_params is not None else (None, None)
    failures = mutil.make_row_failures(columns, thresholds, hotspots) if thresholds is not None else None
    if hotspot_db:
        hotspots = (hotspots or set()) | mutil.read_hotspot_db(hotspot_db)
    header = vcf_header(contigs, samples, columns, fasta_path, thresholds, hotspot_db=bool(hotspots))
    records = []
    for line in lines[1:]:
        cells = line.split("\t")
        row = dict(zip(columns, cells))
        pos, ref, alt = vcf_alleles(fasta, row["Chr"], int(row["Start"]), row["Ref"], row["Alt"])
        failed = failures(cells) if failures else []
        records.append((contig_order[row["Chr"]], pos, ref, alt, failed, row, cells))
    records.sort(key=lambda r: r[:4])
    with pysam.VariantFile(vcf_path, "wz", header=header) as out:
        for _, pos, ref, alt, failed, row, cells in records:
            record = out.new_record(contig=row["Chr"], start=pos - 1, alleles=(ref, alt),
                                    filter=failed or ["PASS"])
            for column, (key, _, _) in INFO_FIELDS.items():
                value = number(row.get(column, "---"))
                if value is not None:
                    record.info[key] = int(value) if header.info[key].type == "Integer" else value
            for column in GENE_INFO:
                values = gene_info_values(row.get(column, ""))
                if values:
                    record.info[column] = values
            if row.get("simple_repeat_pos", "---") != "---":
                record.info["SR"] = True
            if row.get(HOTSPOT_COLUMN, "---") != "---" or (hotspots and mutil.hotspot_key(cells) in hotspots):
                record.info["HS"] = True
            for sample, suffix, genotype in ((tumor, "_tumor" if normal else "", (0, 1)), (normal, "_normal", (0, 0))):
                if sample is None:
                    continue
                counts = depth_and_alt(row, suffix)
                record.samples[sample]["GT"] = genotype
                if counts:
                    depth, alt_reads = counts
                    record.samples[sample]["DP"] = depth
                    record.samples[sample]["AD"] = (max(depth - alt_reads, 0), alt_reads)
                    record.samples[sample]["AF"] = round(alt_reads / depth, 4) if depth else 0.0
            out.write(record)
    pysam.tabix_index(vcf_path, preset="vcf", force=True)
    return len(records)


def add_vcf_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of a `vcf` command: a result, the reference, the VCF to write, the samples."""
    parser.add_argument("--result", required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tumor", required=True)
    parser.add_argument("--normal")
    parser.add_argument("--hotspot-db", nargs="?", const=None, default=None,
                        help="the hotspot database: its rows' calls get the HS flag (empty: none)")
    return parser


#: the filter_mutation job's `mutil` when it is genomon-smk's own (rules/paths.smk, mutation_tools)
BUILTIN_MUTIL = ["genomon_python", "-m", "genomon_smk.tools.mutil"]


def final_filter(args: argparse.Namespace) -> int:
    """The filter_mutation job in one process: `mutil filter` (genomon-smk's in this process,
    upstream's as its command), then the VCF of the filtered rows and the VCF of every row. Each
    step as its own command would be: three interpreter starts, each importing pysam."""
    options = shlex.split(args.mutil_options)
    argv = ["filter", "-i", args.result, "-o", args.filtered, *options]
    command = shlex.split(args.mutil_command)
    if command == BUILTIN_MUTIL:
        status = mutil.main(argv)
    else:
        status = subprocess.run([*command, *argv]).returncode
    if status:
        print(f"filter_mutation: {shlex.join([*command, *argv])} failed with exit status {status}",
              file=sys.stderr)
        return status
    for result, out, filter_params, hotspot_db in ((args.filtered, args.out, None, args.hotspot_db),
                                                   (args.result, args.all_vcf, options, None)):
        records = write_vcf(result, args.reference, out, args.tumor, args.normal, filter_params, hotspot_db or None)
        print(f"filter_mutation: {records} VCF records in {os.path.basename(out)}", flush=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Merge Genomon mutation results of one pair.")
    commands = parser.add_subparsers(dest="command", required=True)
    result = commands.add_parser("result", help="meta lines + header + per-region rows")
    result.add_argument("--out", required=True)
    result.add_argument("--paired", action="store_true", help="tumor/normal columns (else tumor only)")
    result.add_argument("--panel", action="store_true", help="with the EBFilter column")
    result.add_argument("--hotspot", action="store_true", help="with the score(hotspot) column (pairs only)")
    versions = result.add_mutually_exclusive_group()
    versions.add_argument("--version-of", nargs="*", default=[], help="tool commands whose --version goes into the meta line")
    versions.add_argument("--builtin-version-of", nargs="*", default=[], metavar="NAME",
                          help="genomon-smk's own tools by name: the line their --version prints, without running them")
    result.add_argument("--regions-file", required=True, help="per-region result files, one per line, in order")
    vcf = add_vcf_arguments(commands.add_parser("vcf", help="filtered result -> bgzipped, indexed VCF"))
    vcf.add_argument("--filter-params", metavar="OPTIONS",
                     help="mutil filter options (one string): FILTER names the thresholds each call fails")
    final = add_vcf_arguments(commands.add_parser(
        "filter", help="the final filter (mutil filter) and the VCFs of its rows and of every row"))
    final.add_argument("--filtered", required=True, help="mutil filter's output (--out: its VCF)")
    final.add_argument("--all-vcf", required=True, help="the VCF of every row of --result")
    final.add_argument("--mutil-options", default="", metavar="OPTIONS", help="mutil filter's options (one string)")
    final.add_argument("--mutil-command", default=shlex.join(BUILTIN_MUTIL),
                       help="the mutil command (default: genomon-smk's, run in this process)")
    args = parser.parse_args(argv)
    if args.command == "filter":
        return final_filter(args)
    if args.command == "result":
        with open(args.regions_file) as handle:
            files = [line.strip() for line in handle if line.strip()]
        versions = [tool_version(tool) for tool in args.version_of] + [
            genomon_smk.tool_version(name) for name in args.builtin_version_of]
        rows = write_result(args.out, files, header_columns(args.paired, args.panel, args.hotspot), versions)
        print(f"merge_mutation: {rows} rows from {len(files)} regions")
    else:
        filter_params = shlex.split(args.filter_params) if args.filter_params is not None else None
        records = write_vcf(args.result, args.reference, args.out, args.tumor, args.normal, filter_params,
                            args.hotspot_db or None)
        # The filter_mutation job's step (rules/merge_mutation.smk), whose log this line is in.
        print(f"filter_mutation: {records} VCF records in {os.path.basename(args.out)}")
    return 0


def tool_version(command: str) -> str:
    """The first line a tool's `--version` prints (Genomon's meta line lists them)."""
    words = shlex.split(command)
    result = subprocess.run(words + ["--version"], capture_output=True, text=True)
    text = (result.stdout or result.stderr).strip().splitlines()
    if result.returncode != 0 or not text:
        return f"{os.path.basename(words[-1])}-unknown"
    return text[0].replace(" ", "-")


if __name__ == "__main__":
    sys.exit(main())
