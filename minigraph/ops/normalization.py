"""Normalization (MPSGraph's MPSGraphNormalizationOps): variance, normalize and the three gradient
ops MPSGraph's own batch-norm training uses.

- ``variance`` is the population variance (divides by the count), reduced axes kept as size 1;
- ``normalize`` = ``(tensor - mean) / sqrt(variance + epsilon) * gamma + beta`` with broadcasting;
  ``gamma``/``beta`` may be None (MPSGraph's nil): the op then holds a neutral constant (1, 0) in
  that slot and remembers the slot in its hidden ``nil_inputs``, which Swift export writes as nil;
- with ``xhat = (source - mean) / sqrt(variance + epsilon)`` and N the number of elements over
  ``reduction_axes``: ``normalization_beta_gradient = sum(dy)``,
  ``normalization_gamma_gradient = sum(dy * xhat)`` (both over the axes, kept as size 1) and
  ``normalization_gradient = gamma / sqrt(variance + epsilon) * (dy - beta_gradient / N -
  xhat * gamma_gradient / N)``: the gradient toward ``source`` when mean and variance are the batch
  statistics of ``source`` over the axes, the paths through them included. A None ``gamma`` is 1;
  a None ``gamma_gradient``/``beta_gradient`` is computed from ``dy`` and ``source``.

Autodiff of ``normalize`` emits the three gradient ops when its mean and variance are ``g.mean``
and ``g.variance`` of its tensor over the same axes (a batch norm), and the elementwise gradients
otherwise (docs/normalization.md).
"""
from __future__ import annotations

from typing import Optional

from ..errors import DTypeError, MiniGraphError, ShapeError
from ..ir import Tensor
from ..types import ShapedType
from ._dynamic import element_count
from ._util import broadcast_shapes, normalize_axes, unbroadcast
from .registry import defop, gradient

_FORMS = ("variance(of:axes:name:)", "varianceOfTensor:axes:name:")


def _check_float(types, names, op: str) -> None:
    for t, n in zip(types, names):
        if not t.dtype.is_floating:
            raise DTypeError(f"{op}: {n} has dtype {t.dtype.name}; it needs a floating-point tensor "
                             "(float32 or float16); cast it first")
    for t, n in zip(types[1:], names[1:]):
        if t.dtype != types[0].dtype:
            raise DTypeError(f"{op}: {names[0]} is {types[0].dtype.name} but {n} is {t.dtype.name}; "
                             "all operands need one dtype (cast one with g.cast)")


def _kept(shape, axes) -> tuple:
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _infer_variance(in_types, attrs):
    t = in_types[0]
    _check_float(in_types, ("tensor",), "variance")
    axes = normalize_axes(attrs["axes"], len(t.shape))
    return [ShapedType(_kept(t.shape, axes), t.dtype)]


@defop("variance", swift=_FORMS[0], objc=_FORMS[1], inputs=("tensor",), infer=_infer_variance,
       family="normalization", attrs=("axes",))
