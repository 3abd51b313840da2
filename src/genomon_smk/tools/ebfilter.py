"""EBFilter: empirical-Bayes panel-of-normals score for candidate somatic mutations.

Clean-room rebuild of Genomon's ``EBFilter`` from the facts in genomon-tools-spec.md
(sections 4, 6, 8). Usage (upstream's interface)::

    EBFilter [-f vcf|anno] [-t threads] [-q 20] [-Q 15] [--ff UNMAP,SECONDARY,QCFAIL,DUP]
             [--loption] [--region chr:start-end] [--debug]
             target tumor.bam controlBam_list.txt output

For every candidate the tumor and each control of the panel are piled up at the
variant's pileup position; per strand the controls' (depth, alt) counts are fitted
with a penalised beta-binomial (:mod:`genomon_smk.tools.betabinom`), the tumor's upper-tail
probability is taken under that fit, the two strands are combined with Fisher's method
and ``-log10 p`` is reported (anno: an extra TAB column; VCF: INFO ``EB``).

The pileup runs as ONE ``samtools mpileup -B -d 10000000 -q Q -Q BQ --ff FLAGS -b list
-l sites.bed -r WINDOW`` over tumor + controls per window: with ``--loption`` a window is
a whole contig (clipped to ``--region``) holding candidates; without it, candidates
farther than :data:`MAX_GAP_WITHOUT_LOPTION` apart get separate windows (upstream ran
one ``-r pos`` process per site instead). Scores do not depend on the windowing. Each BAM's
records over the window's sites reach mpileup through a FIFO from ``samtools view -M -L
sites.bed`` (mpileup then has no ``-r``): the same lines, without inflating the records between
sites (:func:`pileup_sites`).

Deliberate differences from upstream Genomon (docs/differences.md): one mpileup per window
instead of per site (the same scores); ``#`` lines of an anno target are dropped and
``.csi``/``.crai`` indexes accepted; a strand whose tumor alt count is 0 is not fitted (its p is
1 either way).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

# The per-site fit is a tiny 2-parameter L-BFGS-B whose BLAS calls get ~13x slower when
# OpenBLAS spreads them over threads (measured: 1.6 vs 20 ms per fit on a loaded 2-core
# node). This must happen before numpy/scipy load OpenBLAS, i.e. when run as a command.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the OPENBLAS setting)

from genomon_smk import tool_version  # noqa: E402
from genomon_smk.tools import betabinom
from genomon_smk.tools.mpileup import IndelToken, tokenize_read_bases  # noqa: E402

LOG = logging.getLogger("EBFilter")

#: without --loption, sites farther apart than this get their own samtools run, so that a
#: sparse target list does not stream whole chromosomes
MAX_GAP_WITHOUT_LOPTION = 100_000
_IS_UPPER_BASE = np.zeros(256, dtype=bool)
_IS_UPPER_BASE[list(b"ACGTN")] = True
_IS_LOWER_BASE = np.zeros(256, dtype=bool)
_IS_LOWER_BASE[list(b"acgtn")] = True


# --- variants and positions ----------------------------------------------------------------

@dataclass(frozen=True)
class VariantKey:
    """What is counted at a site: kind 'snv' (seq = alt base), 'ins' or 'del' (seq = letters)."""

    kind: str
    seq: str


def classify_anno_variant(ref: str, alt: str) -> VariantKey | None:
    """Variant key of a Genomon anno row (Ref, Alt); None for complex variants.

    SNV: single bases; insertion: Ref ``-``; deletion: Alt ``-``.
    """
    ref, alt = ref.upper(), alt.upper()
    if ref == "-" and alt not in ("", "-") and alt.isalpha():
        return VariantKey("ins", alt)
    if alt == "-" and ref not in ("", "-") and ref.isalpha():
        return VariantKey("del", ref)
    if len(ref) == 1 and len(alt) == 1 and ref.isalpha() and alt.isalpha():
        return VariantKey("snv", alt)
    return None


def classify_vcf_variant(ref: str, alts: Sequence[str] | None) -> VariantKey | None:
    """Variant key of a VCF record (anchored indels); None if multi-allelic or complex."""
    if not alts or len(alts) != 1:
        return None
    ref, alt = ref.upper(), alts[0].upper()
    if not (ref.isalpha() and alt.isalpha()):
        return None
    if len(ref) == 1 and len(alt) == 1:
        return VariantKey("snv", alt)
    if len(ref) == 1 and len(alt) > 1 and alt[0] == ref:
        return VariantKey("ins", alt[1:])
    if len(alt) == 1 and len(ref) > 1 and ref[0] == alt:
        return VariantKey("del", ref[1:])
    return None


def anno_pileup_position(start: int, key: VariantKey | None) -> int:
    """1-based pileup position of an anno row: Start, but Start - 1 for deletions."""
    return start - 1 if key is not None and key.kind == "del" else start


def parse_region(region: str) -> tuple[str, int, float]:
    """``chr``, ``chr:start`` or ``chr:start-end`` (1-based, inclusive) -> (chr, start, end)."""
    match = re.fullmatch(r"(.+?)(?::([\d,]+)(?:-([\d,]+))?)?", region.strip())
    if not match:
        raise ValueError(f"bad region {region!r}")
    contig, start, end = match.groups()
    start_value = int(start.replace(",", "")) if start else 1
    end_value = float(int(end.replace(",", ""))) if end else math.inf
    if end_value < start_value:
        raise ValueError(f"bad region {region!r}: end before start")
    return contig, start_value, end_value


def in_region(contig: str, pos: int, region: tuple[str, int, float] | None) -> bool:
    """True if (contig, pos) lies in the region (always True without a region)."""
    return region is None or (contig == region[0] and region[1] <= pos <= region[2])


# --- counting (read-base strings are split by genomon_smk.tools.mpileup.tokenize_read_bases) ------

def count_snv(symbols: str, quals: str, alt: str, min_bq: int) -> tuple[int, int, int, int]:
    """(depth+, alt+, depth-, alt-) from cleaned symbols: bases with BQ >= min_bq only.

    Depth counts the letters A,C,G,T,N (upper case = forward, lower = reverse); ``*``,
    ``#``, ``<``, ``>`` are not bases.
    """
    if len(symbols) != len(quals):
        raise ValueError("read bases and qualities differ in length")
    if not symbols:
        return 0, 0, 0, 0
    codes = np.frombuffer(symbols.encode("ascii"), dtype=np.uint8)
    passing = np.frombuffer(quals.encode("ascii"), dtype=np.uint8).astype(np.int16) - 33 >= min_bq
    upper = _IS_UPPER_BASE[codes] & passing
    lower = _IS_LOWER_BASE[codes] & passing
    alt_code = ord(alt.upper())
    return (int(upper.sum()), int((upper & (codes == alt_code)).sum()),
            int(lower.sum()), int((lower & (codes == alt_code + 32)).sum()))


def indel_matches(token: IndelToken, key: VariantKey, any_sequence: bool) -> bool:
    """Does an indel token count for the variant?

    Same type is required; the tumor also needs the same inserted letters
    (case-insensitive) or the same deletion length, controls (``any_sequence``) do not.
    """
    if (token.kind == "+") != (key.kind == "ins"):
        return False
    if any_sequence:
        return True
    if key.kind == "ins":
        return token.sequence.upper() == key.seq.upper()
    return len(token.sequence) == len(key.seq)


def count_indel(symbols: str, indels: Iterable[IndelToken], key: VariantKey,
                any_sequence: bool) -> tuple[int, int, int, int]:
    """(depth+, alt+, depth-, alt-) for an indel: depth = letters per case, no BQ filter;
    alt = matching indel tokens, strand from the case of their letters."""
    depth_plus = sum(1 for c in symbols if c in "ACGTN")
    depth_minus = sum(1 for c in symbols if c in "acgtn")
    alt_plus = alt_minus = 0
    for token in indels:
        if indel_matches(token, key, any_sequence):
            if token.is_reverse:
                alt_minus += 1
            else:
                alt_plus += 1
    return depth_plus, alt_plus, depth_minus, alt_minus


def count_sample(depth: str, read_bases: str, quals: str, key: VariantKey, min_bq: int,
                 is_control: bool) -> tuple[int, int, int, int]:
    """Per-strand counts of one sample's pileup triple (all zero for an empty pileup)."""
    if depth == "0" or read_bases in ("", "*") and quals in ("", "*"):
        return 0, 0, 0, 0
    symbols, indels = tokenize_read_bases(read_bases)
    if key.kind == "snv":
        if len(symbols) != len(quals):
            LOG.warning("read bases and qualities differ in length; sample counted as empty")
            return 0, 0, 0, 0
        return count_snv(symbols, quals, key.seq, min_bq)
    return count_indel(symbols, indels, key, any_sequence=is_control)


