"""The compiler's passes over a plan's steps, each small and named (docs/compiler.md).

A pass takes the list of steps (``Step`` of plan.py: an op, the slots it reads and writes, their
concrete types) and the target slots, and returns the new list; none edits a step another list
holds (a changed step is a ``dataclasses.replace`` copy). In the order ``build_plan`` runs them:

- ``common_subexpression_elimination``: two steps of one compute op type, reading the same slots
  with equal attributes, become one (level 1);
- ``constant_folding``: a compute step whose inputs are all constants, with a small result,
  becomes a constant computed once with the NumPy kernels (level 1; never a data-dependent-shape op,
  whose planned type keeps its -1);
- ``dead_code_elimination``: steps whose results nothing reads any more are dropped (the ops
  the targets never needed were left out of the plan before the types were specialised);
- ``elementwise_fusion``: a chain or tree of elementwise steps becomes one fused step;
- ``epilogue_fusion``: an elementwise step (or fused step) that alone reads the result of a
  convolution, matmul or normalization step joins it as its epilogue (or reads it first, where
  the backend's kernel can store that result too);
- ``sibling_fusion``: two reductions of the same data over the same axes that the backend
  computes in one pass (a mean and a variance; a normalization's beta and gamma gradients)
  become one step with both outputs;
- ``plan_buffers`` (buffers.py): when each slot dies, and which elementwise steps write in place.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from ..ir import KERNEL_TABLES, Operation
from ..limits import MAX_CONSTANT_FOLD_BYTES
from ..ops._util import normalize_axes
from ..types import num_elements

FUSED = "fused_elementwise"
FUSED_EPILOGUE = "fused_epilogue"
SIBLINGS = "fused_siblings"


def _nbytes(ty) -> int:
    return num_elements(ty.shape) * ty.dtype.itemsize


def _rewired(st, alias: dict):
    """``st`` reading ``alias[s]`` instead of each aliased input slot ``s`` (itself if none is)."""
    if not any(s in alias for s in st.inputs):
        return st
    return dataclasses.replace(st, inputs=tuple(alias.get(s, s) for s in st.inputs))


def _pure(op: Operation) -> bool:
    """A compute or view op without control dependencies, not random, not run by the executor,
    not a control-flow op or a call (their blocks and callees are not attributes to compare)."""
    d = op.opdef
    return (d.kind in ("compute", "view") and d.family not in ("random", "control_flow") and not d.internal
            and not op.control_dependencies)


# ------------------------------------------------------------------------------ CSE
def attr_key(value: Any) -> Any:
    """A hashable key equal for equal attribute values: arrays by dtype, shape and bytes,
    descriptors (dataclasses) field by field; None for a value it cannot compare."""
    if isinstance(value, np.ndarray):
        if value.nbytes > MAX_CONSTANT_FOLD_BYTES:
            return None
        return ("ndarray", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, enum.Enum):
        return (type(value).__name__, value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = tuple(attr_key(getattr(value, f.name)) for f in dataclasses.fields(value))
        return None if None in parts else (type(value).__name__,) + parts
    if isinstance(value, (list, tuple)):
        parts = tuple(attr_key(v) for v in value)
        return None if None in parts else (type(value).__name__,) + parts
    if isinstance(value, float) and value != value:  # NaN: equal to itself here
        return ("nan",)
    try:
        hash(value)
    except TypeError:
        return None
    return (type(value).__name__, value)


def _cse_key(st) -> Optional[tuple]:
    op = st.op
    if op.type == "constant":
        k = attr_key(op.attrs["value"])
        return None if k is None else ("constant", k, st.out_types)
    if not _pure(op):
        return None
    attrs = tuple(sorted((k, attr_key(v)) for k, v in op.attrs.items()))
    if any(v is None for _, v in attrs):
        return None
    return (op.type, st.inputs, attrs, st.out_types)


def common_subexpression_elimination(steps: list, targets: Sequence[int]) -> tuple:
    """``(steps, alias)``: a step equal to an earlier one (same compute op type, the same input
    slots after earlier merges, equal attributes and types; or a constant of the same dtype,
    shape and bytes) is dropped and its output slots are read from the earlier step's
    (``alias``: dropped slot -> kept slot). Memory ops other than constants, random ops, ops
    with control dependencies and ops the executor runs are never merged."""
    alias: dict = {}
    seen: dict = {}
    out = []
    for st in steps:
        st = _rewired(st, alias)
        key = _cse_key(st)
        if key is not None and key in seen:
            for mine, theirs in zip(st.outputs, seen[key].outputs):
                alias[mine] = theirs
            continue
        if key is not None:
            seen[key] = st
        out.append(st)
    return out, alias


# ------------------------------------------------------------------------------ constant folding
def _evaluate(st, values: list) -> Optional[np.ndarray]:
    """The step's single result computed with its NumPy kernel, or None (no kernel, a failure,
    or a result that is not the step's type: the run reports it then)."""
    factory = KERNEL_TABLES["numpy"].get(st.op.type)
    if factory is None:
        return None
    try:
        with np.errstate(all="ignore"):
            r = factory(st)(*values)
    except Exception:  # noqa: BLE001  (an op that fails on its constants fails at run time, with its message)
        return None
    ty = st.out_types[0]
    if not isinstance(r, np.ndarray) or r.shape != tuple(ty.shape) or r.dtype != ty.dtype.np_dtype:
        return None
    r = np.array(r, copy=True, order="C")
    r.setflags(write=False)
    return r


