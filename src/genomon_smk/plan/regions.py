"""Regions: the unit of the markdup and mutation stages (Genomon's chr dirs / interval list).

A region is one or more intervals of the reference, in reference order; every base of every
contig belongs to exactly one region, and one extra region, `unmapped`, holds the reads that
have no coordinate. Regions come from the reference .fai (one per contig, long contigs cut,
runs of small contigs packed together) or from a file (BED, or Genomon's interval list).

The mutation stage calls where Genomon calls: a Genomon interval list's lines are its regions as
listed (nothing completed onto the contigs the list leaves out), and without a list, on a
GRCh37/hg19 reference with decoy, virus or unplaced contigs, on 1-22, X, Y and MT only, like
Genomon's GRCh37_noScaffold_noDecoy.interval_list (`regions.mutation_contigs: all` calls on every
contig). Markdup's regions cover every base of every contig once, whatever the list.

Deliberate differences from upstream Genomon (docs/differences.md): an interval list's lines that
share a boundary base call it once (in the first line), so no row is reported twice; other
references than GRCh37/hg19 call on every contig by default.
"""

from __future__ import annotations

import argparse
import bisect
import math
import sys
from dataclasses import dataclass

from genomon_smk.plan.rules import AUTO

UNMAPPED = "unmapped"


@dataclass(frozen=True)
class Interval:
    contig: str
    start: int  # 0-based, inclusive
    end: int  # 0-based, exclusive

    def samtools(self) -> str:
        """The interval in samtools' 1-based inclusive `chr:start-end` form."""
        return f"{self.contig}:{self.start + 1}-{self.end}"


@dataclass(frozen=True)
class Region:
    name: str
    intervals: tuple[Interval, ...]

    @property
    def is_unmapped(self) -> bool:
        return not self.intervals


def read_fai(path: str) -> list[tuple[str, int]]:
    """(contig, length) pairs of a FASTA index, in reference order."""
    contigs = []
    with open(path) as handle:
        for line in handle:
            if line.strip():
                name, length = line.split("\t")[:2]
                contigs.append((name, int(length)))
    return contigs


def region_name(index: int) -> str:
    return f"r{index:04d}"


def cut_contig(contig: str, length: int, max_length: int) -> list[Interval]:
    """Cut a contig into equal pieces no longer than max_length."""
    pieces = max(1, math.ceil(length / max_length))
    bounds = [round(i * length / pieces) for i in range(pieces + 1)]
    return [Interval(contig, bounds[i], bounds[i + 1]) for i in range(pieces)]


def derive_regions(contigs: list[tuple[str, int]], max_length: int, pack_bp: int) -> list[Region]:
    """Regions from the .fai: long contigs cut at max_length; consecutive contigs shorter than
    pack_bp share a region until it holds pack_bp bases; the unmapped region last."""
    groups: list[list[Interval]] = []
    packing: list[Interval] = []
    packed_bp = 0
    for contig, length in contigs:
        if length < pack_bp:
            packing.append(Interval(contig, 0, length))
            packed_bp += length
            if packed_bp >= pack_bp:
                groups.append(packing)
                packing, packed_bp = [], 0
            continue
        if packing:
            groups.append(packing)
            packing, packed_bp = [], 0
        groups.extend([piece] for piece in cut_contig(contig, length, max_length))
    if packing:
        groups.append(packing)
    regions = [Region(region_name(i + 1), tuple(group)) for i, group in enumerate(groups)]
    return regions + [Region(UNMAPPED, ())]


def split_intervals(intervals: tuple[Interval, ...], parts: int) -> list[tuple[Interval, ...]]:
    """Cut a run of intervals into `parts` consecutive runs of (nearly) equal bases."""
    total = sum(i.end - i.start for i in intervals)
    bounds = [round(k * total / parts) for k in range(1, parts + 1)]
    runs: list[tuple[Interval, ...]] = []
    current: list[Interval] = []
    done = 0  # bases of the intervals before this one
    for interval in intervals:
        start = interval.start
        while bounds and bounds[0] <= done + interval.end - interval.start:
            cut = interval.start + bounds.pop(0) - done
            if cut > start:
                current.append(Interval(interval.contig, start, cut))
            runs.append(tuple(current))
            current, start = [], cut
        if start < interval.end:
            current.append(Interval(interval.contig, start, interval.end))
        done += interval.end - interval.start
    return [run for run in runs if run]


