"""The Streamlit app's scripts and settings, shipped as package data: ``app.py`` (the Lab page and the navigation),
``app_pages/*.py`` (the other pages) and ``config.toml`` (Streamlit's settings, which distviz.ui.serve passes on the
command line).  Streamlit runs the scripts; nothing imports them as modules."""
