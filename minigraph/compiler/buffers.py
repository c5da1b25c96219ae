"""Buffer planning, the last pass: each step's memory action, when each slot dies and which
steps may write into an input.

``plan_buffers`` sets, on the final list of steps, ``Step.memory`` (what a backend does for the
step, one of ``MEMORY_ACTIONS``), ``Step.source`` (for a ``read``: the slot of the value an earlier
assign of the same run wrote, or None for the variable's value), ``Step.free`` (the slots whose
last use a step is) and ``Step.reuse`` (the input whose buffer an in-place step may take).
"""
from __future__ import annotations

from ..ir import MemoryFacts
from .passes import FUSED, FUSED_EPILOGUE

# what a backend does for a step: nothing is left for it to decide
MEMORY_ACTIONS = ("feed", "constant", "filled_constant", "variable", "read", "assign", "view", "kernel")


def plan_buffers(steps: list, keep: set, facts: MemoryFacts = MemoryFacts()) -> None:
    """The last pass: each step's ``memory`` and ``source`` (``_plan_memory``), ``free``
    (``_plan_buffers``) and ``reuse`` (``_plan_reuse``), for ordinary and fused steps alike; the
    targets (``keep``) are never freed."""
    _plan_memory(steps)
    _plan_buffers(steps, keep)
    _plan_reuse(steps, facts)


def memory_action(st) -> str:
    """The memory action of one step, from its op alone (a read's source is ``_plan_memory``'s)."""
    t = st.op.type
    if t == "placeholder":
        return "feed"
    if t == "constant":
        value = st.op.attrs["value"]  # a filled constant is a view of one element (strides 0)
        return "filled_constant" if value.size > 1 and not any(value.strides) else "constant"
    if t in ("variable", "read", "assign"):
        return t
    if not st.program and (st.op.opdef.kind == "view" or _is_noop_cast(st)):
        return "view"
    return "kernel"


def _is_noop_cast(st) -> bool:
    """A cast to the dtype it already has: its output is its input's bytes, like a view."""
    return (st.op.type == "cast" and len(st.inputs) == 1 and len(st.outputs) == 1
            and st.in_types[0].dtype == st.out_types[0].dtype and st.in_types[0].shape == st.out_types[0].shape)


def _plan_memory(steps: list) -> None:
    """Set ``memory`` on every step and ``source`` on reads: in plan order, a read sees the value
    of the latest earlier assign of its variable in this run (control dependencies order them)."""
    latest: dict = {}  # variable op -> slot of the value assigned last so far
    for st in steps:
        st.memory = memory_action(st)
        if st.memory == "read":
            st.source = latest.get(st.op.inputs[0].operation)
        elif st.memory == "assign":
            latest[st.op.inputs[0].operation] = st.inputs[1]


def _plan_buffers(steps: list, keep: set) -> None:
    """Set each step's ``free``: the slots whose last use it is (a read's ``source`` counts as a
    use), never those of ``keep``."""
    last: dict[int, int] = {}
    for i, st in enumerate(steps):
        for s in st.outputs:
            last[s] = i
        for s in st.inputs:
            last[s] = i
        if getattr(st, "source", None) is not None:
            last[st.source] = i
    frees: dict[int, list] = {}
    for s, i in last.items():
        if s not in keep:
            frees.setdefault(i, []).append(s)
    for i, st in enumerate(steps):
        st.free = tuple(sorted(frees.get(i, ())))


_FUSED_TYPES = frozenset({FUSED, FUSED_EPILOGUE})  # a fused step's kernel makes a new buffer, reads only


def _plan_reuse(steps: list, facts: MemoryFacts) -> None:
    """Set ``reuse`` on steps whose kernels declared ``in_place`` (``facts``, the backend's) where
    an input buffer may take the result: one of the result's shape and dtype that dies at the step
    (``free``: never a target), made by a ``fresh`` kernel (so never a feed, a constant, a
    variable's value or a view of another buffer), and read only by kernels that keep no
    reference to it (``reads_only``)."""
    fresh = facts.fresh | _FUSED_TYPES
    reads_only = facts.reads_only | fresh
    producer: dict = {}
    consumers: dict = {}
    for st in steps:
        for s in st.outputs:
            producer[s] = st.type
        for s in st.inputs:
            consumers.setdefault(s, set()).add(st.type)
    for st in steps:
        if st.type not in facts.in_place or len(st.outputs) != 1:
            continue
        out = st.out_types[0]
        for i, (s, ty) in enumerate(zip(st.inputs, st.in_types)):
            if (s in st.free and ty.shape == out.shape and ty.dtype == out.dtype
                    and producer.get(s) in fresh and consumers[s] <= reads_only):
                st.reuse = i
                break
