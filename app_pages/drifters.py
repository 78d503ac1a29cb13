"""Placeholder until the page lands."""

import streamlit as st

st.title("drifters")
st.info("This page is being built.")
