#!/usr/bin/env python3
"""Generate docs/reference.md from the op registry (``minigraph.ops.OPS``).

Usage::

    python3 scripts/gen_reference.py           # rewrite docs/reference.md
    python3 scripts/gen_reference.py --check   # exit 1 if docs/reference.md is out of date

The table is a pure function of the code: op declarations (MPSGraph names, inputs,
attributes, gradient rule) and each backend's kernel table, read without starting a device.
``tests/test_docs.py`` fails when the committed file differs from this output.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "reference.md")
APPLE_LIST = os.path.join(ROOT, "docs", "apple-mpsgraph-methods.txt")

# Categories in reading order; any category not listed follows, alphabetically.
CATEGORY_ORDER = ["memory", "arithmetic", "comparison", "activation", "reduction", "matmul",
                  "shape", "convolution", "depthwise", "pooling", "normalization", "loss",
                  "optimizer", "misc"]


def _numpy_kernels() -> set:
    """Op types with a NumPy kernel, or that the executor runs itself."""
    from minigraph.backends.numpy import KERNELS
    from minigraph.ir import OPS

    return set(KERNELS) | {t for t, d in OPS.items() if d.internal}


def _webgpu_kernels() -> "set | None":
    """Op types the webgpu backend can run, from its kernel table, without an adapter.

    ``WebGPUBackend.supported_ops()`` only imports the kernel modules (no wgpu call), so the
    column is the same on a machine with no GPU. None when the backend is not in this checkout.
    """
    if importlib.util.find_spec("minigraph.backends.webgpu") is None:
        return None
    try:
        from minigraph.backends.webgpu.backend import WebGPUBackend
    except ImportError:  # the package exists but its backend module does not (yet)
        return None
    return set(WebGPUBackend().supported_ops())


def _builder_call(opdef) -> str:
    sig = inspect.signature(opdef.builder)
    params = list(sig.parameters.values())[1:]  # drop g
    parts, star = [], False
    for p in params:
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            star = True
        elif p.default is p.empty:
            parts.append(p.name)
        else:
            d = p.default
            parts.append(f"{p.name}={d.name if hasattr(d, 'np_dtype') else repr(d)}")
    return f"g.{opdef.builder.__name__}({', '.join(parts)})"


def _gradient(opdef) -> str:
    if not opdef.inputs:
        return "leaf"
    if not opdef.differentiable:
        return "**no**"
    if opdef.grad is not None:
        return "yes"
    return "MISSING"  # neither a rule nor declared not differentiable: a registry defect


def _kernel(opdef, table) -> str:
    if opdef.internal:
        return "executor"
    if table is None:
        return "n/a"
    return "yes" if opdef.type in table else "—"


APPLE_DOCS = "https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"

# Ops whose Swift name is what they export to, not an MPSGraph op of their own
NO_COUNTERPART = {"stop_gradient": "no MPSGraph counterpart; `g.to_swift()` writes an identity",
                  "block_argument": "no MPSGraph counterpart; `g.to_swift()` writes a parameter of the block's closure"}


def _apple_link(opdef) -> str:
    """The Swift name, linked to its page on Apple's documentation site: the page path is the
    method's Swift signature in lower case (``.../mpsgraph/reductionsum(with:axes:name:)``)."""
    if opdef.type in NO_COUNTERPART or not opdef.swift:
        note = NO_COUNTERPART.get(opdef.type, "no MPSGraph counterpart")
        return f"`{_esc(opdef.swift)}`: {note}" if opdef.swift else note
    return f"[`{_esc(opdef.swift)}`]({APPLE_DOCS}{opdef.swift.lower()})"


def _esc(s: str) -> str:
    return s.replace("|", "\\|")


def _first_line(doc) -> str:
    return inspect.cleandoc(doc or "").split("\n\n")[0].replace("\n", " ").strip()


_KIND_PREFIX = {"form": "another form: ", "graph": "graph API"}


