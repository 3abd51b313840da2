#!/usr/bin/env python3
"""Deterministic tumor/normal/panel-of-normals test data for genomon-smk.

Usage:
    make_testdata.py OUTDIR --preset test|bench|bench100 [--seed N] [--simulator art|wgsim]

Builds, from real human sequence (GRCh37 chr20 shipped by Debian ``vt-examples``):

* ``ref/genome.fa`` (+ .fai, .dict, bwa index): N-free chr20 windows renamed chr1..chr3;
* ``bare/genome.fa.gz`` (the same FASTA gzipped, no index) and ``bare/simpleRepeat.txt.gz`` (UCSC's
  simpleRepeat table format, the windows' tandem repeats scored as TRF does): what a new user brings;
* ``fastq/<sample>_L<n>_R{1,2}.fastq.gz`` for tumor (2 lanes), normal, pon1..pon3;
* ``truth/{germline,somatic,artifacts}.vcf.gz`` (left-aligned, sorted, bgzipped, tabixed);
* ``truth/somatic_sv.tsv``: clonal somatic SVs of the tumor (deletions, tandem duplications,
  inversions of 1-3 kb and a reciprocal translocation), one row per SV with both breakpoints;
* ``hotspot_database.txt``: a hotspot database in Genomon's layout (Chr, Start, End, Ref, Alt,
  name, kind; no header) and ``truth/hotspot.vcf.gz``: the low-VAF (subclonal) SNVs planted in the
  tumor at its ``planted`` rows; its other rows are sites no sample carries (``decoy``, and a
  second alt at a planted site: ``other_alt``), the patient's germline SNVs (``germline``) and
  two-base rows that hotspotCall ignores (``mnv``);
* ``genes.gtf``: made-up one-exon coding genes (stop-free CDS, UTRs) around the somatic variants,
  the scenarios' gene annotation;
* ``samples.tsv``, ``pairs.tsv``, ``panels.tsv`` and ``truth/meta.json``;
* ``.complete`` (written last): a re-run with the same parameters prints "up to date".

Same seed + preset + simulator => byte-identical decompressed FASTQ and identical VCF records.
Only the standard library, numpy and pysam are imported; external tools: samtools, bwa,
bcftools, tabix, art_illumina or wgsim, pigz (gzip as fallback).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import gzip
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pysam

GENERATOR_VERSION = 5
SOURCE_FASTA = Path("/usr/share/doc/vt/examples/ref/20.fa.gz")
SOURCE_CHROM = "20"
SOURCE_ASSEMBLY = "GRCh37"
# chr20 stretches away from the telomeres and the pericentromeric gap (26.3-29.8 Mb) and
# its flanking N runs; windows are drawn inside these zones and must be N-free.
SOURCE_ZONES = ((1_000_000, 25_500_000), (36_000_000, 60_500_000))
CONTIG_NAMES = ("chr1", "chr2", "chr3")
PON_SAMPLES = ("pon1", "pon2", "pon3")
SAMPLES = ("tumor", "normal") + PON_SAMPLES
PANEL_NAME = "panel1"
FASTA_LINE = 60

PRESETS = {
    "test": dict(windows=(80_000, 60_000, 40_000), read_length=100, fragment_mean=300,
                 fragment_sd=30, coverage=dict(tumor=40, normal=30, pon=20),
                 somatic_snvs=36, somatic_indels=8, artifacts=10, tumor_lanes=2,
                 hotspots=dict(planted=14, decoy=8, germline=3),
                 svs=dict(deletion=4, tandem_duplication=4, inversion=4, translocation=1)),
    "bench": dict(windows=(2_500_000, 1_500_000, 1_000_000), read_length=150, fragment_mean=400,
                  fragment_sd=40, coverage=dict(tumor=40, normal=30, pon=20),
                  somatic_snvs=500, somatic_indels=60, artifacts=60, tumor_lanes=2,
                  hotspots=dict(planted=60, decoy=30, germline=10),
                  svs=dict(deletion=10, tandem_duplication=10, inversion=10, translocation=2)),
    # The bench's second data shape (issue 39): shorter reads, a deeper tumor.
    "bench100": dict(windows=(2_500_000, 1_500_000, 1_000_000), read_length=100, fragment_mean=300,
                     fragment_sd=30, coverage=dict(tumor=60, normal=30, pon=20),
                     somatic_snvs=500, somatic_indels=60, artifacts=60, tumor_lanes=2,
                     hotspots=dict(planted=60, decoy=30, germline=10),
                     svs=dict(deletion=10, tandem_duplication=10, inversion=10, translocation=2)),
}

# Germline pool density and the spacing rules for placing variants.
GERMLINE_SNV_PER_BP = 1 / 1000
GERMLINE_INDEL_PER_BP = 1 / 8000
GERMLINE_GAP = 30          # bp kept free around each germline variant (vs. other germline)
SOMATIC_GAP = 300          # bp between somatic/artifact sites and from window ends
SOMATIC_GERMLINE_GAP = 20  # bp between a somatic/artifact site and any germline variant
CLONAL_SHARE = 2 / 3       # share of somatic mutations that are clonal
TRANSITION = {"A": "G", "G": "A", "C": "T", "T": "C"}
BASES = "ACGT"

# Independent random streams, so changing one count does not reshuffle everything else.
STREAM_WINDOWS, STREAM_GERMLINE, STREAM_SOMATIC, STREAM_SIM, STREAM_READS, STREAM_TRIM = range(1, 7)
STREAM_SV = 7
STREAM_HOTSPOT = 8

# Somatic SVs: segment lengths, and the bp kept free of somatic/artifact sites around an SV (its
# reads must not carry them: a deletion would remove them, clipped reads would hide them) and of
# germline variants around a breakpoint (so a breakpoint never falls inside a germline indel).
SV_LENGTHS = (1000, 3000)
SV_SMALL_VARIANT_GAP = 700
SV_GERMLINE_GAP = 20
SV_TRUTH_COLUMNS = ("chrom_1", "pos_1", "chrom_2", "pos_2", "type", "length", "vaf")


@dataclasses.dataclass(frozen=True)
class Variant:
    """A VCF-style variant on the generated reference (pos is 1-based)."""
    contig: str
    pos: int
    ref: str
    alt: str

    @property
    def kind(self) -> str:
        return "SNV" if len(self.ref) == len(self.alt) == 1 else "INDEL"


# --------------------------------------------------------------------------- helpers

def rng_for(seed: int, stream: int, *extra: int) -> np.random.Generator:
    """A reproducible random generator for one purpose (stream) of one run."""
    return np.random.default_rng([seed, stream, *extra])


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run an external tool, failing loudly with its stderr."""
    proc = subprocess.run(cmd, capture_output=True, **kwargs)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
                 f"{proc.stderr.decode(errors='replace')}")
    return proc


def log(t0: float, message: str) -> None:
    """Progress on stderr with the elapsed wall time."""
    print(f"[make_testdata {time.time() - t0:6.1f} s] {message}", file=sys.stderr, flush=True)


def write_fasta(path: Path, contigs: dict[str, str]) -> None:
    """Write contigs with fixed-width lines (required by faidx)."""
    with open(path, "w") as out:
        for name, seq in contigs.items():
            out.write(f">{name}\n")
            for i in range(0, len(seq), FASTA_LINE):
                out.write(seq[i:i + FASTA_LINE] + "\n")


# --------------------------------------------------------------------------- reference

