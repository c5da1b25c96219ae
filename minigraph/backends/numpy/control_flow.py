"""NumPy kernels of the control-flow ops and ``call``: each block's sub-plan (``Step.blocks``)
runs with a nested runner of its own, the loop itself in Python."""
from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from .backend import _Runner
from .registry import numpy_kernel


def _sub(sp):
    """``run(args, op_inputs) -> results`` of one sub-plan: its arguments, then the captures the
    control-flow op holds among its inputs."""
    runner = _Runner(sp.plan)
    pos = sp.capture_positions

    def run(args, ins):
        results, _ = runner(list(args) + [ins[p] for p in pos], {})
        return results
    return run


def _out(values, n: int):
    """One array for a single-output step, a tuple otherwise (what the bound closures expect)."""
    return values[0] if n == 1 else tuple(values)


@numpy_kernel("if_then_else")
def _if_then_else(st):
    subs = [_sub(sp) for sp in st.blocks]
    n = len(st.outputs)

    def fn(*ins):
        if bool(ins[0]):
            return _out(subs[0]([], ins), n)
        return _out(subs[1]([], ins) if len(subs) > 1 else [], n)
    return fn


@numpy_kernel("while_loop")
def _while_loop(st):
    before, after = (_sub(sp) for sp in st.blocks)
    n = int(st.op.attrs["num_inputs"])
    nout = len(st.outputs)

    def fn(*ins):
        values = list(ins[:n])
        while True:
            res = before(values, ins)
            if not bool(res[0]):
                return _out(res[1:], nout)
            values = after(res[1:], ins)
    return fn


def loop_range(st, ins) -> range:
    """The indices of a for_loop step's iterations, from its count or bounds."""
    if st.op.attrs["form"] == "count":
        return range(int(ins[0]))
    lo, hi, step = (int(v) for v in ins[:3])
    if step <= 0:
        raise ExecutionError(f"for_loop op {st.op.name!r} (built at {st.op.location}): step is {step}; the loop "
                             "runs from lower_bound up to upper_bound by a positive step")
    return range(lo, hi, step)


@numpy_kernel("for_loop")
def _for_loop(st):
    (body,) = (_sub(sp) for sp in st.blocks)
    nb = 1 if st.op.attrs["form"] == "count" else 3
    na = int(st.op.attrs["num_arguments"])

    def fn(*ins):
        values = list(ins[nb:nb + na])
        for i in loop_range(st, ins):
            values = body([np.asarray(i, dtype=np.int32), *values], ins)
        return _out(values, na)
    return fn


@numpy_kernel("call")
def _call(st):
    (exe,) = st.blocks
    n = len(st.outputs)

    def fn(*ins):
        return _out(exe.run(list(ins)), n)
    return fn
