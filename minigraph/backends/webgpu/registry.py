"""Kernel table of the webgpu backend.

A kernel is a *factory* ``factory(step, kb)`` run once when a plan is prepared: it reads the
step's attributes and concrete types and records its dispatches through ``kb``
(a ``KernelBuilder``): ``kb.input(i)``, ``kb.output()``, ``kb.scratch(nbytes)``,
``kb.dispatch(wgsl, bindings, groups)``. Nothing is compiled or bound at run time.

``ALIASES`` lists ops whose output is byte-identical to their input (reshape and friends):
the runner gives the output slot the input's buffer, so they cost nothing.
"""
from __future__ import annotations

from typing import Callable

KERNELS: dict[str, Callable] = {}
ALIASES = {"reshape", "expand_dims", "squeeze", "identity", "stop_gradient"}


def webgpu_kernel(*types: str):
    def deco(factory: Callable) -> Callable:
        for t in types:
            KERNELS[t] = factory
        return factory

    return deco


def load_kernels() -> None:
    """Import the kernel modules (each registers its ops)."""
    from . import convolution, elementwise, matmul, pooling, reduction, shape  # noqa: F401
