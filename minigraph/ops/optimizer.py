"""MPSGraph's optimizer ops (MPSGraphOptimizerOps): one step of SGD or Adam as new tensors.

``stochasticGradientDescent(learningRate:values:gradient:name:)`` is ``values - learningRate *
gradient``.

Apple documents ``adam(learningRate:beta1:beta2:epsilon:beta1Power:beta2Power:values:momentum:
velocity:maximumVelocity:gradient:name:)`` as, with ``beta1Power = beta1^t``, ``beta2Power =
beta2^t``::

    lr[t]      = learningRate * sqrt(1 - beta2Power) / (1 - beta1Power)
    m[t]       = beta1 * m[t-1] + (1 - beta1) * g
    v[t]       = beta2 * v[t-1] + (1 - beta2) * g^2
    maxVel[t]  = max(maxVel[t-1], v[t])            (only with maximumVelocity: AMSGrad)
    values[t]  = values - lr[t] * m[t] / (sqrt(v[t] or maxVel[t]) + epsilon)

epsilon is added to ``sqrt(v)`` after the learning rate is bias-corrected (TensorFlow's "epsilon
hat"). The op returns ``[values, momentum, velocity]`` and, when ``maximum_velocity`` is given,
the new maximum velocity as a fourth tensor. The scalar operands may be tensors or numbers; they
broadcast against ``values``. Not differentiable (an update, as in MPSGraph).
"""
from __future__ import annotations

from typing import Any, Optional

from ..errors import DescriptorError, DTypeError, ShapeError
from ..ir import Tensor
from ..types import ShapedType
from ._util import broadcast_shapes
from .registry import defop

_SCALARS = ("learning_rate", "beta1", "beta2", "epsilon", "beta1_power", "beta2_power")
_STATE = ("values", "momentum", "velocity", "maximum_velocity", "gradient")


def _check_dtypes(types, names, values, pre: str = "") -> None:
    """Every operand floating point, of the values' dtype."""
    for t, n in zip(types, names):
        if not t.dtype.is_floating:
            raise DTypeError(f"{pre}{n} has dtype {t.dtype.name}; it needs a floating-point tensor; cast it first")
        if t.dtype != values.dtype:
            raise DTypeError(f"{pre}values are {values.dtype.name} but {n} is {t.dtype.name}; all operands "
                             "need one dtype (cast one with g.cast)")


def _check_scalar_operand(t, name: str, shape: tuple, pre: str = "") -> None:
    """A rate or coefficient broadcasts to the values' shape."""
    try:
        ok = broadcast_shapes(t.shape, shape) == shape
    except ShapeError:
        ok = False
    if not ok:
        raise ShapeError(f"{pre}{name} has shape {t.shape}, which does not broadcast to the values' shape "
                         f"{shape}; give a scalar")


def _infer_adam(in_types, attrs):
    names = _SCALARS + _STATE
    nil = tuple(attrs.get("nil_inputs", ()))
    first = in_types[6]
    _check_dtypes(in_types, names, first, "adam: ")
    shape = tuple(first.shape)
    for t, n in zip(in_types, names):
        if n in nil:
            continue
        if n in _STATE:
            if tuple(t.shape) != shape:
                raise ShapeError(f"adam: {n} has shape {t.shape} but values have {shape}; "
                                 "momentum, velocity, maximum_velocity and gradient need the values' shape")
        else:
            _check_scalar_operand(t, n, shape, "adam: ")
    count = 3 if "maximum_velocity" in nil else 4
    return [ShapedType(shape, first.dtype) for _ in range(count)]


@defop("adam", swift="adam(learningRate:beta1:beta2:epsilon:beta1Power:beta2Power:values:momentum:velocity:"
                     "maximumVelocity:gradient:name:)",
       objc="adamWithLearningRateTensor:beta1Tensor:beta2Tensor:epsilonTensor:beta1PowerTensor:beta2PowerTensor:"
            "valuesTensor:momentumTensor:velocityTensor:maximumVelocityTensor:gradientTensor:name:",
       inputs=_SCALARS + _STATE, infer=_infer_adam, family="optimizer", differentiable=False,
       hidden_attrs=("nil_inputs",))
