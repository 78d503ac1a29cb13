"""Streamlit helpers shared by the pages: URL state, the fitted-model store and error display (no maths)."""
