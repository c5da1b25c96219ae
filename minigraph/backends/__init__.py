"""Backend registry: built-in backends plus third-party ones from the ``minigraph.backends``
entry-point group.

A backend is an object with ``name``, ``available() -> (bool, reason)`` and
``prepare(plan) -> runner``. The runner is called as ``runner(feed_arrays, variables)`` with
the feed arrays in ``plan.feeds`` order and ``{variable op: current value}``; it returns
``(results in plan.targets order, {variable op: new value})``. The executor, not the backend,
validates feeds, commits assignments (only when the whole run succeeded) and copies results.
``prepare`` must raise ``KernelMissingError`` for an op it cannot run: no silent fallback.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Any, Callable, Optional

from ..errors import BackendUnavailableError, NameLookupError, UnknownBackendError
from .numpy import NumpyBackend
from .webgpu import WebGPUBackend

_FACTORIES: dict[str, Callable[[], Any]] = {}
_INSTANCES: dict[str, Any] = {}
_LOCK = threading.RLock()  # reentrant: a backend factory may itself call get_backend (a wrapping backend)
_entry_points_loaded: Any = False  # the sys.path state of the last scan


def register_backend(name: str, factory: Callable[[], Any]) -> None:
    """Register a backend factory under ``name`` (called once, lazily); not in MPSGraph.

    Args:
        name: The name ``backend=`` will take.
        factory: A class or function returning an object with ``name``, ``available()`` and
            ``prepare(plan)`` (see docs/backends.md).
    """
    with _LOCK:
        _FACTORIES[name] = factory
        _INSTANCES.pop(name, None)


def _load_entry_point(ep: Any) -> Any:
    return _instantiate(ep.load())


def _load_entry_points(rescan: bool = False) -> None:
    """Register the ``minigraph.backends`` entry points (``rescan``: also ones installed since)."""
    global _entry_points_loaded
    if _entry_points_loaded and not rescan:
        return
    import importlib.metadata as md

    key = (id(md.entry_points), tuple(sys.path), tuple(_mtime(p) for p in sys.path))
    if _entry_points_loaded == key:  # nothing installed or patched since the last scan (~3 ms saved)
        return
    _entry_points_loaded = key
    entry_points = md.entry_points

    try:
        eps = entry_points(group="minigraph.backends")
    except Exception:  # pragma: no cover - broken metadata must not break minigraph
        return
    for ep in eps:
        if ep.name not in _FACTORIES:
            _FACTORIES[ep.name] = functools.partial(_load_entry_point, ep)


def _mtime(path: str) -> float:
    try:
        return os.stat(path or ".").st_mtime
    except OSError:
        return 0.0


def _instantiate(obj: Any) -> Any:
    return obj() if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "prepare")) else obj


def _instance(name: str) -> Any:
    with _LOCK:
        inst = _INSTANCES.get(name)
        if inst is None:
            inst = _FACTORIES[name]()
            _INSTANCES[name] = inst
        return inst


def _status(name: str) -> tuple[bool, str]:
    if name == "metal" and sys.platform != "darwin":
        return False, (f"Metal needs macOS (this is {sys.platform}); the 'webgpu' backend runs the same "
                       "kernels (our WGSL, through wgpu on Vulkan) here")
    try:
        check = getattr(_instance(name), "available", True)  # no available(): always available
        got = check() if callable(check) else check
        if isinstance(got, (bool, int)):  # a bare bool is accepted too
            return bool(got), ("available" if got else "its available() returned False")
        ok, reason = got
        return bool(ok), str(reason)
    except Exception as e:  # a backend that fails to load is unavailable, with the reason
        return False, f"{type(e).__name__}: {e}"


class AvailableBackends(list):
    """The names of the backends that work here; ``.unavailable`` maps the others to why not."""

    def __init__(self, ok: list, unavailable: dict, details: Optional[dict] = None):
        super().__init__(ok)
        self.unavailable = unavailable
        self.details = dict(details or {})  # available backend -> what it runs on (e.g. the GPU adapter)

    def __repr__(self) -> str:
        why = "; ".join(f"{k}: {v}" for k, v in self.unavailable.items())
        return f"{list(self)!r}" + (f" (unavailable: {why})" if why else "")

    # read as a mapping too: avail["metal"] -> BackendStatus(available=False, reason="Metal needs macOS ...")
    def __getitem__(self, key):
        if not isinstance(key, str):
            return super().__getitem__(key)
        if key in self:
            return BackendStatus(True, self.details.get(key) or "available")
        if key in self.unavailable:
            return BackendStatus(False, self.unavailable[key])
        raise NameLookupError(f"unknown backend {key!r}; known backends: {sorted(self.names())}")

    def get(self, key: str, default=None):
        """The ``BackendStatus`` of ``key``, or ``default`` for an unknown name."""
        return self[key] if key in self or key in self.unavailable else default

    def names(self) -> list:
        """Every registered backend, available or not."""
        return list(self) + [n for n in self.unavailable if n not in self]

    def items(self) -> list:
        """``[(name, BackendStatus)]`` for every registered backend."""
        return [(n, self[n]) for n in self.names()]


class BackendStatus(tuple):
    """``(available, reason)``; true when the backend works here."""

    def __new__(cls, available: bool, reason: str):
        return super().__new__(cls, (bool(available), reason))

    available = property(lambda self: self[0])
    reason = property(lambda self: self[1])

    def __bool__(self) -> bool:
        return self[0]

    def __str__(self) -> str:
        return self[1]

    def __repr__(self) -> str:
        return f"BackendStatus(available={self[0]}, reason={self[1]!r})"


def available_backends() -> AvailableBackends:
    """Backends that can run on this machine, and for the others, why not (MPSGraph runs on an ``MPSGraphDevice``; minigraph picks a backend instead)."""
    _load_entry_points(rescan=True)
    ok, bad, details = [], {}, {}
    for name in list(_FACTORIES):
        good, reason = _status(name)
        if good:
            ok.append(name)
            details[name] = reason
        else:
            bad[name] = reason
    return AvailableBackends(ok, bad, details)


def get_backend(name: str) -> Any:
    """The backend called ``name`` (what MPSGraph calls the device); ``BackendUnavailableError`` says why it cannot be used.

    Args:
        name: A backend name, e.g. ``"numpy"`` or ``"webgpu"``.
    """
    _load_entry_points()
    if isinstance(name, str) and name not in _FACTORIES:
        _load_entry_points(rescan=True)  # a backend installed after the first look
    if not isinstance(name, str) or name not in _FACTORIES:
        raise UnknownBackendError(
            f"unknown backend {name!r}; known backends: {sorted(_FACTORIES)} "
            f"(available here: {list(available_backends())})")
    good, reason = _status(name)
    if not good:
        raise BackendUnavailableError(f"backend {name!r} is not available: {reason} "
                                      f"(available here: {list(available_backends())})")
    return _instance(name)


register_backend("numpy", NumpyBackend)
register_backend("webgpu", WebGPUBackend)
register_backend("cpu", lambda: __import__("minigraph.backends.cpu", fromlist=["CpuBackend"]).CpuBackend())  # Numba only when used
register_backend("metal", functools.partial(WebGPUBackend, metal_only=True))
