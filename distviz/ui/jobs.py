"""Fit governance for a shared server: work budget, one fit per key, a server-wide cap, cancellation, a byte-bounded store.

Every fit a page starts goes through `run_fit(key, factory, ...)`:

* **budget** — the caller first predicts the fit's CPU time and memory from its settings (`check_budget`,
  `check_memory`); a fit predicted above `max_fit_seconds()` CPU seconds (env ``DISTVIZ_MAX_FIT_SECONDS``,
  default 120) or `max_fit_mb()` MiB (env ``DISTVIZ_MAX_FIT_MB``) is refused with one sentence naming the
  knobs to lower, before any data is generated or fitted;
* **deadline** — the prediction is only a pre-check: every running job is charged the CPU time it really
  uses (`FitMeter`: its worker thread's CPU clock plus its share of the compute pools' threads, numba's and
  BLAS's), checked at every round, and a job past `max_fit_seconds()` is stopped within one round with one
  sentence (`FitOverBudget`) naming the knobs to lower; the page keeps showing its last good result;
* **single flight** — a process-wide registry holds one job per key; a second session asking for the
  same key attaches to the running job, waits for it and gets the same result (or the same error);
* **server-wide cap** — at most `max_concurrent_fits()` jobs (env ``DISTVIZ_MAX_CONCURRENT_FITS``,
  default the number of cores) fit at once, the others queue in arrival order and their pages show
  "Waiting for N fits to finish …";
* **cancellation** — a job runs in a worker thread and is wanted while some attached session is alive;
  the estimators call ``progress(r, n)`` once per round and that callback raises `FitCancelled` when no
  live session wants the result any more (its tab closed, or it reran with other settings), so the fit
  stops within one round and its slot is freed; a session still waiting on a cancelled job fits anew;
* **store** — finished results go to one LRU `ResultStore` bounded by bytes (env
  ``DISTVIZ_MODEL_STORE_MB``, default 1024), measured by `nbytes`.

Errors a user can cause (`DistvizError`) pass through unchanged; any other exception from a fit is logged
server-side with its traceback and becomes `FitFailed`, one plain sentence.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from distviz.errors import ConfigError, DistvizError

log = logging.getLogger("distviz.ui.jobs")

#: seconds a session that left a job (its script reran) may come back for it before the job counts as unwanted
REATTACH_GRACE_S = 1.0
#: how often a waiting page refreshes its message and checks whether Streamlit stopped its script
POLL_S = 0.2


# ------------------------------------------------------------------------------------------ settings
def _env_number(name: str, default: float, lo: float) -> float:
    """A positive number from the environment (the default when unset or not a finite number >= lo)."""
    raw = os.environ.get(name, "")
    try:
        v = float(raw)
    except ValueError:
        return default
    return v if math.isfinite(v) and v >= lo else default


def max_fit_seconds() -> float:
    """The CPU seconds one fit may use on this server (env DISTVIZ_MAX_FIT_SECONDS, default 120).

    The pre-check refuses a fit predicted above it; the deadline stops a running fit that uses more.
    """
    return _env_number("DISTVIZ_MAX_FIT_SECONDS", 120.0, 0.1)


def max_fit_mb() -> float:
    """The memory one fit may need on this server, in MiB (env DISTVIZ_MAX_FIT_MB, default 1536).

    The default lets the default number of concurrent fits (one per core) of a 2-core, 24 GiB class server
    hold 3 GiB together, beside the result store (DISTVIZ_MODEL_STORE_MB) and the sessions' pages.
    """
    return _env_number("DISTVIZ_MAX_FIT_MB", 1536.0, 1.0)


def max_concurrent_fits() -> int:
    """How many fits may run at once on this server (env DISTVIZ_MAX_CONCURRENT_FITS, default the core count)."""
    return int(_env_number("DISTVIZ_MAX_CONCURRENT_FITS", float(max(1, os.cpu_count() or 1)), 1))


def store_max_bytes() -> int:
    """Byte cap of the process-wide result store (env DISTVIZ_MODEL_STORE_MB, default 1024 MiB)."""
    return int(_env_number("DISTVIZ_MODEL_STORE_MB", 1024.0, 1.0) * 2**20)


# ------------------------------------------------------------------------------------------ errors
class FitCancelled(Exception):
    """Raised inside a fit's progress callback when no live session wants its result any more."""


