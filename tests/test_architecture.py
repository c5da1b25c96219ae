"""The package's structure: layers that import only downward, one declaration per op, kernel
tables keyed by the op, a generated Graph API that is never stale (docs/architecture.md)."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

import minigraph as mg
from minigraph.backends.numpy import KERNELS as NUMPY_KERNELS
from minigraph.backends.numpy import numpy_kernel
from minigraph.backends.webgpu import KERNELS as WEBGPU_KERNELS
from minigraph.ir import OPS, KernelTable

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "minigraph"

# module (dotted, relative to minigraph) -> layer; a module may import its own layer and below
LAYERS = {
    0: ["types", "errors", "ir", "descriptors", "coerce", "limits", "version", "callsite", "philox", "recording"],
    1: ["ops"],
    2: ["op_builders", "builder"],
    3: ["compiler", "backends", "executable", "listing", "dot", "profiling", "tensor_data"],
    4: ["autodiff", "optimizers", "serialize", "swift", "visualize", "compare", "onnx_ops", "checkpoint", "mobilenet",
        "apple_methods"],
    5: ["graph", "demo", "__init__", "__main__", "onnx_import", "onnx_conformance", "sixblock"],
}


def _layer(module: str) -> int:
    """The layer of ``minigraph.<module>`` (a subpackage's modules share its layer)."""
    head = module.split(".")[0]
    for layer, names in LAYERS.items():
        if head in names:
            return layer
    raise AssertionError(f"minigraph.{module} is in no layer; add it to LAYERS and docs/architecture.md")


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        yield ".".join(parts), path


def _resolve(module: str, path: pathlib.Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The minigraph modules an import statement names (relative to the package root)."""
    if isinstance(node, ast.Import):
        return [a.name[len("minigraph."):] if a.name != "minigraph" else "__init__"
                for a in node.names if a.name == "minigraph" or a.name.startswith("minigraph.")]
    if node.level == 0:
        if node.module and (node.module == "minigraph" or node.module.startswith("minigraph.")):
            base = node.module[len("minigraph."):] if node.module != "minigraph" else ""
        else:
            return []
    else:
        pkg = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        pkg = [] if module == "__init__" else pkg  # the package root
        pkg = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
        base = ".".join(pkg + ([node.module] if node.module else []))
    if base:
        return [base]
    return [a.name for a in node.names]  # from minigraph import x / from . import x


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.Module):
    """(import node, inside a function?) for every import, skipping ``if TYPE_CHECKING:`` blocks."""
    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if _type_checking_block(child):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
    yield from walk(tree, False)


def test_layers_import_only_downward_and_never_inside_a_function():
    upward, lazy = [], []
    for module, path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        mine = _layer(module) if module else 5
        for node, in_function in _imports(tree):
            for target in _resolve(module, path, node):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                if in_function:
                    lazy.append(f"{where} imports minigraph.{target} inside a function")
                if target and _layer(target) > mine:
                    upward.append(f"{where}: layer {mine} imports minigraph.{target} (layer {_layer(target)})")
    assert not upward, "\n".join(upward)
    assert not lazy, "\n".join(lazy)


def _import_graph():
    """networkx DiGraph: minigraph module -> the minigraph modules it imports at run time. ``from X
    import a`` imports the module ``X.a`` where there is one, else the name ``a`` from ``X`` itself;
    importing ``X.a`` first runs the ``__init__`` of each package above it (not those above the
    importer, which are already running)."""
    import networkx as nx

    modules = dict(_modules())
    g = nx.DiGraph()
    for module, path in modules.items():
        me = module or "__init__"
        g.add_node(me)
        mine = {".".join(me.split(".")[:k]) for k in range(1, len(me.split(".")))}
        for node, _ in _imports(ast.parse(path.read_text(), str(path))):
            targets = _resolve(module, path, node)
            froms = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            for target in targets:
                names = froms if froms != targets else []  # (from the package root: the names are the modules)
                subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
                wanted = subs + ([target] if len(subs) < len(names) or not names else [])
                for name in wanted:
                    parts = name.split(".")
                    for k in range(1, len(parts) + 1):
                        dep = ".".join(parts[:k])
                        if dep in modules and dep != me and (dep not in mine or k == len(parts)):
                            g.add_edge(me, dep)
    return g


def _cycles(g) -> list:
    import networkx as nx

    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def test_no_import_cycles_within_a_layer_or_across():
    """Every strongly connected component of the import graph is one module: no two modules
    import each other, directly or through others, even inside one layer."""
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_sees_a_cycle_inside_a_layer():
    g = _import_graph()
    assert "recording" in g and not _cycles(g)
    g.add_edge("backends.numpy.threads", "backends.numpy.registry")  # two modules no other path joins
    g.add_edge("backends.numpy.registry", "backends.numpy.threads")
    assert _cycles(g) == [["backends.numpy.registry", "backends.numpy.threads"]]


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The checker itself: an upward and a lazy import in a made-up layer-0 module are found."""
    src = "from .graph import Graph\n\ndef f():\n    from . import ops\n    return ops\n"
    tree = ast.parse(src)
    found = [(_resolve("types", PKG / "types.py", n), lazy) for n, lazy in _imports(tree)]
    assert found == [(["graph"], False), (["ops"], True)]
    assert _layer("graph") > _layer("types")


_LIST_EDITS = ("insert", "append", "extend", "remove", "pop", "clear")


def test_library_code_never_edits_sys_path_nor_imports_the_benchmarks():
    """The package works installed: it finds nothing through the checkout around it."""
    bad = []
    for module, path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    ast.unparse(node.func.value) == "sys.path" and node.func.attr in _LIST_EDITS:
                bad.append(f"{where}: {ast.unparse(node.func)}")
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AugAssign) else []
            if any(ast.unparse(getattr(t, "value", t)) == "sys.path" or ast.unparse(t) == "sys.path" for t in targets):
                bad.append(f"{where}: assigns sys.path")
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value] if node.value.startswith("benchmarks.") else []
            bad += [f"{where}: imports {n}" for n in names if n == "benchmarks" or n.startswith("benchmarks.")]
    assert not bad, "\n".join(bad)


