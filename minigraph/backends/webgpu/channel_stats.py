"""Per-channel statistics of a normalization in one pass over the data: the mean and variance
of ``x`` (``moments``), and the two sums of its gradient, sum(dy) and sum(dy * xhat)
(``gradient_sums``), each over the reduction axes, one result per kept ("channel") index.

One kernel (``kernels/channel_stats.wgsl``) reads each element once and folds it into a record
per channel: the moments as (count, sum, M2), M2 merged with Chan et al.'s formula (Welford's
for one element), so no catastrophic cancellation as with sum(x^2) - sum(x)^2; the gradient sums as
two plain sums. A workgroup takes a block of channels (32 lanes of contiguous channels when the
channel axis is the innermost, as NHWC; one channel per lane row otherwise, as NCHW) and a chunk
of the reduction; with more than one chunk per channel, the records of the chunks go to a
scratch buffer and the same kernel merges them, in chunk order. The order of every merge is
fixed by the sizes alone: the same bits on every run.
"""
from __future__ import annotations

import numpy as np

from ...types import num_elements
from .wgsl import STORAGE, collapse, contiguous_strides, params_decl, render

PER = 64  # reduced elements (or records) one lane folds per chunk
# (first, second) op types whose steps over the same data the compiler may merge into one
# ``fused_siblings`` step (compiler/passes.py ``sibling_fusion``), run by the second's kernel
SIBLING_OPS = frozenset({("mean", "variance"), ("normalization_beta_gradient", "normalization_gamma_gradient")})

# (count, sum, M2): the mean is sum / count, so an infinite element gives an infinite mean (a
# running mean would meet inf - inf), and M2 grows by Chan's term of the two means' difference
_MOMENTS_MERGE = """\
  if (y.a == 0.0) { return x; }
  if (x.a == 0.0) { return y; }
  let n = x.a + y.a;
  let d = y.b / y.a - x.b / x.a;
  return Rec(n, x.b + y.b, x.c + y.c + d * d * (x.a * y.a / n));"""
_SUMS_MERGE = "  return Rec(x.a + y.a, x.b + y.b, 0.0);"


