"""Readable, stable listings of a graph and of a compiled plan (``print(g)``, ``exe.describe()``).

One op per line: name, type, inputs by name, output type, key attributes. Nothing that changes
from run to run (ids, addresses, source paths) appears, so a listing can be diffed and a saved
and reloaded graph lists identically. MPSGraph has no textual dump of this kind; its
``MPSGraphOptions.verbose`` logs are the closest equivalent.
"""
from __future__ import annotations

import enum
import re
import textwrap
from typing import Any, Optional, cast

import numpy as np

from .ir import OPS, Operation
from .ops.memory import filled_scalar

# Characters that must never reach a terminal raw: C0 and C1 controls and DEL (escape sequences,
# carriage returns and newlines that forge lines), line and paragraph separators, and the
# bidirectional overrides and isolates that reorder what is shown.
UNSAFE_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def escape(text: str) -> str:
    """``text`` with each unsafe character written as ``\\xNN`` or ``\\uNNNN`` (names in listings)."""
    return UNSAFE_CHARS.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


_LEAVES = [t for t, d in OPS.items() if d.kind == "memory" and not d.inputs]  # placeholder, constant, variable


def is_leaf(op: Operation) -> bool:
    """A placeholder, constant or variable: a memory op with no inputs."""
    return op.opdef.kind == "memory" and not op.inputs


def is_gradient_op(op: Operation) -> bool:
    """True for ops that ``gradients`` built and for MPSGraph's gradient op types (data or
    weights gradients of a convolution-family or pooling op)."""
    return op.from_gradients or OPS[op.type].role != "forward"


def gradient_op_counts(ops) -> dict:
    """``{op type: count}`` of MPSGraph's gradient op types (a role other than forward) among the
    ``ops`` that ``gradients`` built, in order of first appearance."""
    counts: dict = {}
    for op in ops:
        if op.from_gradients and OPS[op.type].role != "forward":
            counts[op.type] = counts.get(op.type, 0) + 1
    return counts


def scope_of(op: Operation) -> str:
    """The name-scope path of an op (``"a/b"`` for ``"a/b/op"``; ``""`` at top level)."""
    return op.name.rpartition("/")[0]


def fmt_shape(shape) -> str:
    return "[" + ",".join("?" if d == -1 else str(d) for d in shape) + "]"


def fmt_type(t) -> str:
    """``float32[2,3]`` for a tensor or ShapedType; ``?`` marks a dynamic dimension."""
    return f"{t.dtype.name}{fmt_shape(t.shape)}"


def fmt_value(v: Any) -> str:
    """A compact, deterministic rendering of an attribute value."""
    if isinstance(v, enum.Enum):
        return v.name
    if hasattr(v, "non_defaults") and hasattr(v, "__dataclass_fields__"):
        inner = ", ".join(f"{k}={fmt_value(x)}" for k, x in v.non_defaults().items())
        return f"{type(v).__name__}({inner})"
    if hasattr(v, "np_dtype") and hasattr(v, "name"):  # DataType
        return v.name
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    if isinstance(v, np.ndarray):
        if v.size <= 4:  # float32 values print as float32 (0.1, not 0.10000000149011612)
            return np.array2string(v, separator=", ") if v.ndim else _scalar(cast(np.generic, v[()]))
        return f"<{v.dtype}{fmt_shape(v.shape)}>"
    if isinstance(v, np.generic):
        return _scalar(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {fmt_value(x)}" for k, x in v.items()) + "}"
    return repr(v)


def _scalar(x: np.generic) -> str:
    if isinstance(x, np.floating):
        return np.format_float_positional(x, trim="-") if abs(float(x)) < 1e16 else repr(float(x))
    return repr(x.item())


def op_attrs(op: Operation) -> dict:
    """The attributes a listing shows: everything but what the output type already says
    (a memory op's shape and dtype) and large arrays (a small constant shows its value)."""
    out: dict = {}
    for k, v in op.attrs.items():
        if is_leaf(op) and k in ("shape", "dtype"):
            continue
        if k in op.opdef.hidden_attrs:
            fill = filled_scalar(v) if op.type == "constant" else None  # constant(_:shape:dataType:)
            if op.type == "constant" and isinstance(v, np.ndarray) and v.size <= 4:
                out[k] = v
            elif fill is not None:
                out[k] = fill
            continue
        out[k] = v
    return out


def _outputs(op: Operation, types=None) -> str:
    types = list(types if types is not None else op.outputs)
    if not types:
        return "()"
    if len(types) == 1:
        return fmt_type(types[0])
    return "(" + ", ".join(fmt_type(t) for t in types) + ")"


def op_line_parts(op: Operation, out_types=None) -> tuple:
    """(name, "type(inputs)", "-> outputs", "attrs and tags") for one op."""
    call = f"{op.type}({', '.join(escape(t.name) for t in op.inputs)})"
    extra = [f"{k}={escape(fmt_value(v))}" for k, v in op_attrs(op).items()]
    if op.control_dependencies:
        extra.append("after=[" + ", ".join(escape(d.name) for d in op.control_dependencies) + "]")
    if is_gradient_op(op):
        extra.append("(gradient)")
    return escape(op.name), call, "-> " + _outputs(op, out_types), "  ".join(extra)


