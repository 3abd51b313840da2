"""`pmsignature`: clean-room pmsignature (mutational signatures) as Genomon DNA runs it.

Built from the facts in shared/design/genomon-stages-spec.md section 4 and the model of
Shiraishi, Tremmel, Miyano and Stephens, PLoS Genet 11(12):e1005657 (2015); no upstream code.

* Input: Genomon's mutation position format (``mutation.cut.txt``: ``sample chrom pos ref alt``,
  TAB, no header). Each mutation gets the ``num_bases`` reference window centred on it (any
  contig names: ``chr1`` in the file finds ``1`` in a GRCh37 FASTA and back), and is dropped
  (counted, one warning per reason) when the centre base is not ``ref`` (insertions, multi-base
  deletions, mismatches), ``alt`` is not one base of ACGT, the window holds a non-ACGT base or
  lies off the contig, ``ref == alt``, or (strand mode) no transcript of the annotation covers it.
  A purine reference base is reverse-complemented (window, ref, alt).
* Features: ``ind`` = substitution (C>A C>G C>T T>A T>C T>G), one base per flanking position
  5'->3' (centre skipped) and, with the transcription strand, ``+`` (the pyrimidine base lies on
  the coding strand of the first covering transcript in table order) or ``-``. ``full`` = one
  feature with 6 x 4^(num_bases-1) values; for num_bases 3: 16*sub + 4*base(-1) + base(+1).
* Model: signature k gives pattern m the probability P(m|k) = prod_l f_{k,l}(m_l); with the
  background the last signature is the fixed, non-factorised distribution b(m). Sample n has
  membership q_n (a simplex over all K incl. background). LL = sum_{n,m} g[n,m] log sum_k
  q_{n,k} P(m|k). EM: theta_{n,m,k} proportional to q_{n,k} P(m|k) (1/K when the sum is <= 1e-8);
  f_{k,l}(v) proportional to sum_{n, m: m_l = v} g theta; q_{n,k} proportional to sum_m g theta.
  Acceleration: SQUAREM (Varadhan & Roland 2008; step length |r|/|v|, "SqS3"), steps clamped to
  [1, step_max], step_max starting at 1 and multiplied / divided by 4; an extrapolation leaving
  the simplices or lowering LL by more than 1 is replaced by two plain EM steps. Stop when
  |LL - LL_prev| < tol (1e-4) or after max_iter (10000) iterations. Starts: every simplex an
  i.i.d. Gamma(1, 1) draw, normalised.
  ``trialnum`` starts (each from its own stream of the seed); the best final LL wins (the first
  on ties).
* The E and M steps are fused and vectorised over patterns: with R = Q P^T and W = G / R,
  new q is proportional to Q * (W P) and the pattern-level expected counts are P * (W^T Q);
  the latter summed per feature value give the new f. Counts are a dense N x M matrix over the
  observed patterns M (<= 3072 for ind), taken in blocks of 64 samples, or, when fewer than 20%
  of the cells are nonzero, a CSR matrix.
* Background (section 4.5 recipe, seeded): uniform random positions over the primary contigs
  (optional chr, then digits, X or Y) weighted by length; kept where an exon of the annotation
  covers the position and the window is ACGT; a uniformly random alt among the three others;
  the empirical pattern frequencies (plus one pseudo-count per pattern) for ind5 with strand,
  ind5 without strand and full3.
* JSON (section 4.6, what paplot reads): probabilities truncated to 3 (ind) or 4 (full)
  decimals; ``mutation`` = [sample, signature, q] with the background last; ``mutation_count`` =
  the sample's mutations that survived the filters.

Deliberate differences from upstream Genomon (docs/differences.md, docs/pmsignature.md): seeded
starts, the true mutation counts, SQUAREM for a maximisation, backgrounds made from the configured
reference and annotation, the empty JSON only for too few mutations.

Usage::

    python -m genomon_smk.tools.pmsignature background -r ref.fa -a refGene.txt.gz -o bgdir
    python -m genomon_smk.tools.pmsignature fit -i mutation.cut.txt -r ref.fa -a refGene.txt.gz \\
        -b bgdir --signum 3 -o pmsignature.ind.result.3.json [--full]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

# The fit's many small BLAS calls get slower, not faster, when OpenBLAS spreads them over threads
# on a shared node (measured: a 3M-element dot 1.5 -> 39 ms); trials run in processes instead
# (--threads). Only effective when run as a command (before numpy loads OpenBLAS).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from genomon_smk import tool_version  # noqa: E402
from genomon_smk.fileio import open_text  # noqa: E402
from genomon_smk.tools.annotate.genes import BUILTIN_NAMES, builtin_table  # noqa: E402

LOG = logging.getLogger("pmsignature")

SUBSTITUTIONS = ("C>A", "C>G", "C>T", "T>A", "T>C", "T>G")
BASES = "ACGT"
_BASE_INDEX = {b: i for i, b in enumerate(BASES)}
_SUB_INDEX = {(s[0], s[2]): i for i, s in enumerate(SUBSTITUTIONS)}
_COMPLEMENT = str.maketrans("ACGT", "TGCA")
PRIMARY_CONTIG = re.compile(r"^(chr)?([0-9]+|X|Y)$", re.IGNORECASE)

# Below this many of the cohort's mutations per signature, a fit is noted as likely degenerate
# (genomon-smk's warning, issue 34; pmsignature itself fits whatever it is given).
MUTATIONS_PER_SIGNATURE = 50
EMPTY_IND = {"id": [], "ref": [], "alt": [], "strand": [], "mutation": []}
EMPTY_FULL = {"id": [], "signature": [], "mutation": []}

TOL = 1e-4
MAX_ITER = 10000
TRIALNUM = 10
E_STEP_FLOOR = 1e-8     # theta = 1/K below this denominator
LL_FLOOR = 1e-10        # LL terms with a smaller mixture probability are skipped
DENSE_BLOCK = 64        # samples per block of the dense E step

#: where bin/install puts annot_utils' UCSC tables (the SV tools' venv)


# ----------------------------------------------------------------------------- modes

@dataclass(frozen=True)
class Mode:
    """A feature encoding: ``ind`` (independent features) or ``full`` (one joint feature)."""

    kind: str            # "ind" | "full"
    num_bases: int
    trdir: bool

    @property
    def fdim(self) -> tuple[int, ...]:
        flanks = self.num_bases - 1
        if self.kind == "ind":
            return (6,) + (4,) * flanks + ((2,) if self.trdir else ())
        return (6 * 4 ** flanks * (2 if self.trdir else 1),)

    @property
    def n_patterns(self) -> int:
        return int(np.prod(self.fdim))

    @property
    def table_name(self) -> str:
        """File name of this mode's background table (upstream's naming)."""
        return f"bg.{self.kind}{self.num_bases}{'_dir' if self.trdir else ''}.txt"


IND = Mode("ind", 5, True)
FULL = Mode("full", 3, False)


def pattern_features(sub: int, window: str, strand: int, mode: Mode) -> tuple[int, ...]:
    """0-based feature values of one mutation; `window` is pyrimidine-normalised (centre C/T),
    `strand` 0 = '+', 1 = '-' (ignored without trdir)."""
    half = mode.num_bases // 2
    if mode.kind == "ind":
        flanks = tuple(_BASE_INDEX[b] for i, b in enumerate(window) if i != half)
        return (sub,) + flanks + ((strand,) if mode.trdir else ())
    index = sub * 4 ** (mode.num_bases - 1)
    for i in range(1, half + 1):
        index += _BASE_INDEX[window[mode.num_bases - i]] * 4 ** (2 * i - 2)   # 3' side
        index += _BASE_INDEX[window[i - 1]] * 4 ** (2 * i - 1)               # 5' side
    if mode.trdir and strand == 1:
        index += 6 * 4 ** (mode.num_bases - 1)
    return (index,)


def _code(features: Sequence[int], fdim: Sequence[int]) -> int:
    """:func:`encode` of one feature tuple."""
    code = 0
    for v, d in zip(features, fdim):
        code = code * d + v
    return code


def encode(features: np.ndarray, fdim: Sequence[int]) -> np.ndarray:
    """Mixed-radix code (first feature most significant) of feature rows [n, L]."""
    code = np.zeros(len(features), dtype=np.int64)
    for feature, d in enumerate(fdim):
        code = code * d + features[:, feature]
    return code


def decode(codes: np.ndarray, fdim: Sequence[int]) -> np.ndarray:
    """Inverse of :func:`encode`: feature rows [n, L] of integer codes."""
    codes = np.asarray(codes, dtype=np.int64)
    out = np.empty((len(codes), len(fdim)), dtype=np.int64)
    for feature in range(len(fdim) - 1, -1, -1):
        out[:, feature] = codes % fdim[feature]
        codes = codes // fdim[feature]
    return out


def pyrimidine_normalise(window: str, ref: str, alt: str) -> tuple[str, str, str, bool]:
    """(window, ref, alt, reverse-complemented?) with the centre base a pyrimidine."""
    if ref in "AG":
        return (window.translate(_COMPLEMENT)[::-1], ref.translate(_COMPLEMENT),
                alt.translate(_COMPLEMENT), True)
    return window, ref, alt, False


# ----------------------------------------------------------------------------- contigs

def contig_resolver(names: Iterable[str]) -> Callable[[str], str | None]:
    """name -> the FASTA's name for it (``chr1`` <-> ``1``, ``chrM`` <-> ``MT``), or None."""
    known = set(names)
    cache: dict[str, str | None] = {}

    def resolve(name: str) -> str | None:
        if name in cache:
            return cache[name]
        bare = name[3:] if name[:3].lower() == "chr" else name
        candidates = [name, bare, "chr" + bare]
        if bare.upper() in ("M", "MT"):
            candidates += ["MT", "chrM", "M", "chrMT"]
        cache[name] = next((c for c in candidates if c in known), None)
        return cache[name]

    return resolve