# --- scoring ----------------------------------------------------------------------------------

def score_counts(tumor: Sequence[int], controls: Sequence[Sequence[int]]) -> float | int:
    """EB score from tumor (n+, k+, n-, k-) and the controls' (n+, k+, n-, k-) rows.

    A strand whose tumor alt count is 0 has p = 1 whatever the fit, so it is not fitted.
    """
    panel = np.asarray(controls, dtype=np.int64).reshape(-1, 4)
    p_values = []
    for strand in (0, 1):
        depth, alt = tumor[2 * strand], tumor[2 * strand + 1]
        if alt == 0:
            p_values.append(1.0)
            continue
        alpha, beta = betabinom.fit_panel(panel[:, 2 * strand], panel[:, 2 * strand + 1])
        p_values.append(float(betabinom.upper_tail(alt, depth, alpha, beta)))
    return betabinom.eb_score(betabinom.fisher_combine(p_values))


# --- BAMs and samtools -------------------------------------------------------------------

def find_index(bam: str) -> str | None:
    """Path of the BAM's index (``x.bam.bai``, ``x.bai``, ``x.bam.csi``, ``x.cram.crai``) or None."""
    stem = os.path.splitext(bam)[0]
    for candidate in (bam + ".bai", stem + ".bai", bam + ".csi", bam + ".crai"):
        if os.path.exists(candidate):
            return candidate
    return None


