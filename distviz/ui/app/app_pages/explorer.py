"""Family explorer: density / pmf of a family at chosen parameters, natural and mean parameters side by side."""

import streamlit as st

from distviz.ui.explorer import EXPLAINER, render_explorer

st.title("Family explorer")
with st.expander("What am I looking at?"):
    st.markdown(EXPLAINER)
render_explorer()