# ----------------------------------------------------------------------------- annotation

class StrandMap:
    """Per contig, the strand of the first interval (in table order) covering a position."""

    def __init__(self, intervals: dict[str, list[tuple[int, int, int]]]):
        """`intervals`: contig -> [(start0, end0 exclusive, strand +1/-1)] in table order."""
        self._bounds: dict[str, np.ndarray] = {}
        self._strand: dict[str, np.ndarray] = {}
        for contig, rows in intervals.items():
            if not rows:
                continue
            arr = np.asarray(rows, dtype=np.int64)
            bounds = np.unique(np.concatenate([arr[:, 0], arr[:, 1]]))
            lo = np.searchsorted(bounds, arr[:, 0])
            hi = np.searchsorted(bounds, arr[:, 1])
            seg = np.zeros(len(bounds) - 1, dtype=np.int8)
            for i in range(len(arr) - 1, -1, -1):   # earlier rows paint last: they win
                seg[lo[i]:hi[i]] = arr[i, 2]
            self._bounds[contig], self._strand[contig] = bounds, seg

    @property
    def contigs(self) -> list[str]:
        return list(self._bounds)

    def lookup(self, contig: str, pos0: np.ndarray) -> np.ndarray:
        """Strand (+1, -1, 0 = uncovered) at 0-based positions of `contig`."""
        pos0 = np.asarray(pos0, dtype=np.int64)
        out = np.zeros(pos0.shape, dtype=np.int8)
        if contig not in self._bounds:
            return out
        bounds, seg = self._bounds[contig], self._strand[contig]
        idx = np.searchsorted(bounds, pos0, side="right") - 1
        ok = (idx >= 0) & (idx < len(seg))
        out[ok] = seg[idx[ok]]
        return out


