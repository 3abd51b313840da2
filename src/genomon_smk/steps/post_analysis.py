"""Post-analysis: the per-tumor mutation and SV results and the per-sample QC of a cohort merged
into Genomon's tables (GenomonPostAnalysis's outputs, rebuilt from the stage spec §2).

Subcommands (``python -m genomon_smk.steps.post_analysis SUBCOMMAND ...``):

``merge``  mutation or SV results: ``merge_{mode}[_filt][_{case}].txt`` in the output directory
           for every case that has a tumor (all tumors in ``merge_{mode}[_filt].txt``)
``qc``     per-sample QC (coverage table, samtools stats) -> ``merge_qc.txt``
``cut``    filtered mutation tables -> pmsignature's input, ``mutation.cut.txt`` (Genomon's
           pre_pmsignature: the mutation position format, ``id chrN Start Ref Alt``)

Merged tables: merged ``#key:value`` meta lines, then the union of the input headers with ``id``
first (columns in first-seen order, ``NA`` where a file lacks one), then every file's rows in
the order given.

Deliberate differences from upstream Genomon (docs/differences.md): a missing input file is
dropped together with its id (upstream keeps the id, and later ids shift); only line ends are
stripped; merge_qc.txt merges this project's QC, not GenomonQC's; no IGV or BAM pick-up scripts.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass

from genomon_smk.steps import exit_status
from genomon_smk.tools.pmsignature import PRIMARY_CONTIG

# Genomon's four cases, in its order: (name, matched normal, control panel).
CASES = (
    ("pair_controlpanel", True, True),
    ("pair", True, False),
    ("unpair_controlpanel", False, True),
    ("unpair", False, False),
)
MISSING = "NA"
ID = "id"
FUNC, EXONIC_FUNC, MERGE_FUNC = "Func.refGene", "ExonicFunc.refGene", "Merge_Func"


def case_of(normal: bool, panel: bool) -> str:
    """Genomon's case name of a tumor with / without a matched normal and a control panel."""
    return next(name for name, has_normal, has_panel in CASES if has_normal == bool(normal) and has_panel == bool(panel))


def merged_name(mode: str, filtered: bool, case: str | None = None) -> str:
    """Genomon's file name: merge_{mode}[_filt][_{case}].txt (`filt` before the case)."""
    return f"merge_{mode}{'_filt' if filtered else ''}{'_' + case if case else ''}.txt"


def ordered_by_case(samples: list[tuple[str, str]]) -> list[str]:
    """The ids of (id, case) in Genomon's `all` order: case by case, each in the given order."""
    return [sample for name, _, _ in CASES for sample, case in samples if case == name]


@dataclass
class Top:
    """The top of a result file: its meta lines as (key, value) and its header's columns."""

    meta: list[tuple[str, str]]
    header: list[str]


def meta_item(line: str) -> tuple[str, str] | None:
    """A `#key: value` line as Genomon's post-analysis reads it: the key without spaces (its `#`
    kept), the value stripped and cut at a second colon; None for a line without a colon."""
    parts = line.rstrip("\r\n").split(":")
    if len(parts) < 2:
        return None
    return parts[0].replace(" ", ""), parts[1].strip()


def read_top(lines) -> Top:
    """Meta lines (the `#` lines at the top, blank lines skipped), then the header: the first
    non-blank, non-`#` line. A file without one has no columns."""
    meta, header = [], []
    for line in lines:
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        if text.startswith("#"):
            item = meta_item(text)
            if item:
                meta.append(item)
            continue
        header = text.split("\t")
        break
    return Top(meta, header)


def merge_meta(tops: list[tuple[str, list[tuple[str, str]]]]) -> list[str]:
    """The merged meta lines of (id, meta) per file: keys sorted, each distinct value of a key
    (first-seen order) as `key:value`, plus `:id;id` naming the files that have it when not
    every file does."""
    values: dict[str, dict[str, list[str]]] = {}
    for sample, meta in tops:
        for key, value in meta:
            holders = values.setdefault(key, {}).setdefault(value, [])
            if sample not in holders:
                holders.append(sample)
    lines = []
    for key in sorted(values):
        for value, holders in values[key].items():
            every = len(holders) == len(tops)
            lines.append(f"{key}:{value}" + ("" if every else ":" + ";".join(holders)))
    return lines


def merged_titles(headers: list[list[str]], merge_func: bool) -> list[str]:
    """The union of the headers in first-seen order, `id` first; with merge_func, `Merge_Func`
    right after the later of Func.refGene / ExonicFunc.refGene when both are there (ANNOVAR's)."""
    titles = list(dict.fromkeys(column for header in headers for column in header))
    if ID not in titles:
        titles.insert(0, ID)
    if merge_func and MERGE_FUNC not in titles and FUNC in titles and EXONIC_FUNC in titles:
        titles.insert(max(titles.index(FUNC), titles.index(EXONIC_FUNC)) + 1, MERGE_FUNC)
    return titles


