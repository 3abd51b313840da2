"""`hotspotCall`: clean-room GenomonHotspotCall (known hotspot SNVs called with a lower bar).

Built from the facts in genomon-stages-spec.md section 1.2-1.4 (no upstream code). Every
single-base row of the hotspot database (tab-separated Chr, Start, End, Ref, Alt, ...; no header)
is piled up in the tumor and the matched normal (``samtools mpileup -r Chr:Start-End`` without a
reference, so every read base is printed as its letter), and each database alt is written as one
row of fisher's 18 tumor/normal columns plus its LOD score when it passes every threshold.

Deliberate differences from upstream Genomon (docs/differences.md; hotspotCall v0.1.0): rows in the database's order (upstream's is Python
2's arbitrary dict order); ``-S`` is split as a shell would split it (upstream splits on single
spaces); a pileup whose bases and qualities do not line up is an error with a message (upstream
crashes); the database may be gzip-compressed; ``--samtools_path`` names the samtools to run
(upstream takes it from PATH, as this does by default).

Usage (upstream's v0.1.0 positional order: tumor, control, output, database)::

    hotspotCall [-S samtools_params] [-t 0.1] [-c 0.1] [-R 0.1] [-m 8.0] [-r rna.bam]
        tumor.bam control.bam output.txt hotspot_database.txt
"""

from __future__ import annotations

import argparse
import logging
import math
import subprocess
import sys
from dataclasses import dataclass
from typing import Iterator, TextIO

from genomon_smk import tool_version
from genomon_smk.fileio import open_text
from genomon_smk.tools.mpileup import build_mpileup_command, stream_mpileup, tokenize_read_bases
from genomon_smk.tools.stats import fisher_score

LOG = logging.getLogger("hotspotCall")

MISSING = "---"
SNV_LETTERS = "ACGT"
MAX_BASE_QUALITY = 41  # Phred values above are counted as 41 in the LOD
DEFAULT_SAMTOOLS_PARAMS = "-B -q 20 -Q2 -d 10000000"
HEADER = ["Chr", "Start", "End", "Ref", "Alt", "depth_tumor", "variantNum_tumor", "depth_normal",
          "variantNum_normal", "bases_tumor", "bases_normal", "A_C_G_T_tumor", "A_C_G_T_normal",
          "misRate_tumor", "strandRatio_tumor", "misRate_normal", "strandRatio_normal",
          "P-value(fisher)", "score"]
RNA_HEADER = ["depth_RNA", "variant_RNA", "bases_RNA", "tmisRate_RNA"]


# ----------------------------------------------------------------------------- statistics

def base_lod(quality: int) -> float:
    """One alt base's share of the LOD: −log10(p / (1 − p)), p = 10^(−q/10), q capped at 41.

    (q=41 → 4.1, 30 → 3.0, 20 → 1.996, 3 → −0.002; q=0 is undefined: mpileup's -Q2 excludes it.)
    """
    q = min(quality, MAX_BASE_QUALITY)
    error = 10.0 ** (-q / 10.0)
    return -math.log10(error / (1.0 - error))


def lod_score(qualities: list[int]) -> float:
    """The LOD of a set of alt bases: the sum of their shares (0 without alt bases)."""
    return sum(base_lod(q) for q in qualities)


@dataclass(frozen=True)
class Thresholds:
    """hotspotCall's filters (-t, -c, -R, -m): a site passes when none fails (equality passes)."""

    min_tumor_misrate: float = 0.1
    max_control_misrate: float = 0.1
    ratio_control: float = 0.1
    min_lod_score: float = 8.0


# ----------------------------------------------------------------------------- pileup counts

@dataclass
class Bases:
    """One sample's read bases at a site: the ACGTacgt letters with their Phred qualities
    (upper case = forward strand, lower case = reverse)."""

    letters: str
    qualities: list[int]

    def count(self, base: str) -> int:
        """Both-strand count of an upper-case base."""
        return self.letters.count(base) + self.letters.count(base.lower())

    @property
    def depth(self) -> int:
        return len(self.letters)

    @property
    def depth_forward(self) -> int:
        return sum(self.letters.count(b) for b in SNV_LETTERS)

    def alt_qualities(self, alt: str) -> list[int]:
        return [q for letter, q in zip(self.letters, self.qualities) if letter.upper() == alt]


