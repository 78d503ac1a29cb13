"""Uploaded tables for the Lab and the Drifters page: parsed once per file content, kept in a byte-bounded cache.

Streamlit reruns the whole page on every interaction; the uploaded bytes come back each time, so the
parsed table (or the sentence saying why it cannot be used) is cached on the content hash. The cache
is process-wide (the same file uploaded by two students is parsed once) and bounded by the memory
of the frames it holds, not by a number of entries. Frames from it are shared: callers must not
modify them in place.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from distviz.errors import DataError

#: Largest upload accepted (Streamlit's server.maxUploadSize is set to the same in .streamlit/config.toml).
MAX_UPLOAD_MB = 20
#: Most rows of a Lab upload (the fits are interactive).
MAX_UPLOAD_ROWS = 20000
#: Memory the cached frames may hold together, in bytes.
MAX_CACHE_BYTES = 128 * 1024 * 1024

_lock = threading.Lock()
_cache: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
_bytes = [0]
#: Number of times a file was actually parsed (tests read it to check that reruns hit the cache).
parse_count = [0]


_last_digest: list = [None, ""]   # the last bytes object hashed and its digest: one hash per rerun, not one per use


def _digest(data: bytes) -> str:
    """SHA-1 hex digest of `data`, remembered for the very same bytes object (a 20 MB upload takes ~35 ms)."""
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
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    if hit is None:
        parse_count[0] += 1
        try:
            value = parse(data)
        except DataError as exc:
            value = exc
        size = 256 if isinstance(value, DataError) else size_of(value)
        with _lock:
            if key not in _cache and size <= MAX_CACHE_BYTES:
                _cache[key] = (value, size)
                _bytes[0] += size
                while _bytes[0] > MAX_CACHE_BYTES and len(_cache) > 1:
                    _, (_, s) = _cache.popitem(last=False)
                    _bytes[0] -= s
        hit = (value, size)
    value = hit[0]
    if isinstance(value, DataError):
        raise DataError(str(value))
    return value


def clear_cache() -> None:
    """Forget every parsed upload (tests)."""
    with _lock:
        _cache.clear()
        _bytes[0] = 0
        _last_digest[0], _last_digest[1] = None, ""


def _check_size(data: bytes, what: str) -> None:
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise DataError(f"The file is larger than {MAX_UPLOAD_MB} MB; upload a smaller {what}.")


def _parse_lab(data: bytes):
    """Numeric columns of a Lab upload, or a DataError sentence."""
    import pandas as pd

    from distviz.data.tables import read_csv_bytes

    _check_size(data, "CSV")
    df = read_csv_bytes(data, what="The uploaded file", nrows=MAX_UPLOAD_ROWS + 1)
    if df.shape[0] > MAX_UPLOAD_ROWS:
        raise DataError(f"The CSV has more than {MAX_UPLOAD_ROWS} rows; upload at most {MAX_UPLOAD_ROWS} rows.")
    num = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    if len(num) < 2:
        text = [c for c in df.columns if c not in num]
        hint = f" (column(s) {', '.join(map(repr, text[:3]))} hold text)" if text else ""
        raise DataError(f"The CSV has {len(num)} numeric column(s){hint}; it needs at least two numeric columns "
                        f"(one x and one y) under a header row.")
    if df.shape[0] < 10:
        raise DataError(f"The CSV has {df.shape[0]} row(s); it needs at least 10 rows of data under the header.")
    return df[num]


def lab_table(data: bytes):
    """The numeric columns of a CSV uploaded to the Lab (parsed once per content); DataError when unusable."""
    return _cached("lab", data, _parse_lab)


def _parse_drifters(data: bytes):
    """A processed drifter table from an upload, validated, or a DataError sentence."""
    from distviz.data.drifters import table_from_frame
    from distviz.data.tables import read_csv_bytes

    _check_size(data, "CSV")
    df = read_csv_bytes(data, what="The uploaded drifter file")
    return table_from_frame(df, source="uploaded CSV")


def _drifter_bytes(d) -> int:
    """Memory held by a DrifterData's arrays."""
    return int(sum(a.nbytes for a in (d.X, d.Y, d.lon, d.lat, d.id, d.t)))


def drifter_table(data: bytes):
    """The DrifterData of an uploaded processed-drifter CSV (parsed and validated once per content)."""
    return _cached("drifters", data, _parse_drifters, _drifter_bytes)
