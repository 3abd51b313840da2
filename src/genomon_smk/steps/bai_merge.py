"""Build the BAI of a `samtools cat`-merged BAM from the per-region BAIs (Genomon "bai merge").

The merge-bam stage concatenates per-region, coordinate-sorted BAMs (given in reference order) with
`samtools cat -o merged.bam r1.bam ... rN.bam`.  Every record of region i lands in merged.bam at a
position that is fully determined by the layout of the files, so the region indexes (written by
biobambam2 `bammarkduplicates index=1` or `samtools index`) can be shifted and joined instead of
re-reading the merged BAM with `samtools index`.

How `samtools cat` lays out its output (checked by experiment with samtools 1.16 and by reading the
merged file, see `locate_regions_in_merged`):

* the new header (from the first input, plus a @PG line) is written and flushed into its own
  BGZF block(s);
* for each input, its header is parsed; if the header ends inside a BGZF block (biobambam2 always
  does this: header and first records share block 0), the rest of that block is *re-compressed*
  into one or more new blocks (<= 0xff00 bytes each), then flushed;
* every following compressed block is copied raw, except a trailing 28-byte empty (EOF) block;
* one EOF block closes the output.

A record at virtual offset (c, u) of a region file is therefore at (c - copy_start + raw_base, u)
in the merged file if c is a raw-copied block, or inside the re-compressed blocks if c is the
header's last block.  The re-compressed blocks' sizes are read from merged.bam itself (block headers
and the few re-compressed blocks only, never the records), and every placement is verified
(decompressed remainder equal, raw bytes equal at both ends of each copied run, total size) so a
mismatched merged BAM or index is refused instead of producing a wrong index. The merge_bam rule,
which has just made merged.bam of exactly these regions, passes --fallback-samtools-index: a
merged BAM laid out otherwise (another samtools version) is then indexed by `samtools index`.

BAI facts used (SAM/BAM spec 5.2): per reference, bins with chunks of virtual offsets, pseudo-bin
37450 holding (ref_beg, ref_end) and (n_mapped, n_unmapped), a 16 kb linear index; after all
references an optional n_no_coor.  biobambam2 leaves linear-index windows before the region's first
record at 0 ("unknown") and omits n_no_coor when it is 0; samtools fills them.

Deliberate difference from upstream Genomon (docs/differences.md): the final index is merged
from the region indexes (the Fugaku Genomon's "bai merge"), not built by reading the BAM; each
placement is verified, and with ``--fallback-samtools-index`` a BAM laid out otherwise is
indexed by ``samtools index``.
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BAI_MAGIC = b"BAI\x01"
BAM_MAGIC = b"BAM\x01"
PSEUDO_BIN = 37450
MAX_BIN = 37449  # ((1 << 18) - 1) // 7: last real bin of the 6-level binning scheme
BGZF_MAGIC = b"\x1f\x8b\x08\x04"
EOF_BLOCK_SIZE = 28
# how many bytes at each end of a raw-copied run are compared between region and merged BAM
VERIFY_BYTES = 1 << 16


class BaiMergeError(ValueError):
    """Inputs that cannot be merged into a correct index (mismatch, corruption, wrong order)."""


class LayoutMismatch(BaiMergeError):
    """merged.bam is not laid out as `samtools cat` of the regions lays it out (samtools 1.16):
    another samtools version, or a merge of other regions."""


# --------------------------------------------------------------------------------------------
# BAI parsing / writing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PseudoBin:
    """Contents of pseudo-bin 37450: file span of the reference's records and its read counts."""

    ref_beg: int
    ref_end: int
    n_mapped: int
    n_unmapped: int


@dataclass(frozen=True)
class RefIndex:
    """Index of one reference: bins -> (n, 2) uint64 chunk arrays, linear index, pseudo-bin."""

    bins: dict[int, np.ndarray]
    linear: np.ndarray
    pseudo: PseudoBin | None

    @property
    def is_empty(self) -> bool:
        return not self.bins and self.pseudo is None


