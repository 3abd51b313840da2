"""`fisher`: clean-room GenomonFisher (tumor/normal and tumor-only SNV/indel candidate caller).

Built from the facts in genomon-tools-spec.md section 2 (no upstream code). Per region, a
``samtools mpileup`` of the tumor is screened with cheap string counts (the sites where the tumor
could have enough variant reads); for a pair, a second ``samtools mpileup`` of tumor and normal
together at just those sites (``-l``) gives their lines, exactly the lines of the pair's whole
pileup, at a fraction of its cost (:func:`pair_lines`). Each kept column is then parsed
(genomon_smk.tools.mpileup), and the costly statistics (Fisher's exact test, Beta quantiles) are
computed only for columns that already pass every other output condition.

Usage::

    fisher comparison -1 tumor.bam -2 normal.bam -o out.txt -r ref.fa [options]
    fisher single -1 tumor.bam -o out.txt -r ref.fa [options]

Deliberate differences from upstream Genomon (docs/differences.md): an SNV's ``Ref`` is printed
upper-case (upstream prints the letter as mpileup shows it, lower-case in soft-masked repeats);
with ``-L``, one mpileup per listed interval in the file's order, rows not re-sorted (upstream
sorts them with ``sort -k1,1 -k2,2n -V``); ``-O vcf`` takes the contigs from the ``.fai`` when
there is no ``.dict``; ``--screen_edited_reads`` (comparison; a genomon-smk option, which the
pipeline gives for the BAMs it mapped itself) screens the tumor's reads with an edit only
(:data:`EDITED_READS`), counting their edits by their MD tags and CIGARs (tools/edit_sites.py):
the same rows, a third of the reads on a typical BAM and no pileup of them.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Iterable, Iterator, TextIO

from genomon_smk import tool_version
from genomon_smk.tools.edit_sites import edited_read_sites
from genomon_smk.tools.mpileup import (BASES, SNV_BASES, SampleCounts, build_mpileup_command, candidate_lines,
                                 count_sample, stream_mpileup, variant_read_upper_bound)
from genomon_smk.tools.stats import beta_posterior, fisher_score

LOG = logging.getLogger("fisher")

MISSING = "---"

PAIR_HEADER = ["Chr", "Start", "End", "Ref", "Alt", "depth_tumor", "variantNum_tumor",
               "depth_normal", "variantNum_normal", "bases_tumor", "bases_normal",
               "A_C_G_T_tumor", "A_C_G_T_normal", "misRate_tumor", "strandRatio_tumor",
               "misRate_normal", "strandRatio_normal", "P-value(fisher)"]
SINGLE_HEADER = ["Chr", "Start", "End", "Ref", "Alt", "depth", "variantNum", "bases", "A_C_G_T",
                 "misRate", "strandRatio", "10%_posterior_quantile", "posterior_mean",
                 "90%_posterior_quantile"]


# ----------------------------------------------------------------------------- statistics

def ratio(numerator: int, denominator: int) -> float:
    """numerator/denominator, 0.0 when the denominator is 0."""
    return numerator / denominator if denominator else 0.0


# ----------------------------------------------------------------------------- calls

@dataclass(frozen=True)
class Thresholds:
    """Output conditions (section 2, step 7). fisher_score = −log10(fisher_value)."""

    min_depth: int = 10
    min_variant_read: int = 4
    base_quality: int = 15
    min_allele_freq: float = 0.07
    max_allele_freq: float = 0.1
    fisher_score: float = -math.log10(0.05)
    post_10_q: float = 0.02


@dataclass
class SampleStats:
    """One sample's numbers for one candidate (SNV: BQ-passing; indel: depth_indel based)."""

    depth: int
    variant: int
    depth_forward: int
    variant_forward: int
    depth_reverse: int
    variant_reverse: int
    mis_rate: float
    acgt: tuple[int, int, int, int] | None = None

    @property
    def strand_ratio(self) -> float | None:
        """Forward share of the variant reads; None without variant reads."""
        return self.variant_forward / self.variant if self.variant else None


