"""Tests of genomon_smk.tools.stats, the statistics shared by fisher and mutfilter realignment."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta as beta_dist
from scipy.stats import fisher_exact

from genomon_smk.tools import stats


def test_fisher_exact_matches_scipy_relative_1e9():
    rng = np.random.default_rng(3)
    tables = [tuple(int(v) for v in rng.integers(0, [80, 80, 25, 25])) for _ in range(1500)]
    tables += [(a, a, c, c) for a in range(12) for c in range(12)]  # symmetric ties
    tables += [(400, 380, 40, 0), (3000, 2500, 2, 150)]
    for a, b, c, d in tables:
        expected = fisher_exact([[a, b], [c, d]]).pvalue
        got = stats.fisher_exact_two_sided(a, b, c, d)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-300), (a, b, c, d)


def test_fisher_exact_degenerate_margins_give_one():
    # an empty row or column leaves a single possible table
    for table in [(0, 0, 3, 4), (3, 4, 0, 0), (0, 5, 0, 7), (5, 0, 7, 0), (0, 0, 0, 0)]:
        assert stats.fisher_exact_two_sided(*table) == 1.0


def test_fisher_score_clamps():
    assert stats.fisher_score(10, 10, 10, 10) == 0.0  # p = 1
    assert stats.fisher_score(0, 300, 300, 0) == stats.SCORE_MAX == 60.0  # p far below 1e-60
    p = fisher_exact([[20, 20], [8, 1]]).pvalue
    assert stats.fisher_score(20, 20, 8, 1) == pytest.approx(-math.log10(p), rel=1e-9)


def test_fisher_score_treats_negative_counts_as_zero():
    assert stats.fisher_score(-3, 20, 8, 1) == stats.fisher_score(0, 20, 8, 1)
    assert stats.fisher_score(20, 20, 8, -1) == stats.fisher_score(20, 20, 8, 0)


def test_beta_posterior_matches_scipy():
    b10, mean, b90 = stats.beta_posterior(7, 30)
    assert b10 == pytest.approx(beta_dist.ppf(0.1, 8, 31), rel=1e-9)
    assert b90 == pytest.approx(beta_dist.ppf(0.9, 8, 31), rel=1e-9)
    assert mean == pytest.approx(8 / 39)


def test_beta_posterior_is_ordered_and_negative_reference_is_zero():
    for variant, reference in [(0, 0), (1, 50), (40, 3), (500, 500)]:
        b10, mean, b90 = stats.beta_posterior(variant, reference)
        assert 0.0 < b10 < mean < b90 < 1.0
    assert stats.beta_posterior(5, -2) == stats.beta_posterior(5, 0)
