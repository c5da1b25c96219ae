"""Threads and reusable workspaces of the fast depthwise algorithms."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import numpy as np

from ....ops.geometry import ConvGeometry

_POOL: Optional[ThreadPoolExecutor] = None
_POOL_LOCK = threading.Lock()


def check_sizes(geo: ConvGeometry) -> None:
    """ValueError unless the geometry is a 2D one with at least one image, channel and output
    channel per input channel (the kernels' exact loops handle the rest)."""
    sizes = {"batch": geo.batch, "channels": geo.in_channels, "channel multiplier": geo.channel_multiplier}
    if len(geo.input_size) != 2:
        raise ValueError(f"the fast depthwise algorithms are 2D, not {len(geo.input_size)}D")
    for what, n in sizes.items():
        if n < 1:
            raise ValueError(f"depthwise geometry: {what} {n} must be >= 1")


def cpu_count() -> int:
    """Threads to use: ``MINIGRAPH_NUM_THREADS`` if set, else the CPUs this process may run on."""
    env = os.environ.get("MINIGRAPH_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def threads_to_use(threads: Optional[int]) -> int:
    """``threads`` (at least 1), or ``cpu_count()`` when None."""
    return cpu_count() if threads is None else max(1, int(threads))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=cpu_count(), thread_name_prefix="minigraph-dw")
        return _POOL


def run_blocks(fn, blocks, threads: int) -> None:
    """Run ``fn(c0, c1)`` over channel blocks, on ``threads`` threads (1: inline)."""
    if threads <= 1 or len(blocks) <= 1 or threading.current_thread().name.startswith("minigraph-dw"):
        for b in blocks:
            fn(*b)
        return
    futs = [_pool().submit(fn, *b) for b in blocks[1:]]
    try:
        fn(*blocks[0])
    finally:  # never return (or raise) while a worker still writes into the workspace
        errors = [f.exception() for f in futs]
    for e in errors:
        if e is not None:
            raise e


def channel_blocks(c: int, parts: int) -> list:
    """``[(c0, c1)]``: ``c`` channels split into at most ``parts`` contiguous blocks."""
    parts = max(1, min(parts, c))
    edges = [round(i * c / parts) for i in range(parts + 1)]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


class Workspaces:
    """Workspaces (dicts of named zero-initialised buffers) that survive between calls.

    A frame's zero border is written once, when the buffer is made; later calls overwrite the
    interior only. acquire/release keep concurrent callers on separate workspaces.
    """

    def __init__(self, keep: int = 2):
        self._free: list = []
        self._lock = threading.Lock()
        self._keep = keep

    def acquire(self) -> dict:
        """A free workspace (a new, empty one if none is free)."""
        with self._lock:
            return self._free.pop() if self._free else {}

    def release(self, ws: dict) -> None:
        """Give a workspace back for later calls (at most ``keep`` are kept)."""
        with self._lock:
            if len(self._free) < self._keep:
                self._free.append(ws)


def buffer(ws: dict, key: str, size: int, dtype) -> np.ndarray:
    """The workspace's zero-initialised flat buffer ``key`` of ``size`` elements."""
    a = ws.get(key)
    if a is None or a.size != size or a.dtype != dtype:
        a = np.zeros(size, dtype)
        ws[key] = a
    return a
