"""Layout pieces that keep a page's first paint light: lazily executed tabs and Markdown tables."""

from __future__ import annotations

import numpy as np
import streamlit as st

from .state import qp_key


def lazy_tabs(page: str, name: str, labels: list[str]):
    """Tabs whose content runs only when open (`tab.open`); the chosen tab is in the URL as `name`.

    Only the open tab's charts are computed and drawn, so a page shows its first view quickly
    and loads the others on a click.
    """
    return st.tabs(labels, key=qp_key(page, name, labels[0], options=labels), on_change="rerun")


def _escape(v) -> str:
    """Text for a Markdown table cell: pipes, asterisks, underscores and backslashes taken literally."""
    s = str(v)
    for ch in "\\|*_`$":
        s = s.replace(ch, "\\" + ch)
    return s


def static_table(df, formats: dict | None = None) -> None:
    """A small table as Markdown (no data-grid component to load); `formats` maps column -> format spec."""
    formats = formats or {}

    def cell(col, v):
        if isinstance(v, (float, np.floating)):
            return "—" if not np.isfinite(v) else format(float(v), formats.get(col, ".4g"))
        return _escape(v)

    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(_escape(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(c, v) for c, v in zip(cols, row)) + " |" for row in df.itertuples(index=False)]
    st.markdown("\n".join(lines))
