"""Uploaded tables parsed in worker processes: bounded in CPU time and in waiting time, cancellable.

pandas' C parser cannot be interrupted from Python, so an uploaded file is read in a child process,
never in the thread that serves a page.  :func:`parse` hands the bytes to a persistent worker (``python
-m distviz.data.parse_worker``, started lazily and kept between uploads so that its imports of pandas
and distviz are paid once).  The worker forks a fresh child for each file; the child parses, sends its
reply through the worker and exits, so memory is returned after every file and stopping a parse costs a
fork, not a new interpreter.  The waiting thread polls, and has the child killed when

* the child's CPU time passes ``cpu_s`` (read from ``/proc``; the child also runs under ``RLIMIT_CPU``
  one to two seconds above that, so the kernel stops it where ``/proc`` cannot be read),
* the wait passes ``wall_s`` (a busy server: waiting for a free worker and its start count too), or
* the caller's ``wait`` callback raises (a Streamlit rerun or a closed tab: ``distviz.ui.uploads``
  passes Streamlit's yield check), which then propagates.

At most :data:`MAX_WORKERS` workers run at once; a worker holds one file at a time.  Requests and
replies are data only: a JSON header and raw numeric arrays (see `_message`); nothing is pickled or
evaluated on either side, and the uploaded bytes are only ever parsed as text.

The parsers it runs are :data:`PARSERS`; each takes the bytes and keyword options and returns data or
raises :class:`~distviz.errors.DataError`.
"""

from __future__ import annotations

import atexit
import math
import os
import queue
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Protocol

from distviz.errors import DataError

#: Workers that may run at once (environment variable ``DISTVIZ_PARSE_WORKERS``).
_WORKERS = os.environ.get("DISTVIZ_PARSE_WORKERS", "").strip()
MAX_WORKERS = min(max(1, int(_WORKERS)), 64) if _WORKERS.isdigit() else 2
#: Seconds between two looks at a running parse (CPU time, deadline, the caller's wait callback).
POLL_S = 0.05

_HEADER = struct.Struct("!Q")


class _Reader(Protocol):
    def read(self, n: int, /) -> bytes: ...


class _Writer(Protocol):
    def write(self, b: Any, /) -> Any: ...

    def flush(self) -> Any: ...


class ParseUnavailable(DataError):
    """The file could not be read now (server busy, worker lost): a sentence that is not cached with the file."""


# ------------------------------------------------------------------------------------------ parsers
def _lab_frame(data: bytes, *, what: str, max_rows: int, max_columns: int, max_header_chars: int):
    """Numeric columns of a Lab upload (at least two, at least 10 rows, at most `max_rows`), or a DataError."""
    import pandas as pd

    from distviz.data.tables import read_csv_bytes

    df = read_csv_bytes(data, what=what, nrows=max_rows + 1, max_columns=max_columns, max_header_chars=max_header_chars)
    if df.shape[0] > max_rows:
        raise DataError(f"The CSV has more than {max_rows} rows; upload at most {max_rows} rows.")
    num = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    if len(num) < 2:
        text = [c for c in df.columns if c not in num]
        hint = f" (column(s) {', '.join(map(repr, text[:3]))} hold text)" if text else ""
        raise DataError(f"The CSV has {len(num)} numeric column(s){hint}; it needs at least two numeric columns "
                        f"(one x and one y) under a header row.")
    if df.shape[0] < 10:
        raise DataError(f"The CSV has {df.shape[0]} row(s); it needs at least 10 rows of data under the header.")
    return df[num]


def _drifter_table(data: bytes, *, what: str, max_columns: int, max_header_chars: int):
    """A validated DrifterData from a processed-drifter CSV, or a DataError."""
    from distviz.data.drifters import table_from_frame
    from distviz.data.tables import read_csv_bytes

    df = read_csv_bytes(data, what=what, max_columns=max_columns, max_header_chars=max_header_chars)
    return table_from_frame(df, source="uploaded CSV")


def _spin(data: bytes, *, seconds: float = 60.0):
    """Burn CPU for `seconds` (tests of the CPU limit)."""
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1
    return x


#: kind -> function(data, **options) run in the worker.
PARSERS: dict[str, Callable[..., Any]] = {"lab": _lab_frame, "drifters": _drifter_table, "spin": _spin}


