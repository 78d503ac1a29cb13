"""Compile distviz's numba kernels once and leave them in numba's cache (``distviz.experiments.warm``).

``make test`` runs this beside ruff and mypy: on a fresh checkout the kernels are then compiled once, in the
background, instead of by each test worker at its first fit (about a minute of LLVM per process).  It only
warms a cache: any error here is reported and ignored, the tests themselves check the code.
Run: ``python scripts/warm_numba.py [common|wide]`` (both groups when none is named; ``make test`` runs the two
groups as two processes).  ``distviz warm`` is the same for an installed package.
"""

from __future__ import annotations

import sys
import traceback


def main(argv: list[str]) -> int:
    """Warm the named groups (all when none is named); print how long each took (or the error); return 0."""
    from distviz.experiments.warm import GROUPS, warm_kernels

    unknown = [a for a in argv if a not in GROUPS]
    if unknown:
        print(f"warm_numba: no group named {', '.join(unknown)} (groups: {', '.join(GROUPS)}); nothing warmed",
              file=sys.stderr)
        return 0
    for name in argv or list(GROUPS):
        try:
            seconds = warm_kernels([name])[name]
        except Exception:   # a cache warmer must not fail the build: the tests report real errors
            traceback.print_exc(limit=3)
            print(f"warm_numba: a warm-up fit of {name!r} failed (ignored)", file=sys.stderr)
            continue
        print(f"warm_numba: {name} kernels compiled or loaded in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
