"""Scaled dot-product attention: the definition of its semantics (docs/attention.md).

``softmax(scale * q @ k^T + mask) @ v`` with the row maximum subtracted before ``exp`` (so logits
of 1e4 stay finite) and a row whose every score is -inf giving 0 (PyTorch's rule). float16 is
computed in float32 (float64 in float64) and rounded once. Each product runs with BLAS held at one thread, so the
bits do not depend on the thread count.
"""
from __future__ import annotations

import numpy as np

from ...ops.attention import nil_inputs
from .registry import numpy_kernel
from .threads import serial_blas


def attention(q, k, v, mask, scale: float, masked: bool, out_dtype) -> np.ndarray:
    """The op on arrays (broadcasting leading axes as np.matmul does)."""
    wide = [a.astype(np.float32) if a.dtype == np.float16 else a for a in (q, k, v, mask)]
    q, k, v, mask = wide
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(scale)
    if masked:
        s = s + mask
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
        m = np.where(m == -np.inf, s.dtype.type(0), m)  # a fully masked row: exp(-inf) = 0 everywhere
        e = np.exp(s - m)
        total = np.sum(e, axis=-1, keepdims=True)
        p = np.divide(e, total, out=np.zeros_like(e), where=total != 0)
    return np.asarray(np.matmul(p, v), dtype=out_dtype)


@numpy_kernel("scaled_dot_product_attention", fresh=True)
def _attention(step):
    scale = float(step.attrs["scale"])
    masked = "mask" not in nil_inputs(step.attrs)
    dt = step.out_types[0].dtype.np_dtype
    return serial_blas(lambda q, k, v, mask: attention(q, k, v, mask, scale, masked, dt))