def read_control_list(path: str) -> list[str]:
    """Control BAM paths, one per non-empty line."""
    with open(path) as handle:
        return [line.strip() for line in handle if line.strip()]


def check_inputs(tumor_bam: str, control_bams: Sequence[str]) -> None:
    """Refuse to run on missing BAMs, missing indexes, an empty panel or no samtools."""
    if not control_bams:
        raise SystemExit("EBFilter: the control BAM list is empty")
    for bam in [tumor_bam, *control_bams]:
        if not os.path.exists(bam):
            raise SystemExit(f"EBFilter: no such BAM file: {bam}")
        if find_index(bam) is None:
            raise SystemExit(f"EBFilter: no index for {bam} (expected {bam}.bai or "
                             f"{os.path.splitext(bam)[0]}.bai); run `samtools index {bam}`")
    if shutil.which("samtools") is None:
        raise SystemExit("EBFilter: samtools not found on PATH")


def plan_windows(positions: Iterable[int], max_gap: float) -> list[tuple[int, int]]:
    """Group sorted distinct positions into (first, last) windows split at gaps > max_gap."""
    windows: list[tuple[int, int]] = []
    for pos in sorted(set(positions)):
        if windows and pos - windows[-1][1] <= max_gap:
            windows[-1] = (windows[-1][0], pos)
        else:
            windows.append((pos, pos))
    return windows


def mpileup_command(bam_list: str, bed: str, window: str | None, mapq: int, bq: int, flags: str) -> list[str]:
    """The samtools command for one window (no reference: ref column N, bases as letters);
    without `window`, the BAMs' streams are piled up at the BED's positions."""
    return ["samtools", "mpileup", "-B", "-d", "10000000", "-q", str(mapq), "-Q", str(bq),
            "--ff", flags, "-b", bam_list, "-l", bed, *(["-r", window] if window else [])]


def site_reads_command(bam: str, bed: str, window: str, out: str) -> list[str]:
    """The records of `bam` over the BED's positions in the window (htslib's multi-region
    iterator), as an uncompressed BAM stream."""
    return ["samtools", "view", "-u", "-M", "-L", bed, "-o", out, bam, window]


