"""Write the README's estimator table from the user guide's machine-readable copy.

``docs/user_guide/estimators.csv`` is the one table of the estimators' contract (issue 28): the user guide shows
it whole (``estimators.rst``), ``tests/test_user_guide.py`` checks every cell against the code, and this script
writes its short form (the columns that differ between estimators) into ``README.md`` between the markers
``<!-- estimator-table ... -->`` and ``<!-- /estimator-table -->``::

    python scripts/estimator_table.py           # rewrite README.md
    python scripts/estimator_table.py --check   # exit 1 when README.md's table is not the CSV's
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "docs" / "user_guide" / "estimators.csv"
README = ROOT / "README.md"
#: the columns the README leaves out: the same for every estimator (a test checks that), stated in a sentence
UNIFORM = ("learning_rate", "feature_names_in_", "score(X, y)")
BEGIN = "<!-- estimator-table"
END = "<!-- /estimator-table -->"


def read_table(path: Path = CSV) -> list[dict]:
    """The CSV's rows as dicts keyed by its header's names (``n_iter_`` -> n_iter_)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    keys = [h.strip("`") for h in rows[0]]
    return [dict(zip(keys, r, strict=True)) for r in rows[1:]]


#: an RST cross-reference to the API reference, :class:`~distviz.module.Name`
ROLE = re.compile(r":class:`~?((?:\w+\.)*)(\w+)`")


def names(cell: str) -> list[str]:
    """The code names a cell gives, as ``x`` or as a cross-reference (its last component), in order."""
    return [m.group(1) or m.group(3) for m in re.finditer(r"``(\w+)``|" + ROLE.pattern, cell)]


def targets(cell: str) -> list[str]:
    """The full dotted names of a cell's cross-references."""
    return [m.group(1) + m.group(2) for m in ROLE.finditer(cell)]


def _md(cell: str) -> str:
    """An RST cell as Markdown: ``x`` and :class:`~a.x` -> `x`, pipes escaped."""
    return re.sub(r"``([^`]+)``", r"`\1`", ROLE.sub(r"`\2`", cell)).replace("|", "\\|")


def markdown(rows: list[dict]) -> str:
    """The short table in Markdown, one line per estimator."""
    cols = [c for c in rows[0] if c not in UNIFORM]
    lines = ["| " + " | ".join(c if c == "estimator" else f"`{c}`" for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_md(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def with_table(text: str, table: str) -> str:
    """README text with the lines between the markers replaced by `table`."""
    pat = re.compile(rf"({re.escape(BEGIN)}[^\n]*\n)(.*?)(^{re.escape(END)})", re.S | re.M)
    if not pat.search(text):
        raise SystemExit(f"README.md has no {BEGIN} ... {END} markers")
    return pat.sub(lambda m: m.group(1) + table + "\n" + m.group(3), text, count=1)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 when README.md differs instead of writing it")
    a = p.parse_args(argv)
    text = README.read_text()
    new = with_table(text, markdown(read_table()))
    if a.check:
        if new != text:
            print("README.md's estimator table differs from docs/user_guide/estimators.csv: "
                  "run python scripts/estimator_table.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
