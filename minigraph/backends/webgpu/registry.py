"""Kernel table of the webgpu backend.

A kernel is registered against its op as a *factory* ``factory(step, kb)`` with
``@webgpu_kernel("op_type")`` (a second kernel for the same op is refused), run once when a plan
is prepared: it reads the step's attributes and concrete types and records its dispatches
through ``kb`` (a ``KernelBuilder``): ``kb.input(i)``, ``kb.output()``, ``kb.scratch(nbytes)``,
``kb.dispatch(wgsl, bindings, groups)``. Nothing is compiled or bound at run time.

No invocation may loop more than ``loops.LOOP_MAX`` times (llvmpipe silently stops a shader's
loops after 65,535 iterations): a loop that grows with an input size is written with
``loops.long_loop`` or chunked and combined, and every registered op needs an entry in
``tests/test_webgpu_long_loops.py`` (a case past the bound, or why its work is bounded).

Ops of kind ``"view"`` (reshape and friends) need no kernel: the runner gives the output slot
the input's buffer, so they cost nothing.
"""
from __future__ import annotations

from ...ir import KernelTable

KERNELS = KernelTable("webgpu")
webgpu_kernel = KERNELS.register