class FitOverBudget(ConfigError):
    """A running fit used more CPU time than the server allows per fit (`max_fit_seconds()`); it was stopped."""


class FitFailed(DistvizError):
    """An unexpected exception from a fit, reduced to one sentence (the traceback goes to the server log)."""


UNEXPECTED = ("The fit failed with an unexpected numerical error; try other settings (another algorithm, fewer "
              "rounds or a smaller learning rate).")


# ------------------------------------------------------------------------------------------ budget
def format_duration(seconds: float) -> str:
    """'45 s', '3 minutes', '2.5 hours' — a rough human reading of a predicted duration."""
    s = float(seconds)
    if s < 90:
        return f"{max(s, 1):.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} minutes"
    return f"{s / 3600:.1f} hours"


def check_budget(seconds: float, knobs: str, what: str = "This fit") -> None:
    """ConfigError (one sentence naming `knobs`) when `seconds` of CPU exceed the server's max_fit_seconds()."""
    limit = max_fit_seconds()
    if not (seconds <= limit):   # also refuses NaN
        raise ConfigError(f"{what} would need about {format_duration(seconds)} of CPU time (this server allows "
                          f"{format_duration(limit)} per fit); lower {knobs}.")


def check_memory(mib: float, knobs: str, what: str = "This fit") -> None:
    """ConfigError (one sentence naming `knobs`) when a fit's estimated peak memory `mib` exceeds max_fit_mb()."""
    limit = max_fit_mb()
    if not (mib <= limit):
        raise ConfigError(f"{what} would need about {mib:,.0f} MiB of memory (this server allows {limit:,.0f} MiB "
                          f"per fit); lower {knobs}.")


# ------------------------------------------------------------------------------------------ CPU meter
_CLK_TCK = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0