def read_annotation(path: str, resolve: Callable[[str], str | None], kind: str) -> StrandMap:
    """Transcript (`kind` = "transcript") or exon ("exon") intervals of a UCSC genePred table
    (refGene, knownGene, with or without the bin column) or a GTF, renamed to the FASTA's
    contigs (others dropped)."""
    if kind not in ("transcript", "exon"):
        raise ValueError(kind)
    intervals: dict[str, list[tuple[int, int, int]]] = {}
    gtf_spans: dict[str, list] = {}     # transcript_id -> [contig, start0, end0, strand]
    saw_gtf_transcript = False
    with open_text(path) as handle:
        for line in handle:
            if not line.strip() or line.startswith("#"):
                continue
            f = line.rstrip("\n").split("\t")
            if len(f) == 9 and f[6] in ("+", "-") and f[3].isdigit():          # GTF, 1-based closed
                contig = resolve(f[0])
                if contig is None:
                    continue
                start0, end0, strand = int(f[3]) - 1, int(f[4]), 1 if f[6] == "+" else -1
                if f[2] == kind:
                    intervals.setdefault(contig, []).append((start0, end0, strand))
                    saw_gtf_transcript |= kind == "transcript"
                elif kind == "transcript" and f[2] == "exon":
                    tid = re.search(r'transcript_id "([^"]+)"', f[8])
                    if tid:
                        span = gtf_spans.setdefault(tid.group(1), [contig, start0, end0, strand])
                        span[1], span[2] = min(span[1], start0), max(span[2], end0)
                continue
            off = 1 if len(f) > 3 and f[3] in ("+", "-") else 0          # genePred (+bin)
            if len(f) < off + 10 or f[off + 2] not in ("+", "-"):
                continue
            contig = resolve(f[off + 1])
            if contig is None:
                continue
            strand = 1 if f[off + 2] == "+" else -1
            if kind == "transcript":
                intervals.setdefault(contig, []).append((int(f[off + 3]), int(f[off + 4]), strand))
            else:
                starts = [int(x) for x in f[off + 8].rstrip(",").split(",") if x]
                ends = [int(x) for x in f[off + 9].rstrip(",").split(",") if x]
                intervals.setdefault(contig, []).extend((s, e, strand) for s, e in zip(starts, ends))
    if kind == "transcript" and not saw_gtf_transcript:          # GTF without transcript rows
        for contig, s, e, strand in gtf_spans.values():
            intervals.setdefault(contig, []).append((s, e, strand))
    return StrandMap(intervals)


def annot_utils_refgene(genome_id: str, roots: Sequence[Path] | None = None) -> str:
    """Path of annot_utils' UCSC refGene table for hg19/hg38/mm10 (installed in .venv-sv)."""
    return str(builtin_table(genome_id, roots))


def resolve_annotation(value: str) -> str:
    """An annotation path, or hg19/hg38/mm10 for annot_utils' refGene table."""
    return annot_utils_refgene(value) if value in BUILTIN_NAMES else value


# ----------------------------------------------------------------------------- input

@dataclass
class Catalog:
    """Mutation counts of a cohort: samples x observed patterns."""

    mode: Mode
    samples: list[str]
    codes: np.ndarray               # [M] pattern codes, increasing
    counts: np.ndarray              # [N, M] int64
    removed: Counter = field(default_factory=Counter)

    @property
    def features(self) -> np.ndarray:
        return decode(self.codes, self.mode.fdim)

    @property
    def mutation_count(self) -> list[int]:
        return [int(x) for x in self.counts.sum(axis=1)]


def read_mutation_positions(path: str) -> Iterator[tuple[str, str, int, str, str]]:
    """Rows (sample, chrom, 1-based pos, ref, alt) of a mutation position format file."""
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            f = line.rstrip("\r\n").split("\t")
            if len(f) < 5 or not line.strip():
                if line.strip():
                    LOG.warning("%s line %d: fewer than 5 fields, skipped", path, number)
                continue
            try:
                pos = int(f[2])
            except ValueError:
                LOG.warning("%s line %d: position %r is not an integer, skipped", path, number, f[2])
                continue
            yield f[0], f[1], pos, f[3].upper(), f[4].upper()


