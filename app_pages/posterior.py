"""Placeholder until the page lands."""

import streamlit as st

st.title("posterior")
st.info("This page is being built.")