@dataclass
class Call:
    """One output row. kind: ``snv``, ``ins`` or ``del``; pos/anchor: pileup column and ref."""

    chrom: str
    start: int
    end: int
    ref: str
    alt: str
    kind: str
    pos: int
    anchor: str
    tumor: SampleStats
    normal: SampleStats | None = None
    score: float | None = None
    posterior: tuple[float, float, float] | None = None


def choose_alt(counts: SampleCounts, ref_upper: str) -> str | None:
    """Non-reference A/C/G/T with the largest BQ-passing count; ties → first in ACGT; None if 0."""
    best, best_count = None, 0
    for base in SNV_BASES:
        if base != ref_upper:
            total = counts.base_total(base)
            if total > best_count:
                best, best_count = base, total
    return best


def snv_stats(counts: SampleCounts, alt: str) -> SampleStats:
    """SNV numbers of a sample for a given alt base."""
    index = BASES.index(alt)
    depth = counts.depth
    variant = counts.forward[index] + counts.reverse[index]
    acgt = tuple(counts.forward[i] + counts.reverse[i] for i in range(4))
    return SampleStats(depth, variant, counts.depth_forward, counts.forward[index],
                       counts.depth_reverse, counts.reverse[index], ratio(variant, depth), acgt)


def indel_stats(counts: SampleCounts, key: tuple[str, str], rate_denominator: int) -> SampleStats:
    """Indel numbers of a sample; mis_rate = count / rate_denominator."""
    forward, reverse = counts.indel_count(*key)
    return SampleStats(counts.indel_depth, forward + reverse, counts.indel_depth_forward, forward,
                       counts.indel_depth_reverse, reverse, ratio(forward + reverse, rate_denominator))


def indel_coordinates(pos: int, key: tuple[str, str]) -> tuple[int, int, str, str, str]:
    """(start, end, ref, alt, kind): insertion at pos with Ref '-'; deletion pos+1..pos+len."""
    kind, sequence = key
    if kind == "+":
        return pos, pos, "-", sequence, "ins"
    return pos + 1, pos + len(sequence), sequence, "-", "del"


def ordered_indel_keys(counts: SampleCounts) -> list[tuple[str, str]]:
    """Indel keys with deletions first, each kind in first-seen order."""
    keys = list(counts.indels)
    return [k for k in keys if k[0] == "-"] + [k for k in keys if k[0] == "+"]


def pair_calls(chrom: str, pos: int, ref: str, tumor: SampleCounts, normal: SampleCounts,
               normal_raw_depth: int, th: Thresholds) -> list[Call]:
    """Tumor/normal calls at one column: an SNV (if any) then indels (deletions first)."""
    calls: list[Call] = []
    ref_upper = ref.upper()
    if ref_upper != "N" and tumor.depth >= th.min_depth:
        alt = choose_alt(tumor, ref_upper)
        if alt is not None:
            t, n = snv_stats(tumor, alt), snv_stats(normal, alt)
            if (n.mis_rate < th.max_allele_freq and t.mis_rate > th.min_allele_freq
                    and n.depth >= th.min_depth and t.variant >= th.min_variant_read):
                ref_index = BASES.index(ref_upper)
                t_ref = tumor.forward[ref_index] + tumor.reverse[ref_index]
                n_ref = normal.forward[ref_index] + normal.reverse[ref_index]
                score = fisher_score(t_ref, n_ref, t.variant, n.variant)
                if score > th.fisher_score:
                    calls.append(Call(chrom, pos, pos, ref_upper, alt, "snv", pos, ref, t, n, score))
    if tumor.indel_depth < th.min_depth or normal.indel_depth < th.min_depth:
        return calls
    for key in ordered_indel_keys(tumor):
        t = indel_stats(tumor, key, tumor.indel_depth)
        if t.variant < th.min_variant_read or t.mis_rate <= th.min_allele_freq:
            continue
        n_variant = sum(normal.indel_count(*key))
        if ratio(n_variant, normal.indel_depth) >= th.max_allele_freq:
            continue
        score = fisher_score(t.depth - t.variant, t.variant, normal.indel_depth - n_variant,
                             n_variant)
        if score > th.fisher_score:
            # Upstream prints the normal indel rate over the raw pileup depth.
            n = indel_stats(normal, key, normal_raw_depth)
            start, end, ref_out, alt_out, kind = indel_coordinates(pos, key)
            calls.append(Call(chrom, start, end, ref_out, alt_out, kind, pos, ref, t, n, score))
    return calls


