"""Beta-binomial math for the EBFilter (EBCall) score.

Everything here is pure and works on numpy arrays:

* :func:`log_pmf` / :func:`upper_tail` -- the beta-binomial distribution;
* :func:`fit_panel` -- the penalised maximum-likelihood fit of (alpha, beta) to a panel
  of normals (one strand of one site), as described by Shiraishi et al. (NAR 2013):
  maximise ``sum_i log BB(k_i | n_i, a, b) - 0.5 * log(a + b)`` under
  ``a in [0.1, 1e7]``, ``b in [1, 1e7]`` from the start ``(20, 20)`` with L-BFGS-B;
* :func:`fisher_combine` -- Fisher's method for the two strands;
* :func:`eb_score` / :func:`format_score` -- the -log10 score with EBFilter's clamps
  and its printed form.

Deliberate difference from upstream Genomon (docs/differences.md): the fit uses the analytic
gradient and tight tolerances (upstream: a numerical gradient), so a score may move in its last
decimals where upstream's optimiser stops early.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from genomon_smk.tools.scipy_parts import function

# scipy.special's betaln, gammaln and digamma (= psi) are these ufuncs (tests/test_ebfilter.py).
betaln = function("scipy.special", "_special_ufuncs", "betaln")
gammaln = function("scipy.special", "_special_ufuncs", "gammaln")
digamma = function("scipy.special", "_ufuncs", "psi", "digamma")

ALPHA_BOUNDS = (0.1, 1e7)
BETA_BOUNDS = (1.0, 1e7)
START = (20.0, 20.0)
PENALTY = 0.5
#: parameters used without fitting when no control carries the variant (EBCall's shortcut;
#: only used when explicitly requested, see :func:`fit_panel`).
ALL_ZERO_PARAMS = (0.1, 1.0)

SCORE_MAX = 60
P_FLOOR = 1e-60
P_CEIL = 1.0 - 1e-10


def log_pmf(k, n, alpha, beta):
    """log P(X = k) for X ~ BetaBinomial(n, alpha, beta), broadcasting over all arguments."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    log_choose = gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
    return log_choose + betaln(k + alpha, n - k + beta) - betaln(alpha, beta)


def upper_tail(k, n, alpha, beta):
    """P(X >= k) for X ~ BetaBinomial(n, alpha, beta), elementwise over equal-shaped arrays.

    The tail is the explicit sum of the pmf over k..n (not 1 - cdf), so tiny p-values
    keep full relative precision. ``k <= 0`` gives exactly 1.
    """
    k, n, alpha, beta = np.broadcast_arrays(
        np.asarray(k, dtype=np.int64), np.asarray(n, dtype=np.int64),
        np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float))
    shape = k.shape
    k, n, alpha, beta = (x.ravel() for x in (k, n, alpha, beta))
    if np.any(k > n):
        raise ValueError("alt count larger than depth")
    result = np.ones(k.shape, dtype=float)
    todo = np.flatnonzero(k > 0)
    if todo.size:
        lengths = n[todo] - k[todo] + 1
        # flatten every j in k..n of every site into one vector, then sum back per site
        owner = np.repeat(np.arange(todo.size), lengths)
        starts = np.cumsum(lengths) - lengths
        j = k[todo][owner] + (np.arange(owner.size) - starts[owner])
        terms = np.exp(log_pmf(j, n[todo][owner], alpha[todo][owner], beta[todo][owner]))
        result[todo] = np.minimum(np.add.reduceat(terms, starts), 1.0)
    return result.reshape(shape)


def penalised_loglik(params, n, k, penalty=PENALTY):
    """Objective of the panel fit: sum_i log BB(k_i|n_i,a,b) - penalty*log(a+b)."""
    a, b = params
    return float(np.sum(log_pmf(k, n, a, b)) - penalty * np.log(a + b))


def _negative_objective_and_gradient(params, n, k, penalty):
    """-(penalised log-likelihood) and its analytic gradient (binomial constants dropped)."""
    a, b = params
    loglik = np.sum(betaln(k + a, n - k + b)) - n.size * betaln(a, b) - penalty * np.log(a + b)
    psi_all = digamma(n + a + b)
    psi_ab = digamma(a + b)
    d_a = np.sum(digamma(k + a) - psi_all) - n.size * (digamma(a) - psi_ab) - penalty / (a + b)
    d_b = np.sum(digamma(n - k + b) - psi_all) - n.size * (digamma(b) - psi_ab) - penalty / (a + b)
    return -loglik, -np.array([d_a, d_b])