@dataclass(frozen=True)
class BaiIndex:
    refs: list[RefIndex]
    n_no_coor: int | None  # None when the file has no trailing n_no_coor field


EMPTY_REF = RefIndex({}, np.zeros(0, dtype=np.uint64), None)


def parse_bai(data: bytes, name: str = "BAI") -> BaiIndex:
    """Parse a BAI file's bytes; raise BaiMergeError on a bad magic, truncation or bad bin id."""
    if data[:4] != BAI_MAGIC:
        raise BaiMergeError(f"{name}: not a BAI file (magic {data[:4]!r}); CSI indexes are not supported")
    try:
        (n_ref,) = struct.unpack_from("<i", data, 4)
        pos = 8
        refs = []
        for _ in range(n_ref):
            (n_bin,) = struct.unpack_from("<i", data, pos)
            pos += 4
            bins: dict[int, np.ndarray] = {}
            pseudo = None
            for _ in range(n_bin):
                bin_id, n_chunk = struct.unpack_from("<Ii", data, pos)
                pos += 8
                chunks = np.frombuffer(data, dtype="<u8", count=2 * n_chunk, offset=pos).reshape(-1, 2)
                pos += 16 * n_chunk
                if bin_id == PSEUDO_BIN:
                    if n_chunk != 2:
                        raise BaiMergeError(f"{name}: pseudo-bin with {n_chunk} chunks (expected 2)")
                    pseudo = PseudoBin(*(int(x) for x in chunks.ravel()))
                elif bin_id > MAX_BIN or bin_id in bins:
                    raise BaiMergeError(f"{name}: invalid or repeated bin id {bin_id}")
                else:
                    bins[bin_id] = chunks.astype(np.uint64)
            (n_intv,) = struct.unpack_from("<i", data, pos)
            pos += 4
            linear = np.frombuffer(data, dtype="<u8", count=n_intv, offset=pos).astype(np.uint64)
            pos += 8 * n_intv
            refs.append(RefIndex(bins, linear, pseudo))
    except (struct.error, ValueError) as err:
        if isinstance(err, BaiMergeError):
            raise
        raise BaiMergeError(f"{name}: truncated or corrupt BAI ({err})") from None
    n_no_coor = None
    if len(data) - pos == 8:
        (n_no_coor,) = struct.unpack_from("<Q", data, pos)
    elif len(data) != pos:
        raise BaiMergeError(f"{name}: {len(data) - pos} unexpected trailing bytes")
    return BaiIndex(refs, n_no_coor)


def format_bai(index: BaiIndex) -> bytes:
    """Serialise a BaiIndex (bins sorted, pseudo-bin last, n_no_coor always written)."""
    out = [BAI_MAGIC, struct.pack("<i", len(index.refs))]
    for ref in index.refs:
        n_bin = len(ref.bins) + (ref.pseudo is not None)
        out.append(struct.pack("<i", n_bin))
        for bin_id in sorted(ref.bins):
            chunks = np.ascontiguousarray(ref.bins[bin_id], dtype="<u8")
            out.append(struct.pack("<Ii", bin_id, len(chunks)))
            out.append(chunks.tobytes())
        if ref.pseudo is not None:
            p = ref.pseudo
            out.append(struct.pack("<IiQQQQ", PSEUDO_BIN, 2, p.ref_beg, p.ref_end, p.n_mapped, p.n_unmapped))
        out.append(struct.pack("<i", len(ref.linear)))
        out.append(np.ascontiguousarray(ref.linear, dtype="<u8").tobytes())
    out.append(struct.pack("<Q", index.n_no_coor or 0))
    return b"".join(out)


# --------------------------------------------------------------------------------------------
# BGZF / BAM header layout
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BgzfBlock:
    offset: int  # file offset of the block
    size: int  # compressed size incl. gzip header/footer
    isize: int  # uncompressed size


