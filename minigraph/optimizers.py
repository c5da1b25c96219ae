"""Optimizer updates built from graph ops; each returns an ``Operation`` to put in
``target_operations`` (MPSGraph ``applyStochasticGradientDescent``, ``adam``)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .errors import DTypeError, ShapeError
from .ir import Operation, Tensor


def _check_gradient(g, v: Tensor, gradient, label: str):
    """The gradient must have the variable's shape and dtype: a broadcastable one (e.g. a bias
    gradient given for a weight) would otherwise update every element with the same value."""
    gradient = g.as_tensor(gradient, label, like=v)
    if gradient.dtype != v.dtype:
        raise DTypeError(f"{label}: gradient {gradient.name!r} is {gradient.dtype.name} but variable {v.name!r} "
                         f"is {v.dtype.name}; they must match (cast one)")
    if len(gradient.shape) != len(v.shape) or any(a != b and -1 not in (a, b) for a, b in zip(gradient.shape, v.shape)):
        raise ShapeError(f"{label}: gradient {gradient.name!r} has shape {gradient.shape} but variable {v.name!r} "
                         f"has shape {v.shape}; they must be equal")
    return gradient


def apply_stochastic_gradient_descent(g, learning_rate, variable, gradient, name: Optional[str] = None) -> Operation:
    """``variable -= learning_rate * gradient``, applied when the returned operation runs
    (MPSGraph ``applyStochasticGradientDescent(learningRate:variable:gradient:name:)``).

    Args:
        learning_rate: A number or scalar tensor, of the variable's dtype.
        variable: A variable tensor (made by ``g.variable``).
        gradient: A tensor of the variable's shape and dtype, e.g. from ``g.gradients``.
        name: The operation's name (default ``apply_stochastic_gradient_descent``); scopes prefix it.

    Returns:
        Operation: the update; list it in ``target_operations`` to apply it.
    """
    op = g.variable_operation(variable, "apply_stochastic_gradient_descent")
    v = op.outputs[0]
    base = name or "apply_stochastic_gradient_descent"
    gradient = _check_gradient(g, v, gradient, f"apply_stochastic_gradient_descent op {base!r}")
    with g.name_scope(base):
        lr = g.as_tensor(learning_rate, base, like=v)
        new = g.subtraction(g.read(v), g.multiplication(lr, gradient))
    return g.assign(v, new, name=base)


def apply_adam(g, variable, gradient, learning_rate=1e-3, beta1=0.9, beta2=0.999, epsilon=1e-8,
               name: Optional[str] = None) -> Operation:
    """One Adam step on ``variable`` through MPSGraph's ``adam`` op (``g.adam``), as one operation.

    MPSGraph's ``adam(learningRate:beta1:beta2:epsilon:beta1Power:beta2Power:values:momentum:
    velocity:maximumVelocity:gradient:name:)`` documents, for step ``t`` (1 on the first run)::

        lr[t]    = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)
        m[t]     = beta1 * m[t-1] + (1 - beta1) * g
        v[t]     = beta2 * v[t-1] + (1 - beta2) * g^2
        variable = variable - lr[t] * m[t] / (sqrt(v[t]) + epsilon)

    epsilon is added to ``sqrt(v[t])``, before bias correction; Kingma & Ba's algorithm (and
    PyTorch's ``torch.optim.Adam``) adds it to ``sqrt(v[t] / (1 - beta2^t))``, after it. The
    two agree when epsilon is small against ``sqrt(v)``; docs/graphs.md compares them. MPSGraph's op
    returns the new tensors; this one keeps the moments and ``t`` in variables named
    ``<name>/m``, ``/v``, ``/t`` so a training loop needs only ``target_operations=[step]``.

    Args:
        variable: A variable tensor (made by ``g.variable``).
        gradient: A tensor of the variable's shape and dtype, e.g. from ``g.gradients``.
        learning_rate: The step size (MPSGraph's ``learningRate``): a number or scalar tensor.
        beta1: Decay of the first moment estimate ``m``.
        beta2: Decay of the second moment estimate ``v``.
        epsilon: Added to ``sqrt(v[t])`` in the denominator.
        name: The operation's name (default ``adam_<variable>``); it also scopes the state variables.

    Returns:
        Operation: the update; list it in ``target_operations`` to apply it.
    """
    op = g.variable_operation(variable, "apply_adam")
    v = op.outputs[0]
    base = name or f"adam_{op.name}"
    gradient = _check_gradient(g, v, gradient, f"apply_adam op {base!r}")
    dt = v.dtype.np_dtype
    with g.name_scope(base), g.non_trainable():  # optimizer state: not in g.trainable_variables
        m = g.variable(np.zeros(v.shape, dt), name="m")
        s = g.variable(np.zeros(v.shape, dt), name="v")
        t = g.variable(np.zeros((), dt), name="t")
    with g.name_scope(base):
        lr = g.as_tensor(learning_rate, base, like=v)
        t_new = g.addition(g.read(t), 1.0)
        beta1_power = g.power(g.constant(beta1, dtype=v.dtype), t_new)
        beta2_power = g.power(g.constant(beta2, dtype=v.dtype), t_new)
        new, m_new, s_new = g.adam(lr, beta1, beta2, epsilon, beta1_power, beta2_power, g.read(v), g.read(m),
                                   g.read(s), None, gradient, name="update")
        deps = [g.assign(m, m_new), g.assign(s, s_new), g.assign(t, t_new)]
    with g.control_dependencies(deps):
        return g.assign(v, new, name=base)
