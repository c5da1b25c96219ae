"""Space, depth and batch rearrangements (MPSGraphTensorShapeOps): space_to_depth_2d,
depth_to_space_2d, space_to_batch, batch_to_space.

Each moves blocks of spatial axes into one destination axis (the depth or batch axis), or back;
every one is a reshape, a transpose and a reshape, one copy of each element. Apple's pages
(https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/spacetobatch(_:spatialaxes:batchaxis:blockdimensions:usepixelshuffleorder:name:))
say that with ``usePixelShuffleOrder`` the values of a block are stored contiguously in the
destination axis, and otherwise interleaved with its existing values. Here that is:

* ``use_pixel_shuffle_order=True``: destination index ``d * B + block`` (PyTorch's
  ``pixel_shuffle`` / ``pixel_unshuffle``, ONNX DepthToSpace ``CRD``);
* ``use_pixel_shuffle_order=False``: destination index ``block * D + d`` (TensorFlow's
  ``space_to_batch_nd`` / ``depth_to_space``, ONNX DepthToSpace ``DCR``),

where ``D`` is the destination axis's size on the space side, ``B`` the product of the block
sizes, and ``block`` the row-major index of the position inside the block over the spatial axes
in the order given, the last fastest (for the 2D ops ``[height_axis, width_axis]``: the width is
the "fastest running dimension within the block", as Apple's page says).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import DescriptorError, ShapeError
from ..types import ShapedType
from .registry import defop, gradient
from .shape import _int_list, _is_int, _label

def _axis(v, rank: int, what: str, label: str) -> int:
    if not _is_int(v):
        raise ShapeError(f"{label}: {what} must be an int, got {v!r}")
    if not -rank <= v < rank:
        raise ShapeError(f"{label}: {what} {v} is out of range for a tensor of rank {rank} "
                         f"(valid: {-rank} to {rank - 1})")
    return int(v) % rank


def _flag(v, label: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise DescriptorError(f"{label}: use_pixel_shuffle_order must be True or False, got {v!r}")
    return bool(v)


def _check_axes(spatial: tuple, batch: int, blocks: tuple, shuffle: bool, label: str = "") -> None:
    pre = f"{label}: " if label else ""
    if not spatial:
        raise ShapeError(f"{pre}needs at least one spatial axis")
    if len(set(spatial)) != len(spatial):
        raise ShapeError(f"{pre}spatial axes {list(spatial)} repeat an axis")
    if batch in spatial:
        raise ShapeError(f"{pre}the destination axis {batch} is also a spatial axis {list(spatial)}; "
                         "they must differ")
    if len(blocks) != len(spatial):
        raise ShapeError(f"{pre}{len(blocks)} block dimensions {list(blocks)} for {len(spatial)} spatial axes "
                         f"{list(spatial)}: give one per spatial axis")
    if any(b < 1 for b in blocks):
        raise ShapeError(f"{pre}block dimensions {list(blocks)} must be >= 1")
    if shuffle and len(spatial) > 3:
        raise ShapeError(f"{pre}use_pixel_shuffle_order=True takes 1, 2 or 3 spatial axes (Apple's page), "
                         f"got {len(spatial)}")


def _space_plan(shape, spatial, batch, blocks, shuffle):
    """For space -> batch of a space-side ``shape``: ``(split, perm, out)`` with the result
    ``x.reshape(split).transpose(perm).reshape(out)``."""
    ids, split = [], []
    for d, n in enumerate(shape):
        if d in spatial:
            j = spatial.index(d)
            ids += [("m", j), ("b", j)]
            split += [n // blocks[j], blocks[j]]
        else:
            ids.append(("o", d))
            split.append(n)
    order = []
    for d in range(len(shape)):
        if d == batch:
            bl = [("b", j) for j in range(len(spatial))]
            order += [("o", d)] + bl if shuffle else bl + [("o", d)]
        elif d in spatial:
            order.append(("m", spatial.index(d)))
        else:
            order.append(("o", d))
    perm = tuple(ids.index(i) for i in order)
    out = list(shape)
    for j, d in enumerate(spatial):
        out[d] = shape[d] // blocks[j]
    out[batch] = shape[batch] * int(np.prod(blocks))
    return tuple(split), perm, tuple(out)


def _params(type: str, attrs: dict):
    """(spatial axes, destination axis, block sizes, pixel-shuffle order) of any of the four ops."""
    shuffle = attrs["use_pixel_shuffle_order"]
    if type in ("space_to_depth_2d", "depth_to_space_2d"):
        b = attrs["block_size"]
        return (attrs["height_axis"], attrs["width_axis"]), attrs["depth_axis"], (b, b), shuffle
    return tuple(attrs["spatial_axes"]), attrs["batch_axis"], tuple(attrs["block_dimensions"]), shuffle


def copy_plan(type: str, attrs: dict, shape) -> tuple:
    """``(split, perm, out)`` for one of the four ops on an input of (concrete) ``shape``: its
    result is ``x.reshape(split).transpose(perm).reshape(out)``. Both backends' kernels use it."""
    spatial, batch, blocks, shuffle = _params(type, attrs)
    if type in ("space_to_depth_2d", "space_to_batch"):
        return _space_plan(tuple(shape), spatial, batch, blocks, shuffle)
    space = list(shape)
    for j, d in enumerate(spatial):
        space[d] = shape[d] * blocks[j]
    space[batch] = shape[batch] // int(np.prod(blocks))
    split, perm, _ = _space_plan(tuple(space), spatial, batch, blocks, shuffle)
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(split[p] for p in perm), tuple(inv), tuple(space)


