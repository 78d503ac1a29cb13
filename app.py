"""distviz — an interactive laboratory for distributional gradient boosting (run: streamlit run app.py)."""

import streamlit as st

from distviz.ui.explorer import EXPLAINER, render_explorer

st.set_page_config(page_title="distviz", page_icon="📈", layout="wide")


def explorer_page():
    """Family explorer: density / pmf of a family at chosen parameters, natural and mean coordinates."""
    st.title("distviz · family explorer")
    with st.expander("What am I looking at?"):
        st.markdown(EXPLAINER)
    render_explorer()


nav = st.navigation([st.Page(explorer_page, title="Family explorer", icon="🔎", default=True)])
nav.run()
