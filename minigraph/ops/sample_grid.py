"""Sample a tensor at given coordinates (MPSGraphSampleGridOps): sample_grid, docs/image.md.

``source`` is ``[N, H, W, C]`` (NHWC) or ``[N, C, H, W]`` (NCHW); ``coordinates`` is
``[N, Ho, Wo, 2]`` in either layout, its last axis ``(x, y)``: the W coordinate first, as
PyTorch's ``grid_sample`` grid, which PyTorch's MPS backend hands to MPSGraph unchanged. The
result is ``[N, Ho, Wo, C]`` (or ``[N, C, Ho, Wo]``). Per axis of input size ``S`` (W for x, H for
y) and result size ``O``, result index ``j`` turns its coordinate ``c`` into a pixel position
``p`` (pixel ``k``'s centre at ``k``):

1. ``relative_coordinates``: ``c`` is added to the position of result pixel ``j``, in the
   coordinates' own units: ``b = -1 + 2j / (O - 1)`` (aligned corners) or ``(2j + 1) / O - 1``
   (0 when ``O = 1``) normalized, that mapped to pixels otherwise;
2. ``normalize_coordinates``: ``c`` in ``[-1, 1]`` becomes ``p = (c + 1) / 2 * (S - 1)`` with
   ``align_corners``, else ``p = ((c + 1) * S - 1) / 2``; without, ``p = c``;
3. the padding mode folds ``p`` back: CLAMP_TO_EDGE clamps to ``[0, S - 1]``, REFLECT mirrors
   about the edge pixels' centres ``0`` and ``S - 1``, SYMMETRIC about the outer edges ``-0.5``
   and ``S - 0.5`` (both then clamped, as PyTorch's "reflection" with align_corners True / False);
   CONSTANT and ZERO leave ``p`` as it is;
4. NEAREST reads pixel ``round(p)`` (``nearest_rounding_mode``, MPSGraph's default
   ROUND_PREFER_CEIL); BILINEAR mixes ``floor(p)`` and ``floor(p) + 1`` with weights ``1 - f``,
   ``f``; a tap outside the image reads ``constant_value`` (CONSTANT) or 0 (ZERO), a tap of
   weight 0 reads nothing. A NaN position gives NaN.

The per-axis steps are written once (``pixel``, ``taps``, ``slope``) over an array namespace, so
the NumPy kernel and the gradient rules (built from graph ops: a scatter per tap for the source,
the taps' differences times ``dp / dc`` for the coordinates) compute the same positions.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..descriptors import PaddingMode, ResizeMode, ResizeNearestRoundingMode, TensorNamedDataLayout
from ..errors import DescriptorError, ShapeError
from ..types import ShapedType, int32
from .convolution import check_float
from .registry import defop, gradient
from .resize import as_resize_mode, as_rounding_mode

_P = PaddingMode
_R = ResizeNearestRoundingMode
PADDING_MODES = (_P.CONSTANT, _P.ZERO, _P.REFLECT, _P.SYMMETRIC, _P.CLAMP_TO_EDGE)
_ATTRS = ("layout", "normalize_coordinates", "relative_coordinates", "align_corners", "padding_mode",
          "sampling_mode", "constant_value", "nearest_rounding_mode")


def spatial(layout: TensorNamedDataLayout) -> tuple:
    """(H axis, W axis, C axis) of a rank-4 source in ``layout``."""
    return (2, 3, 1) if layout == TensorNamedDataLayout.NCHW else (1, 2, 3)


def base(size: int, out_size: int, attrs: dict) -> np.ndarray:
    """The position of each result index along one axis, in the coordinates' units (step 1)."""
    j = np.arange(out_size, dtype=np.float64)
    if out_size == 1:
        b = np.zeros(1)
    elif attrs["align_corners"]:
        b = -1 + 2 * j / (out_size - 1)
    else:
        b = (2 * j + 1) / out_size - 1
    if attrs["normalize_coordinates"]:
        return b
    a, o = _unnormalize(size, attrs["align_corners"])
    return b * a + o


def _unnormalize(size: int, align: bool) -> tuple:
    """``p = c * a + o`` of step 2."""
    return ((size - 1) / 2, (size - 1) / 2) if align else (size / 2, (size - 1) / 2)


