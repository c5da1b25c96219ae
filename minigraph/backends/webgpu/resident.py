"""Variables that stay on the device between runs.

A run that assigns a variable does not read the value back: it copies it (on the device) into
a buffer of its own, which nothing writes again, and hands the executor a ``DeviceValue`` for
it. The variable store then holds a ``ResidentValues`` mapping, whose entries are read back
only when someone asks for them (``g.value_of``, a save, another backend's run). The next run
of a plan that reads the variable copies that buffer on the device instead of uploading, so a
training loop uploads only its feeds and reads back only its targets.

The promises stay as before: a failed run commits nothing, so the store keeps the previous
``DeviceValue``, whose buffer is untouched; a host value set later (``set_value``, a load, a
NumPy run) replaces the device one and is uploaded once. A ``DeviceValue``'s buffer goes back
to its runner's free list when the value is dropped (superseded and no snapshot holds it).

``RESIDENT["enabled"] = False`` reads every assigned value back after each run, as before (the
tests compare both); ``TRANSFERS`` counts uploads and read-backs.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Iterator, Mapping, Optional

import numpy as np

from .buffers import from_device, host_dtype
from .device import GPU_LOCK

RESIDENT = {"enabled": True}
TRANSFERS = {"uploads": 0, "upload_bytes": 0, "readbacks": 0, "readback_bytes": 0}


def count(kind: str, nbytes: int) -> None:
    """Count one transfer: ``kind`` "upload" or "readback"."""
    TRANSFERS[kind + "s"] += 1
    TRANSFERS[kind + "_bytes"] += int(nbytes)


class DeviceArray:
    """A value in a device buffer that is never written again, read back (once) when its host
    value is asked for: a resident variable's value (``DeviceValue``) or a ``mg.TensorData``'s
    (tensor_data.py)."""

    def __init__(self, ctx, buffer, nbytes: int, shape, dtype_name: str):
        self.ctx, self.buffer, self.nbytes = ctx, buffer, nbytes
        self.shape = tuple(shape)
        self.dtype_name = dtype_name
        self.dtype = host_dtype(dtype_name)
        self._host: Optional[np.ndarray] = None
        self._lock = threading.Lock()

    def host(self) -> np.ndarray:
        """The value on the host (read-only), read back the first time it is asked for."""
        with self._lock:
            host = self._host
            if host is None:
                host = self._host = self._read()
            return host

    def _read(self) -> np.ndarray:
        import wgpu

        dev = self.ctx.device
        with GPU_LOCK:
            staging = dev.create_buffer(size=self.nbytes, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            enc = dev.create_command_encoder()
            enc.copy_buffer_to_buffer(self.buffer, 0, staging, 0, self.nbytes)
            dev.queue.submit([enc.finish()])
            staging.map_sync(wgpu.MapMode.READ)
            try:
                data = staging.read_mapped(copy=True)
            finally:
                staging.unmap()
                staging.destroy()
        count("readback", self.nbytes)
        a = from_device(data, 0, self.shape, self.dtype_name)
        a.setflags(write=False)
        return a

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.host()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __repr__(self) -> str:
        where = "read back" if self._host is not None else "on the device"
        return f"<{type(self).__name__} {self.dtype_name}{list(self.shape)} {where}>"


class DeviceValue(DeviceArray):
    """A variable's assigned value in a device buffer that is never written again; its buffer goes
    back to the runner's free list (``free``) once nothing holds the value."""

    resident = True

    def __init__(self, ctx, buffer, nbytes: int, shape, dtype_name: str, free: list):
        super().__init__(ctx, buffer, nbytes, shape, dtype_name)
        weakref.finalize(self, free.append, buffer)  # the buffer is reused once nothing holds this value


