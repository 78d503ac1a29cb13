"""Fit-time checks of the estimators' numeric parameters (``check_number``, ``check_int``).

They live in ``distviz.validation`` (below every estimator, so that the sparse GP shares them with the boosting
estimators); this module keeps the import path ``distviz.boosting.params``.
"""

from __future__ import annotations

from distviz.validation import check_int, check_number

__all__ = ["check_number", "check_int"]