def _infer(type: str):
    to_batch = type in ("space_to_depth_2d", "space_to_batch")
    dest = "depth" if type.endswith("_2d") else "batch"

    def infer(in_types, attrs):
        t = in_types[0]
        spatial, batch, blocks, shuffle = _params(type, attrs)
        r = len(t.shape)
        if any(not 0 <= a < r for a in (*spatial, batch)):
            raise ShapeError(f"axes {list(spatial) + [batch]} are out of range for a tensor of shape {t.shape}")
        _check_axes(spatial, batch, blocks, shuffle)
        out = list(t.shape)
        total = int(np.prod(blocks))
        for j, d in enumerate(spatial):
            n = t.shape[d]
            if to_batch:
                if n != -1 and n % blocks[j]:
                    raise ShapeError(f"spatial axis {d} of shape {t.shape} has size {n}, not a multiple of its "
                                     f"block size {blocks[j]}")
                out[d] = -1 if n == -1 else n // blocks[j]
            else:
                out[d] = -1 if n == -1 else n * blocks[j]
        n = t.shape[batch]
        if to_batch:
            out[batch] = -1 if n == -1 else n * total
        else:
            if n != -1 and n % total:
                raise ShapeError(f"{dest} axis {batch} of shape {t.shape} has size {n}, not a multiple of the "
                                 f"block's {total} elements ({' x '.join(map(str, blocks))})")
            out[batch] = -1 if n == -1 else n // total
        return [ShapedType(out, t.dtype)]
    return infer


def _attrs_2d(g, tensor, width_axis, height_axis, depth_axis, block_size, use_pixel_shuffle_order, type, name):
    label = _label(type, name)
    tensor = g.as_tensor(tensor, label)
    r = len(tensor.shape)
    if r < 3:
        raise ShapeError(f"{label}: needs a tensor of rank >= 3 (width, height and depth axes), got shape "
                         f"{tensor.shape}")
    w = _axis(width_axis, r, "width_axis", label)
    h = _axis(height_axis, r, "height_axis", label)
    d = _axis(depth_axis, r, "depth_axis", label)
    if not _is_int(block_size) or block_size < 1:
        raise ShapeError(f"{label}: block_size must be an int >= 1, got {block_size!r}")
    if len({w, h, d}) != 3:
        raise ShapeError(f"{label}: width_axis {width_axis}, height_axis {height_axis} and depth_axis "
                         f"{depth_axis} must be three different axes of shape {tensor.shape}")
    attrs = {"width_axis": w, "height_axis": h, "depth_axis": d, "block_size": int(block_size),
             "use_pixel_shuffle_order": _flag(use_pixel_shuffle_order, label)}
    return g.add_op(type, [tensor], attrs, name).output


_ATTRS_2D = ("width_axis", "height_axis", "depth_axis", "block_size", "use_pixel_shuffle_order")


@defop("space_to_depth_2d",
       swift="space(toDepth2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:)",
       objc="spaceToDepth2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:",
       inputs=("tensor",), infer=_infer("space_to_depth_2d"), family="shape", attrs=_ATTRS_2D,
       since=("12.0", "15.0"))
def space_to_depth_2d(g, tensor, width_axis: int, height_axis: int, depth_axis: int, block_size: int,
                      use_pixel_shuffle_order: bool, name: Optional[str] = None):
    """Move ``block_size`` x ``block_size`` blocks of the height and width axes into the depth axis
    (MPSGraph ``space(toDepth2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:)``).

    Height and width shrink by ``block_size``, depth grows by ``block_size**2``; the other axes
    stay. ``use_pixel_shuffle_order=True`` is PyTorch's ``pixel_unshuffle`` (depth index
    ``c * b*b + i*b + j``), False TensorFlow's ``space_to_depth`` (``(i*b + j) * C + c``), for
    block row ``i`` and column ``j``. The inverse of ``depth_to_space_2d``; the same as
    ``space_to_batch(tensor, [height_axis, width_axis], depth_axis, [b, b], ...)``.
    """
    return _attrs_2d(g, tensor, width_axis, height_axis, depth_axis, block_size, use_pixel_shuffle_order,
                     "space_to_depth_2d", name)


@defop("depth_to_space_2d",
       swift="depth(toSpace2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:)",
       objc="depthToSpace2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:",
       inputs=("tensor",), infer=_infer("depth_to_space_2d"), family="shape", attrs=_ATTRS_2D,
       since=("12.0", "15.0"))
