"""Plotly's typed-array form of a data array: ``{"dtype", "bdata" (base64 of the bytes), "shape"}``.

plotly writes numeric numpy arrays in this form (``fig.to_dict()``, and `distviz.ui.figures` for the shared
figures); the readers of a figure's numbers (`distviz.viz.margins`, `distviz.ui.lesson_check`) decode it here.
"""

from __future__ import annotations

import base64

import numpy as np

__all__ = ["decode_typed_array", "is_typed_array"]


def is_typed_array(value) -> bool:
    """Whether `value` is plotly's typed-array form (a dict with ``bdata``)."""
    return isinstance(value, dict) and "bdata" in value


def decode_typed_array(spec: dict, dtype=None) -> np.ndarray:
    """The array that plotly's typed-array form `spec` holds, in its ``shape`` when it has one.

    Parameters
    ----------
    spec : dict
        ``{"dtype": "f8", "bdata": "<base64>", "shape": "2, 3"}`` (``dtype`` defaults to "f8", ``shape`` to 1-D).
    dtype : numpy dtype, optional
        The dtype to read the bytes as, when the caller has already read (and checked) ``spec["dtype"]``.

    Returns
    -------
    ndarray
        A read-only view of the decoded bytes.
    """
    dt = np.dtype(str(spec.get("dtype", "f8"))) if dtype is None else dtype
    a = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=dt)
    shape = spec.get("shape")
    return a.reshape([int(v) for v in str(shape).split(",")]) if shape else a
