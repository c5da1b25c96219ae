"""Scaled dot-product attention (MPSGraph ``scaledDotProductAttention``, macOS 15 / iOS 18).

``result = softmax(scale * query @ key^T + mask, axis=-1) @ value`` in one op, as Apple's page
describes it (https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/
scaleddotproductattention(query:key:value:mask:scale:name:)):

- ``query`` is ``[..., Nq, D]``, ``key`` ``[..., Nkv, D]``, ``value`` ``[..., Nkv, Dv]``, usually
  ``[B, H, N, D]``; the leading (batch, head) axes broadcast as ``matrixMultiplication``'s do
  (Apple: "Q's H dimension expandable to satisfy matmul QK^T"), so one key/value head may serve
  every query head. The result is ``[broadcast batch..., Nq, Dv]``.
- ``mask`` is additive (Apple's ``QK^T + M``): a tensor of the query's dtype that broadcasts to
  the scores ``[batch..., Nq, Nkv]`` without enlarging them (as PyTorch's ``attn_mask``); ``-inf``
  removes a key. A boolean mask is refused: ``g.select(keep, 0.0, -inf)`` makes the additive one.
  None (MPSGraph's nil, the variant ``scaledDotProductAttention(query:key:value:scale:name:)``)
  holds a neutral 0 and is remembered in the hidden ``nil_inputs``, which Swift export writes as nil.
- ``scale`` has no default, as in Apple's signature (``1 / sqrt(D)`` is the usual choice).
- A row whose every score is ``-inf`` (all keys masked) gives 0, and a gradient of 0, as
  PyTorch's ``scaled_dot_product_attention`` does; Apple does not say. NaN anywhere in a row's
  scores gives a NaN row; ``+inf`` a NaN row (``inf - inf``), as a max-subtracted softmax does.

MPSGraph has no attention gradient op: the gradient rule recomputes the probabilities with
ordinary ops (max-subtracted, 0 for a fully masked row) and builds the usual products.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..descriptors import SDPADescriptor
from ..errors import DescriptorError, DTypeError, ShapeError
from ..types import ShapedType
from ._util import broadcast_shapes, unbroadcast
from .registry import defop, gradient

_OP = "scaled_dot_product_attention"
_NAMES = ("query", "key", "value", "mask")


class AttentionScaleError(DescriptorError, TypeError):
    """``scale`` missing or not a number (a TypeError too, as a missing argument is in Python)."""


def nil_inputs(attrs) -> tuple:
    return tuple(attrs.get("nil_inputs", ()))


def _fits(a: int, b: int) -> bool:
    return a == b or -1 in (a, b)


def attention_shapes(in_types, attrs) -> tuple:
    """(batch, Nq, Nkv, D, Dv) of an attention op's types, checked; batch is the broadcast of
    the query's, key's and value's leading axes."""
    q, k, v, m = in_types
    for t, n in zip(in_types, _NAMES):
        if not t.dtype.is_floating:
            raise DTypeError(f"{n} has dtype {t.dtype.name}; attention needs floating-point tensors "
                             "(float32 or float16)" + ("; make a boolean mask additive with "
                                                       "g.select(mask, 0.0, -inf)" if n == "mask" else ""))
        if t.dtype != q.dtype:
            raise DTypeError(f"query is {q.dtype.name} but {n} is {t.dtype.name}; all operands need one "
                             "dtype (cast one with g.cast)")
    for t, n in zip(in_types[:3], _NAMES):
        if len(t.shape) < 2:
            raise ShapeError(f"{n} {t.shape} needs rank >= 2 ([..., sequence, features], usually "
                             "[B, H, N, D])")
    if not _fits(q.shape[-1], k.shape[-1]):
        raise ShapeError(f"query {q.shape} and key {k.shape} need the same last (feature) dimension: "
                         f"{q.shape[-1]} != {k.shape[-1]}")
    if not _fits(k.shape[-2], v.shape[-2]):
        raise ShapeError(f"key {k.shape} and value {v.shape} need the same sequence length (dimension -2): "
                         f"{k.shape[-2]} != {v.shape[-2]}")
    try:
        batch = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ShapeError:
        raise ShapeError(f"the leading (batch, head) dimensions of query {q.shape}, key {k.shape} and "
                         f"value {v.shape} do not broadcast (each pair must be equal or 1)") from None
    nkv = k.shape[-2] if k.shape[-2] != -1 else v.shape[-2]
    scores = batch + (q.shape[-2], nkv)
    if "mask" not in nil_inputs(attrs):
        try:
            fit = broadcast_shapes(m.shape, scores)
        except ShapeError:
            fit = None
        if fit is None or len(m.shape) > len(scores) or any(not _fits(a, b) for a, b in zip(fit, scores)):
            raise ShapeError(f"mask {m.shape} must broadcast to the scores query @ key^T {scores} "
                             "([..., Nq, Nkv]) without enlarging them")
    return batch, q.shape[-2], nkv, q.shape[-1], v.shape[-1]


