"""distviz.validation: one rule set for X, y and sample weights, used by every estimator and tree."""

import numpy as np
import pytest

from distviz.errors import DataError
from distviz.validation import NonNumericError, check_sample_weight, check_X, check_X_y, check_y


def _one_sentence(msg: str) -> None:
    assert msg.count(". ") == 0 and msg.endswith(".") and "Traceback" not in msg and "Error" not in msg, msg


def test_numeric_inputs_become_float64_and_1d_is_one_feature():
    X = check_X([[1, 2], [3, 4]], allow_nan=False)
    assert X.dtype == np.float64 and X.shape == (2, 2)
    assert check_X(np.array([True, False, True]), allow_nan=False).shape == (3, 1)
    assert check_X(np.arange(5), allow_nan=False).shape == (5, 1)
    obj = np.array([[1, 2.5], [3, 4]], dtype=object)  # numbers in an object array are read as numbers
    np.testing.assert_array_equal(check_X(obj, allow_nan=False), [[1.0, 2.5], [3.0, 4.0]])
    F = np.asfortranarray(np.ones((4, 3)))
    assert check_X(F, allow_nan=False, order="C").flags.c_contiguous
    assert check_X(np.ones((4, 3)), allow_nan=False, order="F").flags.f_contiguous


@pytest.mark.parametrize("X, match", [
    (np.ones((3, 2)) + 1j, "Complex data not supported in X"),
    (np.array([[1.0, "a"], [2.0, "b"]], dtype=object), "non-numeric values in column 1"),
    (np.array([[1.0, {"foo": "bar"}]], dtype=object), "non-numeric values in column 1"),
    (np.ones((2, 2, 2)), "got 3 dimensions"),
    (np.empty((0, 3)), "0 sample"),
    (np.empty((12, 0)), r"0 feature\(s\) \(shape=\(12, 0\)\) while a minimum of 1 is required"),
    (np.array([[1.0, np.inf]]), "infinite values"),
    (np.array([[np.nan, 1.0]]), "NaN"),
    (__import__("scipy.sparse").sparse.csr_matrix(np.eye(3)), "sparse matrix"),
])
def test_bad_X_is_one_sentence(X, match):
    with pytest.raises(DataError, match=match) as e:
        check_X(X, allow_nan=False)
    _one_sentence(str(e.value))


def test_nan_only_where_allowed_and_inf_never():
    X = np.array([[np.nan, 1.0], [2.0, 3.0]])
    assert np.isnan(check_X(X, allow_nan=True)[0, 0])
    with pytest.raises(DataError, match="missing values"):
        check_X(X, allow_nan=False)
    with pytest.raises(DataError, match="inf"):
        check_X(np.array([[-np.inf, 1.0]]), allow_nan=True)


def test_non_numeric_values_are_a_type_error_as_numpy_raises():
    """scikit-learn's check_dtype_object expects a TypeError for dict entries; DataError is a ValueError too."""
    with pytest.raises(TypeError, match="argument must be .* string.* number") as e:
        check_X(np.array([[1.0, {"foo": "bar"}]], dtype=object), allow_nan=True)
    assert isinstance(e.value, (NonNumericError, DataError, ValueError))


def test_feature_count_and_single_row_hint():
    with pytest.raises(DataError, match=r"X has 2 features, but \w+ is expecting 3 features as input"):
        check_X(np.ones((4, 2)), allow_nan=False, n_features=3)
    with pytest.raises(DataError, match="but NGB is expecting 3"):
        check_X(np.ones((4, 2)), allow_nan=False, n_features=3, model="NGB")
    with pytest.raises(DataError, match="Reshape your data"):
        check_X(np.ones(3), allow_nan=False, n_features=3)


def test_targets():
    assert check_y([1, 2, 3], 3, ndim=2).shape == (3, 1)
    assert check_y(np.ones((3, 1)), 3, ndim=1).shape == (3,)
    for y, match in (([1.0, np.nan], "NaN"), ([1.0, np.inf], "inf"), ([1.0, 2.0, 3.0], "one value per row"),
                     (np.ones((2, 2, 2)), "shape"), ([1 + 1j, 2], "Complex data not supported")):
        with pytest.raises(DataError, match=match) as e:
            check_y(y, 2)
        _one_sentence(str(e.value))
    X, y = check_X_y([[1.0], [np.nan]], [1, 2], allow_nan=True)
    assert X.shape == (2, 1) and y.shape == (2,)


def test_sample_weights():
    assert check_sample_weight(None, 3) is None
    np.testing.assert_array_equal(check_sample_weight([1, 0, 2], 3), [1.0, 0.0, 2.0])
    for w, match in (([1, 2], "2 entries"), ([1, np.nan, 1], "NaN"), ([1, -1, 1], "negative"),
                     ([0, 0, 0], "sums to zero"), ([1, np.inf, 1], "inf")):
        with pytest.raises(DataError, match=match) as e:
            check_sample_weight(w, 3)
        _one_sentence(str(e.value))


def test_estimators_share_the_rules():
    """Every estimator refuses the same bad input with the same kind of sentence; NaN only where trees route it."""
    from distviz.baselines import MVNNetwork, skGB
    from distviz.estimators import DistributionalBoosting
    from distviz.estimators.ngboost import NGB
    from distviz.estimators.wgboost import WGBoost
    from distviz.gp import SparseGP
    from distviz.trees import HistTree

    rng = np.random.default_rng(0)
    Xc = rng.normal(size=(12, 2)) + 1j
    Xs = np.array([["a", 1.0]] * 12, dtype=object)
    Xinf = rng.normal(size=(12, 2))
    Xinf[3, 1] = np.inf
    y, Y = rng.poisson(2.0, 12).astype(float), rng.normal(size=(12, 2))
    fits = [lambda X: DistributionalBoosting("poisson", n_estimators=1).fit(X, y), lambda X: NGB(n_estimators=1).fit(X, Y),
            lambda X: WGBoost("normal", n_estimators=1).fit(X, y), lambda X: HistTree().fit(X, y),
            lambda X: SparseGP().fit(X, y), lambda X: MVNNetwork(max_epochs=1).fit(X, Y),
            lambda X: skGB(n_estimators=1).fit(X, Y)]  # GradientBoostingRegressor: no missing values
    for fit in fits:
        for X, match in ((Xc, "Complex data not supported"), (Xs, "non-numeric values in column 0"),
                         (Xinf, "infinite values"), (np.empty((12, 0)), "0 feature")):
            with pytest.raises(DataError, match=match):
                fit(X)
    Xn = rng.normal(size=(12, 2))
    Xn[2, 0] = np.nan
    for fit in fits[4:]:
        with pytest.raises(DataError, match="NaN"):
            fit(Xn)