def merge_func_value(row: dict[str, str]) -> str:
    """Genomon's Merge_Func: `splicing` when Func.refGene says splicing, else ExonicFunc.refGene."""
    return "splicing" if "splicing" in row.get(FUNC, "") else row.get(EXONIC_FUNC, "")


def merged_row(sample: str, header: list[str], cells: list[str], titles: list[str], merge_func: bool) -> list[str]:
    """One row under the merged titles: its id, its own cells, NA for columns its file lacks."""
    if len(cells) != len(header):
        raise ValueError(f"a row of sample {sample} has {len(cells)} fields, its header {len(header)}")
    row = dict(zip(header, cells))
    if merge_func and MERGE_FUNC in titles and MERGE_FUNC not in header:
        row[MERGE_FUNC] = merge_func_value(row)
    row.setdefault(ID, sample)
    return [row.get(title, MISSING) for title in titles]


def data_rows(lines):
    """The fields of every row after the header (blank and `#` lines skipped; only the line end
    stripped, so empty last fields stay)."""
    seen_header = False
    for line in lines:
        text = line.rstrip("\r\n")
        if not text.strip() or text.startswith("#"):
            continue
        if not seen_header:
            seen_header = True
            continue
        yield text.split("\t")


def present(entries: list[tuple[str, str]], warn=print) -> list[tuple[str, str]]:
    """The (id, path) entries whose file exists; a missing one is dropped with its id."""
    kept = []
    for sample, path in entries:
        if os.path.exists(path):
            kept.append((sample, path))
        else:
            warn(f"post_analysis: {path} does not exist: sample {sample} left out", file=sys.stderr)
    return kept


def merge_tables(entries: list[tuple[str, str]], out_path: str, merge_func: bool = False) -> int:
    """Merge the result files of (id, path) into out_path (through a temporary name); the number
    of rows written. Two passes: the tops first (meta, header), then the rows streamed."""
    entries = present(entries)
    tops = []
    for sample, path in entries:
        with open(path) as handle:
            tops.append((sample, read_top(handle)))
    titles = merged_titles([top.header for _, top in tops], merge_func)
    partial, rows = f"{out_path}.tmp", 0
    with open(partial, "w") as out:
        for line in merge_meta([(sample, top.meta) for sample, top in tops]):
            out.write(line + "\n")
        out.write("\t".join(titles) + "\n")
        for (sample, path), (_, top) in zip(entries, tops):
            with open(path) as handle:
                for cells in data_rows(handle):
                    out.write("\t".join(merged_row(sample, top.header, cells, titles, merge_func)) + "\n")
                    rows += 1
    os.replace(partial, out_path)
    return rows


def merge_mode(mode: str, samples: list[tuple[str, str, str, str]], out_dir: str) -> dict[str, int]:
    """Every table of a mode for samples (id, case, result, filtered result): all tumors, then
    each case that has some, unfiltered and filtered. {file name: rows}."""
    merge_func = mode == "mutation"
    order = ordered_by_case([(sample, case) for sample, case, _, _ in samples])
    by_id = {sample: (case, result, filtered) for sample, case, result, filtered in samples}
    written = {}
    for filtered in (False, True):
        column = 2 if filtered else 1
        for case in (None, *(name for name, _, _ in CASES)):
            chosen = [sample for sample in order if case is None or by_id[sample][0] == case]
            if not chosen:
                continue
            name = merged_name(mode, filtered, case)
            entries = [(sample, by_id[sample][column]) for sample in chosen]
            written[name] = merge_tables(entries, os.path.join(out_dir, name), merge_func)
    return written


# --- QC


# samtools stats SN fields carried into merge_qc.txt, under these column names.
STATS_COLUMNS = {
    "raw total sequences": "total_reads",
    "reads mapped": "mapped_reads",
    "reads duplicated": "duplicate_reads",
    "insert size average": "mean_insert_size",
    "insert size standard deviation": "insert_size_sd",
    "average first fragment length": "read_length_r1",
    "average last fragment length": "read_length_r2",
}


def stats_values(lines) -> dict[str, str]:
    """The STATS_COLUMNS of a `samtools stats` output, as written there."""
    values = {}
    for line in lines:
        if line.startswith("SN\t"):
            fields = line.rstrip("\n").split("\t")
            name = fields[1].rstrip(":")
            if name in STATS_COLUMNS:
                values[STATS_COLUMNS[name]] = fields[2]
    return values


