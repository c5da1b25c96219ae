"""Runs a plan with NumPy: one pre-bound closure per step, slots in a flat list. A fused step
(``Step.program``) runs its ops' kernels block by block, after its anchor's (fused.py)."""
from __future__ import annotations

import numpy as np

from ... import recording
from ...compiler.plan import every_step, run_memory_action
from ...errors import ExecutionError, KernelMissingError, MiniGraphError
from ...types import round_complex32
from .fused import EPILOGUE_OPS, FUSIBLE_OPS, fused_kernel
from .registry import KERNELS


class NumpyBackend:
    name = "numpy"
    fusible_ops = FUSIBLE_OPS  # the elementwise ops a fused step may hold (the compiler fuses only these)
    epilogue_ops = EPILOGUE_OPS  # the ops whose result a fused elementwise tail may take in the same step

    @property
    def memory_facts(self):
        """What the kernels declared when they registered (in_place, fresh, reads_only): the
        compiler plans buffer reuse from these."""
        return KERNELS.memory_facts()

    def available(self):
        return True, "always available"

    def prepare(self, plan):
        every = [o for s in every_step(plan) for o in s.ops]
        missing = sorted({o.type for o in every if not o.opdef.internal and o.type not in KERNELS})
        if missing:
            ops = [next(o for o in every if o.type == t) for t in missing]
            raise KernelMissingError(f"numpy backend has no kernel for op type(s) {missing}: " + ", ".join(
                f"{o.type} op {o.name!r} (built at {o.location})" for o in ops))
        return _Runner(plan)


def _complex32_rounded(fn, out_types):
    """complex32 results are held in complex64 arrays: round their parts to float16 after the kernel."""
    which = [t.dtype.name == "complex32" for t in out_types]
    if not any(which):
        return fn
    if len(which) == 1:
        return lambda *a: round_complex32(fn(*a))
    return lambda *a: [round_complex32(v) if w else v for v, w in zip(fn(*a), which)]


def _bind_several(fn, ins, outs, free):
    """A closure for an op with several outputs: its kernel returns one array per output."""
    def step(env):
        for o, v in zip(outs, fn(*[env[i] for i in ins])):
            env[o] = v
        for f in free:
            env[f] = None
    return step


def _bind(fn, ins, out, free):
    """A closure for one step, specialised by arity so the hot loop does the least work."""
    if len(ins) == 1:
        (a,) = ins
        if not free:
            def step(env):
                env[out] = fn(env[a])
        else:
            def step(env):
                env[out] = fn(env[a])
                for f in free:
                    env[f] = None
    elif len(ins) == 2:
        a, b = ins
        if not free:
            def step(env):
                env[out] = fn(env[a], env[b])
        else:
            def step(env):
                env[out] = fn(env[a], env[b])
                for f in free:
                    env[f] = None
    else:
        def step(env):
            env[out] = fn(*[env[i] for i in ins])
            for f in free:
                env[f] = None
    return step


class _Runner:
    def __init__(self, plan):
        self.plan = plan
        self.num_slots = plan.num_slots
        self.feed_slots = [slot for _, slot, _ in plan.feeds] + list(plan.inputs)  # a sub-plan's: its inputs
        self.target_slots = [slot for _, slot in plan.targets]
        self.const_slots = []  # (slot, value, the op if filled from a scalar), loaded at the start of each run
        self.var_slots = []  # (slot, variable op)
        self.steps = []  # (closure, op)
        self.kernels: list = []  # the kernel name of each entry of steps
        for st in plan.steps:  # the plan's memory action says what each step is (compiler/buffers.py)
            m = st.memory
            if m == "feed":
                continue
            if m in ("constant", "filled_constant"):
                value = st.op.attrs["value"]
                self.const_slots.append((st.outputs[0], value, st.op if m == "filled_constant" else None))
                continue
            if m == "variable":
                self.var_slots.append((st.outputs[0], st.op))
                continue
            self.kernels.append(st.kernel)  # one entry of steps follows
            if m != "kernel":  # read, assign, view: as the plan says
                self.steps.append((_memory_step(st), st.op))
                continue
            t = st.op.type
            try:
                fn = fused_kernel(st) if st.program else KERNELS.get(t)(st)
            except MiniGraphError:
                raise
            except Exception as e:  # a kernel factory bug must still name the op
                raise ExecutionError(f"{st.kernel} op {st.op.name!r}: could not prepare its kernel: {e}") from e
            fn = _complex32_rounded(fn, st.out_types)
            if len(st.outputs) != 1:
                self.steps.append((_bind_several(fn, st.inputs, st.outputs, st.free), st.op))
            else:
                self.steps.append((_bind(fn, st.inputs, st.outputs[0], st.free), st.op))

    def _env(self, feed_values, variables) -> tuple:
        env: list = [None] * self.num_slots
        for s, v in zip(self.feed_slots, feed_values):
            env[s] = v
        for s, v, filled in self.const_slots:
            env[s] = v if filled is None else _fill(filled, v)  # for this run only: kernels see plain arrays
        for s, op in self.var_slots:
            env[s] = variables[op]
        assigned: dict = {}
        env.append(assigned)  # the assign closures find the overlay in the last slot
        return env, assigned

    def __call__(self, feed_values, variables):
        env, assigned = self._env(feed_values, variables)
        i = -1
        try:
            with np.errstate(all="ignore"):
                for i, (step, _) in enumerate(self.steps):
                    step(env)
        except MiniGraphError:
            raise
        except Exception as e:
            raise _failed(self.steps[i][1], e, self.kernels[i]) from e
        return [env[s] for s in self.target_slots], assigned

    profile_clocks = ("host",)

    def profile(self, feed_values, variables, clock_name: str = "host"):
        """A run that times each step on the host: ``(results, assigned, spans, lanes)`` (see
        minigraph/profiling.py). A run path of its own: ``__call__`` times nothing."""
        env, assigned = self._env(feed_values, variables)
        lane, lane_name = recording.host_lane()
        rec = recording.own_recorder() or recording.Recorder()  # tags the worker blocks of kernels with the op
        spans = []
        i = -1
        try:
            with np.errstate(all="ignore"):
                for i, (step, op) in enumerate(self.steps):
                    rec.op = op
                    start = recording.clock()
                    step(env)
                    spans.append((op, start, recording.clock(), lane))
        except MiniGraphError:
            raise
        except Exception as e:
            raise _failed(self.steps[i][1], e, self.kernels[i]) from e
        return [env[s] for s in self.target_slots], assigned, spans, {lane: lane_name}


def _failed(op, e: Exception, kernel: str = "") -> ExecutionError:
    what = f"{op.type} op {op.name!r}" + (f" (in the step {kernel})" if kernel and kernel != op.type else "")
    return ExecutionError(f"{what} (built at {op.location}) failed while "
                          f"running on numpy: {type(e).__name__}: {e}; no variable was changed")


def _fill(op, value):
    try:
        return np.array(value)
    except MemoryError:
        raise ExecutionError(f"constant op {op.name!r} (built at {op.location}): no memory to fill its "
                             f"{value.dtype}{list(value.shape)} on numpy; no variable was changed") from None


def _memory_step(st):
    """A read, assign or view step: ``run_memory_action``, the overlay of assigned values in the
    last slot of ``env``; then the step's dead slots are dropped."""
    free = st.free

    def step(env):
        run_memory_action(st, env, {}, env[-1])
        for f in free:
            env[f] = None
    return step
