"""Normalization and Adam kernels (semantics: ``ops/normalization.py``, ``ops/optimizer.py``).

The statistics are one pass over the data each (``channel_stats.py``): ``variance`` (with the
mean too, for a ``fused_siblings(mean+variance)`` step), ``normalization_gamma_gradient`` (with
the beta gradient too, for ``fused_siblings(normalization_beta_gradient+...)``) and the sums that
``normalization_gradient`` computes itself. The rest are passes over the shared kernels: the
bounded reductions of ``reduction.py`` (``reduce_dispatch``) and broadcasting elementwise maps
(``elementwise_source``, the broadcast index decoded with constants) with the op's formula in WGSL.
Intermediates live in float32 scratch buffers; float16 is widened to f32 and rounded once when stored. epsilon and the
count N enter the shaders as exact f32 bit patterns. Adam writes each of its outputs with its own
elementwise pass (each recomputes m and v: cheaper than a second buffer round trip).
"""
from __future__ import annotations

import numpy as np

from ...ops._util import normalize_axes
from ...types import num_elements
from .channel_stats import gradient_sums, moments
from .elementwise import elementwise_source, map_source
from .epilogue import epilogue_kernel
from .reduction import reduce_dispatch
from .registry import webgpu_kernel
from .wgsl import contiguous_strides, f32_literal


def _reduce(kb, src, dst, shape, axes, in_dtype: str, out_dtype: str, mean: bool = False) -> None:
    """``dst`` = sum (or mean) of ``src`` (of ``shape``) over ``axes``, kept as size 1."""
    st = contiguous_strides(shape)
    kept = (tuple(d for i, d in enumerate(shape) if i not in axes), tuple(s for i, s in enumerate(st) if i not in axes))
    red = (tuple(shape[i] for i in axes), tuple(st[i] for i in axes))
    reduce_dispatch(kb, src, dst, in_dtype, out_dtype, "sum", kept, red, mean=mean)


