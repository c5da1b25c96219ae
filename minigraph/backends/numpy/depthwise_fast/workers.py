"""Threads and reusable workspaces of the fast depthwise algorithms."""
from __future__ import annotations

import threading
from typing import Optional

import numpy as np

from ....ops.geometry import ConvGeometry
from ..threads import get_num_threads, parallel

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
    """Threads to use now: ``mg.get_num_threads()``."""
    return get_num_threads()


def threads_to_use(threads: Optional[int]) -> int:
    """``threads`` (at least 1), or ``get_num_threads()`` when None (read at each call, so
    ``mg.set_num_threads`` applies to plans made before it)."""
    return get_num_threads() if threads is None else max(1, int(threads))


def run_blocks(fn, blocks, threads: int) -> None:
    """Run ``fn(c0, c1)`` over channel blocks on the backend's pool (``threads <= 1``: inline)."""
    if threads <= 1:
        for b in blocks:
            fn(*b)
        return
    parallel(fn, blocks)


def channel_blocks(c: int, parts: int) -> list:
    """``[(c0, c1)]``: ``c`` channels split into at most ``parts`` contiguous blocks."""
    parts = max(1, min(parts, c))
    edges = [round(i * c / parts) for i in range(parts + 1)]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


# channels are cut into at least this many chunks (where there are enough channels), whatever the
# thread count: a chunk's BLAS calls then have the same shapes at every count
MAX_TASKS = 16
# multiply-adds a task of the fast plans needs (their loops hold the GIL between NumPy calls:
# smaller tasks on more threads contend for it and run slower, measured on 16 cores)
FAST_TASK_WORK = 1 << 21
# the weights gradient's dots are many short BLAS calls per channel: measured on 16 cores, its
# tasks need four times the work before a second thread gains anything
WGRAD_TASK_WORK = 1 << 23


def task_chunk(c: int, chunk: int) -> int:
    """Channels per chunk: at most ``chunk`` (what fits the cache), and small enough that ``c``
    channels make ``MAX_TASKS`` chunks; never dependent on the thread count."""
    return max(1, min(chunk, -(-c // MAX_TASKS)))


def chunk_blocks(c: int, chunk: int, parts: int) -> list:
    """``[(c0, c1)]``: ``c`` channels in at most ``parts`` blocks of whole chunks of ``chunk``
    channels (each block starts at a multiple of ``chunk``, so the chunks inside the blocks are
    the same for every ``parts``)."""
    n = -(-c // chunk)
    return [(a * chunk, min(c, b * chunk)) for a, b in channel_blocks(n, parts)]


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