def single_calls(chrom: str, pos: int, ref: str, tumor: SampleCounts, raw_depth: int,
                 th: Thresholds) -> list[Call]:
    """Tumor-only calls at one column: an SNV (if any) then indels (deletions first)."""
    calls: list[Call] = []
    ref_upper = ref.upper()
    if ref_upper != "N" and tumor.depth >= th.min_depth:
        alt = choose_alt(tumor, ref_upper)
        if alt is not None:
            t = snv_stats(tumor, alt)
            if t.mis_rate > th.min_allele_freq and t.variant >= th.min_variant_read:
                posterior = beta_posterior(t.variant, tumor.base_total(ref_upper))
                if posterior[0] > th.post_10_q:
                    calls.append(Call(chrom, pos, pos, ref_upper, alt, "snv", pos, ref, t,
                                      posterior=posterior))
    if tumor.indel_depth < th.min_depth:
        return calls
    for key in ordered_indel_keys(tumor):
        # The allele-frequency condition (and printed misRate) use the raw pileup depth.
        t = indel_stats(tumor, key, raw_depth)
        if t.variant <= 0 or t.variant < th.min_variant_read or t.mis_rate <= th.min_allele_freq:
            continue
        posterior = beta_posterior(t.variant, t.depth - t.variant)
        if posterior[0] > th.post_10_q:
            start, end, ref_out, alt_out, kind = indel_coordinates(pos, key)
            calls.append(Call(chrom, start, end, ref_out, alt_out, kind, pos, ref, t,
                              posterior=posterior))
    return calls


def call_pileup_lines(lines: Iterable[str], paired: bool, th: Thresholds) -> Iterator[Call]:
    """Calls from mpileup lines (tumor first, then normal when paired), in pileup order.

    The cheap screens run on the raw strings before any parsing: zero depth, the variant
    upper bound, the reference letter and the raw depth against min_depth (no output
    condition can pass below it, since every depth used is at most the raw depth).
    """
    min_var, min_depth, min_bq = th.min_variant_read, th.min_depth, th.base_quality
    for line in lines:
        fields = line.rstrip("\r\n").split("\t")
        if fields[3] == "0" or (paired and fields[6] == "0"):
            continue
        tumor_depth = int(fields[3])
        if variant_read_upper_bound(tumor_depth, fields[4]) < min_var:
            continue
        ref = fields[2]
        if ref.upper() not in ("A", "C", "G", "T", "N"):
            continue
        if tumor_depth < min_depth:
            continue
        if paired:
            normal_depth = int(fields[6])
            if normal_depth < min_depth:
                continue
        tumor = count_sample(fields[4], fields[5], ref, min_bq)
        if tumor is None:
            continue
        chrom, pos = fields[0], int(fields[1])
        if paired:
            normal = count_sample(fields[7], fields[8], ref, min_bq)
            if normal is None:
                continue
            yield from pair_calls(chrom, pos, ref, tumor, normal, normal_depth, th)
        else:
            yield from single_calls(chrom, pos, ref, tumor, tumor_depth, th)


# ----------------------------------------------------------------------------- formatting

def fmt3(value: float | None) -> str:
    """``%.3f`` or ``---`` for a missing value."""
    return MISSING if value is None else "%.3f" % value


def bases_field(stats: SampleStats) -> str:
    """``depth+,alt+,depth-,alt-``."""
    return "%d,%d,%d,%d" % (stats.depth_forward, stats.variant_forward, stats.depth_reverse,
                            stats.variant_reverse)


