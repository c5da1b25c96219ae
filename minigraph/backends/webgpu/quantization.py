"""Quantization kernels (semantics: ``ops/quantization.py``): one invocation per element, the
scalar parameters baked into the source (as exact f32 bit patterns), the per-axis and blockwise
parameters read at their index. int8 and uint8 (and int4 / uint4) are stored widened to i32 / u32 (wgsl.STORAGE),
so these ops are the ones allowed to take and make them (kernel_builder.NARROW_INT_OPS)."""
from __future__ import annotations

from math import prod

import numpy as np

from ...ops.quantization import LUT_ENTRIES, block_size, lut_groups, qrange
from .kernel_builder import NARROW_INT_OPS
from .registry import webgpu_kernel
from .wgsl import STORAGE, render

NARROW_INT_OPS.update({"quantize", "quantize_with_scale_tensor", "quantize_with_tensors", "dequantize",
                       "dequantize_with_scale_tensor", "dequantize_with_tensors", "dequantize_blockwise",
                       "dequantize_blockwise_symmetric", "dequantize_lut", "dequantize_vector_lut"})


def f32_bits(v: float) -> str:
    """A WGSL f32 expression holding exactly ``np.float32(v)``."""
    return f"bitcast<f32>({int(np.array(v, np.float32).view(np.uint32))}u)"


def _binding(i: int, name: str, dtype: str, rw: bool = False) -> str:
    mode = "read_write" if rw else "read"
    return f"@group(0) @binding({i}) var<storage, {mode}> {name}: array<{STORAGE[dtype]}>;"


def _per_axis_index(step) -> str:
    """``let p = ...;``: the index of an element's per-axis parameter (0 where it is one element)."""
    shape = step.in_types[0].shape
    sizes = [prod(t.shape) for t in step.in_types[1:]]
    if not shape or max(sizes) <= 1:
        return "  let p = 0u;"
    axis = step.attrs["axis"]
    inner = prod(shape[axis + 1:])
    return f"  let p = (t / {max(inner, 1)}u) % {max(shape[axis], 1)}u;"


def _param(name: str, size: int) -> str:
    """Element ``p`` of a parameter input, or its only element."""
    return f"f32({name}[0])" if size <= 1 else f"f32({name}[p])"