def _check_scale(scale) -> float:
    if scale is None:
        raise AttentionScaleError(f"{_OP}: scale is required (MPSGraph's scale: has no default; "
                                  "1 / sqrt(D), D the query's last dimension, is the usual value)")
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise AttentionScaleError(f"{_OP}: scale must be a number (MPSGraph's Float), got {scale!r}")
    return float(scale)


def _infer(in_types, attrs):
    _check_scale(attrs["scale"])
    batch, nq, _, _, dv = attention_shapes(in_types, attrs)
    return [ShapedType(batch + (nq, dv), in_types[0].dtype)]


@defop(_OP, swift="scaledDotProductAttention(query:key:value:mask:scale:name:)",
       objc="scaledDotProductAttentionWithQueryTensor:keyTensor:valueTensor:maskTensor:scale:name:",
       inputs=_NAMES, infer=_infer, family="attention", attrs=("scale",), hidden_attrs=("nil_inputs",),
       since=("15.0", "18.0"))
def scaled_dot_product_attention(g, query, key, value, mask=None, scale: Optional[float] = None,
                                 name: Optional[str] = None, descriptor: Optional[SDPADescriptor] = None):
    """``softmax(scale * query @ key^T + mask) @ value`` over the last axis, max-subtracted
    (MPSGraph ``scaledDotProductAttention(query:key:value:mask:scale:name:)``; with ``mask=None``
    the variant ``scaledDotProductAttention(query:key:value:scale:name:)``).

    Shapes ``query [..., Nq, D]``, ``key [..., Nkv, D]``, ``value [..., Nkv, Dv]`` (usually
    ``[B, H, N, D]``), leading axes broadcast; result ``[..., Nq, Dv]``. ``mask``: additive, of
    the query's dtype, broadcasting to ``[..., Nq, Nkv]`` (``-inf`` drops a key; a row with every
    key dropped gives 0, as PyTorch). ``scale``: required, as in MPSGraph (usually ``1 / sqrt(D)``).
    See docs/attention.md.

    Args:
        query: A tensor of this graph, ``[..., Nq, D]``.
        key: A tensor of this graph, ``[..., Nkv, D]``.
        value: A tensor of this graph, ``[..., Nkv, Dv]``.
        mask: None (MPSGraph's nil) or an additive tensor (or number) broadcasting to the scores.
        scale: The factor of ``query @ key^T`` (MPSGraph's ``scale:``, a Float; no default).
        name: The op's name (MPSGraph's ``name:``); None uses the op type.
        descriptor: Instead of ``mask`` and ``scale``, an ``mg.SDPADescriptor`` (MPSGraph
            ``scaledDotProductAttention(query:key:value:descriptor:name:)``): its scale, mask or
            causal mask and attention sinks, built from this op with a virtual key (docs/attention.md).

    Returns:
        Tensor: ``[broadcast batch..., Nq, Dv]`` in the query's dtype (MPSGraph
        ``scaledDotProductAttention(query:key:value:mask:scale:name:)``).

    Raises:
        MiniGraphError: a ShapeError or DTypeError when the operands do not fit, an
        AttentionScaleError (a DescriptorError and TypeError) without a numeric ``scale``.
    """
    label = f"{_OP} op {name or _OP!r}"
    if descriptor is not None:
        if mask is not None or scale is not None:
            raise DescriptorError(f"{label}: give mask and scale, or a descriptor, not both")
        return _with_descriptor(g, query, key, value, descriptor, name, label)
    scale = _check_scale(scale)
    query = g.as_tensor(query, label)
    key = g.as_tensor(key, label, like=query)
    value = g.as_tensor(value, label, like=query)
    attrs: dict = {"scale": scale}
    if mask is None:
        mask = g.constant(0.0, dtype=query.dtype)
        attrs["nil_inputs"] = ("mask",)
    else:
        mask = g.as_tensor(mask, label, like=query)
    return g.add_op(_OP, [query, key, value, mask], attrs, name).output


