"""The NumPy backend's thread pool: heavy kernels split their work into blocks of independent
outputs and run the blocks on ``get_num_threads()`` threads (NumPy releases the GIL inside its
loops and BLAS calls, so the blocks really run at once).

The number of threads is ``mg.set_num_threads(n)``'s, else the ``MINIGRAPH_NUM_THREADS``
environment variable's, else the cores this process may run on. BLAS (NumPy's matmul) is kept
consistent with it through threadpoolctl (a core dependency): ``set_num_threads(n)`` gives BLAS
``n`` threads, and while the pool splits a kernel BLAS runs one thread per task, so the machine is
never oversubscribed. A BLAS threadpoolctl cannot find keeps the threads its own environment
variables give it (``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OMP_NUM_THREADS``).

The pool survives what a process does around it: a run keeps the pool it started its blocks on,
so a larger count (a larger pool) never fails a run in flight (the old pool shuts down once its
last run lets go of it), and a child made by ``os.fork`` (or multiprocessing's fork start
method) starts without its parent's pool, whose workers do not exist in it, and makes its own.

Determinism: a kernel splits only along blocks of its output whose values do not depend on where
the blocks start, so a result is the same for every run at a given thread count; which results
are also bit-identical across thread counts is listed in docs/performance.md ("Threads").
"""
from __future__ import annotations

import operator
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from math import prod
from typing import Any, Callable, Optional, Sequence

import numpy as np
from threadpoolctl import ThreadpoolController

from ... import recording
from ...errors import MiniGraphError

ENV = "MINIGRAPH_NUM_THREADS"
# a task should have at least this many elements of work (below it, handing a block to another
# thread costs more than it saves)
MIN_TASK_WORK = 1 << 16
_WORKER_PREFIX = "minigraph-worker"


class ThreadCountError(MiniGraphError, ValueError):
    """A thread count that is not an integer >= 1 (``set_num_threads`` or ``MINIGRAPH_NUM_THREADS``).
    Not in MPSGraph, which runs on the GPU and has no CPU thread count."""


_explicit: Optional[int] = None  # set_num_threads's count; None: the environment's or the cores
_lock = threading.Lock()
_pool: Optional["_Pool"] = None  # the pool new splits go to
_tasks_run = 0  # blocks handed to pool workers since import (tests check the pool is used)


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _check(n: Any, what: str) -> int:
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise ThreadCountError(f"{what}: the number of threads must be an integer >= 1, got {n!r} "
                               f"({type(n).__name__})")
    value = operator.index(n)
    if value < 1:
        raise ThreadCountError(f"{what}: the number of threads must be an integer >= 1, got {value}")
    return value


def _from_env() -> Optional[int]:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ThreadCountError(f"environment variable {ENV}={raw!r}: expected an integer >= 1 "
                               f"(or unset for the usable cores, {usable_cores()})") from None
    return _check(value, f"environment variable {ENV}")


def get_num_threads() -> int:
    """The threads the NumPy backend's kernels use: ``set_num_threads``'s count, else
    ``MINIGRAPH_NUM_THREADS``, else the usable cores (``len(os.sched_getaffinity(0))``). Not an
    MPSGraph API: MPSGraph runs on the GPU."""
    if _explicit is not None:
        return _explicit
    return _from_env() or usable_cores()


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in the NumPy backend's kernels from now on, and give BLAS ``n`` threads
    too (through threadpoolctl). Not an MPSGraph API: MPSGraph runs on the
    GPU.

    Args:
        n: The number of threads, an integer >= 1 (else ``ThreadCountError``).
    """
    global _explicit
    value = _check(n, "set_num_threads")
    with _lock:
        _explicit = value
    _blas.set(value)


# ------------------------------------------------------------------------------ BLAS
class _Blas:
    """NumPy's BLAS libraries through threadpoolctl: ``single()`` holds them
    at one thread while a split kernel runs, counting nested and concurrent holders."""

    def __init__(self) -> None:
        self._libs: Optional[list] = None
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: list = []

    def libs(self) -> list:
        if self._libs is None:
            try:
                libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
            except Exception:  # pragma: no cover - an unusual BLAS threadpoolctl cannot read
                libs = []
            self._libs = libs
        return self._libs

    @property
    def controlled(self) -> bool:
        """Whether minigraph can set BLAS's threads (a BLAS that threadpoolctl found)."""
        return bool(self.libs())

    def threads(self) -> Optional[int]:
        libs = self.libs()
        return libs[0].get_num_threads() if libs else None

    def set(self, n: int) -> None:
        with self._lock:
            if self._holders:  # restored to n when the last split kernel ends
                self._saved = [n] * len(self._saved)
                return
            for lib in self.libs():
                lib.set_num_threads(n)

    def acquire(self) -> None:
        libs = self.libs()
        if not libs:
            return
        with self._lock:
            if self._holders == 0:
                self._saved = [lib.get_num_threads() for lib in libs]
                for lib in libs:
                    lib.set_num_threads(1)
            self._holders += 1

    def release(self) -> None:
        if not self.libs():
            return
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                for lib, n in zip(self.libs(), self._saved):
                    lib.set_num_threads(n)

    def after_fork(self) -> None:
        """In a forked child: a fresh lock, and no holders (the threads that held BLAS at one
        thread are the parent's: BLAS gets back the count it had before them)."""
        self._lock = threading.Lock()
        if self._holders and self._libs:
            for lib, n in zip(self._libs, self._saved):
                lib.set_num_threads(n)
        self._holders = 0


