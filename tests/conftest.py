"""Shared fixtures. ``backend`` runs a test on every backend that works here.

``MINIGRAPH_REQUIRE_BACKENDS=numpy,webgpu`` turns a missing backend into a failure instead of
a skip (CI sets it, so the GPU kernels are really executed there, on lavapipe).
"""
import os

import numpy as np
import pytest

import minigraph as mg

ALL_BACKENDS = ("numpy", "webgpu")


def _required():
    return {b for b in os.environ.get("MINIGRAPH_REQUIRE_BACKENDS", "").split(",") if b}


@pytest.fixture(params=ALL_BACKENDS)
def backend(request):
    name = request.param
    avail = mg.available_backends()
    if name not in avail:
        why = avail.unavailable.get(name, "unknown")
        if name in _required():
            pytest.fail(f"backend {name!r} is required (MINIGRAPH_REQUIRE_BACKENDS) but unavailable: {why}")
        pytest.skip(f"backend {name!r} unavailable: {why}")
    return name


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def pytest_sessionstart(session):
    avail = mg.available_backends()
    missing = _required() - set(avail)
    if missing:
        raise pytest.UsageError(f"MINIGRAPH_REQUIRE_BACKENDS needs {sorted(missing)}, unavailable here: "
                                f"{ {k: avail.unavailable.get(k) for k in missing} }")
