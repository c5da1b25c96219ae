"""The profiler's recorder, the part of profiling that kernels see (layer 0: kernels of any
backend import it, and it imports nothing of minigraph).

While ``Executable.profile`` runs, kernels that split their work over worker threads time each
block through ``recorder()``; outside profiles it is None and nothing is timed. The recorder is
the profiled run's (a context variable set for the run), not the process's: another thread's run
at the same time sees None, so its blocks never land in the profile's trace, and two threads can
profile at once. The records,
tables and traces built from what it collects are in ``minigraph/profiling.py``.
"""
from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from typing import Any, Iterator, Optional


def clock() -> int:
    """The host clock of profiles, in nanoseconds (a function, so tests can count its calls)."""
    return time.perf_counter_ns()


def host_lane() -> tuple:
    """``(lane id, lane name)`` of the calling thread: its OS thread id and its Python name."""
    return threading.get_native_id(), threading.current_thread().name


class Recorder:
    """While a profile runs: the blocks of work that kernels hand to worker threads, each timed
    on its own thread, so the trace gets a lane per thread that ran kernels.

    A kernel that splits its work over threads asks ``recorder()`` once, on the thread that
    runs the op (worker threads do not see the run's recorder), and hands it to its blocks: None
    (every normal run) means run the block as usual; else ``rec.time(fn, *args)`` runs and times it.
    """

    def __init__(self) -> None:
        self.owner = threading.get_ident()  # the thread whose profile this is
        self.op: Any = None  # the op the profile is timing now
        self.blocks: list = []  # (op, start ns, end ns, lane id)
        self.lanes: dict = {}
        self._lock = threading.Lock()

    def time(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, timed as a block of the current op on the calling thread."""
        op, start = self.op, clock()
        try:
            return fn(*args, **kwargs)
        finally:
            end = clock()
            lane, name = host_lane()
            with self._lock:
                self.blocks.append((op, start, end, lane))
                self.lanes[lane] = name


_CURRENT: contextvars.ContextVar[Optional[Recorder]] = contextvars.ContextVar("minigraph_recorder", default=None)


def recorder() -> Optional[Recorder]:
    """The recorder of the profiled run the calling thread is in, or None (always None outside
    profiles, and on threads the run did not start on)."""
    return _CURRENT.get()


def own_recorder() -> Optional[Recorder]:
    """The recorder if the calling thread's profile owns it (a backend tags its ops on it)."""
    rec = _CURRENT.get()
    return rec if rec is not None and rec.owner == threading.get_ident() else None


@contextlib.contextmanager
def record() -> Iterator[Recorder]:
    """A recorder for one profiled run, seen by ``recorder()`` in the calling context only."""
    rec = Recorder()
    token = _CURRENT.set(rec)
    try:
        yield rec
    finally:
        _CURRENT.reset(token)
