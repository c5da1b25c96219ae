"""Encoding a run's recorded work (``Stream``): pre-bound dispatches in compute passes of
``FIRST_SUBMIT``, then twice as many, up to ``SUBMIT_EVERY`` (each command buffer submitted once
encoded, so the GPU works while the host encodes), buffer copies between them, and the host actions of control flow (``HostAction``:
loops and branches, which may copy, submit and read a scalar back in the middle of a run)."""
from __future__ import annotations

import abc
from typing import Any

import numpy as np

from .buffers import Ref, from_device
from .kernel_builder import Dispatch, encode

# Dispatches per command buffer: the first holds FIRST_SUBMIT, each next one twice as many, up to
# SUBMIT_EVERY, so the GPU starts early and later submissions stay few (encoding on the host
# overlaps the GPU's work). Six-block step on the H200 machine: 2.94 ms with 24 per buffer, 2.71
# with 8 (the GPU idle until the first 24 were encoded), 2.89 with 4 (a submission per 4).
FIRST_SUBMIT = 4
SUBMIT_EVERY = 32


class HostAction(abc.ABC):
    """An entry of the recorded work that the host runs while encoding (``run(stream)``); ``op``
    names the op it belongs to."""

    op: Any = None

    @abc.abstractmethod
    def run(self, stream: "Stream") -> None:
        """Encode, submit or read back what the action needs, on ``stream``."""


class Stream:
    """The command encoder of one run, fed dispatches, copies and host actions in order."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.device = ctx.device
        self.enc = self.device.create_command_encoder()
        self._batch: list = []
        self._next = FIRST_SUBMIT  # dispatches of the next command buffer
        self._staging: dict = {}  # bytes -> a mappable buffer for scalar reads
        self.readbacks = 0  # scalars read back during the run (a loop's predicate, a count)

    def run(self, items) -> None:
        for it in items:
            if isinstance(it, Dispatch):
                self._batch.append(it)
                if len(self._batch) >= self._next:
                    self.submit()
                    self._next = min(2 * self._next, SUBMIT_EVERY)
            else:
                it.run(self)

    def _end_pass(self) -> None:
        if self._batch:
            cp = self.enc.begin_compute_pass()
            encode(cp, self._batch)
            cp.end()
            self._batch = []

    def copy(self, src: Ref, dst: Ref, nbytes: int, src_offset: int = 0) -> None:
        """Copy ``nbytes`` (a multiple of 4) between device buffers, in order with the dispatches."""
        if nbytes and not (src.buf is dst.buf and src_offset == 0):
            self._end_pass()
            self.enc.copy_buffer_to_buffer(src.buffer, src_offset, dst.buffer, 0, nbytes)

    def submit(self) -> None:
        """Submit what is encoded so far; encoding goes on in a new command buffer."""
        self._end_pass()
        self.device.queue.submit([self.enc.finish()])
        self.enc = self.device.create_command_encoder()

    def finish(self):
        """The encoder, every dispatch in it (the runner copies the targets out and submits it)."""
        self._end_pass()
        return self.enc

    def read(self, ref: Ref, shape: tuple, dtype: str) -> np.ndarray:
        """The value of a small buffer, read back now (everything encoded before runs first)."""
        import wgpu

        n = (ref.nbytes + 3) // 4 * 4
        staging = self._staging.get(n)
        if staging is None:
            staging = self._staging[n] = self.device.create_buffer(
                size=n, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        self._end_pass()
        self.enc.copy_buffer_to_buffer(ref.buffer, 0, staging, 0, n)
        self.submit()
        staging.map_sync(wgpu.MapMode.READ)
        try:
            data = staging.read_mapped(copy=True)
        finally:
            staging.unmap()
        self.readbacks += 1
        return from_device(data, 0, shape, dtype)

    def write(self, ref: Ref, data: np.ndarray) -> None:
        """Write host bytes into a buffer, after everything encoded so far."""
        self.submit()
        if data.nbytes:
            self.device.queue.write_buffer(ref.buffer, 0, data)
