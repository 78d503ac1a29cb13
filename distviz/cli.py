"""Command-line entry point: `distviz app [--port P] [--address A]`,
`distviz study NAME [--option value ...] [--json] [--scheduler local|ADDRESS]`, `distviz studies`,
`distviz data gdp --archive PATH --out PATH`, `distviz warm [GROUP ...] [--scheduler ADDRESS]` and
`distviz lessons check`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from distviz.errors import ConfigError, DistvizError
from distviz.experiments import parallel, registry
from distviz.experiments.archive import jsonable as _jsonable


def _data_gdp(args, rest) -> int:
    """`distviz data gdp`: write the processed table of a GDP archive and print one summary line."""
    from distviz.data.gdp_archive import parse_bbox, write_gdp_table
    from distviz.data.paths import regular_file

    if rest:
        raise ConfigError(f"Unknown option(s) {' '.join(rest)} for 'distviz data gdp'; see 'distviz data gdp --help'.")
    if not Path(args.archive).is_dir():   # a Zarr store is a folder; anything else must be a regular NetCDF file
        regular_file(args.archive, what="GDP archive", max_bytes=None)   # read out of core: no size cap
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a folder; give the path of a new or empty folder.")
    with parallel.use_scheduler(args.scheduler, args.workers):
        info = write_gdp_table(args.archive, args.out, bbox=parse_bbox(args.bbox), start=args.start, end=args.end,
                               chunk_obs=args.chunk_obs, client=parallel.active_client())
    print(f"wrote {info['rows']} daily rows of {info['drifters']} drifters from {info['observations']} observations "
          f"({info['chunks']} chunks) to {info['out']}")
    return 0


def _warm(args) -> int:
    """`distviz warm`: compile the numba kernels into this installation's cache, or into every worker's of a cluster."""
    from distviz.experiments.warm import check_groups, warm_kernels

    groups = list(args.groups)
    check_groups(groups)   # before any cluster is contacted
    if args.scheduler is None:
        seconds = {"this machine": warm_kernels(groups)}
    else:
        with parallel.use_scheduler(args.scheduler, args.workers):
            seconds = parallel.active_client().run(warm_kernels, groups)
    for where, per_group in seconds.items():
        done = ", ".join(f"{g} {s:.1f} s" for g, s in per_group.items())
        print(f"{where}: numba kernels compiled or loaded ({done})")
    return 0


def _lessons_check() -> int:
    """`distviz lessons check`: fit every lesson step's view as its page does, evaluate the step's claims, print one
    line per failing claim (or step without a claim) and a last line 'N steps, M claims, K hold'; 1 when any fails."""
    import warnings

    from distviz.trees import prepare_numba_cache
    from distviz.ui.lesson_check import check_lessons

    prepare_numba_cache()
    from streamlit import config, logger

    config.get_option("logger.level")   # the config, once loaded, would reset the level set below
    logger.set_log_level("error")       # no Streamlit server runs here: its notices about bare mode are noise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = check_lessons()
    for line in report.failures:
        print(line)
    print(report.summary())
    return 0 if report.ok else 1


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run a named study; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="distviz", description="distviz studies and tools")
    sub = parser.add_subparsers(dest="command", required=True)
    p_app = sub.add_parser("app", help="serve the app (default: this machine only, http://127.0.0.1:8501)")
    p_app.add_argument("--address", help="listen on this address (0.0.0.0: every interface, for a class)")
    p_app.add_argument("--port", type=int, help="port (default 8501)")
    p_app.add_argument("--workers", help="app server processes behind a proxy (default 1; auto: one per core, at most "
                                         "4, which `make serve` asks for)")
    sub.add_parser("studies", help="list the named studies")
    p_study = sub.add_parser("study", help="run a named study", add_help=False)
    p_study.add_argument("name")
    p_study.add_argument("-h", "--help", action="store_true")
    p_study.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p_study.add_argument("--scheduler", default=None,
                         help="run the study's replications / splits as Dask tasks: 'local' or a scheduler address")
    p_study.add_argument("--workers", type=int, default=None, help="worker processes of --scheduler local (default 2)")
    p_data = sub.add_parser("data", help="prepare data sets")
    data_sub = p_data.add_subparsers(dest="data_command", required=True)
    p_gdp = data_sub.add_parser("gdp", help="the processed drifter table from a GDP ragged-array archive, out of core")
    p_gdp.add_argument("--archive", required=True, help="GDP ragged-array NetCDF file or Zarr store")
    p_gdp.add_argument("--out", required=True, help="output directory for the Parquet table")
    p_gdp.add_argument("--bbox", default=None, help="lon0,lon1,lat0,lat1 to keep, written --bbox=-83,-40,0,70")
    p_gdp.add_argument("--start", default=None, help="first day to keep, e.g. 2010-01-01")
    p_gdp.add_argument("--end", default=None, help="last day to keep (inclusive), e.g. 2019-12-31")
    p_gdp.add_argument("--chunk-obs", type=int, default=2_000_000, help="observations per task (whole trajectories)")
    p_gdp.add_argument("--scheduler", default=None, help="'local' or a Dask scheduler address (default: threads here)")
    p_gdp.add_argument("--workers", type=int, default=None, help="worker processes of --scheduler local (default 2)")
    p_warm = sub.add_parser("warm", help="compile the numba kernels once into the installation's cache "
                                         "(on every worker of a cluster with --scheduler)")
    p_warm.add_argument("groups", nargs="*", help="kernel groups to warm: common, wide (default: all)")
    p_warm.add_argument("--scheduler", default=None,
                        help="warm every worker of the Dask cluster at this address ('local': a local cluster)")
    p_warm.add_argument("--workers", type=int, default=None, help="worker processes of --scheduler local (default 2)")
    p_lessons = sub.add_parser("lessons", help="lesson tools")
    lessons_sub = p_lessons.add_subparsers(dest="lessons_command", required=True)
    lessons_sub.add_parser("check", help="fit every lesson step's view and check the claims its TOML states")
    args, rest = parser.parse_known_args(argv)
    if args.command == "app":   # Streamlit's server runs until it is stopped; other options go to `streamlit run`
        from distviz.ui.serve import main as serve

        serve([*(["--address", args.address] if args.address is not None else []),
               *(["--port", str(args.port)] if args.port is not None else []),
               *(["--workers", str(args.workers)] if args.workers is not None else []), *rest])
        return 0
    try:
        if args.command == "studies":
            for name in registry.available():
                print(f"{name:24s} {registry.get(name).help}")
            return 0
        if args.command == "data":
            return _data_gdp(args, rest)
        if args.command == "warm":
            if rest:
                raise ConfigError(f"Unknown option(s) {' '.join(rest)} for 'distviz warm'; see 'distviz warm --help'.")
            return _warm(args)
        if args.command == "lessons":
            if rest:
                raise ConfigError(f"Unknown option(s) {' '.join(rest)} for 'distviz lessons check'; "
                                  f"see 'distviz lessons --help'.")
            return _lessons_check()
        st = registry.get(args.name)
        sp = argparse.ArgumentParser(prog=f"distviz study {st.name}", description=st.help)
        for opt in st.options:
            sp.add_argument(f"--{opt.name}", type=opt.type, default=opt.default, help=opt.help)
        if args.help:
            sp.print_help()
            return 0
        opts = vars(sp.parse_args(rest))
        from distviz.trees import prepare_numba_cache

        prepare_numba_cache()   # numba cache files compiled from older sources go before the study's first fit
        with parallel.use_scheduler(args.scheduler, args.workers):
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
