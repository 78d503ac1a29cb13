"""Placeholder until the page lands."""

import streamlit as st

st.title("evolution")
st.info("This page is being built.")
