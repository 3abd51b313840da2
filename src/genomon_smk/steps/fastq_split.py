"""Round-robin split of a sample's paired FASTQ lanes into a fixed number of chunks.

R1 and R2 are read in lockstep, so a chunk's R1 and R2 always hold the same fragments in the
same order; record n (over all lanes, in sheet order) goes to chunk n mod N. Every record is
checked while it passes (4 lines, '@' and '+' lines, sequence and quality of equal length, mate
names agree), and R1 and R2 must end together. Blank lines after a file's last record are
ignored. The counts are written as JSON for the read-count integrity check.

Deliberate differences from upstream Genomon (docs/differences.md): a fixed number of chunks,
records dealt round robin (Genomon: 40,000,000 lines per chunk); malformed input is refused.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import zlib
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import chain, repeat

# The split reads every base of the sample: gzip through ISA-L's reader (about 0.4 of the gzip
# module's time).
from genomon_smk.fileio import GZIP_ERRORS, open_maybe_gzipped


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


def open_fastq(path: str):
    """Open a FASTQ, gzipped (by magic bytes) or plain, as a binary stream."""
    try:
        return open_maybe_gzipped(path)
    except OSError as error:
        raise FastqError(f"{path}: cannot read: {error.strerror}") from None


def mate_name(header: bytes) -> bytes:
    """The fragment name of a FASTQ header line: up to the first blank, without /1 or /2."""
    name = (header[1:].split(maxsplit=1) or [b""])[0]
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
    except GZIP_ERRORS as error:
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


# Records are read, checked and distributed a block at a time: per-record Python work (four
# readline calls, the checks) cost more than the decompression.
BLOCK_BYTES = 4 << 20
GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib reads a gzip member


class RecordBlocks:
    """A FASTQ's lines (without their newlines) in blocks of whole records; `records` counts
    the records handed out."""

    def __init__(self, stream, path: str):
        self.stream, self.path = stream, path
        self.lines: list[bytes] = []
        self.partial_line = b""
        self.records = 0
        self.at_end = False

    def buffered(self) -> int:
        """Whole records ready; blank lines at the end of what was read wait until more data
        shows they are not the file's trailing blank lines."""
        lines = len(self.lines) if self.at_end else len(self.lines) - trailing_blank_lines(self.lines)
        return lines // 4

    def fill(self) -> None:
        """Read until at least one whole record is buffered, or the file ends."""
        while not self.buffered() and not self.at_end:
            try:
                data = self.stream.read(BLOCK_BYTES)
            except GZIP_ERRORS as error:
                raise FastqError(
                    f"{self.path}: truncated or corrupt gzip after {readable_records(self.path)} records ({error})"
                ) from None
            if not data:
                if self.partial_line:  # the last line has no newline
                    self.lines.append(self.partial_line)
                    self.partial_line = b""
                self.at_end = True
                self.lines = without_trailing_blank_lines(self.lines)
                return
            data = self.partial_line + data
            end = data.rfind(b"\n")
            if end < 0:
                self.partial_line = data
                continue
            self.lines.extend(data[:end].split(b"\n"))
            self.partial_line = data[end + 1 :]

    def take(self, records: int) -> list[bytes]:
        """The next `records` records' lines, checked."""
        block, self.lines = self.lines[: 4 * records], self.lines[4 * records :]
        if not well_formed(block):
            # Find the first bad record the slow way, for its exact message.
            stream = as_stream(block)
            for number in range(self.records + 1, self.records + records + 1):
                read_record(stream, self.path, number)
        self.records += records
        return block

    def check_end(self) -> None:
        """At the end of the file: what is left must not be a partial or malformed record."""
        if self.lines:
            read_record(as_stream(self.lines), self.path, self.records + 1)


def is_blank(line: bytes) -> bool:
    return line in (b"", b"\r")


def trailing_blank_lines(lines: list[bytes]) -> int:
    count = 0
    while count < len(lines) and is_blank(lines[-1 - count]):
        count += 1
    return count


