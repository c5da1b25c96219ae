"""Batched matrix multiplication with broadcast batch axes (MPSGraph ``matrixMultiplication``).

16x16 tiles staged in workgroup memory; float16 accumulates in f32; integers wrap as in NumPy.
"""
from __future__ import annotations

from ...ops._util import broadcast_shapes
from ...types import num_elements
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, collapse, contiguous_strides, params_decl, render


@webgpu_kernel("matrix_multiplication")
def _matmul(step, kb):
    a, b = step.in_types
    out = step.out_types[0]
    M, K = a.shape[-2:]
    N = b.shape[-1]
    batch_shape = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    nb = len(batch_shape)

    def bstrides(shape, mat):
        padded = (1,) * (nb - len(shape)) + tuple(shape)
        cs = contiguous_strides(padded)
        return tuple(0 if p == 1 and o != 1 else s * mat for p, s, o in zip(padded, cs, batch_shape))

    bshape, (ast, bst) = collapse(batch_shape, bstrides(a.shape[:-2], M * K), bstrides(b.shape[:-2], K * N))
    batch = num_elements(batch_shape)
    dt = out.dtype.name
    acc = COMPUTE[dt]
    axes = []
    for k in reversed(range(len(bshape))):
        axes += [bshape[k], ast[k], bst[k]]
    zero = {"f32": "0.0", "i32": "0i", "u32": "0u"}[acc]
    src = render("matmul", PARAMS=params_decl(4 + len(axes)), T=STORAGE[dt], ACC=acc, ZERO=zero, BR=len(bshape))
    gx, gy = -(-N // 16), -(-M // 16)
    zmax = kb.ctx.max_groups
    for z0 in range(0, batch, zmax):
        kb.dispatch(src, [("u", [M, N, K, z0] + axes), ("ro", kb.input(0)), ("ro", kb.input(1)),
                          ("rw", kb.output())], (gx, gy, min(zmax, batch - z0)))
