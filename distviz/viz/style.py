"""Shared plotly layout: white template, readable fonts, legends on top."""

from __future__ import annotations

import plotly.graph_objects as go

__all__ = ["apply_style"]


def _legend_rows(fig: go.Figure) -> int:
    """Rough number of legend rows a horizontal legend needs."""
    names = [t.name for t in fig.data if t.name and t.showlegend is not False]
    chars = sum(len(n) + 6 for n in names)
    return max(1, -(-chars // 70))


def apply_style(fig: go.Figure, *, title: str | None = None, height: int = 420, legend_top: bool = True) -> go.Figure:
    """Apply the distviz look (white template, horizontal legend above the plot) and return the figure."""
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin=dict(l=60, r=20, t=50 if title else 20, b=60),
        font=dict(size=13),
        hovermode="closest",
    )
    if title:
        fig.update_layout(title=dict(text=title, x=0.0, xanchor="left", font=dict(size=15)))
    if legend_top:  # a horizontal legend under the x-axis title never covers the title or the data
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0.0,
                                      font=dict(size=12)))
        fig.update_layout(height=height + 40 * _legend_rows(fig))
    return fig
