"""Scaled dot-product attention (MPSGraph ``scaledDotProductAttention``), docs/attention.md.

One invocation per result element walks the keys once with an online softmax (a running
maximum, and the running sums, compensated, rescaled when it grows: max-subtracted, as the NumPy kernel, so
logits of 1e4 stay finite), accumulating in f32 for float16 too. The loop over keys is a long
loop (``loops.long_loop``): every pass visits at most ``LOOP_MAX / (1 + D)`` keys and keeps the
running maximum and the two compensated (Kahan) sums in a scratch buffer, so 4,096 keys or more stay under
llvmpipe's 65,535 iterations. The leading axes broadcast through per-axis strides (0 where an
operand has size 1); the mask is read through strides the same way, and a nil mask is the
op's scalar 0.
"""
from __future__ import annotations

import struct

from ...ops.attention import attention_shapes
from ...types import num_elements
from .loops import long_loop
from .registry import webgpu_kernel
from .wgsl import STORAGE, contiguous_strides, params_decl, render


_ONE = struct.unpack("<I", struct.pack("<f", 1.0))[0]


def _strides(shape, full) -> tuple:
    """Element strides of a contiguous ``shape`` read as ``full`` (right-aligned; 0 where broadcast)."""
    padded = (1,) * (len(full) - len(shape)) + tuple(shape)
    return tuple(0 if p == 1 and f != 1 else s for p, s, f in zip(padded, contiguous_strides(padded), full))


@webgpu_kernel("scaled_dot_product_attention", fresh=True)
def _attention(step, kb):
    q, k, v, m = step.in_types
    batch, nq, nkv, d, dv = attention_shapes(step.in_types, step.attrs)
    n_out = num_elements(batch) * nq * dv
    if n_out == 0:
        return
    full = tuple(batch) + (nq, nkv)
    ms = _strides(m.shape, full)
    qs = _strides(q.shape[:-2], batch)
    ks = _strides(k.shape[:-2], batch)
    vs = _strides(v.shape[:-2], batch)
    axes: list = []
    for a in reversed(range(len(batch))):
        axes += [batch[a], qs[a] * nq * d, ks[a] * nkv * d, vs[a] * nkv * dv, ms[a]]
    scale = struct.unpack("<I", struct.pack("<f", float(step.attrs["scale"])))[0]
    head = [n_out, nq, nkv, dv, scale, ms[-2], ms[-1], _ONE] + axes
    dt = step.out_types[0].dtype.name
    src = render("attention", PARAMS=params_decl(len(head) + 2), T=STORAGE[dt], D=d, BR=len(batch),
                 TAIL=len(head))

    def record(j0, j1, state):
        kb.dispatch(src, [("u", head + [j0, j1]), ("ro", kb.input(0)), ("ro", kb.input(1)), ("ro", kb.input(2)),
                          ("ro", kb.input(3)), ("rw", kb.output()), ("rw", state)], -(-n_out // 256))

    long_loop(kb, nkv, n_out, 5, record, inner=d)
