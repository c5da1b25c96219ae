"""Linear-algebra kernels (semantics: ``ops/linalg.py``): band_part is one masked copy;
hamming_distance one invocation per result element, looping over the vector length K in passes
(``loops.long_loop``); inverse is Gauss-Jordan in float32 scratch buffers as 2 N + 2 dispatches
(a pivot stage per matrix and an elimination stage per row for each column), so no invocation
loops more than 3 N times; N is at most ``_MAX_INVERSE``."""
from __future__ import annotations

from math import prod

from ...errors import ResourceLimitError, UnsupportedDTypeError
from .loops import LOOP_MAX, long_loop
from .registry import webgpu_kernel
from .wgsl import STORAGE, params_decl, render


@webgpu_kernel("band_part")
def _band_part(step, kb):
    a = step.attrs
    shape = step.in_types[0].shape
    total = prod(shape)
    src = render("band_part", T=STORAGE[step.in_types[0].dtype.name], TOTAL=total, ROWS=max(shape[-2], 1),
                 COLS=max(shape[-1], 1), LOWER=max(min(a["num_lower"], 2**31 - 1), -1),
                 UPPER=max(min(a["num_upper"], 2**31 - 1), -1))
    kb.dispatch(src, [("ro", kb.input(0)), ("rw", kb.output())], -(-total // 256))


def _batch_offsets(out_batch, a_shape, c_shape, a_mat: int, c_mat: int) -> str:
    """WGSL lines adding, per batch axis, each input's offset (0 stride where it broadcasts)."""
    lines, inner = [], 1
    r = len(out_batch)
    for d in range(r - 1, -1, -1):
        size = out_batch[d]
        coord = f"((bi / {inner}u) % {max(size, 1)}u)"
        for var, shape, mat in (("ao", a_shape, a_mat), ("co", c_shape, c_mat)):
            j = d - (r - len(shape))
            if j >= 0 and shape[j] != 1:
                stride = mat * prod(shape[j + 1:])
                lines.append(f"  {var} = {var} + {coord} * {stride}u;")
        inner *= max(size, 1)
    return "\n".join(lines)


@webgpu_kernel("hamming_distance")
def _hamming_distance(step, kb):
    (a, c), out = step.in_types, step.out_types[0]
    if out.dtype.name != "uint32":
        raise UnsupportedDTypeError(f"hamming_distance: the webgpu backend gives a uint32 result only, "
                                 f"not {out.dtype.name} (use result_data_type=uint32)")
    k = a.shape[-1]
    total = prod(out.shape)
    m, n = out.shape[-2], out.shape[-1]
    offs = _batch_offsets(out.shape[:-2], a.shape[:-2], c.shape[:-2], a.shape[-2] * k, c.shape[-2] * k)
    src = render("hamming_distance", PARAMS=params_decl(2), TI=STORAGE[a.dtype.name], TOTAL=total,
                 M=max(m, 1), N=max(n, 1), K=k, BATCH_OFFSETS=offs)

    def record(j0, j1, state):
        kb.dispatch(src, [("u", [j0, j1]), ("ro", kb.input(0)), ("ro", kb.input(1)), ("rw", kb.output()),
                          ("rw", state)], -(-total // 256))

    long_loop(kb, k, total, 1, record)


_MAX_INVERSE = LOOP_MAX // 3  # the pivot stage loops 3 N times at most


@webgpu_kernel("inverse")
def _inverse(step, kb):
    t = step.in_types[0]
    n = t.shape[-1]
    if n > _MAX_INVERSE:
        raise ResourceLimitError(f"inverse: {n} x {n} matrices exceed the webgpu kernel's {_MAX_INVERSE} x "
                                 f"{_MAX_INVERSE}; use the numpy or cpu backend")
    batch = prod(t.shape[:-2])
    if batch * n == 0:
        return
    size = batch * n * n * 4
    src = render("inverse", PARAMS=params_decl(2), T=STORAGE[t.dtype.name], BATCH=batch, N=n)
    w, v, bad = kb.scratch(size), kb.scratch(size), kb.scratch(4 * batch)
    buffers = [("ro", kb.input(0)), ("rw", w), ("rw", v), ("rw", kb.output()), ("rw", bad)]
    kb.dispatch(src, [("u", [0, 0])] + buffers, -(-batch * n * n // 64))
    for k in range(n):
        kb.dispatch(src, [("u", [1, k])] + buffers, -(-batch // 64))
        kb.dispatch(src, [("u", [2, k])] + buffers, -(-batch * n // 64))
    kb.dispatch(src, [("u", [3, 0])] + buffers, -(-batch * n * n // 64))
