"""`mutil filter` and `mutil merge_hotspot`: clean-room mutation_util (anno/TSV mode).

`filter` is built from the facts in genomon-tools-spec.md section 5, `merge_hotspot` from
genomon-stages-spec.md section 1.5 (no upstream code).

filter: ``#`` meta lines and the header are copied; threshold columns are located by header name
and a column that is absent does not filter. A row is kept iff every present column passes, OR
its ``score(hotspot)`` is not ``---``, OR its (Chr, Start, End, Ref, Alt) is in the hotspot DB.

merge_hotspot: hotspotCall's rows merged into fisher's, each row gaining a ``score(hotspot)``
column (the LOD, or ``---``). Deliberate differences from mutil v0.5.0: the merged rows are in
position order (upstream appends the hotspot-only rows, unsorted), and a site that both found
keeps fisher's row with hotspotCall's LOD (upstream writes ``---`` there, losing the LOD).

Usage::

    mutil filter -i result.txt -o result.filt.txt [--fish_pval 1.0 --realign_pval 1.0
        --eb_pval 4.0 --tcount 4 --ncount 2 --post10q 0.1 --r_post10q 0.1 --count 4]
        [--hotspot_db hotspot.txt]
    mutil merge_hotspot -i hotspot.txt -f fisher.txt -o merged.txt [--hotspot_header]
        [--fisher_header]

Deliberate differences from upstream Genomon (docs/differences.md): only anno mode (no
``-O vcf``); merge_hotspot's rows in position order and a site both found keeps its LOD (above);
the hotspot DB may be gzipped, its ``#`` lines are skipped, its Ref/Alt upper-cased like the
row's, and a missing DB is an error (upstream: an empty list).
"""

from __future__ import annotations

import argparse
import operator
import sys
from dataclasses import dataclass
from typing import Callable, Iterable, TextIO
from genomon_smk import tool_version
from genomon_smk.fileio import open_text

MISSING = "---"
HOTSPOT_COLUMN = "score(hotspot)"


@dataclass(frozen=True)
class ColumnRule:
    """Threshold on one named column.

    compare(value, threshold) must hold; if missing_fails, a ``---`` value fails the rule
    (otherwise a non-numeric value fails too, since it cannot be compared).
    """

    column: str
    option: str
    compare: Callable[[float, float], bool]
    missing_fails: bool


RULES = [
    ColumnRule("P-value(fisher)", "fish_pval", operator.ge, False),
    ColumnRule("P-value(EBCall)", "eb_pval", operator.ge, False),
    ColumnRule("P-value(fisher_realignment)", "realign_pval", operator.ge, True),
    ColumnRule("variantPairNum_tumor", "tcount", operator.ge, True),
    ColumnRule("variantPairNum_normal", "ncount", operator.le, True),
    ColumnRule("10%_posterior_quantile", "post10q", operator.ge, False),
    ColumnRule("10%_posterior_quantile(realignment)", "r_post10q", operator.ge, True),
    ColumnRule("variantPairNum", "count", operator.ge, True),
]


def value_passes(value: str, threshold: float, rule: ColumnRule) -> bool:
    """Whether one cell passes its rule (``---`` and non-numbers cannot pass)."""
    if value == MISSING and rule.missing_fails:
        return False
    try:
        number = float(value)
    except ValueError:
        return False
    return rule.compare(number, threshold)


def hotspot_key(cells: list[str]) -> tuple[str, str, str, str, str]:
    """(Chr, Start, End, REF upper, ALT upper) from the first five cells."""
    return cells[0], cells[1], cells[2], cells[3].upper(), cells[4].upper()


def read_hotspot_db(path: str) -> set[tuple[str, str, str, str, str]]:
    """Keys of a hotspot DB (TSV, first five columns; ``#`` lines skipped; plain or gzip)."""
    keys = set()
    with open_text(path) as handle:
        for line in handle:
            if line.startswith("#") or not line.strip():
                continue
            cells = line.rstrip("\r\n").split("\t")
            if len(cells) >= 5:
                keys.add(hotspot_key(cells))
    return keys


def make_row_failures(header: list[str], thresholds: dict[str, float],
                      hotspots: set | None = None) -> Callable[[list[str]], list[str]]:
    """For the given header, a function naming the options whose threshold a row's cells fail
    (empty: the row is kept). Hotspot rows fail nothing."""
    active = [(header.index(rule.column), thresholds[rule.option], rule)
              for rule in RULES if rule.column in header]
    hotspot_index = header.index(HOTSPOT_COLUMN) if HOTSPOT_COLUMN in header else None
    hotspots = hotspots or set()

    def failures(cells: list[str]) -> list[str]:
        if hotspot_index is not None and hotspot_index < len(cells) \
                and cells[hotspot_index] != MISSING:
            return []
        if hotspots and len(cells) >= 5 and hotspot_key(cells) in hotspots:
            return []
        return [rule.option for index, threshold, rule in active
                if not value_passes(cells[index] if index < len(cells) else MISSING, threshold, rule)]

    return failures


def make_row_filter(header: list[str], thresholds: dict[str, float],
                    hotspots: set | None = None) -> Callable[[list[str]], bool]:
    """A predicate over a row's cells for the given header (columns located by name)."""
    failures = make_row_failures(header, thresholds, hotspots)
    return lambda cells: not failures(cells)


def active_rules(header: list[str]) -> list[ColumnRule]:
    """The rules that filter a table with this header (a column that is absent does not filter)."""
    return [rule for rule in RULES if rule.column in header]


