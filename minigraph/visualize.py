"""Pictures of a graph: networkx, Graphviz DOT, Mermaid, and rendering through Graphviz.

MPSGraph has no public graph picture; Xcode's Metal debugger shows compiled MPSGraph
packages. Here name scopes become clusters (Mermaid subgraphs), gradient ops are coloured
apart from forward ops, and control dependencies are dashed edges.
"""
from __future__ import annotations

import os
import re
import subprocess
from typing import Optional

import networkx as nx

from .errors import GraphvizNotFoundError, MiniGraphError, RenderError  # noqa: F401  (visualize.GraphvizNotFoundError, as before)
from .dot import COLORS, _dq, _kind, _wrap, find_dot, render_dot  # noqa: F401  (find_dot: part of this module's API)
from .listing import fmt_type, fmt_value, is_gradient_op, op_attrs, scope_of


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


def _label_lines(op) -> list:
    base = op.name.rpartition("/")[2]
    lines = [base] if base == op.type else [base, op.type]
    lines.append(", ".join(fmt_type(t) for t in op.outputs) if op.outputs else "(operation)")
    attrs = op_attrs(op)
    if attrs:  # wrapped, never cut: the field that differs from the defaults may come last
        lines.extend(_wrap([f"{k}={fmt_value(v)}" for k, v in attrs.items()]))
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


def collapsible_scopes(g) -> list:
    """The outermost name scopes a picture shows as one node by default, in the order they were
    built: those whose ops all came from ``g.gradients`` (gradient scopes), and those holding an
    ``assign`` but no placeholder (optimizer scopes: the update of each variable, with its state)."""
    tree = _scope_tree(g.operations)
    found: list = []

    def visit(scope: str) -> None:
        for child in _children(tree, scope):
            under = _ops_under(tree, child)
            grads = all(is_gradient_op(o) for o in under)
            optimizer = any(o.type == "assign" for o in under) and not any(o.type == "placeholder" for o in under)
            if under and (grads or optimizer):
                found.append(child)
            else:
                visit(child)

    visit("")
    first = {scope: min(o.index for o in _ops_under(tree, scope)) for scope in found}
    return sorted(found, key=first.__getitem__)  # in the order they were built


def _ops_under(tree: dict, scope: str) -> list:
    return [o for path, ops in tree.items() if path == scope or path.startswith(scope + "/") for o in ops]


def _collapsed(g, collapse) -> list:
    """The scopes to draw as single nodes: ``True`` the collapsible ones, a list those named."""
    if collapse is True:
        return collapsible_scopes(g)
    if not collapse:
        return []
    scopes = [collapse] if isinstance(collapse, str) else list(collapse)
    tree = _scope_tree(g.operations)
    unknown = [s for s in scopes if s not in tree or not s]
    if unknown:
        raise MiniGraphError(f"collapse: no name scope {', '.join(repr(s) for s in unknown)}; the graph's scopes: "
                             f"{', '.join(repr(p) for p in sorted(tree) if p) or 'none'}")
    return [s for s in scopes if not any(s.startswith(o + "/") for o in scopes)]  # the outermost of nested ones


def _folded_node(tree: dict, scope: str, k: int) -> str:
    """The DOT node of a collapsed scope: its name, op count and kind."""
    under = _ops_under(tree, scope)
    grad = all(is_gradient_op(o) for o in under)
    label = f"{scope}\n{len(under)} ops ({'gradients' if grad else 'optimizer update'}), collapsed"
    colour = ', color="#b91c1c"' if grad else ""
    return (f"c{k} [label={_dq(label)}, shape=box3d, fillcolor=\"{COLORS['gradient' if grad else 'assign']}\"{colour}, "
            f"tooltip={_dq(scope + ': collapse=False draws its ops')}];")


def _dot_edges(ops: list, rep: dict) -> list:
    """Data and control edges; an op of a collapsed scope is that scope's node (``rep``), and
    edges inside one collapsed scope, or repeated between two nodes, are drawn once or not at all."""
    lines, drawn = [], set()
    for op in ops:
        dst = rep.get(op.index, f"n{op.index}")
        for t in op.inputs:
            src = rep.get(t.operation.index, f"n{t.operation.index}")
            key = (src, dst) if src.startswith("c") or dst.startswith("c") else (t.operation.index, t.index, dst)
            if src == dst or key in drawn:
                continue
            drawn.add(key)
            lines.append(f"  {src} -> {dst} [label={_dq(fmt_type(t))}];")
        for d in op.control_dependencies:
            src = rep.get(d.index, f"n{d.index}")
            if src == dst or (src, dst, "control") in drawn:
                continue
            drawn.add((src, dst, "control"))
            lines.append(f'  {src} -> {dst} [style=dashed, color="#9ca3af", arrowhead=empty];')
    return lines