def read_bgzf_block(fh, offset: int, name: str) -> tuple[BgzfBlock, bytes] | None:
    """Read and inflate the BGZF block at `offset`; None at end of file."""
    fh.seek(offset)
    head = fh.read(12)
    if not head:
        return None
    if len(head) < 12 or head[:4] != BGZF_MAGIC:
        raise BaiMergeError(f"{name}: no BGZF block at offset {offset} (not a BAM or corrupt)")
    (xlen,) = struct.unpack_from("<H", head, 10)
    extra = fh.read(xlen)
    bsize = None
    pos = 0
    while pos + 4 <= len(extra):  # gzip extra subfields: SI1 SI2 SLEN data
        si, slen = extra[pos : pos + 2], struct.unpack_from("<H", extra, pos + 2)[0]
        if si == b"BC" and slen == 2:
            bsize = struct.unpack_from("<H", extra, pos + 4)[0] + 1
        pos += 4 + slen
    if bsize is None:
        raise BaiMergeError(f"{name}: gzip block at offset {offset} has no BGZF size field")
    rest = fh.read(bsize - 12 - xlen)
    if len(rest) != bsize - 12 - xlen:
        raise BaiMergeError(f"{name}: truncated BGZF block at offset {offset}")
    crc, isize = struct.unpack_from("<II", rest, len(rest) - 8)
    try:
        payload = zlib.decompress(rest[:-8], wbits=-15)
    except zlib.error as err:
        raise BaiMergeError(f"{name}: corrupt BGZF block at offset {offset} ({err})") from None
    if len(payload) != isize or zlib.crc32(payload) != crc:
        raise BaiMergeError(f"{name}: BGZF block at offset {offset} fails its size/CRC check")
    return BgzfBlock(offset, bsize, isize), payload


def parse_bam_header(buf: bytes) -> tuple[int, list[tuple[str, int]]] | None:
    """(header length in bytes, [(name, length)]) from the start of a BAM stream; None if incomplete."""
    if len(buf) < 12:
        return None
    if buf[:4] != BAM_MAGIC:
        raise BaiMergeError(f"not a BAM stream (magic {buf[:4]!r})")
    (l_text,) = struct.unpack_from("<i", buf, 4)
    pos = 8 + l_text
    if len(buf) < pos + 4:
        return None
    (n_ref,) = struct.unpack_from("<i", buf, pos)
    pos += 4
    refs = []
    for _ in range(n_ref):
        if len(buf) < pos + 4:
            return None
        (l_name,) = struct.unpack_from("<i", buf, pos)
        if len(buf) < pos + 8 + l_name:
            return None
        name = buf[pos + 4 : pos + 4 + l_name].rstrip(b"\0").decode()
        (l_ref,) = struct.unpack_from("<i", buf, pos + 4 + l_name)
        refs.append((name, l_ref))
        pos += 8 + l_name
    return pos, refs


@dataclass(frozen=True)
class BamLayout:
    """Where a BAM's header ends and which bytes `samtools cat` copies raw."""

    path: str
    file_size: int
    references: list[tuple[str, int]]
    header_block: BgzfBlock  # block holding the header's last byte
    header_end: int  # in-block offset where the header ends (first record)
    remainder: bytes  # rest of header_block after the header (re-compressed by samtools cat)
    copy_start: int  # first block copied raw
    data_end: int  # end of the raw-copied bytes (trailing EOF block excluded)


def looks_like_eof_block(tail: bytes) -> bool:
    """The test `samtools cat` applies to a file's last 28 bytes before dropping them."""
    return len(tail) == EOF_BLOCK_SIZE and tail[:2] == b"\x1f\x8b" and tail[-4:] == b"\0\0\0\0"


