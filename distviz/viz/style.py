"""Shared plotly layout: white template, readable fonts, legends on top."""

from __future__ import annotations

import plotly.graph_objects as go

__all__ = ["apply_style"]


def apply_style(fig: go.Figure, *, title: str | None = None, height: int = 420, legend_top: bool = True) -> go.Figure:
    """Apply the distviz look (white template, horizontal legend above the plot) and return the figure."""
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin=dict(l=60, r=20, t=70 if title else 40, b=50),
        font=dict(size=13),
        hovermode="closest",
    )
    if title:
        fig.update_layout(title=dict(text=title, x=0.0, xanchor="left", font=dict(size=15)))
    if legend_top:
        fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1.0))
    return fig
