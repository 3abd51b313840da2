"""bai_merge: the merged index must answer every query exactly like `samtools index` on merged.bam.

Real data made in tmp: random-sequence reference, wgsim reads plus unmapped pairs, half-unmapped
pairs (placed unmapped reads) and exact duplicates; `bwa mem`; split by region with pysam; each
region built as the markdup rule does (biobambam2 bammarkduplicates' uncompressed output
compressed and indexed by `samtools view --write-index`), as it did before (bammarkduplicates
index=1), or by htslib (`samtools sort` + `samtools index`); `samtools cat`; then queries
compared record by record.
"""

import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pysam
import pytest

from genomon_smk.steps import bai_merge
from genomon_smk.steps.bai_merge import BaiMergeError, merge_bai, read_bam_layout

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("bwa", "wgsim", "samtools", "bamsort", "bammarkduplicates")),
    reason="needs bwa, wgsim, samtools and biobambam2",
)

CONTIGS = [("chrA", 120_000), ("chrB", 30_000), ("chrC", 8_000), ("chrD", 5_000), ("chrE", 6_000)]
# chrA cut into 3 (cuts not on 16 kb window borders), chrB+chrC+chrD share one region (chrD has no
# reads), chrE alone gets no reads (header-only BAM), "*" = reads without coordinate.
REGIONS = [
    [("chrA", 0, 40_000)],
    [("chrA", 40_000, 81_000)],
    [("chrA", 81_000, 120_000)],
    [("chrB", 0, 30_000), ("chrC", 0, 8_000), ("chrD", 0, 5_000)],
    [("chrE", 0, 6_000)],
    "*",
]
READ_CONTIGS = ("chrA", "chrB", "chrC")


def run(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True, **kw)


def random_seq(rng, n):
    return "".join(rng.choice("ACGT") for _ in range(n))


def revcomp(s):
    return s.translate(str.maketrans("ACGT", "TGCA"))[::-1]


def make_reads(d, seqs, rng):
    """wgsim pairs over chrA-C, plus unmapped pairs, pairs with one random mate, duplicates."""
    with open(d / "sim.fa", "w") as fh:
        for name in READ_CONTIGS:
            fh.write(f">{name}\n{seqs[name]}\n")
    run(f"wgsim -S 11 -N 6000 -1 100 -2 100 -r 0.01 -R 0.1 {d}/sim.fa {d}/r1.fq {d}/r2.fq")
    with open(d / "r1.fq", "a") as f1, open(d / "r2.fq", "a") as f2:
        for i in range(240):
            contig = rng.choice(["chrA", "chrB"])
            p = rng.randrange(0, len(seqs[contig]) - 400)
            a, b = seqs[contig][p : p + 100], revcomp(seqs[contig][p + 200 : p + 300])
            kind = i % 3
            if kind == 0:  # both mates random: unmapped pair, no coordinate
                a, b = random_seq(rng, 100), random_seq(rng, 100)
            elif kind == 1:  # one random mate: placed unmapped read at its mate's position
                b = random_seq(rng, 100)
            for copy in range(2 if kind != 1 else 1):  # kind 0/2 twice: duplicates to mark
                f1.write(f"@x{i}_{copy}\n{a}\n+\n{'I' * 100}\n")
                f2.write(f"@x{i}_{copy}\n{b}\n+\n{'I' * 100}\n")


def region_of(read, ref_names):
    if read.reference_id < 0:
        return len(REGIONS) - 1
    name, pos = ref_names[read.reference_id], read.reference_start
    for i, region in enumerate(REGIONS):
        if region != "*" and any(c == name and s <= pos < e for c, s, e in region):
            return i
    raise AssertionError(f"no region for {name}:{pos}")


def split_pieces(all_bam, d, header=None):
    """Two unsorted pieces per region (like the per-chunk SAMs of the map stage)."""
    with pysam.AlignmentFile(all_bam) as inp:
        hdr = header or inp.header
        names = list(inp.references)
        outs = [[pysam.AlignmentFile(d / f"piece{i}_{k}.bam", "wb", header=hdr) for k in range(2)] for i in range(len(REGIONS))]
        for n, read in enumerate(inp):
            outs[region_of(read, names)][n % 2].write(read)
        for pair in outs:
            for o in pair:
                o.close()
    return [[d / f"piece{i}_{k}.bam" for k in range(2)] for i in range(len(REGIONS))]