def choose_windows(source: pysam.FastaFile, sizes, rng) -> list[tuple[int, int]]:
    """Pick non-overlapping N-free windows (0-based half-open) of chr20, one per size."""
    chosen: list[tuple[int, int]] = []
    zone_lengths = np.array([hi - lo for lo, hi in SOURCE_ZONES], dtype=float)
    for size in sizes:
        for _attempt in range(1000):
            zone = SOURCE_ZONES[rng.choice(len(SOURCE_ZONES), p=zone_lengths / zone_lengths.sum())]
            start = int(rng.integers(zone[0], zone[1] - size))
            # round to 1 kb so origins are easy to read in meta.json
            start -= start % 1000
            end = start + size
            if any(start < e + 100_000 and s < end + 100_000 for s, e in chosen):
                continue
            seq = source.fetch(SOURCE_CHROM, start, end).upper()
            if len(seq) == size and not re.search("[^ACGT]", seq):
                chosen.append((start, end))
                break
        else:
            sys.exit(f"could not find an N-free window of {size} bp")
    return chosen


def build_reference(workdir: Path, refdir: Path, sizes, seed: int):
    """Copy chr20, cut the windows, write ref/genome.fa and index it (faidx, dict, bwa)."""
    local = workdir / "chr20.fa.gz"
    shutil.copyfile(SOURCE_FASTA, local)
    run(["samtools", "faidx", str(local)])
    with pysam.FastaFile(str(local)) as source:
        windows = choose_windows(source, sizes, rng_for(seed, STREAM_WINDOWS))
        contigs = {name: source.fetch(SOURCE_CHROM, s, e).upper()
                   for name, (s, e) in zip(CONTIG_NAMES, windows)}
    refdir.mkdir(parents=True)
    fasta = refdir / "genome.fa"
    write_fasta(fasta, contigs)
    run(["samtools", "faidx", str(fasta)])
    run(["samtools", "dict", "-a", f"{SOURCE_ASSEMBLY}-chr20-windows", "-o",
         str(refdir / "genome.dict"), str(fasta)])
    run(["bwa", "index", str(fasta)])
    origin = [dict(name=name, length=e - s, source_assembly=SOURCE_ASSEMBLY,
                   source_file=str(SOURCE_FASTA), source_chrom=SOURCE_CHROM,
                   source_start=s + 1, source_end=e)
              for name, (s, e) in zip(CONTIG_NAMES, windows)]
    return contigs, origin


# --------------------------------------------------------------------------- a new user's inputs
# What a user downloads, for the workflow's set-up rules (workflow/rules/reference.smk) to prepare:
# the reference as one gzipped FASTA without any index, and UCSC's simpleRepeat table.

# Tandem repeats found as TRF (which UCSC ran) scores them, without its indels: each sequence is
# aligned with itself shifted by the period, match +2, mismatch -7, kept from a score of 50.
REPEAT_MAX_PERIOD = 30
REPEAT_MATCH, REPEAT_MISMATCH, REPEAT_MIN_SCORE = 2, -7, 50


def ucsc_bin(start: int, end: int) -> int:
    """UCSC's standard bin of [start, end) (binFromRange: 128 kb bins, eight per level)."""
    start_bin, end_bin = start >> 17, (end - 1) >> 17
    for offset in (512 + 64 + 8 + 1, 64 + 8 + 1, 8 + 1, 1, 0):
        if start_bin == end_bin:
            return offset + start_bin
        start_bin, end_bin = start_bin >> 3, end_bin >> 3
    raise ValueError(f"[{start}, {end}) is too long for a standard bin")