def folded_constant(op: Operation, value: np.ndarray) -> Operation:
    """A constant op standing for ``op``, its value computed at compile time (not in the graph)."""
    c = Operation(op.graph, "constant", op.name, (), {"value": value}, (), op.index, op.location,
                  op.requested_name, op.from_gradients)
    c.outputs = op.outputs
    return c


def constant_folding(steps: list, targets: Sequence[int], limit: int = MAX_CONSTANT_FOLD_BYTES,
                     evaluate: Callable = _evaluate) -> tuple:
    """``(steps, folded {constant op: the op it replaces})``: a step of a pure single-output op
    (not random, no control dependencies) whose inputs are all constants, with inputs and result
    of at most ``limit`` bytes each, becomes a constant step holding its value, computed once with
    the NumPy kernels (so on numpy the same bits as running it). Chains fold in order."""
    values: dict = {}  # slot -> the constant value it holds
    folded: dict = {}
    out = []
    for st in steps:
        if st.op.type == "constant" and _nbytes(st.out_types[0]) <= limit:
            values[st.outputs[0]] = st.op.attrs["value"]
        elif (len(st.outputs) == 1 and _pure(st.op) and not st.op.opdef.data_dependent_shape and st.inputs
              and all(s in values for s in st.inputs)
              and _nbytes(st.out_types[0]) <= limit):
            r = evaluate(st, [np.array(values[s]) for s in st.inputs])
            if r is not None:
                c = folded_constant(st.op, r)
                folded[c] = st.op
                st = dataclasses.replace(st, op=c, ops=(c,), inputs=(), in_types=(), program=(), reuse=None)
                values[st.outputs[0]] = r
        out.append(st)
    return out, folded


# ------------------------------------------------------------------------------ dead code
def dead_code_elimination(steps: list, targets: Iterable[int], target_operations: Iterable[Operation] = ()) -> list:
    """The steps without those whose results nothing reads: a compute, view or constant step is
    kept when a kept step reads one of its slots, one is a target, its op is a target operation
    or a control dependency of an op of the plan. Memory ops other than constants are always
    kept (placeholders are feeds; reads and assigns are effects)."""
    need = set(targets)
    keep_ops = {id(o) for o in target_operations}
    for st in steps:
        for d in st.op.control_dependencies:
            keep_ops.add(id(d))
    kept = []
    for st in reversed(steps):
        d = st.op.opdef
        live = (d.kind == "memory" and st.op.type != "constant") or id(st.op) in keep_ops \
            or any(s in need for s in st.outputs) or any(id(o) in keep_ops for o in st.ops)
        if live:
            need.update(st.inputs)
            kept.append(st)
    kept.reverse()
    return kept


# ------------------------------------------------------------------------------ elementwise fusion
def _fusible(st, fusible_ops: frozenset, controlled: set) -> bool:
    op = st.op
    return (op.type in fusible_ops and op.opdef.elementwise and len(st.outputs) == 1 and not st.program
            and not op.control_dependencies and id(op) not in controlled
            and not any(t.dtype.is_complex for t in (*st.in_types, *st.out_types)))  # complex runs unfused


def _links(steps: list) -> tuple:
    """(ids of ops others depend on, slot -> index of the step writing it, slot -> indexes of
    the steps reading it): what the fusion passes check before moving a step."""
    controlled = {id(d) for st in steps for d in st.op.control_dependencies}
    producer = {s: i for i, st in enumerate(steps) for s in st.outputs}
    readers: dict = {}
    for i, st in enumerate(steps):
        for s in set(st.inputs):
            readers.setdefault(s, set()).add(i)
    return controlled, producer, readers


