"""Uploaded tables for the Lab and the Drifters page: parsed once per file content, kept in a byte-bounded cache.

Streamlit reruns the whole page on every interaction; the uploaded bytes come back each time, so the
parsed table (or the sentence saying why it cannot be used) is cached on the content hash. The cache
is process-wide (the same file uploaded by two students is parsed once) and bounded by the memory
of the frames it holds, not by a number of entries. Frames from it are shared: callers must not
modify them in place.

A file is checked here first, without pandas and in time linear in its size: its size, its number of
columns, the length of its header row and of its longest value (:func:`distviz.data.tables.check_csv_shape`);
each limit refuses the file in one sentence.  pandas then reads it in a worker process
(:mod:`distviz.data.parse_worker`), never in the page's thread: the worker is stopped when it has spent
:data:`PARSE_CPU_SECONDS` of CPU time on the file, when the page has waited :data:`PARSE_WAIT_SECONDS`, or
when Streamlit stops or reruns the page (a closed tab, a new interaction).  A sentence about the file is
cached with it; one about the server (busy, stopped) is not, and neither is a cancelled parse.
"""

from __future__ import annotations

import hashlib
import threading

from distviz.data import parse_worker
from distviz.data.parse_worker import ParseUnavailable
from distviz.errors import DataError

from .jobs import ResultStore, _env_number

#: Largest upload accepted (Streamlit's server.maxUploadSize is set to the same in .streamlit/config.toml).
MAX_UPLOAD_MB = 20
#: Most rows of a Lab upload (the fits are interactive).
MAX_UPLOAD_ROWS = 20000
#: Most columns of a Lab upload (every column name goes to the pickers).
MAX_UPLOAD_COLUMNS = 200
#: Most columns of a drifter upload (it needs the 12 of the processed table, 5 more for a known truth).
MAX_DRIFTER_COLUMNS = 64
#: Longest header row of an upload, in characters.
MAX_HEADER_CHARS = 16384
#: Longest value (one cell, a column name included) of an upload, in characters.
MAX_CELL_CHARS = 1024
#: CPU seconds a worker may spend reading one upload (environment variable ``DISTVIZ_MAX_PARSE_CPU_SECONDS``).
PARSE_CPU_SECONDS = _env_number("DISTVIZ_MAX_PARSE_CPU_SECONDS", 10.0, 0.05)
#: Seconds a page waits for one upload to be read, a free worker included (``DISTVIZ_MAX_PARSE_WAIT_SECONDS``).
PARSE_WAIT_SECONDS = _env_number("DISTVIZ_MAX_PARSE_WAIT_SECONDS", 60.0, 0.05)
#: Memory the cached frames may hold together, in bytes.
MAX_CACHE_BYTES = 128 * 1024 * 1024

_lock = threading.Lock()
#: the parsed frames (or the sentences about their files) by (kind, content digest)
_store = ResultStore(MAX_CACHE_BYTES)
#: Number of times a file was actually parsed (tests read it to check that reruns hit the cache).
parse_count = [0]


_last_digest: list = [None, ""]   # the last bytes object hashed and its digest: one hash per rerun, not one per use


def _digest(data: bytes) -> str:
    """SHA-1 hex digest of `data`, remembered for the very same bytes object (hashing a large upload once per rerun is enough)."""
    with _lock:
        if _last_digest[0] is data:
            return _last_digest[1]
    d = hashlib.sha1(data).hexdigest()
    with _lock:
        _last_digest[0], _last_digest[1] = data, d
    return d


def content_hash(data: bytes | None) -> str:
    """Short content hash of uploaded bytes ('' for none)."""
    return "" if not data else _digest(data)[:16]


def _frame_bytes(df) -> int:
    """Memory held by a DataFrame (deep)."""
    return int(df.memory_usage(index=True, deep=True).sum())


def _cached(kind: str, data: bytes, parse, size_of=_frame_bytes):
    """parse(data) once per (kind, content); a DataError is cached too and raised again on every call."""
    key = (kind, _digest(data))
    value = _store.get(key)
    if value is None:
        parse_count[0] += 1
        try:
            value = parse(data)
        except ParseUnavailable:
            raise                     # says nothing about the file: read it again next time
        except DataError as exc:
            value = exc
        _store.put(key, value, 256 if isinstance(value, DataError) else size_of(value))
    if isinstance(value, DataError):
        raise DataError(str(value))
    return value


def clear_cache() -> None:
    """Forget every parsed upload (tests)."""
    _store.clear()
    with _lock:
        _last_digest[0], _last_digest[1] = None, ""


def _check_size(data: bytes, what: str) -> None:
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise DataError(f"The file is larger than {MAX_UPLOAD_MB} MB; upload a smaller {what}.")


def _yield_check() -> None:
    """Streamlit's yield check (raises when the page is stopped or rerun), or nothing outside a page."""
    from distviz.ui.jobs import _yield_check as check

    check()


def _read_upload(kind: str, data: bytes, what: str, max_columns: int, **options):
    """Checks on the bytes here, then PARSERS[kind] in a worker process (see the module docstring)."""
    from distviz.data.tables import check_csv_shape, csv_layout

    _check_size(data, "CSV")
    text, sep, _ = csv_layout(data, what=what)
    check_csv_shape(text, sep, what=what, max_columns=max_columns, max_header_chars=MAX_HEADER_CHARS,
                    max_cell_chars=MAX_CELL_CHARS)
    del text
    options.update(what=what, max_columns=max_columns, max_header_chars=MAX_HEADER_CHARS)
    return parse_worker.parse(kind, data, options, cpu_s=PARSE_CPU_SECONDS, wall_s=PARSE_WAIT_SECONDS,
                              wait=_yield_check, what=what)


def _parse_lab(data: bytes):
    """Numeric columns of a Lab upload, or a DataError sentence."""
    return _read_upload("lab", data, "The uploaded file", MAX_UPLOAD_COLUMNS, max_rows=MAX_UPLOAD_ROWS)


def lab_table(data: bytes):
    """The numeric columns of a CSV uploaded to the Lab (parsed once per content); DataError when unusable."""
    return _cached("lab", data, _parse_lab)


def _parse_drifters(data: bytes):
    """A processed drifter table from an upload, validated, or a DataError sentence."""
    return _read_upload("drifters", data, "The uploaded drifter file", MAX_DRIFTER_COLUMNS)


def _drifter_bytes(d) -> int:
    """Memory held by a DrifterData's arrays."""
    return int(sum(a.nbytes for a in (d.X, d.Y, d.lon, d.lat, d.id, d.t)))


def drifter_table(data: bytes):
    """The DrifterData of an uploaded processed-drifter CSV (parsed and validated once per content)."""
    return _cached("drifters", data, _parse_drifters, _drifter_bytes)
