"""WebGPU kernels of the control-flow ops and ``call``: host actions in the recorded work.

Each block's sub-plan is prepared once, inside its step, as a ``Nested`` runner: its dispatches
bound to buffers the step holds (the block's arguments) and to the buffers of the captures. A run
encodes them as the host action decides (stream.py):

- ``for_loop``: the body ``N`` times; the index of each iteration is copied on the device from a
  buffer of all indices (uploaded once when the count or bounds are constants; else the count is
  read back once per run); the loop-carried values are copied between iterations on the device;
- ``while_loop``: the before block, then its predicate read back (once per iteration), then the
  after block and the copies of the carried values;
- ``if_then_else``: the branch a constant predicate picks at prepare time, else the predicate is
  read back once and only the taken branch is encoded;
- ``call``: the inputs read back, the callee executable run, its results written back.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...errors import ExecutionError
from ...types import ShapedType, int32
from .buffers import Ref, _Buf, device_nbytes, to_device
from .kernel_builder import Recorded, check_dtypes
from .registry import webgpu_kernel
from .runner import _MEMORY_ACTIONS, Runner
from .stream import HostAction, Stream


class Nested(Runner):
    """A block's sub-plan prepared inside its control-flow step: the parent's device, pool and
    per-run callbacks; its inputs (arguments, then captures) bound to ``input_refs``; its work in
    ``items`` and its results' buffers in ``results``."""

    def __init__(self, sp, parent: Runner, input_refs: list, known: Optional[dict] = None) -> None:  # noqa: D107
        self.ctx, self.name, self.plan = parent.ctx, parent.name, sp.plan
        self.slot_ref: dict = {}
        self.buffers = parent.buffers
        self.recorded = Recorded()
        self.recorded.keep = parent.recorded.keep
        self.recorded.before_run = parent.recorded.before_run
        self.constants: dict = dict(known or {})  # inputs the parent knows the value of (a captured constant)
        self._pending: dict = {}
        for s, ref in zip(sp.plan.inputs, input_refs):
            self._bind(s, ref)
        for st in sp.plan.steps:
            check_dtypes(st, self.ctx, self.name)
            _MEMORY_ACTIONS[st.memory](self, st)
            for s in st.free:
                self.buffers.release(self.slot_ref[s].buf)
        self.items = self.recorded.dispatches
        self.results = [self.slot_ref[s] for _, s in sp.plan.targets]

    def release(self) -> None:
        """Give back the bindings of the inputs and results (the step is prepared)."""
        for s in set(self.plan.inputs) | {s for _, s in self.plan.targets}:
            self.buffers.release(self.slot_ref[s].buf)


class _Held:
    """Buffers a control-flow step holds while it is prepared (loop-carried values, temporaries)."""

    def __init__(self, pool) -> None:
        self.pool = pool
        self.bufs: list = []

    def take(self, ty: ShapedType, label: str) -> Ref:
        n = device_nbytes(ty.shape, ty.dtype.name)
        b = self.pool.take(n, label)
        b.refs += 1
        self.bufs.append(b)
        return Ref(b, n)

    def release(self) -> None:
        for b in self.bufs:
            self.pool.release(b)


