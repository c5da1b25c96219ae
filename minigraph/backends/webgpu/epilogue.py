"""Epilogues on the GPU: a kernel that computes an anchor op (a convolution, matmul or
normalization) applies the elementwise tail of its ``fused_epilogue`` step to each result before
it stores it, so the anchor's result never goes to memory (compiler/passes.py, epilogue_fusion).

A kernel module registers the anchor op types its kernels can do this for with
``@epilogue_kernel("op_type")``: ``factory(step, kb, epi)`` records the step's dispatches like the
op's ordinary kernel factory, with ``epi`` (an ``Epilogue``) giving the extra bindings, their
WGSL declarations and the expression to store. ``EPILOGUE_FACTORIES`` is what the backend offers
the compiler as its ``epilogue_ops``.
"""
from __future__ import annotations

from typing import Callable, Dict

EPILOGUE_FACTORIES: Dict[str, Callable] = {}


def epilogue_kernel(*op_types: str) -> Callable:
    """Register ``factory(step, kb, epi)`` as the epilogue-applying kernel of ``op_types``."""
    def register(factory: Callable) -> Callable:
        for t in op_types:
            EPILOGUE_FACTORIES[t] = factory
        return factory
    return register