#: the most mutation pieces `auto` asks for
AUTO_MOST = 4
#: the fewest bases of a piece `auto` cuts: a smaller piece costs its tools' start (interpreter,
#: numpy, pysam, scipy: about 0.3 s) more than its calls (the bench's 5 Mb genome: two pieces)
AUTO_PIECE_BP = 2_000_000


def min_mutation_regions(configured: int | str, genome_bp: int) -> int:
    """The config's `regions.min_mutation_regions`: a number, or `auto`: the genome's bases in
    pieces of at least AUTO_PIECE_BP, at most AUTO_MOST. The same for a reference and config on
    every run, whatever its --cores or profile: the cut is part of what the mutation jobs are
    (their names and regions), and another cut would rerun them all for the same calls."""
    if configured != AUTO:
        return int(configured)
    return max(1, min(AUTO_MOST, genome_bp // AUTO_PIECE_BP))


def mutation_regions(regions: list[Region], min_regions: int) -> list[Region]:
    """The mutation stage's regions: the markdup regions without the unmapped one, each cut
    into equal pieces when there are fewer than min_regions of them, so that a small genome's
    pair still makes enough jobs to use its cores (a human genome's regions stay as they are).
    A cut region's pieces are named <region>-<n>."""
    mapped = [region for region in regions if not region.is_unmapped]
    if len(mapped) >= min_regions:
        return mapped
    total = sum(i.end - i.start for region in mapped for i in region.intervals)
    piece_bp = math.ceil(total / min_regions)
    cut = []
    for region in mapped:
        bases = sum(i.end - i.start for i in region.intervals)
        parts = max(1, min(bases, math.ceil(bases / piece_bp)))
        if parts == 1:
            cut.append(region)
            continue
        runs = split_intervals(region.intervals, parts)
        cut.extend(Region(f"{region.name}-{n}", run) for n, run in enumerate(runs, start=1))
    return cut


#: GRCh37's chromosomes (hg19's with chr, chrM), where Genomon's interval list calls mutations
PRIMARY_CONTIGS = tuple([str(n) for n in range(1, 23)] + ["X", "Y", "MT"])
#: chromosome 1's length in GRCh37 and hg19 (GRCh38's is 248956422)
GRCH37_CHR1 = 249_250_621


def primary_contigs(contigs: list[tuple[str, int]]) -> list[str] | None:
    """The chromosomes 1-22, X, Y, MT of a GRCh37/hg19 reference that also holds other contigs
    (hs37d5's decoy, EBV and unplaced ones), as the reference names them; None for any other
    reference, or one of only those."""
    lengths = dict(contigs)
    for prefix, mito in (("", "MT"), ("chr", "chrM"), ("chr", "chrMT")):
        if lengths.get(f"{prefix}1") != GRCH37_CHR1:
            continue
        names = [f"{prefix}{name}" for name in PRIMARY_CONTIGS[:-1]] + [mito]
        kept = [name for name in names if name in lengths]
        return kept if len(kept) < len(lengths) else None
    return None


def mutation_contigs(contigs: list[tuple[str, int]], setting: str) -> set[str] | None:
    """The contigs the mutation stage calls on (regions.mutation_contigs): `auto`: a GRCh37/hg19
    reference with decoys its chromosomes only (primary_contigs), else all; `all`: every contig
    (None: no restriction)."""
    if setting == "all":
        return None
    kept = primary_contigs(contigs)
    return set(kept) if kept else None


def only_contigs(regions: list[Region], kept: set[str] | None) -> list[Region]:
    """The regions with their intervals on the kept contigs only (None: all); emptied regions
    dropped (the unmapped one stays)."""
    if kept is None:
        return regions
    result = []
    for region in regions:
        intervals = tuple(i for i in region.intervals if i.contig in kept)
        if intervals or region.is_unmapped:
            result.append(Region(region.name, intervals))
    return result


def interval_list_regions(path: str, contigs: list[tuple[str, int]]) -> list[Region] | None:
    """The mutation stage's regions of a Genomon interval list: one per line as listed (Genomon
    runs one task per line), a base that adjacent lines share in the first only; None when the
    file is a BED file (its regions are markdup's too). Raises ValueError for unknown contigs,
    bounds and larger overlaps."""
    groups, interval_list = parse_region_file(path)
    if not interval_list:
        return None
    lengths = dict(contigs)
    problems = []
    covered: dict[str, list[tuple[int, int]]] = {}
    regions = []
    for index, group in enumerate(groups, start=1):
        kept = []
        for interval in group:
            if interval.contig not in lengths:
                problems.append(f"{path}: contig '{interval.contig}' is not in the reference")
                continue
            if not 0 <= interval.start < interval.end <= lengths[interval.contig]:
                problems.append(f"{path}: {interval.samtools()} is outside {interval.contig} "
                                f"(length {lengths[interval.contig]})")
                continue
            start = interval.start
            for seen_start, seen_end in covered.get(interval.contig, []):
                if seen_start <= start < seen_end and start == seen_end - 1:
                    start = seen_end  # Genomon's lists repeat the boundary base
                elif start < seen_end and interval.end > seen_start:
                    problems.append(f"{path}: {interval.samtools()} overlaps another line")
            if start < interval.end:
                kept.append(Interval(interval.contig, start, interval.end))
            covered.setdefault(interval.contig, []).append((interval.start, interval.end))
        if kept:
            regions.append(Region(region_name(index), tuple(kept)))
    if problems:
        raise ValueError("\n".join(problems[:20]) + ("\n..." if len(problems) > 20 else ""))
    return regions


def parse_region_file(path: str) -> tuple[list[list[Interval]], bool]:
    """Interval groups from a BED file (`contig start end [name]`, 0-based; lines with the same
    name form one region, else one region per line) or a Genomon interval list (one region per
    line, `chr:start-end` 1-based, several joined by commas), and whether the file is an interval
    list (every line in that form)."""
    groups: dict[str, list[Interval]] = {}
    interval_list = True
    with open(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line.startswith(("#", "track", "browser")):
                continue
            fields = line.split("\t")
            try:
                if len(fields) >= 3:
                    interval_list = False
                    interval = Interval(fields[0], int(fields[1]), int(fields[2]))
                    groups.setdefault(fields[3] if len(fields) > 3 else f"line{number}", []).append(interval)
                else:
                    intervals = []
                    for item in fields[0].split(","):
                        contig, _, span = item.rpartition(":")
                        start, end = span.split("-")
                        # Genomon's GRCh37 list starts 17 and MT at 0.
                        intervals.append(Interval(contig, max(int(start) - 1, 0), int(end)))
                    groups[f"line{number}"] = intervals
            except ValueError:
                raise ValueError(f"{path}:{number}: not a BED line nor a chr:start-end interval: {line!r}") from None
    return list(groups.values()), interval_list and bool(groups)


def complete_interval_list(
    groups: list[list[Interval]], contigs: list[tuple[str, int]], max_length: int, pack_bp: int
) -> tuple[list[list[Interval]], list[str]]:
    """A Genomon interval list made to cover the reference once, as markdup needs (every read in
    one region), and what was changed: a base shared by adjacent intervals (Genomon's lists repeat
    the boundary) goes to the first; the bases before, between and after a contig's intervals go
    to the neighbouring interval (before the first: the first; else the one before); contigs the
    list leaves out get regions of their own, derived as without a file. Unknown contigs, bounds
    and larger overlaps are left for check_coverage to refuse."""
    lengths = dict(contigs)
    notes: list[str] = []
    where: dict[str, list[tuple[int, int]]] = {}  # contig -> (group, position) of its intervals
    for g, group in enumerate(groups):
        for k, interval in enumerate(group):
            if interval.contig in lengths and 0 <= interval.start < interval.end <= lengths[interval.contig]:
                where.setdefault(interval.contig, []).append((g, k))
    listed = groups  # the intervals as the list gives them, for the notes
    groups = [list(group) for group in groups]
    for contig, places in where.items():
        places.sort(key=lambda place: groups[place[0]][place[1]].start)
        covered = 0
        previous: tuple[int, int] | None = None
        for g, k in places:
            interval = groups[g][k]
            start = interval.start
            if start == covered - 1 and previous is not None:
                notes.append(f"{contig}:{start + 1} is in two intervals: kept in the first")
                start = covered
            elif start > covered:
                gap = f"{contig}:{covered + 1}-{start}"
                if previous is None:
                    notes.append(f"{gap} is in no interval: added to {contig}:{start + 1}-{interval.end}")
                    start = 0
                else:
                    pg, pk = previous
                    before = groups[pg][pk]
                    notes.append(f"{gap} is in no interval: added to {listed[pg][pk].samtools()}")
                    groups[pg][pk] = Interval(contig, before.start, start)
            groups[g][k] = Interval(contig, start, interval.end)
            covered = max(covered, interval.end)
            previous = (g, k)
        if previous is not None and covered < lengths[contig]:
            pg, pk = previous
            last = groups[pg][pk]
            notes.append(f"{contig}:{covered + 1}-{lengths[contig]} is in no interval: added to {listed[pg][pk].samtools()}")
            groups[pg][pk] = Interval(contig, last.start, lengths[contig])
    left_out = [(contig, length) for contig, length in contigs if contig not in where]
    if left_out:
        derived = [list(region.intervals) for region in derive_regions(left_out, max_length, pack_bp)[:-1]]
        contigs_word = "contig" if len(left_out) == 1 else "contigs"
        regions_word = "a region" if len(derived) == 1 else f"{len(derived)} regions"
        notes.append(f"{len(left_out)} {contigs_word} in no interval (e.g. {left_out[0][0]}): {regions_word} of their own")
        groups.extend(derived)
    return groups, notes


def check_coverage(groups: list[list[Interval]], contigs: list[tuple[str, int]], source: str) -> list[str]:
    """Problems with region intervals: unknown contigs, out of bounds, overlaps, gaps."""
    lengths = dict(contigs)
    problems = []
    per_contig: dict[str, list[Interval]] = {}
    for group in groups:
        for interval in group:
            if interval.contig not in lengths:
                problems.append(f"{source}: contig '{interval.contig}' is not in the reference")
            elif not 0 <= interval.start < interval.end <= lengths[interval.contig]:
                problems.append(
                    f"{source}: {interval.samtools()} is outside {interval.contig} (length {lengths[interval.contig]})"
                )
            else:
                per_contig.setdefault(interval.contig, []).append(interval)
    for contig, length in contigs:
        covered = 0
        for interval in sorted(per_contig.get(contig, []), key=lambda i: i.start):
            if interval.start < covered:
                problems.append(f"{source}: {interval.samtools()} overlaps another region")
            elif interval.start > covered:
                problems.append(f"{source}: {contig}:{covered + 1}-{interval.start} is in no region")
            covered = max(covered, interval.end)
        if covered < length:
            problems.append(f"{source}: {contig}:{covered + 1}-{length} is in no region")
    return problems


def regions_from_file(
    path: str, contigs: list[tuple[str, int]], max_length: int, pack_bp: int
) -> tuple[list[Region], list[str]]:
    """Regions from a file, checked to cover the reference exactly once, in reference order, and
    what was changed to make a Genomon interval list cover it (complete_interval_list; a BED file
    must cover it as it is)."""
    groups, interval_list = parse_region_file(path)
    notes: list[str] = []
    if interval_list:
        groups, notes = complete_interval_list(groups, contigs, max_length, pack_bp)
    problems = check_coverage(groups, contigs, path)
    if problems:
        raise ValueError("\n".join(problems[:20]) + ("\n..." if len(problems) > 20 else ""))
    order = {contig: i for i, (contig, _) in enumerate(contigs)}
    for group in groups:
        group.sort(key=lambda i: (order[i.contig], i.start))
    groups.sort(key=lambda g: (order[g[0].contig], g[0].start))
    regions = [Region(region_name(i + 1), tuple(g)) for i, g in enumerate(groups)]
    return regions + [Region(UNMAPPED, ())], notes


def make_regions(fai: str, region_file: str | None, max_length: int, pack_bp: int) -> list[Region]:
    return regions_of(read_fai(fai), region_file, max_length, pack_bp)


def regions_of(contigs: list[tuple[str, int]], region_file: str | None, max_length: int, pack_bp: int) -> list[Region]:
    """The regions of a reference of these contigs: from the region file, else derived."""
    return regions_with_notes(contigs, region_file, max_length, pack_bp)[0]


def regions_with_notes(
    contigs: list[tuple[str, int]], region_file: str | None, max_length: int, pack_bp: int
) -> tuple[list[Region], list[str]]:
    """regions_of and what was changed to complete a Genomon interval list."""
    if region_file:
        return regions_from_file(region_file, contigs, max_length, pack_bp)
    return derive_regions(contigs, max_length, pack_bp), []


def write_regions(regions: list[Region], out) -> None:
    """The region table: `region contig start end` (0-based, half-open), one row per interval."""
    out.write("region\tcontig\tstart\tend\n")
    for region in regions:
        if region.is_unmapped:
            out.write(f"{region.name}\t*\t0\t0\n")
        for interval in region.intervals:
            out.write(f"{region.name}\t{interval.contig}\t{interval.start}\t{interval.end}\n")


def read_regions(path: str) -> list[Region]:
    """Inverse of write_regions."""
    order: dict[str, list[Interval]] = {}
    with open(path) as handle:
        next(handle)
        for line in handle:
            name, contig, start, end = line.rstrip("\n").split("\t")
            intervals = order.setdefault(name, [])
            if contig != "*":
                intervals.append(Interval(contig, int(start), int(end)))
    return [Region(name, tuple(intervals)) for name, intervals in order.items()]


class RegionLookup:
    """Finds the region of a read from its reference name and 0-based position."""

    def __init__(self, regions: list[Region]):
        self.names = [r.name for r in regions]
        self.unmapped = next(i for i, r in enumerate(regions) if r.is_unmapped)
        starts: dict[str, list[tuple[int, int]]] = {}
        for index, region in enumerate(regions):
            for interval in region.intervals:
                starts.setdefault(interval.contig, []).append((interval.start, index))
        self.contigs = set(starts)
        self._starts = {c: [s for s, _ in sorted(v)] for c, v in starts.items()}
        self._index = {c: [i for _, i in sorted(v)] for c, v in starts.items()}

    def index(self, contig: str | None, position: int) -> int:
        """Region index for a read placed at (contig, position); reads without a place go to unmapped."""
        if contig is None or position < 0:
            return self.unmapped
        starts = self._starts[contig]
        return self._index[contig][bisect.bisect_right(starts, position) - 1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Write the region table used by the markdup and mutation stages.")
    parser.add_argument("--fai", required=True, help="reference .fai")
    parser.add_argument("--region-file", help="BED or Genomon interval list (default: derive from the .fai)")
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--pack-bp", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    regions, notes = regions_with_notes(read_fai(args.fai), args.region_file, args.max_length, args.pack_bp)
    for note in notes:
        print(f"regions.file: {note}")
    with open(args.out, "w") as out:
        write_regions(regions, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