def repeat_zones(same: np.ndarray, window: int = 16, margin: int = 100):
    """Stretches worth scanning: around every window of `window` shifts with at least 3/4 matches
    (a stretch scoring 50 matches 7 times in 9), widened by `margin`; merged."""
    counts = np.convolve(same, np.ones(window, dtype=np.int32), mode="valid")
    dense = np.flatnonzero(counts >= window * 3 // 4)
    zones: list[list[int]] = []
    for position in dense.tolist():
        start, end = max(0, position - margin), min(len(same), position + window + margin)
        if zones and start <= zones[-1][1]:
            zones[-1][1] = end
        else:
            zones.append([start, end])
    return zones


def repeat_segments(seq: str, period: int):
    """(start, end, score, matches) of the maximal-scoring stretches where the sequence matches
    itself `period` bases on (Kadane's scan), scoring at least REPEAT_MIN_SCORE."""
    codes = np.frombuffer(seq.encode(), dtype=np.uint8)
    same = (codes[:-period] == codes[period:]).astype(np.int32)
    found = []
    for zone_start, zone_end in repeat_zones(same):
        score, start, best, best_end, matches, best_matches = 0, zone_start, 0, 0, 0, 0
        for i, hit in enumerate(same[zone_start:zone_end].tolist(), start=zone_start):
            if score == 0:
                start, matches = i, 0
            score = max(0, score + (REPEAT_MATCH if hit else REPEAT_MISMATCH))
            matches += hit
            if score > best:
                best, best_end, best_matches = score, i + 1, matches
            if score == 0 or i == zone_end - 1:  # a stretch ends, or the zone does
                if best >= REPEAT_MIN_SCORE:
                    found.append((start, best_end + period, best, best_matches))
                best = 0
    return found


def tandem_repeats(seq: str):
    """(start, end, period, score, matches) of the tandem repeats of 1-30 bp units; a repeat
    inside one of a unit that divides its own (AT inside ATATAT...) is the same repeat."""
    found = [(start, end, period, score, matches) for period in range(1, REPEAT_MAX_PERIOD + 1)
             for start, end, score, matches in repeat_segments(seq, period)]
    return sorted(r for r in found if not any(
        other[2] < r[2] and r[2] % other[2] == 0 and other[0] <= r[0] and r[1] <= other[1] for other in found))


def simple_repeat_row(contig: str, repeat, seq: str) -> list[str]:
    """A row of UCSC's simpleRepeat table: bin, chrom, chromStart, chromEnd, name, period, copyNum,
    consensusSize, perMatch, perIndel, score, A, C, G, T (percent), entropy, sequence (the unit)."""
    start, end, period, score, matches = repeat
    span = seq[start:end]
    shares = [span.count(base) / len(span) for base in BASES]
    entropy = -sum(p * np.log2(p) for p in shares if p > 0)
    return [str(ucsc_bin(start, end)), contig, str(start), str(end), "trf", str(period),
            f"{(end - start) / period:.1f}", str(period), str(round(100 * matches / (end - start - period))),
            "0", str(score), *(str(round(100 * p)) for p in shares), f"{entropy:.2f}",
            seq[start:start + period]]


def write_bare_inputs(bare: Path, fasta: Path, contigs: dict[str, str]) -> int:
    """bare/genome.fa.gz (gzip, not bgzip) and bare/simpleRepeat.txt.gz; returns the number of
    repeats."""
    bare.mkdir()
    # mtime=0: the same bytes on every run (gzip stores a time in its header).
    with open(fasta, "rb") as source, gzip.GzipFile(bare / "genome.fa.gz", "wb", mtime=0) as target:
        shutil.copyfileobj(source, target)
    rows = [simple_repeat_row(name, repeat, seq) for name, seq in contigs.items() for repeat in tandem_repeats(seq)]
    with gzip.GzipFile(bare / "simpleRepeat.txt.gz", "wb", mtime=0) as table:
        table.write("".join("\t".join(row) + "\n" for row in rows).encode())
    return len(rows)


# --------------------------------------------------------------------------- variants

def deletion_variant(contig: str, seq: str, start: int, length: int):
    """Left-aligned deletion of seq[start:start+length] and its ambiguity span (0-based, incl.)."""
    while start - 1 >= 1 and seq[start - 1] == seq[start + length - 1]:
        start -= 1
    right = start
    while right + length < len(seq) and seq[right + length] == seq[right]:
        right += 1
    var = Variant(contig, start, seq[start - 1:start + length], seq[start - 1])
    return var, (start - 1, right + length)


def insertion_variant(contig: str, seq: str, point: int, inserted: str):
    """Left-aligned insertion of `inserted` before seq[point] and its ambiguity span."""
    while point - 1 >= 1 and seq[point - 1] == inserted[-1]:
        inserted = seq[point - 1] + inserted[:-1]
        point -= 1
    right, rotating = point, inserted
    while right < len(seq) and seq[right] == rotating[0]:
        rotating = rotating[1:] + seq[right]
        right += 1
    var = Variant(contig, point, seq[point - 1], seq[point - 1] + inserted)
    return var, (point - 1, right)


def random_snv(contig: str, seq: str, pos0: int, rng):
    """An SNV at pos0 with transitions twice as likely as transversions."""
    ref = seq[pos0]
    if rng.random() < 2 / 3:
        alt = TRANSITION[ref]
    else:
        alt = str(rng.choice([b for b in BASES if b not in (ref, TRANSITION[ref])]))
    return Variant(contig, pos0 + 1, ref, alt), (pos0, pos0)


def random_indel(contig: str, seq: str, pos0: int, rng, max_len: int):
    """A 1..max_len bp insertion or deletion near pos0, left-aligned, with its span."""
    length = min(max_len, int(rng.geometric(0.35)))
    if rng.random() < 0.5:
        return deletion_variant(contig, seq, pos0, length)
    inserted = "".join(rng.choice(list(BASES), size=length))
    return insertion_variant(contig, seq, pos0, inserted)


def place_variants(contig, seq, free, n_snv, n_indel, rng, gap, max_indel_len):
    """Place variants at random where `free` allows, marking span±gap as used.

    `free` is a boolean array over the contig, updated in place. Returns the accepted variants.
    """
    kinds = ["SNV"] * n_snv + ["INDEL"] * n_indel
    kinds = [kinds[i] for i in rng.permutation(len(kinds))]
    accepted = []
    for kind in kinds:
        for _attempt in range(200):
            pos0 = int(rng.integers(1, len(seq) - 1))
            if not free[pos0]:
                continue
            if kind == "SNV":
                var, (lo, hi) = random_snv(contig, seq, pos0, rng)
            else:
                var, (lo, hi) = random_indel(contig, seq, pos0, rng, max_indel_len)
            if lo < 1 or hi >= len(seq) - 1 or not free[lo:hi + 1].all():
                continue
            free[max(0, lo - gap):hi + gap + 1] = False
            accepted.append(var)
            break
    return accepted


def make_germline(contigs: dict[str, str], rng):
    """Population pool with U-shaped allele frequencies and phased genotypes.

    Returns (variants, pool_af, genotypes) where genotypes maps individual -> bool array
    of shape (n_variants, 2); only variants carried by someone are kept.
    """
    variants = []
    for name, seq in contigs.items():
        free = np.ones(len(seq), dtype=bool)
        free[:50] = free[-50:] = False
        n_snv = int(rng.poisson(len(seq) * GERMLINE_SNV_PER_BP))
        n_indel = int(rng.poisson(len(seq) * GERMLINE_INDEL_PER_BP))
        variants += place_variants(name, seq, free, n_snv, n_indel, rng, GERMLINE_GAP, 8)
    variants.sort(key=lambda v: (CONTIG_NAMES.index(v.contig), v.pos))
    pool_af = np.clip(rng.beta(0.4, 0.4, size=len(variants)), 0.02, 0.98)
    individuals = ("patient",) + PON_SAMPLES
    genotypes = {ind: rng.random((len(variants), 2)) < pool_af[:, None] for ind in individuals}
    carried = np.zeros(len(variants), dtype=bool)
    for gt in genotypes.values():
        carried |= gt.any(axis=1)
    keep = np.flatnonzero(carried)
    variants = [variants[i] for i in keep]
    return variants, pool_af[keep], {ind: gt[keep] for ind, gt in genotypes.items()}


def germline_mask(contig: str, seq: str, pool: list[Variant], gap: int = SOMATIC_GERMLINE_GAP) -> np.ndarray:
    """Positions where somatic mutations/artifacts may go: away from ends and (by `gap`) from the
    pool's sites (germline; for SVs the somatic and artifact sites)."""
    free = np.ones(len(seq), dtype=bool)
    free[:SOMATIC_GAP] = free[-SOMATIC_GAP:] = False
    for v in pool:
        if v.contig == contig:
            lo, hi = variant_span(seq, v)
            free[max(0, lo - gap):hi + gap + 1] = False
    return free


def variant_span(seq: str, v: Variant) -> tuple[int, int]:
    """0-based inclusive reference span over which a (left-aligned) variant could be placed."""
    if v.kind == "SNV":
        return v.pos - 1, v.pos - 1
    if len(v.ref) > len(v.alt):
        return deletion_variant(v.contig, seq, v.pos, len(v.ref) - 1)[1]
    return insertion_variant(v.contig, seq, v.pos, v.alt[1:])[1]


def make_somatic_and_artifacts(contigs, germline, n_snv, n_indel, n_art, rng):
    """Somatic SNVs/indels (clonal or subclonal) and recurrent artifact SNVs, well spaced."""
    total = sum(len(s) for s in contigs.values())
    somatic, artifacts = [], []
    for name, seq in contigs.items():
        free = germline_mask(name, seq, germline)
        share = len(seq) / total
        # split counts proportionally to contig length; the last contig takes the remainder
        last = name == list(contigs)[-1]
        placed = Counter(v.kind for v in somatic)
        k_snv = n_snv - placed["SNV"] if last else round(n_snv * share)
        k_ind = n_indel - placed["INDEL"] if last else round(n_indel * share)
        k_art = n_art - len(artifacts) if last else round(n_art * share)
        somatic += place_variants(name, seq, free, k_snv, k_ind, rng, SOMATIC_GAP, 12)
        artifacts += place_variants(name, seq, free, k_art, 0, rng, SOMATIC_GAP, 0)
    order = lambda v: (CONTIG_NAMES.index(v.contig), v.pos)  # noqa: E731
    somatic.sort(key=order)
    artifacts.sort(key=order)
    clonal = rng.random(len(somatic)) < CLONAL_SHARE
    return somatic, clonal, artifacts


@dataclasses.dataclass(frozen=True)
class StructuralVariant:
    """A somatic SV on the generated reference. Intra-contig SVs act on the 0-based segment
    [start, end) of `contig`; a translocation joins contig[:start] to contig_2[end:] and
    contig_2[:end] to contig[start:] (reciprocal)."""
    kind: str  # deletion, tandem_duplication, inversion or translocation
    contig: str
    start: int
    end: int
    contig_2: str = ""

    def breakpoints(self) -> tuple[str, int, str, int]:
        """(chrom_1, pos_1, chrom_2, pos_2), 1-based, as GenomonSV reports the junction
        (Pos_1 <= Pos_2 on one contig); an inversion's two junctions lie within 1 bp of these."""
        if self.kind == "deletion":
            return self.contig, self.start, self.contig, self.end + 1
        if self.kind == "tandem_duplication":
            return self.contig, self.start + 1, self.contig, self.end
        if self.kind == "inversion":
            return self.contig, self.start, self.contig, self.end
        return self.contig, self.start, self.contig_2, self.end


def make_svs(contigs, germline, small_variants, counts, rng) -> list[StructuralVariant]:
    """Somatic SVs at random free places: segments of SV_LENGTHS for the intra-contig kinds,
    break points on two contigs for a translocation; each SV keeps SV_SMALL_VARIANT_GAP free."""
    free = {name: germline_mask(name, seq, small_variants, SV_SMALL_VARIANT_GAP) for name, seq in contigs.items()}
    germline_spans = {name: [variant_span(seq, v) for v in germline if v.contig == name]
                      for name, seq in contigs.items()}
    names = list(contigs)
    gap = SV_SMALL_VARIANT_GAP

    def fits(name, lo, hi):
        return (lo - gap >= 0 and hi + gap <= len(contigs[name]) and free[name][lo - gap:hi + gap].all()
                and not any(a - SV_GERMLINE_GAP <= point <= b + SV_GERMLINE_GAP
                            for point in (lo, hi) for a, b in germline_spans[name]))

    def take(name, lo, hi):
        free[name][lo - gap:hi + gap] = False

    svs = []
    for kind in ("deletion", "tandem_duplication", "inversion", "translocation"):
        for _ in range(counts.get(kind, 0)):
            for _attempt in range(2000):
                if kind == "translocation":
                    first, second = (names[i] for i in rng.choice(len(names), size=2, replace=False))
                    a = int(rng.integers(0, len(contigs[first])))
                    b = int(rng.integers(0, len(contigs[second])))
                    if fits(first, a, a) and fits(second, b, b):
                        take(first, a, a)
                        take(second, b, b)
                        svs.append(StructuralVariant(kind, first, a, b, second))
                        break
                    continue
                name = names[int(rng.integers(0, len(names)))]
                length = int(rng.integers(SV_LENGTHS[0], SV_LENGTHS[1] + 1))
                start = int(rng.integers(0, len(contigs[name]) - length))
                if fits(name, start, start + length):
                    take(name, start, start + length)
                    svs.append(StructuralVariant(kind, name, start, start + length))
                    break
            else:
                sys.exit(f"could not place a {kind} of 1-3 kb away from the small variants")
    return sorted(svs, key=lambda sv: (names.index(sv.contig), sv.start))


def haplotype_offset(variants, contig: str, point: int) -> int:
    """How far reference position `point` (0-based, outside every variant) moved in a haplotype
    carrying `variants` (the length changes of the indels before it)."""
    return sum(len(v.alt) - len(v.ref) for v in variants if v.contig == contig and v.pos - 1 < point)


def apply_svs(haplotype: dict[str, str], svs, variants) -> dict[str, str]:
    """A haplotype (the reference with `variants` applied) with the SVs applied: intra-contig
    SVs right to left on each contig, then each translocation at its points' new places."""
    seqs = dict(haplotype)
    shift = {name: [] for name in seqs}  # (haplotype point, length change) of the applied SVs
    for sv in sorted((sv for sv in svs if sv.kind != "translocation"), key=lambda sv: -sv.start):
        lo = sv.start + haplotype_offset(variants, sv.contig, sv.start)
        hi = sv.end + haplotype_offset(variants, sv.contig, sv.end)
        seq = seqs[sv.contig]
        if sv.kind == "deletion":
            seqs[sv.contig] = seq[:lo] + seq[hi:]
            shift[sv.contig].append((hi, lo - hi))
        elif sv.kind == "tandem_duplication":
            seqs[sv.contig] = seq[:hi] + seq[lo:hi] + seq[hi:]
            shift[sv.contig].append((hi, hi - lo))
        else:
            seqs[sv.contig] = seq[:lo] + reverse_complement(seq[lo:hi]) + seq[hi:]

    def moved(contig, point):
        point += haplotype_offset(variants, contig, point)
        return point + sum(change for at, change in shift[contig] if at <= point)

    for sv in (sv for sv in svs if sv.kind == "translocation"):
        a, b = moved(sv.contig, sv.start), moved(sv.contig_2, sv.end)
        one, two = seqs[sv.contig], seqs[sv.contig_2]
        seqs[sv.contig], seqs[sv.contig_2] = one[:a] + two[b:], two[:b] + one[a:]
    return seqs


def reverse_complement(seq: str) -> str:
    return seq.translate(str.maketrans("ACGTN", "TGCAN"))[::-1]


def sv_rows(svs, vaf) -> list[str]:
    """truth/somatic_sv.tsv: a header, then one row per SV."""
    rows = ["\t".join(SV_TRUTH_COLUMNS)]
    for sv in svs:
        chrom_1, pos_1, chrom_2, pos_2 = sv.breakpoints()
        length = "." if sv.kind == "translocation" else str(sv.end - sv.start)
        rows.append(f"{chrom_1}\t{pos_1}\t{chrom_2}\t{pos_2}\t{sv.kind}\t{length}\t{vaf:.4g}")
    return rows


def apply_variants(contigs: dict[str, str], variants) -> dict[str, str]:
    """Haplotype sequences: the reference with the given non-overlapping variants applied."""
    by_contig: dict[str, list[Variant]] = {name: [] for name in contigs}
    for v in variants:
        by_contig[v.contig].append(v)
    result = {}
    for name, seq in contigs.items():
        pieces, cursor = [], 0
        for v in sorted(by_contig[name], key=lambda v: v.pos):
            start = v.pos - 1
            assert start >= cursor and seq[start:start + len(v.ref)] == v.ref, v
            pieces += [seq[cursor:start], v.alt]
            cursor = start + len(v.ref)
        pieces.append(seq[cursor:])
        result[name] = "".join(pieces)
    return result


# --------------------------------------------------------------------------- hotspots

STOP_CODONS = frozenset({"TAA", "TAG", "TGA"})
# Made-up coding genes: at most this many codons each side of the variant's codon, this many
# UTR bases each side of the CDS.
GENE_CODONS_EACH_SIDE = 40
GENE_UTR = 30


def coding_window(seq: str, pos: int, strand: str) -> tuple[int, int] | None:
    """The longest stop-free reading frame window (1-based, closed, whole codons) around 1-based
    pos on `strand` (a `-` codon reads the reverse complement), at most GENE_CODONS_EACH_SIDE
    codons each side of pos's codon; None when every frame puts a stop at pos."""
    def is_stop(first: int) -> bool:  # the codon at 1-based first..first+2
        codon = seq[first - 1:first + 2]
        return len(codon) < 3 or (reverse_complement(codon) if strand == "-" else codon) in STOP_CODONS

    best = None
    for offset in range(3):
        first = pos - offset
        if first < 1 or is_stop(first):
            continue
        left = first
        while left - 3 >= 1 and first - (left - 3) <= 3 * GENE_CODONS_EACH_SIDE and not is_stop(left - 3):
            left -= 3
        right = first
        while (right + 3) - first <= 3 * GENE_CODONS_EACH_SIDE and not is_stop(right + 3):
            right += 3
        if best is None or right + 2 - left > best[1] - best[0]:
            best = (left, right + 2)
    return best


def gene_table_rows(contigs: dict[str, str], variants) -> list[str]:
    """A GTF of made-up one-exon coding genes on the generated genome, one around each variant
    (strands alternating): a stop-free CDS in the frame with the longest open window around it,
    UTRs each side. The gene annotation of the scenarios (gene_annotation: ../data/genes.gtf), so
    that annotation, Merge_Func and paplot's mutation matrix see genes. Deterministic: a function
    of the sequence and the variants."""
    rows = []
    for number, variant in enumerate(variants, start=1):
        strand = "+" if number % 2 else "-"
        seq = contigs[variant.contig]
        window = coding_window(seq, variant.pos + (len(variant.ref) > 1), strand)
        if window is None:
            continue
        cds_start, cds_end = window
        start, end = max(1, cds_start - GENE_UTR), min(len(seq), cds_end + GENE_UTR)
        gene = f"TG{number:03d}"
        attributes = f'gene_id "{gene}"; transcript_id "NM_T{number:03d}"; gene_name "{gene}";'
        for feature, first, last, frame in (("transcript", start, end, "."), ("exon", start, end, "."),
                                            ("CDS", cds_start, cds_end, "0")):
            rows.append("\t".join([variant.contig, "make_testdata", feature, str(first), str(last), ".", strand,
                                   frame, attributes]))
    return rows


def make_hotspots(contigs, germline, genotypes, small_variants, svs, counts, rng):
    """Hotspot SNVs planted in the tumor's subclone (low VAF), away from every other variant and
    SV, and the database rows naming them and other sites: (planted SNVs, rows). A row is
    (Chr, Start, End, Ref, Alt, name, kind), in contig and position order."""
    sv_spans = {name: [] for name in contigs}  # the segments an SV moves, or a translocation's points
    for sv in svs:
        if sv.kind == "translocation":
            sv_spans[sv.contig].append((sv.start, sv.start))
            sv_spans[sv.contig_2].append((sv.end, sv.end))
        else:
            sv_spans[sv.contig].append((sv.start, sv.end))
    total = sum(len(seq) for seq in contigs.values())
    planted, decoys, rows = [], [], []
    for index, (name, seq) in enumerate(contigs.items()):
        free = germline_mask(name, seq, germline + small_variants, SOMATIC_GAP)
        for lo, hi in sv_spans[name]:
            free[max(0, lo - SV_SMALL_VARIANT_GAP):hi + SV_SMALL_VARIANT_GAP] = False
        last = index == len(contigs) - 1
        share = len(seq) / total
        k_planted = counts["planted"] - len(planted) if last else round(counts["planted"] * share)
        k_decoy = counts["decoy"] - len(decoys) if last else round(counts["decoy"] * share)
        planted += place_variants(name, seq, free, k_planted, 0, rng, SOMATIC_GAP, 0)
        decoys += place_variants(name, seq, free, k_decoy, 0, rng, SOMATIC_GAP, 0)
    names = list(contigs)
    planted.sort(key=lambda v: (names.index(v.contig), v.pos))
    for n, v in enumerate(planted):
        rows.append((v.contig, v.pos, v.pos, v.ref, v.alt, f"HS{n + 1}", "planted"))
        if n % 3 == 0:  # another alt of the same site, which no read carries
            other = next(b for b in BASES if b not in (v.ref, v.alt))
            rows.append((v.contig, v.pos, v.pos, v.ref, other, f"HS{n + 1}", "other_alt"))
        if n % 5 == 0:  # a doublet (MNV) row through the site: hotspotCall reads single bases only
            seq = contigs[v.contig]
            rows.append((v.contig, v.pos, v.pos + 1, seq[v.pos - 1:v.pos + 1], v.alt + TRANSITION[seq[v.pos]],
                         f"HS{n + 1}", "mnv"))
    for n, v in enumerate(decoys):
        rows.append((v.contig, v.pos, v.pos, v.ref, v.alt, f"DECOY{n + 1}", "decoy"))
    carried = [v for v, gt in zip(germline, genotypes["patient"]) if v.kind == "SNV" and gt.any()]
    for n in rng.choice(len(carried), size=min(counts["germline"], len(carried)), replace=False).tolist():
        v = carried[n]
        rows.append((v.contig, v.pos, v.pos, v.ref, v.alt, f"GERMLINE{n + 1}", "germline"))
    rows.sort(key=lambda row: (names.index(row[0]), row[1], row[2], row[4]))
    return planted, rows


# --------------------------------------------------------------------------- VCF output

VT_INFO = '##INFO=<ID=VT,Number=1,Type=String,Description="SNV or INDEL">'
GERMLINE_HEADER = [
    VT_INFO,
    '##INFO=<ID=POOL_AF,Number=1,Type=Float,Description="Allele frequency in the simulated '
    'population pool">',
    '##FORMAT=<ID=GT,Number=1,Type=String,Description="Phased genotype hapA|hapB; patient = '
    'tumor and normal">',
]
SOMATIC_HEADER = [
    '##INFO=<ID=VAF,Number=1,Type=Float,Description="Expected variant allele fraction in the '
    'tumor">',
    VT_INFO,
    '##INFO=<ID=CLONAL,Number=0,Type=Flag,Description="Clonal (in all tumor cells); absent = '
    'subclonal">',
]
ARTIFACT_HEADER = [
    '##INFO=<ID=VAF,Number=1,Type=Float,Description="Expected artifact allele fraction in the '
    'tumor">',
    '##INFO=<ID=NORMAL_VAF,Number=1,Type=Float,Description="Expected allele fraction in the '
    'matched normal">',
    '##INFO=<ID=PON_VAF,Number=1,Type=Float,Description="Expected allele fraction in each '
    'panel-of-normals sample">',
    VT_INFO,
]


def vcf_header(contigs, info_lines, samples=()):
    """VCF header with contig lines and the given INFO/FORMAT definitions."""
    lines = ["##fileformat=VCFv4.2", "##reference=ref/genome.fa",
             "##source=genomon-smk .test/make_testdata.py"]
    lines += [f"##contig=<ID={n},length={len(s)},assembly={SOURCE_ASSEMBLY}-chr20-windows>"
              for n, s in contigs.items()]
    lines += info_lines
    cols = ["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO"]
    if samples:
        cols += ["FORMAT", *samples]
    return lines + ["\t".join(cols)]


def write_vcf(path: Path, header: list[str], rows: list[str], fasta: Path, workdir: Path):
    """Left-align (bcftools norm -f), sort, bgzip and tabix a VCF; verify norm changed nothing."""
    plain = workdir / (path.name + ".in.vcf")
    plain.write_text("\n".join(header + rows) + "\n")
    norm = run(["bcftools", "norm", "--no-version", "-f", str(fasta), "-c", "e", "-Ov",
                "-o", str(workdir / (path.name + ".norm.vcf")), str(plain)])
    stats = re.search(rb"total/split/realigned/skipped:\s+(\d+)/(\d+)/(\d+)/(\d+)", norm.stderr)
    if stats and int(stats.group(3)) != 0:
        sys.exit(f"internal error: bcftools norm realigned records of {path.name}")
    run(["bcftools", "sort", "-T", str(workdir), "-Oz", "-o", str(path),
         str(workdir / (path.name + ".norm.vcf"))])
    run(["tabix", "-f", "-p", "vcf", str(path)])


def germline_rows(variants, pool_af, genotypes):
    """VCF rows of the germline truth with phased genotypes per individual."""
    rows = []
    for i, v in enumerate(variants):
        gts = ["%d|%d" % tuple(gt[i].astype(int)) for gt in genotypes.values()]
        rows.append(f"{v.contig}\t{v.pos}\t.\t{v.ref}\t{v.alt}\t.\tPASS\t"
                    f"VT={v.kind};POOL_AF={pool_af[i]:.3f}\tGT\t" + "\t".join(gts))
    return rows


def somatic_rows(somatic, clonal, vaf_clonal, vaf_subclonal):
    """VCF rows of the somatic truth (INFO VAF, VT, CLONAL)."""
    rows = []
    for v, is_clonal in zip(somatic, clonal):
        info = f"VAF={vaf_clonal if is_clonal else vaf_subclonal:.4g};VT={v.kind}"
        rows.append(f"{v.contig}\t{v.pos}\t.\t{v.ref}\t{v.alt}\t.\tPASS\t"
                    + info + (";CLONAL" if is_clonal else ""))
    return rows


def artifact_rows(artifacts, af_tumor, af_normal, af_pon):
    """VCF rows of the recurrent artifact truth."""
    return [f"{v.contig}\t{v.pos}\t.\t{v.ref}\t{v.alt}\t.\tPASS\t"
            f"VAF={af_tumor:.4g};NORMAL_VAF={af_normal:.4g};PON_VAF={af_pon:.4g};VT=SNV"
            for v in artifacts]


# --------------------------------------------------------------------------- reads

def sample_components(args) -> dict[str, list[tuple[str, float]]]:
    """Per sample: (haplotype key, fraction of the sample's reads) mixtures."""
    p, s = args.purity, args.subclone_fraction
    art, art_n = args.artifact_fraction, args.artifact_normal_fraction
    mix = {
        "tumor": [("patB", 0.5 * (1 - art)), ("patB+art", 0.5 * art), ("patA", 0.5 * (1 - p)),
                  ("patA+clonal", 0.5 * p * (1 - s)), ("patA+clonal+sub", 0.5 * p * s)],
        "normal": [("patA", 0.5), ("patB", 0.5 * (1 - art_n)), ("patB+art", 0.5 * art_n)],
    }
    for pon in PON_SAMPLES:
        mix[pon] = [(f"{pon}A", 0.5), (f"{pon}B", 0.5 * (1 - art)), (f"{pon}B+art", 0.5 * art)]
    return {name: [(k, f) for k, f in comps if f > 0] for name, comps in mix.items()}


def haplotype_variants(key, germline, genotypes, somatic, clonal, artifacts, hotspots=()):
    """The variants carried by the haplotype named `key` (e.g. 'patA+clonal', 'pon2B+art')."""
    base, *extras = key.split("+")
    individual = "patient" if base.startswith("pat") else base[:-1]
    hap = 0 if base.endswith("A") else 1
    carried = [v for v, on in zip(germline, genotypes[individual][:, hap]) if on]
    if "clonal" in extras:
        carried += [v for v, c in zip(somatic, clonal) if c]
    if "sub" in extras:
        carried += list(hotspots)
        carried += [v for v, c in zip(somatic, clonal) if not c]
    if "art" in extras:
        carried += artifacts
    return carried


def simulate(simulator, fasta, prefix, coverage, total_len, preset, seed):
    """Simulate paired reads from one haplotype FASTA; returns the (R1, R2) FASTQ paths."""
    length, mean, sd = preset["read_length"], preset["fragment_mean"], preset["fragment_sd"]
    r1, r2 = Path(f"{prefix}1.fq"), Path(f"{prefix}2.fq")
    if simulator == "art":
        run(["art_illumina", "-ss", "HS25", "-i", str(fasta), "-p", "-l", str(length),
             "-f", f"{coverage:.6f}", "-m", str(mean), "-s", str(sd), "-rs", str(seed),
             "-na", "-q", "-o", str(prefix)])
    else:
        pairs = round(coverage * total_len / (2 * length))
        if pairs == 0:
            r1.write_bytes(b"")
            r2.write_bytes(b"")
            return r1, r2
        run(["wgsim", "-e", "0.002", "-d", str(mean), "-s", str(sd), "-N", str(pairs),
             "-1", str(length), "-2", str(length), "-r", "0", "-R", "0", "-X", "0",
             "-S", str(seed), str(fasta), str(r1), str(r2)])
    return r1, r2


def read_fastq(path: Path):
    """Sequences and qualities of a 4-line FASTQ file."""
    lines = path.read_bytes().split(b"\n")
    return lines[1::4][: len(lines) // 4], lines[3::4][: len(lines) // 4]


def write_fastq_pair(paths, names, seq1, qual1, seq2, qual2, order):
    """Write R1/R2 (gzip -n -1 via pigz) for the read pairs listed in `order`."""
    compressor = ["pigz", "-n", "-1", "-p", "1", "-c"] if shutil.which("pigz") else \
        ["gzip", "-n", "-1", "-c"]
    outs = [open(p, "wb") for p in paths]
    procs = [subprocess.Popen(compressor, stdin=subprocess.PIPE, stdout=o) for o in outs]
    chunk = 20_000
    for begin in range(0, len(order), chunk):
        idx = order[begin:begin + chunk]
        nm = names[begin:begin + chunk]
        procs[0].stdin.write(b"".join(b"@%s\n%s\n+\n%s\n" % (n, seq1[i], qual1[i])
                                      for n, i in zip(nm, idx)))
        procs[1].stdin.write(b"".join(b"@%s\n%s\n+\n%s\n" % (n, seq2[i], qual2[i])
                                      for n, i in zip(nm, idx)))
    for proc, out in zip(procs, outs):
        proc.stdin.close()
        if proc.wait() != 0:
            sys.exit("compression failed")
        out.close()


def make_sample_reads(sample, component_fastqs, lanes, fastqdir, dup_rate, rng):
    """Merge component reads, add PCR duplicates, shuffle, rename and write the lanes."""
    seq1, qual1, seq2, qual2, per_component = [], [], [], [], {}
    for key, (r1, r2) in component_fastqs:
        s1, q1 = read_fastq(r1)
        s2, q2 = read_fastq(r2)
        assert len(s1) == len(s2), (r1, r2)
        per_component[key] = len(s1)
        seq1 += s1
        qual1 += q1
        seq2 += s2
        qual2 += q2
    n_unique = len(seq1)
    n_dup = round(n_unique * dup_rate / (1 - dup_rate))
    sources = rng.choice(n_unique, size=n_dup, replace=False)
    pairs = np.concatenate([np.arange(n_unique), sources])[rng.permutation(n_unique + n_dup)]
    names = [b"%s:%d" % (sample.encode(), i + 1) for i in range(len(pairs))]
    bounds = np.linspace(0, len(pairs), lanes + 1).round().astype(int)
    lane_rows, lane_counts = [], {}
    for lane in range(lanes):
        lo, hi = bounds[lane], bounds[lane + 1]
        rel = [f"fastq/{sample}_L{lane + 1}_R{r}.fastq.gz" for r in (1, 2)]
        write_fastq_pair([fastqdir.parent / p for p in rel], names[lo:hi], seq1, qual1, seq2,
                         qual2, pairs[lo:hi].tolist())
        lane_rows.append((sample, *rel, "ILLUMINA", f"{sample}_lib1"))
        lane_counts[f"L{lane + 1}"] = int(hi - lo)
    return lane_rows, dict(pairs=int(len(pairs)), unique_pairs=n_unique, duplicate_pairs=n_dup,
                           lanes=lane_counts, components=per_component)


# --------------------------------------------------------------------------- driver

TRIM_FRACTION = 0.25  # mates 3'-trimmed to a random length (adapter trimming)
EMPTY_FRACTION = 0.03  # mates trimmed to nothing (valid FASTQ records of length zero)


def trimmed_lengths(lengths: np.ndarray, rng) -> np.ndarray:
    """Read lengths after 3' trimming as an adapter trimmer might leave them (some zero)."""
    draw = rng.random(len(lengths))
    cut = rng.integers(1, np.maximum(lengths, 2))
    return np.where(draw < EMPTY_FRACTION, 0, np.where(draw < EMPTY_FRACTION + TRIM_FRACTION, cut, lengths))


def trimmed_names(name: str, lane: int, mate: int) -> str:
    """Lane 1: CASAVA 1.8 names (`@name 1:N:0:INDEX`); lane 2: `/1` `/2` names."""
    return f"{name} {mate}:N:0:ACGTAC" if lane == 1 else f"{name}/{mate}"


def write_multimember_gzip(path: Path, text: str) -> None:
    """gzip as `cat a.gz b.gz` makes it: two members."""
    half = text.index("\n@", len(text) // 2) + 1 if len(text) > 2 else len(text)
    path.write_bytes(b"".join(gzip.compress(part.encode(), compresslevel=1, mtime=0) for part in (text[:half], text[half:])))


def make_trimmed_tumor(outdir: Path, lanes: int, rng) -> dict:
    """fastq_trimmed/: the tumor's lanes adapter-trimmed to varying lengths (some to zero), lane 1
    with CASAVA 1.8 names and lane 2 with /1 /2 names, every lane as multi-member gzip; and
    samples_trimmed.tsv: that tumor with the normal's original lanes."""
    trimmed = outdir / "fastq_trimmed"
    trimmed.mkdir()
    meta = dict(read_pairs=0, empty_read1=0, empty_read2=0, trimmed_mates=0)
    rows = [("sample", "fq1", "fq2", "platform", "library")]
    for lane in range(1, lanes + 1):
        mates = []
        for mate in (1, 2):
            with gzip.open(outdir / "fastq" / f"tumor_L{lane}_R{mate}.fastq.gz", "rt") as handle:
                lines = handle.read().splitlines()
            mates.append([lines[i:i + 4] for i in range(0, len(lines), 4)])
        out = {}
        for mate, records in enumerate(mates, start=1):
            keep = trimmed_lengths(np.array([len(r[1]) for r in records]), rng)
            meta[f"empty_read{mate}"] += int((keep == 0).sum())
            meta["trimmed_mates"] += int(sum(k < len(r[1]) for k, r in zip(keep, records)))
            out[mate] = [f"@{trimmed_names(r[0][1:], lane, mate)}\n{r[1][:k]}\n+\n{r[3][:k]}\n"
                         for r, k in zip(records, keep)]
        meta["read_pairs"] += len(mates[0])
        for mate in (1, 2):
            write_multimember_gzip(trimmed / f"tumor_L{lane}_R{mate}.fastq.gz", "".join(out[mate]))
        rows.append(("tumor", f"fastq_trimmed/tumor_L{lane}_R1.fastq.gz",
                     f"fastq_trimmed/tumor_L{lane}_R2.fastq.gz", "ILLUMINA", "tumor_lib1"))
    rows.append(("normal", "fastq/normal_L1_R1.fastq.gz", "fastq/normal_L1_R2.fastq.gz", "ILLUMINA", "normal_lib1"))
    (outdir / "samples_trimmed.tsv").write_text("".join("\t".join(row) + "\n" for row in rows))
    return meta


def signature(args) -> dict:
    """Everything that determines the output; stored in .complete."""
    return dict(generator_version=GENERATOR_VERSION, preset=args.preset, seed=args.seed,
                simulator=args.simulator, purity=args.purity,
                subclone_fraction=args.subclone_fraction,
                artifact_fraction=args.artifact_fraction,
                artifact_normal_fraction=args.artifact_normal_fraction, dup_rate=args.dup_rate)


OUTPUTS = ("ref", "bare", "fastq", "fastq_trimmed", "truth", ".work", "hotspot_database.txt", "genes.gtf", "samples.tsv", "samples_trimmed.tsv", "pairs.tsv",
           "panels.tsv")


def clear_outputs(outdir: Path) -> None:
    """Remove what a previous (possibly interrupted) run of this generator wrote."""
    (outdir / ".complete").unlink(missing_ok=True)
    for name in OUTPUTS:
        path = outdir / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def outputs_present(outdir: Path) -> bool:
    """Whether the files a complete run leaves behind are all still there."""
    needed = [outdir / "ref" / "genome.fa.bwt", outdir / "ref" / "genome.dict",
              outdir / "truth" / "meta.json", outdir / "pairs.tsv", outdir / "samples_trimmed.tsv",
              outdir / "bare" / "genome.fa.gz", outdir / "bare" / "simpleRepeat.txt.gz"]
    needed += [outdir / "truth" / f"{n}.vcf.gz.tbi" for n in ("germline", "somatic", "artifacts")]
    needed += [outdir / "truth" / "somatic_sv.tsv", outdir / "truth" / "hotspot.vcf.gz.tbi",
               outdir / "hotspot_database.txt", outdir / "genes.gtf"]
    try:
        rows = (outdir / "samples.tsv").read_text().splitlines()[1:]
    except OSError:
        return False
    needed += [outdir / p for row in rows for p in row.split("\t")[1:3]]
    return all(p.exists() for p in needed)


def generate(args) -> None:
    """Build the whole data set into args.outdir."""
    outdir, preset, seed = Path(args.outdir), PRESETS[args.preset], args.seed
    t0 = time.time()
    workdir = outdir / ".work"
    workdir.mkdir(parents=True)
    contigs, origin = build_reference(workdir, outdir / "ref", preset["windows"], seed)
    fasta = outdir / "ref" / "genome.fa"
    total_len = sum(len(s) for s in contigs.values())
    log(t0, f"reference: {len(contigs)} contigs, {total_len} bp, indexed")
    repeats = write_bare_inputs(outdir / "bare", fasta, contigs)
    log(t0, f"bare/: the reference gzipped, UCSC simpleRepeat table of {repeats} repeats")

    germline, pool_af, genotypes = make_germline(contigs, rng_for(seed, STREAM_GERMLINE))
    somatic, clonal, artifacts = make_somatic_and_artifacts(
        contigs, germline, preset["somatic_snvs"], preset["somatic_indels"], preset["artifacts"],
        rng_for(seed, STREAM_SOMATIC))
    vaf_clonal = args.purity / 2
    vaf_sub = args.purity * args.subclone_fraction / 2
    svs = make_svs(contigs, germline, somatic + artifacts, preset["svs"], rng_for(seed, STREAM_SV))
    hotspots, hotspot_rows = make_hotspots(contigs, germline, genotypes, somatic + artifacts, svs,
                                           preset["hotspots"], rng_for(seed, STREAM_HOTSPOT))

    truth = outdir / "truth"
    truth.mkdir()
    af_art, af_art_n = args.artifact_fraction / 2, args.artifact_normal_fraction / 2
    write_vcf(truth / "germline.vcf.gz", vcf_header(contigs, GERMLINE_HEADER, tuple(genotypes)),
              germline_rows(germline, pool_af, genotypes), fasta, workdir)
    write_vcf(truth / "somatic.vcf.gz", vcf_header(contigs, SOMATIC_HEADER),
              somatic_rows(somatic, clonal, vaf_clonal, vaf_sub), fasta, workdir)
    write_vcf(truth / "artifacts.vcf.gz", vcf_header(contigs, ARTIFACT_HEADER),
              artifact_rows(artifacts, af_art, af_art_n, af_art), fasta, workdir)

    (truth / "somatic_sv.tsv").write_text("\n".join(sv_rows(svs, vaf_clonal)) + "\n")
    write_vcf(truth / "hotspot.vcf.gz", vcf_header(contigs, SOMATIC_HEADER),
              somatic_rows(hotspots, [False] * len(hotspots), vaf_clonal, vaf_sub), fasta, workdir)
    (outdir / "hotspot_database.txt").write_text("".join("\t".join(map(str, row)) + "\n" for row in hotspot_rows))
    (outdir / "genes.gtf").write_text(
        "# Made-up coding genes around the somatic variants (make_testdata.py gene_table_rows)\n"
        + "".join(row + "\n" for row in gene_table_rows(contigs, somatic)))
    log(t0, f"truth: {len(germline)} germline, {len(somatic)} somatic, {len(artifacts)} artifacts, "
            f"{len(svs)} SVs")
    # One simulator run per (sample, haplotype component), two at a time.
    mixes = sample_components(args)
    sim_rng = rng_for(seed, STREAM_SIM)
    hap_fastas: dict[str, Path] = {}
    jobs = []
    for sample in SAMPLES:
        cov = preset["coverage"]["pon" if sample in PON_SAMPLES else sample]
        for key, fraction in mixes[sample]:
            if key not in hap_fastas:
                hap_fastas[key] = workdir / f"hap_{key}.fa"
                carried = haplotype_variants(key, germline, genotypes, somatic, clonal, artifacts, hotspots)
                haplotype = apply_variants(contigs, carried)
                # The SVs are clonal: on the tumor's clonal haplotypes
                if "clonal" in key.split("+"):
                    haplotype = apply_svs(haplotype, svs, carried)
                write_fasta(hap_fastas[key], haplotype)
            jobs.append((sample, key, cov * fraction, int(sim_rng.integers(1, 2**31 - 1))))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.threads) as pool:
        futures = [pool.submit(simulate, args.simulator, hap_fastas[key],
                               workdir / f"sim_{sample}_{key}_", cov, total_len, preset, s)
                   for sample, key, cov, s in jobs]
        fastqs = [f.result() for f in futures]

    log(t0, f"simulated {len(jobs)} haplotype components with {args.simulator}")
    fastqdir = outdir / "fastq"
    fastqdir.mkdir()
    sample_rows, read_meta = [], {}
    for sample in SAMPLES:
        comps = [(key, fq) for (s, key, _, _), fq in zip(jobs, fastqs) if s == sample]
        lanes = preset["tumor_lanes"] if sample == "tumor" else 1
        rows, read_meta[sample] = make_sample_reads(
            sample, comps, lanes, fastqdir, args.dup_rate,
            rng_for(seed, STREAM_READS, SAMPLES.index(sample)))
        sample_rows += rows
        log(t0, f"{sample}: {read_meta[sample]['pairs']} read pairs written")

    trimmed_meta = make_trimmed_tumor(outdir, preset["tumor_lanes"], rng_for(seed, STREAM_TRIM))
    log(t0, f"trimmed tumor: {trimmed_meta['empty_read1'] + trimmed_meta['empty_read2']} mates of length zero")
    (outdir / "samples.tsv").write_text(
        "\n".join("\t".join(r) for r in [("sample", "fq1", "fq2", "platform", "library")]
                  + sample_rows) + "\n")
    (outdir / "pairs.tsv").write_text(f"tumor\tnormal\tpanel\ntumor\tnormal\t{PANEL_NAME}\n")
    (outdir / "panels.tsv").write_text(
        "panel\tsample\n" + "".join(f"{PANEL_NAME}\t{p}\n" for p in PON_SAMPLES))

    meta = dict(
        **signature(args), read_length=preset["read_length"],
        fragment_mean=preset["fragment_mean"], fragment_sd=preset["fragment_sd"],
        coverage={s: preset["coverage"]["pon" if s in PON_SAMPLES else s] for s in SAMPLES},
        contigs=origin, genome_length=total_len,
        vaf=dict(clonal=vaf_clonal, subclonal=vaf_sub, artifact_tumor=af_art,
                 artifact_normal=af_art_n, artifact_pon=af_art),
        mixtures={s: {k: round(f, 6) for k, f in m} for s, m in mixes.items()},
        read_pairs={s: m["pairs"] for s, m in read_meta.items()},
        read_pairs_per_lane={s: m["lanes"] for s, m in read_meta.items()},
        duplicate_pairs={s: m["duplicate_pairs"] for s, m in read_meta.items()},
        component_pairs={s: m["components"] for s, m in read_meta.items()},
        counts=dict(germline=len(germline),
                    germline_snv=sum(v.kind == "SNV" for v in germline),
                    germline_indel=sum(v.kind == "INDEL" for v in germline),
                    somatic=len(somatic),
                    somatic_snv=sum(v.kind == "SNV" for v in somatic),
                    somatic_indel=sum(v.kind == "INDEL" for v in somatic),
                    somatic_clonal=int(clonal.sum()),
                    somatic_subclonal=int((~clonal).sum()),
                    artifacts=len(artifacts),
                    hotspot_snv=len(hotspots),
                    hotspot_database_rows=len(hotspot_rows),
                    somatic_sv=dict(Counter(sv.kind for sv in svs))),
        samples_tsv="samples.tsv", pairs_tsv="pairs.tsv", panels_tsv="panels.tsv",
        trimmed_tumor=dict(trimmed_meta, samples_tsv="samples_trimmed.tsv"),
    )
    (truth / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    if not args.keep_work:
        shutil.rmtree(workdir)
    # Written last: its presence means the data set is complete.
    (outdir / ".complete").write_text(json.dumps(signature(args), sort_keys=True) + "\n")
    print(f"wrote {outdir} ({args.preset}, seed {seed}, {args.simulator}) "
          f"in {time.time() - t0:.1f} s", file=sys.stderr)


def parse_args(argv=None):
    """Command-line interface."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--preset", choices=sorted(PRESETS), required=True)
    ap.add_argument("--seed", type=int, default=1,
                    help="random seed of everything made, the genome's windows included: data sets of "
                         "different seeds have different genomes, so never mix their samples [1]")
    ap.add_argument("--simulator", choices=("art", "wgsim"), default="art")
    ap.add_argument("--purity", type=float, default=0.8,
                    help="tumor purity; clonal VAF = purity/2 [0.8]")
    ap.add_argument("--subclone-fraction", type=float, default=0.3,
                    help="share of tumor cells in the subclone; subclonal VAF = "
                         "purity*fraction/2 [0.3]")
    # 0.5 of one haplotype = AF 0.25: high enough for the Fisher test against the matched
    # normal to call the artifacts at test depth, so that removing them is the panel's work.
    ap.add_argument("--artifact-fraction", type=float, default=0.5,
                    help="share of one haplotype's reads carrying artifacts in tumor/PoN [0.5]")
    ap.add_argument("--artifact-normal-fraction", type=float, default=0.02,
                    help="same, in the matched normal [0.02]")
    ap.add_argument("--dup-rate", type=float, default=0.05,
                    help="share of read pairs that are PCR duplicates [0.05]")
    ap.add_argument("--threads", type=int, default=2, help="simulator runs in parallel [2]")
    ap.add_argument("--keep-work", action="store_true", help="keep OUTDIR/.work (debugging)")
    args = ap.parse_args(argv)
    for name in ("purity", "subclone_fraction", "artifact_fraction", "artifact_normal_fraction"):
        if not 0 <= getattr(args, name) <= 1:
            ap.error(f"--{name.replace('_', '-')} must be within [0, 1]")
    if not 0 <= args.dup_rate < 1:
        ap.error("--dup-rate must be within [0, 1)")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    outdir = Path(args.outdir)
    done = outdir / ".complete"
    if done.exists():
        try:
            previous = json.loads(done.read_text())
        except ValueError:
            previous = None
        if previous == signature(args) and outputs_present(outdir):
            print(f"{outdir}: up to date")
            return 0
    outdir.mkdir(parents=True, exist_ok=True)
    clear_outputs(outdir)
    generate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
