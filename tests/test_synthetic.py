"""Tests of the simulations with known truth (distviz.data.synthetic)."""

import numpy as np
import pytest

from distviz.data.synthetic import SYNTHETIC, make_synthetic
from distviz.errors import ConfigError
from distviz.families import get

FAMILY_DIMS = {"poisson": 1, "bernoulli": 1, "normal": 2, "gamma": 2, "exponential": 1, "categorical": 2, "mvn": 5}


def test_registry_covers_every_family():
    assert set(SYNTHETIC) == set(FAMILY_DIMS)


@pytest.mark.parametrize("name", sorted(FAMILY_DIMS))
def test_shapes_truth_and_support(name):
    d = make_synthetic(name, n=300, p=3, random_state=1)
    fam = get(d.family, **d.family_kwargs)
    assert d.X.shape == (300, 3)
    assert d.eta.shape == d.eta_star.shape == (300, FAMILY_DIMS[name])
    fam.check_y(d.y)  # every draw lies in the support
    np.testing.assert_allclose(d.eta_star, fam.to_mean(d.eta), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d.truth_eta(d.X), d.eta, rtol=0, atol=0)
    assert np.isfinite(d.oracle_nll())
    assert d.grid(50).shape == (50, 3)


@pytest.mark.parametrize("name", sorted(FAMILY_DIMS))
def test_sample_means_match_eta_star(name):
    """E[T(y) | x] = eta*(x): the average of T(y) - eta*(x) over many draws is ~0."""
    d = make_synthetic(name, n=40_000, random_state=2)
    fam = get(d.family, **d.family_kwargs)
    T = fam.sufficient_stats(d.y)
    resid = T - d.eta_star
    se = resid.std(axis=0) / np.sqrt(len(resid))
    assert np.all(np.abs(resid.mean(axis=0)) < 5 * se)


def test_truth_depends_on_first_feature_only_and_reproducible():
    a = make_synthetic("poisson", n=100, p=2, random_state=3)
    b = make_synthetic("poisson", n=100, p=2, random_state=3)
    np.testing.assert_array_equal(a.y, b.y)
    Z = a.X.copy()
    Z[:, 1] = 0.0
    np.testing.assert_array_equal(a.truth_eta(Z), a.eta)


def test_unknown_name_and_bad_sizes():
    with pytest.raises(ConfigError):
        make_synthetic("weibull")
    with pytest.raises(ConfigError):
        make_synthetic("poisson", n=0)
    with pytest.raises(ConfigError):
        make_synthetic("poisson", p=0)


def test_split_halves():
    d = make_synthetic("normal", n=101, random_state=0)
    tr, te = d.split(0.5, random_state=0)
    assert len(tr.y) + len(te.y) == 101
    assert np.isfinite(te.oracle_nll())