def _apple_methods(OPS) -> list:
    """The section with one row per method on Apple's list: minigraph's op or ``Graph`` method
    for it, or why there is none."""
    from minigraph.apple_methods import apple_url, counts, read_method_list, table

    selectors = read_method_list(APPLE_LIST)
    rows = table(selectors)
    n = counts(rows)
    out = ["## Apple's MPSGraph methods", "",
           f"Every instance method on [Apple's MPSGraph class page]({APPLE_DOCS.rstrip('/')}), as listed in "
           "`docs/apple-mpsgraph-methods.txt` (names only; its header gives the source), with minigraph's op or "
           "`Graph` method for it, or the reason there is none. Rows are derived from the ops' Swift names "
           "(an op's own method, shorter forms whose missing arguments are builder defaults, single-axis and "
           "tensor-argument forms) plus the explicit entries in `minigraph/apple_methods.py`.", "",
           f"{len(selectors)} methods: {n['op'] + n['form']} covered by an op ({n['op']} under the op's own "
           f"Swift name, {n['form']} other forms of it), {n['tensor']} tensor-argument forms, {n['graph']} graph "
           f"API, {n['metal']} Metal-only, {n['none']} no op yet"
           + (f", {len(selectors) - len(rows)} not accounted for" if len(rows) < len(selectors) else "") + ".", "",
           "| Apple's method | minigraph | why |", "|---|---|---|"]
    for s in selectors:
        row = rows.get(s)
        if row is None:
            out.append(f"| [`{_esc(s)}`]({apple_url(s)}) | — | **not accounted for** |")
            continue
        if row.name is None:
            name = "—"
        elif row.name.startswith("g."):
            name = f"`{row.name}`"
        else:
            name = f"`g.{OPS[row.name].builder.__name__}`"
        prefix = _KIND_PREFIX.get(row.kind, "")
        why = prefix + (": " if prefix and row.reason and not prefix.endswith(" ") else "") + row.reason
        out.append(f"| [`{_esc(s)}`]({apple_url(s)}) | {name} | {_esc(why)} |")
    out.append("")
    return out


def render() -> str:
    import minigraph  # noqa: F401  (registers every op)
    from minigraph.graph import Graph
    from minigraph.ops.registry import OPS

    npk = _numpy_kernels()
    wgk = _webgpu_kernels()
    cats = sorted({d.family for d in OPS.values()},
                  key=lambda c: (CATEGORY_ORDER.index(c) if c in CATEGORY_ORDER else len(CATEGORY_ORDER), c))
    out = [
        "# Op reference",
        "",
        "<!-- GENERATED by scripts/gen_reference.py from the op registry; do not edit by hand.",
        "     Regenerate with: python3 scripts/gen_reference.py -->",
        "",
        f"{len(OPS)} op types, each declared once in `minigraph/ops/` (see [the tour](index.md)). "
        "For each: the Python builder (a `Graph` method), the MPSGraph Swift name and Objective-C "
        "selector it mirrors (the Swift name links to the op's page on Apple's documentation "
        "site; an op without an MPSGraph counterpart says so), its tensor inputs and attributes, "
        "whether `g.gradients` can go "
        "through it ([autodiff](autodiff.md)), and which backends have a kernel for it "
        "([backends](backends.md)).",
        "",
        "Legend. *differentiable*: `yes` = a gradient rule is registered; `**no**` = declared not "
        "differentiable (autodiff raises `NotDifferentiableError` naming the op if it lies on the "
        "path); `leaf` = no inputs (gradients stop here). *kernel* columns, one per backend: `yes` = the backend has a "
        "kernel; `—` = it has none (compiling a graph that needs it raises `KernelMissingError`); "
        "`executor` = placeholders, constants and variables are handled by the executor, not by "
        "kernels; `n/a` = the backend is not in this checkout. The `metal` backend is the `webgpu` "
        "backend pinned to a Metal adapter, so its column repeats the `webgpu` one (it runs only on macOS). "
        "*since*: the first macOS / iOS whose MPSGraph has the op, from Apple's documentation "
        "(`g.to_swift()` names the newest one a graph needs in its header).",
        "",
    ]
    for cat in cats:
        ops = sorted((d for d in OPS.values() if d.family == cat), key=lambda d: d.type)
        out += [f"## {cat}", "",
                "| Python builder | MPSGraph (Swift) | Objective-C selector | inputs | attributes "
                "| differentiable | numpy kernel | webgpu kernel | metal kernel | since (macOS / iOS) |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for d in ops:
            out.append("| " + " | ".join([
                f"`{_esc(_builder_call(d))}`",
                _apple_link(d),
                f"`{_esc(d.objc)}`",
                ", ".join(d.inputs) or "—",
                ", ".join(d.attrs) or "—",
                _gradient(d),
                _kernel(d, npk),
                _kernel(d, wgk),
                _kernel(d, wgk),  # metal = the webgpu kernels on a Metal adapter
                f"{d.since[0]} / {d.since[1]}",
            ]) + " |")
        out.append("")

    builders = {d.builder.__name__ for d in OPS.values()}
    others = sorted(n for n in dir(Graph) if not n.startswith("_") and n not in builders
                    and callable(getattr(Graph, n)))
    out += ["## Other `Graph` methods", "",
            "Methods that are not single registered ops (they build several ops, look things up, "
            "or compile and run).", "",
            "| method | what it does |", "|---|---|"]
    for n in others:
        out.append(f"| `g.{n}` | {_esc(_first_line(getattr(Graph, n).__doc__))} |")
    out.append("")
    out += _apple_methods(OPS)
    return "\n".join(out)


def main(argv: list) -> int:
    sys.path.insert(0, ROOT)
    text = render()
    if "--check" in argv:
        try:
            with open(OUT, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            print("docs/reference.md is out of date; run: python3 scripts/gen_reference.py", file=sys.stderr)
            return 1
        return 0
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(OUT, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