def without_trailing_blank_lines(lines: list[bytes]) -> list[bytes]:
    """A file's last lines (starting at a record) without the blank lines after its last record.
    Blank lines that complete a record stay: an empty read's last line is blank."""
    content = len(lines) - trailing_blank_lines(lines)
    records_end = -(-content // 4) * 4  # the end of the record the content ends in
    return lines[: min(len(lines), records_end)]


def readable_records(path: str) -> int:
    """Whole records of a damaged gzip FASTQ before its damage. Counted with zlib on the raw
    bytes: the reader's large reads return nothing of a piece that ends in the damage."""
    lines = 0
    decompressor = zlib.decompressobj(GZIP_WBITS)
    with open(path, "rb") as raw:
        try:
            while data := raw.read(BLOCK_BYTES):
                while data:
                    lines += decompressor.decompress(data).count(b"\n")
                    data = decompressor.unused_data if decompressor.eof else b""
                    if decompressor.eof:  # the next gzip member
                        decompressor = zlib.decompressobj(GZIP_WBITS)
        except zlib.error:
            pass
    return lines // 4


def as_stream(lines: list[bytes]) -> io.BytesIO:
    return io.BytesIO(b"".join(line + b"\n" for line in lines))


def well_formed(block: list[bytes]) -> bool:
    """Every record of a block of whole records passes read_record's checks (the fast path)."""
    return (
        all(map(bytes.startswith, block[0::4], repeat(b"@")))
        and all(map(bytes.startswith, block[2::4], repeat(b"+")))
        and list(map(len, block[1::4])) == list(map(len, block[3::4]))
    )


# From a header's first whitespace (bytes.split()'s: space, tab, CR, VT, FF) to its end.
_AFTER_FIRST_WORD = re.compile(rb"[ \t\r\x0b\x0c][^\n]*")


def first_words(headers: list[bytes]) -> bytes:
    """The headers' first words, one per line (a header holds no newline)."""
    return _AFTER_FIRST_WORD.sub(b"", b"\n".join(headers))


def check_mates(block1: list[bytes], block2: list[bytes], fq1: str, fq2: str, first_number: int) -> None:
    headers1, headers2 = block1[0::4], block2[0::4]
    # Most files name both mates alike up to the first blank: compare that first, the block's
    # headers at once (each header's first word, as bytes.split() ends it, in one regex pass).
    if first_words(headers1) == first_words(headers2):
        return
    names1, names2 = list(map(mate_name, headers1)), list(map(mate_name, headers2))
    if names1 != names2:
        index = next(i for i, (a, b) in enumerate(zip(names1, names2)) if a != b)
        raise FastqError(
            f"record {first_number + index}: mate names differ: {fq1} has {names1[index].decode(errors='replace')}, "
            f"{fq2} has {names2[index].decode(errors='replace')}"
        )


def deal(block: list[bytes], outputs: list, first_index: int) -> None:
    """Write record n of the block to outputs[(first_index + n) % len(outputs)]."""
    step = 4 * len(outputs)
    for chunk, out in enumerate(outputs):
        first = 4 * ((chunk - first_index) % len(outputs))
        if first < len(block):
            records = zip(block[first::step], block[first + 1 :: step], block[first + 2 :: step], block[first + 3 :: step])
            out.write(b"\n".join(chain.from_iterable(records)) + b"\n")


def empty_reads(block: list[bytes]) -> int:
    sequences = block[1::4]
    return sequences.count(b"") + sequences.count(b"\r")


def split_lane(fq1: str, fq2: str, outputs: list[tuple], first_index: int) -> LaneCount:
    """Distribute one lane's records over the chunk outputs, continuing the round robin at
    first_index; return its counts."""
    chunks = len(outputs)
    pairs = empty1 = empty2 = 0
    with open_fastq(fq1) as stream1, open_fastq(fq2) as stream2:
        r1, r2 = RecordBlocks(stream1, fq1), RecordBlocks(stream2, fq2)
        while True:
            r1.fill()
            r2.fill()
            records = min(r1.buffered(), r2.buffered())
            if not records:
                break
            block1, block2 = r1.take(records), r2.take(records)
            check_mates(block1, block2, fq1, fq2, pairs + 1)
            first = (first_index + pairs) % chunks
            deal(block1, [out for out, _ in outputs], first)
            deal(block2, [out for _, out in outputs], first)
            pairs += records
            empty1 += empty_reads(block1)
            empty2 += empty_reads(block2)
        r1.check_end()
        r2.check_end()
        if r1.lines or r2.lines:
            longer, shorter = (fq1, fq2) if r1.lines else (fq2, fq1)
            raise FastqError(
                f"R1 and R2 have different record counts: {shorter} ends after {pairs} records, {longer} has more"
            )
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
