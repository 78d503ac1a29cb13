"""Tables from untrusted files, read as data only: CSV bytes in any common encoding, pandas HDF5 without pickles.

Nothing here unpickles, evaluates or imports anything taken from a file.

* :func:`read_csv_bytes` decodes UTF-8 (with or without BOM), UTF-16 (BOM or not) and falls back to
  cp1252 / latin-1 (Excel exports), sniffs the delimiter among ``, ; TAB |`` and reads a decimal comma
  when the delimiter is ``;``.  Limits on the number of columns, the length of the header row and of
  one value are checked on the text before pandas reads it (:func:`check_csv_shape`).
* :func:`read_hdf_frame` reads the tables that ``pandas.DataFrame.to_hdf`` writes (formats ``fixed``
  and ``table``) through PyTables, numeric and text arrays only.  ``pandas.read_hdf`` is never used: it
  unpickles object columns, and PyTables itself unpickles every node attribute that looks like a
  pickle as soon as the node is opened.  While a file is open here, PyTables' unpickler is replaced by
  :func:`literal_from_pickle`, a decoder of plain literals (None, bool, int, float, str, bytes, and
  lists, tuples and dicts of them) that walks the opcodes with :mod:`pickletools` and refuses every
  opcode that would look up or call anything.  Object columns are refused with one sentence.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import pickletools
import re
import threading
from pathlib import Path

import numpy as np

from distviz._optional import missing
from distviz.errors import DataError

#: Delimiters tried by the sniffer, in order of preference on ties (a comma may also be a decimal mark).
DELIMITERS = (";", "\t", "|", ",")
_DELIM_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}
_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d*,\d+(?:[eE][+-]?\d+)?\s*$")


# ----------------------------------------------------------------------------------------------
# CSV


def decode_text(data: bytes) -> tuple[str, str]:
    """Text and encoding name of uploaded bytes: UTF-8 (BOM or not), UTF-16/32 (BOM or not), else cp1252 / latin-1."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8):].decode("utf-8", errors="replace"), "UTF-8 with BOM"
    for bom, enc in ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
                     (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom):].decode(enc, errors="replace"), enc.upper()
    head = data[:4096]
    if len(head) >= 4 and head.count(0) * 3 >= len(head):  # UTF-16 without a BOM: every other byte is NUL
        even, odd = head[0::2].count(0), head[1::2].count(0)
        enc = "utf-16-le" if odd > even else "utf-16-be"
        return data.decode(enc, errors="replace"), enc.upper()
    try:
        return data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def sniff_delimiter(lines: list[str]) -> str | None:
    """The delimiter among , ; TAB | that splits `lines` (header first) into the same number (> 1) of fields, or None."""
    best, best_score = None, (0.0, 0)
    for d in DELIMITERS:
        counts = [len(row) for row in csv.reader(lines, delimiter=d) if row]
        if not counts or counts[0] < 2:
            continue
        same = sum(c == counts[0] for c in counts) / len(counts)
        score = (round(same, 2), counts[0])
        if same >= 0.8 and score > best_score:
            best, best_score = d, score
    return best


def csv_layout(data: bytes, *, what: str = "The file") -> tuple[str, str, str]:
    """Decoded text, delimiter and decimal mark of CSV bytes (the steps before pandas), or a DataError sentence."""
    if not data or not data.strip():
        raise DataError(f"{what} is empty; give a text table with a header row and one row per observation.")
    text, _enc = decode_text(data)
    if "\x00" in text:
        raise DataError(f"{what} is not a text table (it holds binary data); save it as CSV and try again.")
    lines = [ln for ln in text[:65536].splitlines()[:60] if ln.strip()]
    sep = sniff_delimiter(lines)
    if sep is None:
        raise DataError(f"{what} has only one column (no comma, semicolon, tab or | between the names of its header "
                        f"row); it needs at least two numeric columns under a header row.")
    decimal = "."
    if sep == ";":
        cells = [c for row in csv.reader(lines[1:], delimiter=";") for c in row]
        if any(_DECIMAL_COMMA.match(c) for c in cells):
            decimal = ","
    return text, sep, decimal


_QUOTED = re.compile(r'"[^"\r\n]*"')
_FIRST_TEXT = re.compile(r"\S")