def read_bam_layout(path: str) -> BamLayout:
    """Parse a BAM's header (only the blocks it spans) and its EOF block."""
    file_size = os.path.getsize(path)
    buf = bytearray()
    offset = 0
    with open(path, "rb") as fh:
        while True:
            got = read_bgzf_block(fh, offset, path)
            if got is None:
                raise BaiMergeError(f"{path}: file ends inside the BAM header")
            block, payload = got
            before = len(buf)
            buf += payload
            try:
                parsed = parse_bam_header(bytes(buf))
            except BaiMergeError as err:
                raise BaiMergeError(f"{path}: {err}") from None
            offset += block.size
            if parsed is not None:
                break
        header_len, refs = parsed
        header_end = header_len - before
        fh.seek(max(file_size - EOF_BLOCK_SIZE, 0))
        tail = fh.read(EOF_BLOCK_SIZE)
    data_end = file_size - EOF_BLOCK_SIZE if looks_like_eof_block(tail) else file_size
    if data_end < offset:
        raise BaiMergeError(f"{path}: truncated BAM (data ends before the header block)")
    return BamLayout(path, file_size, refs, block, header_end, bytes(payload[header_end:]), offset, data_end)


# --------------------------------------------------------------------------------------------
# Placing each region inside the merged BAM
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetMap:
    """Maps a region file's virtual offsets to the merged BAM's."""

    header_block_offset: int
    header_end: int
    remainder_len: int
    remainder_blocks: np.ndarray  # merged offsets of the re-compressed remainder blocks
    remainder_starts: np.ndarray  # offset of each such block within the remainder bytes
    copy_start: int
    data_end: int
    raw_base: int  # merged offset where the raw copy of [copy_start, data_end) starts


def _compare_raw(merged_fh, region_fh, merged_pos: int, region_pos: int, length: int) -> bool:
    merged_fh.seek(merged_pos)
    region_fh.seek(region_pos)
    return merged_fh.read(length) == region_fh.read(length)


def locate_regions_in_merged(merged: BamLayout, layouts: list[BamLayout]) -> list[OffsetMap]:
    """Walk merged.bam's layout (header, re-compressed remainders, raw runs) and verify it.

    Reads only the merged header blocks, the re-compressed blocks and VERIFY_BYTES at each end of
    every raw-copied run, so the cost does not grow with the number of records.
    """
    merged_bam = merged.path
    if merged.remainder:
        raise LayoutMismatch(
            f"{merged_bam}: its header shares a BGZF block with records; not a `samtools cat` output"
        )
    maps = []
    pos = merged.copy_start
    with open(merged_bam, "rb") as mfh:
        for layout in layouts:
            blocks, starts, inflated = [], [], bytearray()
            while len(inflated) < len(layout.remainder):
                got = read_bgzf_block(mfh, pos, merged_bam)
                if got is None:
                    break
                block, payload = got
                blocks.append(block.offset)
                starts.append(len(inflated))
                inflated += payload
                pos += block.size
            if bytes(inflated) != layout.remainder:
                raise LayoutMismatch(
                    f"{merged_bam}: records of {layout.path} not found where `samtools cat` puts them "
                    f"(merged offset {pos}); was merged.bam made from exactly these regions, in this order?"
                )
            raw_len = layout.data_end - layout.copy_start
            check = min(raw_len, VERIFY_BYTES)
            with open(layout.path, "rb") as rfh:
                same = _compare_raw(mfh, rfh, pos, layout.copy_start, check) and _compare_raw(
                    mfh, rfh, pos + raw_len - check, layout.data_end - check, check
                )
            if not same:
                raise LayoutMismatch(
                    f"{merged_bam}: bytes at offset {pos} differ from {layout.path}; "
                    "was merged.bam made from exactly these regions, in this order?"
                )
            maps.append(
                OffsetMap(
                    header_block_offset=layout.header_block.offset,
                    header_end=layout.header_end,
                    remainder_len=len(layout.remainder),
                    remainder_blocks=np.array(blocks, dtype=np.int64),
                    remainder_starts=np.array(starts, dtype=np.int64),
                    copy_start=layout.copy_start,
                    data_end=layout.data_end,
                    raw_base=pos,
                )
            )
            pos += raw_len
        mfh.seek(pos)
        tail = mfh.read()
    if not (len(tail) == EOF_BLOCK_SIZE and looks_like_eof_block(tail)):
        raise LayoutMismatch(
            f"{merged_bam}: {len(tail)} bytes follow the last region's data (expected one 28-byte EOF "
            "block); was merged.bam made from exactly these regions?"
        )
    return maps


