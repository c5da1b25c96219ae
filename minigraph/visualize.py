"""Pictures of a graph: networkx, Graphviz DOT, Mermaid, and rendering through Graphviz.

MPSGraph has no public graph picture; Xcode's Metal debugger shows compiled MPSGraph
packages. Here name scopes become clusters (Mermaid subgraphs), gradient ops are coloured
apart from forward ops, and control dependencies are dashed edges.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Optional

import networkx as nx

from .errors import GraphvizNotFoundError, MiniGraphError, RenderError
from .listing import fmt_type, fmt_value, is_gradient_op, is_leaf, op_attrs, scope_of


# fill colours: memory ops by kind, forward ops white, gradient ops red
COLORS = {"placeholder": "#dbeafe", "constant": "#f3f4f6", "variable": "#fef3c7",
          "forward": "#ffffff", "gradient": "#fecaca", "assign": "#e9d5ff"}


def _kind(op) -> str:
    leaf = is_leaf(op)
    if is_gradient_op(op) and not (leaf and op.type != "constant"):
        return "gradient"  # constants built by gradients (seeds, scales) are part of the gradient
    if leaf:
        return op.type  # placeholder, constant or variable
    if op.opdef.kind == "memory" and not op.outputs:
        return "assign"
    return "forward"


def to_networkx(g) -> nx.DiGraph:
    """A ``networkx.DiGraph`` with one node per op, keyed by the op's unique name (not in MPSGraph).

    Node attributes: ``type``, ``index`` (creation order), ``scope``, ``location``,
    ``gradient`` (bool), ``kind``, ``attrs`` (the op's attributes), ``outputs`` (list of
    ``(shape, dtype name)``), ``shape`` and ``dtype`` (of the first output; None for an op without
    outputs), ``op`` (the Operation). Edge attributes: ``kind`` (``"data"`` or
    ``"control"``), and for data edges ``tensor`` (name), ``shape``, ``dtype``, ``input_indices``
    (the consumer's input positions fed by that tensor) and ``control`` (True when the consumer
    also has a control dependency on the producer).
    """
    dg = nx.DiGraph(name="minigraph")
    for op in g.operations:
        dg.add_node(op.name, op=op, type=op.type, index=op.index, scope=scope_of(op),
                    location=op.location, gradient=is_gradient_op(op), kind=_kind(op),
                    attrs=dict(op.attrs), outputs=[(tuple(t.shape), t.dtype.name) for t in op.outputs],
                    shape=tuple(op.outputs[0].shape) if op.outputs else None,
                    dtype=op.outputs[0].dtype.name if op.outputs else None)
    for op in g.operations:
        for i, t in enumerate(op.inputs):
            src = t.operation.name
            if dg.has_edge(src, op.name) and dg.edges[src, op.name]["kind"] == "data":
                e = dg.edges[src, op.name]
                if e["tensor"] == t.name:
                    e["input_indices"].append(i)
                    continue
                # two outputs of one op feed this op: keep the first edge, list the others
                e.setdefault("more_tensors", []).append((t.name, i))
                continue
            dg.add_edge(src, op.name, kind="data", tensor=t.name, shape=tuple(t.shape),
                        dtype=t.dtype.name, input_indices=[i], control=False)
        for d in op.control_dependencies:
            if dg.has_edge(d.name, op.name):
                dg.edges[d.name, op.name]["control"] = True
            else:
                dg.add_edge(d.name, op.name, kind="control")
    return dg


def _dq(s: str) -> str:
    """A DOT double-quoted string (backslashes, quotes and newlines escaped)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "") + '"'


def _label_lines(op) -> list:
    base = op.name.rpartition("/")[2]
    lines = [base] if base == op.type else [base, op.type]
    lines.append(", ".join(fmt_type(t) for t in op.outputs) if op.outputs else "(operation)")
    attrs = op_attrs(op)
    if attrs:
        text = ", ".join(f"{k}={fmt_value(v)}" for k, v in attrs.items())
        lines.append(text if len(text) <= 60 else text[:57] + "...")
    return lines


