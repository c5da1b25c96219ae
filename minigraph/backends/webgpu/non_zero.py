"""non_zero_indices on the device (semantics: ops/non_zero.py): a host step. Its result's size is
known only once the input's values are, so no buffer is planned for it: the run reads the input
back (everything encoded before it runs first), computes the indices with the NumPy kernel and
keeps them on the host for the readback of the targets (``Runner.host_values``; the op's result
may only be a target)."""
from __future__ import annotations

import numpy as np

from ...types import num_elements
from ..numpy.non_zero import non_zero_indices
from .registry import webgpu_kernel
from .stream import HostAction, Stream


class _NonZero(HostAction):
    def __init__(self, st, kb) -> None:
        self.op = st.op
        self.input, self.type = kb.input(0), st.in_types[0]
        self.slot, self.values = st.outputs[0], kb.runner.host_values

    def run(self, stream: Stream) -> None:
        shape = tuple(self.type.shape)
        if num_elements(shape):
            x = stream.read(self.input, shape, self.type.dtype.name)
        else:  # nothing to read back
            x = np.zeros(shape, self.type.dtype.np_dtype)
        self.values[self.slot] = non_zero_indices(x)


@webgpu_kernel("non_zero_indices")
def _non_zero(st, kb) -> None:
    kb.runner.recorded.dispatches.append(_NonZero(st, kb))
