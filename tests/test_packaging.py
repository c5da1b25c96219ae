"""Packaging and the repository around the package: pyproject metadata, the source layout, the
README's set-up commands, and the CI script."""
import os
import re

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
    # py.typed ships with the package
    assert "py.typed" in str(meta.get("tool", {}).get("setuptools", {}).get("package-data", {}))


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


def test_ci_script_installs_vulkan_and_requires_webgpu():
    text = _read(".ci", "run")
    assert "mesa-vulkan-drivers" in text
    assert "MINIGRAPH_REQUIRE_BACKENDS" in text and "webgpu" in text
    assert "graphviz" in text
