"""Per-channel statistics of a normalization in one pass over the data: the mean and variance
of ``x`` (``moments``), and the two sums of its gradient, sum(dy) and sum(dy * xhat)
(``gradient_sums``), each over the reduction axes, one result per kept ("channel") index.

One kernel (``kernels/channel_stats.wgsl``) reads each element once and folds it into a record
per channel: the moments as (count, mean, M2, sum), merged with Chan et al.'s formula (Welford's
for one element), so no catastrophic cancellation as with sum(x^2) - sum(x)^2 (the sum serves
values that are not finite); the gradient sums as
two plain sums. A workgroup takes a block of channels (32 lanes of contiguous channels when the
channel axis is the innermost, as NHWC; one channel per lane row otherwise, as NCHW) and a chunk
of the reduction; with more than one chunk per channel, the records of the chunks go to a
scratch buffer and the same kernel merges them, in chunk order. The order of every merge is
fixed by the sizes alone: the same bits on every run.
"""
from __future__ import annotations


from ...types import num_elements
from .wgsl import STORAGE, collapse, contiguous_strides, f32_literal, params_decl, pow2_at_least, render

PER = 64  # reduced elements (or records) one lane folds per chunk
# (first, second) op types whose steps over the same data the compiler may merge into one
# ``fused_siblings`` step (compiler/passes.py ``sibling_fusion``), run by the second's kernel
SIBLING_OPS = frozenset({("mean", "variance"), ("normalization_beta_gradient", "normalization_gamma_gradient")})

# (count, mean, M2, sum): the running mean and M2 by Chan's formula (the mean of 10^7 x 0.1 stays
# 0.1, where sum / count drifts by ulps), the sum beside them for values that are not finite: a
# running mean meets inf - inf once an infinite element was folded in, the sum gives inf
_MOMENTS_MERGE = """\
  if (y.a == 0.0) { return x; }
  if (x.a == 0.0) { return y; }
  let n = x.a + y.a;
  let d = y.b - x.b;
  let w = y.a / n;
  return Rec(n, x.b + d * w, x.c + y.c + d * d * x.a * w, x.d + y.d);"""
# the mean: the running one, or sum / count where that is not finite (an infinite or NaN element);
# the variance NaN where the sum is not finite, as NumPy's (inf - inf in the deviations)
_MEAN = "select(r.b, r.d / r.a, mg_isnan(r.b) || mg_isinf(r.b))"
_VARIANCE = "select(r.c / r.a, mg_nan(), mg_isnan(r.d) || mg_isinf(r.d))"
_SUMS_MERGE = "  return Rec(x.a + y.a, x.b + y.b, 0.0, 0.0);"


def _blocks(n_out: int, count: int, kept_inner_stride: int, records: bool) -> tuple:
    """(CB, R): channels and lanes per channel of a workgroup (CB * R = 256). Records of chunks
    are merged by the tree as far as they go (a lane folds few of them in sequence)."""
    if kept_inner_stride == 1 and n_out > 1 and not records:  # channels contiguous (NHWC): 32 at a time
        cb = min(32, pow2_at_least(n_out))
        return cb, 256 // cb
    r = min(256, pow2_at_least(count if records else -(-count // PER)))
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
    if chunks > 1:
        part = kb.scratch(4 * 4 * n_out * chunks)
        targets = [("part", part, "f32")]
        emit = ("  let p = 4u * (o * chunks + c);\n"
                "  part[p] = r.a; part[p + 1u] = r.b; part[p + 2u] = r.c; part[p + 3u] = r.d;")
    else:
        targets, emit = outs, final_emit
    decls = [f"@group(0) @binding({1 + k}) var<storage, read> {name}: array<{ty}>;"
             for k, (name, _, ty) in enumerate(ins)]
    decls += [f"@group(0) @binding({1 + len(ins) + k}) var<storage, read_write> {name}: array<{ty}>;"
              for k, (name, _, ty) in enumerate(targets)]
    src = render("channel_stats", PARAMS=params_decl(len(params)), BINDINGS="\n".join(decls), CB=cb, R=r, PER=PER,
                 INDEX_FNS=_offset_fn("base_of", "o", kshape, kst) + "\n\n" + _offset_fn("off_of", "j", rshape, rst),
                 MERGE=merge, EMIT=emit, SETUP=setup, ELEMENT=element)
    binds = [("u", params)] + [("ro", ref) for _, ref, _ in ins] + [("rw", ref) for _, ref, _ in targets]
    kb.dispatch(src, binds, -(-n_out // cb) * chunks)
    if chunks > 1:
        _pass(kb, n_out, chunks, ((n_out,), (chunks,)), ((chunks,), (1,)), [("rec", part, "f32")], outs, merge,
              "Rec(rec[4u * i], rec[4u * i + 1u], rec[4u * i + 2u], rec[4u * i + 3u])", "", final_emit,
              records=True)


def _offset_fn(name: str, arg: str, sizes, strides) -> str:
    """A WGSL function from a row-major index over ``sizes`` to its offset through ``strides``,
    the sizes and strides as constants, innermost axis first."""
    lines = [f"fn {name}({arg}: u32) -> u32 {{", f"  var r = {arg};", "  var b = 0u;"]
    for k in reversed(range(len(sizes))):
        lines.append(f"  b = b + (r % {sizes[k]}u) * {strides[k]}u; r = r / {sizes[k]}u;")
    return "\n".join(lines + ["  return b;", "}"])


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
        emit.append(f"  mean_out[o] = {_store(mean[1], _MEAN)};")
    if variance is not None:
        outs.append(("var_out", variance[0], STORAGE[variance[1]]))
        emit.append(f"  var_out[o] = {_store(variance[1], _VARIANCE)};")
    _pass(kb, num_elements(kept[0]), num_elements(red[0]), kept, red, [("src", x, STORAGE[x_dtype])], outs,
          _MOMENTS_MERGE, "Rec(1.0, f32(src[i]), 0.0, f32(src[i]))", "", "\n".join(emit))


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
    setup, element = "", "Rec(f32(dy[i]), 0.0, 0.0, 0.0)"
    if gamma is not None:
        ins += [("x", x[0], STORAGE[x[1]]), ("mu", mean[0], STORAGE[mean[1]]), ("vr", variance[0], STORAGE[variance[1]])]
        outs.append(("gamma_out", gamma[0], STORAGE[gamma[1]]))
        emit.append(f"  gamma_out[o] = {_store(gamma[1], 'r.b')};")
        setup = f"    let m = f32(mu[o]);\n    let rs = 1.0 / mg_sqrt(f32(vr[o]) + {f32_literal(epsilon)});"
        element = "Rec(f32(dy[i]), f32(dy[i]) * ((f32(x[i]) - m) * rs), 0.0, 0.0)"
    _pass(kb, num_elements(kept[0]), num_elements(red[0]), kept, red, ins, outs, _SUMS_MERGE, element, setup,
          "\n".join(emit))
