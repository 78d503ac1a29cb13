"""Archived study runs: one JSON file per run under ``results/``, the source of every results table.

A record holds

* ``study``: the study's name; ``command``: the exact command line that produced it; ``date`` (UTC, ISO 8601);
  ``commit``: the git commit of the code (``+dirty`` when the work tree had uncommitted changes);
* ``load``: the machine's load averages (``os.getloadavg``: 1, 5 and 15 minutes) at the start and at the end, and
  its CPU count: a run on a loaded machine is slower, never different, but the record says so;
* ``config``: the full protocol, every option the study ran with; a study whose output carries its own ``config``
  (``mvn-sim``) has it merged in here instead of kept twice, and ``protocol`` says whether the run is the
  paper's whole protocol (``"paper"``) or a part of it (``"partial"``, e.g. 5 of the 20 splits);
* ``result``: the study's JSON output (what ``distviz study NAME --json`` prints), less its ``config``.

:func:`run_and_archive` runs a study and writes the record (``scripts/archive_study.py`` is its command line);
:func:`load_records` reads every record back, checked, for the docs' results pages and the README's tables.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import subprocess
from pathlib import Path

from distviz.errors import DataError

#: largest record read; a study's output is a few kB (per-split lists included)
MAX_RECORD_BYTES = 1024**2
#: keys every record holds
RECORD_KEYS = ("study", "command", "date", "commit", "load", "config", "result")
#: the paper protocols checked by :func:`protocol_of`: splits or replications and sizes of the published tables
PAPER_UCI_SPLITS = list(range(20))
PAPER_MVN_SIZES = [500, 1000, 3000, 5000, 8000, 10000]
PAPER_MVN_REPS = 50


def jsonable(x):
    """`x` with numpy scalars and arrays converted to plain JSON types, and non-finite floats to None."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.generic):
        return jsonable(x.item())
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def repo_root() -> Path:
    """The repository's root folder (the one holding ``results/``)."""
    return Path(__file__).resolve().parents[2]


