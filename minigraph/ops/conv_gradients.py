"""The gradient rules every convolution family shares (docs/mpsgraph-spec.md §4.2, §6).

A family is a forward op y = F(x, W) with its two gradient ops, found by their ``OpDef``:
the data gradient D (``role="data_gradient"``) and the weights gradient G
(``role="weights_gradient"``), each with ``forward`` naming F.
"""
from __future__ import annotations

from ..ir import OPS, OpDef
from .registry import gradient


def gradient_ops(forward: str) -> tuple[OpDef, OpDef]:
    """The ``(data gradient, weights gradient)`` ops declared for the forward op type ``forward``."""
    roles = {d.role: d for d in OPS.values() if d.forward == forward}
    return roles["data_gradient"], roles["weights_gradient"]


def register_convolution_gradients(forward: str) -> None:
    """Add the gradient rules of a convolution family, once its three ops are declared.

    dx = D(dy, W) with x's shape and dW = G(dy, x) with W's shape. D is bilinear with
    <u, D(dy, W)> = <F(u, W), dy> = <G(dy, u), W>, so its gradients are F(u, W) for dy and
    G(incoming=dy, source=u) for W. G itself has no rule (not differentiable, as in MPSGraph).
    """
    data_op, weights_op = gradient_ops(forward)
    forward_op, data_gradient, weights_gradient = OPS[forward].builder, data_op.builder, weights_op.builder
    assert forward_op is not None and data_gradient is not None and weights_gradient is not None

    @gradient(forward)
    def _forward(g, op, dy, wanted):
        x, w = op.inputs
        desc = op.attrs["descriptor"]
        return [data_gradient(g, dy, w, output_shape=x.shape, descriptor=desc) if wanted[0] else None,
                weights_gradient(g, dy, x, output_shape=w.shape, descriptor=desc) if wanted[1] else None]

    @gradient(data_op.type)
    def _data_gradient(g, op, u, wanted):
        dy, w = op.inputs
        desc = op.attrs["descriptor"]
        return [forward_op(g, u, w, descriptor=desc) if wanted[0] else None,
                weights_gradient(g, dy, u, output_shape=w.shape, descriptor=desc) if wanted[1] else None]
