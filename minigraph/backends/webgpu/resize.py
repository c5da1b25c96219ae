"""``resize`` and ``resize_gradient`` (semantics: ``ops/resize.py``).

Separable, like the NumPy kernels and with the same passes (``backends.numpy.resize.passes``:
the taps of ``ops.resize.axis_taps``, computed once on the host, so nearest-neighbour ties fall
exactly as on the NumPy backend): the forward is one ``kernels/resize_taps.wgsl`` pass per
resized axis (one thread per result element, two loads) through float32 scratch tensors; the
gradient runs the adjoint passes backwards (``resize_taps_grad.wgsl``, one thread per dx element
gathering the results that read it from a host-built list: no atomics).
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...errors import ResourceLimitError
from ..numpy.resize import passes
from .buffers import Ref, _Buf
from .loops import LOOP_MAX
from .registry import webgpu_kernel
from .wgsl import STORAGE, render

_LOOP_MAX = LOOP_MAX  # loop iterations one invocation may run (llvmpipe stops loops after 65,535)


def _table(kb, words: np.ndarray) -> Ref:
    import wgpu

    data = np.ascontiguousarray(words, np.uint32)
    buf = kb.ctx.device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.STORAGE)
    kb.keep_alive(buf)
    return Ref(_Buf(buf, data.nbytes, pooled=False), data.nbytes)


def _forward_table(taps: tuple) -> np.ndarray:
    i0, i1, f = taps
    return np.stack([i0.astype(np.uint32), i1.astype(np.uint32),
                     f.astype(np.float32).view(np.uint32)], axis=1).reshape(-1)


def _adjoint_table(taps: tuple, n: int, label: str, axis: int) -> np.ndarray:
    """Per source index k, the results reading it and their weights (see resize_taps_grad.wgsl)."""
    i0, i1, f = taps
    f = f.astype(np.float32)
    o = np.arange(len(i0))
    mixed = f > 0
    src = np.concatenate([i0, i1[mixed]])
    res = np.concatenate([o, o[mixed]])
    w = np.concatenate([np.float32(1) - f, f[mixed]]).astype(np.float32)
    keep = w != 0
    src, res, w = src[keep], res[keep], w[keep]
    order = np.lexsort((res, src))
    src, res, w = src[order], res[order], w[order]
    counts = np.bincount(src, minlength=n)
    if counts.max(initial=0) > _LOOP_MAX:
        raise ResourceLimitError(f"{label}: one input element takes the gradient of {counts.max()} results along "
                                 f"axis {axis}, more than the {_LOOP_MAX} loop iterations a kernel may run")
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint32)
    entries = np.stack([res.astype(np.uint32), w.view(np.uint32)], axis=1).reshape(-1)
    return np.concatenate([offsets, entries, np.zeros(2, np.uint32)])  # never empty


def _dispatch(kb, kernel: str, shape: tuple, axis: int, n: int, m: int, table: Ref, src, dst, ti: str,
              to: str) -> tuple:
    grad = kernel == "resize_taps_grad"
    out_shape = list(shape)
    out_shape[axis] = n if grad else m
    total = prod(out_shape)
    text = render(kernel, TI=ti, TO=to, TOTAL=total, INNER=prod(shape[axis + 1:]), N=n, M=m)
    kb.dispatch(text, [("ro", src), ("ro", table), ("rw", dst)], -(-total // 256))
    return tuple(out_shape)


def _chain(kb, kernel: str, plan: list, shape: tuple, dt: str, label: str) -> None:
    """Run the passes of ``plan`` (each ``(axis, n, m, table)``) from input 0 to the output."""
    if not plan:  # every pass a copy
        plan = [(0, shape[0], shape[0], None)]
    src, ti = kb.input(0), dt
    for j, (axis, n, m, table) in enumerate(plan):
        if table is None:
            i = np.arange(n)
            table = _table(kb, _forward_table((i, i, np.zeros(n, np.float32))))
        last = j == len(plan) - 1
        out_shape = list(shape)
        out_shape[axis] = n if kernel == "resize_taps_grad" else m
        dst = kb.output() if last else kb.scratch(4 * prod(out_shape))
        shape = _dispatch(kb, kernel if table is not None else kernel, shape, axis, n, m, table, src, dst, ti,
                          dt if last else "f32")
        src, ti = dst, "f32"


@webgpu_kernel("resize")
def _resize(step, kb):
    in_shape, out_shape = step.in_types[0].shape, step.out_types[0].shape
    plan = [(a, n, m, _table(kb, _forward_table(t))) for a, n, m, t in passes(step.attrs, in_shape, out_shape,
                                                                               np.float32)]
    _chain(kb, "resize_taps", plan, in_shape, STORAGE[step.out_types[0].dtype.name], step.op.name)


@webgpu_kernel("resize_gradient")
def _resize_gradient(step, kb):
    dy_shape, x_shape = step.in_types[0].shape, step.out_types[0].shape
    label = step.op.name
    plan = [(a, n, m, _table(kb, _adjoint_table(t, n, label, a)))
            for a, n, m, t in reversed(passes(step.attrs, x_shape, dy_shape, np.float32))]
    if not plan:
        _chain(kb, "resize_taps", [], dy_shape, STORAGE[step.out_types[0].dtype.name], label)
        return
    _chain(kb, "resize_taps_grad", plan, dy_shape, STORAGE[step.out_types[0].dtype.name], label)