def sample_bases(read_bases: str, qualities: str) -> Bases:
    """The counted bases of one sample's pileup column: indel tokens, ``^`` with its MAPQ
    character and ``$`` removed, then only A/C/G/T letters of either case kept (N, ``*`` and
    others ignored). Raises ValueError when bases and qualities do not line up."""
    if read_bases == "*" and qualities == "*":  # no read here (mpileup's empty column)
        return Bases("", [])
    bases, _ = tokenize_read_bases(read_bases)
    if len(bases) != len(qualities):
        raise ValueError(f"read bases {read_bases!r} do not line up with qualities {qualities!r}")
    kept = [(b, ord(q) - 33) for b, q in zip(bases, qualities) if b in "ACGTacgt"]
    return Bases("".join(b for b, _ in kept), [q for _, q in kept])


# ----------------------------------------------------------------------------- the database

@dataclass(frozen=True)
class Site:
    """One hotspot site of the database: its key and the alts listed for it, in file order."""

    chrom: str
    start: str
    end: str
    ref: str
    alts: tuple[str, ...]

    @property
    def region(self) -> str:
        return f"{self.chrom}:{self.start}-{self.end}"


def read_sites(lines: Iterator[str]) -> list[Site]:
    """The database's single-base sites: rows whose Ref and Alt are each one of A, C, G, T in
    either case (MNVs and indels are left out), upper-cased as the pileup's forward-strand letters
    and fisher's rows are, duplicates removed, alts grouped per (Chr, Start, End, Ref), in the
    order of first appearance. ``#`` lines and blank lines are skipped."""
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for line in lines:
        if line.startswith("#") or not line.strip():
            continue
        cells = line.rstrip("\r\n").split("\t")
        if len(cells) < 5:
            continue
        chrom, start, end = cells[:3]
        ref, alt = cells[3].upper(), cells[4].upper()
        if ref not in SNV_LETTERS or alt not in SNV_LETTERS or len(ref) != 1 or len(alt) != 1:
            continue
        alts = groups.setdefault((chrom, start, end, ref), [])
        if alt not in alts:
            alts.append(alt)
    return [Site(*key, tuple(alts)) for key, alts in groups.items()]


# ----------------------------------------------------------------------------- calls

def strand_ratio(forward: int, total: int) -> float:
    """Forward share of the alt reads: 0 when none is forward, −1 without alt reads."""
    if total == 0:
        return -1.0
    return forward / total if forward else 0.0


def bases_field(bases: Bases, alt: str) -> str:
    """``depth+,alt+,depth−,alt−``."""
    forward, reverse = bases.depth_forward, bases.depth - bases.depth_forward
    return "%d,%d,%d,%d" % (forward, bases.letters.count(alt), reverse, bases.letters.count(alt.lower()))


def acgt_field(bases: Bases) -> str:
    return ",".join(str(bases.count(b)) for b in SNV_LETTERS)


def mis_rate(bases: Bases, alt: str) -> float:
    return bases.count(alt) / bases.depth if bases.count(alt) else 0.0


def site_rows(chrom: str, pos: str, ref: str, alts: tuple[str, ...], tumor: Bases, normal: Bases,
              th: Thresholds, rna: Bases | None = None) -> Iterator[list[str]]:
    """The output rows of one piled-up site: one per alt that passes every threshold."""
    for alt in alts:
        lod = lod_score(tumor.alt_qualities(alt))
        tumor_rate, normal_rate = mis_rate(tumor, alt), mis_rate(normal, alt)
        if (lod < th.min_lod_score or tumor_rate < th.min_tumor_misrate
                or normal_rate > th.max_control_misrate or normal_rate > tumor_rate * th.ratio_control):
            continue
        score = fisher_score(tumor.count(ref), normal.count(ref), tumor.count(alt), normal.count(alt))
        tumor_alt_forward, normal_alt_forward = tumor.letters.count(alt), normal.letters.count(alt)
        normal_ratio = strand_ratio(normal_alt_forward, normal.count(alt))
        row = [chrom, pos, pos, ref, alt, str(tumor.depth), str(tumor.count(alt)), str(normal.depth),
               str(normal.count(alt)), bases_field(tumor, alt), bases_field(normal, alt),
               acgt_field(tumor), acgt_field(normal), "%.3f" % tumor_rate,
               "%.3f" % strand_ratio(tumor_alt_forward, tumor.count(alt)), "%.3f" % normal_rate,
               "%.3f" % normal_ratio if normal_ratio > 0 else MISSING, "%.3f" % score, "%.3f" % lod]
        if rna is not None:
            row += [str(rna.depth), str(rna.count(alt)), bases_field(rna, alt), "%.3f" % mis_rate(rna, alt)]
        yield row