def variance(g, tensor, axes=None, name: Optional[str] = None, mean: Optional[Tensor] = None):
    """Population variance ``mean((tensor - mean(tensor))^2)`` over ``axes`` (an int, a list, or None
    for all), keeping them as size 1 like ``g.mean`` (MPSGraph ``variance(of:axes:name:)``). An
    empty slice gives NaN. With ``mean`` (MPSGraph ``variance(of:mean:axes:name:)``) the given mean
    is used instead: ``mean((tensor - mean)^2)``, built as those elementwise and mean ops, so the
    gradient reaches ``mean`` too.

    Args:
        tensor: A float tensor of this graph.
        axes: Axes (ints; negative values count from the end), one int, or None for all.
        name: The op's name (MPSGraph's ``name:``).
        mean: A precomputed mean of ``tensor``'s dtype that broadcasts to ``tensor``'s shape
            (normally ``g.mean(tensor, axes)``); None computes it.

    Returns:
        Tensor: the variance, ``tensor``'s shape with ``axes`` of size 1.

    Raises:
        MiniGraphError: a DTypeError for a non-float tensor or a mean of another dtype, a ShapeError
            for a mean that does not broadcast to ``tensor``'s shape or a bad axis; the message
            names the op.
    """
    label = f"variance op {name or 'variance'!r}"
    tensor = g.as_tensor(tensor, label)
    if axes is not None and not isinstance(axes, int):
        axes = tuple(int(a) for a in axes)
    if mean is None:
        return g.add_op("variance", [tensor], {"axes": axes}, name).output
    mean = g.as_tensor(mean, label, like=tensor)
    try:
        _check_float([ShapedType(tensor.shape, tensor.dtype), ShapedType(mean.shape, mean.dtype)], ("tensor", "mean"), label)
        wanted = normalize_axes(axes, tensor.rank)
        if len(mean.shape) > tensor.rank or broadcast_shapes(tensor.shape, mean.shape) != tuple(tensor.shape):
            raise ShapeError(f"mean of shape {tuple(mean.shape)} must broadcast to the tensor's shape "
                             f"{tuple(tensor.shape)} without growing it (normally {_kept(tensor.shape, wanted)})")
    except ShapeError as e:
        raise ShapeError(f"{label}: {e}" if label not in str(e) else str(e)) from None
    with g.name_scope(name or "variance"):
        return g.mean(g.square(g.subtraction(tensor, mean)), axes=list(wanted))


@gradient("variance")
def _variance_gradient(g, op, dy, wanted):
    x = op.inputs[0]
    axes = normalize_axes(op.attrs["axes"], len(x.shape))
    n = element_count(g, x, axes)  # a tensor when an axis is known only at run time (a -1 batch)
    centred = g.subtraction(x, g.mean(x, axes=list(axes)))
    scale = 2.0 / max(n, 1.0) if isinstance(n, float) else g.division(2.0, g.maximum(n, 1.0))
    return [g.multiplication(dy, g.multiplication(centred, scale))]


# ------------------------------------------------------------------------------------- normalize
def _nil(attrs) -> tuple:
    return tuple(attrs.get("nil_inputs", ()))


def _infer_normalize(in_types, attrs):
    names = ("tensor", "mean", "variance", "gamma", "beta")
    _check_float(in_types, names, "normalize")
    _check_epsilon(attrs)
    try:
        shape = broadcast_shapes(*(t.shape for t in in_types))
    except ShapeError as e:
        raise ShapeError("tensor " + ", ".join(f"{n} {t.shape}" for n, t in zip(names, in_types))
                         + f" must broadcast together: {e}") from None
    return [ShapedType(shape, in_types[0].dtype)]


def _check_epsilon(attrs) -> None:
    eps = attrs["epsilon"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise ShapeError(f"epsilon must be a number, got {eps!r}")


def _optional(g, value, neutral: float, like: Tensor, label: str, slot: str, nil: list):
    """The tensor for an optional (MPSGraph nil-able) operand: a neutral constant when None."""
    if value is None:
        nil.append(slot)
        return g.constant(neutral, dtype=like.dtype)
    return g.as_tensor(value, label, like=like)


@defop("normalize", swift="normalize(_:mean:variance:gamma:beta:epsilon:name:)",
       objc="normalizationWithTensor:meanTensor:varianceTensor:gammaTensor:betaTensor:epsilon:name:",
       inputs=("tensor", "mean", "variance", "gamma", "beta"), infer=_infer_normalize,
       family="normalization", attrs=("epsilon",), hidden_attrs=("nil_inputs",))
def normalize(g, tensor, mean, variance, gamma: Optional[Tensor], beta: Optional[Tensor], epsilon: float,
              name: Optional[str] = None):
    """``(tensor - mean) / sqrt(variance + epsilon) * gamma + beta``, broadcasting (MPSGraph
    ``normalize(_:mean:variance:gamma:beta:epsilon:name:)``). ``gamma``/``beta`` may be None
    (MPSGraph's nil: no scale, no bias)."""
    label = f"normalize op {name or 'normalize'!r}"
    tensor = g.as_tensor(tensor, label)
    mean = g.as_tensor(mean, label, like=tensor)
    variance = g.as_tensor(variance, label, like=tensor)
    nil: list = []
    gamma = _optional(g, gamma, 1.0, tensor, label, "gamma", nil)
    beta = _optional(g, beta, 0.0, tensor, label, "beta", nil)
    attrs: dict = {"epsilon": float(epsilon) if isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool)
                   else epsilon}
    if nil:
        attrs["nil_inputs"] = tuple(nil)
    return g.add_op("normalize", [tensor, mean, variance, gamma, beta], attrs, name).output


