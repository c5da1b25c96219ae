"""``sample_grid`` (semantics: ``ops/sample_grid.py``).

One invocation per result element (``kernels/sample_grid.wgsl``): the two pixel positions, then
one load (NEAREST) or up to four (BILINEAR), in float32; the positions of the result pixels
(``ops.sample_grid.base``) come from the host in a small table, rounded to float32 as the NumPy
kernel rounds them. No loop grows with an input size.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...descriptors import PaddingMode, ResizeMode, TensorNamedDataLayout
from ...ops.sample_grid import _unnormalize, base, spatial
from .registry import webgpu_kernel
from .resize import _table
from .wgsl import STORAGE, render


def _lit(x) -> str:
    """A float32 constant as its exact bits."""
    return f"bitcast<f32>({int(np.float32(x).view(np.uint32))}u)"


def _axis(size: int, attrs: dict) -> dict:
    a, o = _unnormalize(size, attrs["align_corners"])
    lo, span = (0.0, size - 1) if attrs["padding_mode"] == PaddingMode.REFLECT else (-0.5, size)
    return dict(A=_lit(a), O=_lit(o), LAST=_lit(size - 1), LO=_lit(lo), SPAN=_lit(span))


@webgpu_kernel("sample_grid")
def _sample_grid(step, kb):
    attrs = step.attrs
    out = step.out_types[0]
    total = prod(out.shape)
    if not total:
        return
    hx, wx, cx = spatial(attrs["layout"])
    shape = step.in_types[0].shape
    n, hs, ws, cs = shape[0], shape[hx], shape[wx], shape[cx]
    ho, wo = step.in_types[1].shape[1:3]
    pad = attrs["padding_mode"]
    bases = np.concatenate([base(ws, wo, attrs), base(hs, ho, attrs)]).astype(np.float32)
    holes = {f"{k}X": v for k, v in _axis(ws, attrs).items()}
    holes.update({f"{k}Y": v for k, v in _axis(hs, attrs).items()})
    fill = attrs["constant_value"] if pad == PaddingMode.CONSTANT else 0.0
    text = render("sample_grid", T=STORAGE[out.dtype.name], TOTAL=total, C=cs, H=hs, W=ws, HO=ho, WO=wo,
                  NCHW="true" if attrs["layout"] == TensorNamedDataLayout.NCHW else "false",
                  RELATIVE="true" if attrs["relative_coordinates"] else "false",
                  NORMALIZE="true" if attrs["normalize_coordinates"] else "false",
                  PAD=1 if pad == PaddingMode.CLAMP_TO_EDGE else 2 if pad in (PaddingMode.REFLECT,
                                                                              PaddingMode.SYMMETRIC) else 0,
                  ROUNDING=int(attrs["nearest_rounding_mode"]), FILL=_lit(fill),
                  NEAREST="true" if attrs["sampling_mode"] == ResizeMode.NEAREST else "false", **holes)
    del n
    kb.dispatch(text, [("ro", kb.input(0)), ("ro", kb.input(1)), ("ro", _table(kb, bases.view(np.uint32))),
                       ("rw", kb.output())], -(-total // 256))
