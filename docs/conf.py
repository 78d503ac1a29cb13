"""Sphinx configuration of distviz's documentation site (``make docs``: ``sphinx-build -W --keep-going``).

The site follows the scikit-learn / ngboost convention: numpydoc renders the docstrings, autosummary writes one page
per public object (``api/generated``, not committed), sphinx-gallery runs the scripts of ``../examples`` at build time
and writes ``auto_examples`` (not committed), and the results pages are written from the studies' shipped output by
the local extension ``_ext/distviz_results.py`` (no number is typed by hand). Nothing is fetched over the network.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))            # the checkout's distviz, as the tests import it
sys.path.insert(0, str(DOCS / "_ext"))

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import distviz  # noqa: E402

project = "distviz"
author = "the distviz developers"
copyright = "the distviz developers"
release = version = distviz.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",              # MathJax served from the site itself: the pages' math renders offline
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "distviz_results",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
root_doc = "index"
default_role = "obj"

# -- autodoc / autosummary / numpydoc -----------------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options: dict = {}
autodoc_typehints = "none"                # the numpydoc Parameters sections carry the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- sphinx-gallery -----------------------------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # "Examples using X" at the end of each API page (the autosummary templates' minigallery)
    "doc_module": ("distviz",),
    "backreferences_dir": "api/generated/backreferences",
    "inspect_global_variables": False,
    "filename_pattern": r"/plot_",          # every plot_*.py is executed at build time
    "abort_on_example_error": True,         # an example that raises fails the build
    "only_warn_on_example_error": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 0,                 # every example's run time is reported (sg_execution_times)
    "write_computation_times": True,
    "reset_modules": ("matplotlib",),
    "within_subsection_order": "FileNameSortKey",
    "capture_repr": ("_repr_html_", "__repr__"),
    "ignore_repr_types": r"matplotlib[.]",  # a block ending in ax.legend() shows no "<matplotlib.legend.Legend ...>"
    "plot_gallery": "True",
}

# -- no network -----------------------------------------------------------------------------------------------------------
# No intersphinx: the CI machine reaches only package registries, so no inventory could be fetched.
intersphinx_mapping: dict = {}

# -- HTML -----------------------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"distviz {release}"
html_static_path = ["_static"]
html_css_files = ["distviz.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "icon_links": [],
}
html_sidebars = {"index": [], "getting_started": []}


# -- module constants ------------------------------------------------------------------------------------------------------
def _constant_doc(app, what, name, obj, options, lines):
    """A public constant re-exported from another module (``distviz.trees.NODE_DTYPE``, ``distviz.persistence.SCHEMA``)
    is documented by the ``#:`` comment where it is assigned, instead of the docstring of its type (numpy.dtype's,
    int's), which autodoc falls back to."""
    if what != "data":
        return
    from sphinx.pycode import ModuleAnalyzer

    attr = name.rpartition(".")[2]
    for modname, mod in sorted(sys.modules.items()):
        if not modname.startswith("distviz") or getattr(mod, attr, None) is not obj:
            continue
        try:
            doc = ModuleAnalyzer.for_module(modname).find_attr_docs().get(("", attr))
        except Exception:  # a module without source (a compiled one): look further
            continue
        if doc:
            lines[:] = list(doc)
            return
    lines[:] = []


def _skip_foreign(app, what, name, obj, skip, options):
    """Document a class's own members and those it inherits from distviz's classes, not scikit-learn's (get_params,
    set_params, the metadata-routing ``set_*_request``) nor Python's: their docstrings are theirs to keep."""
    if what != "class":
        return None
    target = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    module = getattr(target, "__module__", None)
    if module is None or not module.startswith("distviz"):
        return True
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _constant_doc)
    app.connect("autodoc-skip-member", _skip_foreign)