def _carry(results: list, targets: list, held: _Held, label: str) -> list:
    """``[(src, dst)]`` copies that put ``results[j]`` into ``targets[j]`` for every j, through
    temporaries where a result is another target's buffer (a body that swaps its arguments)."""
    tbufs = {id(t.buf) for t in targets}
    staged: list = []
    direct: list = []
    for r, t in zip(results, targets):
        if r.buf is t.buf:
            continue  # carried unchanged
        (staged if id(r.buf) in tbufs else direct).append((r, t))
    temps = [held.take(ShapedType((t.nbytes // 4,), int32), label) for _, t in staged]
    return ([(r, tmp) for (r, _), tmp in zip(staged, temps)] + direct
            + [(tmp, t) for (_, t), tmp in zip(staged, temps)])


def _copy_all(stream: Stream, pairs: list) -> None:
    for src, dst in pairs:
        stream.copy(src, dst, min(src.nbytes, dst.nbytes))


def _known(runner: Runner, slot: int) -> Optional[np.ndarray]:
    """The value of a slot that a constant step of the plan fills, or None."""
    return runner.constants.get(slot)


def _inputs(kb, sp) -> list:
    return [kb.input(p) for p in sp.capture_positions]


def _nested(kb, sp, args: list) -> Nested:
    """The block's runner, its inputs ``args`` then the captures; a captured constant stays known
    (a loop inside the block whose count is an outer constant reads nothing back)."""
    runner, n = kb.runner, len(args)
    known = {sp.plan.inputs[n + j]: runner.constants[kb.step.inputs[p]]
             for j, p in enumerate(sp.capture_positions) if kb.step.inputs[p] in runner.constants}
    return Nested(sp, runner, [*args, *_inputs(kb, sp)], known)


# ------------------------------------------------------------------------------ for
class _ForLoop(HostAction):
    def __init__(self, st, kb, body: Nested, index: Ref, init: list, carry: list, out: list, indices) -> None:
        self.op, self.st, self.ctx = st.op, st, kb.ctx
        self.body, self.index, self.init, self.carry, self.out = body, index, init, carry, out
        self.bounds = [kb.input(i) for i in range(1 if st.op.attrs["form"] == "count" else 3)]
        self.indices = indices
        self.index_buf = self._buffer(kb, indices) if indices is not None else None
        self.kb = kb

    def _buffer(self, kb, indices: np.ndarray) -> Ref:
        data = to_device(indices if indices.size else np.zeros(1, np.int32), "int32")
        buf = kb.ctx.device.create_buffer_with_data(data=data, usage=_usage())
        kb.keep_alive(buf)
        return Ref(_Buf(buf, data.nbytes, pooled=False), data.nbytes)

    def _run_indices(self, stream: Stream) -> tuple:
        vals = [int(stream.read(r, (), "int32")) for r in self.bounds]
        lo, hi, step = (0, vals[0], 1) if len(vals) == 1 else vals
        if step <= 0:
            raise ExecutionError(f"for_loop op {self.op.name!r} (built at {self.op.location}): step is {step}; the "
                                 "loop runs from lower_bound up to upper_bound by a positive step")
        idx = np.arange(lo, hi, step, dtype=np.int32)
        data = to_device(idx if idx.size else np.zeros(1, np.int32), "int32")
        buf = stream.device.create_buffer_with_data(data=data, usage=_usage())
        return idx, Ref(_Buf(buf, data.nbytes, pooled=False), data.nbytes)

    def run(self, stream: Stream) -> None:
        idx, buf = (self.indices, self.index_buf) if self.indices is not None else self._run_indices(stream)
        _copy_all(stream, self.init)
        for k in range(len(idx)):
            stream.copy(buf, self.index, 4, src_offset=4 * k)
            stream.run(self.body.items)
            _copy_all(stream, self.carry)
        _copy_all(stream, self.out)


def _usage() -> Any:
    import wgpu

    return wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def _constant_indices(st, runner: Runner) -> Optional[np.ndarray]:
    nb = 1 if st.op.attrs["form"] == "count" else 3
    known = [_known(runner, st.inputs[i]) for i in range(nb)]
    vals = [int(v) for v in known if v is not None]
    if len(vals) != nb:
        return None
    lo, hi, step = (0, vals[0], 1) if nb == 1 else vals
    if step <= 0:
        return None  # the run reports it
    return np.arange(lo, hi, step, dtype=np.int32)


@webgpu_kernel("for_loop")
def _for_loop(st, kb) -> None:
    runner, held = kb.runner, _Held(kb._pool)
    nb = 1 if st.op.attrs["form"] == "count" else 3
    na = int(st.op.attrs["num_arguments"])
    index = held.take(ShapedType((), int32), kb.label)
    args = [held.take(ty, kb.label) for ty in st.in_types[nb:nb + na]]
    (sp,) = st.blocks
    body = _nested(kb, sp, [index, *args])
    carry = _carry(body.results, args, held, kb.label)
    init = [(kb.input(nb + j), a) for j, a in enumerate(args)]
    out = [(a, kb.output(j)) for j, a in enumerate(args)]
    runner.recorded.dispatches.append(_ForLoop(st, kb, body, index, init, carry, out, _constant_indices(st, runner)))
    body.release()
    held.release()


# ------------------------------------------------------------------------------ while
class _WhileLoop(HostAction):
    def __init__(self, st, before: Nested, after: Nested, init: list, carry: list, out: list, pred_dtype: str) -> None:
        self.op = st.op
        self.before, self.after, self.init, self.carry, self.out = before, after, init, carry, out
        self.pred_dtype = pred_dtype

    def run(self, stream: Stream) -> None:
        _copy_all(stream, self.init)
        while True:
            stream.run(self.before.items)
            if not bool(stream.read(self.before.results[0], (), self.pred_dtype)):
                break
            stream.run(self.after.items)
            _copy_all(stream, self.carry)
        _copy_all(stream, self.out)


@webgpu_kernel("while_loop")
def _while_loop(st, kb) -> None:
    runner, held = kb.runner, _Held(kb._pool)
    n = int(st.op.attrs["num_inputs"])
    state = [held.take(ty, kb.label) for ty in st.in_types[:n]]
    sp_before, sp_after = st.blocks
    before = _nested(kb, sp_before, state)
    after = _nested(kb, sp_after, before.results[1:])
    carry = _carry(after.results, state, held, kb.label)
    init = [(kb.input(j), s) for j, s in enumerate(state)]
    out = [(r, kb.output(j)) for j, r in enumerate(before.results[1:])]
    pred = sp_before.plan.types[sp_before.plan.targets[0][1]].dtype.name
    runner.recorded.dispatches.append(_WhileLoop(st, before, after, init, carry, out, pred))
    before.release()
    after.release()
    held.release()


# ------------------------------------------------------------------------------ if
class _IfThenElse(HostAction):
    def __init__(self, st, kb, branches: list, fixed: Optional[int]) -> None:
        self.op = st.op
        self.branches, self.fixed = branches, fixed
        self.pred, self.pred_dtype = kb.input(0), st.in_types[0].dtype.name
        self.outs = [kb.output(j) for j in range(len(st.outputs))]

    def run(self, stream: Stream) -> None:
        taken = self.fixed
        if taken is None:
            taken = 0 if bool(stream.read(self.pred, (), self.pred_dtype)) else 1
        if taken < len(self.branches):
            branch = self.branches[taken]
            stream.run(branch.items)
            _copy_all(stream, list(zip(branch.results, self.outs)))


@webgpu_kernel("if_then_else")
def _if_then_else(st, kb) -> None:
    runner = kb.runner
    branches = [_nested(kb, sp, []) for sp in st.blocks]
    known = _known(runner, st.inputs[0])
    fixed = None if known is None else (0 if bool(known) else 1)
    runner.recorded.dispatches.append(_IfThenElse(st, kb, branches, fixed))
    for b in branches:
        b.release()


# ------------------------------------------------------------------------------ call
class _Call(HostAction):
    def __init__(self, st, kb) -> None:
        self.op = st.op
        (self.exe,) = st.blocks
        self.ins = [(kb.input(i), ty) for i, ty in enumerate(st.in_types)]
        self.outs = [(kb.output(j), ty) for j, ty in enumerate(st.out_types)]

    def run(self, stream: Stream) -> None:
        arrays = [stream.read(ref, tuple(ty.shape), ty.dtype.name) for ref, ty in self.ins]
        results = self.exe.run(arrays)
        for (ref, ty), r in zip(self.outs, results):
            stream.write(ref, to_device(np.asarray(r), ty.dtype.name))


@webgpu_kernel("call")
def _call(st, kb) -> None:
    kb.runner.recorded.dispatches.append(_Call(st, kb))