def biobambam_region(pieces, out_bam, tmp):
    # bammarkduplicates must read the pipe as its default stdin: with I=/dev/stdin it re-opens the
    # path, fails ("unexpected eof") and leaves a truncated BAM (biobambam2 2.0.185).
    run(
        f"samtools cat -o - {' '.join(map(str, pieces))} "
        f"| bamsort SO=coordinate inputformat=bam level=1 tmpfile={tmp}/bs "
        f"| bammarkduplicates O={out_bam} index=1 indexfilename={out_bam}.bai M={out_bam}.metrics tmpfile={tmp}/md"
    )


def pipeline_region(pieces, out_bam, tmp):
    """As the markdup rule makes a region's BAM and index (from sorted pieces: here sorted first)."""
    run(
        f"samtools cat -o - {' '.join(map(str, pieces))} "
        f"| bamsort SO=coordinate inputformat=bam level=0 tmpfile={tmp}/bs "
        f"| bammarkduplicates M={out_bam}.metrics rewritebam=2 level=0 tmpfile={tmp}/md "
        f"| samtools view --no-PG -@ 2 -O bam,level=6 --write-index -o {out_bam}##idx##{out_bam}.bai"
    )


def htslib_region(pieces, out_bam, tmp, index_name):
    run(f"samtools cat -o - {' '.join(map(str, pieces))} | samtools sort -T {tmp}/st -o {out_bam} -")
    run(f"samtools index {out_bam} {index_name}")


def build_regions(d, pieces, mode):
    bams = []
    for i, region_pieces in enumerate(pieces):
        bam = d / f"r{i}.bam"
        if mode == "htslib":
            # alternate the two index names samtools looks for
            htslib_region(region_pieces, bam, d, f"{bam}.bai" if i % 2 else d / f"r{i}.bai")
        elif mode == "pipeline":
            pipeline_region(region_pieces, bam, d)
        else:
            biobambam_region(region_pieces, bam, d)
        bams.append(str(bam))
    return bams


def padded_header(template_bam, pad):
    """Template header plus @CO lines adding exactly `pad` bytes of header text."""
    header = pysam.AlignmentFile(template_bam).header.to_dict()
    full = (pad - 6) // 1005  # "@CO\t" + 1000 chars + "\n" per full line
    header["CO"] = ["P" * 1000] * full + ["Q" * (pad - 1005 * full - 5)]
    return pysam.AlignmentHeader.from_dict(header)


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    d = tmp_path_factory.mktemp("bai_merge_src")
    rng = random.Random(5)
    seqs = {name: random_seq(rng, n) for name, n in CONTIGS}
    with open(d / "ref.fa", "w") as fh:
        for name, _ in CONTIGS:
            fh.write(f">{name}\n{seqs[name]}\n")
    run(f"bwa index {d}/ref.fa")
    make_reads(d, seqs, rng)
    run(f"bwa mem -t 2 {d}/ref.fa {d}/r1.fq {d}/r2.fq | samtools view -b -o {d}/all.bam -")
    return d / "all.bam"


def build_dataset(d, all_bam, mode, header=None):
    pieces = split_pieces(all_bam, d, header)
    bams = build_regions(d, pieces, mode)
    merged = d / "merged.bam"
    run(f"samtools cat -o {merged} {' '.join(bams)}")
    ours = d / "ours.bam.bai"
    merge_bai(bams, str(merged), str(ours))
    ref_dir = d / "ref"
    ref_dir.mkdir()
    os.link(merged, ref_dir / "merged.bam")
    run(f"samtools index {ref_dir}/merged.bam")
    return {"dir": d, "bams": bams, "merged": merged, "ours": ours, "ref": ref_dir / "merged.bam.bai"}


@pytest.fixture(scope="module", params=["pipeline", "biobambam", "htslib", "biobambam-big-header"])
def dataset(request, mapped, tmp_path_factory):
    d = tmp_path_factory.mktemp(request.param)
    header = None
    if request.param == "biobambam-big-header":
        # a header > 64 KiB ending ~100 bytes into a block: biobambam2 puts 65436 record bytes in
        # that block, more than one htslib block (65280), so samtools cat re-compresses them into
        # two blocks. Measure the header the tools produce, then pad to hit that case.
        # the probe uses the very paths of the real run, so the tools' @PG lines keep their length
        pad = 70_000
        pieces = split_pieces(mapped, d, padded_header(mapped, pad))
        biobambam_region(pieces[0], d / "r0.bam", d)
        pad += (65_536 + 100 - header_length(str(d / "r0.bam"))) % 65_536
        header = padded_header(mapped, pad)
        for f in d.iterdir():
            f.unlink()
    return build_dataset(d, mapped, request.param.split("-")[0], header) | {"mode": request.param}


