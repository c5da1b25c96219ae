"""A tiled GEMM over strided operands, shared by ``matrix_multiplication`` and the pointwise
(1x1) convolutions (forward, data and weights gradients).

``C[b][m, n] = sum_k A[b][m, k] * B[b][k, n]`` where every operand is read through element
strides, so a transposed operand, NCHW or NHWC data and OIHW or HWIO weights need no copy;
batch axes carry a stride per operand (0 broadcasts). The K axis may be two axes walked as one
(``k_inner``: K = outer * k_inner, as the batch and pixel axes of a weights gradient). See
``kernels/gemm_tiled.wgsl`` for the tiling (up to 64x64 outputs per workgroup of 256 threads, 4x4
per thread; 16 or 32 rows or columns for thin products, ``shape_of``; K steps of 16 staged in
workgroup memory).

``TILING["mode"]`` picks the path: ``"auto"`` (the tiled kernel when both M and N are at least
``TILING["min_size"]`` and they make at least ``TILING["min_outputs"]`` outputs over the batch: a
smaller product makes too few workgroups to fill a GPU, where the 16x16 kernels make more),
``"always"`` or ``"never"`` (tests force each path with it). M, N, the strides and the batch sizes are kernel parameters, so a new size
reuses the pipeline; K and the tile are baked in.
"""
from __future__ import annotations

from math import prod
from typing import NamedTuple, Sequence

from .wgsl import COMPUTE, STORAGE, params_decl, render

# "tile": outputs per thread (shape_of); "min_groups": workgroups a product should make, K split
# further below that (1024 against 256 took the six-block step's 1x1 weights gradients from 0.81
# to 0.75 ms on the H200 machine), but no piece of K shorter than "min_piece" (so K >= 2 *
# min_piece splits over few tiles); "pad": elements padding each staged row of workgroup memory
TILING: dict = {"mode": "auto", "min_size": 8, "min_outputs": 2 * 64 * 64, "tile": "auto", "min_groups": 1024,
                "min_piece": 256, "pad": 1}
RECORDED = {"gemm": 0}  # tiled GEMMs recorded so far (tests check which path a plan took)
_KCH = 16 * 1024  # longest piece of K one workgroup multiplies (bounded loops on llvmpipe)
_ZERO = {"f32": "0.0", "i32": "0i", "u32": "0u"}


class Gemm(NamedTuple):
    """One strided GEMM. Strides in elements: ``a = (m, k, k_outer)``, ``b = (k, k_outer, n)``,
    ``c = (m, n)``; ``batch``: ``(size, a stride, b stride, c stride)`` per batch axis;
    ``k_inner``: the size of K's inner axis (K itself when K is one axis); ``c_total``: the
    elements of C (every offset below it written once; partial products are laid out like C)."""

    M: int
    N: int
    K: int
    a: tuple
    b: tuple
    c: tuple
    batch: Sequence[tuple] = ()
    k_inner: int = 0
    c_total: int = 0


def use_tiled(M: int, N: int, batch: int = 1) -> bool:
    """Whether the tiled kernel is chosen for ``batch`` M x N products (``TILING``): the outputs
    of every batch count, so many small images (7x7 of a 1x1 convolution) take it too."""
    mode = TILING["mode"]
    if mode == "always":
        return True
    if mode == "never":
        return False
    return min(M, N) >= int(TILING["min_size"]) and batch * M * N >= int(TILING["min_outputs"])


