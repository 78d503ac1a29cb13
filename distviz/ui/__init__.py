"""Streamlit helpers shared by the pages: URL state, the fitted-model store and error display (no maths)."""

from distviz._optional import missing

try:
    import streamlit  # noqa: F401  (every page helper here draws through streamlit)
except ModuleNotFoundError:
    raise missing("streamlit", "The app") from None