def build_catalog(rows: Iterable[tuple[str, str, int, str, str]], fasta, mode: Mode,
                  transcripts: StrandMap | None = None) -> Catalog:
    """Filter and encode mutations (section 4.2 steps 1-9). `fasta`: a pysam.FastaFile."""
    if mode.trdir and transcripts is None:
        raise ValueError("the strand feature needs a transcript annotation")
    resolve = contig_resolver(fasta.references)
    lengths = dict(zip(fasta.references, fasta.lengths))
    half = mode.num_bases // 2
    removed: Counter = Counter()
    kept: dict[str, list] = {}      # contig -> [(sample, pos0, sub, window, flipped)]
    for sample, chrom, pos, ref, alt in rows:
        contig = resolve(chrom)
        if contig is None:
            removed["contig not in the reference"] += 1
            continue
        pos0 = pos - 1
        if pos0 - half < 0 or pos0 + half >= lengths[contig]:
            removed["window off the contig"] += 1
            continue
        window = fasta.fetch(contig, pos0 - half, pos0 + half + 1).upper()
        if window[half] != ref:
            removed["reference base differs (indels, mismatches)"] += 1
            continue
        if len(alt) != 1 or alt not in BASES:
            removed["alt not one of A, C, G, T"] += 1
            continue
        if any(b not in BASES for b in window):
            removed["window not ACGT"] += 1
            continue
        if ref == alt:
            removed["ref equals alt"] += 1
            continue
        window, ref, alt, flipped = pyrimidine_normalise(window, ref, alt)
        kept.setdefault(contig, []).append((sample, pos0, _SUB_INDEX[(ref, alt)], window, flipped))
    samples_of, feature_rows = [], []
    for contig, items in kept.items():
        if mode.trdir:
            strand = transcripts.lookup(contig, np.array([it[1] for it in items], dtype=np.int64))
        else:
            strand = np.ones(len(items), dtype=np.int8)
        for it, s in zip(items, strand):
            if s == 0:
                removed["no transcript (intergenic)"] += 1
                continue
            on_coding = (s == 1) != it[4]
            samples_of.append(it[0])
            feature_rows.append(pattern_features(it[2], it[3], 0 if on_coding else 1, mode))
    for reason, n in sorted(removed.items()):
        LOG.warning("%d mutations removed: %s", n, reason)
    samples = sorted(set(samples_of))
    if not samples:
        return Catalog(mode, [], np.zeros(0, np.int64), np.zeros((0, 0), np.int64), removed)
    sample_idx = {s: i for i, s in enumerate(samples)}
    rows_n = np.fromiter((sample_idx[s] for s in samples_of), np.int64, len(samples_of))
    codes_all = encode(np.asarray(feature_rows, dtype=np.int64), mode.fdim)
    codes, cols = np.unique(codes_all, return_inverse=True)
    counts = np.zeros((len(samples), len(codes)), dtype=np.int64)
    np.add.at(counts, (rows_n, cols), 1)
    return Catalog(mode, samples, codes, counts, removed)


# ----------------------------------------------------------------------------- background

def build_background(fasta, exons: StrandMap, positions: int = 10_000_000, seed: int = 1,
                     modes: Sequence[Mode] = (IND, Mode("ind", 5, False), FULL),
                     pseudo_count: float = 1.0) -> dict[Mode, np.ndarray]:
    """Background pattern distributions (section 4.5 recipe), one per mode, over all codes."""
    rng = np.random.default_rng(seed)
    width = max(m.num_bases for m in modes)
    half = width // 2
    contigs = [(c, n) for c, n in zip(fasta.references, fasta.lengths) if PRIMARY_CONTIG.match(c)]
    if not contigs:
        raise ValueError("no primary contig (optional chr, then digits, X or Y) in the reference")
    ends = np.cumsum([n for _, n in contigs])
    draw = rng.integers(0, ends[-1], positions)
    alt_shift = rng.integers(1, 4, positions)          # alt = one of the 3 other bases
    which = np.searchsorted(ends, draw, side="right")
    counts = {m: np.zeros(m.n_patterns, dtype=np.float64) for m in modes}
    used = 0
    for ci, (contig, length) in enumerate(contigs):
        sel = np.flatnonzero(which == ci)
        pos0 = draw[sel] - (ends[ci] - length)
        strand = exons.lookup(contig, pos0)
        ok = (strand != 0) & (pos0 - half >= 0) & (pos0 + half < length)
        for p, s, shift in zip(pos0[ok], strand[ok], alt_shift[sel][ok]):
            window = fasta.fetch(contig, int(p) - half, int(p) + half + 1).upper()
            if any(b not in BASES for b in window):
                continue
            ref = window[half]
            alt = BASES[(_BASE_INDEX[ref] + int(shift)) % 4]
            window, ref, alt, flipped = pyrimidine_normalise(window, ref, alt)
            strand_feature = 0 if (s == 1) != flipped else 1
            sub = _SUB_INDEX[(ref, alt)]
            for m in modes:
                cut = (width - m.num_bases) // 2
                feats = pattern_features(sub, window[cut:width - cut], strand_feature, m)
                counts[m][_code(feats, m.fdim)] += 1
            used += 1
    LOG.info("background: %d of %d random positions in exons with an ACGT window", used, positions)
    if used == 0:
        raise ValueError("no random position fell in an exon of the annotation")
    return {m: (c + pseudo_count) / (c + pseudo_count).sum() for m, c in counts.items()}


def _feature_string(code: int, mode: Mode) -> str:
    return ",".join(str(v + 1) for v in decode(np.array([code]), mode.fdim)[0])


def write_background(table: np.ndarray, mode: Mode, path: str) -> None:
    """Upstream's layout: feature string (1-based values, comma-joined) TAB probability."""
    with open(path, "w") as out:
        for code, p in enumerate(table):
            out.write(f"{_feature_string(code, mode)}\t{p:.8f}\n")