def _quantize(step, kb):
    x = step.in_types[0]
    out = step.out_types[0].dtype.name
    total = prod(x.shape)
    binds = [_binding(0, "x", x.dtype.name)]
    refs = [("ro", kb.input(0))]
    a = step.attrs
    if len(step.in_types) == 1:
        scale, zp = f32_bits(a["scale"]), f"f32({a['zero_point']})"
        index = ""
    else:
        s = step.in_types[1]
        binds.append(_binding(1, "sc", s.dtype.name))
        refs.append(("ro", kb.input(1)))
        scale = _param("sc", prod(s.shape))
        if len(step.in_types) == 3:
            z = step.in_types[2]
            binds.append(_binding(2, "zp", z.dtype.name))
            refs.append(("ro", kb.input(2)))
            zp = _param("zp", prod(z.shape))
        else:
            zp = f"f32({a['zero_point']})"
        index = _per_axis_index(step)
    binds.append(_binding(len(binds), "out", out, rw=True))
    refs.append(("rw", kb.output()))
    lo, hi = qrange(out)
    src = render("quantize", BINDINGS="\n".join(binds), TOTAL=total, PARAM_INDEX=index, SCALE=scale, ZP=zp,
                 OUT=STORAGE[out], LO=f"f32({lo})", HI=f"f32({hi})")
    kb.dispatch(src, refs, -(-total // 256))


for _t in ("quantize", "quantize_with_scale_tensor", "quantize_with_tensors"):
    webgpu_kernel(_t)(_quantize)


def _dequantize(step, kb):
    q = step.in_types[0]
    out = step.out_types[0].dtype.name
    total = prod(q.shape)
    binds = [_binding(0, "q", q.dtype.name)]
    refs = [("ro", kb.input(0))]
    a = step.attrs
    blockwise = step.op.type.startswith("dequantize_blockwise")
    if len(step.in_types) == 1:
        scale_value = np.float32(np.float16(a["scale"])) if out == "float16" else np.float32(a["scale"])
        scale, zp, index = f32_bits(float(scale_value)), f"f32({a['zero_point']})", ""
    else:
        s = step.in_types[1]
        binds.append(_binding(1, "sc", s.dtype.name))
        refs.append(("ro", kb.input(1)))
        if blockwise:
            k = q.shape[-1]
            b = block_size(q.shape, s.shape, step.op.type)
            index = f"  let p = (t / {max(k, 1)}u) * {max(s.shape[-1], 1)}u + (t % {max(k, 1)}u) / {max(b, 1)}u;"
            scale = "f32(sc[p])"
        else:
            index = _per_axis_index(step)
            scale = _param("sc", prod(s.shape))
        if len(step.in_types) == 3:
            z = step.in_types[2]
            binds.append(_binding(2, "zp", z.dtype.name))
            refs.append(("ro", kb.input(2)))
            zp = "f32(zp[p])" if blockwise else _param("zp", prod(z.shape))
        else:
            zp = f"f32({a.get('zero_point', 0)})"
    binds.append(_binding(len(binds), "out", out, rw=True))
    refs.append(("rw", kb.output()))
    store = "f16(v)" if out == "float16" else "v"
    src = render("dequantize", BINDINGS="\n".join(binds), TOTAL=total, PARAM_INDEX=index, SCALE=scale, ZP=zp,
                 STORE=store)
    kb.dispatch(src, refs, -(-total // 256))


for _t in ("dequantize", "dequantize_with_scale_tensor", "dequantize_with_tensors", "dequantize_blockwise",
           "dequantize_blockwise_symmetric"):
    webgpu_kernel(_t)(_dequantize)


def _lut_coords(in_shape, out_shape, groups, blocks, axis, v) -> str:
    """WGSL lines setting ``ii`` (index into q), ``table`` (the LUT group) and ``vv`` from ``t``."""
    r = len(out_shape)
    in_strides = [prod(in_shape[d + 1:]) for d in range(r)]
    out_strides = [prod(out_shape[d + 1:]) for d in range(r)]
    k = len(groups)
    g_strides = [prod(groups[j + 1:]) for j in range(k)]
    lines = []
    for d in range(r):
        c = f"((t / {max(out_strides[d], 1)}u) % {max(out_shape[d], 1)}u)"
        if d == axis and v > 1:
            lines.append(f"  vv = {c} % {v}u;")
            c = f"({c} / {v}u)"
        lines.append(f"  let c{d} = {c};")
        lines.append(f"  ii = ii + c{d} * {max(in_strides[d], 1)}u;")
        j = d - (r - k)
        if j >= 0 and groups[j] > 1:
            lines.append(f"  table = table + (c{d} / {max(blocks[j], 1)}u) * {g_strides[j]}u;")
    return "\n".join(lines)


def _lut(step, kb):
    t, lut = step.in_types
    out = step.out_types[0]
    vector = step.op.type == "dequantize_vector_lut"
    v = lut.shape[-1] if vector else 1
    groups = tuple(lut.shape[:-2] if vector else lut.shape[:-1])
    blocks = lut_groups(t.shape, groups, step.op.type, 2 if vector else 3)
    axis = step.attrs["axis"] if vector else -1
    total = prod(out.shape)
    src = render("dequantize_lut", T=STORAGE[lut.dtype.name], TOTAL=total, ENTRIES=LUT_ENTRIES[t.dtype.name], V=v,
                 COORDS=_lut_coords(t.shape, out.shape, groups, blocks, axis, v))
    kb.dispatch(src, [("ro", kb.input(0)), ("ro", kb.input(1)), ("rw", kb.output())], -(-total // 256))


webgpu_kernel("dequantize_lut")(_lut)
webgpu_kernel("dequantize_vector_lut")(_lut)
