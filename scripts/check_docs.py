"""Check what a built documentation site holds (``make docs`` runs it after ``sphinx-build``).

    python scripts/check_docs.py [docs/_build/html]

Fails (exit 1, one line per problem) unless the site has

* a page for every entry of the root toctree (``docs/index.rst``) and every page those pages' toctrees name
  (the user guide's, the results');
* the gallery's index and at least ``--min-examples`` example pages (10 by default), each showing at least one PNG
  figure that is in the site, each example executed at this build (its run time listed in
  ``sg_execution_times``);
* an API page for every public name (the ``__all__``) of the modules of the API reference;
* the results pages, each with its figure;
* (without the site) a numpydoc ``Parameters`` section (when it takes any) and ``Returns`` / ``Yields`` section
  (``fit*`` methods, which return self, excepted) in the docstring of every public method of every class of the API
  reference (``check_method_docs``; ``tests/test_docs.py`` runs it too).

It reads only the files of the site and of ``docs/`` (HTML parsed by the standard library), and imports distviz
only to read the modules' ``__all__`` and the docstrings of the API reference's classes.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: modules whose every public name has a page in the API reference (docs/api/index.rst)
API_MODULES = ("distviz.estimators", "distviz.dask", "distviz.baselines", "distviz.gp", "distviz.families",
               "distviz.families.charts", "distviz.families.dist", "distviz.metrics", "distviz.trees",
               "distviz.persistence", "distviz.distributed")
#: names of distviz itself that are documented (``__version__`` is not an object)
TOP_LEVEL = ("ConfigError", "DataError")
#: scikit-learn's own methods of the estimators (documented by scikit-learn), not checked by check_method_docs
SKLEARN_METHODS = ("get_params", "set_params", "get_metadata_routing", "set_fit_request", "set_score_request",
                   "set_predict_request", "set_output", "fit_transform", "set_transform_request")
#: sphinx-gallery's own pages in the gallery folder, not examples
GALLERY_SKIP = {"index.html", "sg_execution_times.html"}


class _Images(HTMLParser):
    """The ``src`` of every ``<img>`` of a page."""

    def __init__(self):
        super().__init__()
        self.srcs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.srcs.extend(v for k, v in attrs if k == "src" and v)


def images(page: Path) -> list[Path]:
    """The local image files a page shows (resolved against the page's folder)."""
    p = _Images()
    p.feed(page.read_text(encoding="utf-8"))
    return [(page.parent / s.split("#")[0].split("?")[0]).resolve() for s in p.srcs if "://" not in s]


def toctree_entries(rst: Path) -> list[str]:
    """The documents named by the ``toctree`` directives of an rst file, relative to the docs folder."""
    out, inside = [], False
    base = rst.parent.relative_to(DOCS)
    for line in rst.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith(".. toctree::"):
            inside = True
            continue
        if inside:
            if line.strip() == "" or line.strip().startswith(":"):
                continue
            if not line.startswith(" "):
                inside = False
                continue
            entry = line.strip()
            m = re.search(r"<([^>]+)>$", entry)   # "Title <doc>"
            entry = m.group(1) if m else entry
            if "://" not in entry and entry != "self":
                out.append(entry[1:] if entry.startswith("/") else (base / entry).as_posix())
    return out


def check_toctrees(html: Path) -> list[str]:
    problems = []
    root = toctree_entries(DOCS / "index.rst")
    for doc in ("getting_started", "user_guide/index", "auto_examples/index", "api/index", "results/index"):
        if doc not in root:
            problems.append(f"docs/index.rst: the root toctree lacks {doc}")
    seen, todo = set(), list(root)
    while todo:
        doc = todo.pop()
        if doc in seen:
            continue
        seen.add(doc)
        if not (html / f"{doc}.html").is_file():
            problems.append(f"no page {doc}.html (named by a toctree)")
        src = DOCS / f"{doc}.rst"
        if src.is_file():
            todo.extend(toctree_entries(src))
    return problems


def check_gallery(html: Path, min_examples: int) -> list[str]:
    gallery = html / "auto_examples"
    if not (gallery / "index.html").is_file():
        return ["no gallery: auto_examples/index.html is missing"]
    problems = []
    pages = sorted(p for p in gallery.rglob("*.html") if p.name not in GALLERY_SKIP and p.name != "index.html")
    if len(pages) < min_examples:
        problems.append(f"the gallery has {len(pages)} example pages, fewer than {min_examples}")
    for page in pages:
        pngs = [p for p in images(page) if p.suffix == ".png"]
        if not pngs:
            problems.append(f"{page.relative_to(html)} shows no PNG figure")
        problems.extend(f"{page.relative_to(html)}: its figure {p.name} is not in the site" for p in pngs if not p.is_file())
    times = html / "auto_examples" / "sg_execution_times.html"
    if not times.is_file():
        times = html / "sg_execution_times.html"
    if not times.is_file():
        problems.append("no sg_execution_times.html: the examples' run times were not written")
    else:
        text = times.read_text(encoding="utf-8")
        problems.extend(f"{page.relative_to(html)} has no run time in {times.name} (not executed?)"
                        for page in pages if page.stem not in text)
    return problems


def public_names() -> list[str]:
    """The documented names: ``module.name`` for every name of every API module's ``__all__``."""
    sys.path.insert(0, str(ROOT))
    names = [f"distviz.{n}" for n in TOP_LEVEL]
    for modname in API_MODULES:
        mod = importlib.import_module(modname)
        for n in mod.__all__:
            if not isinstance(getattr(mod, n), type(sys)):   # a submodule (families.charts) has its own section
                names.append(f"{modname}.{n}")
    return names


def check_api(html: Path) -> list[str]:
    if not (html / "api" / "index.html").is_file():
        return ["no api/index.html"]
    folder = html / "api" / "generated"
    return [f"no API page for {name} (api/generated/{name}.html)" for name in public_names()
            if not (folder / f"{name}.html").is_file()]


def api_entries() -> list[str]:
    """The objects the API reference lists: ``distviz.<entry>`` for every entry of its autosummary directives."""
    text = (DOCS / "api" / "index.rst").read_text(encoding="utf-8")
    return [f"distviz.{m.group(1)}" for m in re.finditer(r"^   ([a-z_][\w.]*)\s*$", text, flags=re.M)]


def _has_section(doc: str, *titles: str) -> bool:
    """Whether a (dedented) numpydoc docstring has a section of one of these titles (title line, dashes line)."""
    return any(re.search(rf"^{t}\n-{{{len(t)}}}\s*$", doc, flags=re.M) for t in titles)


def check_method_docs() -> list[str]:
    """Problems of the public methods' docstrings of the API reference's classes, one line each.

    Every public method (not a property, not one of ``SKLEARN_METHODS``, not defined outside distviz) of every class
    that ``docs/api/index.rst`` lists needs a ``Parameters`` section when it takes parameters besides self / cls,
    and a ``Returns`` or ``Yields`` section unless its name starts with "fit" (those return self). The docstring is
    the one ``inspect.getdoc`` (and Sphinx) shows, inherited from the class that defines it.
    """
    import inspect

    sys.path.insert(0, str(ROOT))
    problems = []
    for name in api_entries():
        mod, _, attr = name.rpartition(".")
        cls = getattr(importlib.import_module(mod), attr)
        if not inspect.isclass(cls):
            continue
        for meth in sorted(dir(cls)):
            if meth.startswith("_") or meth in SKLEARN_METHODS:
                continue
            raw = inspect.getattr_static(cls, meth)
            if isinstance(raw, property):
                continue
            f = getattr(cls, meth)
            if not callable(f) or inspect.isclass(f):
                continue
            if not str(getattr(f, "__module__", None) or "").startswith("distviz"):
                continue
            try:
                params = [p for p in inspect.signature(f).parameters if p not in ("self", "cls")]
            except (TypeError, ValueError):
                continue
            doc = inspect.getdoc(f) or ""
            if params and not _has_section(doc, "Parameters"):
                problems.append(f"{name}.{meth}: its docstring has no Parameters section")
            if not meth.startswith("fit") and not _has_section(doc, "Returns", "Yields"):
                problems.append(f"{name}.{meth}: its docstring has no Returns or Yields section")
    return problems


def check_results(html: Path) -> list[str]:
    problems = []
    for doc in toctree_entries(DOCS / "results" / "index.rst"):
        page = html / f"{doc}.html"
        if not page.is_file():
            continue   # reported by check_toctrees
        shown = images(page)
        if not shown:
            problems.append(f"{doc}.html shows no figure")
        problems.extend(f"{doc}.html: its figure {p.name} is not in the site" for p in shown if not p.is_file())
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html", nargs="?", default=str(DOCS / "_build" / "html"), help="the built site's folder")
    ap.add_argument("--min-examples", type=int, default=10, help="least number of gallery examples (default 10)")
    args = ap.parse_args(argv)
    html = Path(args.html)
    if not (html / "index.html").is_file():
        print(f"{html}/index.html is missing: build the site first (make docs)")
        return 1
    problems = (check_toctrees(html) + check_gallery(html, args.min_examples) + check_api(html) + check_results(html)
                + check_method_docs())
    for p in problems:
        print(p)
    n_api = len(list((html / "api" / "generated").glob("*.html")))
    print(f"{len(problems)} problems; {n_api} API pages")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