def fits(kb, g: Gemm) -> bool:
    """Whether the grid of ``g`` fits the adapter (x and y workgroup counts)."""
    tm, tn = tile_of(g)
    return max(-(-g.N // tn), -(-g.M // tm)) <= kb.ctx.max_groups


def params(g: Gemm, z0: int) -> list:
    """The kernel's u32 parameters (see kernels/gemm_tiled.wgsl)."""
    out = [z0, g.M, g.N, *g.a, *g.b, *g.c, c_total(g) if pieces_of(g) > 1 else 0, g.k_inner or g.K]
    for axis in reversed(list(g.batch)):
        out += list(axis)
    return out


def shape_of(g: Gemm) -> tuple:
    """(RM, RN): the outputs per thread along M and N (``TILING["tile"]``). ``"auto"``: 4 (a
    64-wide tile), or 1 or 2 where M (N) is at most 16 or 32, so that a thin product (a 1x1
    convolution with 16 or 24 channels) does not leave most of a tile idle. Larger tiles (8 x 8,
    8 x 4, 4 x 8) made the six-block step's 1x1 convolutions 1.2-1.5x slower on the H200 machine
    (more registers per thread, fewer threads resident); they stay selectable for tests."""
    pick = TILING["tile"]
    if pick != "auto":
        return tuple(pick)
    return _per_thread(g.M), _per_thread(g.N)


def _per_thread(size: int) -> int:
    return 1 if size <= 16 else 2 if size <= 32 else 4


def tile_of(g: Gemm) -> tuple:
    """(TM, TN): the outputs of one workgroup along M and N."""
    rm, rn = shape_of(g)
    return 16 * rm, 16 * rn


def source(g: Gemm, dtype: str, partial: bool, epi=None) -> str:
    """The WGSL of ``g``: K, the tile, the batch rank, the load orders and the dtype are baked in
    (partial: f32/i32/u32 partial products of a K piece; else ``epi``, an ``Epilogue`` bound
    from binding 4, is applied where C is stored)."""
    acc = COMPUTE[dtype]
    zero = _ZERO[acc]
    rm, rn = shape_of(g)
    tm, tn = 16 * rm, 16 * rn
    pad = int(TILING["pad"])
    stage_a = _stage("a", "A", "ta", "SA", "m", "M", tm, rm, g.a[1] == 1, acc, zero)
    stage_b = _stage("b", "B", "tb", "SB", "n", "N", tn, rn, not (g.b[2] == 1 or g.b[0] != 1), acc, zero)
    ij = [(i, j) for i in range(rm) for j in range(rn)]
    tc = acc if partial else STORAGE[dtype]
    if epi is not None and partial:
        raise ValueError("an epilogue is applied at the reduction of a split product, not to its pieces")
    if epi is not None:
        tc = epi.storage
    store = []
    for i, j in ij:
        value = epi.apply(f"c{i}_{j}", "o") if epi is not None else f"{tc}(c{i}_{j})"
        store.append(f"  {{ let m = m0 + ty + {16 * i}u; let n = n0 + tx + {16 * j}u;\n"
                     f"    if (m < M && n < N) {{ let o = c_off + m * csm + n * csn; C[o] = {value}; }} }}")
    loads = ([f"      let a{i} = ta[kk * SA + ty + {16 * i}u];" for i in range(rm)]
             + [f"      let b{j} = tb[kk * SB + tx + {16 * j}u];" for j in range(rn)])
    return render("gemm_tiled", PARAMS=params_decl(13 + 4 * len(g.batch)), T=STORAGE[dtype], TC=tc, ACC=acc,
                  ZERO=zero, K=g.K, KCH=split_k(g)[1], KCHUNKS=pieces_of(g), BR=len(g.batch),
                  TM=tm, TN=tn, RM=rm, RN=rn, PAD=pad, TA_SIZE=16 * (tm + pad), TB_SIZE=16 * (tn + pad),
                  SPLIT="true" if g.k_inner and g.k_inner < g.K else "false",
                  REG_DECL=stage_a[0] + "\n" + stage_b[0], LOAD_FIRST="  " + stage_a[1]("t0") + "\n  " + stage_b[1]("t0"),
                  LOAD_NEXT="      " + stage_a[1]("tn") + "\n      " + stage_b[1]("tn"),
                  STORE_STAGED=stage_a[2] + "\n" + stage_b[2],
                  ACC_DECL="\n".join(f"  var c{i}_{j}: {acc} = {zero};" for i, j in ij),
                  TILE_DECL="\n".join(f"    var s{i}_{j}: {acc} = {zero};" for i, j in ij),
                  LOAD_AB="\n".join(loads),
                  FMA="\n".join(f"      s{i}_{j} = s{i}_{j} + a{i} * b{j};" for i, j in ij),
                  ADD="\n".join(f"    c{i}_{j} = c{i}_{j} + s{i}_{j};" for i, j in ij),
                  STORE="\n".join(store), EPILOGUE=epi.at(4).decls if epi is not None else "")


def _stage(op: str, buf: str, tile: str, stride: str, axis: str, size: str, extent: int, per_thread: int,
           k_fast: bool, acc: str, zero: str) -> tuple:
    """WGSL staging one operand's ``extent`` x 16 tile of a K step into workgroup memory,
    ``per_thread`` elements per thread, threads in the order of the operand's unit stride: along
    K (``k_fast``: a thread's k, and its offset, are the same for every load of the step) or
    along M/N. (declarations, load(step) into registers ``r<op><q>``, store of the registers
    into ``tile[k * stride + i]``): the loads of the next step are issued before the product of
    the current one, so the device memory's latency overlaps the arithmetic. ``op`` "a" reads
    ``A[a_off + m * prm(3) + a_k(k)]``, "b" ``B[b_off + n * prm(8) + b_k(k)]``."""
    s_axis = "prm(3u)" if op == "a" else "prm(8u)"
    regs = [f"r{op}{q}" for q in range(per_thread)]
    decl = "\n".join(f"  var {r}: {acc} = {zero};" for r in regs)
    if k_fast:
        where = [(f"lid / 16u + {16 * q}u", "lid % 16u") for q in range(per_thread)]
    else:
        where = [(f"(lid + {256 * q}u) % {extent}u", f"(lid + {256 * q}u) / {extent}u") for q in range(per_thread)]

    def load(t: str) -> str:
        lines = [f"{{ let kl = lid % 16u; let k = {t} + kl; let kt = {op}_k(k);"] if k_fast else ["{"]
        for r, (i, kl) in zip(regs, where):
            k, kt = ("k", "kt") if k_fast else (f"({t} + {kl})", f"{op}_k({t} + {kl})")
            lines.append(f"      {{ let i = {i}; {r} = {zero}; if ({axis}0 + i < {size} && {k} < K) "
                         f"{{ {r} = {acc}({buf}[{op}_off + ({axis}0 + i) * {s_axis} + {kt}]); }} }}")
        return "\n".join(lines) + " }"

    store = "\n".join(f"    {tile}[({kl}) * {stride} + {i}] = {r};" for r, (i, kl) in zip(regs, where))
    return decl, load, store


def split_k(g: Gemm) -> tuple:
    """(pieces, piece length) of K: pieces of at most ``_KCH``, and more of them (down to
    ``TILING["min_piece"]``) when the output has fewer than ``TILING["min_groups"]`` tiles (a weights gradient:
    a small C, a long K; a forward or data gradient of a 1x1 convolution on small images with
    many channels), their partial products added by ``record_sum_of_pieces``."""
    tm, tn = tile_of(g)
    tiles = -(-g.M // tm) * -(-g.N // tn) * prod(size for size, *_ in g.batch)
    return split_length(g.K, tiles, _KCH)


def split_length(K: int, tiles: int, longest: int) -> tuple:
    """(pieces, piece length, a multiple of 16) of a K axis over ``tiles`` workgroups' outputs:
    pieces of at most ``longest``, more (down to ``TILING["min_piece"]``) for fewer than ``TILING["min_groups"]``."""
    want = max(-(-K // longest), min(-(-int(TILING["min_groups"]) // max(tiles, 1)), K // int(TILING["min_piece"])))
    kch = max(16, -(-(-(-K // max(want, 1))) // 16) * 16)
    return max(1, -(-K // kch)), kch


def pieces_of(g: Gemm) -> int:
    return split_k(g)[0]


def c_total(g: Gemm) -> int:
    return g.c_total or prod(size for size, *_ in g.batch) * g.M * g.N


def record_gemm(kb, g: Gemm, a, b, c, dtype: str, epi=None) -> None:
    """Record ``g`` reading buffers ``a`` and ``b`` (of ``dtype``, as C is) and writing ``c``;
    with ``epi`` (an ``Epilogue``) C holds the epilogue's result (of its storage type) instead."""
    RECORDED["gemm"] += 1
    batch = prod(size for size, *_ in g.batch)
    pieces = pieces_of(g)
    dst = c
    if pieces > 1:
        dst = kb.scratch(4 * pieces * c_total(g))
    src = source(g, dtype, pieces > 1, None if pieces > 1 else epi)
    extra = epi.at(4).bindings if epi is not None and pieces == 1 else []
    tm, tn = tile_of(g)
    gx, gy = -(-g.N // tn), -(-g.M // tm)
    zmax = kb.ctx.max_groups
    total = batch * pieces
    for z0 in range(0, total, zmax):
        kb.dispatch(src, [("u", params(g, z0)), ("ro", a), ("ro", b), ("rw", dst)] + extra,
                    (gx, gy, min(zmax, total - z0)))
    if pieces > 1:
        record_sum_of_pieces(kb, dst, c, pieces, c_total(g), dtype, epi)


def record_sum_of_pieces(kb, part, c, pieces: int, n: int, dtype: str, epi=None) -> None:
    """``c[i] = sum_p part[p * n + i]`` (partial products of ``dtype``'s compute type), the pieces
    added in a fixed order, through ``epi`` when given (``kernels/gemm_reduce.wgsl``)."""
    acc = COMPUTE[dtype]
    value = epi.apply("s", "i") if epi is not None else ("f16(s)" if dtype == "float16" else "s")
    src = render("gemm_reduce", PARAMS=params_decl(1), ACC=acc, TC=epi.storage if epi is not None else STORAGE[dtype],
                 PIECES=pieces, STORE=value, EPILOGUE=epi.at(3).decls if epi is not None else "")
    extra = epi.at(3).bindings if epi is not None else []
    kb.dispatch(src, [("u", [n]), ("ro", part), ("rw", c)] + extra, -(-n // 256))