def test_every_op_declares_its_facts():
    assert len(OPS) >= 60
    for t, d in OPS.items():
        assert d.type == t and d.builder is not None and d.builder.__name__ == t, t
        assert d.kind in ("memory", "view", "compute"), t
        assert d.role in ("forward", "data_gradient", "weights_gradient"), t
        assert d.family and d.swift and d.objc, t
        if d.role != "forward":
            assert d.forward in OPS and OPS[d.forward].role == "forward", t
        assert d.grad is None or d.differentiable, t  # a rule on a non-differentiable op is never used
    assert {t for t, d in OPS.items() if d.internal} == {"placeholder", "constant", "variable", "read", "assign",
                                                        "block_argument"}
    assert {t for t, d in OPS.items() if d.kind == "view"} >= {"reshape", "expand_dims", "squeeze", "identity"}
    roles = {t: d.role for t, d in OPS.items() if d.family == "convolution"}
    assert roles["depthwise_convolution_2d_weights_gradient"] == "weights_gradient"
    assert roles["depthwise_convolution_2d_data_gradient"] == "data_gradient"


def test_no_op_names_listed_by_hand_in_the_package():
    """Facts come from OpDef fields: no tuple of memory-op names, no routing by name suffix."""
    bad = []
    for path in PKG.rglob("*.py"):
        text = path.read_text()
        for needle in ('("placeholder", "constant"', '"_weights_gradient")', '"_data_gradient")',
                       'endswith("_gradient")'):
            if needle in text:
                bad.append(f"{path.relative_to(ROOT)}: {needle}")
    assert not bad, bad


@pytest.mark.parametrize("table", [NUMPY_KERNELS, WEBGPU_KERNELS], ids=["numpy", "webgpu"])
def test_kernel_tables_refuse_a_second_registration(table):
    before = table.get("addition")
    with pytest.raises(mg.RegistrationError, match="'addition' registered twice"):
        table.register("addition")(lambda *a: None)
    assert table.get("addition") is before
    with pytest.raises(mg.RegistrationError, match="not a declared op"):
        table.register("no_such_op")(lambda *a: None)


def test_kernels_are_keyed_by_the_opdef():
    table = KernelTable("test")
    table.register(OPS["tanh"])(factory := (lambda step: None))
    assert table.get("tanh") is factory and table.get(OPS["tanh"]) is factory and "tanh" in table
    assert list(table) == ["tanh"]
    with table.replaced("tanh", None):
        assert "tanh" not in table
    assert table.get("tanh") is factory
    table.unregister("tanh")
    assert "tanh" not in table
    assert numpy_kernel == NUMPY_KERNELS.register


def test_every_non_internal_op_has_a_kernel_in_each_backend():
    for t, d in OPS.items():
        if d.internal:
            continue
        assert t in NUMPY_KERNELS, f"{t} has no NumPy kernel"
        assert t in WEBGPU_KERNELS or d.kind == "view", f"{t} has no WGSL kernel"


def test_declaring_an_op_twice_is_refused():
    from minigraph.ops.registry import defop

    with pytest.raises(mg.RegistrationError, match="'addition' declared twice"):
        defop("addition", swift="-", objc="-", inputs=(), infer=lambda ts, a: [], family="misc")(lambda g: None)


def test_generated_builders_are_up_to_date():
    r = subprocess.run([sys.executable, "scripts/gen_builders.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_graph_has_one_method_per_op_with_its_declared_signature():
    import inspect

    for t, d in OPS.items():
        method = getattr(mg.Graph, t)
        want = list(inspect.signature(d.builder).parameters)[1:]
        assert list(inspect.signature(method).parameters)[1:] == want, t
        assert d.swift.split("(")[0] in (method.__doc__ or ""), t


def test_package_exports_all_and_every_name_resolves():
    assert "Graph" in mg.__all__ and "load" in mg.__all__
    for name in mg.__all__:
        assert hasattr(mg, name), name


def _tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.slow  # .ci/run also runs mypy directly
def test_mypy_reports_nothing_on_the_package():
    pytest.importorskip("mypy", reason="needs mypy, in the test extra: pip install -e '.[test]'")
    r = _tool("mypy", "minigraph")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow  # .ci/run also runs mypy directly
def test_mypy_reports_nothing_on_the_code_blocks_of_the_docs():
    pytest.importorskip("mypy", reason="needs mypy, in the test extra: pip install -e '.[test]'")
    r = subprocess.run([sys.executable, "scripts/typecheck_docs.py"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_reports_nothing():
    pytest.importorskip("ruff", reason="needs ruff, in the test extra: pip install -e '.[test]'")
    r = _tool("ruff", "check", "minigraph", "scripts", "benchmarks", "tests")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_compiler_names_no_op_but_the_memory_ops():
    """Which kernels may write in place or return new buffers is declared where each kernel
    registers (``KernelTable.register``); the compiler names only the ops the executor handles
    itself (and ``cast``, whose cast to its own dtype is a view)."""
    allowed = {t for t, d in OPS.items() if d.internal} | {"cast"}
    named = set()
    for path in (PKG / "compiler").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in OPS:
                named.add(node.value)
    assert named and named <= allowed, sorted(named - allowed)
