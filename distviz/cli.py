"""Command-line entry point: `distviz study NAME [--option value ...] [--json]` and `distviz studies`."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from distviz.errors import DistvizError
from distviz.experiments import registry


def _jsonable(x):
    """Convert numpy scalars and arrays inside a result to plain JSON types."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run a named study; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="distviz", description="distviz studies and tools")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("studies", help="list the named studies")
    p_study = sub.add_parser("study", help="run a named study", add_help=False)
    p_study.add_argument("name")
    p_study.add_argument("-h", "--help", action="store_true")
    p_study.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args, rest = parser.parse_known_args(argv)
    try:
        if args.command == "studies":
            for name in registry.available():
                print(f"{name:24s} {registry.get(name).help}")
            return 0
        st = registry.get(args.name)
        sp = argparse.ArgumentParser(prog=f"distviz study {st.name}", description=st.help)
        for opt in st.options:
            sp.add_argument(f"--{opt.name}", type=opt.type, default=opt.default, help=opt.help)
        if args.help:
            sp.print_help()
            return 0
        opts = vars(sp.parse_args(rest))
        result = _jsonable(st.run(**{k.replace("-", "_"): v for k, v in opts.items()}))
        if args.json:
            print(json.dumps(result))
        else:
            print((st.format_table or registry.default_table)(result))
        return 0
    except DistvizError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
