"""Packaging and the repository around the package: pyproject metadata, the source layout, the
README's set-up commands, and the CI script."""
import importlib.metadata
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def test_pyproject_metadata():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11; the package itself supports 3.10
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        meta = tomllib.load(f)
    proj = meta["project"]
    assert proj["name"] == "minigraph"
    assert ">=3.10" in proj["requires-python"].replace(" ", "")
    deps = " ".join(proj["dependencies"]).lower()
    assert "numpy" in deps and "networkx" in deps
    extras = proj["optional-dependencies"]
    assert "test" in extras and "webgpu" in extras
    assert any("pytest" in d for d in extras["test"])
    assert any("wgpu" in d for d in extras["webgpu"])
    assert os.path.isfile(os.path.join(ROOT, "minigraph", "py.typed"))
    # the wheel is the package directory whole, py.typed and the WGSL kernels with it
    assert meta["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["minigraph"]
    assert "threadpoolctl" in deps  # BLAS held at one thread per pool task with the core alone


USER_PROGRAM = """\
import minigraph as mg

g = mg.Graph()
x = g.placeholder([2, 3], name="x")
y: mg.Tensor = g.relu(x)
n: int = g.relu  # a mistake, which mypy reports only if it sees minigraph's types
"""


def test_a_type_checker_sees_the_installed_package(tmp_path):
    """After the README's editable install (`pip install -e .`), mypy run on a user's program in
    another folder finds minigraph and its types: the install is a plain path entry, not an
    import hook that type checkers cannot follow."""
    pytest.importorskip("mypy", reason="needs mypy, in the test extra: pip install -e '.[test]'")
    try:
        importlib.metadata.distribution("minigraph")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("minigraph is not installed here (pip install -e .)")
    (tmp_path / "prog.py").write_text(USER_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, "prog.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "import-not-found" not in r.stdout, r.stdout
    assert "prog.py:6: error: Incompatible types in assignment" in r.stdout, r.stdout
    assert "Found 1 error" in r.stdout, r.stdout


def test_source_layout():
    for d in ("minigraph", "minigraph/ops", "minigraph/backends", "tests", "docs"):
        assert os.path.isdir(os.path.join(ROOT, d)), d


def test_readme_has_the_two_setup_commands_and_example():
    text = _read("README.md")
    assert "python -m minigraph demo" in text
    assert "pip install" in text and "pytest" in text
    assert "import minigraph as mg" in text


def test_ci_script_creates_a_venv_and_fails_on_test_failure():
    path = os.path.join(ROOT, ".ci", "run")
    assert os.access(path, os.X_OK)
    text = _read(".ci", "run")
    assert "venv" in text
    assert re.search(r"\.\[[^\]]*test", text), "installs the test extras"
    assert "set -e" in text or "set -euo" in text
    assert "pytest" in text
    # the test command is the last command (its exit code is the script's), or guarded
    last = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")][-1]
    assert "pytest" in last


def test_ci_script_runs_the_core_only_path_and_the_slow_tests():
    """The minimal install (core + test extra) is run in a venv of its own, and the tests the
    README's command leaves out (marked slow) run too, so neither can rot."""
    text = _read(".ci", "run")
    assert re.search(r'pip install -q -e "\.\[test\]"', text)
    assert re.search(r"\.venv-core/bin/python -m pytest -n auto", text)
    assert "python -m pytest -n auto -m slow" in text
    assert "not slow" in _read("pyproject.toml")


def test_ci_script_installs_vulkan_and_requires_webgpu():
    text = _read(".ci", "run")
    assert "mesa-vulkan-drivers" in text
    assert "MINIGRAPH_REQUIRE_BACKENDS" in text and "webgpu" in text
    assert "graphviz" in text


def _pyproject():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def test_metadata_for_an_index_and_light_extras():
    proj = _pyproject()
    assert proj["authors"] and proj["keywords"] and "mpsgraph" in proj["keywords"]
    assert any(c.startswith("Programming Language :: Python :: 3") for c in proj["classifiers"])
    assert "Typing :: Typed" in proj["classifiers"]
    assert {"Homepage", "Source"} <= set(proj["urls"])
    extras = proj["optional-dependencies"]
    # viz is what the package imports for pictures (the graphviz package), not matplotlib
    assert any(d.startswith("graphviz") for d in extras["viz"])
    assert not any("matplotlib" in d for d in extras["viz"])
    # torch as a range, not one exact version (which an ordinary index resolves to the CUDA build)
    torch = [d for d in extras["oracles"] if d.startswith("torch")]
    assert torch and "==" not in torch[0]
    assert any(d.startswith("safetensors") for d in extras["oracles"])  # the checkpoint tests' reader
    core = " ".join(proj["dependencies"]).lower()
    for heavy in ("torch", "jax", "wgpu", "graphviz", "matplotlib", "safetensors"):
        assert heavy not in core, heavy


def test_matplotlib_is_never_imported_by_the_package():
    for dirpath, _, files in os.walk(os.path.join(ROOT, "minigraph")):
        for name in files:
            if name.endswith(".py"):
                text = _read(dirpath, name)
                assert not re.search(r"^\s*(import|from)\s+matplotlib", text, re.M), name


def test_readme_and_ci_install_one_pytorch_and_say_where_the_cpu_build_is():
    readme, ci = _read("README.md"), _read(".ci", "run")
    for text in (readme, ci):
        assert 'pip install -q "torch==2.13.0"' in text or 'pip install "torch==2.13.0"' in text
        assert "download.pytorch.org/whl/cpu" in text
    assert 'pip install "minigraph[' not in _read("docs", "backends.md")  # not on an index
    assert 'pip install ".[webgpu]"' in _read("docs", "backends.md")


def test_readme_example_shows_the_training_api():
    text = _read("README.md")
    example = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    assert len(example.strip().splitlines()) <= 25
    for word in ("trainable_variables", "save_variables", "-1"):
        assert word in example, word


def test_performance_tables_say_which_way_a_ratio_favours():
    text = _read("docs", "performance.md")
    assert "rival" not in text
    assert "a ratio < 1: the numerator is faster" in text
