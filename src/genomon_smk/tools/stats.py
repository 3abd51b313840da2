"""Shared statistics of the clean-room mutation tools (fisher, mutfilter realignment).

One implementation each of the two-sided Fisher's exact test, its clamped −log10 score and
the Beta posterior summary of an allele frequency (facts: genomon-tools-spec.md sections 2
and 3). Values are returned as floats; each tool formats them itself.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from genomon_smk.tools.scipy_parts import function

SCORE_MAX = 60.0  # -log10 p is clamped here (p < 1e-60)


@functools.lru_cache(maxsize=1 << 16)
def fisher_exact_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher's exact p for the table [[a, b], [c, d]] (scipy's definition).

    p = sum of the hypergeometric probabilities of all tables with the same margins that are
    no more probable than the observed one. The probabilities are built from the ratio
    recurrence P(x+1)/P(x) in log space and normalised by their own sum, which keeps relative
    precision far better than differences of large log-gamma values.
    """
    row1, row2, col1 = a + b, c + d, a + c
    col2 = b + d
    if row1 == 0 or row2 == 0 or col1 == 0 or col2 == 0:
        return 1.0
    low, high = max(0, col1 - row2), min(row1, col1)
    if low == high:
        return 1.0
    x = np.arange(low, high, dtype=np.float64)
    log_ratio = (np.log((row1 - x) * (col1 - x)) - np.log((x + 1.0) * (row2 - col1 + x + 1.0)))
    log_pmf = np.concatenate(([0.0], np.cumsum(log_ratio)))
    log_pmf -= log_pmf.max()
    observed = log_pmf[a - low]
    weights = np.exp(log_pmf)
    # Relative tolerance for "as probable as observed" (ties by symmetry must be included).
    as_extreme = log_pmf <= observed + 1e-7
    p_value = weights[as_extreme].sum() / weights.sum()
    return min(float(p_value), 1.0)


def fisher_score(a: int, b: int, c: int, d: int) -> float:
    """−log10 of the two-sided Fisher p of [[a, b], [c, d]], clamped: p < 1e-60 → 60,
    p > 1 − 1e-10 → 0 (upstream's clamps). Negative counts are treated as 0."""
    p_value = fisher_exact_two_sided(max(a, 0), max(b, 0), max(c, 0), max(d, 0))
    if p_value < 1e-60:
        return SCORE_MAX
    if p_value > 1.0 - 1e-10:
        return 0.0
    return -math.log10(p_value)


def beta_posterior(variant: int, reference: int) -> tuple[float, float, float]:
    """10% quantile, mean and 90% quantile of Beta(variant+1, reference+1).

    That is the allele-frequency posterior under a uniform prior; a negative reference
    count is treated as 0.
    """
    # scipy.special costs 0.2-0.4 s to import; only tumor-only calls need it, so import it here,
    # its ufunc from its module (scipy.special.betaincinv is this object; tools/scipy_parts.py).
    betaincinv = function("scipy.special", "_ufuncs", "betaincinv")

    alpha, beta = variant + 1.0, max(reference, 0) + 1.0
    return (float(betaincinv(alpha, beta, 0.1)), alpha / (alpha + beta),
            float(betaincinv(alpha, beta, 0.9)))
