"""NumPy kernels of the random ops (semantics: ops/random.py, docs/random.md).

The draws come from ``minigraph.philox``; every float formula here is evaluated in float32
step by step, in the order the WGSL kernel (backends/webgpu/kernels/random.wgsl) uses, so the
two backends agree bit for bit on uniform and integer draws and dropout masks, and to a few
ulp on normal draws (log and cos are our own polynomials on both sides, but a GPU compiler may
fuse a multiply and an add into one rounding, and ``sqrt`` comes from the driver).
"""
from __future__ import annotations

import math

import numpy as np

from ... import philox
from ...descriptors import RandomDistribution, RandomNormalSamplingMethod
from ...ops.random import blocks_used, descriptor_of, keep_threshold
from .registry import numpy_kernel

F = np.float32


def below(value: float, dtype: str) -> float:
    """The largest value of ``dtype`` (float32 or float16) below ``value``: the top of [min, max)."""
    t = np.float16 if dtype == "float16" else np.float32
    v = t(value)
    if float(v) >= value:
        v = np.nextafter(v, t(-np.inf))
    return float(v)


def uniform_params(d) -> tuple:
    """(low, span, top) in float32 for a float uniform draw ``low + u * span`` clamped to ``top``."""
    low = F(d.min)
    return low, F(F(d.max) - low), F(below(d.max, d.dtype.name))


def truncated_params(d) -> tuple:
    """(a, b): ``erf`` of the truncation bounds in units of sigma over sqrt 2, in float32."""
    s = d.standard_deviation
    return F(philox.normal_cdf2((d.min - d.mean) / s)), F(philox.normal_cdf2((d.max - d.mean) / s))


TRUNCATED_ATTEMPTS = 64  # Box-Muller draws a truncated normal element may reject before the fallback


def _box_muller(d, w: np.ndarray) -> np.ndarray:
    """``mean + sd * sqrt(-2 log u1) cos(2 pi u2)`` in float32 from word pairs (w[0::2], w[1::2])."""
    u1 = ((w[0::2] >> np.uint32(8)) + np.uint32(1)).astype(F) * F(2.0 ** -24)  # (0, 1]
    u2 = philox.uniform01(w[1::2])
    z = np.sqrt(F(-2.0) * philox.log_f32(u1)) * philox.cos_2pi_f32(u2)
    return F(d.mean) + F(d.standard_deviation) * z


def _truncated_inv_cdf(d, w: np.ndarray) -> np.ndarray:
    """The inverse CDF of a uniform draw squeezed into [Phi(a), Phi(b)), in float32."""
    a, b = truncated_params(d)
    u = (philox.open_unit(w) + F(1.0)) * F(0.5)  # (0, 1), exact
    z = F(math.sqrt(2.0)) * philox.erfinv_f32(a + u * (b - a))
    return F(d.mean) + F(d.standard_deviation) * z


def _truncated_box_muller(d, n: int, seed: int, draw: int, counter=None) -> np.ndarray:
    """Rejection sampling (MPSGraph's BOX_MULLER for bounded distributions): attempt ``k`` draws
    from counter lane 1 = k; an element still rejected after TRUNCATED_ATTEMPTS takes the inverse
    CDF value of its first word."""
    lo, hi = F(d.min), F(d.max)
    w0 = philox.random_words(2 * n, seed, draw, counter=counter)
    out = _truncated_inv_cdf(d, w0[0::2])
    pending = np.ones(n, bool)
    for attempt in range(TRUNCATED_ATTEMPTS):
        x = _box_muller(d, w0 if attempt == 0 else philox.random_words(2 * n, seed, draw, attempt, counter=counter))
        take = pending & (x >= lo) & (x < hi)
        out[take] = x[take]
        pending &= ~take
        if not pending.any():
            break
    return out


