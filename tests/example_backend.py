"""A tiny third-party backend: the smallest complete example of minigraph's backend interface.

A backend is any object with

- ``name``: a string;
- ``available() -> (ok: bool, reason: str)``: cheap after the first call; the registry turns
  ``ok == False`` into ``BackendUnavailableError`` with ``reason``;
- ``prepare(plan) -> runner``: called once per compiled plan (``minigraph.compiler.plan.Plan``:
  ordered ``steps``, each a ``Step`` with ``op``, ``inputs``/``outputs`` slot ids, concrete
  ``in_types``/``out_types`` and ``free``, the slots dead after it; ``feeds``; ``targets``).
  It must raise ``KernelMissingError`` naming the op for anything it cannot run: minigraph
  never falls back to another backend silently.

The runner is called as ``runner(feed_values, variables)``: the feed arrays in ``plan.feeds``
order and ``{variable op: current value}``. It returns ``(results in plan.targets order,
{variable op: assigned value})``; the executor validates feeds, commits assignments after a
successful run and copies results, so a backend never mutates graph state itself.

Third-party packages make a backend discoverable with an entry point::

    [project.entry-points."minigraph.backends"]
    tiny = "example_backend:TinyBackend"

or at run time with ``mg.register_backend("tiny", TinyBackend)``.
"""
from __future__ import annotations

import numpy as np

from minigraph.compiler.plan import run_memory_action, start_env
from minigraph.errors import KernelMissingError
from minigraph.ops._util import normalize_axes


def _sum(step):
    axes = normalize_axes(step.attrs["axes"], len(step.in_types[0].shape))
    dt = step.out_types[0].dtype.np_dtype
    return lambda x: np.sum(x, axis=axes, keepdims=True, dtype=dt)


def _elementwise(fn):
    return lambda step: (lambda *xs: np.asarray(fn(*xs), dtype=step.out_types[0].dtype.np_dtype))


KERNELS = {
    "addition": _elementwise(np.add),
    "multiplication": _elementwise(np.multiply),
    "negative": _elementwise(np.negative),
    "reduction_sum": _sum,
}


class TinyBackend:
    """Runs four op types with NumPy, one Python closure per step (no variables)."""

    name = "tiny"

    def available(self):
        return True, "pure NumPy, four op types"

    def prepare(self, plan):
        steps, consts = [], []
        for st in plan.steps:
            t = st.op.type
            if t == "placeholder":
                continue
            if t == "constant":
                consts.append((st.outputs[0], st.op.attrs["value"]))
            elif t in KERNELS:
                steps.append((KERNELS[t](st), st.inputs, st.outputs[0]))
            else:
                raise KernelMissingError(f"{t} op {st.op.name!r}: the tiny backend has no kernel for it "
                                         f"(it runs {sorted(KERNELS)})")
        feed_slots = [slot for _, slot, _ in plan.feeds]
        target_slots = [slot for _, slot in plan.targets]

        def run(feed_values, variables):
            env = dict(zip(feed_slots, feed_values))
            env.update(consts)
            for fn, ins, out in steps:
                env[out] = fn(*[env[i] for i in ins])
            return [env[s] for s in target_slots], {}
        return run


class PlanFollowingBackend:
    """Runs whole networks (variables, reads, assigns, views, fused steps) with no memory-op code of
    its own: a ``kernel`` step calls a NumPy kernel, every other step does what the plan says
    through ``run_memory_action``, and ``step.free`` is dropped after each step."""

    name = "follower"

    def __init__(self):
        from minigraph.backends.numpy.fused import EPILOGUE_OPS, FUSIBLE_OPS

        from minigraph.backends.numpy.registry import KERNELS as NUMPY

        self.fusible_ops, self.epilogue_ops = FUSIBLE_OPS, EPILOGUE_OPS  # the same plans as numpy's
        self.memory_facts = NUMPY.memory_facts()  # its kernels are NumPy's, in place where declared

    def available(self):
        return True, "NumPy kernels, the plan's memory actions"

    def prepare(self, plan):
        from minigraph.backends.numpy.fused import fused_kernel
        from minigraph.backends.numpy.registry import KERNELS as NUMPY

        kernels = {}
        for i, st in enumerate(plan.steps):
            if st.memory != "kernel":
                continue
            factory = fused_kernel if st.program else NUMPY.get(st.op.type)
            if factory is None:
                raise KernelMissingError(f"{st.kernel} op {st.op.name!r}: the follower backend has no kernel for it")
            kernels[i] = factory(st)

        def run(feed_values, variables):
            env, assigned = start_env(plan, feed_values), {}
            with np.errstate(all="ignore"):
                for i, st in enumerate(plan.steps):
                    fn = kernels.get(i)
                    if fn is None:
                        run_memory_action(st, env, variables, assigned)
                    elif len(st.outputs) == 1:
                        env[st.outputs[0]] = fn(*[env[s] for s in st.inputs])
                    else:
                        for s, v in zip(st.outputs, fn(*[env[s] for s in st.inputs])):
                            env[s] = v
                    for s in st.free:
                        env[s] = None
            return [env[s] for _, s in plan.targets], assigned
        return run
