"""Shared fixtures. ``backend`` runs a test on every backend that works here; ``webgpu`` runs it on
the webgpu backend only; ``run_python`` runs ``python ...`` in a subprocess with this checkout first
on PYTHONPATH (for the command line, scripts and fresh interpreters).

``MINIGRAPH_REQUIRE_BACKENDS=numpy,webgpu,cpu`` turns a missing backend into a failure instead of
a skip (CI sets it, so the GPU kernels are really executed there, on lavapipe). The ``cpu``
backend (Numba kernels) runs where its extra is installed and skips, naming the extra, elsewhere.

Tests run in parallel (``pytest -n auto``) and in random order: a backend a test registers is
unregistered after it (``_backend_registry_restored``), and files go to ``tmp_path``.
"""
import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest

import minigraph as mg

ALL_BACKENDS = ("numpy", "webgpu", "cpu")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _required():
    return {b for b in os.environ.get("MINIGRAPH_REQUIRE_BACKENDS", "").split(",") if b}


def _usable(name):
    """The backend's name if it works here; else a skip (a failure if MINIGRAPH_REQUIRE_BACKENDS names it)."""
    avail = mg.available_backends()
    if name not in avail:
        why = avail.unavailable.get(name, "unknown")
        if name in _required():
            pytest.fail(f"backend {name!r} is required (MINIGRAPH_REQUIRE_BACKENDS) but unavailable: {why}")
        pytest.skip(f"backend {name!r} unavailable: {why}")
    return name


@pytest.fixture(params=ALL_BACKENDS)
def backend(request):
    return _usable(request.param)


@pytest.fixture
def webgpu():
    """``"webgpu"`` where that backend works; skips the test elsewhere (fails it where CI requires it)."""
    return _usable("webgpu")


def _run_python(*args, env=None, cwd=ROOT, timeout=120):
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.update(env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=e, timeout=timeout)


@pytest.fixture
def run_python():
    """``run_python(*args, env=None, cwd=ROOT, timeout=120)``: ``python *args`` in a subprocess with
    this checkout first on PYTHONPATH; returns the CompletedProcess (text output captured)."""
    return _run_python


@pytest.fixture
def replace_kernel():
    """``replace_kernel(KERNELS, "op", factory)``: another kernel (None: none) for one test."""
    with contextlib.ExitStack() as stack:
        yield lambda table, op, factory: stack.enter_context(table.replaced(op, factory))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _backend_registry_restored():
    """A backend registered by a test (or by a docs page the docs tests run, e.g. backends.md's
    'tiny') is unregistered afterwards, so later tests that loop over mg.available_backends()
    see only the real ones. Instances of untouched backends (a webgpu device) are kept."""
    from minigraph import backends as registry

    factories = registry._FACTORIES
    saved = dict(factories)
    yield
    changed = {n for n in set(factories) | set(saved) if factories.get(n) is not saved.get(n)}
    for n in changed:
        registry._INSTANCES.pop(n, None)
        if n in saved:
            factories[n] = saved[n]
        else:
            factories.pop(n, None)


def pytest_sessionstart(session):
    avail = mg.available_backends()
    missing = _required() - set(avail)
    if missing:
        raise pytest.UsageError(f"MINIGRAPH_REQUIRE_BACKENDS needs {sorted(missing)}, unavailable here: "
                                f"{ {k: avail.unavailable.get(k) for k in missing} }")
