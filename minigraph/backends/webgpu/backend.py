"""The webgpu backend: plans become pre-bound dispatches of our WGSL kernels through wgpu.

At ``prepare`` time every slot of the plan gets a device buffer (intermediates come from a
pool and go back to it when the plan's ``Step.free`` says they are dead, so buffers are
reused), every kernel is compiled (through a per-device pipeline cache) and bound. A run then
only uploads the feeds (and variables whose value changed on the host), records the dispatches
in command buffers of ``SUBMIT_EVERY`` (each submitted once encoded, so the GPU works while the
host encodes), copies the targets into one staging buffer and maps once. Intermediates never leave the device, and neither do assigned variables:
they stay resident until asked for (``resident.py``).
"""
from __future__ import annotations

import sys
import threading
import weakref
from typing import NamedTuple

import numpy as np

from ... import recording
from ...errors import (UnsupportedDTypeError, BackendUnavailableError, ExecutionError, KernelMissingError,
                       MiniGraphError, ResourceLimitError)
from ...ir import OPS
from ...types import num_elements
from . import resident
from .epilogue import EPILOGUE_FACTORIES
from .device import GPU_LOCK, get_context
from .fused import fused_elementwise
from .program import FUSIBLE_OPS
from .registry import KERNELS
from .wgsl import HOST, params_array, render

SUPPORTED_DTYPES = ("float32", "float16", "int32", "uint32", "bool")


class WebGPUBackend:
    """Runs plans with minigraph's WGSL kernels on a wgpu adapter (MPSGraph runs on Metal).

    ``metal_only=True`` is the ``"metal"`` backend: the same kernels, but only on a Metal
    adapter (macOS); elsewhere it is unavailable and says why.
    """

    fusible_ops = FUSIBLE_OPS  # the compiler fuses runs of these into one step (webgpu/fused.py)

    @property
    def epilogue_ops(self) -> frozenset:
        """The ops whose kernels apply a fused elementwise tail before they store (epilogue.py)."""
        return frozenset(EPILOGUE_FACTORIES)

    def __init__(self, metal_only: bool = False):
        self.metal_only = metal_only
        self.name = "metal" if metal_only else "webgpu"
        self._status = None
        self._interrupted = False  # a probe was interrupted: a failure is no verdict
        self._ctx = None
        self._lock = threading.Lock()

    def available(self):
        """``(ok, reason)``, probed once. An interrupted probe (Ctrl-C while wgpu loads or the
        adapter is requested) is no verdict, and neither is a failure after one (the interruption
        may have left a module half imported): the next call probes again."""
        with self._lock:
            if self._status is not None:
                return self._status
            try:
                status = self._probe()
            except BaseException:  # KeyboardInterrupt, SystemExit: _probe turns every Exception into a reason
                self._interrupted = True
                raise
            if status[0] or not self._interrupted:
                self._status = status
            return status

    def _probe(self):
        if self.metal_only and sys.platform != "darwin":
            return False, (f"Metal needs macOS (this is {sys.platform}); the 'webgpu' backend runs the same "
                           "WGSL kernels through wgpu on Vulkan/D3D12 here")
        try:
            import wgpu  # noqa: F401
        except Exception as e:
            return False, (f"wgpu is not installed ({type(e).__name__}: {e}); "
                           "pip install wgpu (or, in a checkout, pip install -e '.[webgpu]')")
        try:
            self._ctx = get_context(self.metal_only)
        except Exception as e:
            msg = str(e)
            if self.metal_only and "Metal needs macOS" not in msg:
                msg = ("Metal needs macOS; the 'webgpu' backend runs the same kernels on Vulkan/D3D12/Metal "
                       f"through wgpu ({msg})")
            return False, msg
        return True, f"wgpu adapter {self._ctx.description}"

    @property
    def context(self):
        ok, why = self.available()
        if not ok:
            raise BackendUnavailableError(f"backend {self.name!r} is not available: {why}")
        return self._ctx

    def supported_ops(self) -> set:
        """Op types this backend has a kernel for (special ops included)."""
        return {d.type for d in OPS.values() if d.internal or d.kind == "view"} | set(KERNELS.ops())

    def prepare(self, plan):
        ctx = self.context
        missing = sorted({s.op.type for s in plan.steps if s.op.type not in self.supported_ops()})
        if missing:
            ops = [next(s.op for s in plan.steps if s.op.type == t) for t in missing]
            raise KernelMissingError(f"{self.name} backend has no kernel for op type(s) {missing}: "
                                     + ", ".join(f"{_label(o)} (built at {o.location})" for o in ops)
                                     + " (no silent fallback to numpy: run this graph with backend='numpy')")
        with GPU_LOCK:
            return _Runner(plan, ctx, self.name)