def header_line(text: str) -> str:
    """The first non-blank line of `text` (the header row pandas reads), without its line end."""
    m = _FIRST_TEXT.search(text)
    if m is None:
        return ""
    p = m.start()
    start = max(text.rfind("\n", 0, p), text.rfind("\r", 0, p)) + 1
    ends = [e for e in (text.find("\n", p), text.find("\r", p)) if e >= 0]
    return text[start:min(ends) if ends else len(text)]


def count_fields(line: str, sep: str) -> int:
    """Number of fields of one CSV line split at `sep`, a delimiter inside double quotes not counting."""
    if '"' in line:
        line = _QUOTED.sub("", line)
    return line.count(sep) + 1


def longest_cell(text: str, sep: str, *, chunk: int = 1 << 20) -> tuple[int, int]:
    """Length of the longest run of characters between delimiters and line ends in `text`, and the index where it ends.

    Quotes are not honoured (a quoted delimiter or line end splits the run), so the length is never more
    than that of the longest value pandas would read on one line.  The text is scanned in chunks of
    `chunk` characters with NumPy, in time linear in its length.
    """
    marks = (ord(sep), 10, 13)
    best, best_end, run = 0, 0, 0
    for start in range(0, len(text), chunk):
        a = np.frombuffer(text[start:start + chunk].encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        b = np.flatnonzero((a == marks[0]) | (a == marks[1]) | (a == marks[2]))
        if b.size == 0:
            run += a.size
            continue
        first = run + int(b[0])
        if first > best:
            best, best_end = first, start + int(b[0])
        if b.size > 1:
            gaps = np.diff(b) - 1
            k = int(np.argmax(gaps))
            if int(gaps[k]) > best:
                best, best_end = int(gaps[k]), start + int(b[k + 1])
        run = a.size - 1 - int(b[-1])
    if run > best:
        best, best_end = run, len(text)
    return best, best_end


def check_csv_shape(text: str, sep: str, *, what: str = "The file", max_columns: int | None = None,
                    max_header_chars: int | None = None, max_cell_chars: int | None = None) -> int:
    """Number of columns of a CSV text; a DataError sentence when it has more columns, a longer header row or a
    longer value than allowed (``None``: no limit).

    Every check reads the characters once, without pandas: the header row for the first two, the whole text in
    NumPy chunks for the value length (see :func:`longest_cell`).
    """
    header = header_line(text)
    n_cols = count_fields(header, sep)
    if max_columns is not None and n_cols > max_columns:
        raise DataError(f"{what} has {n_cols} columns; this server reads at most {max_columns}, so keep the columns "
                        f"you need and upload it again.")
    if max_header_chars is not None and len(header) > max_header_chars:
        raise DataError(f"The header row of {_lower(what)} is {len(header)} characters long; this server reads header "
                        f"rows of at most {max_header_chars} characters, so shorten the column names and upload it again.")
    if max_cell_chars is not None:
        longest, end = longest_cell(text, sep)
        if longest > max_cell_chars:
            line = text.count("\n", 0, end) + 1
            raise DataError(f"{what} holds a value of {longest} characters on line {line}; this server reads values "
                            f"of at most {max_cell_chars} characters, so shorten or drop that column and upload it again.")
    return n_cols


def _lower(what: str) -> str:
    """`what` as the middle of a sentence ("The file" -> "the file")."""
    return what[:1].lower() + what[1:] if what.startswith(("The ", "A ")) else what


def read_csv_bytes(data: bytes, *, what: str = "The file", nrows: int | None = None, max_columns: int | None = None,
                   max_header_chars: int | None = None, max_cell_chars: int | None = None):
    """A pandas DataFrame from CSV bytes (any common encoding and delimiter), or a DataError sentence naming `what`.

    The limits (``None``: none) are checked by :func:`check_csv_shape` before pandas reads anything.
    """
    import pandas as pd

    text, sep, decimal = csv_layout(data, what=what)
    check_csv_shape(text, sep, what=what, max_columns=max_columns, max_header_chars=max_header_chars,
                    max_cell_chars=max_cell_chars)
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, decimal=decimal, nrows=nrows, skipinitialspace=True,
                         engine="c", on_bad_lines="error")
    except pd.errors.EmptyDataError:
        raise DataError(f"{what} holds no table; give a text table with a header row.") from None
    except (ValueError, pd.errors.ParserError) as exc:
        line = re.search(r"line (\d+)", str(exc))
        where = f" (line {line.group(1)})" if line else ""
        raise DataError(f"{what} is not a regular {_DELIM_NAMES[sep]}-separated table{where}; every row needs as "
                        f"many values as the header has names.") from None
    df.columns = [str(c).strip().lstrip("\ufeff") for c in df.columns]
    if all(_is_number(c, decimal) for c in df.columns):
        raise DataError(f"{what} has no header row (its first row holds only numbers); add a first row with the "
                        f"column names.")
    return df


