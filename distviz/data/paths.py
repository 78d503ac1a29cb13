"""Where data live (files shipped inside the package, the shared real-data folder), and the one policy for
opening a file that a user or an environment variable names.

Policy (every refusal is a ``DataError`` carrying one sentence):

* a folder option ($DISTVIZ_DATA, $DISTVIZ_LESSONS, a study's ``--root``) is resolved once
  (:meth:`pathlib.Path.resolve`); a name inside it is opened only when it resolves inside that folder
  (:func:`safe_child`): an absolute name, a ``..`` component, or a symbolic link that points out of
  the folder is refused, and so is a symbolic-link loop;
* a file option (``--data``) must name a regular file of bounded size (:func:`regular_file`): a
  folder, a FIFO, a socket or a device is refused from its ``stat`` before anything opens it, so a
  FIFO cannot block the reader;
* a file read whole into memory is read by :func:`read_bounded`, which opens it without blocking,
  checks on the open descriptor that it is a regular file, and never reads more than its cap.
"""

from __future__ import annotations

import atexit
import os
import stat
from contextlib import ExitStack
from functools import lru_cache
from importlib import resources
from pathlib import Path

from distviz.errors import DataError

__all__ = ["REPO_ROOT", "MAX_DATA_FILE_BYTES", "package_file", "sample_file", "shared_data_dir", "shared_data_path",
           "safe_child", "regular_file", "read_bounded"]

#: the folder above the package: the repository of a checkout (whose sibling ``shared/data`` holds real data)
REPO_ROOT = Path(__file__).resolve().parents[2]

#: files that `package_file` had to extract (a package imported from a zip archive), removed when Python exits
_EXTRACTED = ExitStack()
atexit.register(_EXTRACTED.close)


@lru_cache(maxsize=None)
def package_file(package: str, *parts: str) -> Path:
    """A file or folder shipped inside a distviz package, as a path on the file system.

    Read through :mod:`importlib.resources`, so it is found wherever the package is installed (a checkout, a
    wheel in any environment); a package imported from a zip archive has the file extracted to a temporary
    path for the life of the process.

    Parameters
    ----------
    package : str
        The package that ships it, such as ``"distviz.data"``.
    *parts : str
        Its relative path inside that package, such as ``"sample", "posterior_ood_default.json"``.

    Returns
    -------
    Path
        The path (it may not exist when the installation lacks the file; the reader checks).
    """
    return _EXTRACTED.enter_context(resources.as_file(resources.files(package).joinpath(*parts)))


def sample_file(name: str) -> Path:
    """Path of a file shipped in ``distviz/data/sample``: the synthetic drifter sample and the precomputed results
    of the app's first views (written by ``scripts/make_drifter_sample.py`` and ``scripts/make_posterior_ood_default.py``)."""
    return package_file("distviz.data", "sample", name)

#: largest data file (a ``--data`` table, a file of a data folder) that the loaders read into memory
MAX_DATA_FILE_BYTES = 2 * 1024**3