def to_dot(g, rankdir: str = "TB", collapse=False) -> str:
    """Graphviz DOT text of the graph (no dependency needed to produce it); not in MPSGraph.

    Name scopes are clusters; gradient ops are red, placeholders blue, constants grey,
    variables yellow; dashed edges are control dependencies; edge labels are tensor types.

    Args:
        rankdir: Graphviz layout direction: ``TB``, ``LR``, ``BT`` or ``RL``.
        collapse: ``True`` draws each gradient and optimizer scope (``collapsible_scopes``) as one
            node that names its op count; a scope name or list of names collapses those; False
            (default) draws every op.
    """
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise MiniGraphError(f"rankdir must be TB, LR, BT or RL, got {rankdir!r}")
    ops = g.operations
    folded = _collapsed(g, collapse)
    rep: dict = {}  # op index -> node id of the collapsed scope that holds it
    for k, scope in enumerate(folded):
        for o in ops:
            if scope_of(o) == scope or scope_of(o).startswith(scope + "/"):
                rep[o.index] = f"c{k}"
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

    def folded_node(scope, indent):
        out.append(f"{indent}{_folded_node(tree, scope, folded.index(scope))}")

    def emit(scope, indent):
        for child in _children(tree, scope):
            if child in folded:
                folded_node(child, indent)
                continue
            counter[0] += 1
            under = _ops_under(tree, child)
            grad = bool(under) and all(is_gradient_op(o) for o in under)
            out.append(f"{indent}subgraph cluster_{counter[0]} {{")
            out.append(f"{indent}  label={_dq(child.rpartition('/')[2])}; style=\"rounded,dashed\"; "
                       f"color=\"{'#b91c1c' if grad else '#888888'}\"; fontname=\"Helvetica\";")
            emit(child, indent + "  ")
            out.append(f"{indent}}}")
        for op in tree[scope]:
            node(op, indent)

    emit("", "  ")
    out.extend(_dot_edges(ops, rep))
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


def render(g, path, format: Optional[str] = None, rankdir: str = "TB", timeout: float = 120.0, collapse=False) -> str:
    """Draw the graph to ``path`` with Graphviz (format from the suffix: svg, png, pdf, ...); not in MPSGraph.

    A ``.dot``/``.gv`` path is written directly, without Graphviz. Returns the path.

    Args:
        path: Where to write; its suffix picks the format unless ``format`` is given.
        format: A Graphviz output format (``svg``, ``png``, ``pdf``, ...).
        rankdir: Graphviz layout direction: ``TB``, ``LR``, ``BT`` or ``RL``.
        timeout: Seconds to wait for Graphviz's ``dot``.
        collapse: As for ``to_dot``: True draws gradient and optimizer scopes as one node each.
    """
    path = os.fspath(path)
    fmt = (format or os.path.splitext(path)[1].lstrip(".")).lower()
    if not fmt:
        raise MiniGraphError(f"render: cannot tell the image format of {path!r}; give a suffix "
                             "(.svg, .png, .pdf) or format=")
    if not _FORMAT.match(fmt):
        raise MiniGraphError(f"render: invalid format {fmt!r}")
    text = to_dot(g, rankdir=rankdir, collapse=collapse)
    return render_dot(text, path, fmt, timeout, f"{len(g.operations)} ops")


def svg_or_none(g, collapse=True) -> Optional[str]:
    """SVG text of the graph through the ``graphviz`` Python package, or None when the package or
    Graphviz's ``dot`` is missing or fails (a notebook then shows the text listing)."""
    try:
        import graphviz  # optional: the viz extra
    except ImportError:
        return None
    try:
        svg = graphviz.Source(to_dot(g, collapse=collapse)).pipe(format="svg", encoding="utf-8")
    except (graphviz.ExecutableNotFound, graphviz.CalledProcessError, subprocess.TimeoutExpired, OSError):
        return None
    return svg if isinstance(svg, str) else None


def mimebundle(g) -> dict:
    """Jupyter's rich display of a graph: ``image/svg+xml`` (gradient and optimizer scopes
    collapsed) when Graphviz is there, and always ``text/plain`` (the listing)."""
    bundle = {"text/plain": g.describe()}
    svg = svg_or_none(g)
    if svg is not None:
        bundle["image/svg+xml"] = svg
    return bundle