class NumpyMath:
    """The array namespace of the NumPy kernel."""

    floor, abs = staticmethod(np.floor), staticmethod(np.abs)

    @staticmethod
    def clamp(x, lo, hi):
        return np.clip(x, lo, hi)

    @staticmethod
    def select(p, a, b):
        return np.where(p, a, b)

    @staticmethod
    def odd(x):
        return np.mod(x, 2) == 1

    @staticmethod
    def gt(a, b):
        return a > b

    @staticmethod
    def eq(a, b):
        return a == b

    @staticmethod
    def both(a, b):
        return a & b


class GraphMath:
    """The same steps as graph ops (the gradient rule)."""

    def __init__(self, g) -> None:
        self.g = g

    def floor(self, x):
        return self.g.floor(x)

    def abs(self, x):
        return self.g.absolute(x)

    def clamp(self, x, lo, hi):
        return self.g.clamp(x, self.g.constant(lo, x.dtype), self.g.constant(hi, x.dtype))

    def select(self, p, a, b):
        return self.g.select(p, a, b)

    def odd(self, x):
        return self.g.equal(self.g.floor_modulo(x, self.g.constant(2.0, x.dtype)), self.g.constant(1.0, x.dtype))

    def gt(self, a, b):
        return self.g.greater_than(a, b)

    def eq(self, a, b):
        return self.g.equal(a, b)

    def both(self, a, b):
        return self.g.logical_and(a, b)


def pixel(m, c, size: int, out_base, attrs: dict):
    """Steps 1-3 on the coordinates ``c`` of one axis; ``out_base`` is ``base`` shaped to broadcast."""
    if attrs["relative_coordinates"]:
        c = c + out_base
    if attrs["normalize_coordinates"]:
        a, o = _unnormalize(size, attrs["align_corners"])
        c = c * a + o
    pad = attrs["padding_mode"]
    if pad == _P.CLAMP_TO_EDGE:
        return m.clamp(c, 0.0, float(size - 1))
    if pad in (_P.REFLECT, _P.SYMMETRIC):
        lo, span = (0.0, float(size - 1)) if pad == _P.REFLECT else (-0.5, float(size))
        if span == 0:
            return c * 0.0
        q = m.abs(c - lo)
        flips = m.floor(q / span)
        extra = q - flips * span
        c = m.select(m.odd(flips), (extra * -1.0 + span) + lo, extra + lo)
        return m.clamp(c, 0.0, float(size - 1))
    return c


def slope(m, c, size: int, out_base, attrs: dict):
    """``dp / dc`` of ``pixel`` (PyTorch's ``grid_sampler_compute_source_index_set_grad``): the
    normalization's factor, 0 where a clamp holds ``p`` at an edge, -1 where a reflection flips."""
    if attrs["relative_coordinates"]:
        c = c + out_base
    a = 1.0
    if attrs["normalize_coordinates"]:
        a, o = _unnormalize(size, attrs["align_corners"])
        c = c * a + o
    pad = attrs["padding_mode"]
    one = c * 0.0 + a
    inside = None
    if pad in (_P.REFLECT, _P.SYMMETRIC):
        lo, span = (0.0, float(size - 1)) if pad == _P.REFLECT else (-0.5, float(size))
        if span == 0:
            return c * 0.0
        sign = m.select(m.gt(c * -1.0 + lo, 0.0), one * -1.0, one)  # c < lo: |c - lo| flips
        q = m.abs(c - lo)
        flips = m.floor(q / span)
        extra = q - flips * span
        odd = m.odd(flips)
        p = m.select(odd, (extra * -1.0 + span) + lo, extra + lo)
        one = m.select(odd, sign * -1.0, sign)
        inside = m.both(m.gt(p, 0.0), m.gt(p * -1.0 + float(size - 1), 0.0))
    elif pad == _P.CLAMP_TO_EDGE:
        inside = m.both(m.gt(c, 0.0), m.gt(c * -1.0 + float(size - 1), 0.0))
    return one if inside is None else m.select(inside, one, c * 0.0)