def depth_to_space_2d(g, tensor, width_axis: int, height_axis: int, depth_axis: int, block_size: int,
                      use_pixel_shuffle_order: bool, name: Optional[str] = None):
    """Move groups of ``block_size**2`` depth values into ``block_size`` x ``block_size`` blocks of
    the height and width axes (MPSGraph
    ``depth(toSpace2DTensor:widthAxis:heightAxis:depthAxis:blockSize:usePixelShuffleOrder:name:)``).

    ``use_pixel_shuffle_order=True`` is PyTorch's ``pixel_shuffle`` and ONNX DepthToSpace
    ``CRD``; False is ONNX ``DCR`` and TensorFlow's ``depth_to_space``. The depth must be a
    multiple of ``block_size**2``. The inverse of ``space_to_depth_2d``.
    """
    return _attrs_2d(g, tensor, width_axis, height_axis, depth_axis, block_size, use_pixel_shuffle_order,
                     "depth_to_space_2d", name)


def _attrs_nd(g, tensor, spatial_axes, batch_axis, block_dimensions, use_pixel_shuffle_order, type, name):
    label = _label(type, name)
    tensor = g.as_tensor(tensor, label)
    r = len(tensor.shape)
    if r == 0:
        raise ShapeError(f"{label}: needs a tensor with axes, got a scalar")
    spatial = tuple(_axis(a, r, "spatial axis", label) for a in _int_list(spatial_axes, "spatial_axes", label))
    batch = _axis(batch_axis, r, "batch_axis", label)
    blocks = _int_list(block_dimensions, "block_dimensions", label)
    shuffle = _flag(use_pixel_shuffle_order, label)
    _check_axes(spatial, batch, blocks, shuffle, label)
    attrs = {"spatial_axes": spatial, "batch_axis": batch, "block_dimensions": blocks,
             "use_pixel_shuffle_order": shuffle}
    return g.add_op(type, [tensor], attrs, name).output


_ATTRS_ND = ("spatial_axes", "batch_axis", "block_dimensions", "use_pixel_shuffle_order")


@defop("space_to_batch", swift="spaceToBatch(_:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:)",
       objc="spaceToBatchTensor:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:",
       inputs=("tensor",), infer=_infer("space_to_batch"), family="shape", attrs=_ATTRS_ND,
       since=("13.0", "16.1"))
def space_to_batch(g, tensor, spatial_axes: Sequence[int], batch_axis: int, block_dimensions: Sequence[int],
                   use_pixel_shuffle_order: bool, name: Optional[str] = None):
    """Move blocks of ``block_dimensions`` of the ``spatial_axes`` into ``batch_axis`` (MPSGraph
    ``spaceToBatch(_:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:)``).

    Each spatial axis shrinks by its block size (it must divide the axis), the batch axis grows by
    their product. With ``use_pixel_shuffle_order=False`` this is TensorFlow's
    ``space_to_batch_nd`` without padding (batch index ``block * N + n``), with True each batch
    element's blocks are contiguous (``n * B + block``; 1 to 3 spatial axes). The position in the
    block runs over ``spatial_axes`` in the order given, the last fastest. No padding: MPSGraph has
    none. The inverse of ``batch_to_space``.
    """
    return _attrs_nd(g, tensor, spatial_axes, batch_axis, block_dimensions, use_pixel_shuffle_order,
                     "space_to_batch", name)


@defop("batch_to_space", swift="batchToSpace(_:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:)",
       objc="batchToSpaceTensor:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:",
       inputs=("tensor",), infer=_infer("batch_to_space"), family="shape", attrs=_ATTRS_ND,
       since=("13.0", "16.1"))
def batch_to_space(g, tensor, spatial_axes: Sequence[int], batch_axis: int, block_dimensions: Sequence[int],
                   use_pixel_shuffle_order: bool, name: Optional[str] = None):
    """Move blocks out of ``batch_axis`` into the ``spatial_axes`` (MPSGraph
    ``batchToSpace(_:spatialAxes:batchAxis:blockDimensions:usePixelShuffleOrder:name:)``).

    The batch axis must be a multiple of the product of ``block_dimensions``; each spatial axis
    grows by its block size. TensorFlow's ``batch_to_space_nd`` without cropping when
    ``use_pixel_shuffle_order=False``. The inverse of ``space_to_batch``.
    """
    return _attrs_nd(g, tensor, spatial_axes, batch_axis, block_dimensions, use_pixel_shuffle_order,
                     "batch_to_space", name)


_INVERSE = {"space_to_depth_2d": "depth_to_space_2d", "depth_to_space_2d": "space_to_depth_2d",
            "space_to_batch": "batch_to_space", "batch_to_space": "space_to_batch"}


def _inverse_gradient(g, op, dy, wanted):
    """A permutation's gradient is the inverse permutation: the other op of the pair, same attrs."""
    a = op.attrs
    if op.type.endswith("_2d"):
        fn = getattr(g, _INVERSE[op.type])
        return [fn(dy, a["width_axis"], a["height_axis"], a["depth_axis"], a["block_size"],
                   a["use_pixel_shuffle_order"])]
    fn = getattr(g, _INVERSE[op.type])
    return [fn(dy, a["spatial_axes"], a["batch_axis"], a["block_dimensions"], a["use_pixel_shuffle_order"])]


for _t in _INVERSE:
    gradient(_t)(_inverse_gradient)