class ResidentValues(Mapping):
    """The variable store's values with some of them on the device: ``values[op]`` is always a
    host array (read back on first use); ``raw(op)`` gives the ``DeviceValue`` itself."""

    def __init__(self, host: Mapping, device: Mapping):
        self._host = {op: v for op, v in host.items() if op not in device}
        self._device = dict(device)

    def __getitem__(self, op: Any) -> np.ndarray:
        v = self._device.get(op)
        return self._host[op] if v is None else v.host()

    def __iter__(self) -> Iterator:
        yield from self._host
        yield from self._device

    def __len__(self) -> int:
        return len(self._host) + len(self._device)

    def __contains__(self, op: object) -> bool:
        return op in self._host or op in self._device

    def raw(self, op: Any) -> Any:
        v = self._device.get(op)
        return self._host[op] if v is None else v


def raw_value(values: Mapping, op: Any) -> Any:
    """A variable's value as stored: an ndarray or a ``DeviceValue`` (nothing read back)."""
    return values.raw(op) if isinstance(values, ResidentValues) else values[op]


def with_device_values(values: Mapping, device: Mapping) -> ResidentValues:
    """``values`` with the entries of ``device`` (``DeviceValue``s) replacing theirs; nothing read back."""
    if isinstance(values, ResidentValues):
        return ResidentValues(values._host, {**values._device, **device})
    return ResidentValues(values, device)


class DeviceVariables:
    """A prepared plan's variables on its device: which value each variable's buffer holds, and
    the buffers of its runs' dropped ``DeviceValue``s, reused for the next assigned values.

    A variable's buffer counts as holding a value only once its upload, or its device copy, has
    been handed to the queue: a run interrupted while they are queued (Ctrl-C, a failed upload)
    calls ``forget``, so the next run uploads and copies them all again instead of computing
    with a value the interrupted run never put there."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._seen: dict = {}  # variable op -> the value (or a weak reference to the DeviceValue) its buffer holds
        self._free: dict = {}  # variable op -> buffers of dropped DeviceValues

    def bring_in(self, bindings, values: Mapping, upload: Callable, enc=None) -> None:
        """Put each variable's current value (``values``) in its buffer where it is not there yet:
        a ``DeviceValue`` of this device copied there (in ``enc``, which the caller submits, else
        in a command buffer submitted here), a host value through ``upload(ref, array, dtype)``.
        ``bindings``: ``[(variable op, Ref, dtype name)]``."""
        copies, now = enc, {}
        for op, ref, dtype in bindings:
            v = raw_value(values, op)
            seen = self._seen.get(op)
            if (seen() if isinstance(seen, weakref.ref) else seen) is not v:
                if isinstance(v, DeviceValue) and v.ctx is self.ctx:  # on this device: copied there
                    copies = copies or self.ctx.device.create_command_encoder()
                    copies.copy_buffer_to_buffer(v.buffer, 0, ref.buffer, 0, min(v.nbytes, ref.nbytes))
                    v = weakref.ref(v)  # not kept alive here: its buffer goes back to the free list once superseded
                else:
                    upload(ref, np.asarray(v), dtype)
                now[op] = v
        if copies is not None and enc is None:
            self.ctx.device.queue.submit([copies.finish()])
        self._seen.update(now)

    def forget(self) -> None:
        """What every variable's buffer holds is unknown (an interrupted run)."""
        self._seen.clear()

    def keep(self, enc, assigned, new_buffer: Callable) -> dict:
        """Each assigned value copied (in ``enc``) into a buffer of its own, reused from dropped
        values or ``new_buffer(nbytes, label)``: ``{variable op: DeviceValue}``. ``assigned``:
        ``[(variable op, Ref of its pending value)]``."""
        kept = {}
        for op, ref in assigned:
            free = self._free.setdefault(op, [])
            buf = free.pop() if free else new_buffer(ref.nbytes, f"{op.type} op {op.name!r}")
            enc.copy_buffer_to_buffer(ref.buffer, 0, buf, 0, ref.nbytes)
            kept[op] = DeviceValue(self.ctx, buf, ref.nbytes, tuple(op.attrs["shape"]),
                                   op.outputs[0].dtype.name, free)
        return kept
