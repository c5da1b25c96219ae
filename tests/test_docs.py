"""The docs cannot drift from the code, and say what they promise.

1. Every ```python block in docs/*.md and README.md runs, in order, one namespace per file, in a
   temporary working directory. A ```output block right after a python block must equal what
   that block printed. ```python no-run blocks are skipped (the escape hatch; use sparingly).
   A second, minimal runner written here runs every block too.
2. docs/reference.md equals what scripts/gen_reference.py generates from the op registry, and is
   a table with every op's Python, Swift and Objective-C names.
3. Relative links between the pages resolve, and docs/index.md links every page.
4. The named pages exist, are committed, and cover their topics (the tour, graphs, the depthwise
   family with its padding styles and pictures, autodiff, backends, performance, reliability).

Docstring conventions are checked in test_docstrings.py.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigraph as mg
from minigraph import apple_methods as am
from minigraph.ir import OpDef
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


# the optional packages a docs block may import, and the extra of pyproject.toml that brings each
OPTIONAL = {"torch": "oracles", "jax": "oracles", "scipy": "oracles", "safetensors": "oracles",
            "onnxruntime": "oracles", "onnxscript": "oracles", "onnx": "onnx", "wgpu": "webgpu",
            "graphviz": "viz", "matplotlib": "test"}


def skip_without_optional_packages(page: Path) -> None:
    """A page whose blocks import an optional package that is not installed is skipped, naming the
    extra; the core-only install runs every other page."""
    code = "".join(_python_blocks(page.read_text(encoding="utf-8")))
    for mod in sorted(set(re.findall(r"^\s*(?:import|from)\s+(\w+)", code, re.M)) & OPTIONAL.keys()):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{_rel(page)} imports {mod}: pip install -e '.[{OPTIONAL[mod]}]'")


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_code_blocks_run(page):
    """Run a page's python blocks like a reader would: top to bottom, one namespace, and check
    every pasted ```output block against what its block prints."""
    skip_without_optional_packages(page)
    try:
        docblocks.run_page(str(page))
        problem = None
    except docblocks.DocBlockError as e:
        problem = str(e).replace(str(ROOT) + os.sep, "")
    if problem:
        pytest.fail(problem, pytrace=False)


def _python_blocks(text):
    return re.findall(r"^```python[^\n]*\n(.*?)^```", text, re.M | re.S)


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_python_block_runs_with_an_independent_runner(page, tmp_path, monkeypatch):
    """A small runner of our own (not the project's): each page top to bottom, one namespace."""
    skip_without_optional_packages(page)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    text = page.read_text(encoding="utf-8")
    blocks = _python_blocks(text)
    if page.name in ("index.md", "graphs.md", "depthwise.md", "autodiff.md", "backends.md", "README.md"):
        assert blocks, f"{page.name} has no python code block"
    if page.name == "README.md":  # the README's example, as written, on its own
        first = re.findall(r"```python\n(.*?)```", text, re.S)
        assert first
        exec(compile(first[0], "README.md", "exec"), {})
    ns = {"__name__": "__doc_check__"}
    saved = np.get_printoptions()
    try:
        for i, code in enumerate(blocks):
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    exec(compile(code, f"{page.name}[block {i}]", "exec"), ns)
                except Exception as e:  # pragma: no cover - the failure message
                    pytest.fail(f"{page.name} block {i} raised {type(e).__name__}: {e}\n{code}")
    finally:
        np.set_printoptions(**saved)


def _parametrized_pages(test) -> set:
    (mark,) = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize" and m.args[0] == "page"]
    return {Path(p).resolve() for p in mark.args[1]}


def test_the_suite_executes_the_doc_blocks():
    """Every page with a python block, found here afresh (docs/, at any depth, and README.md), is a
    parameter of both runners' tests, and the project's runner sees each of its blocks."""
    found = {Path(dirpath, f).resolve() for dirpath, _, files in os.walk(DOCS) for f in files if f.endswith(".md")}
    found.add((ROOT / "README.md").resolve())
    with_blocks = {p for p in found if re.search(r"^```python", p.read_text(encoding="utf-8"), re.M)}
    assert {"index.md", "graphs.md", "README.md"} <= {p.name for p in with_blocks}
    for test in (test_code_blocks_run, test_every_python_block_runs_with_an_independent_runner):
        missing = sorted(_rel(p) for p in with_blocks - _parametrized_pages(test))
        assert not missing, f"{test.__name__} does not run the blocks of {missing}"
    for page in with_blocks:
        text = page.read_text(encoding="utf-8")
        seen = [b for b in docblocks.parse_blocks(text) if b.lang == "python"]
        assert len(seen) == len(re.findall(r"^```python", text, re.M)) == len(_python_blocks(text)), _rel(page)


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
    # the generator's --check passes on the committed file; a stale copy would differ
    r = subprocess.run([sys.executable, "scripts/gen_reference.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    stale = want.replace("| yes |", "| **no** |", 1)
    assert stale != want


def test_reference_is_a_table_with_the_named_columns():
    text = _read("reference.md")
    headers = [h.strip().lower() for h in re.findall(r"^\|(.+)\|$", text, re.M)[0].split("|")]
    joined = " ".join(headers)
    for col in ("python", "swift", "objective-c", "inputs", "attributes", "differentiable", "numpy", "webgpu",
                "metal", "kernel"):
        assert col in joined, (col, headers)
    assert re.search(r"generated", text, re.I)


def test_reference_lists_every_registered_op_with_its_names():
    text = _read("reference.md")
    for t, d in OPS.items():
        assert f"g.{d.builder.__name__}(" in text or f"`{t}" in text, t
        assert d.swift in text, (t, d.swift)
        if d.objc:
            assert d.objc in text, (t, d.objc)


APPLE_MPSGRAPH = "https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"


def test_reference_links_every_op_to_apples_page_or_says_there_is_none():
    """Each op's row links its Swift name to Apple's page for it (the page path is the Swift
    signature in lower case, as on developer.apple.com), or says it has no MPSGraph counterpart."""
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `g\.(\w+)\(.*$", _read("reference.md"), re.M)}
    for t, d in OPS.items():
        row = rows[d.builder.__name__]
        cell = row.split(" | ")[1]
        if "no MPSGraph counterpart" in cell:
            assert "](" not in cell, row
            continue
        assert cell == f"[`{d.swift}`]({APPLE_MPSGRAPH}{d.swift.lower()})", (t, cell)
    # pages as Apple's site names them
    text = _read("reference.md")
    for page in ("absolute(with:name:)", "depthwiseconvolution2dweightsgradient(_:source:outputshape:descriptor:name:)",
                 "maxpooling2dgradient(withgradienttensor:sourcetensor:descriptor:name:)",
                 "softmaxcrossentropy(_:labels:axis:reuctiontype:name:)"):
        assert f"]({APPLE_MPSGRAPH}{page})" in text, page
    assert "no MPSGraph counterpart" in rows["stop_gradient"]


# --- Apple's MPSGraph method list (docs/apple-mpsgraph-methods.txt) against the reference ---------

APPLE_LIST = DOCS / "apple-mpsgraph-methods.txt"


def _apple_selectors() -> list:
    return am.read_method_list(APPLE_LIST)


def test_apple_method_list_is_the_class_pages_instance_methods():
    """The checked-in copy names its source and holds every instance method once, in Apple's
    (case-sensitive) order, including the ones declared in categories."""
    header = [x for x in APPLE_LIST.read_text(encoding="utf-8").splitlines() if x.startswith("#")]
    assert header and "Averyy/apple-dev-docs" in header[0] and "mpsgraph.md" in header[0], header[:1]
    assert re.search(r"commit [0-9a-f]{40}", header[0]), header[0]
    assert APPLE_MPSGRAPH.rstrip("/") in header[0], header[0]
    sel = _apple_selectors()
    assert len(sel) == 390, len(sel)
    assert len(set(sel)) == len(sel), sorted({s for s in sel if sel.count(s) > 1})
    assert sel == sorted(sel)
    for s in sel:
        am.split_selector(s)  # each line is a Swift selector
    for s in ("if(_:then:else:name:)", "while(initialInputs:before:after:name:)",
              "fastFourierTransform(_:axes:descriptor:name:)", "quantize(_:scale:zeroPoint:dataType:name:)",
              "sparseTensor(sparseTensorWithType:tensors:shape:dataType:name:)",
              "stencil(withSourceTensor:weightsTensor:descriptor:name:)", "GRU(_:recurrentWeight:inputWeight:bias:descriptor:name:)",
              "compile(with:feeds:targetTensors:targetOperations:compilationDescriptor:)"):
        assert s in sel, s


def test_every_apple_method_is_accounted_for():
    """Each method on Apple's list maps to an op, another form of one, a Graph method, a
    Metal-only reason or "no op yet"; the failure names the ones nothing accounts for."""
    rows = am.table(_apple_selectors())
    missing = [s for s in _apple_selectors() if s not in rows]
    assert not missing, ("Apple methods with no row in minigraph/apple_methods.py (declare the op with "
                         "swift=, or add an EXPLICIT entry: a form, graph API, Metal-only or no op yet):\n  "
                         + "\n  ".join(missing))
    for s, row in rows.items():
        assert row.kind in am.KINDS, (s, row)
        assert row.kind in ("op", "graph") or row.reason, (s, row)
        if row.kind in ("op", "form", "tensor"):
            assert row.name in OPS, (s, row)
        elif row.kind == "graph":
            assert row.name.startswith("g.") and callable(getattr(mg.Graph, row.name[2:], None)), (s, row)
        else:
            assert row.name is None, (s, row)
        if row.kind == "none":
            assert row.reason.startswith(am.NO_OP), (s, row)
        if row.kind == "tensor":
            assert row.reason.startswith(am.TENSOR_REASON), (s, row)
    assert not [s for s, row in rows.items() if row.kind == "none"], "every Apple method has an op or a reason"


def test_every_ops_swift_name_is_on_apples_list():
    """An op's swift= names a method on Apple's page (a typo would be a link to no page); the
    compiler's internal ops (block_argument: a closure's parameter in Swift) have no method."""
    apple = {am.strip_suffix(s) for s in _apple_selectors()}
    bad = sorted((t, d.swift) for t, d in OPS.items() if d.swift and not d.internal and d.swift not in apple)
    assert not bad, f"swift= names not on Apple's MPSGraph page: {bad}"
    rows = am.table(_apple_selectors())
    for t, d in OPS.items():
        if d.swift and not d.internal and t not in am.EXPORT_ONLY:
            assert any(r.name == t for r in rows.values()), t


def test_explicit_apple_entries_name_methods_on_the_list():
    sel = set(_apple_selectors())
    stale = sorted(s for s in am.EXPLICIT if s not in sel)
    assert not stale, f"EXPLICIT entries for methods not on Apple's list: {stale}"


def test_a_declared_op_replaces_no_op_yet_with_its_forms(monkeypatch):
    """The rows come from the registry: declaring an op that names a method makes that method,
    its shorter form and its tensor-argument forms covered, without editing the table (here
    without the op, its methods marked "no op yet" as they once were)."""
    sel = _apple_selectors()
    forms = ["cumulativeProduct(_:axis:exclusive:reverse:name:)", "cumulativeProduct(_:axis:name:)",
             "cumulativeProduct(_:axisTensor:exclusive:reverse:name:)", "cumulativeProduct(_:axisTensor:name:)"]
    for s in forms:
        monkeypatch.setitem(am.EXPLICIT, s, am._none())
    without = {t: d for t, d in OPS.items() if not d.swift.startswith("cumulativeProduct(")}
    assert [am.table(sel, without)[s].kind for s in forms] == ["none"] * 4

    def cumulative_product(g, tensor, axis, exclusive=False, reverse=False, name=None):
        raise AssertionError("not built")

    fake = OpDef(type="cumulative_product", swift=forms[0], objc="", inputs=("tensor",),
                 infer=lambda ts, attrs: ts, builder=cumulative_product)
    rows = am.table(sel, {**without, "cumulative_product": fake})
    assert [rows[s].kind for s in forms] == ["op", "form", "tensor", "tensor"], [rows[s] for s in forms]
    assert {rows[s].name for s in forms} == {"cumulative_product"}
    assert "`exclusive=False`, `reverse=False`" in rows[forms[1]].reason


def test_reference_has_a_row_for_every_apple_method():
    """docs/reference.md lists each method on Apple's list, linked to Apple's page for it, with
    the counts."""
    text = _read("reference.md")
    section = text.split("## Apple's MPSGraph methods", 1)[1]
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| \[`([^`]+)`\]\((\S+)\) \|.*$", section, re.M)}
    sel = _apple_selectors()
    missing = [s for s in sel if s not in rows]
    assert not missing, f"methods on Apple's list without a row in docs/reference.md: {missing}"
    assert len(rows) == len(sel)
    for s in sel:
        assert f"]({APPLE_MPSGRAPH}{s.lower()}) |" in rows[s], rows[s]
        assert "not accounted for" not in rows[s], rows[s]
    n = am.counts(am.table(sel))
    assert (f"{len(sel)} methods: {n['op'] + n['form']} covered by an op ({n['op']} under the op's own Swift name, "
            f"{n['form']} other forms of it), {n['tensor']} tensor-argument forms") in section
    assert rows["gradients(of:with:name:)"].endswith("| `g.gradients` | graph API |")
    assert "| `g.arg_sort` | another form: the op with `descending=False` |" in rows["argSort(_:axis:name:)"]


def test_reference_has_no_missing_gradient_declaration():
    """Each op either has a gradient rule or is declared not differentiable (or has no inputs)."""
    bad = sorted(t for t, d in OPS.items() if d.inputs and d.differentiable and d.grad is None)
    assert not bad, (f"ops with inputs but neither a gradient rule nor differentiable=False: {bad}; "
                     "register @gradient(type) or declare differentiable=False")


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


# ----------------------------------------------------------------------------- what the pages say
def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _tracked(path: Path) -> bool:
    r = subprocess.run(["git", "ls-files", "--error-unmatch", str(path.relative_to(ROOT))], cwd=ROOT,
                       capture_output=True, text=True)
    return r.returncode == 0


@pytest.mark.parametrize("page", ["index.md", "graphs.md", "depthwise.md", "autodiff.md", "backends.md",
                                  "reference.md"])
def test_named_pages_exist_and_are_committed(page):
    p = DOCS / page
    assert p.is_file() and len(p.read_text(encoding="utf-8")) > 500, page
    assert _tracked(p), f"{page} is not committed"


def test_index_has_install_and_the_five_minute_tour_in_order():
    text = _read("index.md")
    low = text.lower()
    assert "mpsgraph" in low
    assert "install" in low and "pip install" in text
    assert re.search(r"5[- ]minute|five[- ]minute", low)
    # build -> compile -> run -> gradients -> backends, in this order, with code for each
    pos = [low.find(k) for k in ("build", "compile", "run", "gradients", "backends")]
    tour = low[low.find("tour"):]
    steps = [re.search(rf"^#+ .*{k}", tour, re.M) for k in ("build", "compile", "run", "gradient", "backend")]
    assert all(steps), [k for k, s in zip(("build", "compile", "run", "gradient", "backend"), steps) if not s]
    starts = [s.start() for s in steps]
    assert starts == sorted(starts), "the tour's steps are not in the order build, compile, run, gradients, backends"
    assert all(p >= 0 for p in pos)
    for call in ("g.placeholder", "g.compile", ".run(", "g.gradients", "available_backends"):
        assert call in text, call


@pytest.mark.parametrize("topic", [r"placeholder", r"constant", r"variable", r"name_scope", r"scope",
                                   r"feeds?", r"target_tensors", r"target_operations", r"compile",
                                   r"cach", r"control_dependencies"])
def test_graphs_page_covers_each_topic(topic):
    assert re.search(topic, _read("graphs.md"), re.I), topic


def test_graphs_page_contrasts_target_tensors_and_target_operations():
    text = _read("graphs.md")
    assert re.search(r"^#+ .*target tensors.*target operations", text, re.M | re.I)
    assert re.search(r"^#+ .*compile", text, re.M | re.I) and re.search(r"^#+ .*cach", text, re.M | re.I)


def test_depthwise_page_explains_the_three_ops_and_output_shape():
    text = _read("depthwise.md")
    for op in ("depthwise_convolution_2d(", "depthwise_convolution_2d_data_gradient",
               "depthwise_convolution_2d_weights_gradient"):
        assert op in text, op
    for swift in ("depthwiseConvolution2D(", "depthwiseConvolution2DDataGradient",
                  "depthwiseConvolution2DWeightsGradient"):
        assert swift in text, swift
    assert "output_shape" in text
    # the stride example: two different input sizes give one output size
    assert re.search(r"stride", text, re.I)
    m = re.search(r"(\d+) -> \(1, 1, (\d+), \2\)\n(\d+) -> \(1, 1, (\d+), \4\)", text)
    assert m and m.group(1) != m.group(3), "no printed example where two input sizes share one dy"


def test_depthwise_page_gives_both_descriptor_defaults_and_follows_the_header():
    """Apple's header says "Default value: 1" for strides and dilations; a bare new has them 0.
    The page says both and which one minigraph follows, and the descriptor does what it says."""
    text = " ".join(_read("depthwise.md").split())
    assert '"Default value: 1"' in text and "descriptorWithDataLayout:weightsLayout:" in text
    assert re.search(r"stride and dilation 0", text) and "#155-descriptor-defaults" in text
    assert "minigraph follows the documented default" in text
    d = mg.DepthwiseConvolution2DOpDescriptor()
    assert (d.stride_in_x, d.stride_in_y, d.dilation_rate_in_x, d.dilation_rate_in_y) == (1, 1, 1, 1)


@pytest.mark.parametrize("page", ["depthwise.md", "convolution.md"])
def test_padding_style_tables_say_onnx_same_lower_needs_macos_13(page):
    rows = [line for line in _read(page).splitlines() if line.startswith("| `padding_style`")]
    assert rows and all("macOS 13 / iOS 16" in r for r in rows), rows


def test_depthwise_page_channel_multiplier_and_the_oihw_o_trap():
    text = _read("depthwise.md")
    assert re.search(r"channel multiplier", text, re.I)
    assert "OIHW" in text and "HWIO" in text
    assert re.search(r'"O"|\'O\'|the O of OIHW', text), "the O trap is not spelled out"
    assert "c*M + m" in text or "c * M + m" in text


def test_depthwise_page_each_padding_style_with_worked_numbers():
    text = _read("depthwise.md")
    for style in ("EXPLICIT", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER"):
        assert style in text, style
        # worked numbers: the style appears on a line together with digits of a computed size
        assert re.search(rf"{style}[^\n]*\d[^\n]*->\s*\d|`{style}`[^\n]*\|[^\n]*\d", text), style


def _images(text):
    return re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)


def test_depthwise_page_has_a_committed_weights_gradient_picture():
    text = _read("depthwise.md")
    imgs = _images(text)
    assert imgs, "depthwise.md shows no picture"
    for rel in imgs:
        p = (DOCS / rel).resolve()
        assert p.suffix.lower() in (".png", ".svg"), rel
        assert p.is_file() and p.stat().st_size > 1000, rel
        assert _tracked(p), f"{rel} is not committed"
    grad = [r for r in imgs if "grad" in r.lower()]
    assert grad, f"no weights-gradient figure among {imgs}"
    sect = text[text.lower().find("weights gradient, as a picture"):]
    assert "tap" in sect and "window" in text.lower()
    with open(DOCS / grad[0], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def _figure_script() -> Path:
    cands = [p for p in list((ROOT / "docs").rglob("*.py")) + list((ROOT / "scripts").rglob("*.py"))
             if "matplotlib" in p.read_text(encoding="utf-8") and "depthwise" in p.read_text(encoding="utf-8")]
    assert cands, "no committed matplotlib script draws the depthwise figures"
    return cands[0]


def test_figures_are_generated_by_a_committed_matplotlib_script(tmp_path):
    pytest.importorskip("matplotlib", reason="needs matplotlib, in the test extra: pip install -e '.[test]'")  # the `test` extra
    script = _figure_script()
    assert _tracked(script)
    src = script.read_text(encoding="utf-8")
    for rel in _images(_read("depthwise.md")):
        assert Path(rel).name in src, f"{rel} is not drawn by {script.name}"
    # the script runs and draws the figures (into a scratch copy of the figures folder)
    work = tmp_path / "docs" / "figures"
    work.mkdir(parents=True)
    (work / script.name).write_text(src, encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, str(work / script.name)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    drawn = {p.name for p in work.glob("*.png")} | {p.name for p in work.glob("*.svg")}
    for rel in _images(_read("depthwise.md")):
        assert Path(rel).name in drawn, f"{rel} not drawn"


def test_autodiff_page():
    text = _read("autodiff.md")
    assert "gradients" in text
    assert re.search(r"walk", text, re.I)
    assert re.search(r"not differentiable", text, re.I) and "NotDifferentiableError" in text
    # a listing of what gradients inserted is shown (an output block with op names)
    assert re.search(r"```output\n(?:.*\n)*?.*grad.*(addition|multiplication|_gradient)", text)


@pytest.mark.parametrize("word", ["numpy", "webgpu", "metal", "register_backend", "entry", "KernelMissingError",
                                  "BackendUnavailableError", "available_backends"])
def test_backends_page(word):
    assert word in _read("backends.md"), word


def test_backends_page_shows_how_to_write_and_advertise_a_backend():
    """The documented way to write a backend: an object with name/available/prepare, registered or
    advertised in the ``minigraph.backends`` entry-point group."""
    src = _read("backends.md")
    assert "minigraph.backends" in src  # the entry-point group
    assert "def prepare" in src and "def available" in src


def test_docs_have_descriptor_table_and_padding_examples():
    text = "".join((DOCS / f).read_text(encoding="utf-8") for f in sorted(os.listdir(DOCS))
                   if f.endswith(".md"))
    for field in ("stride_in_x", "dilation_rate_in_y", "padding_style", "weights_layout"):
        assert f"| `{field}`" in text
    assert "ONNX_SAME_LOWER" in text and "TF_SAME" in text


def test_performance_doc_has_tables_plot_and_commands():
    text = _read("performance.md")
    assert "python -m minigraph bench" in text or "python benchmarks/" in text
    assert "|" in text and "geomean" in text.lower().replace(" ", "").replace("geometricmean", "geomean")
    assert ".png" in text or ".svg" in text
    assert (ROOT / "benchmarks" / "plot.py").is_file()


def test_reliability_page_has_the_long_fuzz_figures():
    """The counts of a long fuzz run (>= 10,000 cases) are written down on the page."""
    text = (DOCS / "reliability.md").read_text(encoding="utf-8")
    nums = [int(n.replace(",", "")) for n in re.findall(r"\b\d{1,3}(?:,\d{3})+\b|\b\d{5,}\b", text)]
    assert any(n >= 10000 for n in nums), "no figure from a >= 10,000-case run"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))