def rounded(m, p, rounding: ResizeNearestRoundingMode):
    """``p`` rounded with ``rounding`` (its fraction ``p - floor(p)`` is exact)."""
    fl = m.floor(p)
    frac = p - fl
    if rounding == _R.FLOOR:
        return fl
    if rounding == _R.CEIL:
        return m.select(m.gt(frac, 0.0), fl + 1.0, fl)
    up = m.gt(frac, 0.5)
    tie = m.eq(frac, 0.5)
    if rounding == _R.ROUND_PREFER_CEIL:
        cond = tie
    elif rounding == _R.ROUND_PREFER_FLOOR:
        return m.select(up, fl + 1.0, fl)
    elif rounding == _R.ROUND_TO_EVEN:
        cond = m.both(tie, m.odd(fl))
    else:
        cond = m.both(tie, m.odd(fl + 1.0))  # a tie above an even floor
    return m.select(up, fl + 1.0, m.select(cond, fl + 1.0, fl))


def taps(m, p, attrs: dict) -> list:
    """``[(index, weight)]`` along one axis: one tap (NEAREST) or two (BILINEAR); indices are float."""
    if attrs["sampling_mode"] == ResizeMode.NEAREST:
        return [(rounded(m, p, attrs["nearest_rounding_mode"]), None)]
    i0 = m.floor(p)
    f = p - i0
    return [(i0, f * -1.0 + 1.0), (i0 + 1.0, f)]


# ------------------------------------------------------------------ the op
def _infer(in_types, attrs):
    src, coords = in_types
    check_float(in_types, ("source", "coordinates"))
    label = "sample_grid"
    if len(src.shape) != 4:
        raise ShapeError(f"{label}: source has shape {src.shape}; layout {attrs['layout'].name} needs rank 4")
    if len(coords.shape) != 4 or coords.shape[3] not in (2, -1):
        raise ShapeError(f"{label}: coordinates has shape {coords.shape}; it must be [N, Hout, Wout, 2] "
                         "(x, y per result pixel)")
    h, w, c = spatial(attrs["layout"])
    n = src.shape[0]
    if -1 not in (n, coords.shape[0]) and n != coords.shape[0]:
        raise ShapeError(f"{label}: source {src.shape} and coordinates {coords.shape} differ in N")
    if 0 in (src.shape[h], src.shape[w]):
        raise ShapeError(f"{label}: source {src.shape} has an empty H or W; there is nothing to sample")
    out = [n, 0, 0, 0]
    out[h], out[w], out[c] = coords.shape[1], coords.shape[2], src.shape[c]
    return [ShapedType(tuple(out), src.dtype)]


