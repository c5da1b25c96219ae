"""Linear-algebra kernels (semantics: ``ops/linalg.py``): band_part is one masked copy."""
from __future__ import annotations

from math import prod

from .registry import webgpu_kernel
from .wgsl import STORAGE, render


@webgpu_kernel("band_part")
def _band_part(step, kb):
    a = step.attrs
    shape = step.in_types[0].shape
    total = prod(shape)
    src = render("band_part", T=STORAGE[step.in_types[0].dtype.name], TOTAL=total, ROWS=max(shape[-2], 1),
                 COLS=max(shape[-1], 1), LOWER=max(min(a["num_lower"], 2**31 - 1), -1),
                 UPPER=max(min(a["num_upper"], 2**31 - 1), -1))
    kb.dispatch(src, [("ro", kb.input(0)), ("rw", kb.output())], -(-total // 256))