def elementwise_fusion(steps: list, targets: Iterable[int], fusible_ops: frozenset) -> list:
    """Chains and trees of elementwise steps (``OpDef.elementwise`` and in the backend's
    ``fusible_ops``) become one fused step each, at the place of its last op: a producer joins
    its consumer's group when its one output is read by that one step only (one consumer), is
    not a target, and has the group's output shape (the external inputs may broadcast to it).
    Ops with control dependencies, or that others depend on, are not fused."""
    if not fusible_ops:
        return list(steps)
    target_set = set(targets)
    controlled, producer, readers = _links(steps)
    member_of: dict = {}  # step index -> the index of its group's root
    groups: dict = {}  # root index -> sorted member indexes
    for r in range(len(steps) - 1, -1, -1):
        if r in member_of or not _fusible(steps[r], fusible_ops, controlled):
            continue
        shape = steps[r].out_types[0].shape
        members = {r}
        stack = [r]
        while stack:
            i = stack.pop()
            for s in steps[i].inputs:
                p = producer.get(s)
                if (p is None or p in members or p in member_of or s in target_set
                        or not _fusible(steps[p], fusible_ops, controlled)
                        or steps[p].out_types[0].shape != shape or readers.get(s) != {i}):
                    continue
                members.add(p)
                stack.append(p)
        if len(members) > 1:
            for m in members:
                member_of[m] = r
            groups[r] = sorted(members)
    out = []
    for i, st in enumerate(steps):
        if i in groups:
            out.append(fuse([steps[m] for m in groups[i]]))
        elif i not in member_of:
            out.append(st)
    return out


def fuse(members: Sequence) -> Any:
    """One fused step computing ``members`` (steps in execution order, the last the output):
    its ``program`` is ``(op, args, out_type)`` per member, args indexing the external inputs
    (``inputs``, in order of first use) and then the earlier results."""
    produced = {m.outputs[0]: j for j, m in enumerate(members)}
    ext: list = []
    ext_types: list = []
    refs = []
    for j, m in enumerate(members):
        args = []
        for s, ty in zip(m.inputs, m.in_types):
            if s in produced and produced[s] < j:
                args.append((True, produced[s]))
            else:
                if s not in ext:
                    ext.append(s)
                    ext_types.append(ty)
                args.append((False, ext.index(s)))
        refs.append((m.op, args, m.out_types[0]))
    n = len(ext)
    program = tuple((op, tuple(n + k if inner else k for inner, k in args), ty) for op, args, ty in refs)
    return dataclasses.replace(members[-1], inputs=tuple(ext), in_types=tuple(ext_types), free=(), reuse=None,
                               ops=tuple(m.op for m in members), program=program)


# ------------------------------------------------------------------------------ epilogue fusion
def _tail_program(st) -> tuple:
    """An elementwise or fused elementwise step's program (a plain step: one triple)."""
    if st.program:
        return tuple(st.program)
    return ((st.op, tuple(range(len(st.inputs))), st.out_types[0]),)


def epilogue_fusion(steps: list, targets: Iterable[int], epilogue_ops: frozenset,
                    fusible_ops: frozenset, keeping_ops: frozenset = frozenset()) -> list:
    """An anchor step (its op type in the backend's ``epilogue_ops``: a convolution, matmul or
    normalization kernel that can apply an elementwise tail before it stores) whose one output is
    read by one step only, an elementwise step of ``fusible_ops`` or a fused elementwise step
    with the anchor's output shape, becomes one ``fused_epilogue`` step with it, at the tail's
    place: the anchor's result never goes to memory. An anchor of ``keeping_ops`` (the backend's
    ``epilogue_keeping_ops``: its kernel can store its own result too) whose output more steps
    read takes the first of them as its tail when that one is such a step: the fused step's
    outputs are the tail's and then the anchor's, for the later readers (a batch norm's ReLU6,
    whose gradient reads the normalized value). The anchor's output may not be a target; ops
    with control dependencies, or that others depend on, are not fused."""
    if not epilogue_ops:
        return list(steps)
    target_set = set(targets)
    controlled, _, readers = _links(steps)
    tail_of: dict = {}  # anchor index -> tail index
    for i, st in enumerate(steps):
        op = st.op
        if (op.type not in epilogue_ops or st.program or len(st.outputs) != 1 or op.control_dependencies
                or id(op) in controlled or st.outputs[0] in target_set):
            continue
        r = readers.get(st.outputs[0], set())
        if not r or len(r) > 1 and op.type not in keeping_ops:
            continue
        t = min(r)
        tail = steps[t]
        if tail.type == FUSED_EPILOGUE or t in tail_of.values():
            continue
        ok = (tail.type == FUSED or (_fusible(tail, fusible_ops, controlled)))
        if ok and tail.out_types[0].shape == st.out_types[0].shape and all(
                id(o) not in controlled and not o.control_dependencies for o in tail.ops):
            tail_of[i] = t
    if not tail_of:
        return list(steps)
    merged = {t: with_epilogue(steps[a], steps[t], keep=len(readers[steps[a].outputs[0]]) > 1)
              for a, t in tail_of.items()}
    anchors = set(tail_of)
    return [merged.get(i, st) for i, st in enumerate(steps) if i not in anchors]