class PoolClock:
    """CPU seconds used so far by this process's threads that are not Python threads, counted thread by thread.

    Those are the compute pools a fit hands work to (numba's parallel threads, OpenBLAS's and OpenMP's); a
    fit's own Python thread is measured by its own CPU clock.  Read from /proc/self/task (Linux).  Only the
    growth of a thread's CPU time between two readings counts, so a thread first seen at a reading adds
    nothing yet: a Python thread that has just ended (gone from `threading.enumerate`, still listed by the
    kernel) never brings its whole lifetime's CPU in, and a thread that ends takes nothing away.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ticks: dict[int, int] = {}
        self.python: set[int] = set()
        self.total = 0

    def __call__(self) -> float:
        """The pools' CPU seconds so far (0.0 where /proc does not exist: only the fit's own thread counts)."""
        try:
            tids = [int(t) for t in os.listdir("/proc/self/task") if t.isdigit()]
        except OSError:
            return 0.0
        with self.lock:
            self.python = (self.python | {t.native_id for t in threading.enumerate() if t.native_id}) & set(tids)
            now = {}
            for tid in tids:
                if tid in self.python:
                    continue
                try:
                    with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                        stat = f.read()
                except OSError:          # the thread ended meanwhile
                    continue
                fields = stat[stat.rfind(b")") + 2:].split()
                now[tid] = int(fields[11]) + int(fields[12])     # utime, stime (fields 14 and 15 of proc(5))
                if tid in self.ticks:
                    self.total += max(0, now[tid] - self.ticks[tid])
            self.ticks = now
            return self.total / _CLK_TCK


pool_cpu_seconds = PoolClock()


class FitMeter:
    """CPU seconds charged to the running jobs: each job's own thread clock plus a share of the pools' CPU.

    The pools' CPU used between two readings is split evenly among the jobs running then (they share the
    pools; a job alone gets all of it).  Readings are taken at most every `interval` seconds of wall time.
    """

    def __init__(self, interval: float = 0.05, pool_clock: Callable[[], float] = pool_cpu_seconds):
        self.interval, self.pool_clock = float(interval), pool_clock
        self.lock = threading.Lock()
        self.running: list[Job] = []
        self.last_read = self.pool_clock()
        self.last_wall = time.monotonic()

    def _distribute(self) -> None:
        now = self.pool_clock()
        delta = max(0.0, now - self.last_read)
        self.last_read, self.last_wall = now, time.monotonic()
        if self.running and delta > 0:
            share = delta / len(self.running)
            for job in self.running:
                job.pool_cpu += share

    def started(self, job: "Job") -> None:
        """`job` starts running in the calling thread: its own clock starts now, pool CPU is shared from now."""
        with self.lock:
            self._distribute()
            job.thread_cpu0 = time.thread_time()
            self.running.append(job)

    def finished(self, job: "Job") -> None:
        """`job` stopped running (the pools' CPU up to now is shared with it, later CPU is not)."""
        with self.lock:
            self._distribute()
            if job in self.running:
                self.running.remove(job)

    def charge(self, job: "Job") -> float:
        """The CPU seconds `job` has used (call from its own thread)."""
        with self.lock:
            if time.monotonic() - self.last_wall >= self.interval:
                self._distribute()
            pool = job.pool_cpu
        return time.thread_time() - job.thread_cpu0 + pool


# ------------------------------------------------------------------------------------------ store
def nbytes(obj: Any, *, max_depth: int = 8, max_nodes: int = 200_000) -> int:
    """Approximate bytes held by `obj`: numpy arrays, xarray / pandas objects, found through dicts,
    sequences and instance attributes (each object counted once; bounded depth and node count)."""
    seen: set[int] = set()
    total = 0
    stack = [(obj, 0)]
    nodes = 0
    while stack and nodes < max_nodes:
        o, depth = stack.pop()
        if o is None or id(o) in seen:
            continue
        seen.add(id(o))
        nodes += 1
        if isinstance(o, np.ndarray):
            base = o if o.base is None or not isinstance(o.base, np.ndarray) else o.base
            if id(base) not in seen or base is o:
                seen.add(id(base))
                total += int(base.nbytes)
            continue
        if isinstance(o, (str, bytes, bytearray, int, float, bool, complex)):
            total += len(o) if isinstance(o, (bytes, bytearray)) else 0
            continue
        mod = type(o).__module__ or ""
        if mod.startswith("xarray"):
            if hasattr(o, "variables"):       # Dataset: data and coordinate variables
                stack.extend((v.data if hasattr(v, "data") else v, depth + 1) for v in o.variables.values())
            elif hasattr(o, "variable"):      # DataArray
                stack.append((o.variable.data, depth + 1))
                stack.extend((c.data, depth + 1) for c in o.coords.values())
            continue
        if mod.startswith("pandas"):
            try:
                total += int(np.sum(o.memory_usage(index=True, deep=False)))
            except Exception:  # noqa: BLE001 - a pandas object without memory_usage: count nothing
                pass
            continue
        if depth >= max_depth:
            continue
        if isinstance(o, dict):
            stack.extend((v, depth + 1) for v in o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend((v, depth + 1) for v in o)
        else:
            d = getattr(o, "__dict__", None)
            if isinstance(d, dict):
                stack.extend((v, depth + 1) for v in d.values())
            for slot in getattr(type(o), "__slots__", ()):
                if isinstance(slot, str) and hasattr(o, slot):
                    stack.append((getattr(o, slot), depth + 1))
    return total


class ResultStore:
    """A thread-safe LRU of finished results shared by all sessions, bounded by bytes (not entries): the fits'
    results (:func:`result_store`) and the parsed uploads (``uploads``).

    A result larger than the whole cap is not stored (the caller still gets it); otherwise the least
    recently used results are evicted until the total fits.
    """

    def __init__(self, max_bytes: int | None = None, size_of: Callable[[Any], int] = nbytes):
        self.max_bytes = int(store_max_bytes() if max_bytes is None else max_bytes)
        self.size_of = size_of
        self.items: OrderedDict = OrderedDict()
        self.sizes: dict = {}
        self.bytes = 0
        self.lock = threading.Lock()

    def get(self, key):
        """The stored result for `key` (None when absent); marks it recently used."""
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        return None

    def put(self, key, value, size: int | None = None) -> bool:
        """Store `value` under `key` (its `size` in bytes, else ``size_of(value)``), evicting LRU results past the byte
        cap; False when it is too large to keep."""
        size = int(self.size_of(value) if size is None else size)
        with self.lock:
            if key in self.items:
                self.bytes -= self.sizes.pop(key)
                del self.items[key]
            if size > self.max_bytes:
                return False
            self.items[key] = value
            self.sizes[key] = size
            self.bytes += size
            while self.bytes > self.max_bytes and len(self.items) > 1:
                old, _ = self.items.popitem(last=False)
                self.bytes -= self.sizes.pop(old)
            return True

    def clear(self) -> None:
        """Forget every result."""
        with self.lock:
            self.items.clear()
            self.sizes.clear()
            self.bytes = 0


_STORE: ResultStore | None = None
_STORE_LOCK = threading.Lock()


def result_store() -> ResultStore:
    """The process-wide result store (Lab models, drifter comparisons, posterior studies)."""
    global _STORE
    with _STORE_LOCK:
        if _STORE is None:
            _STORE = ResultStore()
        return _STORE


# ------------------------------------------------------------------------------------------ sessions
def current_session_id() -> str | None:
    """The Streamlit session running this thread's script (None outside a script run)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    except ImportError:  # pragma: no cover - streamlit is a dependency of the app only
        return None
    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def session_alive(session_id: str | None) -> bool:
    """True while the Streamlit session `session_id` is connected (always True without a server runtime)."""
    if session_id is None:
        return True
    try:
        from streamlit.runtime import Runtime
    except ImportError:  # pragma: no cover
        return True
    if not Runtime.exists():
        return True     # AppTest and plain scripts have no runtime: nobody can close the tab
    return bool(Runtime.instance().is_active_session(session_id))


def _yield_check() -> None:
    """Let Streamlit stop or rerun this script here (raises its control exceptions when one is pending)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    except ImportError:  # pragma: no cover
        return
    ctx = get_script_run_ctx(suppress_warning=True)
    check = getattr(ctx, "yield_check", None)
    if check is not None:
        check()


# ------------------------------------------------------------------------------------------ jobs
class Job:
    """One fit in the registry: its state, progress, result or error, and the sessions waiting for it."""

    def __init__(self, key, work: Callable[[Callable[[int, int], None]], Any], label: str,
                 on_done: Callable[[Any], None] | None):
        self.key, self.work, self.label, self.on_done = key, work, label, on_done
        self.state = "new"            # new -> queued -> running -> done | failed | cancelled
        self.result = None
        self.error: BaseException | None = None
        self.round, self.n_rounds = 0, 0
        self.note: str | None = None
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.attached: dict[int, str | None] = {}
        self.detached: dict[str, float] = {}
        self.created = time.monotonic()
        self.knobs = "the rows, the boosting rounds or the tree depth"
        self.meter: FitMeter | None = None
        self.cpu_limit = math.inf
        self.thread_cpu0 = 0.0
        self.pool_cpu = 0.0
        self.cpu = 0.0

    def attach(self, token: int, session_id: str | None) -> None:
        """Register a waiting caller (and its session) as wanting this job's result."""
        with self.lock:
            self.attached[token] = session_id
            if session_id is not None:
                self.detached.pop(session_id, None)

    def detach(self, token: int) -> None:
        """A caller stopped waiting; its session may come back within REATTACH_GRACE_S (a rerun)."""
        with self.lock:
            sid = self.attached.pop(token, None)
            if sid is not None and sid not in self.attached.values():
                self.detached[sid] = time.monotonic()

    def wanted(self) -> bool:
        """True while some attached caller's session is alive, or a session left it less than the grace ago."""
        with self.lock:
            attached = list(self.attached.values())
            detached = list(self.detached.items())
        if any(session_alive(s) for s in attached):
            return True
        now = time.monotonic()
        return any(now - t < REATTACH_GRACE_S and session_alive(s) for s, t in detached)

    def progress(self, r, n, note: str | None = None) -> None:
        """The estimators' per-round callback: records the round (and a note for the page) and cancels the
        fit, by raising FitCancelled, when nobody wants it any more."""
        self.round, self.n_rounds = int(r), int(n)
        if note is not None:
            self.note = str(note)[:120]
        if self.meter is not None:
            self.cpu = self.meter.charge(self)
            if self.cpu > self.cpu_limit:
                done = f"after {self.round} of {self.n_rounds} rounds" if self.n_rounds else "before it finished"
                raise FitOverBudget(f"This fit was stopped {done}: it had used {format_duration(self.cpu)} of CPU "
                                    f"time, this server's limit per fit; lower {self.knobs}.")
        if not self.wanted():
            raise FitCancelled(f"nobody waits for {self.label} any more")


class Governor:
    """The process-wide registry of fits: one job per key, at most `cap` running, FIFO queue, cancellation."""

    def __init__(self, cap: int | None = None, meter: FitMeter | None = None):
        self.cap = int(max_concurrent_fits() if cap is None else cap)
        self.meter = FitMeter() if meter is None else meter
        self.jobs: dict = {}
        self.queue: list[Job] = []
        self.running = 0
        self.max_running_seen = 0
        self.cond = threading.Condition()

    # -- worker side
    def _worker(self, job: Job) -> None:
        with self.cond:
            while True:
                if not job.wanted():
                    job.state = "cancelled"
                    self.queue.remove(job)
                    self._finish(job)
                    return
                if self.running < self.cap and self.queue[0] is job:
                    break
                self.cond.wait(0.25)
            self.queue.remove(job)
            self.running += 1
            self.max_running_seen = max(self.max_running_seen, self.running)
            job.state = "running"
            self.cond.notify_all()
        job.meter, job.cpu_limit = self.meter, max_fit_seconds()
        self.meter.started(job)
        try:
            with np.errstate(all="ignore"):
                res = job.work(job.progress)
            if job.on_done is not None:
                job.on_done(res)
            job.result, job.state = res, "done"
        except FitCancelled:
            job.state = "cancelled"
            log.info("fit %s cancelled: no live session waits for it", job.label)
        except DistvizError as exc:
            job.error, job.state = exc, "failed"
        except Exception as exc:  # noqa: BLE001 - any failure of a fit becomes one sentence; the log keeps the traceback
            log.exception("fit %s (key %r) failed unexpectedly", job.label, job.key)
            job.error, job.state = FitFailed(UNEXPECTED), "failed"
            job.error.__cause__ = exc
        finally:
            self.meter.finished(job)
            with self.cond:
                self.running -= 1
                self._finish(job)

    def _finish(self, job: Job) -> None:
        """Drop `job` from the registry and wake its waiters (call with self.cond held)."""
        if self.jobs.get(job.key) is job:
            del self.jobs[job.key]
        self.cond.notify_all()
        job.done.set()

    # -- caller side
    def ahead_of(self, job: Job) -> int:
        """How many fits must finish before `job` starts (running fits plus queued jobs ahead of it)."""
        with self.cond:
            if job.state != "queued" or job not in self.queue:
                return 0
            return self.running + self.queue.index(job)

    def join(self, key, factory: Callable[[], Callable], label: str, on_done=None,
             knobs: str | None = None) -> tuple[Job, bool]:
        """The job for `key`: the running one, or a new one whose work `factory()` builds (in this thread)."""
        with self.cond:
            job = self.jobs.get(key)
        if job is not None:
            return job, False
        work = factory()               # may raise a user error before anything is registered
        with self.cond:
            job = self.jobs.get(key)
            if job is not None:        # another session registered the same fit meanwhile: share theirs
                return job, False
            job = Job(key, work, label, on_done)
            if knobs:
                job.knobs = knobs
            self.jobs[key] = job
            job.state = "queued"       # the queue is in order of arrival
            self.queue.append(job)
        return job, True

    def start(self, job: Job) -> None:
        """Start `job`'s worker thread (it queues for a slot first)."""
        threading.Thread(target=self._worker, args=(job,), name=f"distviz-fit-{id(job):x}", daemon=True).start()

    def run(self, key, factory: Callable[[], Callable], *, label: str = "fit", on_done=None,
            status: Callable[[Job, bool, int], None] | None = None, knobs: str | None = None) -> Any:
        """The result of the job for `key`, waiting (and calling `status(job, own, n_ahead)`) until it ends.

        `factory()` is called only when this caller creates the job; it returns `work(progress)`.
        A job cancelled while this caller still waits is started again; its error is raised here.
        """
        token = object()
        sid = current_session_id()
        while True:
            job, own = self.join(key, factory, label, on_done, knobs)
            job.attach(id(token), sid)
            try:
                if own:
                    self.start(job)
                while not job.done.wait(POLL_S):
                    if status is not None:
                        status(job, own, self.ahead_of(job))
                    _yield_check()
            finally:
                job.detach(id(token))
            if job.state == "cancelled":
                if sid is not None and not session_alive(sid):
                    raise FitCancelled(f"the session waiting for {label} has ended")
                continue                 # the sessions that wanted it left while this one joined: fit it anew
            if job.error is not None:
                raise job.error
            return job.result


_GOVERNOR: Governor | None = None


def governor() -> Governor:
    """The process-wide fit governor."""
    global _GOVERNOR
    with _STORE_LOCK:
        if _GOVERNOR is None:
            _GOVERNOR = Governor()
        return _GOVERNOR


class ProgressUI:
    """What a waiting page shows: the queue position, another session's fit, or this fit's progress bar."""

    def __init__(self, box, label: str):
        self.box, self.label = box, label
        self.slot: Any = None  # a streamlit placeholder once shown
        self.shown: tuple | None = None

    def __call__(self, job: Job, own: bool, ahead: int) -> None:
        if self.slot is None:
            self.slot = self.box.empty()
        if job.state in ("new", "queued"):
            view: tuple = ("info", f"Waiting for {max(ahead, 1)} fit{'s' if max(ahead, 1) != 1 else ''} to finish before "
                            f"{self.label} starts (this server runs {governor().cap} at a time) …")
        else:
            n = max(job.n_rounds, 1)
            frac = round(min(1.0, job.round / n), 2)
            who = "" if own else "another session is fitting these settings — "
            what = job.note or f"{self.label}: round {job.round} / {job.n_rounds or '…'}"
            view = ("progress", frac, f"{who}{what}")
        if view != self.shown:
            self.shown = view
            if view[0] == "info":
                self.slot.info(view[1], icon=":material/hourglass_top:")
            else:
                self.slot.progress(view[1], text=view[2])

    def clear(self) -> None:
        """Remove the message or bar."""
        if self.slot is not None:
            self.slot.empty()


def run_fit(key, factory: Callable[[], Callable], *, label: str, box=None, store: ResultStore | None = None,
            knobs: str | None = None) -> Any:
    """The result for `key`: from the store, or from the (shared, capped, cancellable) job, stored when done.

    `factory()` (called only when this caller starts the fit, in its own thread) loads the data and returns
    `work(progress)`, which fits and returns the result; `box` is where the waiting message and the progress
    bar are drawn (the page itself when None); `knobs` names the settings to lower in the sentence of a fit
    stopped at the CPU deadline.
    """
    store = result_store() if store is None else store
    hit = store.get(key)
    if hit is not None:
        return hit
    if box is None:
        import streamlit as st
        box = st
    ui = ProgressUI(box, label)
    try:
        return governor().run(key, factory, label=label, on_done=lambda res: store.put(key, res), status=ui,
                              knobs=knobs)
    finally:
        ui.clear()