def git_commit(root: Path | None = None) -> str:
    """HEAD's commit hash, with ``+dirty`` when tracked files differ from it; ``"unknown"`` outside a git tree."""
    root = root or repo_root()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def portable(value, root: Path | None = None):
    """`value` (a string, or the strings inside a dict or list) with absolute paths into the repository written
    relative to its root, and paths into the ``shared`` folder beside it as ``../shared/...``: a record names the
    files it read and wrote the same way on every machine."""
    root = (root or repo_root()).resolve()
    if isinstance(value, dict):
        return {k: portable(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [portable(v, root) for v in value]
    if not isinstance(value, str):
        return value
    return value.replace(f"{root.parent / 'shared'}/", "../shared/").replace(f"{root}/", "")


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def protocol_of(study: str, config: dict) -> str:
    """``"paper"`` when `config` is the published protocol of `study` in full, ``"partial"`` when it is a part of it
    (fewer splits, replications or sizes), ``"custom"`` for a study without a checked protocol."""
    if study == "wgboost-uci":
        return "paper" if config.get("splits") == PAPER_UCI_SPLITS else "partial"
    if study == "mvn-sim":
        sizes = config.get("sizes", [config.get("n")])
        full = sorted(sizes) == PAPER_MVN_SIZES and config.get("reps") == PAPER_MVN_REPS
        return "paper" if full and config.get("variant", "paper") == "paper" else "partial"
    if study == "drifters":   # the paper's data: the whole processed drifter table (Zenodo 5644972), not a subset
        data = str(config.get("data", "sample"))
        if config.get("study_protocol") != "paper" or data == "sample":
            return "custom"
        whole = "subset" not in Path(data).name and not config.get("max_train") and not config.get("bbox")
        return "paper" if whole and int(config.get("reps") or 0) >= 10 else "partial"
    return "custom"


def _config(study: str, options: dict, result: dict) -> tuple[dict, dict]:
    """(config, result less its config): the options the study ran with, merged with the study's own config."""
    from distviz.data.uci import parse_splits

    config = {k.replace("-", "_"): v for k, v in options.items()}
    if "protocol" in config:   # a study's own --protocol option (drifters): kept apart from the archive's label
        config["study_protocol"] = config.pop("protocol")
    inner = None
    if isinstance(result.get("config"), dict):
        inner = dict(result["config"])
    elif isinstance(result.get("sizes"), dict):   # mvn-sim over several N: one config per N, equal but for n
        inner = {k: v for k, v in next(iter(result["sizes"].values())).get("config", {}).items() if k != "n"}
        inner["sizes"] = [int(n) for n in result["sizes"]]
    if study in ("drifters", "dlm-vs-elbo") and isinstance(result.get("info"), dict):
        # the settings the run used (sizes, grids, the paper protocol's rates), reported by the study, beside the options
        inner = {k: v for k, v in result["info"].items() if k not in ("seconds", "units")}
    label = inner.pop("protocol", None) if inner else None   # the study's own paper / partial / custom word
    if inner:
        config.update(inner)
    if study in ("wgboost-uci", "dlm-vs-elbo") and isinstance(config.get("splits"), str):
        config["splits"] = list(parse_splits(config["splits"]))
    if study == "mvn-sim" and isinstance(config.get("methods"), str):
        config["methods"] = [m.strip() for m in config["methods"].split(",") if m.strip()]
        if "sizes" not in config:
            config["sizes"] = [int(v) for v in str(config.get("n")).split(",") if v.strip()]
    config["protocol"] = label or protocol_of(study, config)
    rest = {k: v for k, v in result.items() if k != "config"}
    return config, rest


def record_name(study: str, config: dict, date: str) -> str:
    """File name of a record: study, data set (when the study has one), protocol and UTC time."""
    parts = [study]
    for key in ("dataset", "data"):
        if isinstance(config.get(key), str) and "/" not in config[key]:
            parts.append(config[key])
            break
    parts += [config.get("protocol", "custom"), date.replace(":", "").replace("-", "")[:13]]
    return "-".join(parts) + ".json"


def run_and_archive(study: str, args: list[str], *, out_dir: Path, scheduler: str | None = None,
                    workers: int | None = None, command: list[str] | None = None) -> Path:
    """Run study `study` with its command-line options `args` and write its record into `out_dir`.

    Parameters
    ----------
    study : str
        A registered study's name.
    args : list of str
        The study's options as on ``distviz study NAME``'s command line.
    out_dir : Path
        Folder of the records (created when missing).
    scheduler, workers : optional
        As ``--scheduler`` / ``--workers`` of ``distviz study``.
    command : list of str, optional
        The command line to record (default: the equivalent ``python -m distviz study`` line).

    Returns
    -------
    Path
        The record written.
    """
    import argparse

    from distviz.experiments import parallel, registry
    from distviz.trees import prepare_numba_cache

    st = registry.get(study)
    sp = argparse.ArgumentParser(prog=f"distviz study {st.name}", description=st.help)
    for opt in st.options:
        sp.add_argument(f"--{opt.name}", type=opt.type, default=opt.default, help=opt.help)
    options = vars(sp.parse_args(args))
    sched = [*(["--scheduler", scheduler] if scheduler else []), *(["--workers", str(workers)] if workers else [])]
    command = command or ["python", "-m", "distviz", "study", study, *args, *sched, "--json"]
    start = datetime.datetime.now(datetime.timezone.utc)
    load_start, commit = _load(), git_commit()
    prepare_numba_cache()
    with parallel.use_scheduler(scheduler, workers):
        result = jsonable(st.run(**{k.replace("-", "_"): v for k, v in options.items()}))
    end = datetime.datetime.now(datetime.timezone.utc)
    config, rest = _config(study, options, result)
    if scheduler:
        config["scheduler"], config["workers"] = scheduler, workers
    record = {"study": study, "command": portable(shlex.join(command)), "date": start.isoformat(timespec="seconds"),
              "end": end.isoformat(timespec="seconds"), "commit": commit,
              "load": {"start": load_start, "end": _load(), "cpus": os.cpu_count()},
              "config": portable(jsonable(config)), "result": rest}
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / record_name(study, config, record["date"])
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def check_record(rec, path: Path | str = "record") -> dict:
    """`rec` when it is a record with every key of RECORD_KEYS of the right type; DataError naming `path` otherwise."""
    if not isinstance(rec, dict):
        raise DataError(f"{path}: an archived study run must be a JSON object.")
    missing = [k for k in RECORD_KEYS if k not in rec]
    if missing:
        raise DataError(f"{path}: archived study run lacks {', '.join(missing)}.")
    for k, t in (("study", str), ("command", str), ("date", str), ("commit", str), ("load", dict), ("config", dict),
                 ("result", dict)):
        if not isinstance(rec[k], t):
            raise DataError(f"{path}: '{k}' must be a {t.__name__}.")
    if rec["config"].get("protocol") not in ("paper", "partial", "custom"):
        raise DataError(f"{path}: config.protocol must be 'paper', 'partial' or 'custom'.")
    return rec


def load_records(folder: Path | None = None, study: str | None = None) -> list[tuple[Path, dict]]:
    """Every record in `folder` (default ``results/`` of the repository), checked, sorted by file name; only those
    of `study` when given."""
    from distviz.data.paths import read_bounded

    folder = folder or repo_root() / "results"
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            rec = json.loads(read_bounded(path, MAX_RECORD_BYTES, what="archived study run"))
        except json.JSONDecodeError as e:
            raise DataError(f"{path.name}: not JSON ({e.msg}).") from None
        check_record(rec, path.name)
        if study is None or rec["study"] == study:
            out.append((path, rec))
    return out
