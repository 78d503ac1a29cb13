"""Registry of named studies: a decorator to add one and a lookup for the CLI."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

from distviz.errors import ConfigError


@dataclass(frozen=True)
class Option:
    """One command-line option of a study: name, type, default and help text."""

    name: str
    type: Callable[[str], Any] = str
    default: Any = None
    help: str = ""


@dataclass(frozen=True)
class Study:
    """A named study: a function returning a JSON-able dict, and a table formatter."""

    name: str
    run: Callable[..., dict]
    options: tuple[Option, ...] = field(default_factory=tuple)
    help: str = ""
    format_table: Callable[[dict], str] | None = None


_STUDIES: dict[str, Study] = {}


def study(name: str, *, options=(), help: str = "", format_table=None):
    """Decorator that registers `func(**options) -> dict` as study `name`."""

    def wrap(func):
        _STUDIES[name] = Study(name, func, tuple(options), help or (func.__doc__ or "").strip().split("\n")[0],
                               format_table)
        return func

    return wrap


def load_all() -> None:
    """Import every module of `distviz.experiments` so that its studies register."""
    import distviz.experiments as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name != "registry":
            importlib.import_module(f"distviz.experiments.{mod.name}")


def available() -> list[str]:
    """Names of all registered studies, sorted."""
    load_all()
    return sorted(_STUDIES)


def get(name: str) -> Study:
    """The study called `name`; raises ConfigError naming the known studies otherwise."""
    load_all()
    if name not in _STUDIES:
        raise ConfigError(f"Unknown study '{name}'; choose one of: {', '.join(sorted(_STUDIES)) or '(none yet)'}.")
    return _STUDIES[name]


def default_table(result: dict) -> str:
    """Format a study result {method: {metric: value}} as a plain-text table."""
    rows = {k: v for k, v in result.items() if isinstance(v, dict)}
    if not rows:
        return "\n".join(f"{k}: {v}" for k, v in result.items())
    metrics: list[str] = []
    for v in rows.values():
        for m in v:
            if m not in metrics and not isinstance(v[m], (dict, list)):
                metrics.append(m)
    w0 = max(len("method"), *(len(k) for k in rows))
    widths = [max(len(m), 10) for m in metrics]
    out = ["method".ljust(w0) + "  " + "  ".join(m.rjust(w) for m, w in zip(metrics, widths))]
    for k, v in rows.items():
        cells = []
        for m, w in zip(metrics, widths):
            x = v.get(m, "")
            cells.append((f"{x:.4g}" if isinstance(x, float) else str(x)).rjust(w))
        out.append(k.ljust(w0) + "  " + "  ".join(cells))
    extra = {k: v for k, v in result.items() if not isinstance(v, dict)}
    out += [f"{k}: {v}" for k, v in extra.items()]
    return "\n".join(out)