def sample(d, n: int, seed: int, draw: int = 0, counter=None) -> np.ndarray:
    """``n`` values of the descriptor's distribution for one op's draw, flat, in its dtype (from
    the 128-bit Philox ``counter`` when given: the ops taking a state tensor)."""
    dist, dt = d.distribution, d.dtype.name
    box_muller = d.sampling_method == RandomNormalSamplingMethod.BOX_MULLER
    if dist == RandomDistribution.NORMAL and box_muller:
        return _box_muller(d, philox.random_words(2 * n, seed, draw, counter=counter)).astype(dt)
    if dist == RandomDistribution.TRUNCATED_NORMAL:
        x = _truncated_box_muller(d, n, seed, draw, counter) if box_muller else \
            _truncated_inv_cdf(d, philox.random_words(n, seed, draw, counter=counter))
        return np.clip(x, F(d.min), F(below(d.max, dt))).astype(dt)
    w = philox.random_words(n, seed, draw, counter=counter)
    if dist == RandomDistribution.UNIFORM:
        if dt == "int32":
            lo, span = d.min_integer, d.max_integer - d.min_integer + 1
            off = w if span == 1 << 32 else philox.mulhi(w, span)
            return (off + np.uint32(lo & philox.MASK32)).view(np.int32)
        low, span_f, top = uniform_params(d)
        return np.minimum(low + philox.uniform01(w) * span_f, top).astype(dt)
    z = F(math.sqrt(2.0)) * philox.erfinv_f32(philox.open_unit(w))
    return (F(d.mean) + F(d.standard_deviation) * z).astype(dt)


def _source_kernel(step):
    op = step.op
    d = descriptor_of(op)
    shape = tuple(step.out_types[0].shape)
    n = int(np.prod(shape, dtype=np.int64))
    seed = op.attrs["seed"]

    def run():
        return sample(d, n, seed, philox.current_draw()).reshape(shape)
    return run


numpy_kernel("random_tensor")(_source_kernel)
numpy_kernel("random_uniform_tensor")(_source_kernel)


@numpy_kernel("random_philox_state_tensor")
def _philox_state(step):
    a = step.op.attrs
    words = philox.state_words(a["counter_low"] | a["counter_high"] << 64, a["key"])
    return lambda: words.copy()


def _state_kernel(step):
    """Values from the state's counter and key, and the state advanced past the blocks they used."""
    d = descriptor_of(step.op)
    shape = tuple(step.out_types[0].shape)
    n = int(np.prod(shape, dtype=np.int64))
    used = blocks_used(d, n)

    def run(state):
        counter, key = philox.read_state(state)
        values = sample(d, n, key, counter=counter).reshape(shape)
        new = philox.state_words(counter + used, key)
        new[0] = np.asarray(state).reshape(-1)[0]
        return values, new
    return run


numpy_kernel("random_tensor_with_state")(_state_kernel)
numpy_kernel("random_uniform_tensor_with_state")(_state_kernel)


def dropout_mask(n: int, rate: float, seed: int, draw: int) -> np.ndarray:
    """Which of ``n`` elements a dropout keeps in this draw (flat bools)."""
    w = philox.random_words(n, seed, draw)
    return (w >> np.uint32(8)).astype(np.int64) >= keep_threshold(rate)


def dropout_scale(rate: float, compute=F):
    """``1 / (1 - rate)`` rounded once to the compute type (0 for rate 1, where nothing is kept)."""
    return compute(1.0 / (1.0 - rate)) if rate < 1.0 else compute(0.0)


@numpy_kernel("dropout")
def _dropout(step):
    rate, seed = step.op.attrs["rate"], step.op.attrs["seed"]
    dt = step.out_types[0].dtype.np_dtype
    compute = np.float64 if dt == np.float64 else F  # float16 is computed in float32, as on webgpu
    scale = dropout_scale(rate, compute)

    def run(x):
        keep = dropout_mask(x.size, rate, seed, philox.current_draw()).reshape(x.shape)
        return np.where(keep, x.astype(compute) * scale, compute(0.0)).astype(dt)
    return run