def _scope_tree(ops) -> dict:
    """{scope path: [ops directly in it]} plus every intermediate path."""
    tree: dict = {"": []}
    for op in ops:
        s = scope_of(op)
        parts = s.split("/") if s else []
        for k in range(1, len(parts) + 1):
            tree.setdefault("/".join(parts[:k]), [])
        tree[s].append(op)
    return tree


def _children(tree: dict, scope: str) -> list:
    depth = scope.count("/") + 1 if scope else 0
    return sorted(p for p in tree if p and p.count("/") == depth and
                  (not scope or p.startswith(scope + "/")))


def to_dot(g, rankdir: str = "TB") -> str:
    """Graphviz DOT text of the graph (no dependency needed to produce it); not in MPSGraph.

    Name scopes are clusters; gradient ops are red, placeholders blue, constants grey,
    variables yellow; dashed edges are control dependencies; edge labels are tensor types.

    Args:
        rankdir: Graphviz layout direction: ``TB``, ``LR``, ``BT`` or ``RL``.
    """
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise MiniGraphError(f"rankdir must be TB, LR, BT or RL, got {rankdir!r}")
    ops = g.operations
    out = ["digraph minigraph {",
           f"  rankdir={rankdir};",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=8, color="#555555"];']
    tree = _scope_tree(ops)
    counter = [0]

    def node(op, indent):
        kind = _kind(op)
        shape = {"placeholder": "ellipse", "variable": "cylinder", "constant": "note"}.get(op.type, "box")
        extra = ', color="#b91c1c"' if kind == "gradient" else ""
        out.append(f"{indent}n{op.index} [label={_dq(chr(10).join(_label_lines(op)))}, shape={shape}, "
                   f'fillcolor="{COLORS[kind]}"{extra}, tooltip={_dq(op.name + " @ " + op.location)}];')

    def emit(scope, indent):
        for child in _children(tree, scope):
            counter[0] += 1
            under = [o for o in ops if scope_of(o) == child or scope_of(o).startswith(child + "/")]
            grad = bool(under) and all(is_gradient_op(o) for o in under)
            out.append(f"{indent}subgraph cluster_{counter[0]} {{")
            out.append(f"{indent}  label={_dq(child.rpartition('/')[2])}; style=\"rounded,dashed\"; "
                       f"color=\"{'#b91c1c' if grad else '#888888'}\"; fontname=\"Helvetica\";")
            emit(child, indent + "  ")
            out.append(f"{indent}}}")
        for op in tree[scope]:
            node(op, indent)

    emit("", "  ")
    for op in ops:
        seen = set()
        for t in op.inputs:
            key = (t.operation.index, t.index)
            if key in seen:
                continue
            seen.add(key)
            out.append(f"  n{t.operation.index} -> n{op.index} [label={_dq(fmt_type(t))}];")
        for d in op.control_dependencies:
            out.append(f'  n{d.index} -> n{op.index} [style=dashed, color="#9ca3af", arrowhead=empty];')
    out.append("}")
    return "\n".join(out) + "\n"


_MERMAID_ESC = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "&": "#amp;", "\n": " ", "|": "#124;",
                "[": "#91;", "]": "#93;"}


def _mq(s: str) -> str:
    return "".join(_MERMAID_ESC.get(c, c) for c in s)