def with_epilogue(anchor, tail, keep: bool = False) -> Any:
    """One ``fused_epilogue`` step: ``anchor``'s op, then ``tail``'s program on its result. Its
    inputs are the anchor's, then the tail's others (in order of first use); its outputs the
    tail's, then with ``keep`` the anchor's."""
    ext = list(dict.fromkeys(anchor.inputs))
    ext_types = [anchor.in_types[anchor.inputs.index(s)] for s in ext]
    a_out = anchor.outputs[0]
    for s, ty in zip(tail.inputs, tail.in_types):
        if s != a_out and s not in ext:
            ext.append(s)
            ext_types.append(ty)
    n = len(ext)
    first = (anchor.op, tuple(ext.index(s) for s in anchor.inputs), anchor.out_types[0])
    m = len(tail.inputs)

    def moved(a: int) -> int:  # an arg of the tail's program, renumbered in the merged one
        if a >= m:
            return n + 1 + (a - m)
        s = tail.inputs[a]
        return n if s == a_out else ext.index(s)
    program = (first,) + tuple((op, tuple(moved(a) for a in args), ty) for op, args, ty in _tail_program(tail))
    kept = (tuple(anchor.outputs), tuple(anchor.out_types)) if keep else ((), ())
    return dataclasses.replace(tail, inputs=tuple(ext), in_types=tuple(ext_types), free=(), reuse=None,
                               ops=tuple(o for o, _, _ in program), program=program,
                               outputs=tuple(tail.outputs) + kept[0], out_types=tuple(tail.out_types) + kept[1])


# ------------------------------------------------------------------------------ sibling fusion
def _sibling_key(st, controlled: set) -> Optional[tuple]:
    """(first input slot, reduction axes) of a plain one-output step, or None."""
    op = st.op
    axes = op.attrs.get("axes", op.attrs.get("reduction_axes"))
    if (st.program or len(st.outputs) != 1 or not st.inputs or axes is None or op.control_dependencies
            or id(op) in controlled):
        return None
    return st.inputs[0], normalize_axes(axes, len(st.in_types[0].shape))


def sibling_fusion(steps: list, targets: Iterable[int], sibling_ops: frozenset) -> list:
    """Two steps whose op types are a pair of ``sibling_ops`` (the backend's: ``(first, second)``
    op types it computes in one pass over their data, as ``("mean", "variance")``), reading the
    same first input over the same axes (``axes`` or ``reduction_axes``), the first's inputs all
    among the second's, become one ``fused_siblings`` step: ``ops`` both ops in pair order,
    ``outputs`` theirs in that order, ``inputs`` the second's, run by the second op's kernel.
    It takes the later step's place when no step between reads the earlier's output, else the
    earlier's when every input is written before it; else the two stay apart. Ops with control
    dependencies, or that others depend on, are not merged."""
    if not sibling_ops:
        return list(steps)
    controlled, producer, readers = _links(steps)
    kinds = {t for pair in sibling_ops for t in pair}
    firsts: dict = {}  # (pair, key) -> indexes of unmatched first steps
    for i, st in enumerate(steps):
        key = _sibling_key(st, controlled) if st.op.type in kinds else None
        for pair in sibling_ops:
            if key is not None and st.op.type == pair[0]:
                firsts.setdefault((pair, key), []).append(i)
    merged: dict = {}  # index of the place -> the merged step
    gone: set = set()
    for k, st in enumerate(steps):
        key = _sibling_key(st, controlled) if st.op.type in kinds else None
        for pair in sibling_ops:
            if key is None or st.op.type != pair[1] or k in gone:
                continue
            for i in firsts.get((pair, key), []):
                first = steps[i]
                if i in gone or not set(first.inputs) <= set(st.inputs):
                    continue
                lo, hi = min(i, k), max(i, k)
                between = set(range(lo + 1, hi))
                if not readers.get(steps[lo].outputs[0], set()) & between:
                    place = hi
                elif all(producer.get(s, -1) < lo for s in st.inputs):
                    place = lo
                else:
                    continue
                merged[place] = dataclasses.replace(st, ops=(first.op, st.op), outputs=first.outputs + st.outputs,
                                                    out_types=first.out_types + st.out_types, free=(), reuse=None)
                gone.update((i, k))
                break
    return [merged[i] if i in merged else st for i, st in enumerate(steps) if i in merged or i not in gone]