def read_background(path: str, mode: Mode) -> np.ndarray:
    """A background table as a distribution over all codes of `mode` (divided by its total)."""
    if os.path.isdir(path):
        path = os.path.join(path, mode.table_name)
    table = np.zeros(mode.n_patterns)
    with open_text(path) as handle:
        for line in handle:
            if line.strip():
                key, value = line.split("\t")[:2]
                table[_code([int(v) - 1 for v in key.split(",")], mode.fdim)] = float(value)
    return table / table.sum()


# ----------------------------------------------------------------------------- model

@dataclass
class Params:
    """F: one [S, M_l] array per feature (S variable signatures); Q: [N, K] memberships."""

    F: list[np.ndarray]
    Q: np.ndarray

    def flat(self) -> np.ndarray:
        return np.concatenate([f.ravel() for f in self.F] + [self.Q.ravel()])

    @classmethod
    def from_flat(cls, x: np.ndarray, like: "Params") -> "Params":
        F, at = [], 0
        for f in like.F:
            F.append(x[at:at + f.size].reshape(f.shape))
            at += f.size
        return cls(F, x[at:].reshape(like.Q.shape))


@dataclass
class Model:
    """What stays fixed while fitting: counts, pattern features, background column."""

    counts: np.ndarray | object     # [N, M] dense float or scipy.sparse CSR
    features: np.ndarray            # [M, L] 0-based values
    fdim: tuple[int, ...]
    background: np.ndarray | None   # [M] b(m) of the observed patterns, or None

    def __post_init__(self):
        self.indicators = [np.eye(d)[self.features[:, feature]] for feature, d in enumerate(self.fdim)]
        self.sparse = hasattr(self.counts, "tocsr")
        if self.sparse:
            self.counts = self.counts.tocsr().astype(np.float64)
            self._rows = np.repeat(np.arange(self.counts.shape[0]), np.diff(self.counts.indptr))
            self._cols = self.counts.indices
        else:
            self.counts = np.asarray(self.counts, dtype=np.float64)
            self._mask = self.counts > 0
            self._n_cells = int(self._mask.sum())

    def pattern_probabilities(self, F: list[np.ndarray]) -> np.ndarray:
        """P [M, K]: prod_l f_{k,l}(m_l) per variable signature, then the background column."""
        P = np.ones((self.features.shape[0], F[0].shape[0]))
        for feature, f in enumerate(F):
            P *= f.T[self.features[:, feature]]
        return P if self.background is None else np.column_stack([P, self.background])

    def loglik(self, params: Params) -> float:
        return self._pass(params.Q, self.pattern_probabilities(params.F), weights=False)[0]

    def _pass(self, Q: np.ndarray, P: np.ndarray, weights: bool = True, want_ll: bool = True):
        """One pass over the counts with R = Q P^T and W = g / R (0 where R <= 1e-8):
        (LL or None, W P [N, K], W^T Q [M, K], the counted cells with R <= 1e-8 as
        (rows, cols, g) or None)."""
        if self.sparse:
            import scipy.sparse as sp
            g, rows, cols = self.counts.data, self._rows, self._cols
            R = np.einsum("ik,ik->i", Q[rows], P[cols])
            ll = float(np.einsum("i,i->", g, np.log(np.where(R > LL_FLOOR, R, 1.0)))) if want_ll else None
            if not weights:
                return ll, None, None, None
            ok = R > E_STEP_FLOOR
            w = np.where(ok, g / np.where(ok, R, 1.0), 0.0)
            W = sp.csr_matrix((w, self.counts.indices, self.counts.indptr), shape=self.counts.shape)
            bad = (rows[~ok], cols[~ok], g[~ok]) if not ok.all() else None
            return ll, W @ P, W.T @ Q, bad
        # dense: blocks of DENSE_BLOCK samples, so R and W stay in cache (2x faster than whole
        # arrays); whole-block ufuncs unless a mixture vanishes (masked ufuncs are ~6x slower);
        # sums by einsum, not BLAS dot (slow when threads contend)
        G = self.counts
        N, M = G.shape
        PT = np.ascontiguousarray(P.T)
        ll = 0.0
        WP = np.empty((N, Q.shape[1])) if weights else None
        WtQ = np.zeros((M, Q.shape[1])) if weights else None
        bad = []
        for s in range(0, N, DENSE_BLOCK):
            Gb, Qb = G[s:s + DENSE_BLOCK], Q[s:s + DENSE_BLOCK]
            Rb = Qb @ PT
            if Rb.min() > E_STEP_FLOOR:
                if want_ll:
                    ll += float(np.einsum("ij,ij->", Gb, np.log(Rb)))
                if weights:
                    np.divide(Gb, Rb, out=Rb)
            else:
                mask = self._mask[s:s + DENSE_BLOCK]
                if want_ll:
                    logs = np.log(Rb, out=np.zeros_like(Rb), where=mask & (Rb > LL_FLOOR))
                    ll += float(np.einsum("ij,ij->", Gb, logs))
                if weights:
                    ok = mask & (Rb > E_STEP_FLOOR)
                    r, c = np.nonzero(mask & ~ok)
                    bad.append((r + s, c, Gb[r, c]))
                    np.divide(Gb, Rb, out=Rb, where=ok)
                    Rb[~ok] = 0.0
            if weights:
                WP[s:s + DENSE_BLOCK] = Rb @ P
                WtQ += Rb.T @ Qb
        if bad:
            bad = tuple(np.concatenate(parts) for parts in zip(*bad))
        return (ll if want_ll else None), WP, WtQ, (bad or None)

    def em_step(self, params: Params, want_ll: bool = True) -> tuple[Params, float | None]:
        """One fused E+M step; returns the new parameters and the LL of `params` (or None)."""
        Q = params.Q
        P = self.pattern_probabilities(params.F)
        K = Q.shape[1]
        ll, WP, WtQ, bad = self._pass(Q, P, want_ll=want_ll)
        newQ = Q * WP                     # sum_m g theta per (n, k)
        expected = P * WtQ                # sum_n g theta per (m, k)
        if bad is not None:               # theta = 1/K where the mixture vanishes
            rows, cols, g = bad
            np.add.at(newQ, rows, (g / K)[:, None])
            np.add.at(expected, cols, (g / K)[:, None])
        S = params.F[0].shape[0]
        F = [_normalise((ind.T @ expected[:, :S]).T) for ind in self.indicators]
        return Params(F, _normalise(newQ)), ll