def thresholds_of(params: list[str]) -> tuple[dict[str, float], set | None]:
    """The thresholds and hotspots of `mutil filter` options (as config mutation_util holds them)."""
    args = build_parser().parse_args(["filter", "-i", "-", "-o", "-", *params])
    thresholds = {rule.option: float(getattr(args, rule.option)) for rule in RULES}
    return thresholds, (read_hotspot_db(args.hotspot_db) if args.hotspot_db else None)


def filter_table(lines: Iterable[str], out: TextIO, thresholds: dict[str, float],
                 hotspots: set | None = None) -> tuple[int, int]:
    """Copy meta lines and the header, write the rows that pass; returns (kept, total)."""
    keep = None
    kept = total = 0
    for line in lines:
        if keep is None:
            out.write(line if line.endswith("\n") else line + "\n")
            if not line.startswith("#"):
                keep = make_row_filter(line.rstrip("\r\n").split("\t"), thresholds, hotspots)
            continue
        if not line.strip():
            continue
        total += 1
        if keep(line.rstrip("\r\n").split("\t")):
            out.write(line if line.endswith("\n") else line + "\n")
            kept += 1
    return kept, total


def data_lines(path: str, header: bool) -> tuple[str | None, list[list[str]]]:
    """(header line or None, rows as cells) of a header-less anno table or one with a header;
    ``#`` lines and blank lines skipped."""
    first, rows = None, []
    with open(path) as handle:
        for line in handle:
            if line.startswith("#") or not line.strip():
                continue
            if header and first is None:
                first = line.rstrip("\r\n")
                continue
            rows.append(line.rstrip("\r\n").split("\t"))
    return first, rows


def merge_hotspot_rows(hotspot: list[list[str]], fisher: list[list[str]]) -> list[list[str]]:
    """fisher's rows with a ``score(hotspot)`` cell (hotspotCall's LOD for a site that it called
    too, else ``---``), in their order, and hotspotCall's other rows (their last cell is the LOD)
    each placed before the first fisher row past its position: contigs rank in the order fisher's
    rows name them, then the ones only hotspotCall's name, in its order (both tools write a
    region's sites in the region's order, so the merged rows are in that order too)."""
    lods = {tuple(cells[:5]): cells[-1] for cells in hotspot}
    merged_fisher = [cells + [lods.pop(tuple(cells[:5]), MISSING)] for cells in fisher]
    order: dict[str, int] = {}
    for cells in fisher + hotspot:
        order.setdefault(cells[0], len(order))

    def key(cells: list[str]) -> tuple[int, int]:
        return order[cells[0]], int(cells[1])

    pending = sorted((cells for cells in hotspot if tuple(cells[:5]) in lods), key=key)
    merged: list[list[str]] = []
    for cells in merged_fisher:
        while pending and key(pending[0]) < key(cells):
            merged.append(pending.pop(0))
        merged.append(cells)
    return merged + pending


def merge_hotspot(args: argparse.Namespace) -> int:
    """`mutil merge_hotspot`: write the merged table; returns the row count."""
    _, hotspot = data_lines(args.in_hotspot_mutation, args.hotspot_header)
    fisher_header, fisher = data_lines(args.in_fisher_mutation, args.fisher_header)
    rows = merge_hotspot_rows(hotspot, fisher)
    with open(args.output_file, "w") as out:
        if fisher_header is not None:
            out.write(f"{fisher_header}\t{HOTSPOT_COLUMN}\n")
        out.writelines("\t".join(cells) + "\n" for cells in rows)
    return len(rows)


def build_parser() -> argparse.ArgumentParser:
    """The `mutil filter` (permissive defaults) and `mutil merge_hotspot` command lines."""
    parser = argparse.ArgumentParser(prog="mutil")
    parser.add_argument("--version", action="version", version=tool_version("mutil"))
    subparsers = parser.add_subparsers(dest="command", required=True)
    sub = subparsers.add_parser("filter", help="filter a Genomon mutation result table")
    sub.add_argument("-i", "--input", required=True)
    sub.add_argument("-o", "--output", required=True)
    sub.add_argument("--fish_pval", type=float, default=0.0)
    sub.add_argument("--realign_pval", type=float, default=0.0)
    sub.add_argument("--eb_pval", type=float, default=0.0)
    sub.add_argument("--tcount", type=int, default=-1)
    sub.add_argument("--ncount", type=int, default=1000000)
    sub.add_argument("--post10q", type=float, default=0.0)
    sub.add_argument("--r_post10q", type=float, default=0.0)
    sub.add_argument("--count", type=int, default=-1)
    sub.add_argument("--hotspot_db", default=None)
    merge = subparsers.add_parser("merge_hotspot", help="merge hotspotCall's rows into fisher's")
    merge.add_argument("-i", "--in_hotspot_mutation", required=True)
    merge.add_argument("-f", "--in_fisher_mutation", required=True)
    merge.add_argument("-o", "--output_file", required=True)
    merge.add_argument("--hotspot_header", action="store_true", help="the hotspot file starts with a header")
    merge.add_argument("--fisher_header", action="store_true",
                       help="the fisher file starts with a header (written with score(hotspot) appended)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `mutil` console script."""
    args = build_parser().parse_args(argv)
    if args.command == "merge_hotspot":
        merge_hotspot(args)
        return 0
    thresholds = {rule.option: float(getattr(args, rule.option)) for rule in RULES}
    hotspots = read_hotspot_db(args.hotspot_db) if args.hotspot_db else None
    with open(args.input) as source, open(args.output, "w") as out:
        filter_table(source, out, thresholds, hotspots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