def acgt_field(stats: SampleStats) -> str:
    """``A,C,G,T`` totals for SNVs, ``---`` for indels."""
    return MISSING if stats.acgt is None else ",".join(map(str, stats.acgt))


def format_anno(call: Call, paired: bool) -> str:
    """One anno (TSV) row without newline."""
    t = call.tumor
    head = [call.chrom, str(call.start), str(call.end), call.ref, call.alt]
    if paired:
        n = call.normal
        cells = head + [str(t.depth), str(t.variant), str(n.depth), str(n.variant),
                        bases_field(t), bases_field(n), acgt_field(t), acgt_field(n),
                        fmt3(t.mis_rate), fmt3(t.strand_ratio), fmt3(n.mis_rate),
                        fmt3(n.strand_ratio), fmt3(call.score)]
    else:
        cells = head + [str(t.depth), str(t.variant), bases_field(t), acgt_field(t),
                        fmt3(t.mis_rate), fmt3(t.strand_ratio)] + [fmt3(v) for v in call.posterior]
    return "\t".join(cells)


VCF_FORMAT = "GT:DP:DPF:DPR:AD:ADF:ADR:AF:SB"


def vcf_alleles(call: Call) -> tuple[str, str]:
    """(REF, ALT) with indels left-anchored at the pileup base."""
    anchor = call.anchor.upper()
    if call.kind == "ins":
        return anchor, anchor + call.alt
    if call.kind == "del":
        return anchor + call.ref, anchor
    return call.ref.upper(), call.alt


def vcf_sample(stats: SampleStats, genotype: str) -> str:
    """FORMAT values for one sample."""
    return ":".join([genotype, str(stats.depth), str(stats.depth_forward),
                     str(stats.depth_reverse), str(stats.variant), str(stats.variant_forward),
                     str(stats.variant_reverse), fmt3(stats.mis_rate),
                     "." if stats.strand_ratio is None else fmt3(stats.strand_ratio)])


def format_vcf(call: Call, paired: bool) -> str:
    """One VCF record without newline."""
    ref, alt = vcf_alleles(call)
    if paired:
        info = "FP=" + fmt3(call.score)
        samples = [vcf_sample(call.tumor, "0/1"), vcf_sample(call.normal, "0/0")]
    else:
        info = "B10=%.3f;BM=%.3f;B90=%.3f" % call.posterior
        samples = [vcf_sample(call.tumor, "0/1")]
    return "\t".join([call.chrom, str(call.pos), ".", ref, alt, ".", "PASS", info, VCF_FORMAT]
                     + samples)


def read_contigs(ref_fasta: str) -> list[tuple[str, int]]:
    """Contigs from ``<fasta without extension>.dict`` (@SQ SN/LN); falls back to ``.fai``."""
    dict_path = os.path.splitext(ref_fasta)[0] + ".dict"
    contigs: list[tuple[str, int]] = []
    if os.path.exists(dict_path):
        with open(dict_path) as handle:
            for line in handle:
                if line.startswith("@SQ"):
                    tags = dict(f.split(":", 1) for f in line.rstrip("\n").split("\t")[1:] if ":" in f)
                    contigs.append((tags["SN"], int(tags["LN"])))
        return contigs
    LOG.warning("%s not found; taking contigs from %s.fai", dict_path, ref_fasta)
    with open(ref_fasta + ".fai") as handle:
        for line in handle:
            name, length = line.split("\t")[:2]
            contigs.append((name, int(length)))
    return contigs