def _normalise(x: np.ndarray) -> np.ndarray:
    """Rows divided by their sums (a zero row stays zero)."""
    total = x.sum(axis=1, keepdims=True)
    return np.divide(x, total, out=np.zeros_like(x), where=total > 0)


def responsibilities(Q: np.ndarray, P: np.ndarray) -> np.ndarray:
    """theta [N, M, K] of the E-step (explicit form; the fit uses the fused step)."""
    joint = Q[:, None, :] * P[None, :, :]
    total = joint.sum(axis=2, keepdims=True)
    K = Q.shape[1]
    return np.where(total > E_STEP_FLOOR, joint / np.where(total > E_STEP_FLOOR, total, 1), 1.0 / K)


def m_step(counts: np.ndarray, theta: np.ndarray, features: np.ndarray, fdim: Sequence[int],
           n_variable: int) -> Params:
    """The M-step from explicit theta (dense counts [N, M]); mirrors PAPER eqs. (3)-(4)."""
    weighted = counts[:, :, None] * theta                        # g theta [N, M, K]
    Q = _normalise(weighted.sum(axis=1))
    per_pattern = weighted.sum(axis=0)[:, :n_variable]            # [M, S]
    F = []
    for feature, d in enumerate(fdim):
        f = np.zeros((n_variable, d))
        for v in range(d):
            f[:, v] = per_pattern[features[:, feature] == v].sum(axis=0)
        F.append(_normalise(f))
    return Params(F, Q)


def random_start(rng: np.random.Generator, n_samples: int, n_signatures: int,
                 fdim: Sequence[int], background: bool) -> Params:
    """Every f_{k,l} and q_n an i.i.d. Gamma(1, 1) draw, normalised (a uniform Dirichlet)."""
    S = n_signatures - (1 if background else 0)
    F = [_normalise(rng.gamma(1.0, 1.0, (S, d))) for d in fdim]
    Q = _normalise(rng.gamma(1.0, 1.0, (n_samples, n_signatures)))
    return Params(F, Q)


@dataclass
class FitResult:
    params: Params
    loglik: float
    iterations: int
    converged: bool
    trial_logliks: list[float] = field(default_factory=list)


def run_em(model: Model, start: Params, tol: float = TOL, max_iter: int = MAX_ITER,
           accelerate: bool = True, trace: list | None = None) -> FitResult:
    """Plain EM or SQUAREM from `start` until |LL - LL_prev| < tol."""
    if not accelerate:
        params, prev = start, None
        for it in range(1, max_iter + 1):
            new, ll = model.em_step(params)
            if trace is not None:
                trace.append(ll)
            if prev is not None and abs(ll - prev) < tol:
                return FitResult(params, ll, it, True)
            params, prev = new, ll
        return FitResult(params, model.loglik(params), max_iter, False)
    step_min, step_max, mstep = 1.0, 1.0, 4.0
    p = start
    p1, prev = model.em_step(p)
    for it in range(1, max_iter + 1):
        p2, _ = model.em_step(p1, want_ll=False)
        x, x1, x2 = p.flat(), p1.flat(), p2.flat()
        r = x1 - x
        v = (x2 - x1) - r
        vv = float(v @ v)
        alpha = math.sqrt(float(r @ r) / vv) if vv > 0 else 1.0       # SqS3 step length
        alpha = min(max(alpha, step_min), step_max)
        candidate = Params.from_flat(x + 2 * alpha * r + alpha * alpha * v, p)
        flat = candidate.flat()
        rejected = not (np.isfinite(flat).all() and (flat >= 0).all())     # out of bounds
        if not rejected:
            if abs(alpha - 1.0) > 0.01:
                candidate, _ = model.em_step(candidate, want_ll=False)     # stabilising EM step
            following, ll = model.em_step(candidate)     # LL(candidate) and the next p1
            rejected = not math.isfinite(ll) or ll < prev - 1.0
        if rejected:
            candidate = p2
            following, ll = model.em_step(p2)
            if alpha == step_max:
                step_max = max(1.0, step_max / mstep)
        elif alpha == step_max:
            step_max *= mstep
        if trace is not None:
            trace.append(ll)
        p, p1 = candidate, following
        if abs(ll - prev) < tol:
            return FitResult(p, ll, it, True)
        prev = ll
    return FitResult(p, prev, max_iter, False)