def _is_number(text: str, decimal: str = ".") -> bool:
    """Whether `text` reads as a number (with `decimal` as the decimal mark)."""
    try:
        float(text.replace(decimal, ".") if decimal != "." else text)
        return True
    except ValueError:
        return False


# ----------------------------------------------------------------------------------------------
# a decoder of literal pickles (never calls or imports anything)

_LITERAL_OPS = {
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP",
    "NONE", "NEWTRUE", "NEWFALSE", "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
    "FLOAT", "BINFLOAT", "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "SHORT_BINUNICODE",
    "BINUNICODE", "BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
    "EMPTY_LIST", "LIST", "APPEND", "APPENDS", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_SET", "ADDITEMS", "FROZENSET",
    "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "GET", "BINGET", "LONG_BINGET",
}


class NotLiteral(ValueError):
    """A pickle that would look up, import or call something (or is malformed): refused, never run."""


def literal_from_pickle(data, *args, **kwargs):
    """The plain value (None, bool, int, float, str, bytes, list, tuple, dict, set) a pickle spells; NotLiteral otherwise.

    Only the opcodes in ``_LITERAL_OPS`` are interpreted; GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
    NEWOBJ, EXT and persistent ids (everything that resolves a name or runs code) are refused.  Extra
    arguments (``encoding=`` of ``pickle.loads``) are accepted and ignored so this can stand in for it.
    """
    data = bytes(data)
    stack: list = []
    marks: list[int] = []
    memo: dict = {}

    def pop_mark():
        if not marks:
            raise NotLiteral("MARK missing")
        m = marks.pop()
        items = stack[m:]
        del stack[m:]
        return items

    try:
        for op, arg, _pos in pickletools.genops(data):
            name = op.name
            if name not in _LITERAL_OPS:
                raise NotLiteral(f"opcode {name} is not a literal")
            if name in ("PROTO", "FRAME"):
                continue
            if name == "STOP":
                if len(stack) != 1:
                    raise NotLiteral("malformed pickle")
                return stack[0]
            if name == "MARK":
                marks.append(len(stack))
            elif name == "POP":
                stack.pop()
            elif name == "POP_MARK":
                pop_mark()
            elif name == "DUP":
                stack.append(stack[-1])
            elif name == "NONE":
                stack.append(None)
            elif name in ("NEWTRUE", "NEWFALSE"):
                stack.append(name == "NEWTRUE")
            elif name in ("INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT"):
                stack.append(arg)
            elif name in ("STRING", "BINSTRING", "SHORT_BINSTRING"):
                stack.append(arg.decode("latin-1") if isinstance(arg, bytes) else arg)
            elif name in ("UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "BINBYTES",
                          "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"):
                stack.append(arg)
            elif name == "EMPTY_LIST":
                stack.append([])
            elif name == "LIST":
                stack.append(pop_mark())
            elif name == "APPEND":
                v = stack.pop()
                stack[-1].append(v)
            elif name == "APPENDS":
                items = pop_mark()
                stack[-1].extend(items)
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name == "TUPLE":
                stack.append(tuple(pop_mark()))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                k = int(name[-1])
                items = tuple(stack[-k:])
                del stack[-k:]
                stack.append(items)
            elif name == "EMPTY_DICT":
                stack.append({})
            elif name == "DICT":
                items = pop_mark()
                stack.append(dict(zip(items[0::2], items[1::2])))
            elif name == "SETITEM":
                v = stack.pop()
                k = stack.pop()
                stack[-1][k] = v
            elif name == "SETITEMS":
                items = pop_mark()
                stack[-1].update(zip(items[0::2], items[1::2]))
            elif name == "EMPTY_SET":
                stack.append(set())
            elif name == "ADDITEMS":
                items = pop_mark()
                stack[-1].update(items)
            elif name == "FROZENSET":
                stack.append(frozenset(pop_mark()))
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo[arg])
    except NotLiteral:
        raise
    except Exception:  # truncated data, unhashable keys, stack underflow: not a literal pickle
        raise NotLiteral("malformed pickle") from None
    raise NotLiteral("pickle without STOP")


