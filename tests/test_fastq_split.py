"""Round-robin FASTQ split: chunk contents, counts, and clear failures on bad input."""

import gzip
import json
import zlib

import pytest

from genomon_smk.steps import fastq_split
from genomon_smk.steps.fastq_split import FastqError, main, split_sample


def fastq_records(n, prefix="r", length=10):
    return [f"@{prefix}{i}/{{mate}} extra\n{'ACGT' * (length // 4) + 'AC'[: length % 4]}\n+\n{'I' * length}\n" for i in range(n)]


def write_pair(tmp_path, name, records, compress=True):
    paths = []
    for mate in (1, 2):
        path = tmp_path / f"{name}_R{mate}.fastq{'.gz' if compress else ''}"
        text = "".join(r.format(mate=mate) for r in records)
        path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
        paths.append(str(path))
    return paths


def chunk_paths(tmp_path, n):
    return [(str(tmp_path / f"c{i}_R1.fq"), str(tmp_path / f"c{i}_R2.fq")) for i in range(n)]


def names(path):
    with open(path) as handle:
        return [line.split()[0] for i, line in enumerate(handle) if i % 4 == 0]


def test_round_robin_over_lanes_keeps_mates_together(tmp_path):
    lane1 = write_pair(tmp_path, "l1", fastq_records(7, "a"))
    lane2 = write_pair(tmp_path, "l2", fastq_records(5, "b"), compress=False)
    chunks = chunk_paths(tmp_path, 3)
    counts = split_sample([tuple(lane1), tuple(lane2)], chunks)
    assert [c.read_pairs for c in counts] == [7, 5]
    everything = [f"@a{i}" for i in range(7)] + [f"@b{i}" for i in range(5)]
    for index, (r1, r2) in enumerate(chunks):
        expected = everything[index::3]
        assert [n[: -len("/1")] for n in names(r1)] == expected
        assert [n[: -len("/2")] for n in names(r2)] == expected


@pytest.mark.parametrize("block_bytes", [1, 37, 1 << 20])
def test_blocks_of_any_size_give_the_same_chunks(tmp_path, monkeypatch, block_bytes):
    """Records are read in blocks: mates whose lines differ in length, blocks that end inside a
    line or a record, CRLF lines, and a last line without its newline change nothing."""
    records = fastq_records(23, "m", length=9) + ["@z/{mate} x\r\nACGTA\r\n+\r\nIIIII\r\n", "@last/{mate}\nAC\n+\nII"]
    r1, r2 = tmp_path / "r1.fq", tmp_path / "r2.fq"
    r1.write_text("".join(r.format(mate=1) for r in records))
    r2.write_text("".join(r.format(mate=2).replace(" extra", " much longer text") for r in records))
    monkeypatch.setattr(fastq_split, "BLOCK_BYTES", block_bytes)
    chunks = chunk_paths(tmp_path, 4)
    [count] = split_sample([(str(r1), str(r2))], chunks)
    assert count.read_pairs == 25
    texts = [r.format(mate=1) for r in records]
    texts[-1] += "\n"
    for index, (chunk_r1, _) in enumerate(chunks):
        assert open(chunk_r1, "rb").read() == "".join(texts[index::4]).encode()


def test_more_chunks_than_reads_gives_empty_chunks(tmp_path):
    lane = write_pair(tmp_path, "l", fastq_records(2))
    chunks = chunk_paths(tmp_path, 4)
    split_sample([tuple(lane)], chunks)
    assert [len(names(r1)) for r1, _ in chunks] == [1, 1, 0, 0]


def test_r1_r2_record_counts_must_agree(tmp_path):
    r1, _ = write_pair(tmp_path, "a", fastq_records(5))
    _, r2 = write_pair(tmp_path, "b", fastq_records(4))
    with pytest.raises(FastqError, match="different record counts.*ends after 4 records"):
        split_sample([(r1, r2)], chunk_paths(tmp_path, 2))


def test_mate_names_must_agree(tmp_path):
    r1, _ = write_pair(tmp_path, "a", fastq_records(3, "x"))
    _, r2 = write_pair(tmp_path, "b", fastq_records(3, "y"))
    with pytest.raises(FastqError, match="mate names differ"):
        split_sample([(r1, r2)], chunk_paths(tmp_path, 2))


@pytest.mark.parametrize(
    "broken, message",
    [
        (lambda text: text.replace("+\n", "-\n", 1), "no '\\+' separator"),
        (lambda text: text.replace("@", "#", 1), "does not start with '@'"),
        (lambda text: text.replace("IIII\n", "III\n", 1), "sequence and quality lengths differ"),
        (lambda text: text[: text.rindex("+")], "cut short"),
    ],
)
def test_malformed_records_are_refused(tmp_path, broken, message):
    r1 = tmp_path / "r1.fq"
    r1.write_text(broken("".join(r.format(mate=1) for r in fastq_records(3, length=4))))
    r2 = tmp_path / "r2.fq"
    r2.write_text("".join(r.format(mate=2) for r in fastq_records(3, length=4)))
    with pytest.raises(FastqError, match=message):
        split_sample([(str(r1), str(r2))], chunk_paths(tmp_path, 2))


