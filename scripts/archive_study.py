"""Run a distviz study and archive its output as one JSON record under `results/` (distviz.experiments.archive).

Usage (from the repository root):

    python scripts/archive_study.py wgboost-uci --dataset yacht --splits 0-19
    python scripts/archive_study.py mvn-sim --n 500 --reps 10 --methods NGB,IndepNGB,GB,skGB,NN,NN-paper
    python scripts/archive_study.py --scheduler local --workers 2 mvn-sim --n 500 --reps 50

Options before the study's name belong to this script (--out, --scheduler, --workers); everything after it is passed
to the study as on `distviz study NAME`. The record holds the command line, the date, the git commit, the load
average at start and end, the full protocol (`config`, with `protocol: paper | partial | custom`) and the output.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from distviz.experiments.archive import repo_root, run_and_archive


def main(argv=None) -> int:
    """Parse this script's options and the study's, run the study and print the record's path."""
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--out", type=Path, default=repo_root() / "results", help="folder of the records")
    p.add_argument("--scheduler", default=None, help="as distviz study --scheduler: 'local' or an address")
    p.add_argument("--workers", type=int, default=None, help="worker processes of --scheduler local")
    p.add_argument("study", help="study name (distviz studies lists them)")
    a, rest = p.parse_known_args(argv)
    path = run_and_archive(a.study, rest, out_dir=a.out, scheduler=a.scheduler, workers=a.workers,
                           command=["python", "scripts/archive_study.py", *map(str, argv)])
    print(f"wrote {path}")
    print("command:", shlex.join(["python", "scripts/archive_study.py", *argv]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
