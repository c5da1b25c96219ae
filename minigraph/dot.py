"""Graphviz DOT shared by the pictures of a graph (visualize.py) and of a compiled plan
(``exe.to_dot()``, ``exe.render()``): colours, quoting, and running Graphviz's ``dot``."""
from __future__ import annotations

import shutil
import subprocess

from .errors import GraphvizNotFoundError, MiniGraphError, RenderError
from .listing import fmt_type, is_gradient_op, is_leaf


# fill colours: memory ops by kind, forward ops white, gradient ops red
COLORS = {"placeholder": "#dbeafe", "constant": "#f3f4f6", "variable": "#fef3c7",
          "forward": "#ffffff", "gradient": "#fecaca", "assign": "#e9d5ff", "block_argument": "#e0f2fe"}


def _kind(op) -> str:
    leaf = is_leaf(op)
    if is_gradient_op(op) and not (leaf and op.type != "constant"):
        return "gradient"  # constants built by gradients (seeds, scales) are part of the gradient
    if leaf:
        return op.type  # placeholder, constant or variable
    if op.opdef.kind == "memory" and not op.outputs:
        return "assign"
    return "forward"


def _dq(s: str) -> str:
    """A DOT double-quoted string (backslashes, quotes and newlines escaped)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "") + '"'


def _wrap(items: list, width: int = 60) -> list:
    """``items`` joined with ", " in lines of about ``width`` characters, broken after commas;
    nothing is dropped."""
    pieces = ", ".join(items).split(", ")
    lines, cur = [], ""
    for i, p in enumerate(pieces):
        p += "," if i < len(pieces) - 1 else ""
        if cur and len(cur) + len(p) + 1 > width:
            lines.append(cur)
            cur = p
        else:
            cur = f"{cur} {p}" if cur else p
    return lines + ([cur] if cur else [])


def find_dot() -> str:
    """The path of Graphviz's ``dot``; ``GraphvizNotFoundError`` says how to get it."""
    path = shutil.which("dot")
    if path is None:
        raise GraphvizNotFoundError(
            "rendering needs Graphviz's `dot` program, which is not on PATH; install Graphviz "
            "(apt-get install graphviz, brew install graphviz, conda install graphviz), or save the "
            "text of g.to_dot() to a .dot file and render it elsewhere")
    return path


# fill colours of a compiled plan's steps: fused steps stand out
STEP_COLORS = {"fused_elementwise": "#dcfce7", "fused_epilogue": "#bbf7d0", "fused_siblings": "#bbf7d0"}


def _step_kind(st) -> str:
    if st.type in STEP_COLORS:
        return st.type
    return _kind(st.op) if st.op.opdef.kind == "memory" else "forward"


def plan_to_dot(plan, rankdir: str = "TB") -> str:
    """Graphviz DOT text of a compiled plan: one node per step (a fused step lists the ops it
    computes, in green), edges along the buffers the steps pass on; not in MPSGraph, whose
    compiled packages Xcode's Metal debugger shows."""
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise MiniGraphError(f"rankdir must be TB, LR, BT or RL, got {rankdir!r}")
    out = ["digraph plan {", f"  rankdir={rankdir};",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=8, color="#555555"];']
    producer: dict = {}
    for i, st in enumerate(plan.steps):
        kind = _step_kind(st)
        head = st.kernel if not st.program else f"{st.type}"
        lines = [f"{i}: {st.op.name}", head]
        if st.program:
            lines += _wrap([o.type for o in st.ops], 40)
        if st.out_types:
            lines.append(fmt_type(st.out_types[0]))
        shape = {"placeholder": "ellipse", "variable": "cylinder", "constant": "note"}.get(st.op.type, "box")
        fill = STEP_COLORS.get(kind) or COLORS.get(kind, COLORS["forward"])
        out.append(f"  s{i} [label={_dq(chr(10).join(lines))}, shape={shape}, fillcolor=\"{fill}\", "
                   f"tooltip={_dq(', '.join(o.name for o in st.ops))}];")
        for s in dict.fromkeys(st.inputs):
            if s in producer:
                out.append(f"  s{producer[s]} -> s{i};")
        for s in st.outputs:
            producer[s] = i
        if st.op.type == "assign" and st.op.inputs:
            var = st.op.inputs[0].operation
            src = next((k for k, o in enumerate(plan.steps) if o.op is var), None)
            if src is not None:
                out.append(f"  s{i} -> s{src} [style=dashed, constraint=false];")
    out.append("}")
    return "\n".join(out) + "\n"


def render_dot(text: str, path: str, fmt: str, timeout: float = 120.0, what: str = "the graph") -> str:
    """Write DOT ``text`` to ``path``: directly for dot/gv, else through Graphviz's ``dot -T{fmt}``."""
    if fmt in ("dot", "gv"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path
    dot = find_dot()
    try:
        proc = subprocess.run([dot, f"-T{fmt}", "-o", path], input=text.encode("utf-8"),
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RenderError(f"render: Graphviz took more than {timeout:g} s on {what}; "
                          "try format='svg' or a smaller graph") from None
    except OSError as e:
        raise RenderError(f"render: could not run {dot}: {e}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise RenderError(f"render: Graphviz `dot -T{fmt}` failed (exit {proc.returncode}) writing "
                          f"{path!r}: {err or 'no message'} (`dot -T?` lists the formats it supports)")
    return path