def translate_offsets(voffs: np.ndarray, omap: OffsetMap, name: str) -> np.ndarray:
    """Shift region-file virtual offsets to merged-file virtual offsets (vectorised)."""
    v = np.asarray(voffs, dtype=np.uint64)
    coff = (v >> np.uint64(16)).astype(np.int64)
    uoff = (v & np.uint64(0xFFFF)).astype(np.int64)
    out = np.zeros(v.shape, dtype=np.int64)
    in_raw = ((coff >= omap.copy_start) & (coff < omap.data_end)) | ((coff == omap.data_end) & (uoff == 0))
    out[in_raw] = ((coff[in_raw] - omap.copy_start + omap.raw_base) << 16) | uoff[in_raw]
    k_all = uoff - omap.header_end
    in_rem = (coff == omap.header_block_offset) & (k_all >= 0) & (k_all <= omap.remainder_len) & ~in_raw
    k = k_all[in_rem]
    # the remainder's end is the start of the raw run (same position, next block)
    shifted = np.full(k.shape, omap.raw_base << 16, dtype=np.int64)
    inside = k < omap.remainder_len
    j = np.searchsorted(omap.remainder_starts, k[inside], side="right") - 1
    shifted[inside] = (omap.remainder_blocks[j] << 16) | (k[inside] - omap.remainder_starts[j])
    out[in_rem] = shifted
    bad = ~(in_raw | in_rem)
    if np.any(bad):
        example = int(v[bad][0])
        raise BaiMergeError(
            f"{name}: virtual offset {example >> 16}:{example & 0xFFFF} lies outside the BAM's records "
            "(index does not belong to this BAM, or the BAM was rewritten after indexing)"
        )
    return out.astype(np.uint64)


# --------------------------------------------------------------------------------------------
# Checking and translating one region index
# --------------------------------------------------------------------------------------------


def first_record_offset(layout: BamLayout) -> int:
    """Virtual offset of the first record (as an indexer reports it)."""
    if layout.remainder:
        return (layout.header_block.offset << 16) | layout.header_end
    return layout.copy_start << 16


def canonical_offset(voff: int, layout: BamLayout) -> int:
    """Rewrite 'end of the header block' as 'start of the next block' (the same position)."""
    if voff == (layout.header_block.offset << 16) | layout.header_block.isize:
        return layout.copy_start << 16
    return voff


def index_span(index: BaiIndex) -> tuple[int, int] | None:
    """(smallest chunk begin, largest chunk end) over all references, None if nothing is indexed."""
    begs, ends = [], []
    for ref in index.refs:
        for chunks in ref.bins.values():
            if len(chunks):
                begs.append(int(chunks[:, 0].min()))
                ends.append(int(chunks[:, 1].max()))
        if ref.pseudo is not None:
            begs.append(ref.pseudo.ref_beg)
            ends.append(ref.pseudo.ref_end)
    return (min(begs), max(ends)) if begs else None


