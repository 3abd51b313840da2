"""``mutfilter realignment``: re-align the reads around each candidate to a reference and an
alternative template and count fragments supporting each (spec §3 "realignment").

Per candidate ``Chr Start End Ref Alt`` with ``s0 = Start - 1`` and window ``w``:

* templates come from the reference region ``(s0 - w, End + w]`` (1-based ``s0-w+1 .. End+w``),
  upper-cased; ``ref`` = that sequence, ``alt`` = first ``w`` bases + Alt + last ``w`` bases
  (SNV/MNV), first ``w + 1`` + Alt + last ``w`` (insertion, Ref ``-``), first ``w`` + last ``w``
  (deletion, Alt ``-``);
* reads are every record of ``fetch(chr, s0, End)`` sharing no bit with ``--exclude_sam_flags``
  (no MAPQ/BQ filter); each read's full stored sequence is scored against both templates;
* parasail mode (default): local Smith-Waterman, match 2 / mismatch -2, gap open 3, extend 1;
  the higher score wins, ties are "other". edlib mode: infix (HW) edit distance, smaller wins;
* counts are distinct fragment names (mates merged) per class;
* ``---`` for everything when ``s0 < w`` or no template can be built (contig missing from
  the FASTA, non-IUPAC letters); per sample when the region holds >= ``max_depth``
  records (the same number ``pysam.AlignmentFile.count(chr, s0, End)`` returns).

``--blat`` (upstream's v0.2 aligner) is not rebuilt: the CLI refuses it, saying whether blat
is on PATH. Rows are dropped when tumor alt < ``-m`` or normal alt > ``-M`` (``---`` kept).

Speed: one AlignmentFile per BAM for the whole run, one parasail profile per template per
candidate (re-used for every read), reads fetched in-process, a window per candidate, shared
with the later filters of the same process (:mod:`.reads`).

Deliberate differences from upstream Genomon (docs/differences.md): a candidate with ``s0 < w``
(or without templates) keeps its row with every column ``---``, in pair mode too (issue 28:
upstream's pair mode drops it); ``--blat`` is not rebuilt (Genomon v2.6's mutfilter realigned
with blat only).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Iterable

import pysam

from .. import stats
from .reads import overlapping, prefetch
from .table import NA, Candidate
from .vcf import VcfField, VcfLayout

IUPAC = frozenset("ACGTURYSWKMBDHVN")
MATCH, MISMATCH, GAP_OPEN, GAP_EXTEND = 2, -2, 3, 1

REF, ALT, OTHER = "ref", "alt", "other"

PAIR_COLUMNS = (
    "readPairNum_tumor", "variantPairNum_tumor", "otherPairNum_tumor",
    "readPairNum_normal", "variantPairNum_normal", "otherPairNum_normal",
    "P-value(fisher_realignment)",
)
SINGLE_COLUMNS = (
    "readPairNum", "variantPairNum", "otherPairNum",
    "10%_posterior_quantile(realignment)", "posterior_mean(realignment)",
    "90%_posterior_quantile(realignment)",
)


def _sample_counts(offset: int) -> tuple[VcfField, ...]:
    return (
        VcfField("NNR", offset, "1", "Integer", "Fragments realigned to the reference"),
        VcfField("NAR", offset + 1, "1", "Integer", "Fragments realigned to the variant"),
        VcfField("NOR", offset + 2, "1", "Integer", "Fragments realigned to neither"),
    )


PAIR_VCF = VcfLayout(
    info=(VcfField("FPR", 6, "1", "Float",
                   "-log10 Fisher p of realigned ref/alt fragments, tumor vs normal"),),
    tumor_format=_sample_counts(0), normal_format=_sample_counts(3),
)
SINGLE_VCF = VcfLayout(
    info=(VcfField("B1R", 3, "1", "Float", "10% posterior quantile of the realigned VAF"),
          VcfField("BMR", 4, "1", "Float", "Posterior mean of the realigned VAF"),
          VcfField("B9R", 5, "1", "Float", "90% posterior quantile of the realigned VAF")),
    tumor_format=_sample_counts(0),
)


@dataclass(frozen=True)
class RealignParams:
    """Options of the realignment filter (upstream names and defaults)."""

    window_size: int = 200
    score_difference: int = 5
    max_depth: int = 5000
    exclude_sam_flags: int = 3328
    tumor_min_mismatch: int = 0
    normal_max_mismatch: int = 100000
    aligner: str = "parasail"  # "parasail" | "edlib" | "blat"
    blat_path: str | None = None


# ---------------------------------------------------------------- templates

def build_templates(fasta: pysam.FastaFile, cand: Candidate, window: int) -> tuple[str, str] | None:
    """Return the (ref, alt) templates of a candidate, or None if they cannot be built.

    None when the contig is unknown to the reference or the region holds a non-IUPAC letter
    (upstream only aligns to IUPAC-only templates).
    """
    if cand.chrom not in fasta.references:
        return None
    region = fasta.fetch(cand.chrom, max(0, cand.s0 - window), cand.end + window).upper()
    if not region or not IUPAC.issuperset(region):
        return None
    return region, alt_template(region, cand.ref, cand.alt, window)


def alt_template(region: str, ref: str, alt: str, window: int) -> str:
    """Splice the Alt allele into the reference region (see module docstring for the rule)."""
    tail = region[len(region) - window:] if window else ""
    if ref == "-":  # insertion after Start: keep the base at Start on the left
        return region[: window + 1] + alt + tail
    if alt == "-":  # deletion of Start..End
        return region[:window] + tail
    return region[:window] + alt + tail


# ---------------------------------------------------------------- scorers

class ParasailScorer:
    """Classify reads by striped Smith-Waterman score against profiles built once per candidate."""

    _matrix = None  # created on first use, shared by all candidates of the process

    def __init__(self, ref_template: str, alt_template_seq: str):
        import parasail

        if ParasailScorer._matrix is None:
            # letters outside ACGTN (IUPAC codes) fall on parasail's catch-all row
            # (score 0), as in an ssw call with the same matrix
            ParasailScorer._matrix = parasail.matrix_create("ACGTN", MATCH, MISMATCH)
        # 16-bit lanes: scores reach 2 x read length (300 for 150 bp), beyond 8-bit range
        self._align = parasail.sw_striped_profile_16
        self._ref = parasail.profile_create_16(ref_template, ParasailScorer._matrix)
        self._alt = parasail.profile_create_16(alt_template_seq, ParasailScorer._matrix)
        self._ref_seq, self._alt_seq = ref_template, alt_template_seq

    def classify(self, read_seq: str) -> str:
        """Return ``alt``/``ref`` for the higher local-alignment score, ``other`` on a tie."""
        exact = exact_match_class(read_seq, self._ref_seq, self._alt_seq)
        if exact is not None:
            return exact
        ref_score = self._align(self._ref, read_seq, GAP_OPEN, GAP_EXTEND).score
        alt_score = self._align(self._alt, read_seq, GAP_OPEN, GAP_EXTEND).score
        return _higher_wins(alt_score, ref_score)


class EdlibScorer:
    """Classify reads by infix (HW) edit distance to each template."""

    def __init__(self, ref_template: str, alt_template_seq: str):
        import edlib

        self._edlib = edlib
        self._ref = ref_template
        self._alt = alt_template_seq

    def classify(self, read_seq: str) -> str:
        """Return ``alt``/``ref`` for the smaller edit distance, ``other`` on a tie."""
        align = self._edlib.align
        ref_dist = align(read_seq, self._ref, mode="HW", task="distance")["editDistance"]
        alt_dist = align(read_seq, self._alt, mode="HW", task="distance")["editDistance"]
        return _higher_wins(-alt_dist, -ref_dist)


_SCORED_LETTERS = str.maketrans("", "", "ACGTN")


def exact_match_class(read_seq: str, ref_template: str, alt_template_seq: str) -> str | None:
    """The class the alignment scores give a read found whole in a template, without aligning:
    such a read scores the most any alignment can (MATCH for each of its bases; every letter
    on the matrix's diagonal, mismatches and gaps negative) against that template, and less
    against one it is not found in. None for a read in neither (or with a letter off the
    matrix, which scores 0): the scores decide. Most reads of a site are error-free copies of
    one allele, so most alignments are never made."""
    if read_seq.translate(_SCORED_LETTERS):
        return None
    in_ref, in_alt = read_seq in ref_template, read_seq in alt_template_seq
    if in_ref == in_alt:
        return OTHER if in_ref else None
    return REF if in_ref else ALT


def _higher_wins(alt_score: float, ref_score: float) -> str:
    """Decide a read's class from two scores where higher is better."""
    if alt_score > ref_score:
        return ALT
    if alt_score < ref_score:
        return REF
    return OTHER


SCORERS = {"parasail": ParasailScorer, "edlib": EdlibScorer}


# ---------------------------------------------------------------- reads and counts

def fetch_reads(bam: pysam.AlignmentFile, cand: Candidate, exclude_flags: int,
                max_depth: int) -> list[tuple[str, str]] | None:
    """Return ``(fragment name, sequence)`` of eligible reads, or None at/over ``max_depth``.

    The depth test counts every record of the region, like ``AlignmentFile.count``.
    Reads without a stored sequence (``*``) cannot be aligned and are left out.
    """
    if cand.chrom not in bam.references:
        return []
    reads = []
    total = 0
    for read in overlapping(bam, cand.chrom, cand.s0, cand.end):
        total += 1
        if total >= max_depth:
            return None
        if read.flag & exclude_flags:
            continue
        seq = read.query_sequence
        if seq:
            reads.append((read.query_name, seq))
    return reads


def count_fragments(reads: Iterable[tuple[str, str]], scorer) -> tuple[int, int, int]:
    """Count distinct fragment names per class (ref, alt, other).

    Mates share a name, so a fragment is counted once per class; if its mates disagree it
    is counted in both classes (upstream behaviour).
    """
    classes = {REF: set(), ALT: set(), OTHER: set()}
    for name, seq in reads:
        classes[scorer.classify(seq)].add(name)
    return len(classes[REF]), len(classes[ALT]), len(classes[OTHER])


# ---------------------------------------------------------------- statistics

def fisher_score(t_ref: int, n_ref: int, t_alt: int, n_alt: int) -> str:
    """Clamped -log10 two-sided Fisher p of [[T_ref, N_ref], [T_alt, N_alt]] as ``%.3f``
    (see :func:`genomon_smk.tools.stats.fisher_score`)."""
    return "%.3f" % stats.fisher_score(t_ref, n_ref, t_alt, n_alt)


def beta_summary(alt: int, ref: int) -> tuple[str, str, str]:
    """10% quantile, mean and 90% quantile of Beta(alt+1, ref+1), each ``%.3f``
    (see :func:`genomon_smk.tools.stats.beta_posterior`)."""
    return tuple("%.3f" % value for value in stats.beta_posterior(alt, ref))


# ---------------------------------------------------------------- the annotator

@dataclass(frozen=True)
class RealignmentAnnotatorFactory:
    """Picklable recipe for a :class:`RealignmentAnnotator` (one per worker process)."""

    tumor_bam: str
    normal_bam: str | None
    ref_genome: str
    params: RealignParams

    def __call__(self) -> "RealignmentAnnotator":
        return RealignmentAnnotator(self.tumor_bam, self.normal_bam, self.ref_genome, self.params)


class RealignmentAnnotator:
    """Holds the open BAM/FASTA handles and computes the realignment columns of a candidate."""

    def __init__(self, tumor_bam: str, normal_bam: str | None, ref_genome: str,
                 params: RealignParams):
        if params.aligner not in SCORERS:
            raise ValueError(f"aligner {params.aligner!r} is not available in-process")
        self.params = params
        self.fasta = pysam.FastaFile(ref_genome)
        self.tumor = pysam.AlignmentFile(tumor_bam, reference_filename=ref_genome)
        self.normal = (pysam.AlignmentFile(normal_bam, reference_filename=ref_genome)
                       if normal_bam else None)
        self.scorer_class = SCORERS[params.aligner]
        self.reference = ref_genome

    def prefetch(self, candidates: list[Candidate]) -> None:
        """The reads of these candidates (the next rows), fetched together (reads.prefetch)."""
        for bam in (self.tumor, self.normal):
            if bam is not None:
                contigs = set(bam.references)
                prefetch(bam, [(cand.chrom, cand.s0, cand.end) for cand in candidates
                               if cand.chrom in contigs and cand.s0 >= self.params.window_size], self.reference)

    @property
    def paired(self) -> bool:
        return self.normal is not None

    def column_names(self) -> tuple[str, ...]:
        return PAIR_COLUMNS if self.paired else SINGLE_COLUMNS

    def sample_counts(self, bam, cand: Candidate, scorer) -> tuple[int, int, int] | None:
        """(ref, alt, other) fragment counts of one sample, or None when too deep."""
        reads = fetch_reads(bam, cand, self.params.exclude_sam_flags, self.params.max_depth)
        if reads is None:
            return None
        return count_fragments(reads, scorer)

    def __call__(self, cand: Candidate) -> list[str] | None:
        """New columns for ``cand``; None when the mismatch thresholds drop the row."""
        width = len(self.column_names())
        p = self.params
        if cand.s0 < p.window_size:
            return [NA] * width
        templates = build_templates(self.fasta, cand, p.window_size)
        if templates is None:
            return [NA] * width
        scorer = self.scorer_class(*templates)
        tumor = self.sample_counts(self.tumor, cand, scorer)
        normal = self.sample_counts(self.normal, cand, scorer) if self.paired else None
        if tumor is not None and tumor[1] < p.tumor_min_mismatch:
            return None
        if normal is not None and normal[1] > p.normal_max_mismatch:
            return None
        if self.paired:
            return self._pair_columns(tumor, normal)
        return self._single_columns(tumor)

    @staticmethod
    def _pair_columns(tumor, normal) -> list[str]:
        columns = [str(v) for v in tumor] if tumor else [NA] * 3
        columns += [str(v) for v in normal] if normal else [NA] * 3
        if tumor is None or normal is None:
            columns.append(NA)
        else:
            columns.append(fisher_score(tumor[0], normal[0], tumor[1], normal[1]))
        return columns

    @staticmethod
    def _single_columns(tumor) -> list[str]:
        if tumor is None:
            return [NA] * 6
        ref, alt, other = tumor
        return [str(ref), str(alt), str(other), *beta_summary(alt, ref)]


def blat_available(blat_path: str | None) -> str | None:
    """Return the usable blat executable (``--blat_path`` or ``blat`` on PATH) or None."""
    return shutil.which(blat_path or "blat")
