"""Kernel table of the NumPy backend.

A kernel is registered as a *factory*: ``factory(step) -> fn(*input_arrays) -> ndarray``.
The factory runs once per compiled step (it reads ``step.attrs``, ``step.in_types`` and
``step.out_types``, all concrete), so the function it returns does only the array work.
Kernels never write into their inputs.
"""
from __future__ import annotations

from typing import Callable

KERNELS: dict[str, Callable] = {}


def numpy_kernel(*types: str):
    def deco(factory: Callable) -> Callable:
        for t in types:
            KERNELS[t] = factory
        return factory

    return deco


def simple(fn: Callable) -> Callable:
    """Factory for kernels that need nothing from the step."""
    return lambda step: fn
