"""Gather, scatter and one-hot kernels (semantics: ``ops/gather.py``).

The three gathers are one indexed read (``kernels/gather_index.wgsl``) and the five scatters
one indexed combine (``kernels/scatter_index.wgsl``), specialised by a layout: the tensors seen
as ``[B, O, N, IN]`` blocks (batch, outer, index positions, inner) with the strides of the index
tensor and of ``updates`` baked in as constants. Scatters use no atomics: each result element
visits the updates in order and combines those aimed at it, so collisions give the same bits
as the NumPy backend's sequential ``ufunc.at``. Updates are visited in chunks of ``_CHUNK`` per
pass (llvmpipe stops a shader's loops after 65,535 iterations); between passes the running value
stays in the compute type (float32 for float16) in a scratch buffer, so float16 rounds once.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ...descriptors import ScatterMode
from ...ops.gather import identity
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, render

_CHUNK = 16384

_COORD = {
    "i32": "fn coord(v: i32, n: i32) -> i32 {\n  var c = v;\n  if (c < 0) { c = c + n; }\n"
           "  if (c < 0 || c >= n) { return -1; }\n  return c;\n}",
    "u32": "fn coord(v: u32, n: i32) -> i32 {\n  if (v >= u32(n)) { return -1; }\n  return i32(v);\n}",
}


def _layout(bt=1, o=1, n=1, inner=1, ib=0, io=0, ins=0, ii=0, ub=0, uo=0, un=0, dims=(), strides=()):
    return dict(B=bt, O=o, N=n, IN=inner, IB=ib, IO=io, INS=ins, II=ii, UB=ub, UO=uo, UN=un,
                dims=tuple(dims), strides=tuple(strides))


def _gather_layout(step) -> dict:
    u, i = step.in_types[0].shape, step.in_types[1].shape
    t, a = step.op.type, step.attrs
    if t == "gather":
        axis, b = a["axis"], a["batch_dimensions"]
        bt, o, size, inner, n = prod(u[:b]), prod(u[b:axis]), u[axis], prod(u[axis + 1:]), prod(i[b:])
        return _layout(bt, o, n, inner, ib=n, ins=1, ub=o * size * inner, uo=size * inner, dims=(size,),
                       strides=(inner,))
    if t == "gather_along_axis":
        axis = a["axis"]
        o, size, inner, n = prod(u[:axis]), u[axis], prod(u[axis + 1:]), i[axis]
        return _layout(1, o, n, inner, io=n * inner, ins=inner, ii=1, uo=size * inner, dims=(size,), strides=(inner,))
    b, k = a["batch_dimensions"], i[-1]
    dims, inner, n = tuple(u[b:b + k]), prod(u[b + k:]), prod(i[b:-1])
    return _layout(prod(u[:b]), 1, n, inner, ib=n * k, ins=k, ub=prod(dims) * inner,
                   dims=dims, strides=tuple(prod(dims[j + 1:]) * inner for j in range(k)))


# per scatter: the input positions of (updates, indices, data); None: no data, zeros where no update lands
_SCATTER_INPUTS = {"scatter_along_axis": (0, 1, 2), "scatter": (0, 1, None), "scatter_nd": (0, 1, None),
                   "scatter_with_data": (1, 2, 0), "scatter_nd_with_data": (1, 2, 0)}


def _scatter_layout(step) -> dict:
    t, a = step.op.type, step.attrs
    out, i = step.out_types[0].shape, step.in_types[_SCATTER_INPUTS[t][1]].shape
    if t in ("scatter_along_axis", "scatter", "scatter_with_data"):
        axis = a["axis"]
        o, size, inner = prod(out[:axis]), out[axis], prod(out[axis + 1:])
        if t != "scatter_along_axis":
            n = i[0]
            return _layout(1, o, n, inner, ins=1, uo=n * inner, un=inner, dims=(size,))
        n = i[axis]
        return _layout(1, o, n, inner, io=n * inner, ins=inner, ii=1, uo=n * inner, un=inner, dims=(size,))
    b, k = a["batch_dimensions"], i[-1]
    dims, inner, n = tuple(out[b:b + k]), prod(out[b + k:]), prod(i[b:-1])
    return _layout(prod(out[:b]), 1, n, inner, ib=n * k, ins=k, ub=n * inner, un=inner, dims=dims)


def _consts(lay: dict) -> dict:
    return {k: v for k, v in lay.items() if k not in ("dims", "strides")}


def _groups(total: int) -> int:
    return -(-total // 256)


@webgpu_kernel("gather", "gather_along_axis", "gather_nd")
def _gather(step, kb):
    lay = _gather_layout(step)
    total = prod(step.out_types[0].shape)
    ti = STORAGE[step.in_types[1].dtype.name]
    coords = "\n".join(
        f"  {{ let c = coord(idx[ib + {k}u], {d}); if (c < 0) {{ ok = false; }} else {{ src = src + u32(c) * {s}u; }} }}"
        for k, (d, s) in enumerate(zip(lay["dims"], lay["strides"])))
    src = render("gather_index", T=STORAGE[step.out_types[0].dtype.name], TI=ti, COORD=_COORD[ti], TOTAL=total,
                 COORDS=coords, **_consts(lay))
    kb.dispatch(src, [("ro", kb.input(0)), ("ro", kb.input(1)), ("rw", kb.output())], _groups(total))


_FLOAT_COMBINE = {ScatterMode.ADD: "acc + v", ScatterMode.SUB: "acc - v", ScatterMode.MUL: "acc * v",
                  ScatterMode.DIV: "acc / v", ScatterMode.MIN: "mg_min(acc, v)", ScatterMode.MAX: "mg_max(acc, v)",
                  ScatterMode.SET: "v"}
_INT_COMBINE = {**_FLOAT_COMBINE, ScatterMode.MIN: "min(acc, v)", ScatterMode.MAX: "max(acc, v)"}


def _literal(value, c: str) -> str:
    """``value`` as a WGSL expression of compute type ``c`` (exact: floats by their bits)."""
    if c == "f32":
        return f"bitcast<f32>({int(np.float32(value).view(np.uint32))}u)"
    if c == "i32":
        return f"bitcast<i32>({int(np.int32(value).view(np.uint32))}u)"
    return f"{int(value)}u"


def _target(dims: tuple) -> str:
    lines = ["  var ar = a;"]
    for k in reversed(range(len(dims))):
        lines.append(f"  let c{k} = i32(ar % {dims[k]}u);")
        lines.append(f"  ar = ar / {dims[k]}u;")
    return "\n".join(lines)


@webgpu_kernel(*_SCATTER_INPUTS)
def _scatter(step, kb):
    lay = _scatter_layout(step)
    ui, ii, di = _SCATTER_INPUTS[step.op.type]
    out_t = step.out_types[0]
    dt = out_t.dtype.name
    c = COMPUTE[dt]
    mode = step.attrs["mode"]
    ti = STORAGE[step.in_types[ii].dtype.name]
    total = prod(out_t.shape)
    dims = lay["dims"]
    match = " && ".join(f"coord(idx[ib + {k}u], {d}) == c{k}" for k, d in enumerate(dims))
    combine = (_FLOAT_COMBINE if c == "f32" else _INT_COMBINE)[mode]
    has_data = di is not None
    first = f"{c}(base[t])" if has_data else _literal(identity(mode, out_t.dtype.np_dtype), c)
    # scatter and scatter_nd: 0 where no update landed (Apple: "slices not set by indices are set to 0")
    result = "acc" if has_data else f"select({c}(0), acc, hit)"
    n = lay["N"]
    starts = range(0, max(n, 1), _CHUNK)
    state = kb.scratch(8 * total if len(starts) > 1 else 4)
    base = kb.input(di) if di is not None else kb.input(ui)
    for start in starts:
        last = start + _CHUNK >= n
        finish = (f"  out[t] = {STORAGE[dt]}({result});" if last else
                  "  state[2u * t] = bitcast<u32>(acc);\n  state[2u * t + 1u] = u32(hit);")
        src = render("scatter_index", T=STORAGE[dt], TI=ti, C=c, COORD=_COORD[ti], TOTAL=total, A=prod(dims),
                     TARGET=_target(dims), START=first if start == 0 else f"bitcast<{c}>(state[2u * t])",
                     HIT="false" if start == 0 else "state[2u * t + 1u] != 0u", MATCH=match,
                     COMBINE=combine, N0=start, N1=min(n, start + _CHUNK), FINISH=finish, **_consts(lay))
        kb.dispatch(src, [("ro", kb.input(ui)), ("ro", kb.input(ii)), ("ro", base), ("rw", kb.output()),
                          ("rw", state)], _groups(total))


def _value(value, dt: str) -> str:
    """``on_value``/``off_value`` as a WGSL constant of the result's storage type, rounded as NumPy does."""
    if dt in ("float32", "float16"):
        v = np.float32(np.float16(value)) if dt == "float16" else np.float32(value)
        return f"{STORAGE[dt]}({_literal(v, 'f32')})"
    host = {"int32": np.int32, "uint32": np.uint32, "bool": np.bool_}[dt]
    return _literal(int(np.asarray(value).astype(host)), COMPUTE[dt])


@webgpu_kernel("one_hot")
def _one_hot(step, kb):
    a = step.attrs
    ishape = step.in_types[0].shape
    dt = step.out_types[0].dtype.name
    ti = STORAGE[step.in_types[0].dtype.name]
    total = prod(step.out_types[0].shape)
    is_on = "v >= 0 && u32(v) == d" if ti == "i32" else "v == d"
    src = render("one_hot", TI=ti, T=STORAGE[dt], TOTAL=total, INNER=prod(ishape[a["axis"]:]), DEPTH=max(a["depth"], 1),
                 IS_ON=is_on, ON=_value(a["on_value"], dt), OFF=_value(a["off_value"], dt))
    kb.dispatch(src, [("ro", kb.input(0)), ("rw", kb.output())], _groups(total))