def call_site(site: Site, bams: list[str], samtools_params: str, th: Thresholds,
              samtools: str = "samtools") -> list[list[str]]:
    """Pile the site up in the BAMs (tumor, normal[, RNA]) and return its passing rows."""
    if site.start != site.end:
        LOG.warning("%s: Start %s differs from End %s; only single-base sites are called, skipped",
                    site.region, site.start, site.end)
        return []
    command = build_mpileup_command(samtools, bams, region=site.region, params=samtools_params)
    rows: list[list[str]] = []
    with stream_mpileup(command) as pileup:
        for line in pileup:
            fields = line.rstrip("\r\n").split("\t")
            samples = [sample_bases(fields[i + 1], fields[i + 2]) for i in range(3, len(fields), 3)]
            rna = samples[2] if len(samples) > 2 else None
            rows += site_rows(fields[0], fields[1], site.ref, site.alts, samples[0], samples[1], th, rna)
    return rows


def write_calls(args: argparse.Namespace, out: TextIO) -> int:
    """The header, then the passing rows of every site in database order; returns the row count."""
    th = Thresholds(args.min_tumor_misrate, args.max_control_misrate, args.ratio_control,
                    args.min_lod_score)
    bams = [args.tumor_bam, args.control_bam] + ([args.rna_bam] if args.rna_bam else [])
    out.write("\t".join(HEADER + (RNA_HEADER if args.rna_bam else [])) + "\n")
    with open_text(args.hotspot_database) as handle:
        sites = read_sites(handle)
    total = 0
    for site in sites:
        for row in call_site(site, bams, args.samtools_params, th, args.samtools_path):
            out.write("\t".join(row) + "\n")
            total += 1
    LOG.info("%d hotspot sites piled up, %d rows written", len(sites), total)
    return total


def build_parser() -> argparse.ArgumentParser:
    """upstream hotspotCall's command line (v0.1.0 option names and defaults)."""
    parser = argparse.ArgumentParser(prog="hotspotCall", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=tool_version("hotspotCall"))
    parser.add_argument("tumor_bam")
    parser.add_argument("control_bam")
    parser.add_argument("output_file")
    parser.add_argument("hotspot_database", help="Chr, Start, End, Ref, Alt, ... (tab-separated, no header)")
    parser.add_argument("-S", "--samtools_params", default=DEFAULT_SAMTOOLS_PARAMS,
                        help="samtools mpileup options, one string")
    parser.add_argument("-t", "--min_tumor_misrate", type=float, default=0.1)
    parser.add_argument("-c", "--max_control_misrate", type=float, default=0.1)
    parser.add_argument("-R", "--ratio_control", type=float, default=0.1)
    parser.add_argument("-m", "--min_lod_score", type=float, default=8.0)
    parser.add_argument("-r", "--rna_bam", default=None, help="RNA BAM: four more columns")
    parser.add_argument("--samtools_path", default="samtools", help="(genomon-smk) the samtools to run")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m genomon_smk.tools.hotspot`."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        with open(args.output_file, "w") as out:
            write_calls(args, out)
    except subprocess.CalledProcessError as error:
        sys.stderr.write("hotspotCall: %s failed (exit %d):\n%s\n" % (" ".join(error.cmd), error.returncode,
                                                                     error.stderr))
        return 1
    except ValueError as error:
        sys.stderr.write(f"hotspotCall: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