def pileup_sites(contig: str, positions: Sequence[int], bams: Sequence[str], mapq: int, bq: int,
                 flags: str, max_gap: float, workdir: str) -> Iterator[tuple[int, list[str]]]:
    """Yield (pos, fields) for every pileup line at the given positions of one contig.

    ``fields`` holds the (depth, bases, quals) triples of all BAMs, tumor first. Each BAM's
    records over the positions come to mpileup through a FIFO from a `samtools view -M` of the
    positions: a pileup line depends only on the records over its position, so the lines are
    those of the BAMs' pileup at the positions (with -r WINDOW), and the records between sites
    are not inflated (on the bench: 0.7 instead of 1.2 CPU s for a half genome's 268 sites).
    """
    bam_list = os.path.join(workdir, "bams.txt")
    fifos = [os.path.join(workdir, f"reads.{index}.bam") for index in range(len(bams))]
    if not os.path.exists(bam_list):
        try:
            for fifo in fifos:
                os.mkfifo(fifo)
        except OSError:  # a file system without FIFOs: mpileup reads the BAMs themselves
            listed = bams
        else:
            listed = fifos
        with open(bam_list, "w") as handle:
            handle.write("".join(f"{path}\n" for path in listed))
    with open(bam_list) as handle:
        streamed = handle.read().split("\n")[:len(fifos)] == fifos
    bed = os.path.join(workdir, "sites.bed")
    for first, last in plan_windows(positions, max_gap):
        with open(bed, "w") as handle:
            handle.write("".join(f"{contig}\t{p - 1}\t{p}\n" for p in sorted(set(positions)) if first <= p <= last))
        window = f"{contig}:{first}-{last}"
        command = mpileup_command(bam_list, bed, None if streamed else window, mapq, bq, flags)
        LOG.debug("running %s", " ".join(command))
        # stderr goes to a file: a chatty samtools must not block on a full pipe
        with tempfile.TemporaryFile(mode="w+", dir=workdir) as errors:
            readers = [subprocess.Popen(site_reads_command(bam, bed, window, fifo), stderr=errors)
                       for bam, fifo in zip(bams, fifos) if streamed]
            proc = None
            try:
                with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True) as proc:
                    for line in proc.stdout:
                        fields = line.rstrip("\n").split("\t")
                        yield int(fields[1]), fields[3:]
            finally:
                for reader in readers:
                    # mpileup reads each stream to its end; one it stopped reading, or never
                    # opened (a reader then waits for ever), is ended
                    if proc is None or proc.returncode:
                        reader.kill()
                    reader.wait()
            failed = [process.returncode for process in (proc, *readers) if process.returncode]
            errors.seek(0)
            if failed:
                raise RuntimeError(f"samtools mpileup failed ({failed[0]}): {errors.read().strip()}")
            # a contig a BAM does not have: `view` warns and goes on, mpileup -r WINDOW failed
            unknown = [line for line in errors.read().splitlines() if "unknown reference name" in line]
            if unknown:
                raise RuntimeError(f"samtools mpileup failed: {unknown[0]}")


@dataclass(frozen=True)
class Site:
    """One scored candidate: contig, 1-based pileup position and variant key."""

    contig: str
    pos: int
    key: VariantKey


@dataclass(frozen=True)
class Settings:
    """Pileup settings shared by all workers."""

    tumor_bam: str
    control_bams: tuple[str, ...]
    mapq: int
    bq: int
    flags: str
    max_gap: float


def score_sites(sites: Sequence[Site], settings: Settings) -> list[float | int]:
    """EB scores of the sites, in order; one samtools run per window of each contig."""
    bams = [settings.tumor_bam, *settings.control_bams]
    wanted = {(site.contig, site.pos) for site in sites}
    by_contig: dict[str, list[int]] = {}
    for contig, pos in sorted(wanted):
        by_contig.setdefault(contig, []).append(pos)
    empty = ["0", "*", "*"] * len(bams)
    columns: dict[tuple[str, int], list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="ebfilter.") as workdir:
        for contig, positions in by_contig.items():
            for pos, fields in pileup_sites(contig, positions, bams, settings.mapq, settings.bq,
                                            settings.flags, settings.max_gap, workdir):
                if (contig, pos) in wanted:
                    columns[(contig, pos)] = fields
    scores: list[float | int] = []
    for site in sites:
        fields = columns.get((site.contig, site.pos), empty)
        counts = [count_sample(*fields[3 * i:3 * i + 3], site.key, settings.bq, is_control=i > 0)
                  for i in range(len(bams))]
        scores.append(score_counts(counts[0], counts[1:]))
        LOG.debug("%s:%d %s%s tumor=%s controls=%s score=%s", site.contig, site.pos, site.key.kind,
                  site.key.seq, counts[0], counts[1:], scores[-1])
    return scores


def score_sites_parallel(sites: Sequence[Site], settings: Settings, threads: int) -> list[float | int]:
    """Split the sites into ``threads`` contiguous chunks scored by separate processes."""
    if threads <= 1 or len(sites) < 2:
        return score_sites(sites, settings)
    chunks = [list(chunk) for chunk in np.array_split(np.arange(len(sites)), min(threads, len(sites)))]
    with ProcessPoolExecutor(max_workers=len(chunks)) as pool:
        futures = [pool.submit(score_sites, [sites[i] for i in chunk], settings) for chunk in chunks]
        return [score for future in futures for score in future.result()]


# --- formats -----------------------------------------------------------------------------

