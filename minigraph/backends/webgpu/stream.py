"""Encoding a run's recorded work (``Stream``): pre-bound dispatches in compute passes of up to
``SUBMIT_EVERY`` (each command buffer submitted once encoded, so the GPU works while the host
encodes), buffer copies between them, and the host actions of control flow (``HostAction``:
loops and branches, which may copy, submit and read a scalar back in the middle of a run)."""
from __future__ import annotations

import abc
from typing import Any

import numpy as np

from .buffers import Ref, from_device
from .kernel_builder import Dispatch, encode

SUBMIT_EVERY = 24  # dispatches per command buffer: encoding on the host overlaps the GPU's work


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
        self._staging: dict = {}  # bytes -> a mappable buffer for scalar reads
        self.readbacks = 0  # scalars read back during the run (a loop's predicate, a count)

    def run(self, items) -> None:
        for it in items:
            if isinstance(it, Dispatch):
                self._batch.append(it)
                if len(self._batch) >= SUBMIT_EVERY:
                    self.submit()
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