def batch_statistics_axes(op) -> Optional[tuple]:
    """The reduction axes when ``normalize`` op ``op`` is a batch norm: its mean and variance are
    ``mean``/``variance`` of its own tensor over the same axes, its result has the tensor's
    shape and gamma and beta are constant along those axes; else None."""
    x, mean, var, gamma, beta = op.inputs
    mop, vop = mean.operation, var.operation
    if mop.type != "mean" or vop.type != "variance" or mop.inputs[0] is not x or vop.inputs[0] is not x:
        return None
    rank = len(x.shape)
    axes = normalize_axes(mop.attrs["axes"], rank)
    if normalize_axes(vop.attrs["axes"], rank) != axes or tuple(op.outputs[0].shape) != tuple(x.shape):
        return None
    for p in (gamma, beta):
        lead = rank - len(p.shape)
        if any(p.shape[a - lead] != 1 for a in axes if a >= lead):
            return None
    return axes


@gradient("normalize")
def _normalize_gradient(g, op, dy, wanted):
    x, mean, var, gamma, beta = op.inputs
    eps = op.attrs["epsilon"]
    nil = _nil(op.attrs)
    axes = batch_statistics_axes(op)
    if axes is not None:
        ax = list(axes)
        gg = g.normalization_gamma_gradient(dy, x, mean, var, ax, eps)
        bg = g.normalization_beta_gradient(dy, x, ax)
        dx = g.normalization_gradient(dy, x, mean, var, None if "gamma" in nil else gamma, gg, bg, ax, eps) \
            if wanted[0] else None
        return [dx, None, None,
                unbroadcast(g, gg, gamma.shape) if wanted[3] and "gamma" not in nil else None,
                unbroadcast(g, bg, beta.shape) if wanted[4] and "beta" not in nil else None]
    r = g.reciprocal(g.square_root(g.addition(var, eps)))
    centred = g.subtraction(x, mean)
    dxhat = g.multiplication(dy, gamma)
    out: list = [None] * 5
    if wanted[0]:
        out[0] = unbroadcast(g, g.multiplication(dxhat, r), x.shape)
    if wanted[1]:
        out[1] = unbroadcast(g, g.negative(g.multiplication(dxhat, r)), mean.shape)
    if wanted[2]:
        r3 = g.multiplication(g.multiplication(r, r), r)
        out[2] = unbroadcast(g, g.multiplication(g.multiplication(dxhat, centred), g.multiplication(r3, -0.5)),
                             var.shape)
    if wanted[3] and "gamma" not in nil:
        out[3] = unbroadcast(g, g.multiplication(dy, g.multiplication(centred, r)), gamma.shape)
    if wanted[4] and "beta" not in nil:
        out[4] = unbroadcast(g, dy, beta.shape)
    return out