def _f32(x: float) -> str:
    bits = int(np.array(x, np.float32).view(np.uint32))
    return f"bitcast<f32>({bits:#010x}u)"


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _blocks(n_out: int, count: int, kept_inner_stride: int, records: bool) -> tuple:
    """(CB, R): channels and lanes per channel of a workgroup (CB * R = 256). Records of chunks
    are merged by the tree as far as they go (a lane folds few of them in sequence)."""
    if kept_inner_stride == 1 and n_out > 1 and not records:  # channels contiguous (NHWC): 32 at a time
        cb = min(32, _pow2_at_least(n_out))
        return cb, 256 // cb
    r = min(256, _pow2_at_least(count if records else -(-count // PER)))
    return 256 // r, r


def _pass(kb, n_out: int, count: int, kept, reduced, ins, outs, merge: str, element: str, setup: str,
          final_emit, records: bool = False) -> None:
    """One pass, or two and more when a channel's reduction is longer than one chunk.

    ``ins``: [(name, ref, storage type)] bound read-only; ``outs``: [(name, ref, storage type)]
    written by ``final_emit``, the WGSL body writing record ``r`` of channel ``o``."""
    kshape, (kst,) = collapse(*kept)
    rshape, (rst,) = collapse(*reduced)
    cb, r = _blocks(n_out, count, kst[-1], records)
    chunks = -(-count // (r * PER))
    params = [n_out, count, chunks]
    for k in reversed(range(len(kshape))):
        params += [kshape[k], kst[k]]
    for k in reversed(range(len(rshape))):
        params += [rshape[k], rst[k]]
    if chunks > 1:
        part = kb.scratch(4 * 3 * n_out * chunks)
        targets = [("part", part, "f32")]
        emit = ("  let p = 3u * (o * chunks + c);\n"
                "  part[p] = r.a; part[p + 1u] = r.b; part[p + 2u] = r.c;")
    else:
        targets, emit = outs, final_emit
    decls = [f"@group(0) @binding({1 + k}) var<storage, read> {name}: array<{ty}>;"
             for k, (name, _, ty) in enumerate(ins)]
    decls += [f"@group(0) @binding({1 + len(ins) + k}) var<storage, read_write> {name}: array<{ty}>;"
              for k, (name, _, ty) in enumerate(targets)]
    src = render("channel_stats", PARAMS=params_decl(len(params)), BINDINGS="\n".join(decls), CB=cb, R=r, PER=PER,
                 KR=len(kshape), RR=len(rshape), MERGE=merge, EMIT=emit, SETUP=setup, ELEMENT=element)
    binds = [("u", params)] + [("ro", ref) for _, ref, _ in ins] + [("rw", ref) for _, ref, _ in targets]
    kb.dispatch(src, binds, -(-n_out // cb) * chunks)
    if chunks > 1:
        _pass(kb, n_out, chunks, ((n_out,), (chunks,)), ((chunks,), (1,)), [("rec", part, "f32")], outs, merge,
              "Rec(rec[3u * i], rec[3u * i + 1u], rec[3u * i + 2u])", "", final_emit, records=True)


def _axes_split(shape, axes) -> tuple:
    """(kept, reduced): each (sizes, strides) of the contiguous ``shape``."""
    st = contiguous_strides(shape)
    kept = (tuple(d for i, d in enumerate(shape) if i not in axes), tuple(s for i, s in enumerate(st) if i not in axes))
    red = (tuple(shape[i] for i in axes), tuple(st[i] for i in axes))
    return kept, red


def _store(dtype: str, expr: str) -> str:
    return f"f16({expr})" if dtype == "float16" else expr


def moments(kb, x, x_dtype: str, shape, axes, mean=None, variance=None) -> None:
    """Record ``mean`` and/or ``variance`` (each ``(ref, dtype)`` or None) of ``x`` over ``axes``
    (the population variance, as ``variance``), in one pass. The reduction must not be empty."""
    kept, red = _axes_split(shape, axes)
    outs, emit = [], []
    if mean is not None:
        outs.append(("mean_out", mean[0], STORAGE[mean[1]]))
        emit.append(f"  mean_out[o] = {_store(mean[1], 'r.b / r.a')};")
    if variance is not None:
        outs.append(("var_out", variance[0], STORAGE[variance[1]]))
        emit.append(f"  var_out[o] = {_store(variance[1], 'r.c / r.a')};")
    _pass(kb, num_elements(kept[0]), num_elements(red[0]), kept, red, [("src", x, STORAGE[x_dtype])], outs,
          _MOMENTS_MERGE, "Rec(1.0, f32(src[i]), 0.0)", "", "\n".join(emit))


def gradient_sums(kb, dy, x, mean, variance, shape, axes, epsilon: float, beta=None, gamma=None) -> None:
    """Record ``beta`` = sum(dy) and/or ``gamma`` = sum(dy * (x - mean) / sqrt(variance + epsilon))
    over ``axes`` (each ``(ref, dtype)`` or None), in one pass over ``dy`` and ``x``. ``dy``,
    ``x``, ``mean``, ``variance``: ``(ref, dtype)`` (only ``dy`` is read for ``beta`` alone);
    ``mean`` and ``variance`` hold one value per kept index, in its order. sum(dy) is the same
    bits with or without ``gamma``."""
    kept, red = _axes_split(shape, axes)
    ins = [("dy", dy[0], STORAGE[dy[1]])]
    outs, emit = [], []
    if beta is not None:
        outs.append(("beta_out", beta[0], STORAGE[beta[1]]))
        emit.append(f"  beta_out[o] = {_store(beta[1], 'r.a')};")
    setup, element = "", "Rec(f32(dy[i]), 0.0, 0.0)"
    if gamma is not None:
        ins += [("x", x[0], STORAGE[x[1]]), ("mu", mean[0], STORAGE[mean[1]]), ("vr", variance[0], STORAGE[variance[1]])]
        outs.append(("gamma_out", gamma[0], STORAGE[gamma[1]]))
        emit.append(f"  gamma_out[o] = {_store(gamma[1], 'r.b')};")
        setup = f"    let m = f32(mu[o]);\n    let rs = 1.0 / mg_sqrt(f32(vr[o]) + {_f32(epsilon)});"
        element = "Rec(f32(dy[i]), f32(dy[i]) * ((f32(x[i]) - m) * rs), 0.0)"
    _pass(kb, num_elements(kept[0]), num_elements(red[0]), kept, red, ins, outs, _SUMS_MERGE, element, setup,
          "\n".join(emit))