def trial_starts(seed: int, trials: int, n_samples: int, n_signatures: int,
                 fdim: Sequence[int], background: bool) -> list[Params]:
    """The random start of each trial, each from its own stream of `seed` (so a trial's start
    does not depend on how many trials run or where)."""
    streams = np.random.SeedSequence(seed).spawn(trials)
    return [random_start(np.random.default_rng(s), n_samples, n_signatures, fdim, background)
            for s in streams]


_POOL_MODEL: Model | None = None


def _pool_trial(job):
    start, tol, max_iter, accelerate = job
    return run_em(_POOL_MODEL, start, tol, max_iter, accelerate)


def fit(model: Model, n_signatures: int, trials: int = TRIALNUM, seed: int = 1,
        tol: float = TOL, max_iter: int = MAX_ITER, accelerate: bool = True,
        processes: int = 1) -> FitResult:
    """Best of `trials` seeded random starts (a strictly greater final LL wins, so the first
    on ties); the trials run in `processes` forked processes (same result for any number)."""
    starts = trial_starts(seed, trials, model.counts.shape[0], n_signatures, model.fdim,
                          model.background is not None)
    jobs = [(start, tol, max_iter, accelerate) for start in starts]
    if processes > 1 and trials > 1:
        import multiprocessing
        global _POOL_MODEL
        _POOL_MODEL = model
        try:
            with multiprocessing.get_context("fork").Pool(min(processes, trials)) as pool:
                results = pool.map(_pool_trial, jobs, chunksize=1)
        finally:
            _POOL_MODEL = None
    else:
        results = [run_em(model, *job) for job in jobs]
    best = None
    for trial, result in enumerate(results):
        LOG.info("trial %d: LL %.4f after %d iterations%s", trial + 1, result.loglik,
                 result.iterations, "" if result.converged else " (max_iter reached)")
        if best is None or result.loglik > best.loglik:
            best = result
    best.trial_logliks = [r.loglik for r in results]
    return best


def model_for(catalog: Catalog, background: np.ndarray | None) -> Model:
    """The Model of a catalog: dense counts unless under 20% of the cells are nonzero."""
    counts = catalog.counts
    if counts.size and np.count_nonzero(counts) < 0.2 * counts.size:
        import scipy.sparse as sp
        counts = sp.csr_matrix(counts)
    bg = None
    if background is not None:
        bg = background[catalog.codes]
        if (bg <= 0).any():
            raise ValueError(f"{int((bg <= 0).sum())} observed patterns missing from the background")
    return Model(counts, catalog.features, catalog.mode.fdim, bg)


# ----------------------------------------------------------------------------- JSON

def _trunc(x: float, digits: int):
    """Truncated toward zero to `digits` decimals; integral values as ints (R's printing)."""
    scale = 10 ** digits
    v = math.floor(float(x) * scale) / scale if x >= 0 else math.ceil(float(x) * scale) / scale
    return int(v) if v == int(v) else v


def result_json(catalog: Catalog, result: FitResult) -> dict:
    """paplot's layout (section 4.6) for the ind or full mode."""
    mode, F, Q = catalog.mode, result.params.F, result.params.Q
    digits = 3 if mode.kind == "ind" else 4
    S = F[0].shape[0]
    out: dict = {"id": list(catalog.samples)}
    if mode.kind == "ind":
        if mode.num_bases != 5:
            raise ValueError("paplot's ind layout has 5 reference rows (num_bases 5)")
        ref, alt, strand = [], [], []
        for s in range(S):
            sub = F[0][s]
            flanks = [[_trunc(x, digits) for x in F[feature][s]] for feature in range(1, 5)]
            centre = [0, _trunc(sub[0] + sub[1] + sub[2], digits), 0,
                      _trunc(sub[3] + sub[4] + sub[5], digits)]
            ref.append(flanks[:2] + [centre] + flanks[2:])
            t = [_trunc(x, digits) for x in sub]
            alt.append([[0, 0, 0, 0], [t[0], 0, t[1], t[2]], [0, 0, 0, 0], [t[3], t[4], t[5], 0]])
            strand.append([_trunc(x, digits) for x in F[5][s]] if mode.trdir else [])
        out.update(ref=ref, alt=alt, strand=strand)
    else:
        if mode.trdir or mode.num_bases != 3:
            raise ValueError("paplot's signature layout is the 96 features of num_bases 3")
        out["signature"] = [[[_trunc(x, digits) for x in F[0][s][16 * b:16 * b + 16]]
                             for b in range(6)] for s in range(S)]
    out["mutation"] = [[i, j, _trunc(Q[i, j], digits)]
                       for i in range(Q.shape[0]) for j in range(Q.shape[1])]
    out["mutation_count"] = catalog.mutation_count
    return out


def empty_json(mode: Mode) -> dict:
    """Genomon's JSON for a cohort it could not fit."""
    return dict(EMPTY_IND if mode.kind == "ind" else EMPTY_FULL)


def write_json(obj: dict, path: str) -> None:
    text = json.dumps(obj, separators=(",", ":"))
    if path == "-":
        sys.stdout.write(text + "\n")
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as out:
        out.write(text)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- CLI