# ------------------------------------------------------------------------------ gradient ops
def _check_source_like(in_types, names, op: str) -> None:
    dy, x = in_types[0], in_types[1]
    if tuple(dy.shape) != tuple(x.shape):
        raise ShapeError(f"{op}: {names[0]} {dy.shape} must have the shape of {names[1]} {x.shape}")
    for t, n in zip(in_types[2:], names[2:]):
        try:
            if broadcast_shapes(t.shape, x.shape) != tuple(x.shape):
                raise ShapeError("")
        except ShapeError:
            raise ShapeError(f"{op}: {n} {t.shape} must broadcast to source {x.shape} (e.g. the source's shape "
                             "with the reduction axes as size 1)") from None


def _reduction_axes(attrs, rank: int) -> tuple:
    return normalize_axes(attrs["reduction_axes"], rank, "reduction_axes")


def _infer_gamma_grad(in_types, attrs):
    names = ("incoming_gradient", "source", "mean", "variance")
    _check_float(in_types, names, "normalization_gamma_gradient")
    _check_source_like(in_types, names, "normalization_gamma_gradient")
    _check_epsilon(attrs)
    x = in_types[1]
    return [ShapedType(_kept(x.shape, _reduction_axes(attrs, len(x.shape))), x.dtype)]


def _infer_beta_grad(in_types, attrs):
    names = ("incoming_gradient", "source")
    _check_float(in_types, names, "normalization_beta_gradient")
    _check_source_like(in_types, names, "normalization_beta_gradient")
    x = in_types[1]
    return [ShapedType(_kept(x.shape, _reduction_axes(attrs, len(x.shape))), x.dtype)]


def _infer_grad(in_types, attrs):
    names = ("incoming_gradient", "source", "mean", "variance", "gamma", "gamma_gradient", "beta_gradient")
    _check_float(in_types, names, "normalization_gradient")
    _check_source_like(in_types, names, "normalization_gradient")
    _check_epsilon(attrs)
    x = in_types[1]
    _reduction_axes(attrs, len(x.shape))
    return [ShapedType(x.shape, x.dtype)]


def _axes_attr(axes, rank: int, label: str) -> tuple:
    """The reduction axes as sorted non-negative ints (Swift export writes them as they are)."""
    try:
        return normalize_axes(axes, rank, "reduction_axes")
    except MiniGraphError as e:
        raise type(e)(f"{label}: {e}") from None


@defop("normalization_gamma_gradient",
       swift="normalizationGammaGradient(withIncomingGradientTensor:sourceTensor:mean:varianceTensor:reductionAxes:"
             "epsilon:name:)",
       objc="normalizationGammaGradientWithIncomingGradientTensor:sourceTensor:meanTensor:varianceTensor:"
            "reductionAxes:epsilon:name:",
       inputs=("incoming_gradient", "source", "mean", "variance"), infer=_infer_gamma_grad,
       family="normalization", role="weights_gradient", forward="normalize", differentiable=False,
       attrs=("reduction_axes", "epsilon"))
def normalization_gamma_gradient(g, incoming_gradient, source, mean, variance, reduction_axes, epsilon: float,
                                 name: Optional[str] = None):
    """``sum(incoming_gradient * (source - mean) / sqrt(variance + epsilon))`` over ``reduction_axes``,
    kept as size 1: the gradient toward ``normalize``'s gamma (MPSGraph
    ``normalizationGammaGradient(withIncomingGradientTensor:sourceTensor:mean:varianceTensor:reductionAxes:epsilon:name:)``).
    Not differentiable."""
    label = f"normalization_gamma_gradient op {name or 'normalization_gamma_gradient'!r}"
    dy = g.as_tensor(incoming_gradient, label)
    x = g.as_tensor(source, label, like=dy)
    ins = [dy, x, g.as_tensor(mean, label, like=dy), g.as_tensor(variance, label, like=dy)]
    return g.add_op("normalization_gamma_gradient", ins,
                    {"reduction_axes": _axes_attr(reduction_axes, len(x.shape), label), "epsilon": float(epsilon)},
                    name).output


