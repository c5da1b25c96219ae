"""Docstring conventions: every public name and member has a docstring, in one style (Google:
``Args:``/``Returns:``/``Raises:``) that names each parameter, and says what it is in MPSGraph
(op builders name their Swift method)."""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import minigraph as mg
from minigraph.graph import Graph
from minigraph.ops.registry import OPS

ROOT = Path(__file__).resolve().parent.parent


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _public_objects():
    """(name, object) for the public classes and functions of ``minigraph``."""
    for n in sorted(getattr(mg, "__all__", None) or dir(mg)):
        if n.startswith("_"):
            continue
        o = getattr(mg, n)
        if inspect.isclass(o) or inspect.isfunction(o) or inspect.ismethod(o):
            yield n, o


def _own_docstrings_missing():
    """Public names without a docstring of their own, and members defined on a public class without
    one (an override of a documented method inherits its text)."""
    missing = [n for n, obj in _public_objects() if not (obj.__doc__ or "").strip()]
    for cls_name, cls in _public_objects():
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
    return missing


def _core_members_missing():
    """Public names, and every public callable or property of the core classes, without a docstring."""
    missing = [n for n, o in _public_objects() if not (inspect.getdoc(o) or "").strip()]
    for cls in (mg.Graph, mg.Tensor, mg.Operation, mg.Executable, mg.ShapedType, mg.DataType):
        for n, m in inspect.getmembers(cls):
            if n.startswith("_"):
                continue
            if callable(m) or isinstance(inspect.getattr_static(cls, n), property):
                if not (inspect.getdoc(m) or "").strip():
                    missing.append(f"{cls.__name__}.{n}")
    return missing


def test_public_names_have_docstrings():
    missing = _own_docstrings_missing() + _core_members_missing()
    assert not missing, f"public names without a docstring: {missing}"


def test_every_member_of_every_public_class_has_a_docstring():
    """Inherited members too (a descriptor's ``copy``/``as_dict`` come from a private base)."""
    missing = []
    for cn, cls in _public_objects():
        if not inspect.isclass(cls) or issubclass(cls, BaseException):
            continue
        for n, _ in inspect.getmembers(cls):
            if n.startswith("_"):
                continue
            st = inspect.getattr_static(cls, n)
            if isinstance(st, (property, staticmethod, classmethod)) or inspect.isfunction(st):
                if not (inspect.getdoc(getattr(cls, n)) or "").strip():
                    missing.append(f"{cn}.{n}")
    assert not missing, missing


def test_graph_methods_have_docstrings_naming_their_mpsgraph_equivalent():
    """Every public Graph member has a docstring of its own; every public Graph method's docstring
    mentions MPSGraph (its equivalent, or that it has none) or a Swift-style camelCase call."""
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
    bad = []
    for n in dir(mg.Graph):
        if n.startswith("_"):
            continue
        doc = inspect.getdoc(getattr(mg.Graph, n)) or ""
        if "MPSGraph" not in doc and not re.search(r"\b[a-z]+[A-Z]\w*\(", doc):
            bad.append(n)
    assert not bad, bad


def test_op_builders_name_their_mpsgraph_equivalent():
    bad = [f"{d.builder.__module__}.{d.builder.__name__}: needs {d.swift!r}"
           for d in OPS.values() if d.swift not in (d.builder.__doc__ or "")]
    assert not bad, ("op builder docstrings must name the MPSGraph Swift method they mirror "
                     "(the `swift=` of their @defop), e.g. ``addition(_:_:name:)``:\n" + "\n".join(bad))
    g = mg.Graph()  # and so do the Graph methods that call them
    for t, d in OPS.items():
        doc = inspect.getdoc(getattr(g, d.builder.__name__)) or ""
        assert d.swift.split("(")[0] in doc, (t, d.swift)


def test_public_classes_and_functions_mention_mpsgraph():
    bad = [n for n, o in _public_objects() if "MPSGraph" not in (inspect.getdoc(o) or "")]
    assert not bad, bad


def test_public_callables_with_parameters_document_them_google_style():
    """Google style: a public function or method that takes parameters has an ``Args:`` section
    naming each of them."""
    bad = []

    def check(label, f):
        try:
            params = [p for p in inspect.signature(f).parameters if p not in ("self", "g", "cls")]
        except (TypeError, ValueError):
            return
        doc = inspect.getdoc(f) or ""
        if params and ("Args:" not in doc or any(not re.search(rf"^\s+{p}( \(|:)", doc, re.M) for p in params
                                                  if not p.startswith("*"))):
            bad.append(label)

    for n, o in _public_objects():
        if inspect.isfunction(o):
            check(n, o)
        elif inspect.isclass(o) and not issubclass(o, BaseException):
            for m, v in vars(o).items():
                if not m.startswith("_") and inspect.isfunction(v):
                    check(f"{n}.{m}", getattr(o, m))
    for n in dir(mg.Graph):
        if not n.startswith("_") and callable(getattr(mg.Graph, n)):
            check(f"Graph.{n}", getattr(mg.Graph, n))
    assert not bad, bad


_OTHER_STYLES = re.compile(r":param |:returns?:|:rtype:|^\s*(Parameters|Returns|Raises)\n\s*-{3,}", re.M)


def _styles_used(doc):
    styles = set()
    if re.search(r"^\s*(Args|Returns|Raises):\s*$", doc, re.M):
        styles.add("google")
    if re.search(r"^\s*(Parameters|Returns)\n\s*-{3,}", doc, re.M):
        styles.add("numpydoc")
    if re.search(r":param \w+:|:returns?:", doc):
        styles.add("rest")
    return styles


def test_docstrings_use_one_style():
    """Google style only (``Args:``/``Returns:``/``Raises:``), never reST fields or numpydoc."""
    bad, styles = [], set()
    for path in sorted((ROOT / "minigraph").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc and _OTHER_STYLES.search(doc):
                    bad.append(f"{_rel(path)}:{getattr(node, 'lineno', 1)}")
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                styles |= _styles_used(ast.get_docstring(node) or "")
    assert not bad, f"docstrings in numpydoc/reST style (use Google style: Args:, Returns:): {bad}"
    assert len(styles) <= 1, styles
