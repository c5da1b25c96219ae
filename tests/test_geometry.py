"""ConvGeometry (minigraph/ops/geometry.py) against the formulas of docs/mpsgraph-spec.md §3, §5, §6
and docs/convolution.md: output sizes, the padding of every style (odd and even totals), dilation,
stride, ceil mode, groups, layouts, and the geometry a compiled step's kernels see."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import minigraph as mg
from minigraph.ops.geometry import (ConvGeometry, conventional_input_size, geometry_of, resolve_padding,
                                    unique_input_size)

P = mg.PaddingStyle
L = mg.TensorNamedDataLayout
STYLES = (P.EXPLICIT, P.TF_VALID, P.TF_SAME, P.ONNX_SAME_LOWER)


def spec_axis(style, H, k, s, d, pb, pa):
    """§3's table, written out: ``(before, after, out)``, or None where the output is empty."""
    K = (k - 1) * d + 1
    if style == P.TF_VALID:
        pb = pa = 0
    if style in (P.EXPLICIT, P.TF_VALID):
        return (pb, pa, (H + pb + pa - K) // s + 1) if H + pb + pa >= K else None
    O = math.ceil(H / s)
    T = max((O - 1) * s + K - H, 0)
    if style == P.TF_SAME:
        return T // 2, T - T // 2, O  # the extra element at the end
    return T - T // 2, T // 2, O      # ONNX_SAME_LOWER: at the beginning


# ----------------------------------------------------------------------------- the padding rule
WORKED = [  # §3's worked examples: (style, H, k, s, given padding, padding, O)
    (P.EXPLICIT, 6, 3, 2, (1, 1), (1, 1), 3),
    (P.TF_VALID, 6, 3, 2, (0, 0), (0, 0), 2),
    (P.TF_SAME, 6, 3, 2, (0, 0), (0, 1), 3),
    (P.ONNX_SAME_LOWER, 6, 3, 2, (0, 0), (1, 0), 3),
    (P.TF_SAME, 6, 2, 1, (0, 0), (0, 1), 6),
    (P.ONNX_SAME_LOWER, 6, 2, 1, (0, 0), (1, 0), 6),
    (P.TF_SAME, 7, 3, 2, (0, 0), (1, 1), 4),
    (P.ONNX_SAME_LOWER, 7, 3, 2, (0, 0), (1, 1), 4),
]


@pytest.mark.parametrize("style,H,k,s,given,pads,out", WORKED, ids=lambda v: getattr(v, "name", str(v)))
def test_worked_examples_of_the_spec(style, H, k, s, given, pads, out):
    assert resolve_padding(H, k, s, 1, style, *given) == (*pads, out)
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_y=s, stride_in_x=1, padding_style=style,
                                                 padding_top=given[0], padding_bottom=given[1])
    geo = ConvGeometry.for_depthwise_2d(desc, (1, 1, H, 5), (1, 1, k, 1))
    assert (geo.padding_before[0], geo.padding_after[0], geo.output_size[0]) == (*pads, out)


def test_every_style_matches_the_table_of_the_spec():
    """An exhaustive sweep against §3's table: a rule that puts the odd element of a SAME total
    on the wrong side, uses the header's dilated kernel, rounds the wrong way or forgets the
    explicit padding fails here."""
    checked = 0
    for style, H, k, s, d, pb, pa in itertools.product(STYLES, range(1, 10), range(1, 5), range(1, 4), range(1, 4),
                                                        range(0, 3), range(0, 3)):
        want = spec_axis(style, H, k, s, d, pb, pa)
        if want is None:
            with pytest.raises(mg.ShapeError, match="empty"):
                resolve_padding(H, k, s, d, style, pb, pa)
        else:
            assert resolve_padding(H, k, s, d, style, pb, pa) == want, (style.name, H, k, s, d, pb, pa)
            checked += 1
    assert checked > 5000


