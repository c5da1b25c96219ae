"""Contract tests written from the text of issues 2, 3 and 4 alone (an outsider's reading).

Every name, keyword and return type here is the one the issue states; the references (NumPy
one-liners, a naive depthwise loop from the formula of MPSGRAPH.md §4.1, central differences)
share no code with minigraph's kernels.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import minigraph as mg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ============================================================== issue 2: packaging


def test_readme_example_runs():
    """The README's example block runs as written."""
    text = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    ns = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)


# ============================================================== issue 2: graph API


# ------------------------------------------------------------------ variables


# ------------------------------------------------------------------ ops vs NumPy


# ------------------------------------------------------------------ compile and run


# ============================================================== issue 3: depthwise


def test_docs_have_descriptor_table_and_padding_examples():
    text = "".join(open(os.path.join(ROOT, "docs", f)).read() for f in os.listdir(os.path.join(ROOT, "docs"))
                   if f.endswith(".md"))
    for field in ("stride_in_x", "dilation_rate_in_y", "padding_style", "weights_layout"):
        assert f"| `{field}`" in text
    assert "ONNX_SAME_LOWER" in text and "TF_SAME" in text


# ============================================================== issue 4: autodiff and training


# ============================================================== issue 4: the demo


# ============================================================== builtins an outsider may catch