def header_length(bam):
    """Uncompressed length of a BAM header (bytes before the first record)."""
    layout = read_bam_layout(bam)
    with open(bam, "rb") as fh:
        total, offset = 0, 0
        while offset < layout.header_block.offset:
            block, _ = bai_merge.read_bgzf_block(fh, offset, bam)
            total += block.isize
            offset += block.size
    return total + layout.header_end


def records(aln_iter):
    return [(r.query_name, r.flag, r.reference_id, r.reference_start) for r in aln_iter]


def open_pair(ds):
    ours = pysam.AlignmentFile(str(ds["merged"]), index_filename=str(ds["ours"]))
    ref = pysam.AlignmentFile(str(ds["merged"]), index_filename=str(ds["ref"]))
    return ours, ref


def query_intervals(rng):
    """Each region, each contig, windows around region cuts and 16 kb borders, random intervals."""
    out = []
    for region in REGIONS[:-1]:
        out += region
    out += [(name, 0, n) for name, n in CONTIGS]
    for cut in (40_000, 81_000) + tuple(range(16_384, 120_000, 16_384)):
        for left, right in ((1, 1), (150, 10), (10, 150), (3000, 3000), (17_000, 17_000)):
            out.append(("chrA", max(cut - left, 0), min(cut + right, 120_000)))
    for _ in range(400):
        name, n = rng.choice(CONTIGS)
        start = rng.randrange(n)
        out.append((name, start, min(n, start + rng.choice([1, 50, 500, 5000, 40_000]))))
    return out


def test_layout_cases_are_exercised(dataset):
    """Guard: the data really contain the cases the brief asks for."""
    layouts = [read_bam_layout(b) for b in dataset["bams"]]
    stats = {s.contig: s for s in pysam.AlignmentFile(str(dataset["merged"]), index_filename=str(dataset["ref"])).get_index_statistics()}
    assert stats["chrA"].mapped > 3000 and stats["chrA"].unmapped > 0  # placed unmapped reads
    assert stats["chrD"].total == 0 and stats["chrE"].total == 0
    assert layouts[4].data_end == layouts[4].copy_start and not layouts[4].remainder  # header-only
    if dataset["mode"].startswith("biobambam"):
        # biobambam2 writes records into the header's block: samtools cat must re-compress them
        assert all(len(lay.remainder) > 0 for i, lay in enumerate(layouts) if i != 4)
    else:
        assert all(not lay.remainder for lay in layouts)
    if dataset["mode"] == "biobambam-big-header":
        assert layouts[0].header_block.offset > 0  # header spans several blocks
        assert len(layouts[0].remainder) > 0xFF00  # re-compressed into two blocks by samtools cat


def test_interval_queries_match_samtools_index(dataset):
    ours, ref = open_pair(dataset)
    rng = random.Random(9)
    n_nonempty = 0
    for contig, start, end in query_intervals(rng):
        expected = records(ref.fetch(contig, start, end))
        assert records(ours.fetch(contig, start, end)) == expected, (contig, start, end)
        n_nonempty += bool(expected)
    assert n_nonempty > 300
    # a whole contig must give every read placed on it (brute force over the file)
    everything = records(pysam.AlignmentFile(str(dataset["merged"])).fetch(until_eof=True))
    for tid, (name, _) in enumerate(CONTIGS):
        assert records(ours.fetch(name)) == [r for r in everything if r[2] == tid]


def test_region_strings_and_unplaced_reads_match(dataset):
    """samtools view with region strings, incl. '*' (reads without coordinate)."""
    merged = dataset["merged"]
    regions = ["chrA:39900-40100", "chrA:80950-81050", "chrB", "chrC:1-8000", "chrD", "chrE", "*"]
    for region in regions:
        ours = run(f"samtools view -X {merged} {dataset['ours']} '{region}' | cut -f1,2,4").stdout
        ref = run(f"samtools view -X {merged} {dataset['ref']} '{region}' | cut -f1,2,4").stdout
        assert ours == ref, region
    unplaced = run(f"samtools view -X {merged} {dataset['ours']} '*' | cut -f1,2").stdout.splitlines()
    all_unplaced = run(f"samtools view -f 4 {merged} | awk '$3==\"*\"' | cut -f1,2").stdout.splitlines()
    assert len(unplaced) > 100 and unplaced == all_unplaced


