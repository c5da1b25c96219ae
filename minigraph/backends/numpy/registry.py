"""Kernel table of the NumPy backend.

A kernel is registered against its op as a *factory*: ``factory(step) -> fn(*input_arrays) ->
ndarray``, with ``@numpy_kernel("op_type")``; a second kernel for the same op is refused. The
factory runs once per compiled step (it reads ``step.attrs``, ``step.in_types`` and
``step.out_types``, all concrete), so the function it returns does only the array work.
Kernels never write into their inputs, except an elementwise kernel into the input the plan
hands it (``step.reuse``: a buffer that dies at that step and that nothing else can see).
"""
from __future__ import annotations

from ...ir import KernelTable

KERNELS = KernelTable("numpy")
numpy_kernel = KERNELS.register