def check_index_matches_bam(index: BaiIndex, layout: BamLayout, bai_path: str) -> None:
    """Refuse an index that cannot describe this BAM (stale, swapped, or for another file)."""
    if len(index.refs) != len(layout.references):
        raise BaiMergeError(
            f"{bai_path}: {len(index.refs)} references, but {layout.path} has {len(layout.references)}"
        )
    has_records = bool(layout.remainder) or layout.data_end > layout.copy_start
    span = index_span(index)
    if span is None:
        if not index.n_no_coor and has_records and not _only_empty_blocks(layout):
            raise BaiMergeError(f"{bai_path}: index lists no reads, but {layout.path} has records")
        if index.n_no_coor and not has_records:
            raise BaiMergeError(f"{bai_path}: index lists unplaced reads, but {layout.path} has no records")
        return
    first, last = span
    if canonical_offset(first, layout) != first_record_offset(layout):
        raise BaiMergeError(
            f"{bai_path}: first indexed read at {first >> 16}:{first & 0xFFFF} is not {layout.path}'s "
            "first record (index does not belong to this BAM?)"
        )
    if not index.n_no_coor and canonical_offset(last, layout) != layout.data_end << 16:
        raise BaiMergeError(
            f"{bai_path}: last indexed read ends at {last >> 16}:{last & 0xFFFF}, not at the end of "
            f"{layout.path}'s records (offset {layout.data_end}); stale or foreign index?"
        )


def _only_empty_blocks(layout: BamLayout) -> bool:
    """True if the raw part holds only empty BGZF blocks (checked for short runs only)."""
    if layout.remainder:
        return False
    if layout.data_end - layout.copy_start > VERIFY_BYTES:
        return False
    pos = layout.copy_start
    with open(layout.path, "rb") as fh:
        while pos < layout.data_end:
            got = read_bgzf_block(fh, pos, layout.path)
            if got is None or got[0].isize:
                return False
            pos += got[0].size
    return pos == layout.data_end


def translate_index(index: BaiIndex, omap: OffsetMap, name: str) -> BaiIndex:
    """Shift every virtual offset of a region index into the merged file.

    Linear-index entries equal to 0 mean "no read here" (biobambam2 leaves windows before the
    region's first read at 0) and stay 0; the merge fills them.
    """
    refs = []
    for ref in index.refs:
        if ref.is_empty:
            refs.append(EMPTY_REF)
            continue
        # one vectorised call per reference, not per bin (a human chromosome has ~15k bins)
        ids = list(ref.bins)
        counts = [len(ref.bins[b]) for b in ids]
        flat = np.concatenate([ref.bins[b] for b in ids]) if ids else np.zeros((0, 2), np.uint64)
        shifted = translate_offsets(flat.ravel(), omap, name).reshape(-1, 2)
        bins = dict(zip(ids, np.split(shifted, np.cumsum(counts)[:-1])))
        linear = ref.linear.copy()
        known = linear != 0
        linear[known] = translate_offsets(linear[known], omap, name)
        pseudo = None
        if ref.pseudo is not None:
            beg, end = translate_offsets(np.array([ref.pseudo.ref_beg, ref.pseudo.ref_end]), omap, name)
            pseudo = PseudoBin(int(beg), int(end), ref.pseudo.n_mapped, ref.pseudo.n_unmapped)
        refs.append(RefIndex(bins, linear, pseudo))
    return BaiIndex(refs, index.n_no_coor)


# --------------------------------------------------------------------------------------------
# Merging translated indexes
# --------------------------------------------------------------------------------------------


def merge_chunks(chunk_arrays: list[np.ndarray]) -> np.ndarray:
    """Union of chunk lists: sort by begin, join chunks that overlap or touch."""
    chunks = np.concatenate(chunk_arrays)
    chunks = chunks[np.argsort(chunks[:, 0], kind="stable")]
    ends_so_far = np.maximum.accumulate(chunks[:, 1])
    starts_group = np.ones(len(chunks), dtype=bool)
    starts_group[1:] = chunks[1:, 0] > ends_so_far[:-1]
    first = np.flatnonzero(starts_group)
    return np.column_stack([chunks[first, 0], np.maximum.reduceat(chunks[:, 1], first)]).astype(np.uint64)


