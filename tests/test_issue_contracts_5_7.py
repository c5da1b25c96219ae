"""Contract tests written from the text of issues 5, 6 and 7 alone (an outsider's reading).

Every name, keyword and return type here is the one the issue states (or the obvious spelling
where the issue leaves it open); references are NumPy one-liners and naive loops written from
the formulas, sharing no code with minigraph's kernels.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minigraph as mg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_WEBGPU = "webgpu" in mg.available_backends()
HAVE_DOT = shutil.which("dot") is not None
needs_webgpu = pytest.mark.skipif(not HAVE_WEBGPU and "webgpu" not in os.environ.get("MINIGRAPH_REQUIRE_BACKENDS", ""),
                                  reason="webgpu backend unavailable here")


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def py(*args, env=None, cwd=ROOT, timeout=120):
    e = dict(os.environ)
    e.setdefault("PYTHONPATH", "")
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e["PYTHONPATH"] else "")
    e.update(env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=e, timeout=timeout)


# ==================================================================================== issue 5


# ==================================================================================== issue 6


def test_performance_doc_has_tables_plot_and_commands():
    text = open(os.path.join(ROOT, "docs", "performance.md")).read()
    assert "python -m minigraph bench" in text or "python benchmarks/" in text
    assert "|" in text and "geomean" in text.lower().replace(" ", "").replace("geometricmean", "geomean")
    assert ".png" in text or ".svg" in text
    assert os.path.isfile(os.path.join(ROOT, "benchmarks", "plot.py"))


# ==================================================================================== issue 7
def _sample_graph():
    g = mg.Graph()
    x = g.placeholder(shape=(2, 3, 8, 8), dtype=mg.float32, name="x")
    with g.name_scope("block"):
        w = g.constant(np.random.default_rng(0).standard_normal((1, 3, 3, 3)).astype(np.float32), name="w")
        desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2,
                                                     padding_style=mg.PaddingStyle.TF_SAME)
        y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
        r = g.relu(y, name="act")
    unused = g.sigmoid(x, name="unused")
    loss = g.reduction_sum(g.multiplication(r, r), axes=None, name="loss")
    return g, x, w, r, loss, unused


