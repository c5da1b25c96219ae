"""Batched matrix multiplication with broadcast batch axes (MPSGraph ``matrixMultiplication``).

16x16 tiles staged in workgroup memory; float16 accumulates in f32; integers wrap as in NumPy.
K is baked into the kernel source: with it read from a uniform, lavapipe leaked about 270 KiB
per dispatch for some shapes (64x64, 128x128); M, N and the batch axes stay parameters, so a
new batch size reuses the pipeline. A K axis longer than ``_KCH`` is cut into pieces (one tile
loop never runs more than ``_KCH / 16`` steps: llvmpipe stops a shader's loops after 65,535),
and so is a K of 512 or more over few output tiles (``gemm.split_length``: work for every core),
whose partial products ``gemm.record_sum_of_pieces`` adds up in a fixed order. A
``fused_epilogue`` step's tail is applied where each result is stored (epilogue.py).

Products of at least ``gemm.TILING["min_size"]`` rows and columns take the tiled GEMM of
``gemm.py`` instead (64x64 outputs per workgroup, 4x4 per thread).
"""
from __future__ import annotations

from ...ops._util import broadcast_shapes
from ...types import num_elements
from .epilogue import epilogue_kernel
from .gemm import Gemm, fits, record_gemm, record_sum_of_pieces, split_length, use_tiled
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, collapse, contiguous_strides, params_decl, render

_KCH = 16 * 1024  # longest piece of K one workgroup multiplies


@webgpu_kernel("matrix_multiplication")
def _matmul(step, kb):
    record_matmul(step, kb, kb.input(0), kb.input(1))


@epilogue_kernel("matrix_multiplication")
def _matmul_epilogue(step, kb, epi):
    """The product with the step's elementwise tail applied where each result is stored."""
    record_matmul(epi.anchor_step, kb, epi.input(0), epi.input(1), epi)


def record_matmul(step, kb, in_a, in_b, epi=None) -> None:
    """Record ``step``'s product of buffers ``in_a`` and ``in_b`` into ``kb.output()`` (through
    ``epi``, an ``Epilogue``, when given)."""
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

    dt = out.dtype.name
    if use_tiled(M, N):
        cst = tuple(s * M * N for s in contiguous_strides(batch_shape))
        tshape, (tas, tbs, tcs) = collapse(batch_shape, bstrides(a.shape[:-2], M * K),
                                           bstrides(b.shape[:-2], K * N), cst)
        g = Gemm(M, N, K, (K, 1, 0), (N, 0, 1), (N, 1), tuple(zip(tshape, tas, tbs, tcs)),
                 c_total=num_elements(batch_shape) * M * N)
        if fits(kb, g):
            record_gemm(kb, g, in_a, in_b, kb.output(), dt, epi)
            return
    bshape, (ast, bst) = collapse(batch_shape, bstrides(a.shape[:-2], M * K), bstrides(b.shape[:-2], K * N))
    batch = num_elements(batch_shape)
    acc = COMPUTE[dt]
    axes = []
    for k in reversed(range(len(bshape))):
        axes += [bshape[k], ast[k], bst[k]]
    pieces, kch = split_length(K, -(-M // 16) * -(-N // 16) * batch, _KCH)
    dst, tc = kb.output(), STORAGE[dt]
    store, extra, decls = f"{tc}(acc)", [], ""
    if pieces > 1:
        tc = acc
        store = "acc"
        dst = kb.scratch(4 * pieces * batch * M * N)
    elif epi is not None:
        tc, store, extra, decls = epi.storage, epi.apply("acc", "o"), epi.at(4).bindings, epi.at(4).decls
    zero = {"f32": "0.0", "i32": "0i", "u32": "0u"}[acc]
    src = render("matmul", PARAMS=params_decl(4 + len(axes)), T=STORAGE[dt], TC=tc, ACC=acc, ZERO=zero, K=K,
                 TILES=kch // 16, KCHUNKS=pieces, BR=len(bshape), STORE=store, EPILOGUE=decls)
    gx, gy = -(-N // 16), -(-M // 16)
    zmax = kb.ctx.max_groups
    total = batch * pieces
    for z0 in range(0, total, zmax):
        kb.dispatch(src, [("u", [M, N, z0, batch] + axes), ("ro", in_a), ("ro", in_b), ("rw", dst)] + extra,
                    (gx, gy, min(zmax, total - z0)))
    if pieces > 1:
        record_sum_of_pieces(kb, dst, kb.output(), pieces, batch * M * N, dt, epi)