def _resolve(path: Path, what: str) -> Path:
    """path.resolve(), with a symbolic-link loop (RuntimeError before Python 3.13, OSError after) as a DataError."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        raise DataError(f"The {what} {path.name} is a symbolic-link loop; point the link at a real file.") from None


def safe_child(folder: str | Path, *parts: str, what: str = "file") -> Path:
    """The resolved path of ``folder/parts...``, refused unless it stays inside the resolved `folder`.

    Parameters
    ----------
    folder : str or Path
        The folder an option or environment variable names (resolved here; it need not exist).
    *parts : str
        Relative names below it, such as ``"cde", "bmd.tsv"``.
    what : str
        What the path is, for the sentence ("file", "lesson file", ...).

    Returns
    -------
    Path
        The resolved path (it may not exist; the caller checks).

    Raises
    ------
    DataError
        When a part is empty, absolute, holds ``..`` or a NUL byte, or the path resolves outside the
        folder (a symbolic link that points elsewhere), or is a symbolic-link loop.
    """
    root = _resolve(Path(folder), "folder")
    for part in parts:
        p = Path(part)
        if not str(part) or "\x00" in str(part) or p.is_absolute() or ".." in p.parts:
            raise DataError(f"The {what} name {str(part)[:80]!r} is not a plain name inside the folder {root.name}; "
                            "give a relative name without '..'.")
    real = _resolve(root.joinpath(*parts), what)
    if real != root and not real.is_relative_to(root):
        raise DataError(f"The {what} {Path(*parts).as_posix()[:80]} resolves outside the folder {root.name} (a symbolic "
                        "link that points elsewhere); copy the file into the folder instead.")
    return real


def _size_text(n: int) -> str:
    return f"{n / 1024**3:.3g} GiB" if n >= 1024**3 else f"{n / 1024**2:.3g} MiB" if n >= 1024**2 else f"{n} bytes"


def _check_stat(st: os.stat_result, name: str, what: str, max_bytes: int | None) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
        raise DataError(f"The {what} {name} is {kind}, not a regular file; give the path of a file.")
    if max_bytes is not None and st.st_size > max_bytes:
        raise DataError(f"The {what} {name} holds {_size_text(st.st_size)}, more than the {_size_text(max_bytes)} "
                        "this reader accepts; give a smaller file.")


def regular_file(path: str | Path, *, what: str = "data file", max_bytes: int | None = MAX_DATA_FILE_BYTES) -> Path:
    """`path` when it names an existing regular file of at most `max_bytes`, checked without opening it.

    Parameters
    ----------
    path : str or Path
        The file a user named (a symbolic link is followed).
    what : str
        What the file is, for the sentence.
    max_bytes : int or None
        Size cap; None for none (a reader that streams the file).

    Returns
    -------
    Path
        `path` as a Path.

    Raises
    ------
    DataError
        When the path does not exist, is a folder, FIFO, socket or device, is a symbolic-link loop,
        cannot be examined, or is larger than `max_bytes`.
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise DataError(f"The {what} {p} does not exist; check the path.") from None
    except OSError as exc:
        why = "is a symbolic-link loop" if "loop" in str(exc).lower() else "cannot be examined"
        raise DataError(f"The {what} {p} {why}; give the path of a readable file.") from None
    _check_stat(st, str(p), what, max_bytes)
    return p


def read_bounded(path: str | Path, max_bytes: int, *, what: str = "file") -> bytes:
    """The bytes of a regular file of at most `max_bytes`, opened without blocking (a FIFO is refused, not waited on).

    Parameters
    ----------
    path : str or Path
        The file.
    max_bytes : int
        The most bytes read; a longer file is refused.
    what : str
        What the file is, for the sentence (named by its file name only).

    Returns
    -------
    bytes

    Raises
    ------
    DataError
        When the file cannot be opened, is not a regular file, or is longer than `max_bytes`.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        raise DataError(f"The {what} {p.name} could not be read; check that it exists and is readable.") from None
    try:
        _check_stat(os.fstat(fd), p.name, what, max_bytes)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError:
        raise DataError(f"The {what} {p.name} could not be read; check that it exists and is readable.") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:   # grew after the size check
        raise DataError(f"The {what} {p.name} holds more than the {_size_text(max_bytes)} this reader accepts; "
                        "give a smaller file.")
    return data


def shared_data_dir() -> Path:
    """The shared real-data folder, resolved: $DISTVIZ_DATA if set, else `../shared/data` beside the repository."""
    env = os.environ.get("DISTVIZ_DATA")
    if env:
        return _resolve(Path(env), "data folder ($DISTVIZ_DATA)")
    return (REPO_ROOT.parent / "shared" / "data").resolve()


def shared_data_path(*parts: str) -> Path | None:
    """Path of a file or folder under the shared data folder, or None when it is absent.

    Raises
    ------
    DataError
        When the name leaves the folder (see :func:`safe_child`).
    """
    p = safe_child(shared_data_dir(), *parts, what="data file")
    return p if p.exists() else None