def test_index_statistics_match(dataset):
    ours, ref = open_pair(dataset)
    assert ours.get_index_statistics() == ref.get_index_statistics()
    assert (ours.mapped, ours.unmapped, ours.nocoordinate) == (ref.mapped, ref.unmapped, ref.nocoordinate)
    d = dataset["dir"] / "idxstats"
    d.mkdir(exist_ok=True)
    os.link(dataset["merged"], d / "m.bam")
    shutil.copy(dataset["ours"], d / "m.bam.bai")
    assert pysam.idxstats(str(d / "m.bam")) == pysam.idxstats(str(dataset["merged"].parent / "ref" / "merged.bam"))


def test_pseudo_bins_and_linear_index_agree_with_samtools(dataset):
    """Beyond queries: read counts, file spans and n_no_coor equal samtools'; our linear index is
    never above samtools' (a higher entry could skip reads)."""
    ours = bai_merge.parse_bai(dataset["ours"].read_bytes())
    ref = bai_merge.parse_bai(dataset["ref"].read_bytes())
    unplaced = sum(r.reference_id < 0 for r in pysam.AlignmentFile(str(dataset["merged"])).fetch(until_eof=True))
    assert ours.n_no_coor == ref.n_no_coor == unplaced > 0
    for a, b in zip(ours.refs, ref.refs):
        assert a.pseudo == b.pseudo
        n = min(len(a.linear), len(b.linear))
        assert np.all(a.linear[:n] <= b.linear[:n])


# ------------------------------------------------------------------------------------------
# refusals
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def biobambam_set(mapped, tmp_path_factory):
    d = tmp_path_factory.mktemp("refusals")
    return build_dataset(d, mapped, "biobambam")


def copy_regions(ds, dest):
    dest.mkdir()
    out = []
    for bam in ds["bams"]:
        shutil.copy(bam, dest / os.path.basename(bam))
        shutil.copy(bam + ".bai", dest / (os.path.basename(bam) + ".bai"))
        out.append(str(dest / os.path.basename(bam)))
    return out


def test_refuses_swapped_index(biobambam_set, tmp_path):
    bams = copy_regions(biobambam_set, tmp_path / "c")
    shutil.copy(bams[1] + ".bai", bams[0] + ".bai")
    with pytest.raises(BaiMergeError, match="index"):
        merge_bai(bams, str(biobambam_set["merged"]), str(tmp_path / "x.bai"))
    assert not (tmp_path / "x.bai").exists()