# ----------------------------------------------------------------------------- buffers
class _Buf:
    """One device buffer; ``refs`` counts the live slots that use it (aliases share it)."""

    __slots__ = ("buffer", "size", "pooled", "refs")

    def __init__(self, buffer, size, pooled):
        self.buffer, self.size, self.pooled, self.refs = buffer, size, pooled, 0


class Ref(NamedTuple):
    """A binding: a buffer and how many bytes of it the tensor uses."""

    buf: _Buf
    nbytes: int

    @property
    def buffer(self):
        return self.buf.buffer


def device_nbytes(shape, dtype_name: str) -> int:
    """Bytes a tensor takes on the device: bool widened to u32, padded to 4 bytes, at least 4."""
    item = 2 if dtype_name == "float16" else 4
    n = num_elements(shape) * item
    return max(4, (n + 3) // 4 * 4)


def _label(op) -> str:
    return f"{op.type} op {op.name!r}"


def _check_dtypes(step, ctx, backend_name):
    for ty in tuple(step.in_types) + tuple(step.out_types) + tuple(t for _, _, t in getattr(step, "program", ())):
        name = ty.dtype.name
        if name not in SUPPORTED_DTYPES:
            raise UnsupportedDTypeError(
                f"{_label(step.op)} (built at {step.op.location}): the {backend_name} backend has no kernel for dtype {name} "
                f"(it runs {', '.join(SUPPORTED_DTYPES)}; MPSGraph has no float64 either); cast to a supported "
                "dtype with g.cast(...) or run with backend='numpy'")
        if name == "float16" and not ctx.has_f16:
            raise UnsupportedDTypeError(
                f"{_label(step.op)} (built at {step.op.location}): float16 needs the WebGPU feature 'shader-f16', which the adapter "
                f"{ctx.description} does not have; cast to float32 or run with backend='numpy'")


class KernelBuilder:
    """What a kernel factory sees: its step's buffers, scratch space, and ``dispatch``."""

    def __init__(self, runner, step):
        self.step = step
        self.ctx = runner.ctx
        self.label = _label(step.op)
        self._runner = runner
        self.scratch_bufs: list = []

    def input(self, i: int) -> Ref:
        return self._runner.slot_ref[self.step.inputs[i]]

    def output(self, i: int = 0) -> Ref:
        return self._runner.slot_ref[self.step.outputs[i]]

    def scratch(self, nbytes: int) -> Ref:
        """A device buffer for this step only (taken from the pool, returned after the step)."""
        nbytes = max(4, (int(nbytes) + 3) // 4 * 4)
        b = self._runner.alloc(nbytes, self.label)
        self.scratch_bufs.append(b)
        return Ref(b, nbytes)

    def dispatch(self, source: str, bindings, groups) -> None:
        """Record one dispatch. ``bindings``: [(kind, Ref or u32 params array)], kind "ro"
        (read-only storage), "rw" (storage) or "u" (uniform, given the params array);
        ``groups``: a workgroup count (laid out as a 2D grid) or an (x, y, z) tuple."""
        grid = self.ctx.grid(groups) if isinstance(groups, (int, np.integer)) else tuple(groups)
        if isinstance(groups, (int, np.integer)) and groups == 0 or 0 in grid:
            return  # nothing to compute (empty tensors)
        kinds = tuple(k for k, _ in bindings)
        pipe = self.ctx.pipeline(source, kinds, self.label)
        dev = self.ctx.device
        import wgpu

        entries = []
        for i, (k, v) in enumerate(bindings):
            if k == "u":
                data = v if isinstance(v, np.ndarray) and v.dtype == np.uint32 else params_array(v)
                buf = dev.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.UNIFORM)
                entries.append({"binding": i, "resource": {"buffer": buf, "offset": 0, "size": data.nbytes}})
                self._runner.keep.append(buf)
            else:
                entries.append({"binding": i, "resource": {"buffer": v.buffer, "offset": 0, "size": v.nbytes}})
        bg = dev.create_bind_group(layout=self.ctx.layout(kinds)[0], entries=entries)
        for ax, g in zip("xyz", grid):
            if g > self.ctx.max_groups:
                raise ResourceLimitError(f"{self.label}: needs {g} workgroups along {ax}, more than the "
                                         f"adapter's limit {self.ctx.max_groups}")
        self._runner.dispatches.append((pipe, bg, grid, self.step.op))

    def before_each_run(self, fn) -> None:
        """Call ``fn()`` at the start of every run, before the dispatches (per-run parameters such
        as the random ops' draw counter)."""
        self._runner.before_run.append(fn)


SUBMIT_EVERY = 24  # dispatches per command buffer: encoding on the host overlaps the GPU's work


# ----------------------------------------------------------------------------- the runner
class _Runner:
    """A plan prepared for the device: one buffer binding per slot, every kernel bound.

    Each step is prepared by its OpDef: a memory op the executor handles itself
    (``opdef.internal``: ``_MEMORY_STEPS``), a view that aliases its input's buffer
    (``opdef.kind == "view"``), or a kernel from the backend's kernel table.
    """

    def __init__(self, plan, ctx, backend_name):
        import wgpu

        self.ctx = ctx
        self.name = backend_name
        self.plan = plan
        self._usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.slot_ref: dict = {}
        self.pool: list = []
        self.keep: list = []  # uniform buffers etc. that must outlive the bind groups
        self.before_run: list = []  # callables run at the start of each run (KernelBuilder.before_each_run)
        self.dispatches: list = []
        self.feeds: list = [None] * len(plan.feeds)  # (Ref, dtype name, shape) in plan.feeds order
        self.variables: list = []  # (variable op, Ref, dtype name)
        self._var_seen: dict = {}
        self._run_lock = threading.Lock()
        self.allocated_bytes = 0
        self.pool_hits = 0
        self._pending: dict = {}  # variable op -> Ref of its assigned value, in order of first assignment
        self._feed_index = {slot: i for i, (_, slot, _) in enumerate(plan.feeds)}
        self.resident = resident.RESIDENT["enabled"]  # assigned values stay on the device
        self._var_free: dict = {}  # variable op -> buffers of dropped DeviceValues, reused

        for st in plan.steps:
            _check_dtypes(st, ctx, backend_name)
        for st in plan.steps:
            self._prepare_step(st)
            for s in st.free:
                self._release(self.slot_ref[s].buf)
        self._plan_readback()

    # --- preparing the steps
    def _prepare_step(self, st) -> None:
        opdef = st.op.opdef
        if opdef.internal:
            self._memory_step(st)
        elif st.memory == "view":
            self._bind(st.outputs[0], self.slot_ref[st.inputs[0]])  # same bytes: alias the input's buffer
        else:
            self._kernel_step(st)

    def _memory_step(self, st) -> None:
        prepare = _MEMORY_STEPS.get(st.op.type)
        if prepare is None:
            raise ExecutionError(f"{_label(st.op)} (built at {st.op.location}): the {self.name} backend does "
                                 "not handle this executor-handled op")
        prepare(self, st)

    def _source(self, st) -> tuple:
        """(Ref, type) of a placeholder, constant or variable: a buffer of its own, never pooled."""
        ty = st.out_types[0]
        ref = self._dedicated(ty, _label(st.op))
        self._bind(st.outputs[0], ref)
        return ref, ty

    def _placeholder_step(self, st) -> None:
        ref, ty = self._source(st)
        self.feeds[self._feed_index[st.outputs[0]]] = (ref, ty.dtype.name, ty.shape)

    def _constant_step(self, st) -> None:
        ref, ty = self._source(st)
        value = np.asarray(st.op.attrs["value"])
        if value.size <= 1 << 20 or any(value.strides):
            self._upload(ref, value, ty.dtype.name)
            return
        # filled from a scalar (a view of one element, strides 0): written 1 Mi elements at a time,
        # never whole on the host
        step = 1 << 20
        chunk = to_device(np.full(step, value.flat[0], value.dtype), ty.dtype.name)
        itemsize = chunk.nbytes // step  # on the device (bool is 4 bytes)
        for start in range(0, value.size, step):
            n = min(step, value.size - start)
            data = chunk if n == step else to_device(np.full(n, value.flat[0], value.dtype), ty.dtype.name)
            self.ctx.device.queue.write_buffer(ref.buffer, start * itemsize, data)

    def _variable_step(self, st) -> None:
        ref, ty = self._source(st)
        self.variables.append((st.op, ref, ty.dtype.name))

    def _read_step(self, st) -> None:
        """The value the plan says the read sees (``Step.source``): an earlier assign's, or the variable's."""
        src = self.slot_ref[st.source if st.source is not None else st.inputs[0]]
        self._copy(st, src, self._alloc_slot(st, 0))

    def _assign_step(self, st) -> None:
        """Copy the value into the variable's pending buffer, read back and committed after the run."""
        var_op = st.op.inputs[0].operation
        if var_op not in self._pending:
            self._pending[var_op] = self._dedicated(st.in_types[1], _label(st.op))
        self._copy(st, self.slot_ref[st.inputs[1]], self._pending[var_op])

    def _kernel_step(self, st) -> None:
        for i in range(len(st.outputs)):
            self._alloc_slot(st, i)
        factory = fused_elementwise if getattr(st, "program", ()) else KERNELS.get(st.op.opdef)
        if factory is None:  # prepare() refused the plan already; a kernel unregistered since must not crash
            raise KernelMissingError(f"{_label(st.op)} (built at {st.op.location}): the {self.name} backend has "
                                     "no kernel for it")
        kb = KernelBuilder(self, st)
        try:
            factory(st, kb)
        except MiniGraphError:
            raise
        except Exception as e:  # a kernel factory bug must still name the op
            raise ExecutionError(f"{_label(st.op)} (built at {st.op.location}): the {self.name} backend "
                                 f"could not prepare its kernel: {type(e).__name__}: {e}") from e
        self.pool.extend(kb.scratch_bufs)

    def _plan_readback(self) -> None:
        """Targets, then assigned variables, packed into one staging buffer."""
        wanted = [(self.slot_ref[slot], self.plan.types[slot].shape, self.plan.types[slot].dtype.name)
                  for _tensor, slot in self.plan.targets]
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

    # --- allocation
    def _new(self, nbytes, label):
        if nbytes > self.ctx.max_binding or nbytes > self.ctx.max_buffer:
            raise ResourceLimitError(
                f"{label}: needs a {nbytes}-byte device buffer, more than the adapter's limits "
                f"(max-storage-buffer-binding-size {self.ctx.max_binding}, max-buffer-size {self.ctx.max_buffer})")
        try:
            buf = self.ctx.device.create_buffer(size=nbytes, usage=self._usage)
        except Exception as e:
            raise ResourceLimitError(f"{label}: could not allocate {nbytes} bytes on the device: {e}") from None
        self.allocated_bytes += nbytes
        return buf

    def _dedicated(self, ty, label) -> Ref:
        n = device_nbytes(ty.shape, ty.dtype.name)
        return Ref(_Buf(self._new(n, label), n, pooled=False), n)

    def alloc(self, nbytes, label) -> _Buf:
        """Best fit from the pool, else a new buffer."""
        best = None
        for b in self.pool:
            if b.size >= nbytes and (best is None or b.size < best.size):
                best = b
        if best is not None:
            self.pool.remove(best)
            self.pool_hits += 1
            return best
        return _Buf(self._new(nbytes, label), nbytes, pooled=True)

    def _alloc_slot(self, st, i) -> Ref:
        ty = st.out_types[i]
        n = device_nbytes(ty.shape, ty.dtype.name)
        ref = Ref(self.alloc(n, _label(st.op)), n)
        self._bind(st.outputs[i], ref)
        return ref

    def _bind(self, slot, ref):
        self.slot_ref[slot] = ref
        ref.buf.refs += 1

    def _release(self, buf):
        buf.refs -= 1
        if buf.refs == 0 and buf.pooled:
            self.pool.append(buf)

    def _copy(self, st, src: Ref, dst: Ref):
        """Copy the words of ``src`` into ``dst`` (read and assign)."""
        kb = KernelBuilder(self, st)
        words = min(src.nbytes, dst.nbytes) // 4
        kb.dispatch(render("copy_words"), [("u", [words]), ("ro", src), ("rw", dst)], -(-words // 256))

    def _upload(self, ref: Ref, arr: np.ndarray, dtype: str):
        data = to_device(arr, dtype)
        if data.nbytes:
            self.ctx.device.queue.write_buffer(ref.buffer, 0, data)
            resident.count("upload", data.nbytes)

    # --- running
    def __call__(self, feed_values, variables):
        with self._run_lock, GPU_LOCK:
            try:
                return self._run(feed_values, variables)
            except MiniGraphError:
                raise
            except Exception as e:
                raise ExecutionError(f"the {self.name} backend failed while running the plan on "
                                     f"{self.ctx.description}: {type(e).__name__}: {e}; no variable was changed") from e

    def _run(self, feed_values, variables):
        self._begin(feed_values, variables)
        dev = self.ctx.device
        enc = dev.create_command_encoder()
        for k in range(0, len(self.dispatches), SUBMIT_EVERY):
            if k:  # the GPU starts on what is encoded while the rest is encoded (queue order is kept)
                dev.queue.submit([enc.finish()])
                enc = dev.create_command_encoder()
            cp = enc.begin_compute_pass()
            for pipe, bg, grid, _ in self.dispatches[k:k + SUBMIT_EVERY]:
                cp.set_pipeline(pipe)
                cp.set_bind_group(0, bg)
                cp.dispatch_workgroups(*grid)
            cp.end()
        return self._finish(enc)

    def _begin(self, feed_values, variables) -> None:
        """Upload the feeds and the variables whose value changed; per-run parameters.

        A variable's buffer counts as holding a value (``_var_seen``) only once its upload, or its
        device copy, has been handed to the queue: a run interrupted here (Ctrl-C, a failed upload)
        forgets what every variable's buffer holds, so the next run uploads and copies them all again
        instead of computing with a value the interrupted run never put there."""
        self._settle_staging()
        try:
            for (ref, dtype, shape), arr in zip(self.feeds, feed_values):
                self._upload(ref, arr, dtype)
            copies, now = None, {}
            for op, ref, dtype in self.variables:
                v = resident.raw_value(variables, op)
                seen = self._var_seen.get(op)
                if (seen() if isinstance(seen, weakref.ref) else seen) is not v:
                    if isinstance(v, resident.DeviceValue) and v.ctx is self.ctx:  # on this device: copied there
                        copies = copies or self.ctx.device.create_command_encoder()
                        copies.copy_buffer_to_buffer(v.buffer, 0, ref.buffer, 0, min(v.nbytes, ref.nbytes))
                        v = weakref.ref(v)  # not kept alive here: its buffer goes back to the free list once superseded
                    else:
                        self._upload(ref, np.asarray(v), dtype)
                    now[op] = v
            if copies is not None:
                self.ctx.device.queue.submit([copies.finish()])
        except BaseException:
            self._var_seen.clear()
            raise
        self._var_seen.update(now)
        for fn in self.before_run:
            fn()

    def _finish(self, enc) -> tuple:
        """Copy the targets and assigned values out, submit ``enc``, map once: (results, assigned)."""
        import wgpu

        for ref, off, shape, dtype in self.reads:
            enc.copy_buffer_to_buffer(ref.buffer, 0, self.staging, off, ref.nbytes)
        kept = self._keep_assigned(enc) if self.resident else {}
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
        results = arrays[: len(self.plan.targets)]
        assigned = kept if self.resident else {op: arrays[i] for op, i in self.assigned}
        return results, assigned

    def _keep_assigned(self, enc) -> dict:
        """Each assigned value copied (in ``enc``) into a buffer of its own: {variable op: DeviceValue}."""
        kept = {}
        for op, ref in self.assigned:
            free = self._var_free.setdefault(op, [])
            buf = free.pop() if free else self._new(ref.nbytes, _label(op))
            enc.copy_buffer_to_buffer(ref.buffer, 0, buf, 0, ref.nbytes)
            kept[op] = resident.DeviceValue(self.ctx, buf, ref.nbytes, tuple(op.attrs["shape"]),
                                            op.outputs[0].dtype.name, free)
        return kept

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
        return ("gpu-timestamps", "host") if self.ctx.has_timestamps else ("host",)

    def profile(self, feed_values, variables, clock_name: str = "host"):
        """A run that times each op: ``(results, assigned, spans, lanes)`` (minigraph/profiling.py)."""
        with self._run_lock, GPU_LOCK:
            try:
                self._begin(feed_values, variables)
                if clock_name == "gpu-timestamps":
                    return self._profile_timestamps()
                return self._profile_host()
            except MiniGraphError:
                raise
            except Exception as e:
                raise ExecutionError(f"the {self.name} backend failed while profiling the plan on "
                                     f"{self.ctx.description}: {type(e).__name__}: {e}; no variable was changed") from e

    def _profile_host(self) -> tuple:
        """Each op's dispatches in a submission of their own, timed on the host up to the map of
        a 4-byte buffer copied after them (the queue runs in order, so the map waits for them)."""
        import wgpu

        dev = self.ctx.device
        lane, lane_name = recording.host_lane()
        spans = []
        src = dev.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
        dst = dev.create_buffer(size=4, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        for op, group in _by_op(self.dispatches):
            start = recording.clock()
            enc = dev.create_command_encoder()
            cp = enc.begin_compute_pass()
            for pipe, bg, grid, _ in group:
                cp.set_pipeline(pipe)
                cp.set_bind_group(0, bg)
                cp.dispatch_workgroups(*grid)
            cp.end()
            enc.copy_buffer_to_buffer(src, 0, dst, 0, 4)
            dev.queue.submit([enc.finish()])
            dst.map_sync(wgpu.MapMode.READ)
            dst.unmap()
            spans.append((op, start, recording.clock(), lane))
        results, assigned = self._finish(dev.create_command_encoder())
        return results, assigned, spans, {lane: lane_name}

    def _profile_timestamps(self) -> tuple:
        """Each dispatch in a compute pass of its own whose beginning and end the GPU timestamps;
        one submission, the timestamps resolved and read back with the results."""
        import wgpu

        dev = self.ctx.device
        n = 2 * len(self.dispatches)
        sets = []  # (query set, resolve buffer, queries)
        for first in range(0, n, _MAX_QUERIES):
            count = min(_MAX_QUERIES, n - first)
            sets.append((dev.create_query_set(type=wgpu.QueryType.timestamp, count=count),
                         dev.create_buffer(size=8 * count, usage=wgpu.BufferUsage.QUERY_RESOLVE
                                           | wgpu.BufferUsage.COPY_SRC), count))
        enc = dev.create_command_encoder()
        for i, (pipe, bg, grid, _) in enumerate(self.dispatches):
            qs, j = sets[2 * i // _MAX_QUERIES][0], 2 * i % _MAX_QUERIES
            cp = enc.begin_compute_pass(timestamp_writes={"query_set": qs, "beginning_of_pass_write_index": j,
                                                          "end_of_pass_write_index": j + 1})
            cp.set_pipeline(pipe)
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(*grid)
            cp.end()
        for qs, buf, count in sets:
            enc.resolve_query_set(qs, 0, count, buf, 0)
        results, assigned = self._finish(enc)
        ticks = np.concatenate([np.frombuffer(dev.queue.read_buffer(buf), np.uint64)[:count]
                                for _, buf, count in sets]) if sets else np.zeros(0, np.uint64)
        period = float(getattr(dev.queue, "get_timestamp_period", lambda: 1.0)())  # ns per tick
        ns = (ticks.astype(np.float64) * period).astype(np.int64)
        spans = [(op, int(ns[2 * i]), int(ns[2 * i + 1]), GPU_LANE)
                 for i, (_, _, _, op) in enumerate(self.dispatches)]
        return results, assigned, spans, {GPU_LANE: f"GPU queue ({self.ctx.description})"}


_MAX_QUERIES = 4096  # queries per query set (wgpu's limit)
GPU_LANE = 1  # the trace lane (tid) of GPU timestamps: OS thread ids of the host lanes are larger


def _by_op(dispatches) -> list:
    """``[(op, its consecutive dispatches)]`` in dispatch order."""
    groups: list = []
    for d in dispatches:
        if groups and groups[-1][0] is d[3]:
            groups[-1][1].append(d)
        else:
            groups.append((d[3], [d]))
    return groups


# The memory ops the executor handles (``OpDef.internal``), each prepared by its own method.
_MEMORY_STEPS = {
    "placeholder": _Runner._placeholder_step,
    "constant": _Runner._constant_step,
    "variable": _Runner._variable_step,
    "read": _Runner._read_step,
    "assign": _Runner._assign_step,
}


def _is_noop_cast(st) -> bool:
    """A cast to the dtype it already has: its output is its input's bytes, like a view."""
    return (st.op.type == "cast" and not getattr(st, "program", ())
            and st.in_types[0].dtype == st.out_types[0].dtype)


def to_device(arr: np.ndarray, dtype: str) -> np.ndarray:
    """The bytes of ``arr`` as the device stores them (bool as u32), padded to 4 bytes."""
    a = np.ascontiguousarray(arr, dtype=HOST[dtype]).reshape(-1)
    if a.nbytes % 4:
        a = np.concatenate([a, np.zeros(1, a.dtype)])
    return a


def from_device(data, offset: int, shape, dtype: str) -> np.ndarray:
    n = num_elements(shape)
    a = np.frombuffer(data, dtype=HOST[dtype], count=n, offset=offset).reshape(shape)
    if dtype == "bool":
        return a != 0
    return a.copy()