def merge_linear(linears: list[np.ndarray], ref_beg: int) -> np.ndarray:
    """Per 16 kb window, the smallest known offset over the regions (the earliest file that has the
    window); windows no region knows are filled like htslib: leading ones with ref_beg, the others
    with the previous window's value (any offset <= the first overlapping read is correct)."""
    n = max(len(x) for x in linears)
    unknown = np.iinfo(np.uint64).max
    table = np.full((len(linears), n), unknown, dtype=np.uint64)
    for row, lin in zip(table, linears):
        row[: len(lin)] = np.where(lin == 0, unknown, lin)
    merged = table.min(axis=0)
    known = merged != unknown
    if not known.any():
        return np.full(n, ref_beg, dtype=np.uint64)
    idx = np.where(known, np.arange(n), -1)
    np.maximum.accumulate(idx, out=idx)
    filled = np.where(idx >= 0, merged[np.maximum(idx, 0)], np.uint64(ref_beg))
    return filled.astype(np.uint64)


def merge_ref_indexes(parts: list[RefIndex], ref_name: str) -> RefIndex:
    """Join one reference's translated indexes from the regions holding it (in file order)."""
    parts = [p for p in parts if not p.is_empty]
    if not parts:
        return EMPTY_REF
    if any(p.pseudo is None for p in parts):
        raise BaiMergeError(
            f"reference {ref_name}: a region index lacks pseudo-bin {PSEUDO_BIN} (read counts); "
            "re-index that region with `samtools index`"
        )
    all_bins = sorted({b for p in parts for b in p.bins})
    bins = {}
    for b in all_bins:
        lists = [p.bins[b] for p in parts if b in p.bins]
        # only bins spanning a region cut appear in several parts; the rest are kept as they are
        bins[b] = merge_chunks(lists) if len(lists) > 1 else lists[0]
    pseudo = PseudoBin(
        ref_beg=min(p.pseudo.ref_beg for p in parts),
        ref_end=max(p.pseudo.ref_end for p in parts),
        n_mapped=sum(p.pseudo.n_mapped for p in parts),
        n_unmapped=sum(p.pseudo.n_unmapped for p in parts),
    )
    linears = [p.linear for p in parts if len(p.linear)]
    linear = merge_linear(linears, pseudo.ref_beg) if linears else np.zeros(0, dtype=np.uint64)
    return RefIndex(bins, linear, pseudo)


def leaf_window_span(ref: RefIndex) -> tuple[int, int] | None:
    """(first, last) 16 kb window among the reference's leaf bins (reads inside one window)."""
    leaves = [b - 4681 for b in ref.bins if b >= 4681]
    return (min(leaves), max(leaves)) if leaves else None


def check_region_order(indexes: list[BaiIndex], names: list[str]) -> None:
    """Regions must follow reference order and unplaced reads must come last (coordinate sort).

    Within a reference cut into several regions, the leaf bins of a later region cannot lie before
    those of an earlier one (reads of the earlier region start before the cut, later ones after).
    """
    last_tid, last_name, last_span, unplaced_in = -1, None, None, None
    for index, name in zip(indexes, names):
        tids = [t for t, ref in enumerate(index.refs) if not ref.is_empty]
        if tids and unplaced_in is not None:
            raise BaiMergeError(f"{name} has placed reads but follows {unplaced_in}, which holds unplaced reads")
        if tids and tids[0] < last_tid:
            raise BaiMergeError(
                f"regions not in reference order: {name} starts at reference #{tids[0]} "
                f"but {last_name} already reached #{last_tid}"
            )
        if tids and tids[0] == last_tid:
            span = leaf_window_span(index.refs[tids[0]])
            if span and last_span and span[0] < last_span[1]:
                raise BaiMergeError(
                    f"regions not in reference order: {name} has reads in 16 kb window {span[0]} of "
                    f"reference #{tids[0]}, before window {last_span[1]} reached by {last_name}"
                )
        if tids:
            last_tid, last_name = tids[-1], name
            last_span = leaf_window_span(index.refs[tids[-1]])
        if index.n_no_coor:
            unplaced_in = name


def merge_translated(indexes: list[BaiIndex], references: list[tuple[str, int]]) -> BaiIndex:
    refs = [merge_ref_indexes([ix.refs[t] for ix in indexes], name) for t, (name, _) in enumerate(references)]
    return BaiIndex(refs, sum(ix.n_no_coor or 0 for ix in indexes))


