"""The finite-difference harness: g.gradients against central differences, in float64.

One helper for every test that checks a gradient numerically: `central_differences` for a loss
already built, `check_gradients` for the usual case, the gradient of sum(build(...) * r) for
random weights r (so every output element counts, each with its own weight)."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

import minigraph as mg


def central_differences(g: mg.Graph, loss: mg.Tensor, feeds: dict, wrt: Sequence[mg.Tensor],
                        eps: float = 1e-6) -> list:
    """d loss / d feed for each placeholder of `wrt`, by (loss(v + eps) - loss(v - eps)) / 2 eps
    per element, through one executable compiled for the feeds' shapes."""
    exe = g.compile({t: mg.ShapedType(np.shape(v), mg.float64) for t, v in feeds.items()}, [loss])
    out = []
    for x in wrt:
        v = feeds[x]
        fd = np.zeros_like(v)
        for idx in np.ndindex(*v.shape):
            for sgn in (1, -1):
                p = v.copy()
                p[idx] += sgn * eps
                fd[idx] += sgn * exe.run({**feeds, x: p})[0].item() / (2 * eps)
        out.append(fd)
    return out


def check_gradients(build: Callable[..., mg.Tensor], values: Sequence[np.ndarray],
                    rng: Optional[np.random.Generator] = None, *, eps: float = 1e-6,
                    rtol: float = 1e-6, atol: float = 1e-7, err_msg: str = "") -> mg.Graph:
    """g.gradients of sum(build(g, *xs) * r) with respect to every input against central
    differences; `values` are the float64 inputs, r is drawn from uniform(0.5, 1.5).
    Returns the graph (for tests that look at what autodiff inserted)."""
    rng = np.random.default_rng(0) if rng is None else rng
    g = mg.Graph()
    xs = [g.placeholder(list(np.shape(v)), mg.float64, name=f"in{i}") for i, v in enumerate(values)]
    y = build(g, *xs)
    r = g.placeholder(y.shape, mg.float64, name="r")
    loss = g.reduction_sum(g.multiplication(y, r), axes=None, name="loss")
    grads = g.gradients(loss, xs, name="grad")
    feeds = {**dict(zip(xs, values)), r: rng.uniform(0.5, 1.5, y.shape)}
    got = g.run(feeds, [grads[x] for x in xs])
    for x, fd in zip(xs, central_differences(g, loss, feeds, xs, eps)):
        np.testing.assert_allclose(got[grads[x]], fd, rtol=rtol, atol=atol, err_msg=f"{err_msg} d/d{x.name}")
    return g


def uniform_inputs(shapes: Sequence[Sequence[int]], seed: int = 0, lo: float = -1.0, hi: float = 1.0):
    """float64 inputs from uniform(lo, hi) and the generator that drew them (for r)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi, s) for s in shapes], rng