def coverage_values(lines) -> dict[str, str]:
    """The one row of a coverage table (genomon_smk.steps.qc coverage) without its sample column."""
    rows = [line.rstrip("\n").split("\t") for line in lines if line.strip()]
    if len(rows) != 2:
        raise ValueError(f"a coverage table has a header and one row, not {len(rows)} lines")
    return {column: value for column, value in zip(*rows) if column != "sample"}


def qc_row(sample: str, coverage_path: str, stats_path: str) -> dict[str, str]:
    with open(coverage_path) as coverage, open(stats_path) as stats:
        return {ID: sample, **coverage_values(coverage), **stats_values(stats)}


def write_qc(samples: list[tuple[str, str, str]], out_path: str) -> int:
    """merge_qc.txt of (id, coverage table, samtools stats) per sample: id, the coverage columns,
    the STATS_COLUMNS (NA where a sample lacks one)."""
    rows = [qc_row(*sample) for sample in samples]
    titles = list(dict.fromkeys(column for row in rows for column in row))
    partial = f"{out_path}.tmp"
    with open(partial, "w") as out:
        out.write("\t".join(titles) + "\n")
        for row in rows:
            out.write("\t".join(row.get(title, MISSING) for title in titles) + "\n")
    os.replace(partial, out_path)
    return len(rows)


# --- pmsignature's input


# Chromosomes 1-22, X and Y (an optional chr/Chr): mitochondria, decoys, viruses and the unplaced,
# random and alt contigs are left out, as pmsignature's background leaves them out. Deliberate
# difference from upstream Genomon: its pre_pmsignature matches the name's start only, so
# chr1_gl000191_random or hg38's chr6_GL000250v2_alt were kept.
PRIMARY_CHROMOSOME = PRIMARY_CONTIG
CUT_COLUMNS = (ID, "Chr", "Start", "Ref", "Alt")


def mutation_positions(tables: list[str], out_path: str) -> int:
    """mutation.cut.txt of merged filtered mutation tables: per row `id chrN Start Ref Alt`
    (header-less TSV; the chromosome given one `chr` prefix) for the rows on 1-22, X or Y, the
    tables appended in the order given; an empty file when none has such a row. The rows
    written. Indels stay: pmsignature leaves them out itself."""
    partial, rows = f"{out_path}.tmp", 0
    with open(partial, "w") as out:
        for path in tables:
            with open(path) as handle:
                header = read_top(handle).header
                if not header:
                    continue
                missing = [column for column in CUT_COLUMNS if column not in header]
                if missing:
                    raise ValueError(f"{path}: no column {', '.join(missing)} in its header")
                where = [header.index(column) for column in CUT_COLUMNS]
                handle.seek(0)
                for cells in data_rows(handle):
                    sample, chrom, start, ref, alt = (cells[i] if i < len(cells) else "" for i in where)
                    if not PRIMARY_CHROMOSOME.match(chrom):
                        continue
                    chrom = "chr" + re.sub(r"^(?:chr|Chr)", "", chrom)
                    out.write(f"{sample}\t{chrom}\t{start}\t{ref}\t{alt}\n")
                    rows += 1
    os.replace(partial, out_path)
    return rows


# --- CLI


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m genomon_smk.steps.post_analysis", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser("merge", help="mutation or SV results -> merge_{mode}*.txt")
    merge.add_argument("--mode", choices=("mutation", "sv"), required=True)
    merge.add_argument("--out-dir", required=True)
    merge.add_argument("--sample", nargs=4, action="append", required=True,
                       metavar=("ID", "CASE", "RESULT", "FILTERED"), help="one per tumor, in sample-sheet order")
    qc = commands.add_parser("qc", help="per-sample QC -> merge_qc.txt")
    qc.add_argument("--out", required=True)
    qc.add_argument("--sample", nargs=3, action="append", required=True, metavar=("ID", "COVERAGE", "STATS"))
    cut = commands.add_parser("cut", help="filtered mutation tables -> pmsignature's mutation.cut.txt")
    cut.add_argument("--out", required=True)
    cut.add_argument("tables", nargs="*", help="merge_mutation_filt*.txt, in Genomon's order")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)

    def run() -> None:
        if args.command == "merge":
            unknown = sorted({case for _, case, _, _ in args.sample} - {name for name, _, _ in CASES})
            if unknown:
                raise ValueError(f"unknown case {', '.join(unknown)}")
            for name, rows in merge_mode(args.mode, [tuple(sample) for sample in args.sample], args.out_dir).items():
                print(f"{name}: {rows} rows", file=sys.stderr)
        elif args.command == "cut":
            print(f"mutation.cut.txt: {mutation_positions(args.tables, args.out)} rows", file=sys.stderr)
        else:
            print(f"merge_qc.txt: {write_qc([tuple(sample) for sample in args.sample], args.out)} samples", file=sys.stderr)

    return exit_status(f"genomon_smk.steps.post_analysis {args.command}", run, (ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