@lru_cache(maxsize=65536)
def _fit_cached(pairs, penalty):
    """Fit for a canonical (sorted) tuple of (n, k) pairs; the likelihood ignores order."""
    # Imported at the first fit: scipy.optimize takes ~0.2-0.6 s to import, which a region
    # without a candidate to score (EBFilter runs in the identify driver's process) never needs;
    # scipy.optimize.minimize itself, from its module (see tools/scipy_parts.py).
    minimize = function("scipy.optimize", "_minimize", "minimize")

    arr = np.array(pairs, dtype=float).reshape(-1, 2)
    n, k = arr[:, 0], arr[:, 1]
    result = minimize(_negative_objective_and_gradient, np.array(START), args=(n, k, penalty),
                      jac=True, method="L-BFGS-B", bounds=[ALPHA_BOUNDS, BETA_BOUNDS],
                      options={"ftol": 1e-12, "gtol": 1e-8, "maxiter": 1000})
    a, b = result.x
    return float(a), float(b)


def fit_panel(depths, alts, penalty=PENALTY, skip_all_zero=False):
    """Penalised ML estimate (alpha, beta) for one strand of one site from the panel counts.

    ``depths``/``alts`` are the M controls' depth and alt counts on that strand. The
    optimiser is L-BFGS-B with the analytic gradient, started at (20, 20) inside the box
    alpha in [0.1, 1e7], beta in [1, 1e7]. With ``skip_all_zero`` a panel without any alt
    read returns EBCall's shortcut :data:`ALL_ZERO_PARAMS` instead of being fitted.
    """
    depths = np.asarray(depths, dtype=np.int64)
    alts = np.asarray(alts, dtype=np.int64)
    if depths.shape != alts.shape or depths.ndim != 1 or depths.size == 0:
        raise ValueError("depths and alts must be equal-length non-empty 1-D arrays")
    if np.any(alts > depths) or np.any(alts < 0):
        raise ValueError("need 0 <= alt <= depth for every control")
    if skip_all_zero and not np.any(alts):
        return ALL_ZERO_PARAMS
    pairs = tuple(sorted(zip(depths.tolist(), alts.tolist())))
    return _fit_cached(tuple(x for pair in pairs for x in pair), float(penalty))


def fisher_combine(p_values):
    """Fisher's combination of the per-strand p-values along the last axis.

    Equals ``1 - chi2(2m).cdf(-2 sum ln p)``; for two p-values that is ``q (1 - ln q)``
    with ``q = p1 p2``. Any p-value of 0 gives 0.
    """
    p = np.asarray(p_values, dtype=float)
    m = p.shape[-1]
    with np.errstate(divide="ignore"):
        log_q = np.sum(np.log(p), axis=-1)
    # sf of chi2 with 2m dof at x = -2 log q: q * sum_{i<m} (-log q)^i / i!
    x = -log_q
    series = np.zeros_like(x)
    term = np.ones_like(x)
    for i in range(m):
        if i:
            term = term * x / i
        series = series + term
    with np.errstate(invalid="ignore"):
        combined = np.exp(log_q) * series
    return np.where(np.any(p == 0.0, axis=-1), 0.0, np.minimum(combined, 1.0))


def eb_score(p):
    """EBFilter score from a combined p-value: -log10 p rounded to 3 decimals.

    p < 1e-60 gives the int 60 and p > 1 - 1e-10 the int 0 (printed as ``60`` / ``0``).
    """
    p = float(p)
    if p < P_FLOOR:
        return SCORE_MAX
    if p > P_CEIL:
        return 0
    return round(-math.log10(p), 3)


def format_score(score):
    """Printed form of a score (Python ``str``: ``2.78``, ``0``, ``60``; ``.`` for None)."""
    return "." if score is None else str(score)


def site_score(tumor_counts, panel_params):
    """EB score of one site from tumor (n+, k+, n-, k-) and ((a+, b+), (a-, b-))."""
    n_plus, k_plus, n_minus, k_minus = tumor_counts
    (a_plus, b_plus), (a_minus, b_minus) = panel_params
    p = upper_tail([k_plus, k_minus], [n_plus, n_minus], [a_plus, a_minus], [b_plus, b_minus])
    return eb_score(fisher_combine(p))
