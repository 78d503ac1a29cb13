"""The Streamlit app's scripts and settings, shipped as package data: ``app.py`` (the navigation and what every page
shares), ``app_pages/*.py`` (every page's body, the Lab's in ``lab.py``) and ``config.toml`` (Streamlit's settings,
which distviz.ui.serve passes on the command line).  Streamlit runs the scripts; nothing imports them as modules."""
