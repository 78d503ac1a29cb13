"""Placeholder until the page lands."""

import streamlit as st

st.title("split_gains")
st.info("This page is being built.")
