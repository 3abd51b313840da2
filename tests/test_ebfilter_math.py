"""EB (beta-binomial) math of EBFilter: EBCall's published vectors, fit quality and recovery."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import betabinom, chi2

from genomon_smk.tools import betabinom as bb

# EBCall's published test result (spec section 6): site, tumor (n+, k+, n-, k-),
# (alpha+, beta+), (alpha-, beta-), -log10 p(+), -log10 p(-), EB score.
EBCALL_VECTORS = [
    (397665, (11, 3, 28, 6), (0.366887, 8.960514), (1.242720, 63.275075), 1.371709, 3.047918, 3.371319),
    (562012, (14, 5, 6, 1), (0.531679, 28.581737), (0.100000, 9.097393), 3.149837, 1.289867, 3.389603),
    (824202, (8, 0, 21, 7), (0.100000, 11.293294), (0.582105, 23.874900), 0.000000, 3.026644, 2.125234),
    (1013896, (33, 7, 11, 2), (1.302497, 43.790620), (0.761729, 27.125223), 2.491142, 1.258280, 2.765644),
    (1081746, (22, 7, 29, 10), (0.527968, 16.765725), (0.712890, 47.635810), 2.417204, 5.060054, 6.216781),
    (1277322, (29, 9, 1, 0), (0.236374, 20.537439), (0.100000, 1.056020), 3.414058, 0.000000, 2.466568),
    (2418116, (9, 6, 31, 10), (0.100000, 4.130562), (1.989959, 77.836352), 2.607994, 5.075754, 6.412081),
    (3680752, (23, 10, 0, 0), (0.100000, 10.897412), (0.100000, 1.684341), 3.517326, 0.000000, 2.558335),
    (5012707, (22, 7, 24, 12), (0.100000, 6.425953), (0.183170, 12.840986), 2.137191, 4.045476, 4.999793),
    (5221726, (25, 7, 27, 8), (2.853154, 100.726027), (1.527404, 58.698371), 3.926170, 3.894360, 6.541607),
]
IDS = [str(v[0]) for v in EBCALL_VECTORS]


def strand_arrays(vector):
    """(k, n, alpha, beta) arrays over the two strands of one EBCall vector."""
    _, (n_p, k_p, n_m, k_m), (a_p, b_p), (a_m, b_m), *_ = vector
    return np.array([k_p, k_m]), np.array([n_p, n_m]), np.array([a_p, a_m]), np.array([b_p, b_m])


# --- (1) EBCall's published vectors -------------------------------------------------------

@pytest.mark.parametrize("vector", EBCALL_VECTORS, ids=IDS)
def test_ebcall_vectors_per_strand_and_combined(vector):
    k, n, a, b = strand_arrays(vector)
    minus_log10_p = -np.log10(bb.upper_tail(k, n, a, b))
    assert minus_log10_p == pytest.approx([vector[4], vector[5]], abs=1e-4)
    combined = bb.fisher_combine(bb.upper_tail(k, n, a, b))
    assert -math.log10(combined) == pytest.approx(vector[6], abs=1e-4)
    # the printed score is that value rounded to 3 decimals
    assert bb.site_score(vector[1], (vector[2], vector[3])) == round(vector[6], 3)


def test_upper_tail_matches_scipy_and_is_vectorised():
    rng = np.random.default_rng(3)
    n = rng.integers(0, 80, 200)
    k = (rng.random(200) * (n + 1)).astype(int)
    a = rng.uniform(0.1, 5, 200)
    b = rng.uniform(1, 100, 200)
    ours = bb.upper_tail(k, n, a, b)
    # reference: scipy's pmf summed term by term (scipy's own sf is 1 - cdf, imprecise below ~1e-12)
    reference = np.array([betabinom.pmf(np.arange(ki, ni + 1), ni, ai, bi).sum()
                          for ki, ni, ai, bi in zip(k, n, a, b)])
    np.testing.assert_allclose(ours, reference, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(bb.log_pmf(k, n, a, b), betabinom.logpmf(k, n, a, b), rtol=1e-9)
    # a single element gives the same as in the batch
    assert bb.upper_tail(k[5], n[5], a[5], b[5]) == pytest.approx(ours[5], rel=1e-12)


def test_upper_tail_keeps_relative_precision_for_tiny_p():
    p = bb.upper_tail(100, 100, 0.1, 1e4)
    expected = math.exp(betabinom.logpmf(100, 100, 0.1, 1e4))
    assert 0 < p < 1e-200
    assert p == pytest.approx(expected, rel=1e-8)


def test_fisher_combine_equals_chi2_and_closed_form():
    rng = np.random.default_rng(5)
    p = rng.uniform(1e-12, 1, size=(50, 2))
    q = p[:, 0] * p[:, 1]
    np.testing.assert_allclose(bb.fisher_combine(p), q * (1 - np.log(q)), rtol=1e-12)
    np.testing.assert_allclose(bb.fisher_combine(p), chi2.sf(-2 * np.log(q), 4), rtol=1e-9)
    assert bb.fisher_combine([0.0, 0.5]) == 0.0
    assert bb.fisher_combine([1.0, 1.0]) == 1.0


@pytest.mark.parametrize("p, printed", [
    (1.0, "0"), (1 - 1e-12, "0"), (1e-61, "60"), (0.0, "60"), (10 ** -2.78, "2.78"),
    (10 ** -4.0004, "4.0"), (0.999, "0.0"), (10 ** -59.9999, "60.0"), (10 ** -12.34567, "12.346"),
])
def test_score_clamps_and_printing(p, printed):
    assert bb.format_score(bb.eb_score(p)) == printed


def test_format_of_complex_variant():
    assert bb.format_score(None) == "."


# --- (2) the penalised fit ---------------------------------------------------------------

def ideal_panel(alpha, beta, depths):
    """Deterministic 'ideal' panel: k_i = the BB quantile at (i + 0.5) / M of depth n_i."""
    m = len(depths)
    probs = (np.arange(m) + 0.5) / m
    return np.asarray(depths), betabinom.ppf(probs, depths, alpha, beta).astype(int)


def strict_optimum(n, k):
    """Independent check optimiser: Nelder-Mead in log-parameters from several starts."""
    def negative(x):
        a, b = np.exp(x)
        if not (bb.ALPHA_BOUNDS[0] <= a <= bb.ALPHA_BOUNDS[1] and bb.BETA_BOUNDS[0] <= b <= bb.BETA_BOUNDS[1]):
            return np.inf
        return -bb.penalised_loglik((a, b), n, k)
    best = np.inf
    for start in [(0.1, 1.0), (0.1, 10.0), (1.0, 30.0), (20.0, 20.0), (0.5, 1000.0)]:
        x0 = np.log(np.maximum(start, [bb.ALPHA_BOUNDS[0] * 1.0001, bb.BETA_BOUNDS[0] * 1.0001]))
        res = minimize(negative, x0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
        best = min(best, res.fun)
    return -best


@pytest.mark.parametrize("vector", EBCALL_VECTORS, ids=IDS)
def test_fit_really_optimises_on_ideal_data(vector):
    depths = np.linspace(30, 60, 10).astype(int)
    for alpha, beta in (vector[2], vector[3]):
        n, k = ideal_panel(alpha, beta, depths)
        if not k.any():
            continue  # nothing to fit: quantiles of a very skewed BB are all 0
        fitted = bb.fit_panel(n, k)
        assert bb.ALPHA_BOUNDS[0] <= fitted[0] <= bb.ALPHA_BOUNDS[1]
        assert bb.BETA_BOUNDS[0] <= fitted[1] <= bb.BETA_BOUNDS[1]
        best = bb.penalised_loglik(fitted, n, k)
        assert best >= bb.penalised_loglik((alpha, beta), n, k) - 1e-6
        assert best >= strict_optimum(n, k) - 1e-5
        # and it is a local maximum: every nearby feasible point is no better
        for da, db in ((1.01, 1), (0.99, 1), (1, 1.01), (1, 0.99)):
            a, b = max(fitted[0] * da, 0.1), max(fitted[1] * db, 1.0)
            assert best >= bb.penalised_loglik((a, b), n, k) - 1e-7


def test_fit_handles_clean_panel_and_gives_high_score():
    """No alt read in 10 controls x 40 reads: alpha goes to its bound, beta stays finite."""
    n = np.full(10, 40)
    k = np.zeros(10, dtype=int)
    alpha, beta = bb.fit_panel(n, k)
    assert alpha == pytest.approx(0.1)
    assert 10 < beta < 1e6
    assert bb.penalised_loglik((alpha, beta), n, k) >= strict_optimum(n, k) - 1e-5
    assert bb.site_score((40, 10, 40, 10), ((alpha, beta), (alpha, beta))) > 6
    # EBCall's all-zero shortcut is available but not the default
    assert bb.fit_panel(n, k, skip_all_zero=True) == bb.ALL_ZERO_PARAMS


def test_fit_input_validation():
    with pytest.raises(ValueError):
        bb.fit_panel([10, 10], [11, 0])
    with pytest.raises(ValueError):
        bb.fit_panel([10, 10], [1])


def simulate_panel(rng, alpha, beta, controls, low=30, high=60):
    """Per-strand (n_i, k_i) of a simulated panel: n_i ~ U{low..high}, k_i ~ BB(n_i, alpha, beta)."""
    n = rng.integers(low, high + 1, controls)
    return n, rng.binomial(n, rng.beta(alpha, beta, controls))


def fitted_score_errors(rng, controls, replicates, fitter):
    """fitted score - published score, shape (sites, replicates)."""
    errors = np.empty((len(EBCALL_VECTORS), replicates))
    for i, (_, tumor, plus, minus, _, _, published) in enumerate(EBCALL_VECTORS):
        for r in range(replicates):
            params = tuple(fitter(*simulate_panel(rng, a, b, controls)) for a, b in (plus, minus))
            errors[i, r] = bb.site_score(tumor, params) - published
    return errors


def test_fit_recovery_with_ten_control_panels():
    """Panels of 10 controls (Genomon's scale), 15 seeded replicates per site.

    Tolerance: with only 10 controls the fitted score is a noisy estimate of the score
    under the published parameters. Measured over 120 replicates per site, the error's
    sd is 0.7-2.2 (largest at the sites scoring ~6, whose tails are very sensitive to
    alpha) and the overall median |error| is 0.95. Resampling 15 of those replicates,
    the overall median |error| stays below 1.23 and the worst per-site median below 3.2
    in 99.9 % of draws, hence the limits 1.4 and 3.5 -- a per-panel tolerance near 0.02
    would be dishonest at this panel size. A fit that does not optimise (parameters left
    at the start (20, 20)) has an overall median |error| of 3.4 and site medians down to
    -6.5, and fails, as asserted at the end. The precise-optimisation property is checked
    separately (test_fit_really_optimises_on_ideal_data) and consistency with large panels
    in test_fit_recovery_is_consistent_with_large_panels.
    """
    errors = fitted_score_errors(np.random.default_rng(20240601), 10, 15, bb.fit_panel)
    assert np.median(np.abs(errors)) < 1.4
    assert np.all(np.abs(np.median(errors, axis=1)) < 3.5), np.median(errors, axis=1)
    broken = fitted_score_errors(np.random.default_rng(20240601), 10, 3, lambda n, k: bb.START)
    assert not (np.median(np.abs(broken)) < 1.4 and np.all(np.abs(np.median(broken, axis=1)) < 3.5))


def test_fit_recovery_is_consistent_with_large_panels():
    """3000 controls per strand, mean of 3 replicates per site: within 0.5 of the published score.

    Measured replicate sd at this size is <= 0.16 (so <= 0.1 for the mean); the
    remaining offset (up to ~0.3 at 2418116, where alpha sits on its 0.1 bound and the
    estimate can only move up) is the finite-sample bias of a bounded estimator.
    """
    errors = fitted_score_errors(np.random.default_rng(99), 3000, 3, bb.fit_panel)
    assert np.all(np.abs(errors.mean(axis=1)) < 0.5), errors.mean(axis=1)
    assert np.median(np.abs(errors)) < 0.15
