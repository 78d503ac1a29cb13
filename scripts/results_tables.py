"""Write (or check) the README's results tables from the archived study runs `results/*.json`.

Usage (from the repository root):

    python scripts/results_tables.py            # print the generated block
    python scripts/results_tables.py --write    # rewrite the block of README.md between its two markers
    python scripts/results_tables.py --check    # exit 1 when README.md's block differs from results/*.json

The tables are those of distviz.experiments.result_tables, which the docs' results pages use as well.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from distviz.experiments.archive import load_records, repo_root
from distviz.experiments.result_tables import README_BEGIN, README_END, readme_block


def readme_parts(text: str) -> tuple[str, str, str]:
    """(before, block, after) of README text around its generated block; ValueError when the markers are missing."""
    i, j = text.find(README_BEGIN), text.find(README_END)
    if i < 0 or j < i:
        raise ValueError("README.md lacks the generated results block's markers")
    return text[:i], text[i:j + len(README_END)], text[j + len(README_END):]


def main(argv=None) -> int:
    """Print, write or check the README's generated block."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite README.md's block")
    g.add_argument("--check", action="store_true", help="exit 1 when README.md's block is stale")
    a = p.parse_args(argv)
    block = readme_block(load_records())
    if not (a.write or a.check):
        print(block)
        return 0
    readme = repo_root() / "README.md"
    before, old, after = readme_parts(readme.read_text())
    if a.check:
        if old != block:
            print("README.md's results tables differ from results/*.json; run scripts/results_tables.py --write",
                  file=sys.stderr)
            return 1
        return 0
    Path(readme).write_text(before + block + after)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
