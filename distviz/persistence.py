"""Save and load any fitted estimator: ``load(path)`` picks the estimator class named in the file.

The file format, its limits and its checks live in ``distviz.modelfile`` (below the estimators, which write
and read through it); this module sits above the estimators so that it may name their classes, and keeps the
format's names importable from here (``ModelFile``, ``ModelWriter``, ``MAX_BYTES``, ``SCHEMA``, ``engine``).
The limits are read from ``distviz.modelfile``: change them there.

Usage: ``est.save(path)``; ``Estimator.load(path)``; ``distviz.persistence.load(path)`` picks the class.
"""

from __future__ import annotations

from pathlib import Path

from distviz._optional import missing
from distviz.errors import DataError
from distviz.modelfile import MAX_BYTES, MAX_FILE_BYTES, SCHEMA, ModelFile, ModelWriter, engine, header_or_fail

__all__ = ["MAX_BYTES", "MAX_FILE_BYTES", "SCHEMA", "ModelFile", "ModelWriter", "engine", "load", "save"]


def _classes() -> dict:
    """The estimator classes that save files, by name (imported here, never from a name read in a file)."""
    from distviz.baselines import skGB
    from distviz.estimators.distributional import DistributionalBoosting
    from distviz.estimators.ngboost import GB, NGB, IndepNGB, NGBoost
    from distviz.estimators.wgboost import WGBoost

    classes = {c.__name__: c for c in (DistributionalBoosting, NGBoost, NGB, GB, IndepNGB, skGB, WGBoost)}
    try:
        from distviz.gp.model import SparseGP
    except ModuleNotFoundError:  # the sparse GP is the [gp] extra; load() says so for a SparseGP file
        return classes
    return {**classes, "SparseGP": SparseGP}


def save(est, path) -> None:
    """Write a fitted estimator to one NetCDF file (no pickle); :func:`load` reads it back.

    Parameters
    ----------
    est : estimator
        A fitted distviz estimator (it calls the estimator's own ``save``).
    path : str or path-like
        The file to write.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from distviz.estimators import DistributionalBoosting
    >>> from distviz.persistence import load, save
    >>> X = np.linspace(0, 1, 200)[:, None]
    >>> est = DistributionalBoosting("poisson", n_estimators=5).fit(X, (10 * X[:, 0]).astype(int))
    >>> path = os.path.join(tempfile.mkdtemp(), "model.nc")
    >>> save(est, path)
    >>> bool(np.array_equal(load(path).predict(X), est.predict(X)))
    True
    """
    est.save(path)


def load(path):
    """Load any distviz model file, choosing the estimator class from the file's ``distviz_class`` attribute.

    The class is looked up among distviz's estimators (never imported from a name read in the file), and the
    file's header is checked before any variable is read (:class:`ModelFile`).

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save` or an estimator's ``save``.

    Returns
    -------
    estimator
        The fitted estimator, predicting as the one saved.

    Raises
    ------
    DataError
        When the file is not a distviz model file or fails a check; the sentence names the file.
    """
    name = Path(str(path)).name
    cls_name = header_or_fail(path, name, "an estimator's save()").attrs.get("distviz_class")
    if not isinstance(cls_name, str):
        cls_name = None
    classes = _classes()
    if cls_name == "SparseGP" and cls_name not in classes:
        raise missing("autograd", f"Loading {name} (a SparseGP model file)")
    if cls_name not in classes:
        raise DataError(f"{name} is not a distviz model file (it names no known estimator); pass a file written by "
                        f"an estimator's save().")
    return classes[cls_name].load(path)