# ------------------------------------------------------------------------------------------ messages
# A message is one frame: an 8-byte length, then an 8-byte length of a JSON header, the header and the
# raw bytes of the arrays and byte strings it refers to.  JSON carries plain values; a NumPy array is
# {"__array__": [dtype, shape, offset]} (numeric and boolean dtypes only), bytes {"__bytes__": [offset,
# size]}, a tuple {"__tuple__": [...]}, a DataFrame of such arrays {"__frame__": [names, arrays]} and a
# DrifterData {"__drifters__": {field: value}}.  Nothing is unpickled or evaluated on either side.

_NUMERIC_KINDS = "biuf"


def _encode(value: Any, blobs: list, offset: list[int]) -> Any:
    """`value` as a JSON-able object; arrays and bytes are appended to `blobs`."""
    import numpy as np

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bytes, bytearray, memoryview)):
        n = len(memoryview(value).cast("B"))
        blobs.append(value)
        offset[0] += n
        return {"__bytes__": [offset[0] - n, n]}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _NUMERIC_KINDS:
            raise TypeError(f"arrays of dtype {value.dtype} are not sent")
        arr = np.ascontiguousarray(value)
        blobs.append(arr.data.cast("B") if arr.size else b"")
        offset[0] += arr.nbytes
        return {"__array__": [arr.dtype.str, list(arr.shape), offset[0] - arr.nbytes]}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, blobs, offset) for v in value]}
    if isinstance(value, list):
        return [_encode(v, blobs, offset) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("dictionary keys must be strings")
        if any(k.startswith("__") for k in value):
            return {"__dict__": [[k, _encode(v, blobs, offset)] for k, v in value.items()]}
        return {k: _encode(v, blobs, offset) for k, v in value.items()}
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        names = [str(c) for c in value.columns]
        return {"__frame__": [names, [_encode(value[c].to_numpy(), blobs, offset) for c in value.columns]]}
    from distviz.data.drifters import DrifterData

    if isinstance(value, DrifterData):
        import dataclasses

        return {"__drifters__": {f.name: _encode(getattr(value, f.name), blobs, offset)
                                 for f in dataclasses.fields(value)}}
    raise TypeError(f"{type(value).__name__} is not sent")


def _decode(obj: Any, blob: memoryview) -> Any:
    """The value `_encode` turned into `obj`, arrays and bytes copied out of `blob`."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [_decode(v, blob) for v in obj]
    if not isinstance(obj, dict):
        raise ValueError("unexpected value in a message")
    if len(obj) == 1:
        (tag, v), = obj.items()
        if tag == "__bytes__":
            off, n = int(v[0]), int(v[1])
            if not 0 <= off <= off + n <= len(blob):
                raise ValueError("byte string outside the message")
            return bytes(blob[off:off + n])
        if tag == "__array__":
            import numpy as np

            dtype = np.dtype(str(v[0]))
            shape = tuple(int(d) for d in v[1])
            off = int(v[2])
            n = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
            if dtype.kind not in _NUMERIC_KINDS or min(shape, default=0) < 0 or not 0 <= off <= off + n <= len(blob):
                raise ValueError("array outside the message or of a type that is not sent")
            return np.frombuffer(blob[off:off + n], dtype=dtype).reshape(shape).copy()
        if tag == "__tuple__":
            return tuple(_decode(x, blob) for x in v)
        if tag == "__dict__":
            return {str(k): _decode(x, blob) for k, x in v}
        if tag == "__frame__":
            import pandas as pd

            names, arrays = v
            cols = {str(n): _decode(a, blob) for n, a in zip(names, arrays)}
            if len(cols) != len(names):
                raise ValueError("repeated column names")
            return pd.DataFrame(cols)
        if tag == "__drifters__":
            from distviz.data.drifters import DrifterData

            return DrifterData(**{str(k): _decode(x, blob) for k, x in v.items()})
    return {str(k): _decode(x, blob) for k, x in obj.items()}


def _message(msg: dict) -> list:
    """The parts of one frame (header length, JSON header, blobs) for `msg`."""
    import json

    blobs: list = []
    head = json.dumps(_encode(msg, blobs, [0])).encode()
    return [_HEADER.pack(len(head)), head, *blobs]


def _parse_message(frame: bytes) -> dict:
    """The message in one frame (see `_message`)."""
    import json

    mv = memoryview(frame)
    n = _HEADER.unpack_from(mv)[0]
    msg = _decode(json.loads(bytes(mv[_HEADER.size:_HEADER.size + n])), mv[_HEADER.size + n:])
    if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
        raise ValueError("not a message")
    return msg


def _write(stream: _Writer, parts: list) -> None:
    """Write one frame made of `parts` (bytes-like) to `stream`."""
    stream.write(_HEADER.pack(sum(len(memoryview(p).cast("B")) for p in parts)))
    for part in parts:
        stream.write(part)
    stream.flush()


def _send(stream: _Writer, **msg: Any) -> None:
    """Write the message `msg` (an "op" and plain values) to `stream`."""
    _write(stream, _message(msg))


def _read_exact(stream: _Reader, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        b = stream.read(min(n - got, 1 << 22))
        if not b:
            return None
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def _read(stream: _Reader) -> bytes | None:
    """One length-prefixed frame, or None at the end of the stream."""
    head = _read_exact(stream, _HEADER.size)
    if head is None:
        return None
    return _read_exact(stream, _HEADER.unpack(head)[0])


# ------------------------------------------------------------------------------------------ the worker side
def _cpu_limit(cpu_s: float) -> None:
    """Let the kernel stop this process (SIGXCPU) one to two CPU seconds after `cpu_s` more seconds."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    ru = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(math.ceil(ru.ru_utime + ru.ru_stime + cpu_s)) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _run(kind: str, data: bytes, options: dict) -> list:
    """The frame of the reply to one request: op "ok" with the value, or op "error" with a sentence."""
    what = options.get("what", "The file")
    try:
        return _message({"op": "ok", "value": PARSERS[kind](data, **options)})
    except DataError as exc:
        sentence = str(exc)
    except MemoryError:
        sentence = f"{what} is too large to read in this server's memory; upload a smaller file."
    except Exception as exc:  # a bug, or a parser failure without a sentence: said in one sentence
        print(f"distviz parse worker: {type(exc).__name__}: {exc}", file=sys.stderr)
        sentence = f"{what} could not be read as a table; save it as a plain CSV with a header row and upload it again."
    return _message({"op": "error", "sentence": sentence})


class _FdReader:
    """Reads from a file descriptor without a buffer (so that select() tells the truth about it)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def read(self, n: int) -> bytes:
        return os.read(self.fd, n)


def _parse_in_child(out: Any, inp: _FdReader, kind: str, data: bytes, options: dict, cpu_s: float) -> None:
    """Fork a child that parses; relay its reply, or say how it died; kill it when the parent says "cancel"."""
    import select
    import signal

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: parse, write the reply, leave without running any exit handler
        code = 0
        try:
            os.close(r)
            os.close(inp.fd)
            out.close()
            _cpu_limit(cpu_s)
            with os.fdopen(w, "wb") as pipe:
                _write(pipe, _run(kind, data, options))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    _send(out, op="started", pid=pid)
    buf = bytearray()
    open_ = True
    while open_:
        ready, _, _ = select.select([r, inp.fd], [], [])
        if inp.fd in ready:
            msg = _read(inp)
            if msg is None or _parse_message(msg)["op"] == "cancel":
                os.kill(pid, signal.SIGKILL)
                if msg is None:
                    os.waitpid(pid, 0)
                    sys.exit(0)
        if r in ready:
            chunk = os.read(r, 1 << 20)
            if chunk:
                buf += chunk
            else:
                open_ = False
    os.close(r)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0 and len(buf) >= _HEADER.size and len(buf) == _HEADER.size + _HEADER.unpack_from(buf)[0]:
        _write(out, [memoryview(buf)[_HEADER.size:]])
    else:
        _send(out, op="died", code=code)


def _serve() -> None:
    """The worker's loop: read a request from stdin, parse it in a forked child, write the reply; exit at EOF."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C in the server's terminal: the server stops us
    out = os.fdopen(os.dup(1), "wb")                  # the replies; anything printed goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # no core file when SIGXCPU stops a parse
    except (ImportError, ValueError, OSError):  # pragma: no cover
        pass
    import pandas  # noqa: F401  (paid once, before the first file; forked children inherit it)

    import distviz.data.drifters  # noqa: F401
    import distviz.data.tables  # noqa: F401

    _send(out, op="ready", pid=os.getpid())
    inp = _FdReader(sys.stdin.fileno())
    while True:
        msg = _read(inp)
        if msg is None:
            return
        req = _parse_message(msg)
        if req["op"] != "parse":
            continue              # a "cancel" that came after its parse had finished
        kind, data, options, cpu_s = req["kind"], req["data"], req["options"], float(req["cpu_s"])
        if _FORK:
            _parse_in_child(out, inp, kind, data, options, cpu_s)
        else:  # pragma: no cover - no fork(): parse here, the parent kills this process to stop it
            _cpu_limit(cpu_s)
            _send(out, op="started", pid=os.getpid())
            _write(out, _run(kind, data, options))
        del req, data


_FORK = hasattr(os, "fork")


# ------------------------------------------------------------------------------------------ the server side
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` so far (from /proc; None where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


class _Worker:
    """One worker process, its pipes and the thread that reads its replies."""

    def __init__(self) -> None:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            env[k] = "1"
        self.proc = subprocess.Popen([sys.executable, "-m", "distviz.data.parse_worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, close_fds=True)
        self.replies: queue.Queue[bytes | None] = queue.Queue()
        self.ready = False
        threading.Thread(target=self._reader, name="distviz-parse-reader", daemon=True).start()
        with _cond:
            _workers.add(self)

    def _reader(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            try:
                frame = _read(out)
            except (OSError, ValueError):
                frame = None
            self.replies.put(frame)
            if frame is None:
                return

    def send(self, **message: Any) -> None:
        """Write one message to the worker."""
        assert self.proc.stdin is not None
        _send(self.proc.stdin, **message)

    def cancel(self) -> bool:
        """Stop the running parse (its child is killed) and read up to the worker's last word; False if it failed."""
        if not _FORK:  # pragma: no cover
            return False
        try:
            self.send(op="cancel")
        except (OSError, ValueError):
            return False
        end = time.monotonic() + 5.0
        while time.monotonic() < end:
            try:
                frame = self.replies.get(timeout=0.5)
            except queue.Empty:
                continue
            if frame is None:
                return False
            try:
                op = _parse_message(frame)["op"]
            except Exception:
                return False
            if op != "started":
                return True
        return False

    def kill(self) -> None:
        """Stop the process (at once) and close its pipes."""
        with _cond:
            _workers.discard(self)
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):  # pragma: no cover
            pass
        for stream in (self.proc.stdin, self.proc.stdout):   # the reader thread has seen the end of stdout by now
            try:
                if stream is not None:
                    stream.close()
            except (OSError, ValueError):  # pragma: no cover
                pass


_cond = threading.Condition()
_idle: list[_Worker] = []
_workers: set[_Worker] = set()
_live = [0]
#: Worker processes started so far (tests read it).
started = [0]


def _wait_step(deadline: float, wait: Callable[[], None] | None, what: str, wall_s: float) -> None:
    """One poll of a wait: the caller's callback (may raise to cancel), then the deadline."""
    if wait is not None:
        wait()
    if time.monotonic() > deadline:
        raise ParseUnavailable(f"{what} could not be read within {wall_s:g} seconds because the server is busy; "
                               f"upload it again in a minute.")


def _acquire(deadline: float, wait, what: str, wall_s: float) -> _Worker:
    """An idle worker, or a new one once fewer than MAX_WORKERS run; waits (polling) otherwise.

    A worker still starting when the wait is cancelled or overdue goes back to the pool and keeps
    starting, for the next file.
    """
    w: _Worker | None = None
    while w is None:
        fresh = False
        with _cond:
            while _idle and w is None:
                c = _idle.pop()
                if c.proc.poll() is None:
                    w = c
                else:
                    c.kill()
                    _live[0] = max(0, _live[0] - 1)
            if w is None and _live[0] < MAX_WORKERS:
                _live[0] += 1
                fresh = True
            elif w is None:
                _cond.wait(POLL_S)
        if fresh:
            try:
                w = _Worker()
                started[0] += 1
            except OSError:
                _release(None, False)
                raise ParseUnavailable(f"{what} could not be read because the server could not start its file "
                                       f"reader; upload it again in a minute.") from None
        elif w is None:
            _wait_step(deadline, wait, what, wall_s)
    try:
        while not w.ready:
            try:
                frame = w.replies.get(timeout=POLL_S)
            except queue.Empty:
                _wait_step(deadline, wait, what, wall_s)
                continue
            if frame is None:
                break
            w.ready = True
    except BaseException:
        _release(w, True)           # still starting: the next file gets it
        raise
    if not w.ready:
        _release(w, False)
        raise ParseUnavailable(f"{what} could not be read because the server's file reader did not start; "
                               f"upload it again in a minute.")
    return w


def _release(w: _Worker | None, healthy: bool) -> None:
    """Give a worker back (idle), or kill it when its state is unknown."""
    if w is not None and healthy:
        with _cond:
            _idle.append(w)
            _cond.notify()
        return
    if w is not None:
        w.kill()
    with _cond:
        _live[0] = max(0, _live[0] - 1)
        _cond.notify()


def parse(kind: str, data: bytes, options: dict, *, cpu_s: float, wall_s: float,
          wait: Callable[[], None] | None = None, what: str = "The file") -> Any:
    """Run ``PARSERS[kind](data, **options)`` in a worker process and return its value.

    Parameters
    ----------
    kind : str
        A key of :data:`PARSERS`.
    data : bytes
        The uploaded bytes.
    options : dict
        Keyword arguments of the parser (plain values).
    cpu_s : float
        CPU seconds the worker may spend on this file.
    wall_s : float
        Seconds this call may wait in all (for a free worker, its start and the parse).
    wait : callable, optional
        Called every :data:`POLL_S` seconds while waiting; whatever it raises stops the parse (the worker is
        killed) and propagates.
    what : str
        The file as the subject of a sentence ("The uploaded file").

    Returns
    -------
    object
        What the parser returned.

    Raises
    ------
    DataError
        The parser's own sentence, or one saying the file took more than `cpu_s` CPU seconds.
    ParseUnavailable
        A DataError for a failure that says nothing about the file (busy server, lost worker).
    """
    import signal

    deadline = time.monotonic() + wall_s
    request = {"op": "parse", "kind": kind, "data": data, "options": options, "cpu_s": float(cpu_s)}
    for attempt in range(2):
        w = _acquire(deadline, wait, what, wall_s)
        finished = False
        try:
            try:
                w.send(**request)
            except (OSError, ValueError):
                if attempt == 0:
                    continue          # an idle worker that died meanwhile: once more with a fresh one
                raise ParseUnavailable(f"{what} could not be read because the server's file reader stopped; "
                                       f"upload it again in a minute.") from None
            child = None
            while True:
                try:
                    frame = w.replies.get(timeout=POLL_S)
                except queue.Empty:
                    cpu: float | None = None if child is None else _cpu_seconds(child)
                    if cpu is not None and cpu > cpu_s:
                        raise _too_slow(what, cpu_s) from None
                    _wait_step(deadline, wait, what, wall_s)
                    continue
                if frame is None:
                    finished = True   # the worker itself is gone (killed, out of memory): not reused
                    w.ready = False
                    raise ParseUnavailable(f"{what} could not be read because the server's file reader stopped; "
                                           f"upload a smaller file or try again in a minute.")
                try:
                    reply = _parse_message(frame)
                except Exception:
                    finished = True
                    w.ready = False
                    raise DataError(f"{what} could not be read as a table; save it as a plain CSV with a header "
                                    f"row and upload it again.") from None
                if reply["op"] == "started":
                    child = int(reply["pid"])
                    continue
                finished = True
                break
        finally:
            if not finished:
                _release(w, w.cancel())
            else:
                _release(w, w.ready)
        if reply["op"] == "died":
            if reply.get("code") == -getattr(signal, "SIGXCPU", -1000):
                raise _too_slow(what, cpu_s)
            raise ParseUnavailable(f"{what} could not be read because the server's file reader stopped; "
                                   f"upload a smaller file or try again in a minute.")
        if reply["op"] != "ok":
            raise DataError(str(reply.get("sentence", f"{what} could not be read as a table.")))
        return reply["value"]
    raise AssertionError("unreachable")  # pragma: no cover


def _too_slow(what: str, cpu_s: float) -> DataError:
    return DataError(f"{what} took more than {cpu_s:g} CPU seconds to read, the most this server spends on one "
                     f"file; upload a smaller file with fewer rows or columns.")


def shutdown() -> None:
    """Stop every worker process (at exit; tests)."""
    with _cond:
        ws = list(_workers)
        _idle.clear()
        _live[0] = 0
    for w in ws:
        w.kill()


atexit.register(shutdown)


if __name__ == "__main__":
    _serve()