def read_anno(path: str, region: tuple[str, int, float] | None) -> tuple[list[str], list[Site | None]]:
    """Rows of a header-less Genomon mutation file (Chr Start End Ref Alt ...) to score.

    Rows outside ``region`` (by pileup position) and ``#`` lines are dropped; complex rows
    get None.
    """
    lines: list[str] = []
    sites: list[Site | None] = []
    with open(path) as handle:
        for line in handle:
            line = line.rstrip("\r\n")
            if not line:
                continue
            if line.startswith("#"):
                continue  # Genomon's intermediate tables are header-less; drop stray comments
            fields = line.split("\t")
            if len(fields) < 5:
                raise ValueError(f"{path}: fewer than 5 columns in {line!r}")
            key = classify_anno_variant(fields[3], fields[4])
            pos = anno_pileup_position(int(fields[1]), key)
            if not in_region(fields[0], pos, region):
                continue
            lines.append(line)
            sites.append(Site(fields[0], pos, key) if key else None)
    return lines, sites


def run_anno(args: argparse.Namespace, settings: Settings, region) -> None:
    """Anno mode: every kept input line + TAB + score (``.`` for complex variants)."""
    lines, sites = read_anno(args.target, region)
    scorable = [site for site in sites if site is not None]
    scores = iter(score_sites_parallel(scorable, settings, args.threads))
    with open(args.output, "w") as out:
        for line, site in zip(lines, sites):
            score = next(scores) if site is not None else None
            out.write(f"{line}\t{betabinom.format_score(score)}\n")


def run_vcf(args: argparse.Namespace, settings: Settings, region) -> None:
    """VCF mode: the target's records with INFO ``EB`` (missing for complex variants)."""
    import pysam

    with pysam.VariantFile(args.target) as vcf_in:
        if "EB" not in vcf_in.header.info:
            vcf_in.header.info.add("EB", 1, "Float", "EBCall Score")
        records, sites = [], []
        for record in vcf_in:
            if not in_region(record.chrom, record.pos, region):
                continue
            key = classify_vcf_variant(record.ref, record.alts)
            records.append(record)
            sites.append(Site(record.chrom, record.pos, key) if key else None)
        scores = iter(score_sites_parallel([s for s in sites if s is not None], settings, args.threads))
        mode = "wz" if args.output.endswith(".gz") else "w"
        with pysam.VariantFile(args.output, mode, header=vcf_in.header) as vcf_out:
            for record, site in zip(records, sites):
                if site is not None:
                    record.info["EB"] = float(next(scores))
                vcf_out.write(record)


def build_parser() -> argparse.ArgumentParser:
    """Argument parser with upstream EBFilter's options."""
    parser = argparse.ArgumentParser(prog="EBFilter", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=tool_version("EBFilter"))
    parser.add_argument("-f", dest="format", choices=("vcf", "anno"), default="vcf",
                        help="target format (default vcf)")
    parser.add_argument("-t", dest="threads", type=int, default=1, help="worker processes")
    parser.add_argument("-q", dest="mapq", type=int, default=20, help="minimum mapping quality")
    parser.add_argument("-Q", dest="bq", type=int, default=15, help="minimum base quality")
    parser.add_argument("--ff", dest="flags", default="UNMAP,SECONDARY,QCFAIL,DUP",
                        help="skip reads with any of these flags")
    parser.add_argument("--loption", action="store_true",
                        help="one pileup per contig/region over all candidates (-l BED)")
    parser.add_argument("--region", help="chr:start-end; with --loption, rows outside are dropped")
    parser.add_argument("--debug", action="store_true", help="log counts per site")
    parser.add_argument("target")
    parser.add_argument("tumor_bam")
    parser.add_argument("control_list")
    parser.add_argument("output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (``EBFilter`` / ``python -m genomon_smk.tools.ebfilter``)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(name)s: %(message)s")
    if args.threads < 1:
        raise SystemExit("EBFilter: -t must be >= 1")
    if not os.path.exists(args.target):
        raise SystemExit(f"EBFilter: no such target file: {args.target}")
    if not os.path.exists(args.control_list):
        raise SystemExit(f"EBFilter: no such control list: {args.control_list}")
    controls = read_control_list(args.control_list)
    check_inputs(args.tumor_bam, controls)
    region = None
    if args.region and args.loption:
        try:
            region = parse_region(args.region)
        except ValueError as error:
            raise SystemExit(f"EBFilter: {error}")
    elif args.region:
        LOG.warning("--region is only used together with --loption; ignored")
    settings = Settings(args.tumor_bam, tuple(controls), args.mapq, args.bq, args.flags,
                        math.inf if args.loption else MAX_GAP_WITHOUT_LOPTION)
    if args.format == "anno":
        run_anno(args, settings, region)
    else:
        run_vcf(args, settings, region)
    return 0


if __name__ == "__main__":
    sys.exit(main())
