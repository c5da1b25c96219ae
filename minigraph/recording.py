"""The profiler's recorder, the part of profiling that kernels see (layer 0: kernels of any
backend import it, and it imports nothing of minigraph).

While ``Executable.profile`` runs, kernels that split their work over worker threads time each
block through ``recorder()``; outside profiles it is None and nothing is timed. The records,
tables and traces built from what it collects are in ``minigraph/profiling.py``.
"""
from __future__ import annotations

import contextlib
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

    A kernel that splits its work over threads asks ``recorder()`` once: None (every normal
    run) means run the block as usual; else ``rec.time(fn, *args)`` runs and times it.
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


_RECORDER: Optional[Recorder] = None
_RECORDER_LOCK = threading.Lock()


def recorder() -> Optional[Recorder]:
    """The recorder of the profile running now, or None (always None outside profiles)."""
    return _RECORDER


def own_recorder() -> Optional[Recorder]:
    """The recorder if the calling thread's profile owns it (a backend tags its ops on it)."""
    rec = _RECORDER
    return rec if rec is not None and rec.owner == threading.get_ident() else None


@contextlib.contextmanager
def record() -> Iterator[Optional[Recorder]]:
    """Install a recorder for one profiled run; None if another thread's profile has one."""
    global _RECORDER
    with _RECORDER_LOCK:
        if _RECORDER is not None:
            rec = None
        else:
            rec = _RECORDER = Recorder()
    try:
        yield rec
    finally:
        if rec is not None:
            with _RECORDER_LOCK:
                _RECORDER = None