def _with_descriptor(g, query, key, value, desc, name, label):
    """The descriptor form from the mask form: ``is_causal`` is the additive mask 0 where key
    position <= query position, -inf above; sinks add a virtual key (zero key and value rows) whose
    score is the head's sink, so the real weights sum to ``1 - p(sink)`` and it adds nothing."""
    if not isinstance(desc, SDPADescriptor):
        raise DescriptorError(f"{label}: descriptor must be an mg.SDPADescriptor, got {type(desc).__name__}")
    scale = _check_scale(desc.scale)
    query = g.as_tensor(query, label)
    key = g.as_tensor(key, label, like=query)
    value = g.as_tensor(value, label, like=query)
    mask = None if desc.mask_tensor is None else g.as_tensor(desc.mask_tensor, label, like=query)
    if desc.is_causal and mask is not None:
        raise DescriptorError(f"{label}: is_causal and mask_tensor are mutually exclusive (Apple's "
                              "MPSGraphSDPADescriptor); put the causal part into the mask")
    dt = query.dtype.np_dtype
    if desc.is_causal or desc.sinks_tensor is not None:
        dims = [query.shape, key.shape, value.shape] + ([mask.shape] if mask is not None else [])
        if any(-1 in d for d in dims) or min(query.rank, key.rank, value.rank) < 2:
            raise ShapeError(f"{label}: is_causal and sinks_tensor need static shapes of rank >= 2, got "
                             f"query {query.shape}, key {key.shape}, value {value.shape}")
    nq, nkv = query.shape[-2], key.shape[-2]
    with g.name_scope(name or _OP):
        if desc.is_causal:
            mask = g.constant(np.where(np.tri(nq, nkv, dtype=bool), 0.0, -np.inf).astype(dt), name="causal_mask")
        if desc.sinks_tensor is None:
            parts = None
        else:
            sinks = g.as_tensor(desc.sinks_tensor, label, like=query)
            batch = attention_shapes([ShapedType(t.shape, t.dtype) for t in (query, key, value, query)],
                                     {"nil_inputs": ("mask",)})[0]
            if sinks.rank != 1 or not batch or batch[-1] not in (1, sinks.shape[0]):
                raise ShapeError(f"{label}: sinks_tensor {sinks.shape} must have shape [heads], the heads "
                                 f"being axis -3 of the scores {batch + (nq, nkv)}")
            batch = batch[:-1] + (sinks.shape[0],)
            scores = batch + (nq, nkv)
            zero_k = g.constant(np.zeros(key.shape[:-2] + (1, key.shape[-1]), dt), name="sink_key")
            zero_v = g.constant(np.zeros(value.shape[:-2] + (1, value.shape[-1]), dt), name="sink_value")
            base = g.broadcast(mask, scores) if mask is not None else g.constant(np.zeros((), dt), shape=scores)
            column = g.broadcast(g.reshape(sinks, [sinks.shape[0], 1, 1]), batch + (nq, 1))
            parts = (g.concat([key, zero_k], -2), g.concat([value, zero_v], -2), g.concat([base, column], -1))
    if parts is not None:
        key, value, mask = parts
    return g.scaled_dot_product_attention(query, key, value, mask, scale, name=name)


def attention_probabilities(g, query, key, mask, scale: float, masked: bool):
    """``softmax(scale * query @ key^T + mask)`` from ordinary ops, max-subtracted, with 0 for a
    row whose every score is -inf (the maximum is clamped to the dtype's lowest finite value, so
    such a row is exp(-inf) = 0 over a sum of 0, which ``division_no_nan`` makes 0)."""
    s = g.multiplication(g.matrix_multiplication(query, g.transpose(key, -1, -2)), scale)
    if masked:
        s = g.addition(s, mask)
    lowest = float(np.finfo(query.dtype.np_dtype).min)
    m = g.maximum(g.reduction_maximum_propagate_nan(s, axes=[-1]), lowest)
    e = g.exponent(g.subtraction(s, m))
    return g.division_no_nan(e, g.reduction_sum(e, axes=[-1]))


@gradient(_OP)
def _attention_gradient(g, op, dy, wanted):
    q, k, v, mask = op.inputs
    scale = op.attrs["scale"]
    masked = "mask" not in nil_inputs(op.attrs)
    p = attention_probabilities(g, q, k, mask, scale, masked)
    out: list = [None] * 4
    if wanted[2]:
        out[2] = unbroadcast(g, g.matrix_multiplication(g.transpose(p, -1, -2), dy), v.shape)
    if not (wanted[0] or wanted[1] or (wanted[3] and masked)):
        return out
    dp = g.matrix_multiplication(dy, g.transpose(v, -1, -2))
    ds = g.multiplication(p, g.subtraction(dp, g.reduction_sum(g.multiplication(dp, p), axes=[-1])))
    if wanted[0]:
        out[0] = unbroadcast(g, g.multiplication(g.matrix_multiplication(ds, k), scale), q.shape)
    if wanted[1]:
        out[1] = unbroadcast(g, g.multiplication(g.matrix_multiplication(g.transpose(ds, -1, -2), q), scale),
                             k.shape)
    if wanted[3] and masked:
        out[3] = unbroadcast(g, ds, mask.shape)
    return out
