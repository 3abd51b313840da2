"""Reads of a BAM around candidates, fetched once per window and shared by the filters.

Each filter looks at the reads around a candidate: realignment those of ``[s0, End)`` in tumor
and normal, the indel filter those of ``[s0 - L, End + L)`` in the normal (whether any has an
indel), breakpoint those of ``s0`` and of ``[s0 - c, End + c)`` in the normal. An indexed
fetch costs about 2 ms however few reads it returns (the reads before the region in its 16 kb
index bin are decompressed and skipped), several times what the filters do with the reads.
:func:`overlapping` fetches a window a little wider than the first query (``PAD`` bases each
side) and answers every later query inside it from memory, in this process: across the filters
of one identify-mutations job, which run in one process one after the other.

A query returns exactly what ``AlignmentFile.fetch(chrom, start, end)`` returns, in the same
order: the records of the window whose span overlaps ``[start, end)``, a record's span being
htslib's (``reference_end``; ``reference_start + 1`` for a record without one, e.g. an
unmapped read placed beside its mate).

:func:`prefetch` fills the windows of many candidates at once (a filter's next rows), from one
``samtools view -M -L`` of their windows: htslib's multi-region iterator reads each compressed
block once, and samtools inflates it with libdeflate, where each indexed fetch of pysam (zlib)
inflates the reads from the start of the query's 16 kb index window up to it: on the bench,
0.2 instead of 0.75 CPU s for the 268 windows of a half genome's candidates.
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

import pysam

#: bases fetched beyond a query's ends, for the later queries of the same candidate (the
#: indel filter's, at its default --search_length; the breakpoint filter's --min_clip_size)
PAD = 40
#: records held in memory for one process; the oldest windows go first
MAX_CACHED_READS = 200_000
#: a window holding more records is not kept (a pile-up in a repeat): queried directly
MAX_WINDOW_READS = 20_000


@dataclass
class Window:
    chrom: str
    start: int
    end: int
    reads: list
    spans: list[tuple[int, int]]


def span(read: pysam.AlignedSegment) -> tuple[int, int]:
    """The record's 0-based half-open reference span as htslib's iterator overlaps it."""
    start = read.reference_start
    end = read.reference_end
    return start, end if end is not None and end > start else start + 1


def select(window: Window, start: int, end: int) -> list:
    """The window's records overlapping ``[start, end)``, in file order."""
    return [read for read, (first, last) in zip(window.reads, window.spans) if first < end and last > start]


#: windows are found by the BUCKET-sized stretches of the contig they cover
BUCKET = 1024


def buckets(window: Window) -> list[tuple[str, int]]:
    return [(window.chrom, bucket) for bucket in range(window.start // BUCKET, (window.end - 1) // BUCKET + 1)]


class WindowCache:
    """The windows fetched from one BAM file, oldest first, and by the stretches they cover."""

    def __init__(self, max_reads: int = MAX_CACHED_READS):
        self.windows: collections.deque[Window] = collections.deque()
        self.by_bucket: dict[tuple[str, int], list[Window]] = {}
        self.reads = 0
        self.max_reads = max_reads

    def find(self, chrom: str, start: int, end: int) -> Window | None:
        for window in reversed(self.by_bucket.get((chrom, start // BUCKET), ())):
            if window.start <= start and end <= window.end:
                return window
        return None

    def add(self, window: Window) -> None:
        self.windows.append(window)
        for bucket in buckets(window):
            self.by_bucket.setdefault(bucket, []).append(window)
        self.reads += len(window.reads)
        while self.reads > self.max_reads and len(self.windows) > 1:
            oldest = self.windows.popleft()
            self.reads -= len(oldest.reads)
            for bucket in buckets(oldest):
                self.by_bucket[bucket].remove(oldest)
                if not self.by_bucket[bucket]:
                    del self.by_bucket[bucket]


_CACHES: dict[tuple, WindowCache] = {}


def file_key(path: str) -> tuple:
    """The BAM file's identity: its path, and its inode, size and time, so a rewritten file is
    fetched anew."""
    status = os.stat(path)
    return path, status.st_ino, status.st_size, status.st_mtime_ns


def overlapping(bam: pysam.AlignmentFile, chrom: str, start: int, end: int) -> list:
    """The records of ``bam`` overlapping ``[start, end)`` of ``chrom`` (a contig of the BAM),
    as ``bam.fetch(chrom, start, end)`` gives them, from a window fetched once."""
    cache = _CACHES.setdefault(file_key(bam.filename.decode()), WindowCache())
    window = cache.find(chrom, start, end)
    if window is None:
        first, last = max(0, start - PAD), end + PAD
        reads = []
        for read in bam.fetch(chrom, first, last):
            reads.append(read)
            if len(reads) > MAX_WINDOW_READS:
                return list(bam.fetch(chrom, start, end))
        window = Window(chrom, first, last, reads, [span(read) for read in reads])
        cache.add(window)
    return select(window, start, end)


def prefetch(bam: pysam.AlignmentFile, queries, reference: str | None = None) -> None:
    """Fill the windows that :func:`overlapping` would fetch for these first queries ((chrom,
    start, end) of the BAM's contigs; those already answered from memory left out), from one
    samtools run: each window holds the records of ``bam.fetch`` over it, in file order. Without
    samtools on PATH (or a CRAM without its reference), nothing: the queries fetch as before."""
    path = bam.filename.decode()
    cache = _CACHES.setdefault(file_key(path), WindowCache())
    wanted = sorted({(chrom, max(0, start - PAD), end + PAD) for chrom, start, end in queries
                     if cache.find(chrom, start, end) is None})
    samtools = shutil.which("samtools")
    if not wanted or samtools is None or (bam.is_cram and not reference):
        return
    by_chrom: dict[str, list[Window]] = {}
    for chrom, first, last in wanted:
        by_chrom.setdefault(chrom, []).append(Window(chrom, first, last, [], []))
    with tempfile.NamedTemporaryFile("w", prefix="windows.", suffix=".bed") as bed, \
            tempfile.TemporaryFile() as errors:
        bed.writelines(f"{chrom}\t{first}\t{last}\n" for chrom, first, last in wanted)
        bed.flush()
        command = [samtools, "view", "-u", "-M", "-L", bed.name, *(["-T", reference] if reference else []), path]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors) as process:
            with pysam.AlignmentFile(process.stdout, "rb") as stream:
                # Records in file order (by contig, then start); each goes to every window its
                # span overlaps (htslib's test, as a fetch's); `first` skips the windows that
                # end before the records now start.
                current, windows, first = None, [], 0
                for read in stream:
                    chrom = read.reference_name
                    if chrom != current:
                        current, windows, first = chrom, by_chrom.get(chrom, []), 0
                    start, end = span(read)
                    while first < len(windows) and windows[first].end <= start:
                        first += 1
                    for index in range(first, len(windows)):
                        window = windows[index]
                        if window.start >= end:
                            break
                        if window.end > start:
                            window.reads.append(read)
                            window.spans.append((start, end))
        if process.returncode:
            errors.seek(0)
            raise OSError(f"{' '.join(command)} failed: {errors.read().decode(errors='replace').strip()}")
    for windows in by_chrom.values():
        for window in windows:
            if len(window.reads) <= MAX_WINDOW_READS:  # as overlapping() keeps them
                cache.add(window)


def clear() -> None:
    """Forget every window (the BAM files changed, or a test wants a cold start)."""
    _CACHES.clear()