@pytest.mark.parametrize("style", [P.TF_SAME, P.ONNX_SAME_LOWER], ids=lambda s: s.name)
def test_same_styles_odd_and_even_totals(style):
    """T even: split equally; T odd: the extra element after (TF_SAME) or before (ONNX_SAME_LOWER)."""
    for H, k, s in [(5, 3, 1), (6, 3, 2), (8, 4, 1), (9, 5, 2), (10, 2, 1), (4, 4, 3)]:
        before, after, out = resolve_padding(H, k, s, 1, style, 7, 7)  # explicit values are ignored
        total = max((out - 1) * s + k - H, 0)
        assert out == -(-H // s) and before + after == total
        if total % 2:
            assert (after - before) == (1 if style == P.TF_SAME else -1), (H, k, s)
        else:
            assert before == after
        assert (H + before + after - k) // s + 1 == out  # the padded input gives exactly that output


def test_dilation_uses_the_dilated_kernel_not_the_header_erratum():
    """K = (k - 1) * d + 1 (§6 header errata: not (d - 1) * k + 1)."""
    assert resolve_padding(10, 3, 1, 2, P.TF_VALID, 0, 0) == (0, 0, 6)  # K = 5; the erratum's 4 gives 7
    assert resolve_padding(10, 3, 1, 3, P.TF_SAME, 0, 0) == (3, 3, 10)  # K = 7, T = 6
    with pytest.raises(mg.ShapeError, match="dilated kernel 7"):
        resolve_padding(6, 3, 1, 3, P.EXPLICIT, 0, 0)


def test_stride_rounds_down_and_ceil_mode_rounds_up():
    assert resolve_padding(7, 2, 2, 1, P.EXPLICIT, 0, 0) == (0, 0, 3)  # floor(5/2) + 1
    assert resolve_padding(7, 2, 2, 1, P.EXPLICIT, 0, 0, ceil_mode=True) == (0, 0, 4)  # ceil(5/2) + 1
    # the last window must start inside the input or the padding before it: 3 windows, not 4
    assert resolve_padding(5, 2, 2, 1, P.EXPLICIT, 1, 1, ceil_mode=True) == (1, 1, 3)


def test_unknown_sizes_and_empty_outputs():
    assert resolve_padding(-1, 3, 2, 1, P.EXPLICIT, 1, 2) == (1, 2, -1)
    assert resolve_padding(-1, 3, 2, 1, P.TF_SAME, 1, 2) == (0, 0, -1)
    assert resolve_padding(5, -1, 1, 1, P.TF_VALID, 0, 0) == (0, 0, -1)
    with pytest.raises(mg.ShapeError, match="H: input size 2 .* empty"):
        resolve_padding(2, 3, 1, 1, P.TF_VALID, 0, 0)
    with pytest.raises(mg.ShapeError, match="W: input size 0 gives output size 0"):
        resolve_padding(0, 1, 1, 1, P.TF_SAME, 0, 0, axis="W")


def test_input_sizes_from_output_sizes():
    """The inverses: unique with stride 1; the conventional size of docs/convolution.md otherwise."""
    for style, H, k, d, pb, pa in itertools.product(STYLES, range(1, 9), range(1, 4), (1, 2), (0, 1), (0, 2)):
        want = spec_axis(style, H, k, 1, d, pb, pa)
        if want is not None:
            assert unique_input_size(want[2], k, 1, d, style, pb, pa) == H
    assert unique_input_size(3, 3, 2, 1, P.TF_VALID, 0, 0) == -1  # 7 and 8 both give 3
    assert conventional_input_size(3, 3, 2, 1, P.EXPLICIT, 1, 0) == (3 - 1) * 2 + 3 - 1
    assert conventional_input_size(3, 3, 2, 1, P.TF_VALID, 1, 0) == (3 - 1) * 2 + 3
    assert conventional_input_size(3, 3, 2, 1, P.TF_SAME, 1, 0) == 6
    assert conventional_input_size(-1, 3, 2, 1, P.TF_SAME, 0, 0) == -1


# ----------------------------------------------------------------------------- the families
def test_grouped_convolution_2d():
    desc = mg.Convolution2DOpDescriptor(groups=2, stride_in_x=2, padding_style=P.TF_SAME,
                                        data_layout=L.NHWC, weights_layout=L.HWIO)
    geo = ConvGeometry.for_convolution(desc, (3, 9, 8, 6), (3, 2, 3, 4))  # NHWC x, HWIO [kH, kW, Cin/g, Cout]
    assert (geo.batch, geo.in_channels, geo.out_channels, geo.groups) == (3, 6, 4, 2)
    assert (geo.in_per_group, geo.out_per_group) == (3, 2)
    assert geo.input_size == (9, 8) and geo.kernel_size == (3, 2) and geo.output_size == (9, 4)
    assert geo.padding_before == (1, 0) and geo.padding_after == (1, 0)
    assert geo.source_shape == (3, 9, 8, 6) and geo.result_shape == (3, 9, 4, 4) and geo.weights_shape == (3, 2, 3, 4)
    assert geo.data_sizes((3, 9, 4, 4)) == (3, 4, 9, 4)


def test_grouped_convolution_3d():
    """x, y, z are W, H, D: strides, dilations and paddings land on the axis they name."""
    desc = mg.Convolution3DOpDescriptor(groups=2, stride_in_x=2, stride_in_z=3, dilation_rate_in_y=2,
                                        padding_front=1, padding_back=2, padding_top=0, padding_bottom=1,
                                        padding_left=3, padding_right=0, data_layout=L.NDHWC,
                                        weights_layout=L.DHWIO)
    geo = ConvGeometry.for_convolution(desc, (2, 7, 9, 8, 6), (2, 3, 2, 3, 4))  # DHWIO [kD, kH, kW, Cin/g, Cout]
    assert (geo.batch, geo.in_channels, geo.out_channels, geo.groups) == (2, 6, 4, 2)
    assert geo.input_size == (7, 9, 8) and geo.kernel_size == (2, 3, 2)
    assert geo.strides == (3, 1, 2) and geo.dilations == (1, 2, 1)
    assert geo.padding_before == (1, 0, 3) and geo.padding_after == (2, 1, 0)
    assert geo.output_size == ((7 + 3 - 2) // 3 + 1, 9 + 1 - 5 + 1, (8 + 3 - 2) // 2 + 1)
    assert geo.weights_shape == (2, 3, 2, 3, 4) and geo.result_shape == (2, 3, 6, 5, 4)
    oidhw = mg.Convolution3DOpDescriptor(padding_style=P.TF_SAME)
    geo = ConvGeometry.for_convolution(oidhw, (1, 3, 4, 5, 6), (5, 3, 2, 2, 3))
    assert geo.output_size == (4, 5, 6) and geo.padding_before == (0, 0, 1) and geo.padding_after == (1, 1, 1)
    assert ConvGeometry.of(oidhw, (1, 3, 4, 5, 6), (5, 3, 2, 2, 3)) == geo


def test_depthwise_2d_is_groups_equal_channels():
    desc = mg.DepthwiseConvolution2DOpDescriptor(dilation_rate_in_y=2, padding_top=1, padding_bottom=2)
    geo = ConvGeometry.for_depthwise_2d(desc, (2, 3, 7, 5), (4, 3, 2, 3))  # OIHW [M, C, kH, kW]
    assert (geo.groups, geo.in_per_group, geo.channel_multiplier, geo.out_channels) == (3, 1, 4, 12)
    assert geo.output_size == (7 + 3 - 3 + 1, 3) and geo.dilated_kernel == (3, 3)
    assert geo.weights_shape == (4, 3, 2, 3) and geo.result_shape == (2, 12, 8, 3)
    hwio = mg.DepthwiseConvolution2DOpDescriptor(data_layout=L.NHWC, weights_layout=L.HWIO)
    geo = ConvGeometry.for_depthwise_2d(hwio, (2, 7, 5, -1), (2, 3, 3, 4))  # C from the weights [kH, kW, C, M]
    assert geo.in_channels == 3 and geo.result_shape == (2, 6, 3, 12)


def test_depthwise_3d_channel_index_and_batch_axes():
    desc = mg.DepthwiseConvolution3DOpDescriptor(strides=(1, 2, 1), padding_values=(0, 0, 1, 1, 2, 0),
                                                 channel_dimension_index=-1)
    geo = ConvGeometry.for_depthwise_3d(desc, (2, 3, 4, 6, 5, 2), (1, 3, 3, 6))  # [..., D, H, W, C]; weights C*M last
    assert geo.batch_shape == (2, 3) and geo.batch == 6
    assert (geo.in_channels, geo.out_channels, geo.channel_multiplier) == (2, 6, 3)
    assert geo.input_size == (4, 6, 5) and geo.kernel_size == (1, 3, 3)
    assert geo.padding_before == (0, 1, 2) and geo.output_size == (4, 3, 5)
    assert geo.result_shape == (2, 3, 4, 3, 5, 6) and geo.weights_shape == (1, 3, 3, 6)


def test_pooling_ceil_mode_and_layout():
    desc = mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=3, stride_in_x=2, stride_in_y=2, ceil_mode=True,
                                    data_layout=L.NHWC)
    geo = ConvGeometry.for_pooling_2d(desc, (1, 6, 7, 4))
    assert geo.output_size == (3, 4) and geo.groups == geo.in_channels == geo.out_channels == 4
    assert geo.result_shape == (1, 3, 4, 4) and geo.weights_shape == ()
    assert ConvGeometry.of(desc, (1, 6, 7, 4)) == geo


@pytest.mark.parametrize("family,desc,x_shape,w_shape", [
    ("conv", mg.Convolution2DOpDescriptor(groups=2), (2, 4, 5, 6), (6, 2, 3, 2)),
    ("conv", mg.Convolution2DOpDescriptor(groups=2, data_layout=L.NHWC, weights_layout=L.HWIO),
     (2, 5, 6, 4), (3, 2, 2, 6)),
    ("dw2", mg.DepthwiseConvolution2DOpDescriptor(), (2, 3, 5, 6), (2, 3, 3, 2)),
    ("dw2", mg.DepthwiseConvolution2DOpDescriptor(data_layout=L.NHWC, weights_layout=L.HWIO), (2, 5, 6, 3),
     (3, 2, 3, 2)),
    ("dw3", mg.DepthwiseConvolution3DOpDescriptor(channel_dimension_index=-2), (2, 3, 4, 5, 3, 6), (2, 3, 6, 2)),
])
def test_layouts_as_permutations_and_strides(family, desc, x_shape, w_shape):
    """The canonical views of the NumPy kernels and the strides of the WGSL kernels say the same."""
    geo = ConvGeometry.of(desc, x_shape, w_shape)
    assert geo.source_shape == x_shape and geo.weights_shape == w_shape
    for shape, channels, spatial in ((geo.source_shape, geo.in_channels, geo.input_size),
                                     (geo.result_shape, geo.out_channels, geo.output_size)):
        a = np.arange(math.prod(shape)).reshape(shape)
        view = a.transpose(geo.data_permutation).reshape((geo.batch, channels) + spatial)
        index = tuple(n - 1 for n in view.shape)  # the last element: every stride counts
        assert view[index] == sum(i * s for i, s in zip(index, geo.data_strides(shape)))
    w = np.arange(math.prod(w_shape)).reshape(w_shape)
    canonical = (geo.groups, geo.out_per_group, geo.in_per_group) + geo.kernel_size
    view = w.transpose(geo.weights_permutation).reshape(canonical)
    for index in itertools.product(*(range(n) for n in canonical)):
        assert view[index] == sum(i * s for i, s in zip(index, geo.weights_strides()))


def test_kernels_see_the_geometry_of_the_forward_op():
    """geometry_of(step) gives every step of a family (forward, data and weights gradients) the
    forward op's geometry, by the op's role."""
    rng = np.random.default_rng(0)
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, padding_style=P.TF_SAME, data_layout=L.NHWC)
    g = mg.Graph()
    x = g.constant(rng.standard_normal((2, 7, 6, 3)).astype(np.float32))
    w = g.constant(rng.standard_normal((2, 3, 3, 3)).astype(np.float32))
    y = g.depthwise_convolution_2d(x, w, descriptor=desc)
    dx = g.depthwise_convolution_2d_data_gradient(y, w, output_shape=x.shape, descriptor=desc)
    dw = g.depthwise_convolution_2d_weights_gradient(y, x, output_shape=w.shape, descriptor=desc)
    pool = mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=2, data_layout=L.NHWC)
    p = g.max_pooling_2d(x, descriptor=pool)
    dp = g.max_pooling_2d_gradient(p, x, descriptor=pool)
    exe = g.compile({}, [dx, dw, dp],  # level 0: at level 1 these ops of constants are folded at compile time
                    compilation_descriptor=mg.CompilationDescriptor(mg.OptimizationLevel.LEVEL0))
    steps = {s.op.type: s for s in exe.plan.steps}
    forward = ConvGeometry.for_depthwise_2d(desc, x.shape, w.shape)
    for t in ("depthwise_convolution_2d", "depthwise_convolution_2d_data_gradient",
              "depthwise_convolution_2d_weights_gradient"):
        assert geometry_of(steps[t]) == forward, t
    pooled = ConvGeometry.for_pooling_2d(pool, x.shape)
    assert geometry_of(steps["max_pooling_2d"]) == geometry_of(steps["max_pooling_2d_gradient"]) == pooled
