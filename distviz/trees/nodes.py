"""The node table of a fitted tree: one row per node, for the boosting code and for the app."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["TreeNodes"]


@dataclass(eq=False)
class TreeNodes:
    """Arrays with one row per node (node 0 is the root; children have larger ids than their parent).

    feature / bin / threshold: split rule ``x[feature] <= threshold`` (bin codes: ``code <= bin``) goes
    left; -1 / -1 / NaN for leaves.  weight: W_C = sum of sample weights; n_samples: rows with positive
    weight; value (n_nodes, K): leaf value S_C / (W_C + l2) (also filled for internal nodes).
    gain: the gain that chose the split (Gain^reg for criterion="variance", Gain^ent for "entropy");
    gain_reg: W_L|Rbar_L|^2 + W_R|Rbar_R|^2 - W_J|Rbar_J|^2 (regularised form with l2, see splitting.py);
    gain_ent: (W_L A*(eta*_L) + W_R A*(eta*_R) - W_J A*(eta*_J)) / W (NaN without a family);
    feature_gains (n_nodes, p): the best gain of the criterion on every feature (-inf: no valid split).
    missing_left (uint8): 1 when a missing value (NaN) of the split feature goes left, 0 when it goes
    right (and at leaves); learned where the node's training rows had missing values, else the
    heavier child (see splitting.py).
    """

    feature: np.ndarray
    threshold: np.ndarray
    bin: np.ndarray
    left: np.ndarray
    right: np.ndarray
    is_leaf: np.ndarray
    depth: np.ndarray
    weight: np.ndarray
    n_samples: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    gain_reg: np.ndarray
    gain_ent: np.ndarray
    feature_gains: np.ndarray
    missing_left: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.missing_left is None:
            self.missing_left = np.zeros(self.feature.shape[0], dtype=np.uint8)

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.feature.shape[0])

    def __len__(self) -> int:
        return self.n_nodes

    def __getitem__(self, key: str) -> np.ndarray:
        return getattr(self, key)

    def as_dict(self) -> dict[str, np.ndarray]:
        """Columns as a dict of arrays (value and feature_gains stay 2-D)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_dataframe(self):
        """A pandas DataFrame with one row per node; value_k and gain_feature_f columns for the 2-D arrays."""
        import pandas as pd

        cols = {}
        for f in fields(self):
            a = getattr(self, f.name)
            if a.ndim == 1:
                cols[f.name] = a
            elif f.name == "value":
                for k in range(a.shape[1]):
                    cols[f"value_{k}"] = a[:, k]
            else:
                for k in range(a.shape[1]):
                    cols[f"gain_feature_{k}"] = a[:, k]
        df = pd.DataFrame(cols)
        df.index.name = "node"
        return df
