"""Round-robin split of a sample's paired FASTQ lanes into a fixed number of chunks.

R1 and R2 are read in lockstep, so a chunk's R1 and R2 always hold the same fragments in the
same order; record n (over all lanes, in sheet order) goes to chunk n mod N. Every record is
checked while it passes (4 lines, '@' and '+' lines, sequence and quality of equal length, mate
names agree), and R1 and R2 must end together. The counts are written as JSON for the
read-count integrity check.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import sys
import zlib
from contextlib import ExitStack
from dataclasses import dataclass


class FastqError(Exception):
    """A malformed, truncated or mismatched FASTQ input."""


@dataclass
class LaneCount:
    fq1: str
    fq2: str
    read_pairs: int
    # Mates trimmed to nothing: bwa keeps them, but samtools stats does not count them.
    empty_read1: int = 0
    empty_read2: int = 0


def open_fastq(path: str) -> io.BufferedReader:
    """Open a FASTQ, gzipped (by magic bytes) or plain, as a buffered binary stream."""
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
    except OSError as error:
        raise FastqError(f"{path}: cannot read: {error.strerror}") from None
    if magic == b"\x1f\x8b":
        return io.BufferedReader(gzip.open(path, "rb"), buffer_size=1 << 20)
    return open(path, "rb", buffering=1 << 20)


def mate_name(header: bytes) -> bytes:
    """The fragment name of a FASTQ header line: up to the first blank, without /1 or /2."""
    name = header[1:].split(maxsplit=1)[0] if len(header) > 1 else b""
    if name.endswith((b"/1", b"/2")):
        name = name[:-2]
    return name


def read_record(stream, path: str, number: int) -> list[bytes] | None:
    """The next 4-line record, checked; None at a clean end of file."""
    try:
        header = stream.readline()
        if not header:
            return None
        record = [header, stream.readline(), stream.readline(), stream.readline()]
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise FastqError(f"{path}: truncated or corrupt gzip after {number - 1} records ({error})") from None
    line = 4 * (number - 1) + 1
    if not record[3]:
        raise FastqError(f"{path}: record {number} (line {line}) is cut short: a record has 4 lines")
    if not record[0].startswith(b"@"):
        raise FastqError(f"{path}: record {number} (line {line}) does not start with '@'")
    if not record[2].startswith(b"+"):
        raise FastqError(f"{path}: record {number} (line {line + 2}) has no '+' separator line")
    if len(record[1].rstrip(b"\r\n")) != len(record[3].rstrip(b"\r\n")):
        raise FastqError(f"{path}: record {number} (line {line}): sequence and quality lengths differ")
    for i in range(3):
        if not record[i].endswith(b"\n"):
            raise FastqError(f"{path}: record {number} (line {line + i}) is cut short")
    if not record[3].endswith(b"\n"):
        record[3] += b"\n"
    return record


def split_lane(fq1: str, fq2: str, outputs: list[tuple], first_index: int) -> LaneCount:
    """Distribute one lane's records over the chunk outputs, continuing the round robin at
    first_index; return its counts."""
    chunks = len(outputs)
    pairs = empty1 = empty2 = 0
    with open_fastq(fq1) as r1, open_fastq(fq2) as r2:
        while True:
            number = pairs + 1
            rec1 = read_record(r1, fq1, number)
            rec2 = read_record(r2, fq2, number)
            if rec1 is None or rec2 is None:
                if rec1 is not None or rec2 is not None:
                    longer, shorter = (fq1, fq2) if rec2 is None else (fq2, fq1)
                    raise FastqError(
                        f"R1 and R2 have different record counts: {shorter} ends after {pairs} records, "
                        f"{longer} has more"
                    )
                break
            if mate_name(rec1[0]) != mate_name(rec2[0]):
                raise FastqError(
                    f"record {number}: mate names differ: {fq1} has {mate_name(rec1[0]).decode(errors='replace')}, "
                    f"{fq2} has {mate_name(rec2[0]).decode(errors='replace')}"
                )
            out1, out2 = outputs[(first_index + pairs) % chunks]
            out1.write(b"".join(rec1))
            out2.write(b"".join(rec2))
            pairs += 1
            empty1 += rec1[1] in (b"\n", b"\r\n")
            empty2 += rec2[1] in (b"\n", b"\r\n")
    if pairs == 0:
        raise FastqError(f"{fq1} and {fq2} hold no reads")
    return LaneCount(fq1, fq2, pairs, empty1, empty2)


def split_sample(lanes: list[tuple[str, str]], chunk_pairs: list[tuple[str, str]]) -> list[LaneCount]:
    """Split all lanes of a sample into the given (R1, R2) chunk files."""
    counts = []
    with ExitStack() as stack:
        outputs = [
            (stack.enter_context(open(a, "wb", buffering=1 << 20)), stack.enter_context(open(b, "wb", buffering=1 << 20)))
            for a, b in chunk_pairs
        ]
        total = 0
        for fq1, fq2 in lanes:
            lane = split_lane(fq1, fq2, outputs, total)
            counts.append(lane)
            total += lane.read_pairs
    return counts


def chunk_name(index: int) -> str:
    """Chunk names sort in split order: 0000, 0001, ..."""
    return f"{index:04d}"


def chunk_paths(out_dir: str, chunks: int) -> list[tuple[str, str]]:
    """(R1, R2) file names of each chunk in out_dir."""
    return [
        (os.path.join(out_dir, f"{chunk_name(i)}_R1.fastq"), os.path.join(out_dir, f"{chunk_name(i)}_R2.fastq"))
        for i in range(chunks)
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Round-robin split of paired FASTQ lanes into N chunks.")
    parser.add_argument("--fq1", nargs="+", required=True, help="R1 files, one per lane")
    parser.add_argument("--fq2", nargs="+", required=True, help="R2 files, same order")
    parser.add_argument("--out-dir", required=True, help="writes <chunk>_R1.fastq and <chunk>_R2.fastq here")
    parser.add_argument("--chunks", type=int, required=True, help="number of chunks")
    parser.add_argument("--counts", required=True, help="JSON with read-pair counts")
    parser.add_argument("--sample", required=True)
    args = parser.parse_args(argv)
    if len(args.fq1) != len(args.fq2):
        parser.error("--fq1 and --fq2 must have the same number of files")
    os.makedirs(args.out_dir, exist_ok=True)
    try:
        counts = split_sample(list(zip(args.fq1, args.fq2)), chunk_paths(args.out_dir, args.chunks))
    except FastqError as error:
        print(f"split_fastq: sample {args.sample}: {error}", file=sys.stderr)
        return 1
    summary = {
        "sample": args.sample,
        "read_pairs": sum(c.read_pairs for c in counts),
        "empty_read1": sum(c.empty_read1 for c in counts),
        "empty_read2": sum(c.empty_read2 for c in counts),
        "chunks": args.chunks,
        "lanes": [c.__dict__ for c in counts],
    }
    tmp = args.counts + ".tmp"
    with open(tmp, "w") as out:
        json.dump(summary, out, indent=1)
    os.replace(tmp, args.counts)
    print(f"split_fastq: sample {args.sample}: {summary['read_pairs']} read pairs into {args.chunks} chunks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
