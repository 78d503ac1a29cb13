"""UCI split loader on the shared data when present."""

import numpy as np
import pytest

from distviz.data import uci
from distviz.data.paths import shared_data_path
from distviz.errors import DataError

needs_uci = pytest.mark.skipif(shared_data_path("uci", "concrete") is None,
                               reason="../shared/data/uci is not present on this machine")


@needs_uci
def test_concrete_split_shapes():
    s = uci.load_uci("concrete", 0)
    assert s.X_train.shape[1] == 8 and s.X_train.shape[0] + s.X_test.shape[0] == 1030
    assert uci.n_splits("concrete") == 20


def test_missing_dataset_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="was not found"):
        uci.load_uci("concrete", 0, root=tmp_path)


def test_parse_splits():
    assert uci.parse_splits("0-3") == [0, 1, 2, 3]
    assert uci.parse_splits("1,5") == [1, 5]
    with pytest.raises(DataError):
        uci.parse_splits("a-b")


@needs_uci
@pytest.mark.parametrize("name", ["energy", "yacht"])
def test_the_wgboost_authors_folds_are_the_index_files(name):
    """The authors' np.random.seed(1) folds (uci.authors_split) are the Hernandez-Lobato & Adams index files."""
    d = uci.uci_dir(name)
    n = len(np.loadtxt(d / "data.txt"))
    for i in range(20):
        tr, te = uci.authors_split(n, i)
        assert np.array_equal(np.loadtxt(d / f"index_train_{i}.txt", dtype=int).ravel(), tr)
        assert np.array_equal(np.loadtxt(d / f"index_test_{i}.txt", dtype=int).ravel(), te)