class _LiteralPickleModule:
    """Stands in for the `pickle` module inside PyTables while a file is read: loads decodes literals only."""

    def __init__(self, real):
        self._real = real

    def loads(self, data, *args, **kwargs):
        """Decode a literal pickle (see literal_from_pickle); anything else raises NotLiteral."""
        return literal_from_pickle(data)

    def load(self, *args, **kwargs):
        """Reading pickles from a stream is not allowed here."""
        raise NotLiteral("pickle.load is disabled while reading untrusted HDF5")

    def __getattr__(self, name):
        if name in ("Unpickler", "_Unpickler", "_loads", "_load"):
            raise AttributeError(name)
        return getattr(self._real, name)


_PYTABLES_LOCK = threading.RLock()


@contextlib.contextmanager
def literal_only_pytables():
    """Within this block PyTables decodes pickled attributes and object atoms as plain literals only (never runs code)."""
    try:
        import tables.atom
        import tables.attributeset
    except ModuleNotFoundError:
        raise missing("tables", "Reading HDF5 tables") from None

    mods = (tables.attributeset, tables.atom)
    with _PYTABLES_LOCK:
        saved = [m.pickle for m in mods]
        try:
            for m, real in zip(mods, saved):
                m.pickle = real if isinstance(real, _LiteralPickleModule) else _LiteralPickleModule(real)
            yield
        finally:
            for m, real in zip(mods, saved):
                m.pickle = real


# ----------------------------------------------------------------------------------------------
# pandas HDF5 without pandas.read_hdf


def _attr(node, name, default=None):
    """Attribute `name` of a PyTables node as a plain value (str for byte strings), or `default`."""
    attrs = node._v_attrs
    if name not in attrs._v_attrnames:
        return default
    v = getattr(attrs, name)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bytes):
        if v.endswith(b".") and len(v) > 1:  # a pickle that was not a plain literal: never decoded further
            raise _ObjectData(name)
        v = v.decode("utf-8", errors="replace")
    return v


class _ObjectData(Exception):
    """A node or attribute holds Python objects (pickles)."""


def _objects_sentence(col: str, where: str) -> str:
    return (f"Column '{col}' in {where} holds Python objects, which are not read for safety; save the table with "
            f"numeric columns only (for example df.astype(float).to_hdf(path, key='data', format='table')).")


def _names(arr) -> list[str]:
    """Column names from a PyTables array of byte strings or numbers."""
    out = []
    for v in np.asarray(arr).ravel():
        if isinstance(v, bytes):
            v = v.decode("utf-8", errors="replace")
        out.append(str(v.item() if isinstance(v, np.generic) else v))
    return out


def _values(arr: np.ndarray, value_type: str | None) -> np.ndarray:
    """Numeric, boolean, datetime or text values of one stored block as a plain NumPy array."""
    if value_type and str(value_type).startswith("datetime64"):
        return arr.astype(np.int64).view("datetime64[ns]")
    if arr.dtype.kind in "biufM":
        return arr
    if arr.dtype.kind == "S":
        return np.char.decode(arr, "utf-8", errors="replace").astype(object)
    if arr.dtype.kind == "U":
        return arr.astype(object)
    raise _ObjectData("values")


