"""The hotspot database (config hotspot_db): checked whole before any job, and cut per mutation
region for hotspotCall (Genomon gives each interval's job its own `<db>.<i>` file, genomon-stages-
spec.md section 1.1: hotspotCall piles up every row it is given, so a row given to two regions'
jobs would be called twice).

Genomon's layout: tab-separated Chr, Start, End, Ref, Alt, then any columns; 1-based, Start = End
for an SNV; no header. ``#`` lines and blank lines are skipped (as `mutil filter` skips them);
plain text or gzip.
"""

from __future__ import annotations

from typing import Iterable

from genomon_smk.fileio import open_text
from genomon_smk.tools.mpileup import parse_region

ALLELE_LETTERS = frozenset("ACGTNacgtn-")


def row_problem(cells: list[str], contigs: dict[str, int]) -> str | None:
    """Why one row (its cells) is not a hotspot row of this reference, or None."""
    if len(cells) < 5:
        return f"{len(cells)} tab-separated columns; a row has at least 5: Chr, Start, End, Ref, Alt (no header)"
    chrom, start, end, ref, alt = cells[:5]
    if not (start.isdigit() and end.isdigit()):
        return f"Start {start!r} and End {end!r} must be whole numbers (1-based; a header line is not allowed)"
    if not 1 <= int(start) <= int(end):
        return f"Start {start} and End {end}: 1 <= Start <= End is required"
    if not ref or not alt or set(ref + alt) - ALLELE_LETTERS:
        return f"Ref {ref!r} and Alt {alt!r} must be bases (A, C, G, T, N) or '-'"
    if chrom not in contigs:
        names = ", ".join(list(contigs)[:5]) + (", ..." if len(contigs) > 5 else "")
        return f"contig {chrom!r} is not in the reference (its contigs: {names})"
    if int(end) > contigs[chrom]:
        return f"End {end} is past the end of {chrom} ({contigs[chrom]} bp)"
    return None


def hotspot_db_problems(path: str, contigs: Iterable[tuple[str, int]], limit: int = 10) -> list[str]:
    """`FILE:LINE: problem` for every bad row (the first `limit` of them, then a count), [] when
    the database fits the reference."""
    lengths = dict(contigs)
    problems: list[str] = []
    count = 0
    try:
        with open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                if line.startswith("#") or not line.strip():
                    continue
                problem = row_problem(line.rstrip("\r\n").split("\t"), lengths)
                if problem:
                    count += 1
                    if len(problems) < limit:
                        problems.append(f"{path}:{number}: hotspot_db: {problem}")
    except (OSError, UnicodeDecodeError, EOFError) as error:
        return [f"hotspot_db: cannot read {path}: {error}"]
    if count > limit:
        problems.append(f"{path}: hotspot_db: {count - limit} more bad rows")
    return problems


def region_rows(lines: Iterable[str], intervals: list[str]) -> list[str]:
    """The database lines whose Start lies in one of the intervals (samtools `chr:start-end`
    strings, disjoint), in the intervals' order and then by Start: the region's own database,
    in the order its pileup runs."""
    spans = [parse_region(interval) for interval in intervals]
    chosen: list[tuple[int, int, int, str]] = []
    for number, line in enumerate(lines):
        if line.startswith("#") or not line.strip():
            continue
        cells = line.rstrip("\r\n").split("\t")
        start = int(cells[1])
        for index, (chrom, low, high) in enumerate(spans):
            if cells[0] == chrom and (low is None or low <= start) and (high is None or start <= high):
                chosen.append((index, start, number, line if line.endswith("\n") else line + "\n"))
                break
    return [line for *_, line in sorted(chosen)]


def write_region_db(path: str, intervals: list[str], out_path: str) -> int:
    """Write the region's rows of the database at `path` to out_path; returns their count."""
    with open_text(path) as handle:
        rows = region_rows(handle, intervals)
    with open(out_path, "w") as out:
        out.writelines(rows)
    return len(rows)
