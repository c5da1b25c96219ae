"""A plan prepared for the device (``Runner``), and its runs.

At prepare time every slot of the plan gets a device buffer (intermediates from the pool,
``buffers.py``, back to it when the plan's ``Step.free`` says they are dead), every kernel is
compiled and bound (``kernel_builder.py``). The plan says what each step is (``Step.memory``,
compiler/buffers.py) and the runner does just that: ``feed``, ``constant``, ``filled_constant``
and ``variable`` get buffers of their own, ``read`` aliases the buffer of the value ``Step.source``
names, ``assign`` makes the value's buffer the variable's pending one (held to the run's end),
``view`` aliases its input's buffer and ``kernel`` runs the backend's kernel.

A run uploads the feeds (a ``mg.TensorData`` held on this device is copied on the device
instead) and variables whose value changed on the host, the device copies in its first command
buffer; it records the dispatches in command buffers of growing size (``stream.py``; each
submitted once encoded, so the GPU works while the host encodes), copies the targets into one staging buffer and maps once.
Intermediates never leave the device, and neither do assigned variables: they stay resident
until asked for (``resident.py``). ``profile`` runs the same dispatches timed (``profilers.py``).
"""
from __future__ import annotations

import threading

import numpy as np

from ...errors import ExecutionError, KernelMissingError, MiniGraphError, PlanError
from ...types import is_static
from . import interrupts, resident
from .buffers import Pool, Ref, device_nbytes, from_device, to_device
from .device import GPU_LOCK
from .fused import fused_elementwise
from .kernel_builder import Dispatch, KernelBuilder, Recorded, check_dtypes, op_label
from .profilers import Timestamps, host_spans
from .registry import KERNELS
from .stream import Stream
from .uploads import Uploads
FILL_CHUNK = 1 << 20  # elements of a filled constant written at a time


