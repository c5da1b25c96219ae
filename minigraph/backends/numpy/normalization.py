"""NumPy kernels of the normalization ops and of Adam (semantics: ops/normalization.py,
ops/optimizer.py). They compute in float64 and round once to the op's dtype; large ones run on
the thread pool in blocks of the first axis they do not reduce (the channels of a batch norm),
each block computed whole, so the bits do not depend on the thread count."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...ops._util import normalize_axes
from . import threads
from .registry import numpy_kernel


def _by_blocks(step, fn: Callable, axes) -> Callable:
    """``fn`` on the pool in blocks of the first axis outside ``axes`` (float64 inside: the bits do
    not depend on how NumPy orders a block's sums)."""
    if len(step.out_types) != 1:
        return fn
    return threads.kept_axis_blocks(fn, [tuple(t.shape) for t in step.in_types], axes,
                                    tuple(step.out_types[0].shape), step.out_types[0].dtype.np_dtype,
                                    numpy_order=False)


def _wide(*arrays):
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def _out(step, i: int = 0):
    return step.out_types[i].dtype.np_dtype


def _mean_keep(x, axes):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.mean(x, axis=axes, keepdims=True) if x.size or not axes else \
            np.full([1 if i in axes else d for i, d in enumerate(x.shape)], np.nan)


@numpy_kernel("variance")
def _variance(step):
    axes = normalize_axes(step.attrs["axes"], len(step.in_types[0].shape))
    dt = _out(step)

    def run(x):
        (x,) = _wide(x)
        if x.size == 0:
            return np.full(step.out_types[0].shape, np.nan, dt)
        return np.asarray(_mean_keep(np.square(x - _mean_keep(x, axes)), axes), dt)
    return _by_blocks(step, run, axes)


def _rstd(var, eps):
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 / np.sqrt(var + eps)


@numpy_kernel("normalize")
def _normalize(step):
    eps, dt = step.attrs["epsilon"], _out(step)

    def run(x, mean, var, gamma, beta):
        x, mean, var, gamma, beta = _wide(x, mean, var, gamma, beta)
        with np.errstate(invalid="ignore"):
            y = (x - mean) * _rstd(var, eps) * gamma + beta
        return np.asarray(np.broadcast_to(y, np.broadcast_shapes(x.shape, mean.shape, var.shape, gamma.shape,
                                                                 beta.shape)), dt)
    return _by_blocks(step, run, ())


@numpy_kernel("normalization_beta_gradient")
def _beta_gradient(step):
    axes = normalize_axes(step.attrs["reduction_axes"], len(step.in_types[1].shape))
    dt = _out(step)
    return _by_blocks(step, lambda dy, x: np.asarray(np.sum(np.asarray(dy, np.float64), axis=axes, keepdims=True),
                                                     dt), axes)


def _gamma_grad(dy, x, mean, var, eps, axes):
    with np.errstate(invalid="ignore"):
        return np.sum(dy * (x - mean) * _rstd(var, eps), axis=axes, keepdims=True)


@numpy_kernel("normalization_gamma_gradient")
def _gamma_gradient(step):
    axes = normalize_axes(step.attrs["reduction_axes"], len(step.in_types[1].shape))
    eps, dt = step.attrs["epsilon"], _out(step)

    def run(dy, x, mean, var):
        return np.asarray(_gamma_grad(*_wide(dy, x, mean, var), eps, axes), dt)
    return _by_blocks(step, run, axes)


@numpy_kernel("normalization_gradient")
def _gradient(step):
    axes = normalize_axes(step.attrs["reduction_axes"], len(step.in_types[1].shape))
    eps, dt = step.attrs["epsilon"], _out(step)
    nil = step.attrs.get("nil_inputs", ())
    n = float(np.prod([step.in_types[1].shape[a] for a in axes]))

    def run(dy, x, mean, var, gamma, gamma_grad, beta_grad):
        dy, x, mean, var, gamma, gamma_grad, beta_grad = _wide(dy, x, mean, var, gamma, gamma_grad, beta_grad)
        if "gamma_gradient" in nil:
            gamma_grad = _gamma_grad(dy, x, mean, var, eps, axes)
        if "beta_gradient" in nil:
            beta_grad = np.sum(dy, axis=axes, keepdims=True)
        r = _rstd(var, eps)
        with np.errstate(invalid="ignore", divide="ignore"):
            dx = gamma * r * (dy - beta_grad / n - (x - mean) * r * gamma_grad / n)
        return np.asarray(np.broadcast_to(dx, x.shape), dt)
    return _by_blocks(step, run, axes)


@numpy_kernel("adam")
def _adam(step):
    amsgrad = len(step.out_types) == 4
    dt = _out(step)

    def run(lr, beta1, beta2, eps, beta1_power, beta2_power, values, m, v, vmax, grad):
        lr, b1, b2, eps, p1, p2, w, m, v, vmax, gr = _wide(lr, beta1, beta2, eps, beta1_power, beta2_power,
                                                          values, m, v, vmax, grad)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            lr_t = lr * np.sqrt(1.0 - p2) / (1.0 - p1)
            m_new = b1 * m + (1.0 - b1) * gr
            v_new = b2 * v + (1.0 - b2) * np.square(gr)
            vmax_new = np.maximum(vmax, v_new) if amsgrad else v_new
            w_new = w - lr_t * m_new / (np.sqrt(vmax_new) + eps)
        outs = [w_new, m_new, v_new] + ([vmax_new] if amsgrad else [])
        return tuple(np.asarray(np.broadcast_to(o, w.shape), dt) for o in outs)
    return run


@numpy_kernel("stochastic_gradient_descent")
def _sgd(step):
    dt = _out(step)

    def run(lr, values, grad):  # in the values' type: the product rounds, then the difference
        with np.errstate(invalid="ignore", over="ignore"):
            return np.asarray(values - np.asarray(lr, dt) * grad, dt)
    return run
