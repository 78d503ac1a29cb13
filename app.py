"""`streamlit run app.py` from a checkout: runs the app that ships inside the package (distviz/ui/app/app.py).

`distviz app` (`make run`) is the way to start it anywhere, with the packaged settings on its command line; from
this folder Streamlit also reads .streamlit/config.toml, a link to the same settings (distviz/ui/app/config.toml).
"""

from distviz.data.paths import package_file

_APP = package_file("distviz.ui", "app", "app.py")
exec(compile(_APP.read_text(encoding="utf-8"), str(_APP), "exec"), {"__name__": "__main__", "__file__": str(_APP)})
