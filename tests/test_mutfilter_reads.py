"""The filters' shared read windows: every query gives what an indexed fetch of the same region
gives, in the same order, whether it is answered by a new window or from one in memory."""

import os

import pysam
import pytest

from genomon_smk.tools.mutfilter import reads
from synth import ReadSpec, random_sequence, write_bam

CHROM = "chr1"
REF = random_sequence(3000, seed=11)


def edge_reads():
    """Reads ending and starting on every side of a few positions, and the records whose span
    htslib takes as one base: an unmapped read placed beside its mate, a read without reference
    bases in its CIGAR."""
    specs = [ReadSpec(f"r{pos}", CHROM, pos, REF[pos:pos + 100]) for pos in range(0, 2900, 37)]
    specs += [ReadSpec(f"d{pos}", CHROM, pos, REF[pos:pos + 50] + REF[pos + 70:pos + 120], "50M20D50M")
              for pos in range(500, 900, 61)]
    specs.append(ReadSpec("unmapped", CHROM, 1000, REF[1000:1100], "*", flag=0x1 | 0x4 | 0x40, mate_pos=1000))
    specs.append(ReadSpec("clipped", CHROM, 1200, REF[1200:1230], "20S10I", flag=0))
    return specs


@pytest.fixture
def bam(tmp_path):
    path = write_bam(str(tmp_path / "n.bam"), {CHROM: len(REF)}, edge_reads())
    reads.clear()
    with pysam.AlignmentFile(path) as handle:
        yield handle
    reads.clear()


def names(records):
    return [record.query_name for record in records]


@pytest.mark.parametrize("queries", [
    [(1000, 1001), (980, 1020), (1000, 1001)],  # the unmapped read's one base; a wider window; again
    [(1200, 1201), (1199, 1200), (1201, 1202), (1150, 1250)],
    [(640, 660), (620, 700), (560, 561), (0, 1), (2990, 3000)],
])
def test_a_query_gives_what_a_fetch_gives_in_order_from_a_new_window_or_a_kept_one(bam, queries):
    for start, end in queries:
        assert names(reads.overlapping(bam, CHROM, start, end)) == names(bam.fetch(CHROM, start, end))
    assert names(reads.overlapping(bam, CHROM, 1000, 1001)) == ["r925", "r962", "r999", "unmapped"]


def test_a_query_inside_a_window_is_not_fetched_again_and_one_outside_is(bam, monkeypatch):
    reads.overlapping(bam, CHROM, 500, 501)
    fetched = []
    window = reads.Window
    monkeypatch.setattr(reads, "Window", lambda *args: fetched.append(args[1:3]) or window(*args))
    reads.overlapping(bam, CHROM, 500 - reads.PAD, 501 + reads.PAD)
    assert fetched == []
    reads.overlapping(bam, CHROM, 1500, 1501)
    assert fetched == [(1500 - reads.PAD, 1501 + reads.PAD)]


def test_a_rewritten_bam_is_fetched_anew(tmp_path):
    path = str(tmp_path / "x.bam")
    reads.clear()
    write_bam(path, {CHROM: len(REF)}, [ReadSpec("old", CHROM, 100, REF[100:200])])
    with pysam.AlignmentFile(path) as handle:
        assert names(reads.overlapping(handle, CHROM, 150, 151)) == ["old"]
    os.unlink(path)
    write_bam(path, {CHROM: len(REF)}, [ReadSpec("new", CHROM, 120, REF[120:220])])
    with pysam.AlignmentFile(path) as handle:
        assert names(reads.overlapping(handle, CHROM, 150, 151)) == ["new"]
    reads.clear()


def test_the_oldest_windows_go_when_too_many_reads_are_kept():
    cache = reads.WindowCache(max_reads=5)
    for start in (0, 100, 200):
        cache.add(reads.Window(CHROM, start, start + 50, [object()] * 2, [(start, start + 1)] * 2))
    assert [window.start for window in cache.windows] == [100, 200] and cache.reads == 4
    assert cache.find(CHROM, 110, 120).start == 100 and cache.find(CHROM, 10, 20) is None
    # a window across a bucket's end is found from either side of it
    edge = reads.BUCKET - 10
    cache.add(reads.Window(CHROM, edge, edge + 50, [], []))
    assert cache.find(CHROM, edge + 5, edge + 20).start == edge == cache.find(CHROM, edge + 30, edge + 40).start
    assert cache.find(CHROM, edge + 30, edge + 60) is None and cache.find("chr2", edge + 30, edge + 40) is None
    assert [window.start for window in cache.windows] == [100, 200, edge] and sum(map(len, cache.by_bucket.values())) == 4


@pytest.mark.parametrize("queries", [
    [(1000, 1001), (980, 1020), (1200, 1201), (1199, 1200), (640, 660), (0, 1), (2990, 3000)],
    [(500, 501), (520, 560), (1500, 1501)],
])
def test_prefetched_windows_give_what_a_fetch_gives_without_fetching(bam, queries, monkeypatch):
    """prefetch (one samtools view -M of many windows) fills the windows a first query would
    fetch: every later query, inside them, is answered from memory with the fetch's records."""
    windows = [(max(0, start - reads.PAD), end + reads.PAD) for start, end in queries]
    expected = {query: names(bam.fetch(CHROM, *query)) for query in queries + windows}
    reads.prefetch(bam, [(CHROM, start, end) for start, end in queries])
    cache = next(iter(reads._CACHES.values()))
    assert len(cache.windows) == len(set(windows))
    monkeypatch.setattr(reads, "Window", None)  # a query that is not answered from memory fails
    for query in queries + windows:
        assert names(reads.overlapping(bam, CHROM, *query)) == expected[query]


def test_prefetch_leaves_out_the_windows_in_memory(bam, monkeypatch):
    reads.overlapping(bam, CHROM, 500, 501)
    started = []
    monkeypatch.setattr(reads.subprocess, "Popen", lambda *args, **kwargs: started.append(args) or 1 / 0)
    reads.prefetch(bam, [(CHROM, 500 - reads.PAD, 501 + reads.PAD)])
    assert started == []
