"""The docs cannot drift from the code.

1. Every ```python block in docs/*.md and README.md runs, in order, one namespace per file, in a
   temporary working directory. A ```output block right after a python block must equal what
   that block printed. ```python no-run blocks are skipped (the escape hatch; use sparingly).
2. docs/reference.md equals what scripts/gen_reference.py generates from the op registry.
3. Every public name has a docstring (Google style, one style); every op builder's docstring
   names its MPSGraph Swift name.
4. Relative links between the pages resolve, and docs/index.md links every page.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path

import pytest

import minigraph as mg
from minigraph.graph import Graph
from minigraph.ops.registry import OPS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + ([ROOT / "README.md"] if (ROOT / "README.md").exists() else [])


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_minigraph_docs_{name}", ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


docblocks = _load("docblocks")


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_code_blocks_run(page):
    """Run a page's python blocks like a reader would: top to bottom, one namespace, and check
    every pasted ```output block against what its block prints."""
    try:
        docblocks.run_page(str(page))
        problem = None
    except docblocks.DocBlockError as e:
        problem = str(e).replace(str(ROOT) + os.sep, "")
    if problem:
        pytest.fail(problem, pytrace=False)


def test_block_parser():
    text = "x\n```python\nprint(1)\n```\n```output\n1\n```\n```python no-run\nboom()\n```\n"
    a, b = docblocks.parse_blocks(text)
    assert (a.lang, a.line, a.code, a.expected, a.out_span) == ("python", 3, "print(1)\n", "1\n", (5, 6))
    assert (b.lang, b.info) == ("python", "no-run")


def test_output_mismatch_is_caught(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```python\nprint(6 * 7)\n```\n```output\n41\n```\n", encoding="utf-8")
    with pytest.raises(docblocks.DocBlockError, match="p.md:2"):
        docblocks.run_page(str(page))
    assert docblocks.write_outputs(str(page)) == 1
    assert "```output\n42\n```" in page.read_text(encoding="utf-8")
    docblocks.run_page(str(page))


def test_reference_is_up_to_date():
    want = _load("gen_reference").render()
    have = (DOCS / "reference.md").read_text(encoding="utf-8") if (DOCS / "reference.md").exists() else ""
    assert have == want, ("docs/reference.md is out of date with the op registry; regenerate it with\n"
                          "    python3 scripts/gen_reference.py\nand commit the result")


def test_reference_has_no_missing_gradient_declaration():
    """Each op either has a gradient rule or is declared not differentiable (or has no inputs)."""
    bad = sorted(t for t, d in OPS.items() if d.inputs and d.differentiable and d.grad is None)
    assert not bad, (f"ops with inputs but neither a gradient rule nor differentiable=False: {bad}; "
                     "register @gradient(type) or declare differentiable=False")


def _public_api():
    names = getattr(mg, "__all__", None) or [n for n in dir(mg) if not n.startswith("_")]
    for n in names:
        obj = getattr(mg, n)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield n, obj


def test_public_names_have_docstrings():
    missing = [n for n, obj in _public_api() if not (obj.__doc__ or "").strip()]
    for cls_name, cls in _public_api():
        if not inspect.isclass(cls) or issubclass(cls, BaseException):
            continue
        for attr, member in vars(cls).items():
            if attr.startswith("_"):
                continue
            if isinstance(member, property) or inspect.isfunction(member):
                # getdoc inherits: an override of a documented method needs no copy of the text
                if not (inspect.getdoc(getattr(cls, attr)) if inspect.isfunction(member)
                        else inspect.getdoc(member)):
                    missing.append(f"{cls_name}.{attr}")
    assert not missing, f"public names without a docstring: {missing}"


def test_graph_methods_have_docstrings():
    missing = []
    for n in dir(Graph):
        if n.startswith("_"):
            continue
        member = inspect.getattr_static(Graph, n)
        if isinstance(member, (property, staticmethod, classmethod)) or inspect.isfunction(member):
            fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
            if not (fn.__doc__ or "").strip():
                missing.append(n)
    assert not missing, f"Graph methods without a docstring: {missing}"


def test_op_builders_name_their_mpsgraph_equivalent():
    bad = [f"{d.builder.__module__}.{d.builder.__name__}: needs {d.swift!r}"
           for d in OPS.values() if d.swift not in (d.builder.__doc__ or "")]
    assert not bad, ("op builder docstrings must name the MPSGraph Swift method they mirror "
                     "(the `swift=` of their @defop), e.g. ``addition(_:_:name:)``:\n" + "\n".join(bad))


_OTHER_STYLES = re.compile(r":param |:returns?:|:rtype:|^\s*(Parameters|Returns|Raises)\n\s*-{3,}", re.M)


def test_docstrings_use_one_style():
    """Google style only (``Args:``/``Returns:``/``Raises:``), never reST fields or numpydoc."""
    import ast

    bad = []
    for path in sorted((ROOT / "minigraph").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc and _OTHER_STYLES.search(doc):
                    bad.append(f"{_rel(path)}:{getattr(node, 'lineno', 1)}")
    assert not bad, f"docstrings in numpydoc/reST style (use Google style: Args:, Returns:): {bad}"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page):
    bad = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if path and not (page.parent / path).exists():
            bad.append(target)
    assert not bad, f"{_rel(page)} links to missing files: {bad}"


def test_index_links_every_page():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = {t.split("#")[0] for t in _LINK.findall(index)}
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if p.name != "index.md" and p.name not in linked]
    assert not missing, f"docs/index.md does not link these pages: {missing}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))