@defop("normalization_beta_gradient",
       swift="normalizationBetaGradient(withIncomingGradientTensor:sourceTensor:reductionAxes:name:)",
       objc="normalizationBetaGradientWithIncomingGradientTensor:sourceTensor:reductionAxes:name:",
       inputs=("incoming_gradient", "source"), infer=_infer_beta_grad, family="normalization",
       role="weights_gradient", forward="normalize", attrs=("reduction_axes",))
def normalization_beta_gradient(g, incoming_gradient, source, reduction_axes, name: Optional[str] = None):
    """``sum(incoming_gradient)`` over ``reduction_axes``, kept as size 1: the gradient toward
    ``normalize``'s beta (MPSGraph
    ``normalizationBetaGradient(withIncomingGradientTensor:sourceTensor:reductionAxes:name:)``)."""
    label = f"normalization_beta_gradient op {name or 'normalization_beta_gradient'!r}"
    dy = g.as_tensor(incoming_gradient, label)
    x = g.as_tensor(source, label, like=dy)
    return g.add_op("normalization_beta_gradient", [dy, x],
                    {"reduction_axes": _axes_attr(reduction_axes, len(x.shape), label)}, name).output


@gradient("normalization_beta_gradient")
def _beta_gradient_gradient(g, op, dz, wanted):
    """A sum over the axes: its adjoint spreads ``dz`` back over them; the source only gives the shape."""
    return [g.broadcast(dz, op.inputs[1].shape) if wanted[0] else None, None]


@defop("normalization_gradient",
       swift="normalizationGradient(withIncomingGradientTensor:sourceTensor:mean:varianceTensor:gammaTensor:"
             "gammaGradientTensor:betaGradientTensor:reductionAxes:epsilon:name:)",
       objc="normalizationGradientWithIncomingGradientTensor:sourceTensor:meanTensor:varianceTensor:gammaTensor:"
            "gammaGradientTensor:betaGradientTensor:reductionAxes:epsilon:name:",
       inputs=("incoming_gradient", "source", "mean", "variance", "gamma", "gamma_gradient", "beta_gradient"),
       infer=_infer_grad, family="normalization", role="data_gradient", forward="normalize",
       differentiable=False, attrs=("reduction_axes", "epsilon"), hidden_attrs=("nil_inputs",))
def normalization_gradient(g, incoming_gradient, source, mean, variance, gamma: Optional[Tensor],
                           gamma_gradient: Optional[Tensor], beta_gradient: Optional[Tensor],
                           reduction_axes, epsilon: float, name: Optional[str] = None):
    """The gradient toward ``source`` of a batch norm whose mean and variance are the statistics of
    ``source`` over ``reduction_axes``: ``gamma / sqrt(variance + epsilon) * (dy - beta_gradient / N
    - xhat * gamma_gradient / N)``, N the count over the axes (MPSGraph ``normalizationGradient``).
    ``gamma`` None is 1; ``gamma_gradient``/``beta_gradient`` None are computed here. Not differentiable."""
    label = f"normalization_gradient op {name or 'normalization_gradient'!r}"
    dy = g.as_tensor(incoming_gradient, label)
    x = g.as_tensor(source, label, like=dy)
    nil: list = []
    ins = [dy, x, g.as_tensor(mean, label, like=dy), g.as_tensor(variance, label, like=dy),
           _optional(g, gamma, 1.0, dy, label, "gamma", nil),
           _optional(g, gamma_gradient, 0.0, dy, label, "gamma_gradient", nil),
           _optional(g, beta_gradient, 0.0, dy, label, "beta_gradient", nil)]
    attrs: dict = {"reduction_axes": _axes_attr(reduction_axes, len(x.shape), label), "epsilon": float(epsilon)}
    if nil:
        attrs["nil_inputs"] = tuple(nil)
    return g.add_op("normalization_gradient", ins, attrs, name).output