_blas = _Blas()


def blas_threads() -> Optional[int]:
    """BLAS's thread count now, or None where minigraph cannot read it (no BLAS threadpoolctl knows)."""
    return _blas.threads()


# ------------------------------------------------------------------------------ splitting
def blocks(n: int, parts: int) -> list:
    """``[(a, b)]``: ``range(n)`` split into at most ``parts`` contiguous blocks of near-equal
    size (the first blocks one longer); none for ``n == 0``."""
    parts = max(1, min(parts, n))
    q, r = divmod(n, parts)
    out, a = [], 0
    for i in range(parts):
        b = a + q + (1 if i < r else 0)
        if b > a:
            out.append((a, b))
        a = b
    return out


def split(n: int, work_per_item: int = 1, threads: Optional[int] = None, min_work: Optional[int] = None) -> list:
    """Blocks of ``range(n)`` for one task each: at most ``threads`` (default
    ``get_num_threads()``) of them, each with at least ``min_work`` elements of work (``n`` items of
    ``work_per_item`` each); a single block when the work is small."""
    t = get_num_threads() if threads is None else threads
    min_work = MIN_TASK_WORK if min_work is None else min_work
    if t <= 1 or n <= 1:
        return blocks(n, 1)
    parts = min(t, max(1, (n * max(1, work_per_item)) // max(1, min_work)))
    return blocks(n, parts)


def in_worker() -> bool:
    """Whether the calling thread is one of the pool's workers (a kernel there runs its blocks inline)."""
    return threading.current_thread().name.startswith(_WORKER_PREFIX)


class _Pool:
    """A ThreadPoolExecutor and the ``parallel`` calls that hold it: a pool replaced by a larger
    one shuts down when the last of them lets go (a run never submits to a pool shut down under it)."""

    def __init__(self, size: int) -> None:
        self.executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix=_WORKER_PREFIX)
        self.size = size
        self.users = 0
        self.retired = False


def _acquire(workers: int) -> _Pool:
    """The pool, with at least ``workers`` threads, held until ``_release``."""
    global _pool
    old = None
    with _lock:
        if _pool is None or _pool.size < workers:
            old, _pool = _pool, _Pool(workers)
            if old is not None:
                old.retired = True
                old = old if old.users == 0 else None  # else its last user shuts it down
        _pool.users += 1
        pool = _pool
    if old is not None:
        old.executor.shutdown(wait=False)
    return pool


def _release(pool: _Pool) -> None:
    with _lock:
        pool.users -= 1
        done = pool.retired and pool.users == 0
    if done:
        pool.executor.shutdown(wait=False)  # every task of it has finished: its threads exit


def pool_size() -> int:
    """The worker threads of the pool now (0 before the first split)."""
    pool = _pool
    return pool.size if pool is not None else 0


def _after_fork_in_child() -> None:
    """A forked child has only the thread that forked: the parent's workers (and any lock they
    held) are not in it, so it starts with no pool and makes its own at its first split."""
    global _lock, _pool
    _lock = threading.Lock()
    _pool = None
    _blas.after_fork()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _count(k: int) -> None:
    global _tasks_run
    with _lock:
        _tasks_run += k


def tasks_run() -> int:
    """Blocks handed to pool workers since the process started (what tests check the pool by)."""
    return _tasks_run


def parallel(fn: Callable[..., Any], parts: Sequence[tuple]) -> None:
    """``fn(*part)`` for every part, the parts on the pool's threads (the first on the calling
    thread); inline when there is one part or the caller is itself a worker. While the parts run,
    BLAS runs one thread per task, even for a single part: a BLAS call then computes the same
    bits at every thread count (OpenBLAS's threaded GEMM rounds differently from its serial one).
    Returns when every part has finished (and raises the first error), so no worker still
    writes into the result."""
    rec = recording.recorder()
    _blas.acquire()
    try:
        if len(parts) <= 1 or in_worker():
            for p in parts:
                fn(*p) if rec is None else rec.time(fn, *p)
            return
        pool = _acquire(max(len(parts) - 1, get_num_threads() - 1, 1))
        futs: list = []
        try:
            for p in parts[1:]:
                futs.append(pool.executor.submit(fn, *p) if rec is None else pool.executor.submit(rec.time, fn, *p))
            _count(len(futs))
            fn(*parts[0]) if rec is None else rec.time(fn, *parts[0])
        finally:  # never return (or raise) while a worker still writes into the result
            try:
                errors = [f.exception() for f in futs]
            finally:
                _release(pool)
    finally:
        _blas.release()
    for e in errors:
        if e is not None:
            raise e


def serial_blas(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with BLAS held at one thread while it runs (a small product the pool does not split
    computes the same bits at every thread count)."""
    def run(*args: Any) -> Any:
        _blas.acquire()
        try:
            return fn(*args)
        finally:
            _blas.release()
    return run


# ------------------------------------------------------------------------------ kernel wrappers
# results of at least this many elements are split by the elementwise and reduction wrappers
ELEMENTWISE_THRESHOLD = 1 << 18
# matrix products of at least this many multiply-adds are split
MATMUL_THRESHOLD = 1 << 20


def elementwise(fn: Callable[..., Any], shape: tuple, dtype: Any, reuse: Optional[int] = None) -> Callable[..., Any]:
    """``fn`` (an elementwise kernel with a result of ``shape`` and ``dtype``) split over the
    pool by contiguous blocks of its result: flat blocks when every input has the result's shape
    and is C-contiguous, else blocks of the leading axis (inputs that broadcast along it are passed
    whole). Small results get ``fn`` itself. Each element is computed as ``fn`` computes it, so
    the result is bit-identical for any thread count. A ufunc writes its blocks in place, into
    input ``reuse`` where the plan allows it (``Step.reuse``: that buffer dies at this step)."""
    size = prod(shape)
    in_place = isinstance(fn, np.ufunc)
    if reuse is not None and not in_place:
        reuse = None
    if size < ELEMENTWISE_THRESHOLD or len(shape) == 0:
        if reuse is not None and len(shape):
            return lambda *xs: fn(*xs, out=xs[reuse])
        return fn
    dt = np.dtype(dtype)

    def run(*xs):
        if get_num_threads() <= 1:
            return fn(*xs) if reuse is None else fn(*xs, out=xs[reuse])
        whole = all(type(x) is np.ndarray and x.shape == shape and x.flags.c_contiguous for x in xs)
        if whole:
            n, views, cut = size, [x.reshape(-1) for x in xs], [True] * len(xs)
        else:
            n, views = shape[0], list(xs)
            cut = [getattr(x, "ndim", 0) == len(shape) and x.shape[0] == n for x in xs]
        parts = split(n, size // max(1, n))
        if len(parts) <= 1:
            return fn(*xs) if reuse is None else fn(*xs, out=xs[reuse])
        out = np.empty(shape, dt) if reuse is None else xs[reuse]
        flat = out.reshape(-1) if whole else out

        def block(a: int, b: int) -> None:
            args = [v[a:b] if c else v for v, c in zip(views, cut)]
            if in_place:
                fn(*args, out=flat[a:b])
            else:
                flat[a:b] = fn(*args)

        parallel(block, parts)
        return out
    return run


def reduction(fn: Callable[..., Any], in_shape: tuple, axes: Sequence[int], out_shape: tuple,
              dtype: Any) -> Callable[..., Any]:
    """``fn`` (a reduction over ``axes`` with ``keepdims``) split over the pool along the first
    axis it does not reduce: every output element is still summed (or compared) whole, in the
    order ``fn`` uses, so the result is bit-identical for any thread count. A reduction over every
    axis of size > 1 is never split."""
    return kept_axis_blocks(fn, [in_shape], axes, out_shape, dtype)


def kept_axis_blocks(fn: Callable[..., Any], in_shapes: Sequence[tuple], axes: Sequence[int], out_shape: tuple,
                     dtype: Any, numpy_order: bool = True) -> Callable[..., Any]:
    """``fn(*inputs)`` run on blocks of the first output axis outside ``axes`` (of size >= 2) that
    every input has at full size or 1 (inputs without it go whole), for inputs of at least
    ``ELEMENTWISE_THRESHOLD`` elements. With ``numpy_order``, not the innermost axis when a reduced
    axis lies outside it (NHWC's channels): NumPy sums such a strided block in another order than
    the whole array, so float32 bits would follow the thread count (a kernel that sums in float64
    and rounds once passes False)."""
    rank = len(out_shape)
    size = max((prod(s) for s in in_shapes), default=0)
    reduced = {a % max(1, rank) for a in axes}
    k = next((k for k in range(rank) if k not in reduced and out_shape[k] >= 2
              and all(len(s) == rank and s[k] in (1, out_shape[k]) for s in in_shapes)), None)
    if size < ELEMENTWISE_THRESHOLD or k is None or \
            (numpy_order and reduced and k > min(reduced) and k == rank - 1):
        return fn
    n, dt = out_shape[k], np.dtype(dtype)

    def run(*xs):
        parts = split(n, size // n)
        if len(parts) <= 1:
            return fn(*xs)
        out = np.empty(out_shape, dt)

        def block(a: int, b: int) -> None:
            idx = (slice(None),) * k + (slice(a, b),)
            out[idx] = fn(*[x[idx] if np.ndim(x) == rank and np.shape(x)[k] == n else x for x in xs])

        parallel(block, parts)
        return out
    return run