def vcf_header(ref_fasta: str, sample_names: list[str], paired: bool) -> list[str]:
    """VCF 4.2 header lines (without newlines)."""
    lines = ["##fileformat=VCFv4.2", "##source=genomon_smk.tools.fisher", "##reference=" + ref_fasta]
    lines += ["##contig=<ID=%s,length=%d>" % contig for contig in read_contigs(ref_fasta)]
    if paired:
        lines.append('##INFO=<ID=FP,Number=1,Type=Float,Description="Minus log10 p-value of '
                     'Fisher\'s exact test between tumor and normal">')
    else:
        lines += ['##INFO=<ID=B10,Number=1,Type=Float,Description="10% posterior quantile of the '
                  'allele frequency (Beta distribution)">',
                  '##INFO=<ID=BM,Number=1,Type=Float,Description="Posterior mean of the allele '
                  'frequency">',
                  '##INFO=<ID=B90,Number=1,Type=Float,Description="90% posterior quantile of the '
                  'allele frequency">']
    lines += ['##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
              '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Read depth">',
              '##FORMAT=<ID=DPF,Number=1,Type=Integer,Description="Read depth on the forward strand">',
              '##FORMAT=<ID=DPR,Number=1,Type=Integer,Description="Read depth on the reverse strand">',
              '##FORMAT=<ID=AD,Number=1,Type=Integer,Description="Variant read count">',
              '##FORMAT=<ID=ADF,Number=1,Type=Integer,Description="Variant reads on the forward strand">',
              '##FORMAT=<ID=ADR,Number=1,Type=Integer,Description="Variant reads on the reverse strand">',
              '##FORMAT=<ID=AF,Number=1,Type=Float,Description="Allele frequency">',
              '##FORMAT=<ID=SB,Number=1,Type=Float,Description="Forward-strand share of variant reads">']
    lines.append("\t".join(["#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO",
                            "FORMAT"] + sample_names))
    return lines


# ----------------------------------------------------------------------------- running

def read_region_file(path: str) -> list[str]:
    """Regions of a -L file: one line per job, a line may hold comma-separated regions."""
    regions: list[str] = []
    with open(path) as handle:
        for line in handle:
            regions += [r.strip() for r in line.strip().split(",") if r.strip()]
    return regions


def thresholds_from_args(args: argparse.Namespace) -> Thresholds:
    """Thresholds from the parsed command line."""
    paired = args.command == "comparison"
    return Thresholds(min_depth=args.min_depth, min_variant_read=args.min_variant_read,
                      base_quality=args.base_quality, min_allele_freq=args.min_allele_freq,
                      max_allele_freq=args.max_allele_freq if paired else 1.0,
                      fisher_score=-math.log10(args.fisher_value) if paired else 0.0,
                      post_10_q=getattr(args, "post_10_q", 0.0))


def write_calls(args: argparse.Namespace, out: TextIO) -> int:
    """Run mpileup once per region and write the rows; returns the number of calls."""
    paired = args.command == "comparison"
    th = thresholds_from_args(args)
    bams = [args.bam1] + ([args.bam2] if paired else [])
    if args.regions:
        regions: list[str | None] = list(read_region_file(args.regions))
    elif args.region:
        regions = [args.region]
    else:
        regions = [None]
    vcf = args.output_format == "vcf"
    if vcf:
        names = [args.sample1] + ([args.sample2] if paired else [])
        if any(name is None for name in names):
            raise SystemExit("fisher: -a (and -b for comparison) are required with -O vcf")
        out.write("\n".join(vcf_header(args.ref_fa, names, paired)) + "\n")
    elif args.print_header:
        out.write("\t".join(PAIR_HEADER if paired else SINGLE_HEADER) + "\n")
    formatter = format_vcf if vcf else format_anno
    total = 0
    for region in regions:
        if paired and not args.positions:
            lines = pair_lines(args.samtools_path, bams, args.ref_fa, region, args.samtools_params,
                               th.min_variant_read, args.screen_edited_reads)
        else:
            lines = pileup_lines(build_mpileup_command(args.samtools_path, bams, args.ref_fa, region,
                                                       args.positions, args.samtools_params), len(bams),
                                 th.min_variant_read)
        for call in call_pileup_lines(lines, paired, th):
            out.write(formatter(call, paired) + "\n")
            total += 1
    return total


def pileup_lines(command: list[str], samples: int, minimum: int) -> Iterator[str]:
    """The lines of one mpileup run that candidate_lines keeps."""
    LOG.info("running %s", " ".join(command))
    with stream_mpileup(command, binary=True) as pileup:
        yield from candidate_lines(pileup, samples, minimum)