def to_mermaid(g, direction: str = "TD") -> str:
    """Mermaid flowchart text (renders on GitHub and in many Markdown viewers); not in MPSGraph.

    Scopes are subgraphs; gradient ops get the ``grad`` class (red); dotted edges are
    control dependencies.

    Args:
        direction: Flowchart direction: ``TD``, ``TB``, ``LR``, ``BT`` or ``RL``.
    """
    if direction not in ("TD", "TB", "LR", "BT", "RL"):
        raise MiniGraphError(f"direction must be TD, TB, LR, BT or RL, got {direction!r}")
    ops = g.operations
    out = [f"flowchart {direction}"]
    tree = _scope_tree(ops)
    counter = [0]

    def emit(scope, indent):
        for child in _children(tree, scope):
            counter[0] += 1
            out.append(f'{indent}subgraph s{counter[0]}["{_mq(child.rpartition("/")[2])}"]')
            emit(child, indent + "  ")
            out.append(f"{indent}end")
        for op in tree[scope]:
            text = "<br/>".join(_mq(x) for x in _label_lines(op)[:3])
            l, r = ("([", "])") if op.type == "placeholder" else ("[(", ")]") if op.type == "variable" else ("[", "]")
            out.append(f'{indent}n{op.index}{l}"{text}"{r}')

    emit("", "  ")
    for op in ops:
        seen = set()
        for t in op.inputs:
            if t.operation.index in seen:
                continue
            seen.add(t.operation.index)
            out.append(f"  n{t.operation.index} --> n{op.index}")
        for d in op.control_dependencies:
            out.append(f"  n{d.index} -.-> n{op.index}")
    for kind in (k for k in COLORS if k != "forward"):
        members = [f"n{op.index}" for op in ops if _kind(op) == kind]
        if members:
            stroke = ",stroke:#b91c1c" if kind == "gradient" else ""
            out.append(f"  classDef {kind} fill:{COLORS[kind]}{stroke}")
            out.append(f"  class {','.join(members)} {kind}")
    return "\n".join(out) + "\n"


_FORMAT = re.compile(r"^[a-z0-9_:]+$")


def find_dot() -> str:
    """The path of Graphviz's ``dot``; ``GraphvizNotFoundError`` says how to get it."""
    path = shutil.which("dot")
    if path is None:
        raise GraphvizNotFoundError(
            "rendering needs Graphviz's `dot` program, which is not on PATH; install Graphviz "
            "(apt-get install graphviz, brew install graphviz, conda install graphviz), or save the "
            "text of g.to_dot() to a .dot file and render it elsewhere")
    return path


def render(g, path, format: Optional[str] = None, rankdir: str = "TB", timeout: float = 120.0) -> str:
    """Draw the graph to ``path`` with Graphviz (format from the suffix: svg, png, pdf, ...); not in MPSGraph.

    A ``.dot``/``.gv`` path is written directly, without Graphviz. Returns the path.

    Args:
        path: Where to write; its suffix picks the format unless ``format`` is given.
        format: A Graphviz output format (``svg``, ``png``, ``pdf``, ...).
        rankdir: Graphviz layout direction: ``TB``, ``LR``, ``BT`` or ``RL``.
        timeout: Seconds to wait for Graphviz's ``dot``.
    """
    path = os.fspath(path)
    fmt = (format or os.path.splitext(path)[1].lstrip(".")).lower()
    if not fmt:
        raise MiniGraphError(f"render: cannot tell the image format of {path!r}; give a suffix "
                             "(.svg, .png, .pdf) or format=")
    if not _FORMAT.match(fmt):
        raise MiniGraphError(f"render: invalid format {fmt!r}")
    text = to_dot(g, rankdir=rankdir)
    if fmt in ("dot", "gv"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path
    dot = find_dot()
    try:
        proc = subprocess.run([dot, f"-T{fmt}", "-o", path], input=text.encode("utf-8"),
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RenderError(f"render: Graphviz took more than {timeout:g} s on {len(g.operations)} ops; "
                          "try format='svg' or a smaller graph") from None
    except OSError as e:
        raise RenderError(f"render: could not run {dot}: {e}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise RenderError(f"render: Graphviz `dot -T{fmt}` failed (exit {proc.returncode}) writing "
                          f"{path!r}: {err or 'no message'} (`dot -T?` lists the formats it supports)")
    return path
