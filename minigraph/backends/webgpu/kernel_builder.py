"""What a kernel factory sees when a plan is prepared (``KernelBuilder``), what the kernels of a
plan recorded (``Recorded``: pre-bound dispatches, buffers they need kept alive, per-run
callables), and the dtypes the kernels run.

A factory registered with ``@webgpu_kernel`` is called once per step at prepare time with the
step and a ``KernelBuilder``; it reads its buffers (``input``, ``output``, ``scratch``) and
records dispatches of WGSL sources (``dispatch``), each compiled through the device's pipeline
cache and bound then, so that a run only encodes them.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...errors import ResourceLimitError, UnsupportedDTypeError
from .buffers import Pool, Ref
from .wgsl import params_array

SUPPORTED_DTYPES = ("float32", "float16", "int32", "uint32", "bool")
# int8 and uint8, stored widened (wgsl.STORAGE), for the ops that declare them here (the
# quantization kernels) and for the steps that run no kernel (feeds, constants, views)
NARROW_INTS = ("int8", "uint8", "int4", "uint4")
NARROW_INT_OPS: set = set()
_NARROW_NOTE = " (int8, uint8, int4 and uint4 only as feeds, constants, views and the quantization ops' operands)"
# complex64, stored as (real, imaginary) f32 pairs, for the ops that declare it here (fft.py)
COMPLEX_OPS: set = set()
_COMPLEX_NOTE = (" (complex64 only as feeds, constants, views and the operands of the complex and Fourier-transform "
                 "ops; complex32 not at all)")


def op_label(op) -> str:
    """How messages name an op: ``"conv2d op 'c1'"`` (they add where it was built)."""
    return f"{op.type} op {op.name!r}"


class Dispatch(NamedTuple):
    """One pre-bound dispatch: pipeline, bind group, workgroup grid, and the op it computes."""

    pipeline: Any
    bind_group: Any
    grid: tuple
    op: Any


class Recorded:
    """What the kernels of one plan recorded at prepare time."""

    def __init__(self) -> None:
        self.dispatches: list = []  # Dispatch, in plan order
        self.keep: list = []  # uniform buffers etc. that must outlive the bind groups
        self.before_run: list = []  # callables run at the start of each run (KernelBuilder.before_each_run)


def encode(cp, dispatches) -> None:
    """Record ``dispatches`` in the compute pass ``cp``."""
    for pipe, bg, grid, _ in dispatches:
        cp.set_pipeline(pipe)
        cp.set_bind_group(0, bg)
        cp.dispatch_workgroups(*grid)


def check_dtypes(step, ctx, backend_name: str) -> None:
    """Refuse a step whose types the kernels do not run (float64, int64 ...; float16 without
    the adapter's 'shader-f16')."""
    for ty in tuple(step.in_types) + tuple(step.out_types) + tuple(t for _, _, t in step.program):
        name = ty.dtype.name
        if name in NARROW_INTS and (step.op.type in NARROW_INT_OPS or step.memory in ("feed", "constant",
                                                                                       "filled_constant", "view")):
            continue
        if name == "complex64" and (step.op.type in COMPLEX_OPS or step.memory in ("feed", "constant",
                                                                                  "filled_constant", "view")):
            continue
        if name not in SUPPORTED_DTYPES:
            raise UnsupportedDTypeError(
                f"{op_label(step.op)} (built at {step.op.location}): the {backend_name} backend has no kernel for dtype {name} "
                f"(it runs {', '.join(SUPPORTED_DTYPES)}; MPSGraph has no float64 either){_NARROW_NOTE if name in NARROW_INTS else _COMPLEX_NOTE if 'complex' in name else ''}; "
                "cast to a supported dtype with g.cast(...) or run with backend='numpy'")
        if name == "float16" and not ctx.has_f16:
            raise UnsupportedDTypeError(
                f"{op_label(step.op)} (built at {step.op.location}): float16 needs the WebGPU feature 'shader-f16', which the adapter "
                f"{ctx.description} does not have; cast to float32 or run with backend='numpy'")


class KernelBuilder:
    """What a kernel factory sees: its step's buffers, scratch space, and ``dispatch``."""

    def __init__(self, step, ctx, slot_ref: dict, pool: Pool, recorded: Recorded) -> None:
        self.step = step
        self.ctx = ctx
        self.label = op_label(step.op)
        self._slot_ref = slot_ref
        self._pool = pool
        self._recorded = recorded
        self.scratch_bufs: list = []
        self.runner: Any = None  # the Runner preparing the step (control-flow kernels nest runners)

    def input(self, i: int) -> Ref:
        return self._slot_ref[self.step.inputs[i]]

    def output(self, i: int = 0) -> Ref:
        return self._slot_ref[self.step.outputs[i]]

    def scratch(self, nbytes: int) -> Ref:
        """A device buffer for this step only (taken from the pool, returned after the step)."""
        nbytes = max(4, (int(nbytes) + 3) // 4 * 4)
        b = self._pool.take(nbytes, self.label)
        self.scratch_bufs.append(b)
        return Ref(b, nbytes)

    def keep_alive(self, buffer) -> None:
        """Keep a buffer of the kernel's own (bound in its dispatches) as long as the plan."""
        self._recorded.keep.append(buffer)

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
                self.keep_alive(buf)
            else:
                entries.append({"binding": i, "resource": {"buffer": v.buffer, "offset": 0, "size": v.nbytes}})
        bg = dev.create_bind_group(layout=self.ctx.layout(kinds)[0], entries=entries)
        for ax, g in zip("xyz", grid):
            if g > self.ctx.max_groups:
                raise ResourceLimitError(f"{self.label}: needs {g} workgroups along {ax}, more than the "
                                         f"adapter's limit {self.ctx.max_groups}")
        self._recorded.dispatches.append(Dispatch(pipe, bg, grid, self.step.op))

    def before_each_run(self, fn) -> None:
        """Call ``fn()`` at the start of every run, before the dispatches (per-run parameters such
        as the random ops' draw counter)."""
        self._recorded.before_run.append(fn)