class _Dense(Exception):
    """The tumor's screen keeps too many sites for a pileup of the pair at just those."""


#: the tumor's screen gives up when it keeps a site per this many bases (after DENSE_AFTER
#: sites): the pair's pileup at the sites would then cost about as much as a whole one
DENSE_SPAN = 400
DENSE_AFTER = 500


def screened_sites(command: list[str], minimum: int) -> list[tuple[str, str]]:
    """(contig, 1-based position) of the lines of the tumor's pileup that candidate_lines keeps;
    raises _Dense when they come closer than one per DENSE_SPAN bases."""
    LOG.info("running %s", " ".join(command))
    with stream_mpileup(command, binary=True) as pileup:
        return checked_density(line.split("\t", 2)[:2] for line in candidate_lines(pileup, 1, minimum))


def checked_density(sites: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The sites, in order; raises _Dense as soon as they come closer than one per DENSE_SPAN
    bases (after DENSE_AFTER of them, on the first site's contig)."""
    kept: list[tuple[str, str]] = []
    for contig, position in sites:
        kept.append((contig, position))
        if (len(kept) > DENSE_AFTER and kept[0][0] == contig
                and (int(position) - int(kept[0][1])) < DENSE_SPAN * len(kept)):
            raise _Dense
    return kept


#: The reads that can show a variant in a pileup: those with an edit against the reference (NM,
#: the aligner's count of mismatched, inserted and deleted bases), a base other than A, C, G, T
#: (not counted as an edit by every aligner), or no NM tag to tell. A read without these shows
#: only matches ("." and ",") and its start and end marks at every column of the reference it
#: was aligned to, so the pileup of these reads alone has every variant read of the whole one.
EDITED_READS = '!([NM] == 0) || seq =~ "[^ACGT]"'


def screen_command(samtools: str, tumor: str, ref_fa: str, region: str | None, params: str,
                   edited_reads: bool) -> list[str]:
    """The tumor's pileup for the screen: of every read, or (edited_reads) of EDITED_READS only
    (samtools view streamed into mpileup, which then needs no -r: columns beyond the region's
    ends are screened too, and the pair's pileup at the sites keeps to the region)."""
    if not edited_reads:
        return build_mpileup_command(samtools, [tumor], ref_fa, region, None, params)
    pileup = build_mpileup_command(samtools, ["-"], ref_fa, None, None, params)
    return ["bash", "-o", "pipefail", "-c", f"{shlex.join(edited_reads_view(samtools, tumor, region))} | "
            f"{shlex.join(pileup)}"]


def edited_reads_view(samtools: str, tumor: str, region: str | None) -> list[str]:
    """samtools view of the tumor's EDITED_READS over the region, as uncompressed BAM."""
    return [samtools, "view", "-u", "-e", EDITED_READS, tumor, *([region] if region else [])]


def tumor_sites(samtools: str, tumor: str, ref_fa: str, region: str | None, params: str, minimum: int,
                edited_reads: bool) -> list[tuple[str, str]]:
    """The screen's sites: with edited_reads, where at least `minimum` of the edited reads show
    an edit by their MD tags and CIGARs (tools/edit_sites.py), else (or when a read has no MD
    tag) the lines of their pileup, or of every read's, that candidate_lines keeps. Raises
    _Dense when the sites are dense."""
    if edited_reads and minimum >= 1:
        sites = edited_read_sites(edited_reads_view(samtools, tumor, region), minimum)
        if sites is not None:
            return checked_density(sites)
    return screened_sites(screen_command(samtools, tumor, ref_fa, region, params, edited_reads), minimum)


def pair_lines(samtools: str, bams: list[str], ref_fa: str, region: str | None, params: str,
               minimum: int, edited_reads: bool = False) -> Iterator[str]:
    """The pair's pileup lines that candidate_lines keeps, in two runs: the tumor's pileup alone
    (about 60 % of the pair's, for half the text), screened; then the pair's pileup at the
    screened sites only (mpileup -l, which reads only the reads over them). A column's pileup
    depends only on the reads over it, so each line is the line of the pair's whole pileup.
    Where the screen keeps sites too densely, the pair's whole pileup, screened, as before."""
    try:
        sites = tumor_sites(samtools, bams[0], ref_fa, region, params, minimum, edited_reads)
    except _Dense:
        LOG.info("dense candidate sites: the pair's whole pileup")
        yield from pileup_lines(build_mpileup_command(samtools, bams, ref_fa, region, None, params), len(bams),
                                minimum)
        return
    if not sites:
        return
    with tempfile.NamedTemporaryFile("w", prefix="fisher.", suffix=".bed") as bed:
        bed.writelines(f"{contig}\t{int(position) - 1}\t{position}\n" for contig, position in sites)
        bed.flush()
        yield from pileup_lines(build_mpileup_command(samtools, bams, ref_fa, region, bed.name, params), len(bams),
                                minimum)


def build_parser() -> argparse.ArgumentParser:
    """The `fisher comparison|single` command line (upstream option names and defaults)."""
    parser = argparse.ArgumentParser(prog="fisher", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=tool_version("fisher"))
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in ("comparison", "single"):
        sub = subparsers.add_parser(name)
        sub.add_argument("-1", "--bam1", required=True, help="tumor BAM")
        if name == "comparison":
            sub.add_argument("-2", "--bam2", required=True, help="normal BAM")
        sub.add_argument("-o", "--output", required=True)
        sub.add_argument("-r", "--ref_fa", required=True)
        sub.add_argument("-s", "--samtools_path", default="samtools")
        sub.add_argument("-a", "--sample1", default=None, help="tumor sample name (VCF)")
        if name == "comparison":
            sub.add_argument("-b", "--sample2", default=None, help="normal sample name (VCF)")
        sub.add_argument("-S", "--samtools_params", default="-q 30 -BQ0 -d 10000000")
        sub.add_argument("-Q", "--base_quality", type=int, default=15)
        sub.add_argument("-m", "--min_allele_freq", type=float, default=0.07)
        if name == "comparison":
            sub.add_argument("-M", "--max_allele_freq", type=float, default=0.1)
            sub.add_argument("-f", "--fisher_value", type=float, default=0.05)
        else:
            sub.add_argument("-p", "--post_10_q", type=float, default=0.02)
        sub.add_argument("-d", "--min_depth", type=int, default=10)
        sub.add_argument("-v", "--min_variant_read", type=int, default=4)
        sub.add_argument("-R", "--region", default=None, help="samtools region chr:start-end")
        sub.add_argument("-L", "--regions", default=None,
                         help="file of regions: one line per job, comma-separated regions")
        sub.add_argument("-P", "--positions", default=None, help="BED of positions (mpileup -l)")
        if name == "comparison":
            sub.add_argument("--screen_edited_reads", action="store_true",
                             help="screen the tumor's reads with an edit only (NM != 0, a base other than ACGT, "
                                  "or no NM tag), counting their mismatches (MD tag) and indels (CIGAR) per "
                                  "position; their pileup when a read has no MD tag: the same rows when the "
                                  "BAM's NM and MD tags are its aligner's against this reference (genomon-smk)")
        sub.add_argument("-O", "--output_format", choices=("anno", "vcf"), default="anno")
        sub.add_argument("-e", "--print_header", action="store_true")
        sub.add_argument("-g", "--log_file", default=None)
        sub.add_argument("-l", "--log_level", default="INFO",
                         choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `fisher` console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(filename=args.log_file, level=getattr(logging, args.log_level),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.region and args.regions:
        raise SystemExit("fisher: give -R or -L, not both")
    try:
        with open(args.output, "w", buffering=1 << 20) as out:
            total = write_calls(args, out)
    except subprocess.CalledProcessError as error:
        sys.stderr.write("fisher: %s failed (exit %d):\n%s" % (" ".join(error.cmd),
                                                              error.returncode, error.stderr))
        return 1
    LOG.info("%d calls written to %s", total, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
