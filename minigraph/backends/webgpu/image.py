"""im_to_col and col_to_im kernels (semantics and layouts: ``ops/image.py``).

im_to_col is one invocation per column element, one read (or 0 in the padding); col_to_im one
invocation per image element, visiting the KH * KW window positions (in passes,
``loops.long_loop``) and adding the column elements copied from it, in the order of the
positions, in float32 for float16."""
from __future__ import annotations

from math import prod

from ...descriptors import TensorNamedDataLayout
from ...ops.image import geometry
from .loops import long_loop
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, params_decl, render


def _holes(d, image, dt: str) -> dict:
    n, c, h, w, oh, ow = geometry(d, image)
    return dict(T=STORAGE[dt], C=max(c, 1), H=h, W=w, OH=max(oh, 1), OW=max(ow, 1), KH=d.kernel_height,
                KW=d.kernel_width, SY=d.stride_in_y, SX=d.stride_in_x, DY=d.dilation_rate_in_y,
                DX=d.dilation_rate_in_x, PT=d.padding_top, PL=d.padding_left,
                NCHW="true" if d.data_layout == TensorNamedDataLayout.NCHW else "false")


@webgpu_kernel("im_to_col")
def _im_to_col(step, kb):
    total = prod(step.out_types[0].shape)
    if total:
        src = render("im_to_col", TOTAL=total, **_holes(step.attrs["descriptor"], step.in_types[0].shape,
                                                        step.out_types[0].dtype.name))
        kb.dispatch(src, [("ro", kb.input(0)), ("rw", kb.output())], -(-total // 256))


@webgpu_kernel("col_to_im")
def _col_to_im(step, kb):
    out = step.out_types[0]
    d = step.attrs["descriptor"]
    total = prod(out.shape)
    if not total:
        return
    kk = d.kernel_height * d.kernel_width
    src = render("col_to_im", PARAMS=params_decl(2), TOTAL=total, KK=kk, C_T=COMPUTE[out.dtype.name],
                 **_holes(d, out.shape, out.dtype.name))

    def record(j0, j1, state):
        kb.dispatch(src, [("u", [j0, j1]), ("ro", kb.input(0)), ("rw", kb.output()), ("rw", state)],
                    -(-total // 256))

    long_loop(kb, kk, total, 1, record)
