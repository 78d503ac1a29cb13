"""distviz.viz: the app's charts (plotly) and the paper figures (matplotlib, cartopy); the [app] extra."""

from distviz._optional import missing

try:
    import plotly  # noqa: F401  (the charts of this package are plotly figures)
except ModuleNotFoundError:
    raise missing("plotly", "Drawing charts (distviz.viz)") from None