def _map(kb, ins, out, out_dtype: str, out_shape, expr) -> None:
    """``out`` = ``expr(values)`` elementwise with broadcasting; ``ins``: [(ref, dtype, shape)]."""
    src, params = elementwise_source([d for _, d, _ in ins], [s for _, _, s in ins], out_dtype, out_shape,
                                     lambda v, ct, o: expr(v), bake=True)
    binds = [("u", params)] + [("ro", r) for r, _, _ in ins] + [("rw", out)]
    kb.dispatch(src, binds, -(-params[0] // 256))


def _kept(shape, axes) -> tuple:
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _rstd(var: str, eps: float) -> str:
    return f"(1.0 / mg_sqrt({var} + {f32_literal(eps)}))"


@webgpu_kernel("variance")
def _variance(step, kb):
    """The variance, and first the mean for a ``fused_siblings(mean+variance)`` step."""
    x = step.in_types[0]
    dt, shape = x.dtype.name, tuple(x.shape)
    axes = normalize_axes(step.attrs["axes"], len(shape))
    outs = [(kb.output(i), t.dtype.name) for i, t in enumerate(step.out_types)]
    if num_elements(shape) == 0:  # 0 / 0: NaN, as the mean of an empty slice
        for ref, out_dt in outs:
            _reduce(kb, kb.input(0), ref, shape, axes, dt, out_dt, mean=True)
        return
    moments(kb, kb.input(0), dt, shape, axes, mean=outs[0] if len(outs) == 2 else None, variance=outs[-1])


def _operands(step, kb, first: int = 0):
    return [(kb.input(i), t.dtype.name, tuple(t.shape)) for i, t in enumerate(step.in_types) if i >= first]


def _normalized(v, eps: float) -> str:
    return f"(({v[0]} - {v[1]}) * {_rstd(v[2], eps)} * {v[3]} + {v[4]})"


@webgpu_kernel("normalize")
def _normalize(step, kb):
    eps = step.attrs["epsilon"]
    out = step.out_types[0]
    _map(kb, _operands(step, kb), kb.output(), out.dtype.name, tuple(out.shape), lambda v: _normalized(v, eps))


@epilogue_kernel("normalize", keeps=True)
def _normalize_epilogue(step, kb, epi) -> bool:
    """``normalize`` with the step's elementwise tail (a batch norm's ReLU6, a residual's
    addition) applied where each result is stored: one pass over memory instead of two (with
    the normalized value stored too where later steps read it, as a training step's ReLU6
    gradient)."""
    a = epi.anchor_step
    eps = a.attrs["epsilon"]
    ins = [(epi.input(i), t.dtype.name, tuple(t.shape)) for i, t in enumerate(a.in_types)]
    first = len(ins) + 2  # the parameters, the inputs, the output
    src, params = map_source([d for _, d, _ in ins], [s for _, _, s in ins], epi.out_type.dtype.name,
                             tuple(epi.out_type.shape), lambda v, ct: [f"  out[i] = {epi.apply(_normalized(v, eps), 'i')};"],
                             decls=epi.at(first).decls, bake=True)
    binds = [("u", params)] + [("ro", r) for r, _, _ in ins] + [("rw", kb.output())] + epi.at(first).bindings
    kb.dispatch(src, binds, -(-params[0] // 256))
    return True


def _axes(step) -> tuple:
    return normalize_axes(step.attrs["reduction_axes"], len(step.in_types[1].shape))


@webgpu_kernel("normalization_beta_gradient")
def _beta_gradient(step, kb):
    """sum(dy), by the kernel (and so with the bits) of a ``fused_siblings`` step's beta gradient."""
    dy = step.in_types[0]
    shape, out_dt = tuple(dy.shape), step.out_types[0].dtype.name
    if num_elements(shape) == 0:
        _reduce(kb, kb.input(0), kb.output(), shape, _axes(step), dy.dtype.name, out_dt)
        return
    gradient_sums(kb, (kb.input(0), dy.dtype.name), None, None, None, shape, _axes(step), 0.0,
                  beta=(kb.output(), out_dt))


def _per_channel(operand_shape, shape, axes) -> bool:
    """Whether a mean or variance operand of ``operand_shape`` holds one value per kept index of ``shape``."""
    kept = _kept(shape, axes)
    return (1,) * (len(kept) - len(operand_shape)) + tuple(operand_shape) == kept


def _gamma_gradient_into(kb, ins, dst, shape, axes, eps: float, out_dtype: str, beta=None) -> None:
    """``dst`` = sum over ``axes`` of dy * (x - mean) / sqrt(var + eps); ``ins``: dy, x, mean, var
    (``(ref, dtype, shape)``); ``beta``: ``(ref, dtype)`` to get sum(dy) from the same pass."""
    if all(_per_channel(s, shape, axes) for _, _, s in ins[2:4]):
        dy, x, mean, var = [(r, d) for r, d, _ in ins[:4]]
        gradient_sums(kb, dy, x, mean, var, shape, axes, eps, beta=beta, gamma=(dst, out_dtype))
        return
    prod = kb.scratch(4 * num_elements(shape))
    _map(kb, ins, prod, "float32", shape, lambda v: f"({v[0]} * ({v[1]} - {v[2]}) * {_rstd(v[3], eps)})")
    _reduce(kb, prod, dst, shape, axes, "float32", out_dtype)
    if beta is not None:
        gradient_sums(kb, ins[0][:2], None, None, None, shape, axes, eps, beta=beta)


@webgpu_kernel("normalization_gamma_gradient")
def _gamma_gradient(step, kb):
    """The gamma gradient, and first the beta gradient for a ``fused_siblings`` step of both."""
    shape = tuple(step.in_types[1].shape)
    outs = [(kb.output(i), t.dtype.name) for i, t in enumerate(step.out_types)]
    if num_elements(shape) == 0:
        for ref, out_dt in outs:
            _reduce(kb, kb.input(0), ref, shape, _axes(step), step.in_types[0].dtype.name, out_dt)
        return
    _gamma_gradient_into(kb, _operands(step, kb), outs[-1][0], shape, _axes(step), step.attrs["epsilon"],
                         outs[-1][1], beta=outs[0] if len(outs) == 2 else None)


@webgpu_kernel("normalization_gradient")
def _gradient(step, kb):
    shape = tuple(step.in_types[1].shape)
    if num_elements(shape) == 0:
        return
    axes, eps = _axes(step), step.attrs["epsilon"]
    nil = step.attrs.get("nil_inputs", ())
    ins = _operands(step, kb)
    kshape = _kept(shape, axes)
    gg = bg = None
    if "gamma_gradient" in nil:
        gg = kb.scratch(4 * num_elements(kshape))
        ins[5] = (gg, "float32", kshape)
    if "beta_gradient" in nil:
        bg = kb.scratch(4 * num_elements(kshape))
        ins[6] = (bg, "float32", kshape)
    if gg is not None:
        _gamma_gradient_into(kb, ins[:4], gg, shape, axes, eps, "float32",
                             beta=None if bg is None else (bg, "float32"))
    elif bg is not None:
        gradient_sums(kb, ins[0][:2], None, None, None, shape, axes, eps, beta=(bg, "float32"))
    n = f32_literal(float(np.prod([shape[a] for a in axes])))

    def expr(v):
        r = _rstd(v[3], eps)
        return f"({v[4]} * {r} * ({v[0]} - {v[6]} / {n} - ({v[1]} - {v[2]}) * {r} * {v[5]} / {n}))"
    _map(kb, ins, kb.output(), step.out_types[0].dtype.name, shape, expr)


def _adam_terms(v, amsgrad: bool) -> dict:
    lr, b1, b2, eps, p1, p2, w, m, vel, vmax, g = v
    terms = {"m": f"({b1} * {m} + (1.0 - {b1}) * {g})",
             "v": f"({b2} * {vel} + (1.0 - {b2}) * {g} * {g})"}
    terms["vmax"] = f"mg_max({vmax}, {terms['v']})" if amsgrad else terms["v"]
    lr_t = f"({lr} * mg_sqrt(1.0 - {p2}) / (1.0 - {p1}))"
    terms["w"] = f"({w} - {lr_t} * {terms['m']} / (mg_sqrt({terms['vmax']}) + {eps}))"
    return terms


@webgpu_kernel("adam")
def _adam(step, kb):
    amsgrad = len(step.out_types) == 4
    ins = _operands(step, kb)
    shape = tuple(step.out_types[0].shape)
    if num_elements(shape) == 0:
        return
    for i, key in enumerate(("w", "m", "v", "vmax")[:len(step.out_types)]):
        _map(kb, ins, kb.output(i), step.out_types[i].dtype.name, shape,
             lambda v, key=key: _adam_terms(v, amsgrad)[key])


@webgpu_kernel("stochastic_gradient_descent")
def _sgd(step, kb):
    out = step.out_types[0]
    if num_elements(tuple(out.shape)):
        _map(kb, _operands(step, kb), kb.output(), out.dtype.name, tuple(out.shape),
             lambda v: f"({v[1]} - {v[0]} * {v[2]})")