class Runner:
    """A plan prepared for the device: one buffer binding per slot, every kernel bound."""

    def __init__(self, plan, ctx, backend_name: str) -> None:
        self.ctx = ctx
        self.name = backend_name
        self.plan = plan
        self.slot_ref: dict = {}
        self.buffers = Pool(ctx)
        self.recorded = Recorded()
        self.feeds: list = [None] * len(plan.feeds)  # (Ref, dtype name, shape) in plan.feeds order
        self.variables: list = []  # (variable op, Ref, dtype name)
        self._run_lock = threading.Lock()
        self._pending: dict = {}  # variable op -> Ref of its assigned value, in order of first assignment
        self._feed_index = {slot: i for i, (_, slot, _) in enumerate(plan.feeds)}
        self.resident = resident.RESIDENT["enabled"]  # assigned values stay on the device
        self.on_device = resident.DeviceVariables(ctx)  # what the variables' buffers hold, reused buffers
        self.constants: dict = {}  # slot -> the value of a constant step (control flow decides on them at prepare)
        self.host_values: dict = {}  # slot -> this run's value of a data-dependent-shape target (a host step's)

        for st in plan.steps:
            check_dtypes(st, ctx, backend_name)
        for st in plan.steps:
            prepare = _MEMORY_ACTIONS.get(st.memory)
            if prepare is None:
                raise PlanError(f"{op_label(st.op)} (built at {st.op.location}): memory action {st.memory!r} is "
                                f"none the {self.name} backend runs ({', '.join(_MEMORY_ACTIONS)})")
            prepare(self, st)
            for s in st.free:
                self.buffers.release(self.slot_ref[s].buf)
        self._plan_readback()
        self.uploads = Uploads(ctx, self.feeds)

    # what the kernels recorded, and how the pool went
    @property
    def dispatches(self) -> list:
        return self.recorded.dispatches

    @property
    def allocated_bytes(self) -> int:
        return self.buffers.allocated_bytes

    @property
    def pool_hits(self) -> int:
        return self.buffers.hits

    @property
    def upload_bytes(self) -> int:
        """The bytes of feeds the last run uploaded."""
        return self.uploads.bytes

    @property
    def upload_seconds(self) -> float:
        """The host's time for the last run's feed upload (uploads.py)."""
        return self.uploads.seconds

    # --- preparing the steps, one method per memory action
    def _source(self, st) -> tuple:
        """(Ref, type) of a feed, constant or variable: a buffer of its own, never pooled."""
        ty = st.out_types[0]
        ref = self.buffers.dedicated(ty, op_label(st.op))
        self._bind(st.outputs[0], ref)
        return ref, ty

    def _feed(self, st) -> None:
        ref, ty = self._source(st)
        self.feeds[self._feed_index[st.outputs[0]]] = (ref, ty.dtype.name, ty.shape)

    def _constant(self, st) -> None:
        ref, ty = self._source(st)
        self.constants[st.outputs[0]] = np.asarray(st.op.attrs["value"])
        self._upload(ref, np.asarray(st.op.attrs["value"]), ty.dtype.name)

    def _filled_constant(self, st) -> None:
        """A constant filled from one element (a view of it, strides 0): written ``FILL_CHUNK``
        elements at a time, never whole on the host."""
        ref, ty = self._source(st)
        value = st.op.attrs["value"]
        fill, dtype = value.flat[0], ty.dtype.name
        itemsize = {"float16": 2, "complex64": 8}.get(dtype, 4)  # on the device (bool is 4 bytes)
        chunk = None
        for start in range(0, value.size, FILL_CHUNK):
            n = min(FILL_CHUNK, value.size - start)
            if chunk is None or n != FILL_CHUNK:
                chunk = to_device(np.full(n, fill, value.dtype), dtype)
            self.ctx.device.queue.write_buffer(ref.buffer, start * itemsize, chunk)

    def _variable(self, st) -> None:
        ref, ty = self._source(st)
        self.variables.append((st.op, ref, ty.dtype.name))

    def _read(self, st) -> None:
        """The value the plan says the read sees (``Step.source``), an earlier assign's or the
        variable's, aliased: no kernel of this backend writes into an input, a variable's buffer
        is written only before the run's dispatches (``_begin``), and an assigned value's buffer
        is kept whole to the run's end (``_assign``)."""
        self._bind(st.outputs[0], self.slot_ref[st.source if st.source is not None else st.inputs[0]])

    def _assign(self, st) -> None:
        """The assigned value's buffer becomes the variable's pending value, read back (or kept
        on the device) and committed after the run: held, so that no later step of the plan gets
        it from the pool."""
        ref = self.slot_ref[st.inputs[1]]
        ref.buf.refs += 1
        self._pending[st.op.inputs[0].operation] = ref

    def _view(self, st) -> None:
        self._bind(st.outputs[0], self.slot_ref[st.inputs[0]])  # same bytes: alias the input's buffer

    def _kernel(self, st) -> None:
        for i in range(len(st.outputs)):
            self._alloc_slot(st, i)
        factory = fused_elementwise if st.program else KERNELS.get(st.op.opdef)
        if factory is None:  # prepare() refused the plan already; a kernel unregistered since must not crash
            raise KernelMissingError(f"{op_label(st.op)} (built at {st.op.location}): the {self.name} backend has "
                                     "no kernel for it")
        kb = self._builder(st)
        try:
            factory(st, kb)
        except MiniGraphError:
            raise
        except Exception as e:  # a kernel factory bug must still name the op
            raise ExecutionError(f"{op_label(st.op)} (built at {st.op.location}): the {self.name} backend "
                                 f"could not prepare its kernel: {type(e).__name__}: {e}") from e
        self.buffers.give_back(kb.scratch_bufs)

    def _builder(self, st) -> KernelBuilder:
        kb = KernelBuilder(st, self.ctx, self.slot_ref, self.buffers, self.recorded)
        kb.runner = self  # control-flow kernels prepare their blocks' sub-plans with it (control_flow.py)
        return kb

    def _alloc_slot(self, st, i) -> Ref:
        ty = st.out_types[i]
        # a data-dependent-shape result (a -1 dimension) is kept on the host (``host_values``): its
        # slot gets a 4-byte stand-in so that the plan's frees stay uniform
        n = device_nbytes(ty.shape, ty.dtype.name) if is_static(ty.shape) else 4
        ref = Ref(self.buffers.take(n, op_label(st.op)), n)
        self._bind(st.outputs[i], ref)
        return ref

    def _bind(self, slot, ref):
        self.slot_ref[slot] = ref
        ref.buf.refs += 1

    def _upload(self, ref: Ref, arr: np.ndarray, dtype: str):
        data = to_device(arr, dtype)
        if data.nbytes:
            self.ctx.device.queue.write_buffer(ref.buffer, 0, data)
            resident.count("upload", data.nbytes)

    def _plan_readback(self) -> None:
        """Targets, then assigned variables, packed into one staging buffer; a target whose size
        depends on its data (``host_targets``) is not on the device: its host step keeps it in
        ``host_values``."""
        self.host_targets = {i: slot for i, (_tensor, slot) in enumerate(self.plan.targets)
                             if not is_static(self.plan.types[slot].shape)}
        wanted = [(self.slot_ref[slot], self.plan.types[slot].shape, self.plan.types[slot].dtype.name)
                  for i, (_tensor, slot) in enumerate(self.plan.targets) if i not in self.host_targets]
        self.assigned: list = []  # (variable op, its index in reads), or its pending Ref if resident
        for var_op, ref in self._pending.items():
            if self.resident:
                self.assigned.append((var_op, ref))
                continue
            self.assigned.append((var_op, len(wanted)))
            wanted.append((ref, tuple(var_op.attrs["shape"]), var_op.outputs[0].dtype.name))
        self.reads: list = []  # (Ref, staging offset, shape, dtype name)
        off = 0
        for ref, shape, dtype in wanted:
            self.reads.append((ref, off, shape, dtype))
            off += (ref.nbytes + 255) // 256 * 256
        self._staging_size = off
        self.staging = self._new_staging() if off else None

    def _new_staging(self):
        import wgpu

        return self.ctx.device.create_buffer(size=self._staging_size,
                                             usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    def _settle_staging(self) -> None:
        """Leave the staging buffer unmapped. A run interrupted (Ctrl-C) while it was mapped, or
        while its map was pending, would otherwise make the next run copy into a mapped buffer,
        which wgpu-native answers by aborting the process. A pending map cannot be undone, and an
        unmap interrupted half-way leaves wgpu-py's idea of the state wrong, so such a buffer is
        replaced (the new one first, so an interruption here still leaves a usable one)."""
        st = self.staging
        if st is None or st.map_state == "unmapped":
            return
        if st.map_state == "mapped":
            try:
                st.unmap()
                return
            except Exception:  # wgpu-native had unmapped it already
                pass
        self.staging = self._new_staging()
        st.destroy()

    # --- running
    def __call__(self, feed_values, variables):
        with self._run_lock, GPU_LOCK:
            try:
                with interrupts.deferred():  # Ctrl-C lands after the run, not inside wgpu
                    return self._run(feed_values, variables)
            except KeyboardInterrupt:  # the run's assigns are not committed: re-upload next time
                self.on_device.forget()
                raise
            except MiniGraphError:
                self.on_device.forget()  # the variables' device copies may not have reached the queue
                raise
            except Exception as e:
                self.on_device.forget()
                raise ExecutionError(f"the {self.name} backend failed while running the plan on "
                                     f"{self.ctx.description}: {type(e).__name__}: {e}; no variable was changed") from e

    def _run(self, feed_values, variables):
        stream = Stream(self.ctx)
        self._begin(feed_values, variables, stream.enc)
        stream.run(self.recorded.dispatches)
        self.readbacks = stream.readbacks
        return self._finish(stream.finish())

    def _begin(self, feed_values, variables, enc=None) -> None:
        """Upload the feeds, bring in the variables whose value changed (``DeviceVariables``:
        an interruption forgets what their buffers hold); per-run parameters. The device copies
        (feeds held on this device, variables' values) go into ``enc``, the run's first command
        buffer, ahead of its dispatches (no submission of their own before the GPU starts);
        without it, into one submitted now."""
        self._settle_staging()
        try:
            host, held = self._feed_sources(feed_values)
            for n in self.uploads.write(host):
                resident.count("upload", n)
            own = enc is None
            if own:
                enc = self.ctx.device.create_command_encoder()
            for value, ref in held:  # after the uploads and before the dispatches, in queue order
                enc.copy_buffer_to_buffer(value.buffer, 0, ref.buffer, 0, ref.nbytes)
            self.on_device.bring_in(self.variables, variables, self._upload, enc)
            if own:
                self.ctx.device.queue.submit([enc.finish()])
        except BaseException:
            self.on_device.forget()
            raise
        for fn in self.recorded.before_run:
            fn()

    def _feed_sources(self, feed_values) -> tuple:
        """(the feeds to upload, None for each held on this device; [(its DeviceArray, feed Ref)]
        for those, copied on the device). A ``mg.TensorData`` of another device is read on the
        host and uploaded."""
        host, held = [], []
        for v, (ref, _dtype, _shape) in zip(feed_values, self.feeds):
            if isinstance(v, resident.DeviceArray):
                if v.ctx is self.ctx and v.nbytes == ref.nbytes:
                    held.append((v, ref))
                    v = None
                else:
                    v = v.host()
            host.append(v)
        return host, held

    def _finish(self, enc) -> tuple:
        """Copy the targets and assigned values out, submit ``enc``, map once: (results, assigned)."""
        import wgpu

        for ref, off, shape, dtype in self.reads:
            enc.copy_buffer_to_buffer(ref.buffer, 0, self.staging, off, ref.nbytes)
        kept = self.on_device.keep(enc, self.assigned, self.buffers.new) if self.resident else {}
        self.ctx.device.queue.submit([enc.finish()])
        arrays = []
        if self.staging is not None:
            try:
                self.staging.map_sync(wgpu.MapMode.READ)
                data = self.staging.read_mapped(copy=True)
            finally:
                self._settle_staging()
            resident.count("readback", self._staging_size)
            for ref, off, shape, dtype in self.reads:
                arrays.append(from_device(data, off, shape, dtype))
        device = iter(arrays)
        results = [self.host_values[self.host_targets[i]] if i in self.host_targets else next(device)
                   for i in range(len(self.plan.targets))]
        self.host_values.clear()
        assigned = kept if self.resident else {op: arrays[i] for op, i in self.assigned}
        return results, assigned

    def with_resident(self, values, device):
        """The store's values with these ``DeviceValue``s in place (the executor's commit)."""
        return resident.with_device_values(values, device)

    # --- profiling (a run path of its own: a normal run times nothing)
    @property
    def device(self) -> str:
        """The adapter in words (a profile names it)."""
        return self.ctx.description

    @property
    def profile_clocks(self) -> tuple:
        """The clocks ``profile`` can time with, best first."""
        if any(not isinstance(d, Dispatch) for d in self.recorded.dispatches):
            return ()  # a loop or branch decides on the host as it runs: no fixed dispatches to time
        return ("gpu-timestamps", "host") if self.ctx.has_timestamps else ("host",)

    def profile(self, feed_values, variables, clock_name: str = "host"):
        """A run that times each op: ``(results, assigned, spans, lanes)`` (minigraph/profiling.py)."""
        with self._run_lock, GPU_LOCK:
            try:
                self._begin(feed_values, variables)
                if clock_name == "gpu-timestamps":
                    stamps = Timestamps(self.ctx, self.recorded.dispatches)
                    results, assigned = self._finish(stamps.record())
                    spans, lanes = stamps.spans()
                else:
                    spans, lanes = host_spans(self.ctx, self.recorded.dispatches)
                    results, assigned = self._finish(self.ctx.device.create_command_encoder())
                return results, assigned, spans, lanes
            except MiniGraphError:
                raise
            except Exception as e:
                raise ExecutionError(f"the {self.name} backend failed while profiling the plan on "
                                     f"{self.ctx.description}: {type(e).__name__}: {e}; no variable was changed") from e


# What the runner does for each of the plan's memory actions (compiler/buffers.py MEMORY_ACTIONS).
_MEMORY_ACTIONS = {
    "feed": Runner._feed,
    "constant": Runner._constant,
    "filled_constant": Runner._filled_constant,
    "variable": Runner._variable,
    "read": Runner._read,
    "assign": Runner._assign,
    "view": Runner._view,
    "kernel": Runner._kernel,
}