def adam(g, learning_rate, beta1, beta2, epsilon, beta1_power: Optional[Any], beta2_power: Optional[Any], values, momentum, velocity,
         maximum_velocity: Optional[Tensor], gradient, name: Optional[str] = None) -> list:
    """One Adam step as new tensors: ``[values, momentum, velocity]``, plus the new maximum velocity
    (AMSGrad) when ``maximum_velocity`` is not None (MPSGraph
    ``adam(learningRate:beta1:beta2:epsilon:beta1Power:beta2Power:values:momentum:velocity:maximumVelocity:gradient:name:)``). The first six
    operands may be numbers. With ``beta1_power`` and ``beta2_power`` both None, ``learning_rate``
    is the current, already bias-corrected rate ``lr[t]`` (MPSGraph ``adam(currentLearningRate:
    beta1:beta2:epsilon:values:momentum:velocity:maximumVelocity:gradient:name:)``): the same step
    with powers 0, where ``sqrt(1 - 0) / (1 - 0)`` is exactly 1. Not differentiable.

    Args:
        learning_rate: The learning rate (a number or a tensor broadcasting to ``values``); the
            current bias-corrected rate when both powers are None.
        beta1: The momentum's decay rate.
        beta2: The velocity's decay rate.
        epsilon: Added to ``sqrt(velocity)`` (after the bias correction of the rate).
        beta1_power: ``beta1^t`` for step t; None (with ``beta2_power``) for the current-rate form.
        beta2_power: ``beta2^t`` for step t; None (with ``beta1_power``) for the current-rate form.
        values: The values updated (a float tensor).
        momentum: The first moment, of ``values``' shape.
        velocity: The second moment, of ``values``' shape.
        maximum_velocity: The largest velocity so far (AMSGrad), or None.
        gradient: The gradient, of ``values``' shape.
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        list[Tensor]: the new values, momentum and velocity (and maximum velocity).

    Raises:
        MiniGraphError: a ShapeError or DTypeError when operands do not fit, a DescriptorError
            for one power None and the other not; the message names the op.
    """
    label = f"adam op {name or 'adam'!r}"
    values = g.as_tensor(values, label)
    if (beta1_power is None) != (beta2_power is None):
        raise DescriptorError(f"{label}: give both beta1_power and beta2_power, or neither (None and None: "
                              "learning_rate is the current bias-corrected rate, MPSGraph's "
                              "adam(currentLearningRate:...))")
    attrs: dict = {}
    nil: list = []
    if beta1_power is None:
        beta1_power = beta2_power = g.constant(0.0, dtype=values.dtype)
        nil += ["beta1_power", "beta2_power"]
    ins = [g.as_tensor(v, label, like=values) for v in
           (learning_rate, beta1, beta2, epsilon, beta1_power, beta2_power)]
    ins += [values, g.as_tensor(momentum, label, like=values), g.as_tensor(velocity, label, like=values)]
    if maximum_velocity is None:
        ins.append(g.constant(0.0, dtype=values.dtype))
        nil.append("maximum_velocity")
    else:
        ins.append(g.as_tensor(maximum_velocity, label, like=values))
    ins.append(g.as_tensor(gradient, label, like=values))
    if nil:
        attrs["nil_inputs"] = tuple(nil)
    return list(g.add_op("adam", ins, attrs, name).outputs)


def _infer_sgd(in_types, attrs):
    lr, values, grad = in_types
    _check_dtypes(in_types, ("learning_rate", "values", "gradient"), values)
    shape = tuple(values.shape)
    if tuple(grad.shape) != shape:
        raise ShapeError(f"gradient has shape {grad.shape} but values have {shape}; they need one shape")
    _check_scalar_operand(lr, "learning_rate", shape)
    return [ShapedType(shape, values.dtype)]


@defop("stochastic_gradient_descent", swift="stochasticGradientDescent(learningRate:values:gradient:name:)",
       objc="stochasticGradientDescentWithLearningRateTensor:valuesTensor:gradientTensor:name:",
       inputs=("learning_rate", "values", "gradient"), infer=_infer_sgd, family="optimizer",
       differentiable=False)
def stochastic_gradient_descent(g, learning_rate, values, gradient, name: Optional[str] = None):
    """One SGD step as a new tensor, ``values - learning_rate * gradient`` (MPSGraph
    ``stochasticGradientDescent(learningRate:values:gradient:name:)``; ``apply_stochastic_gradient_descent``
    writes it to a variable). ``learning_rate`` may be a number. Not differentiable.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/stochasticgradientdescent(learningrate:values:gradient:name:)
    """
    label = f"stochastic_gradient_descent op {name or 'stochastic_gradient_descent'!r}"
    values = g.as_tensor(values, label)
    ins = [g.as_tensor(learning_rate, label, like=values), values, g.as_tensor(gradient, label, like=values)]
    return g.add_op("stochastic_gradient_descent", ins, {}, name).output
