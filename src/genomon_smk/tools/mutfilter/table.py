"""Reading and writing Genomon "anno" mutation tables (TSV, header-less unless ``--header``).

Every mutfilter subcommand reads candidate rows ``Chr Start End Ref Alt ...`` and writes each
row back unchanged with new columns appended.  ``Start`` is 1-based; the filters work with the
0-based ``s0 = Start - 1`` and keep ``End`` as is (so ``[s0, End)`` is the half-open interval).
With one process rows are streamed line by line; with ``-T N`` chunks of lines go to N worker
processes (the pool's feeder may read the input ahead; results are written in input order).
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

NA = "---"


@dataclass(frozen=True)
class Candidate:
    """One candidate mutation row: the raw line (without newline) and its parsed key fields."""

    line: str
    chrom: str
    s0: int
    end: int
    ref: str
    alt: str

    @property
    def start(self) -> int:
        """1-based Start as written in the table."""
        return self.s0 + 1


def parse_candidate(line: str) -> Candidate:
    """Parse one TSV row (newline already stripped) into a :class:`Candidate`."""
    fields = line.split("\t")
    if len(fields) < 5:
        raise ValueError(f"anno row needs at least 5 columns (Chr Start End Ref Alt): {line!r}")
    return Candidate(line, fields[0], int(fields[1]) - 1, int(fields[2]), fields[3], fields[4])


def iter_lines(handle) -> Iterator[str]:
    """Yield the non-empty lines of a text handle without their line terminators."""
    for raw in handle:
        line = raw.rstrip("\r\n")
        if line:
            yield line


# An annotator maps a candidate to its new column values, or to None to drop the row.
Annotator = Callable[[Candidate], "Sequence[str] | None"]
# A row parser turns one data line into a Candidate (anno rows or VCF records).
RowParser = Callable[[str], Candidate]

_WORKER: tuple[Annotator, RowParser] | None = None


def _init_worker(factory: Callable[[], Annotator], parser: RowParser) -> None:
    """Build the annotator once per worker process (opens BAM/FASTA handles once)."""
    global _WORKER
    _WORKER = (factory(), parser)


def _columns_of_chunk(lines: Sequence[str]) -> list["Sequence[str] | None"]:
    """Worker side of :func:`annotate_rows`: new columns for each line of a chunk."""
    annotator, parser = _WORKER
    return _annotated(annotator, [parser(line) for line in lines])


#: rows parsed ahead, so that an annotator with a ``prefetch(candidates)`` method reads their
#: BAM records together (mutfilter.reads.prefetch)
PREFETCH_ROWS = 256


def _annotated(annotator: Annotator, candidates: list[Candidate]) -> list["Sequence[str] | None"]:
    prefetch = getattr(annotator, "prefetch", None)
    if prefetch is not None:
        prefetch(candidates)
    return [annotator(candidate) for candidate in candidates]


def _chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """Split an iterable into lists of at most ``size`` items, preserving order."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def annotate_rows(
    lines: Iterable[str],
    annotator_factory: Callable[[], Annotator],
    parser: RowParser = parse_candidate,
    threads: int = 1,
    chunk_size: int = 64,
) -> Iterator[tuple[str, "Sequence[str] | None"]]:
    """Yield ``(line, new columns or None)`` for each data line, in input order.

    ``annotator_factory`` (and ``parser``) must be picklable when ``threads > 1``: each worker
    process calls the factory once, so file handles are opened once per process, not per
    candidate; chunks of lines are distributed and results come back in order.
    """
    if threads <= 1:
        annotator = annotator_factory()
        for chunk in _chunks(lines, PREFETCH_ROWS):
            yield from zip(chunk, _annotated(annotator, [parser(line) for line in chunk]))
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(threads, initializer=_init_worker,
                      initargs=(annotator_factory, parser)) as pool:
        for chunk, results in _chunked_tee(lines, chunk_size, pool):
            yield from zip(chunk, results)


def _chunked_tee(lines: Iterable[str], chunk_size: int, pool):
    """Pair each chunk of lines with its worker results (``imap`` keeps the order).

    ``imap`` pulls chunks from its own feeder thread, so chunks are queued in ``pending`` as
    they are handed out and popped as their results arrive.
    """
    pending: collections.deque = collections.deque()

    def remember(chunks):
        for chunk in chunks:
            pending.append(chunk)
            yield chunk

    for results in pool.imap(_columns_of_chunk, remember(_chunks(lines, chunk_size))):
        yield pending.popleft(), results


def annotate_file(
    input_path: str,
    output_path: str,
    column_names: Sequence[str],
    annotator_factory: Callable[[], Annotator],
    header: bool = False,
    threads: int = 1,
) -> None:
    """Stream an anno table, appending the annotator's columns to each kept row.

    With ``header`` the first line is copied with ``column_names`` appended.
    """
    with open(input_path) as source, open(output_path, "w") as sink:
        lines = iter_lines(source)
        if header:
            first = next(lines, None)
            if first is not None:
                sink.write(first + "\t" + "\t".join(column_names) + "\n")
        for line, columns in annotate_rows(lines, annotator_factory, threads=threads):
            if columns is not None:
                sink.write(line + "\t" + "\t".join(columns) + "\n")
