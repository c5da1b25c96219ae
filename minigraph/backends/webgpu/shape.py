"""Shape kernels: broadcast, permute, transpose, slice, slice_gradient, concat, the strided
slice_tensor, slice_gradient_tensor and slice_update_data_tensor, the space/depth/batch
rearrangements, shape_of and coordinate_along_axis.

All of them are one strided copy (``kernels/strided_copy.wgsl``): walk a copy shape, read at
source strides, write at destination strides. Axes are collapsed first, so most copies run
with rank 1 or 2. reshape, expand_dims, squeeze and identity need no kernel at all: their
output shares the input's buffer (``registry.ALIASES``).
"""
from __future__ import annotations

from ...ops._util import normalize_axes
from ...ops.shape import strided_slice
from ...ops.space import copy_plan
from ...types import num_elements
from .registry import webgpu_kernel
from .wgsl import STORAGE, collapse, contiguous_strides, params_decl, render


def strided_copy(kb, src, dst, dtype: str, shape, src_strides, dst_strides, src_off: int = 0, dst_off: int = 0):
    """Record ``dst[dst_off + idx . dst_strides] = src[src_off + idx . src_strides]`` over ``shape``."""
    n = num_elements(shape)
    if n == 0:
        return
    cshape, (ss, ds) = collapse(shape, src_strides, dst_strides)
    params = [n, src_off, dst_off]
    for k in reversed(range(len(cshape))):
        params += [cshape[k], ss[k] % (1 << 32), ds[k] % (1 << 32)]  # u32 arithmetic wraps: negative strides
    src_code = render("strided_copy", PARAMS=params_decl(len(params)), T=STORAGE[dtype], RANK=len(cshape))
    kb.dispatch(src_code, [("u", params), ("ro", src), ("rw", dst)], -(-n // 256))


def _contig_out(step):
    out = step.out_types[0]
    return out.shape, contiguous_strides(out.shape), out.dtype.name


@webgpu_kernel("broadcast")
def _broadcast(step, kb):
    shape, ost, dt = _contig_out(step)
    ishape = step.in_types[0].shape
    padded = (1,) * (len(shape) - len(ishape)) + tuple(ishape)
    ist = contiguous_strides(padded)
    src_st = tuple(0 if p == 1 and o != 1 else s for p, s, o in zip(padded, ist, shape))
    strided_copy(kb, kb.input(0), kb.output(), dt, shape, src_st, ost)


def _permuted(step, kb, perm):
    shape, ost, dt = _contig_out(step)
    ist = contiguous_strides(step.in_types[0].shape)
    strided_copy(kb, kb.input(0), kb.output(), dt, shape, tuple(ist[p] for p in perm), ost)


@webgpu_kernel("permute")
def _permute(step, kb):
    _permuted(step, kb, step.attrs["permutation"])


@webgpu_kernel("transpose")
def _transpose(step, kb):
    r = len(step.in_types[0].shape)
    a = normalize_axes(step.attrs["dimension"], r)[0]
    b = normalize_axes(step.attrs["with_dimension"], r)[0]
    perm = list(range(r))
    perm[a], perm[b] = perm[b], perm[a]
    _permuted(step, kb, perm)


def _window(shape, attrs):
    d = normalize_axes(attrs["dimension"], len(shape))[0]
    start = attrs["start"]
    if start < 0:
        start += shape[d]
    return d, start


@webgpu_kernel("slice")
def _slice(step, kb):
    shape, ost, dt = _contig_out(step)
    ishape = step.in_types[0].shape
    d, start = _window(ishape, step.attrs)
    ist = contiguous_strides(ishape)
    strided_copy(kb, kb.input(0), kb.output(), dt, shape, ist, ost, src_off=start * ist[d])


@webgpu_kernel("slice_gradient")
def _slice_gradient(step, kb):
    out = step.out_types[0]
    oshape, dt = out.shape, out.dtype.name
    d, start = _window(oshape, step.attrs)
    ref = kb.output()
    _fill_zero(kb, ref)
    gshape = step.in_types[0].shape
    ost = contiguous_strides(oshape)
    strided_copy(kb, kb.input(0), ref, dt, gshape, contiguous_strides(gshape), ost, dst_off=start * ost[d])


@webgpu_kernel("concat")
def _concat(step, kb):
    shape, ost, dt = _contig_out(step)
    d = normalize_axes(step.attrs["dimension"], len(shape))[0]
    if step.attrs.get("interleave", False):  # piece k at positions k, k + K, ... of the axis
        n = len(step.in_types)
        st = tuple(s * n if i == d else s for i, s in enumerate(ost))
        for k, t in enumerate(step.in_types):
            strided_copy(kb, kb.input(k), kb.output(), dt, t.shape, contiguous_strides(t.shape), st,
                         dst_off=k * ost[d])
        return
    at = 0
    for k, t in enumerate(step.in_types):
        strided_copy(kb, kb.input(k), kb.output(), dt, t.shape, contiguous_strides(t.shape), ost,
                     dst_off=at * ost[d])
        at += t.shape[d]


def _strided_window(shape, attrs) -> tuple:
    """``(copy shape, stride per axis, offset)`` in elements of a contiguous ``shape`` for
    ``slice_tensor``'s slice; squeezed axes are kept with size 1 (the copy's layout is the
    result's)."""
    ist = contiguous_strides(shape)
    plan = strided_slice(shape, attrs)
    cshape = tuple(size for _, _, size, _ in plan)
    return cshape, tuple(st * s for st, (_, s, _, _) in zip(ist, plan)), sum(st * b for st, (b, _, _, _) in zip(ist, plan))


@webgpu_kernel("slice_tensor")
def _slice_tensor(step, kb):
    cshape, st, off = _strided_window(step.in_types[0].shape, step.attrs)
    strided_copy(kb, kb.input(0), kb.output(), step.out_types[0].dtype.name, cshape, st,
                 contiguous_strides(cshape), src_off=off)


def _fill_zero(kb, ref):
    words = ref.nbytes // 4
    if words:
        kb.dispatch(render("fill"), [("u", [words]), ("rw", ref)], -(-words // 256))


@webgpu_kernel("slice_gradient_tensor")
def _slice_gradient_tensor(step, kb):
    out = step.out_types[0]
    ref = kb.output()
    _fill_zero(kb, ref)
    cshape, st, off = _strided_window(out.shape, step.attrs)
    strided_copy(kb, kb.input(0), ref, out.dtype.name, cshape, contiguous_strides(cshape), st, dst_off=off)


@webgpu_kernel("slice_update_data_tensor")
def _slice_update(step, kb):
    out = step.out_types[0]
    ref = kb.output()
    ost = contiguous_strides(out.shape)
    strided_copy(kb, kb.input(0), ref, out.dtype.name, out.shape, ost, ost)
    cshape, st, off = _strided_window(out.shape, step.attrs)
    strided_copy(kb, kb.input(1), ref, out.dtype.name, cshape, contiguous_strides(cshape), st, dst_off=off)


def _space_copy(step, kb):
    """``x.reshape(split).transpose(perm)`` written contiguously: one strided copy."""
    split, perm, _ = copy_plan(step.type, step.attrs, step.in_types[0].shape)
    sst = contiguous_strides(split)
    shape = tuple(split[p] for p in perm)
    strided_copy(kb, kb.input(0), kb.output(), step.out_types[0].dtype.name, shape,
                 tuple(sst[p] for p in perm), contiguous_strides(shape))


for _t in ("space_to_depth_2d", "depth_to_space_2d", "space_to_batch", "batch_to_space"):
    webgpu_kernel(_t)(_space_copy)


@webgpu_kernel("shape_of")
def _shape_of(step, kb):
    shape = list(step.in_types[0].shape)
    if shape:
        params = [len(shape)] + shape
        kb.dispatch(render("param_values", PARAMS=params_decl(len(params))), [("u", params), ("rw", kb.output())], 1)


@webgpu_kernel("coordinate_along_axis")
def _coordinate(step, kb):
    shape, a = step.out_types[0].shape, step.attrs["axis"]
    n = num_elements(shape)
    if n:
        params = [n, num_elements(shape[a + 1:]), shape[a]]
        kb.dispatch(render("coordinate", PARAMS=params_decl(3)), [("u", params), ("rw", kb.output())], -(-n // 256))