def _flag(value: Any, what: str, label: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise DescriptorError(f"{label}: {what} must be a bool, got {value!r}")
    return bool(value)


def _padding(value: Any, label: str) -> PaddingMode:
    try:
        mode = value if isinstance(value, PaddingMode) else (
            PaddingMode[value.upper()] if isinstance(value, str) else PaddingMode(value))
    except (KeyError, ValueError, TypeError):
        mode = None
    if mode not in PADDING_MODES:
        raise DescriptorError(f"{label}: padding_mode {value!r} is not one sample_grid supports; use "
                              "mg.PaddingMode " + ", ".join(m.name for m in PADDING_MODES))
    return mode


def _layout(value: Any, label: str) -> TensorNamedDataLayout:
    try:
        lay = value if isinstance(value, TensorNamedDataLayout) else (
            TensorNamedDataLayout[value.upper()] if isinstance(value, str) else TensorNamedDataLayout(value))
    except (KeyError, ValueError, TypeError):
        lay = None
    if lay not in (TensorNamedDataLayout.NHWC, TensorNamedDataLayout.NCHW):
        raise DescriptorError(f"{label}: layout {value!r} is not one sample_grid allows; use "
                              "mg.TensorNamedDataLayout.NHWC or NCHW")
    return lay


@defop("sample_grid",
       swift="sampleGrid(withSourceTensor:coordinateTensor:layout:normalizeCoordinates:relativeCoordinates:"
             "alignCorners:paddingMode:samplingMode:constantValue:name:)",
       objc="sampleGridWithSourceTensor:coordinateTensor:layout:normalizeCoordinates:relativeCoordinates:"
            "alignCorners:paddingMode:samplingMode:constantValue:name:",
       inputs=("source", "coordinates"), infer=_infer, family="image", attrs=_ATTRS, since=("13.2", "16.3"))
def sample_grid(g, source, coordinates, layout, normalize_coordinates: bool, relative_coordinates: bool,
                align_corners: bool, padding_mode, sampling_mode, constant_value: float = 0.0,
                name: Optional[str] = None, *, nearest_rounding_mode=_R.ROUND_PREFER_CEIL):
    """Sample ``source`` at ``coordinates``, like PyTorch's ``grid_sample`` (MPSGraph
    ``sampleGrid(withSourceTensor:coordinateTensor:layout:normalizeCoordinates:relativeCoordinates:alignCorners:paddingMode:samplingMode:constantValue:name:)``
    and its ``nearestRoundingMode:`` form).

    Args:
        source: ``[N, H, W, C]`` or ``[N, C, H, W]`` (``layout``), float.
        coordinates: ``[N, Hout, Wout, 2]``, float: per result pixel ``(x, y)``, x along W.
        layout: ``mg.TensorNamedDataLayout.NHWC`` or ``NCHW``, of ``source`` and the result.
        normalize_coordinates: Coordinates in ``[-1, 1]`` across the image, else in pixels.
        relative_coordinates: Coordinates are offsets from each result pixel's position.
        align_corners: With normalized coordinates, -1 and 1 are the centres of the edge pixels,
            else their outer edges.
        padding_mode: ``mg.PaddingMode`` CONSTANT, ZERO, REFLECT, SYMMETRIC or CLAMP_TO_EDGE: what
            a sample outside the image reads.
        sampling_mode: ``mg.ResizeMode.NEAREST`` or ``BILINEAR``.
        constant_value: What a tap outside the image reads with CONSTANT padding.
        name: The op's name (MPSGraph's ``name:``).
        nearest_rounding_mode: How NEAREST rounds (an ``mg.ResizeNearestRoundingMode``; MPSGraph's
            default ROUND_PREFER_CEIL; PyTorch's ``grid_sample`` rounds to even).

    Returns:
        Tensor: ``[N, Hout, Wout, C]`` or ``[N, C, Hout, Wout]``, the source's dtype.

    Raises:
        MiniGraphError: a ShapeError, DTypeError or DescriptorError naming the op.
    """
    label = f"sample_grid op {name or 'sample_grid'!r}"
    try:
        value = float(constant_value)
    except (TypeError, ValueError):
        raise DescriptorError(f"{label}: constant_value must be a number, got {constant_value!r}") from None
    attrs: dict[str, Any] = {"layout": _layout(layout, label),
             "normalize_coordinates": _flag(normalize_coordinates, "normalize_coordinates", label),
             "relative_coordinates": _flag(relative_coordinates, "relative_coordinates", label),
             "align_corners": _flag(align_corners, "align_corners", label),
             "padding_mode": _padding(padding_mode, label), "sampling_mode": as_resize_mode(sampling_mode, label),
             "constant_value": value, "nearest_rounding_mode": as_rounding_mode(nearest_rounding_mode, label)}
    if attrs["sampling_mode"] == ResizeMode.BILINEAR and attrs["nearest_rounding_mode"] != _R.ROUND_PREFER_CEIL:
        raise DescriptorError(f"{label}: nearest_rounding_mode {attrs['nearest_rounding_mode'].name} is for "
                              "sampling_mode=NEAREST; BILINEAR does not round")
    src = g.as_tensor(source, label)
    coords = g.as_tensor(coordinates, label, like=src)
    return g.add_op("sample_grid", [src, coords], attrs, name).output


# ------------------------------------------------------------------ gradient
@gradient("sample_grid")
def _sample_grid_grad(g, op, dy, wanted):
    plan = _GradientPlan(g, op, dy)
    return [plan.source_gradient() if wanted[0] else None, plan.coordinate_gradient() if wanted[1] else None]


class _GradientPlan:
    """The taps of a sample_grid op as graph ops, in NHWC: what both gradients are built from."""

    def __init__(self, g, op, dy) -> None:
        src, coords = op.inputs
        self.g, self.op, self.attrs = g, op, op.attrs
        hx, wx, cx = spatial(self.attrs["layout"])
        self.n, self.hs, self.ws, self.cs = (src.shape[i] for i in (0, hx, wx, cx))
        _, ho, wo, _ = coords.shape
        if -1 in (self.hs, self.ws, self.cs, ho, wo):
            raise ShapeError(f"the gradient of sample_grid op {op.name!r} needs the H, W and C of its source "
                             f"{src.shape} and the Hout, Wout of its coordinates {coords.shape}")
        self.nchw = self.attrs["layout"] == TensorNamedDataLayout.NCHW
        self.m = GraphMath(g)
        self.dt = dy.dtype
        self.dy = g.permute(dy, [0, 2, 3, 1]) if self.nchw else dy  # [N, Ho, Wo, C]
        self.zero = g.constant(0.0, self.dt)
        cxy = g.split(coords, 2, 3)  # x, y: [N, Ho, Wo, 1]
        self.axes = []  # per axis (x, y): (coordinate, size, base)
        for c, size, out_size, shape in ((cxy[0], self.ws, wo, (1, 1, wo, 1)), (cxy[1], self.hs, ho, (1, ho, 1, 1))):
            b = g.constant(base(size, out_size, self.attrs).reshape(shape).astype(self.dt.np_dtype), self.dt)
            self.axes.append((c, size, b))
        self.taps = [taps(self.m, pixel(self.m, c, size, b, self.attrs), self.attrs) for c, size, b in self.axes]

    def _where(self, ix, iy, w=None):
        """(inside the image and of nonzero weight, the [y, x] indices with 0 elsewhere)."""
        g, m, zero = self.g, self.m, self.zero
        ok = m.both(m.both(g.greater_than_or_equal_to(ix, zero), g.less_than_or_equal_to(ix, float(self.ws - 1))),
                    m.both(g.greater_than_or_equal_to(iy, zero), g.less_than_or_equal_to(iy, float(self.hs - 1))))
        if w is not None:
            ok = m.both(ok, g.not_equal(w, zero))
        idx = g.concat([g.cast(g.select(ok, iy, zero), int32), g.cast(g.select(ok, ix, zero), int32)], 3)
        return ok, idx

    def source_gradient(self):
        """Each result element's gradient added into the source pixels it read, with their weights
        (a ``scatter_nd`` per tap, batched over N)."""
        g = self.g
        total = None
        for iy, wy in self.taps[1]:
            for ix, wx in self.taps[0]:
                w = wx if wy is None else (wy if wx is None else wx * wy)
                ok, idx = self._where(ix, iy, w)
                wt = g.select(ok, w if w is not None else g.constant(1.0, self.dt), self.zero)
                part = g.scatter_nd(self.dy * wt, idx, [self.n, self.hs, self.ws, self.cs], batch_dimensions=1)
                total = part if total is None else total + part
        return g.permute(total, [0, 3, 1, 2]) if self.nchw else total

    def coordinate_gradient(self):
        """BILINEAR: the change of the mix with each position (the four taps' values, a tap outside
        reading the padding constant) times ``dp / dc``; NEAREST: 0 (piecewise constant)."""
        g, op = self.g, self.op
        coords = op.inputs[1]
        if self.attrs["sampling_mode"] == ResizeMode.NEAREST:
            return g.multiplication(coords, self.zero)
        src = g.permute(op.inputs[0], [0, 2, 3, 1]) if self.nchw else op.inputs[0]
        fill = g.constant(self.attrs["constant_value"] if self.attrs["padding_mode"] == _P.CONSTANT else 0.0,
                          self.dt)
        (x0, wx0), (x1, wx1) = self.taps[0]
        (y0, wy0), (y1, wy1) = self.taps[1]

        def value(iy, ix):
            ok, idx = self._where(ix, iy)
            return g.select(ok, g.gather_nd(src, idx, batch_dimensions=1), fill)  # [N, Ho, Wo, C]

        v00, v01, v10, v11 = value(y0, x0), value(y0, x1), value(y1, x0), value(y1, x1)
        dpx = wy0 * (v01 - v00) + wy1 * (v11 - v10)
        dpy = wx0 * (v10 - v00) + wx1 * (v11 - v01)
        grads = []
        for d, (c, size, b) in zip((dpx, dpy), self.axes):
            grads.append(g.reduction_sum(self.dy * d, axes=[3]) * slope(self.m, c, size, b, self.attrs))
        return g.concat(grads, 3)
