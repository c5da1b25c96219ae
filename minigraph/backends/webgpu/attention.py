"""Scaled dot-product attention (MPSGraph ``scaledDotProductAttention``), docs/attention.md.

One invocation per query row and chunk of up to ``_CH`` result columns walks the keys once with
an online softmax: a running maximum, and the running sums (compensated) rescaled when it grows,
so it is max-subtracted as the NumPy kernel is and logits of 1e4 stay finite; float16
accumulates in f32. Each score is computed once per chunk, not once per result column. The loop
over keys is a long loop (``loops.long_loop``): every pass visits at most
``LOOP_MAX / (1 + D + 2 * chunk)`` keys and keeps the running maximum and sums in a scratch
buffer, so 4,096 keys or more stay under llvmpipe's 65,535 iterations. The leading axes
broadcast through per-axis strides (0 where an operand has size 1); the mask is read through
strides the same way, and a nil mask is the op's scalar 0.
"""
from __future__ import annotations

import struct

from ...ops.attention import attention_shapes
from ...types import num_elements
from .loops import long_loop
from .registry import webgpu_kernel
from .wgsl import STORAGE, contiguous_strides, params_decl, render


_CH = 32  # result columns one invocation accumulates (its private arrays); wider values take chunks
_ONE = struct.unpack("<I", struct.pack("<f", 1.0))[0]


def _strides(shape, full) -> tuple:
    """Element strides of a contiguous ``shape`` read as ``full`` (right-aligned; 0 where broadcast)."""
    padded = (1,) * (len(full) - len(shape)) + tuple(shape)
    return tuple(0 if p == 1 and f != 1 else s for p, s, f in zip(padded, contiguous_strides(padded), full))


@webgpu_kernel("scaled_dot_product_attention", fresh=True)
def _attention(step, kb):
    q, k, v, m = step.in_types
    batch, nq, nkv, d, dv = attention_shapes(step.in_types, step.attrs)
    ch = max(1, min(dv, _CH))
    chunks = -(-dv // ch)
    n_inv = num_elements(batch) * nq * chunks
    if n_inv == 0 or dv == 0:
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
    head = [n_inv, nq, nkv, dv, scale, ms[-2], ms[-1], _ONE, chunks] + axes
    dt = step.out_types[0].dtype.name
    src = render("attention", PARAMS=params_decl(len(head) + 2), T=STORAGE[dt], D=d, CH=ch, BR=len(batch),
                 TAIL=len(head))

    def record(j0, j1, state):
        kb.dispatch(src, [("u", head + [j0, j1]), ("ro", kb.input(0)), ("ro", kb.input(1)), ("ro", kb.input(2)),
                          ("ro", kb.input(3)), ("rw", kb.output()), ("rw", state)], -(-n_inv // 64))

    # per key: D products, and at most CH rescales and CH accumulations
    long_loop(kb, nkv, n_inv, 3 + 2 * ch, record, inner=d + 2 * ch)