# --------------------------------------------------------------------------------------------
# Top level
# --------------------------------------------------------------------------------------------


def find_index(bam: str) -> str:
    """`X.bam.bai` or `X.bai`, as samtools looks for them."""
    for candidate in (bam + ".bai", str(Path(bam).with_suffix(".bai"))):
        if os.path.exists(candidate):
            return candidate
    raise BaiMergeError(f"{bam}: no index ({bam}.bai or {Path(bam).with_suffix('.bai')})")


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: str, data: bytes) -> None:
    """Write to a temporary file in the same directory, then rename over `path`."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes it 0600; others read a BAM's index
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def merge_bai(region_bams: list[str], merged_bam: str, out_bai: str) -> None:
    """Write `out_bai`, the BAI of `merged_bam` = `samtools cat` of `region_bams` (in that order)."""
    if not region_bams:
        raise BaiMergeError("no region BAMs given")
    layouts = [read_bam_layout(p) for p in region_bams]
    bai_paths = [find_index(p) for p in region_bams]
    indexes = []
    for layout, bai_path in zip(layouts, bai_paths):
        with open(bai_path, "rb") as fh:
            index = parse_bai(fh.read(), bai_path)
        check_index_matches_bam(index, layout, bai_path)
        indexes.append(index)
    check_region_order(indexes, list(region_bams))
    merged = read_bam_layout(merged_bam)
    for layout in layouts:
        if layout.references != merged.references:
            raise BaiMergeError(f"{layout.path}: reference sequences differ from {merged_bam}'s header")
    maps = locate_regions_in_merged(merged, layouts)
    translated = [translate_index(ix, m, b) for ix, m, b in zip(indexes, maps, bai_paths)]
    write_atomically(out_bai, format_bai(merge_translated(translated, merged.references)))


def samtools_index(merged_bam: str, out_bai: str) -> None:
    """The slow way, reading the whole BAM: `samtools index`, written under a temporary name."""
    directory = os.path.dirname(os.path.abspath(out_bai))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(out_bai) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        subprocess.run(["samtools", "index", "-b", "-o", tmp, merged_bam], check=True, capture_output=True, text=True)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, out_bai)
    except subprocess.CalledProcessError as err:
        raise BaiMergeError(f"samtools index {merged_bam} failed: {err.stderr.strip()}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_regions_file(path: str) -> list[str]:
    """One BAM path per line; blank lines and '#' comments ignored."""
    with open(path) as fh:
        return [s for s in (line.strip() for line in fh) if s and not s.startswith("#")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m genomon_smk.steps.bai_merge",
        description="Build merged.bam.bai from the region BAMs' indexes (merged.bam = samtools cat of them, in order).",
    )
    parser.add_argument("--merged", required=True, help="the samtools-cat output BAM")
    parser.add_argument("--out", required=True, help="index to write (e.g. merged.bam.bai)")
    parser.add_argument("--regions-file", help="file with one region BAM per line (appended after positional ones)")
    parser.add_argument("regions", nargs="*", help="region BAMs in the order given to samtools cat")
    parser.add_argument("--fallback-samtools-index", action="store_true",
                        help="when merged.bam is not laid out as samtools 1.16's `samtools cat` lays it out (another "
                             "samtools version), index it with `samtools index` instead of refusing")
    args = parser.parse_args(argv)
    regions = list(args.regions) + (read_regions_file(args.regions_file) if args.regions_file else [])
    try:
        try:
            merge_bai(regions, args.merged, args.out)
        except LayoutMismatch as err:
            if not args.fallback_samtools_index:
                raise
            print(f"bai_merge: {err}\nbai_merge: indexing {args.merged} with `samtools index` instead "
                  "(reads the whole BAM)", file=sys.stderr)
            samtools_index(args.merged, args.out)
    except (BaiMergeError, OSError) as err:
        print(f"bai_merge: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