def _flag(value: str) -> bool:
    if value.upper() in ("T", "TRUE", "1", "YES"):
        return True
    if value.upper() in ("F", "FALSE", "0", "NO"):
        return False
    raise argparse.ArgumentTypeError(f"expected T or F, got {value!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pmsignature", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=tool_version("pmsignature"))
    parser.add_argument("--debug", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    bg = sub.add_parser("background", help="build the background tables of a reference + annotation")
    bg.add_argument("-r", "--reference", required=True, help="indexed FASTA")
    bg.add_argument("-a", "--annotation", default="hg19",
                    help="UCSC genePred table (refGene/knownGene, .gz ok) or GTF; or hg19/hg38/mm10 "
                         "for annot_utils' refGene table (default hg19)")
    bg.add_argument("-o", "--output_dir", required=True)
    bg.add_argument("--positions", type=int, default=10_000_000,
                    help="random genome positions drawn (default 1e7)")
    bg.add_argument("--seed", type=int, default=1)

    ft = sub.add_parser("fit", help="fit one K and write paplot's JSON")
    ft.add_argument("-i", "--input", required=True, help="mutation position format (mutation.cut.txt)")
    ft.add_argument("-o", "--output", required=True, help="JSON (pmsignature.ind.result.{K}.json)")
    ft.add_argument("-r", "--reference", required=True, help="indexed FASTA")
    ft.add_argument("-a", "--annotation", default="hg19",
                    help="transcripts for the strand feature (as for background; default hg19)")
    ft.add_argument("-b", "--background", help="directory of `background` (or one table file)")
    ft.add_argument("-K", "--signum", type=int, required=True,
                    help="number of signatures, the background included when --bgflag T")
    ft.add_argument("--full", action="store_true",
                    help="Genomon's full mode: 96 features (num_bases 3), no strand")
    ft.add_argument("--trdirflag", type=_flag, default=None,
                    help="strand feature T/F (default T for ind, F for full)")
    ft.add_argument("--bgflag", type=_flag, default=True, help="background signature T/F (default T)")
    ft.add_argument("--trialnum", type=int, default=TRIALNUM)
    ft.add_argument("--seed", type=int, default=1)
    ft.add_argument("--tol", type=float, default=TOL)
    ft.add_argument("--max_iter", type=int, default=MAX_ITER)
    ft.add_argument("--em", choices=("squarem", "plain"), default="squarem")
    ft.add_argument("-t", "--threads", type=int, default=1,
                    help="trials run in this many processes (the result does not change)")
    return parser


def run_background(args) -> int:
    import pysam
    annotation = resolve_annotation(args.annotation)
    with pysam.FastaFile(args.reference) as fasta:
        exons = read_annotation(annotation, contig_resolver(fasta.references), "exon")
        primary = [c for c in fasta.references if PRIMARY_CONTIG.match(c)]
        if not set(exons.contigs) & set(primary):
            raise SystemExit(
                f"pmsignature background: the annotation {annotation} has no exon on the reference's "
                f"chromosomes ({', '.join(primary[:5]) or 'none named 1-22, X or Y'}"
                f"{', ...' if len(primary) > 5 else ''}): it must be a UCSC genePred table or a GTF of "
                "this reference (contig names with or without chr); set pmsignature.annotation")
        try:
            tables = build_background(fasta, exons, args.positions, args.seed)
        except ValueError as error:
            raise SystemExit(f"pmsignature background ({annotation}): {error}") from None
    os.makedirs(args.output_dir, exist_ok=True)
    for mode, table in tables.items():
        write_background(table, mode, os.path.join(args.output_dir, mode.table_name))
    return 0


def run_fit(args) -> int:
    import pysam
    trdir = args.trdirflag if args.trdirflag is not None else not args.full
    if args.full and trdir:
        raise SystemExit("pmsignature: --full has no strand feature (paplot's 96-feature layout)")
    mode = FULL if args.full else Mode("ind", 5, trdir)
    min_k = 2 if args.bgflag else 1
    if args.signum < min_k:
        raise SystemExit(f"pmsignature: --signum must be >= {min_k}"
                         + (" (it counts the background)" if args.bgflag else ""))
    if args.bgflag and not args.background:
        raise SystemExit("pmsignature: --bgflag T needs --background (see the background command)")
    with pysam.FastaFile(args.reference) as fasta:
        transcripts = None
        if mode.trdir:
            transcripts = read_annotation(resolve_annotation(args.annotation),
                                          contig_resolver(fasta.references), "transcript")
        catalog = build_catalog(read_mutation_positions(args.input), fasta, mode, transcripts)
    total = int(catalog.counts.sum())
    if total < args.signum:
        LOG.warning("%d mutations left after the filters, fewer than K = %d: writing the empty "
                    "JSON", total, args.signum)
        write_json(empty_json(mode), args.output)
        return 0
    if total < MUTATIONS_PER_SIGNATURE * args.signum:
        LOG.warning("K = %d signatures from %d mutations (fewer than %d a signature): the fit is "
                    "likely degenerate, its signatures splitting or repeating others; a smaller "
                    "signum_max says as much at less cost", args.signum, total, MUTATIONS_PER_SIGNATURE)
    background = read_background(args.background, mode) if args.bgflag else None
    model = model_for(catalog, background)
    result = fit(model, args.signum, args.trialnum, args.seed, args.tol, args.max_iter,
                 accelerate=args.em == "squarem", processes=args.threads)
    LOG.info("K = %d: best LL %.4f of %d trials", args.signum, result.loglik, args.trialnum)
    write_json(result_json(catalog, result), args.output)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(name)s: %(message)s")
    return run_background(args) if args.command == "background" else run_fit(args)


if __name__ == "__main__":
    sys.exit(main())