MIN_WIDTH = 40  # a narrower width given to a listing counts as this


def _table(rows: list, prefix: list, width: Optional[int] = None) -> list:
    """Align the name and call columns (capped, so one long name does not push every line); with
    ``width``, the columns are capped to leave room for the outputs, and a longer line wraps."""
    if not rows:
        return []
    width = None if width is None else max(width, MIN_WIDTH)
    wn = min(max(len(r[0]) for r in rows), 32 if width is None else width // 4)
    wc = min(max(len(r[1]) for r in rows), 48 if width is None else max(width - len(prefix[0]) - wn - 26, 8))
    lines = []
    for p, (name, call, out, extra) in zip(prefix, rows):
        head = f"{p}{name:<{wn}} = {call:<{wc}} {out}"
        line = (head + ("  " + extra if extra else "")).rstrip()
        if width is not None and len(line) > width:
            lines += _wrap(p, f"{name:<{wn}}", call, out, extra, width, head if len(head) <= width else None)
        else:
            lines.append(line)
    return lines


def _breaks(text: str) -> list:
    """``text`` as (separator, piece) pairs, broken where a wrapped line may break: after the
    opening parenthesis of a call (an op's inputs, a descriptor's fields) and after each ``", "``
    between its arguments; a list stays whole."""
    units, start, sep, parens, brackets = [], 0, "", 0, 0
    for i, ch in enumerate(text):
        parens += (ch == "(") - (ch == ")")
        brackets += (ch in "[{") - (ch in "]}")
        if ch == "(" and parens == 1 and brackets == 0 and i > start and text[i + 1:i + 2] != ")":
            units.append((sep, text[start:i + 1]))
            start, sep = i + 1, ""
        elif ch == "," and text[i + 1:i + 2] == " " and parens == 1 and brackets == 0:
            units.append((sep, text[start:i + 1]))
            start, sep = i + 2, " "
    return units + [(sep, text[start:])]


def _wrap(prefix: str, name: str, call: str, out: str, extra: str, width: int, head: Optional[str]) -> list:
    """One listing line in lines of at most ``width`` columns: the aligned ``head`` (name, call,
    outputs) where it fits, else the call and the output types, then the attributes, each moved
    whole onto a continuation line where it fits there and broken inside (between inputs, between
    a descriptor's fields) where not. Continuation lines are indented four columns more than the
    name; a piece longer than a whole line is cut."""
    def group(first: str, text: str) -> list:
        (s0, p0), *rest = _breaks(text)
        return [(first + s0, p0)] + rest

    groups = [[("", head)]] if head is not None else [[("", f"{prefix}{name} =")], group(" ", call), group(" ", out)]
    groups += [group("  ", attr) for attr in (extra.split("  ") if extra else [])]
    indent = " " * (len(prefix) + 4)
    room = width - len(indent)
    lines, cur = [], ""
    for units in groups:
        whole = "".join(sep + piece for sep, piece in units)
        if cur.strip() and len(cur) + len(whole) > width and len(whole.lstrip()) <= room:
            lines.append(cur)  # the group fits a line of its own: it starts one
            cur = indent + whole.lstrip()
            continue
        for sep, piece in units:
            if cur.strip() and len(cur) + len(sep) + len(piece) > width:
                lines.append(cur)
                cur, sep = indent, ""
            while len(cur) + len(sep) + len(piece) > width and len(piece) > room:  # cut what cannot fit
                take = max(width - len(cur) - len(sep), 1)
                lines.append(cur + sep + piece[:take])
                cur, sep, piece = indent, "", piece[take:]
            cur += sep + piece
    lines.append(cur)
    return [ln.rstrip() for ln in lines]


def describe_ops(ops, width: Optional[int] = None) -> list:
    """Listing lines of ``ops`` (each numbered by its place in its graph), aligned in columns; with
    ``width`` (columns, at least 40), no line is longer: a longer one wraps onto indented
    continuation lines."""
    ops = list(ops)
    return _table([op_line_parts(op) for op in ops], [f"  {op.index:>3}  " for op in ops], width)


def describe_graph(g, width: Optional[int] = None) -> str:
    """The listing of every op, in creation order (what ``print(g)`` shows); MPSGraph has no public
    equivalent. With ``width`` (columns), lines longer than that wrap (``print(g)`` never wraps)."""
    ops = g.operations
    counts: dict = {}
    for op in ops:
        counts[op.type] = counts.get(op.type, 0) + 1
    n_grad = sum(1 for op in ops if is_gradient_op(op))
    kinds = ", ".join(f"{counts[k]} {k}" for k in _LEAVES if k in counts)
    head = f"Graph: {len(ops)} ops" + (f" ({kinds})" if kinds else "")
    if n_grad:
        head += f", {n_grad} gradient ops"
    heads = [head] if width is None else textwrap.wrap(head, max(width, MIN_WIDTH), subsequent_indent="    ")
    return "\n".join(heads + describe_ops(ops, width))


def _nbytes(t) -> int:
    """Planned bytes; 0 for a data-dependent-shape result (a -1 dimension: sized when it runs)."""
    n = t.dtype.itemsize
    for d in t.shape:
        n *= max(d, 0)
    return n


def describe_plan(plan, backend_name: str = "", given: tuple = ()) -> list:
    """Lines for one concrete plan: steps with concrete types and the buffer plan; then, for each
    control-flow step, the steps of its blocks' sub-plans (``given``: a sub-plan's input tensors)."""
    name_of = {s: escape(t.name) for s, t in zip(plan.inputs, given)}
    for st in plan.steps:
        tensors = st.op.outputs if st.program else [t for o in st.ops for t in o.outputs]  # fused siblings: each op's
        if st.program and len(st.outputs) > len(tensors):  # an epilogue step that keeps its anchor's result
            tensors = list(tensors) + list(st.ops[0].outputs)
        for t, s in zip(tensors, st.outputs):
            name_of[s] = escape(t.name)
    rows, prefix = [], []
    live = peak = 0
    for i, st in enumerate(plan.steps):
        name, call, out, extra = _step_line_parts(plan, st, name_of)
        live += sum(_nbytes(t) for t in st.out_types)
        peak = max(peak, live)
        freed = [s for s in st.free]
        live -= sum(_nbytes(plan.types[s]) for s in freed if s in plan.types)
        if freed:
            extra = (extra + "  " if extra else "") + "free: " + ", ".join(name_of.get(s, f"#{s}") for s in freed)
        rows.append((name, call, out, extra))
        prefix.append(f"  {i:>3}  ")
    lines = [f"steps ({len(plan.steps)}), in execution order; 'free:' lists the buffers whose last use is that step:"]
    lines += _table(rows, prefix)
    for i, st in enumerate(plan.steps):
        for sp in st.blocks:
            if getattr(sp, "plan", None) is not None:  # a SubPlan (a call's callee is an Executable)
                block = sp.block
                lines.append(f"  step {i} runs {escape(block.label)}:")
                lines += ["        " + x for x in describe_plan(sp.plan, backend_name,
                                                                 tuple(block.arguments) + tuple(block.captures))[:-1]]
    kept = [escape(t.name) for t, _ in plan.targets]
    lines.append(f"buffers: {plan.num_slots} tensors, peak {peak} bytes live; kept for the caller: "
                 + (", ".join(kept) if kept else "none"))
    if plan.pruned:
        lines.append(f"pruned ({len(plan.pruned)}, not needed by the targets): "
                     + ", ".join(escape(op.name) for op in plan.pruned))
    else:
        lines.append("pruned: nothing")
    return lines


def _step_line_parts(plan, st, name_of: dict) -> tuple:
    """``op_line_parts`` for a plan step: a fused step shows its kernel, its external inputs and
    its ops; a folded constant the op it replaces."""
    if st.fused:
        call = f"{st.kernel}({', '.join(name_of.get(s, f'#{s}') for s in st.inputs)})"
        return (escape(st.op.name), call, "-> " + _outputs(st.op, st.out_types),
                "ops: " + ", ".join(escape(o.name) for o in st.ops))
    name, call, out, extra = op_line_parts(st.op, st.out_types)
    original = getattr(plan, "folded", {}).get(st.op)
    if original is not None:
        extra = f"folded from {op_line_parts(original)[1]}"
    return name, call, out, extra


def describe_executable(exe) -> str:
    """The compiled listing (``Executable.describe()``): feeds, targets, steps with concrete
    shapes, when each intermediate buffer is freed, and what was pruned."""
    lines = [f"Executable on {exe.backend_name}: {len(exe.feed_types)} feeds, "
             f"{len(exe.target_tensors)} target tensors, {len(exe.target_operations)} target operations"]
    feeds = sorted(exe.feed_types.items(), key=lambda kv: kv[0].operation.index)
    lines.append("feeds: " + (", ".join(f"{escape(t.name)} {fmt_type(ty)}" for t, ty in feeds) or "none"))
    lines.append("targets: " + (", ".join(escape(t.name) for t in exe.target_tensors) or "none")
                 + ("; operations: " + ", ".join(escape(o.name) for o in exe.target_operations)
                    if exe.target_operations else ""))
    plan = exe.plan
    if plan is None:
        specialised = list(exe._specialised.values())
        if not specialised:
            lines.append("not specialised yet: the feed types have dynamic (?) dimensions; "
                         "the plan is built on the first run")
            return "\n".join(lines)
        plan = specialised[-1][0]
        lines.append(f"specialised for {len(specialised)} feed shape(s); the latest: "
                     + ", ".join(f"{escape(t.name)} {fmt_type(ty)}" for t, _, ty in plan.feeds))
    lines += describe_plan(plan, exe.backend_name)
    return "\n".join(lines)
