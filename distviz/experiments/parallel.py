"""Run a study's independent units (replications, splits, seeds) serially or as tasks of a Dask cluster.

A study loops over its units through :func:`map_units`; ``distviz study NAME --scheduler local|ADDRESS``
enters :func:`use_scheduler` around the study, so the same loop then runs as ``dask.distributed`` tasks
(a ``LocalCluster`` of worker processes for ``local``, or the scheduler at ``ADDRESS`` such as
``tcp://host:8786``).  Each unit carries its own seed, so results are the same as the serial run and
come back in the units' order.  Without a scheduler the loop runs in this process, as before.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from distviz._optional import missing
from distviz.errors import ClusterError, ConfigError

_ACTIVE: list[Any] = []  # stack of dask.distributed.Client entered by use_scheduler
#: seconds between map_units' looks at the cluster while its units run
POLL_SECONDS = 5.0
#: seconds a cluster may have no worker while units are pending before map_units gives up (a local cluster's nanny
#: restarts a killed worker within seconds; a remote cluster's workers may take longer to be started again)
NO_WORKER_GRACE_SECONDS = 120.0
_ADDRESS = re.compile(r"^(tcp|tls|ws|wss|inproc|ucx)://[A-Za-z0-9_.\-\[\]:]+$|^[A-Za-z0-9_.\-]+:\d{1,5}$")


def active_client():
    """The Dask client entered by :func:`use_scheduler`, or None when units run serially."""
    return _ACTIVE[-1] if _ACTIVE else None


def is_distributed() -> bool:
    """Whether :func:`map_units` currently sends units to a Dask cluster."""
    return bool(_ACTIVE)


def _check_spec(scheduler: str, workers: int | None) -> None:
    """Raise ConfigError when the scheduler spec or the worker count cannot be used."""
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ConfigError(f"--workers must be a positive whole number such as 2, got {workers!r}.")
    if scheduler != "local" and not _ADDRESS.match(scheduler):
        raise ConfigError(f"--scheduler must be 'local' or a scheduler address such as tcp://10.0.0.5:8786, "
                          f"got {scheduler!r}.")
    if scheduler != "local" and workers is not None:
        raise ConfigError("--workers applies to --scheduler local only; a remote cluster's workers are started "
                          "with 'dask worker ADDRESS'.")


@contextlib.contextmanager
def use_scheduler(scheduler: str | None, workers: int | None = None) -> Iterator[Any]:
    """Within the block, :func:`map_units` runs units on `scheduler` ('local', an address, or None for serial)."""
    if scheduler is None:
        yield None
        return
    scheduler = str(scheduler).strip()
    _check_spec(scheduler, workers)
    try:
        from dask.distributed import Client, LocalCluster
    except ModuleNotFoundError as e:
        if e.name is None or e.name.split(".")[0] not in ("dask", "distributed"):
            raise
        raise missing("distributed", "Running studies with --scheduler") from None

    with contextlib.ExitStack() as stack:
        if scheduler == "local":
            # one unit at a time per worker process, and one numba / BLAS thread each (dask's nanny already sets
            # OMP / MKL / OPENBLAS to 1): n workers use n cores without oversubscription
            # silence_logs: a task that raises (a bad input file, say) comes back to this process as its exception,
            # which the CLI prints as one sentence; the workers' own report of it, and the shutdown's, would be
            # tracebacks on stderr
            cluster = stack.enter_context(LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                                                       dashboard_address=":0", env={"NUMBA_NUM_THREADS": "1"},
                                                       silence_logs=logging.CRITICAL))
            client = stack.enter_context(Client(cluster))
        else:
            try:
                client = stack.enter_context(Client(scheduler, timeout="30s"))
            except OSError:
                raise ConfigError(f"Could not reach a Dask scheduler at {scheduler}; start one with 'dask scheduler' "
                                  f"and workers with 'dask worker {scheduler}', or use --scheduler local.") from None
        from distviz.trees import prepare_numba_cache

        client.run(prepare_numba_cache)   # numba cache upkeep on every worker before the first unit's fit
        _ACTIVE.append(client)
        try:
            yield client
        finally:
            _ACTIVE.pop()


def map_units(fn: Callable[[Any], Any], units: Iterable[Any], scheduler=None) -> list:
    """``[fn(u) for u in units]``, in order, run as Dask tasks when a scheduler is active, else in this process.

    `fn` must be a module-level function (or a functools.partial of one) so that workers can import it;
    `scheduler` is a ``dask.distributed.Client`` to use instead of the one entered by :func:`use_scheduler`.
    An error raised by a unit is raised here, as in the serial loop.
    """
    units = list(units)
    client = scheduler if scheduler is not None else active_client()
    if client is None or len(units) == 0:
        return [fn(u) for u in units]
    futures = client.map(fn, units, pure=False)
    try:
        _wait_with_workers(client, futures)
        return client.gather(futures)
    finally:
        for f in futures:
            f.release()


def _wait_with_workers(client, futures) -> None:
    """Wait until every future is finished (done, failed or cancelled), raising ClusterError when the cluster has had
    no worker for :data:`NO_WORKER_GRACE_SECONDS` meanwhile: its scheduler then waits forever, and so would gather
    (the workers of a cluster whose processes were suspended for minutes, say, are dropped by the scheduler and not
    started again)."""
    import time

    from dask.distributed import wait

    without_since = None
    while True:
        try:
            wait(futures, timeout=POLL_SECONDS)
            return
        except TimeoutError:
            pass
        if client.nthreads():
            without_since = None
            continue
        now = time.monotonic()
        without_since = now if without_since is None else without_since
        if now - without_since >= NO_WORKER_GRACE_SECONDS:
            left = sum(not f.done() for f in futures)
            raise ClusterError(f"The Dask cluster has had no worker for {NO_WORKER_GRACE_SECONDS:g} s with {left} of "
                               f"{len(futures)} units unfinished; start workers again (dask worker ADDRESS) or rerun "
                               "the study, and do not suspend its processes.")