def test_empty_fastq_is_refused(tmp_path):
    r1, r2 = tmp_path / "r1.fq", tmp_path / "r2.fq"
    r1.write_text("")
    r2.write_text("")
    with pytest.raises(FastqError, match="hold no reads"):
        split_sample([(str(r1), str(r2))], chunk_paths(tmp_path, 2))


def test_truncated_gzip_is_refused(tmp_path):
    r1, r2 = write_pair(tmp_path, "t", fastq_records(2000))
    data = open(r1, "rb").read()
    with open(r1, "wb") as handle:
        handle.write(data[: len(data) // 2])
    with pytest.raises(FastqError, match="truncated or corrupt gzip"):
        split_sample([(r1, r2)], chunk_paths(tmp_path, 2))


def test_corrupt_gzip_is_refused(tmp_path):
    r1, r2 = write_pair(tmp_path, "c", fastq_records(2000))
    data = bytearray(open(r1, "rb").read())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)  # deflate data destroyed, length and trailer kept
    with open(r1, "wb") as handle:
        handle.write(data)
    with pytest.raises(FastqError, match="truncated or corrupt gzip"):
        split_sample([(r1, r2)], chunk_paths(tmp_path, 2))


def test_cli_writes_chunks_and_counts_and_reports_errors(tmp_path, capsys):
    r1, r2 = write_pair(tmp_path, "s", fastq_records(6))
    counts = tmp_path / "counts.json"
    out = ["--out-dir", str(tmp_path / "chunks"), "--chunks", "2", "--counts", str(counts)]
    assert main(["--sample", "s", "--fq1", r1, "--fq2", r2, *out]) == 0
    summary = json.loads(counts.read_text())
    assert summary["read_pairs"] == 6 and summary["chunks"] == 2 and summary["lanes"][0]["read_pairs"] == 6
    assert len(names(tmp_path / "chunks" / "0001_R2.fastq")) == 3
    assert main(["--sample", "s", "--fq1", r1, "--fq2", str(tmp_path / "missing.gz"), *out]) == 1
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("blank_lines", ["\n", "\n\n\n\n\n", "\r\n\r\n"])
@pytest.mark.parametrize("block_bytes", [7, 1 << 20])
def test_trailing_blank_lines_are_accepted(tmp_path, monkeypatch, blank_lines, block_bytes):
    """Blank lines after the last record (an editor's or a concatenation's) end the file; the
    last record may still be an empty read, whose sequence and quality lines are blank too."""
    records = fastq_records(5, length=4) + ["@empty/{mate}\n\n+\n\n"]
    monkeypatch.setattr(fastq_split, "BLOCK_BYTES", block_bytes)
    r1, r2 = tmp_path / "r1.fq", tmp_path / "r2.fq"
    r1.write_text("".join(r.format(mate=1) for r in records) + blank_lines)
    r2.write_text("".join(r.format(mate=2) for r in records))
    chunks = chunk_paths(tmp_path, 2)
    [count] = split_sample([(str(r1), str(r2))], chunks)
    assert (count.read_pairs, count.empty_read1, count.empty_read2) == (6, 1, 1)
    assert open(chunks[1][0]).read().endswith("@empty/1\n\n+\n\n")


def test_blank_lines_inside_a_file_are_still_refused(tmp_path):
    records = fastq_records(4, length=4)
    r1, r2 = tmp_path / "r1.fq", tmp_path / "r2.fq"
    r1.write_text("".join(r.format(mate=1) for r in records[:2]) + "\n" + "".join(r.format(mate=1) for r in records[2:]))
    r2.write_text("".join(r.format(mate=2) for r in records))
    with pytest.raises(FastqError, match="record 3 .* does not start with '@'"):
        split_sample([(str(r1), str(r2))], chunk_paths(tmp_path, 2))


def test_truncated_gzip_reports_the_records_read_before_the_damage(tmp_path):
    """The records that decompressed before the cut are counted, though the split reads blocks
    larger than the whole file."""
    r1, r2 = write_pair(tmp_path, "t", fastq_records(3000))
    data = open(r1, "rb").read()
    with open(r1, "wb") as handle:
        handle.write(data[: len(data) // 2])
    with pytest.raises(FastqError, match=r"truncated or corrupt gzip after (\d+) records") as refused:
        split_sample([(r1, r2)], chunk_paths(tmp_path, 2))
    read = int(refused.value.args[0].split(" after ")[1].split()[0])
    decompressed = zlib.decompressobj(31).decompress(data[: len(data) // 2])  # what the cut file still holds
    assert read == decompressed.count(b"\n") // 4 > 1000