def _read_fixed(h, group, where: str) -> dict:
    """Columns of a pandas 'fixed' frame (axis0, axis1, blockN_items, blockN_values)."""
    import tables

    if int(_attr(group, "ndim", 2)) != 2:
        raise DataError(f"{where} does not hold a two-dimensional table; save a DataFrame with df.to_hdf.")
    cols: dict = {}
    for i in range(int(_attr(group, "nblocks", 0))):
        items_node = h.get_node(group, f"block{i}_items")
        vals = h.get_node(group, f"block{i}_values")
        if not isinstance(items_node, tables.Array) or isinstance(items_node, tables.VLArray):
            raise _ObjectData(f"block{i}_items")
        items = _names(items_node.read())
        if not isinstance(vals, tables.Array) or vals.atom.kind == "object":  # VLArray of pickles: never read
            raise _ObjectData(items[0] if items else f"block{i}")
        try:
            arr = _values(vals.read(), _attr(vals, "value_type"))
        except _ObjectData:
            raise _ObjectData(items[0] if items else f"block{i}") from None
        if arr.ndim == 1:
            arr = arr[:, None]
        if not _attr(vals, "transposed", False):
            arr = arr.T
        for j, name in enumerate(items):
            cols[name] = arr[:, j]
    order = h.get_node(group, "axis0")
    if isinstance(order, tables.Array) and not isinstance(order, tables.VLArray):
        names = _names(order.read())
        if set(names) == set(cols):
            cols = {n: cols[n] for n in names}
    return cols


def _read_table(h, group, where: str) -> dict:
    """Columns of a pandas 'table' frame (one PyTables Table; names of value blocks in `<field>_kind`)."""
    import tables

    tab = h.get_node(group, "table")
    if not isinstance(tab, tables.Table):
        raise DataError(f"{where} has no readable table node; save the DataFrame again with df.to_hdf.")
    rec = tab.read()
    cols: dict = {}
    for field in rec.dtype.names:
        if field == "index":
            continue
        names = _attr(tab, f"{field}_kind", [field])
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, (list, tuple)):
            raise _ObjectData(field)
        try:
            arr = _values(rec[field], _attr(tab, f"{field}_dtype"))
        except _ObjectData:
            raise _ObjectData(str(names[0]) if names else field) from None
        if arr.ndim == 1:
            arr = arr[:, None]
        for j, name in enumerate(names):
            cols[str(name)] = arr[:, j]
    order = _attr(group, "non_index_axes", None)
    if isinstance(order, list) and order and isinstance(order[0], tuple) and len(order[0]) == 2:
        names = [str(n) for n in order[0][1]]
        if set(names) == set(cols):
            cols = {n: cols[n] for n in names}
    return cols


def read_hdf_frame(path, key: str | None = None, *, what: str | None = None):
    """The DataFrame that `df.to_hdf(path, key)` wrote (format 'fixed' or 'table'), read without unpickling anything."""
    import pandas as pd

    try:
        import tables
    except ModuleNotFoundError:
        raise missing("tables", "Reading HDF5 tables") from None

    path = Path(path)
    where = what or f"the HDF5 file {path.name}"
    try:
        with literal_only_pytables(), tables.open_file(str(path), mode="r") as h:
            frames = {}
            for g in h.walk_groups("/"):
                try:
                    kind = _attr(g, "pandas_type")
                except _ObjectData:
                    continue
                if kind is not None:
                    frames[g._v_pathname] = (g, str(kind))
            if not frames:
                raise DataError(f"{where} holds no pandas table; write one with df.to_hdf(path, key='data').")
            if key is None:
                if len(frames) > 1:
                    raise DataError(f"{where} holds several tables ({', '.join(sorted(frames))}); pass key= to pick one.")
                (gpath, (group, kind)), = frames.items()
            else:
                gpath = "/" + str(key).strip("/")
                if gpath not in frames:
                    raise DataError(f"{where} has no table under key '{key}'; its tables are {', '.join(sorted(frames))}.")
                group, kind = frames[gpath]
            if kind == "frame":
                cols = _read_fixed(h, group, where)
            elif kind == "frame_table":
                cols = _read_table(h, group, where)
            else:
                raise DataError(f"{where} holds a pandas {kind} under '{gpath}', not a DataFrame; save a DataFrame "
                                f"with df.to_hdf(path, key='data').")
    except DataError:
        raise
    except _ObjectData as exc:
        raise DataError(_objects_sentence(str(exc.args[0]) if exc.args else "?", where)) from None
    except Exception:  # PyTables / HDF5 raise many kinds of errors for damaged or foreign files
        raise DataError(f"Could not read {where} as a pandas HDF5 table; give a file written by "
                        f"DataFrame.to_hdf, or a CSV or NetCDF file.") from None
    lengths = {len(v) for v in cols.values()}
    if len(lengths) > 1:
        raise DataError(f"The columns of {where} have different lengths; save the DataFrame again with df.to_hdf.")
    return pd.DataFrame(cols)