def test_refuses_truncated_or_foreign_index(biobambam_set, tmp_path):
    bams = copy_regions(biobambam_set, tmp_path / "c")
    data = open(bams[2] + ".bai", "rb").read()
    open(bams[2] + ".bai", "wb").write(data[: len(data) // 2])
    with pytest.raises(BaiMergeError, match="truncated"):
        merge_bai(bams, str(biobambam_set["merged"]), str(tmp_path / "x.bai"))
    run(f"samtools index -c {bams[2]} {bams[2]}.bai")  # CSI under a .bai name
    with pytest.raises(BaiMergeError, match="not a BAI"):
        merge_bai(bams, str(biobambam_set["merged"]), str(tmp_path / "x.bai"))


def test_refuses_region_rewritten_after_indexing(biobambam_set, tmp_path):
    bams = copy_regions(biobambam_set, tmp_path / "c")
    run(f"samtools view -b -o {bams[1]}.tmp {bams[1]} && mv {bams[1]}.tmp {bams[1]}")  # stale .bai
    with pytest.raises(BaiMergeError, match="index|BAM"):
        merge_bai(bams, str(biobambam_set["merged"]), str(tmp_path / "x.bai"))


def test_refuses_merged_bam_of_other_regions(biobambam_set, tmp_path):
    bams = biobambam_set["bams"]
    missing = tmp_path / "missing.bam"
    run(f"samtools cat -o {missing} {' '.join(b for i, b in enumerate(bams) if i != 2)}")
    with pytest.raises(BaiMergeError, match="these regions"):
        merge_bai(bams, str(missing), str(tmp_path / "x.bai"))
    swapped = tmp_path / "swapped.bam"
    order = [bams[1], bams[0]] + bams[2:]
    run(f"samtools cat -o {swapped} {' '.join(order)}")
    with pytest.raises(BaiMergeError, match="these regions"):
        merge_bai(bams, str(swapped), str(tmp_path / "x.bai"))
    # same wrong order on both sides: the file is not coordinate-sorted, refused too
    with pytest.raises(BaiMergeError, match="reference order"):
        merge_bai(order, str(swapped), str(tmp_path / "x.bai"))


def test_cli_with_regions_file(biobambam_set, tmp_path):
    listing = tmp_path / "regions.txt"
    listing.write_text("\n".join(biobambam_set["bams"]) + "\n")
    out = tmp_path / "cli.bam.bai"
    cmd = [sys.executable, "-m", "genomon_smk.steps.bai_merge", "--merged", str(biobambam_set["merged"]), "--out", str(out)]
    subprocess.run(cmd + ["--regions-file", str(listing)], check=True, preexec_fn=lambda: os.umask(0o022))
    assert out.read_bytes() == biobambam_set["ours"].read_bytes()
    assert out.stat().st_mode & 0o777 == 0o644  # readable by others, as the BAM beside it
    bad = subprocess.run(cmd + biobambam_set["bams"][:-1], capture_output=True, text=True)
    assert bad.returncode == 1 and "bai_merge: error:" in bad.stderr


def test_a_merged_bam_laid_out_otherwise_is_indexed_by_samtools_with_the_fallback(biobambam_set, tmp_path):
    """What another samtools version's `samtools cat` would give (the same records in other BGZF
    blocks): refused, or with --fallback-samtools-index (as merge_bam runs it) indexed by
    `samtools index`, byte for byte."""
    relaid = tmp_path / "relaid.bam"
    run(f"samtools view -b -o {relaid} {biobambam_set['merged']}")
    with pytest.raises(bai_merge.LayoutMismatch):
        merge_bai(biobambam_set["bams"], str(relaid), str(tmp_path / "x.bai"))
    cmd = [sys.executable, "-m", "genomon_smk.steps.bai_merge", "--merged", str(relaid), "--out",
           str(tmp_path / "fallback.bai"), *biobambam_set["bams"]]
    refused = subprocess.run(cmd, capture_output=True, text=True)
    assert refused.returncode == 1 and not (tmp_path / "fallback.bai").exists()
    fallback = subprocess.run(cmd + ["--fallback-samtools-index"], capture_output=True, text=True)
    assert fallback.returncode == 0 and "with `samtools index` instead" in fallback.stderr
    run(f"samtools index -b -o {tmp_path / 'samtools.bai'} {relaid}")
    assert (tmp_path / "fallback.bai").read_bytes() == (tmp_path / "samtools.bai").read_bytes()


# ------------------------------------------------------------------------------------------
# pure functions
# ------------------------------------------------------------------------------------------


def test_bai_round_trip(biobambam_set):
    """format_bai(parse_bai(x)) keeps every bin, chunk, linear entry and n_no_coor."""
    for path in [biobambam_set["ref"], biobambam_set["ours"]] + [b + ".bai" for b in biobambam_set["bams"]]:
        first = bai_merge.parse_bai(open(path, "rb").read())
        again = bai_merge.parse_bai(bai_merge.format_bai(first))
        assert again.n_no_coor == (first.n_no_coor or 0)
        for a, b in zip(first.refs, again.refs):
            assert a.pseudo == b.pseudo and np.array_equal(a.linear, b.linear)
            assert a.bins.keys() == b.bins.keys()
            assert all(np.array_equal(a.bins[k], b.bins[k]) for k in a.bins)


def covered(chunks):
    return {x for beg, end in chunks.tolist() for x in range(beg, end)}


def test_merge_chunks_is_the_union():
    rng = np.random.default_rng(3)
    for _ in range(50):
        parts = []
        for _ in range(rng.integers(1, 4)):
            begs = rng.integers(0, 500, rng.integers(1, 6))
            parts.append(np.column_stack([begs, begs + rng.integers(1, 60, len(begs))]).astype(np.uint64))
        merged = bai_merge.merge_chunks(parts)
        assert covered(merged) == set().union(*map(covered, parts))
        assert np.all(merged[1:, 0] > merged[:-1, 1])  # sorted, disjoint, not touching


def test_merge_linear_takes_earliest_known_and_fills():
    unknown = 0
    first = np.array([unknown, 10, 20], dtype=np.uint64)  # biobambam-style leading 0
    second = np.array([unknown, unknown, 30, unknown, 50], dtype=np.uint64)
    merged = bai_merge.merge_linear([first, second], ref_beg=7)
    assert merged.tolist() == [7, 10, 20, 20, 50]
