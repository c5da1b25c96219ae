"""Long loops on the webgpu backend: every kernel whose work per invocation grows with an input
size runs at a size past 65,536 iterations per invocation, against the numpy backend.

Mesa's llvmpipe (lavapipe) stops a shader invocation's loops after 65,535 iterations in all,
silently, so a kernel that loops over a long axis in one invocation returns a wrong result there
(argmax over 70,000 gave 0, a cumulative sum left the tail at 0). The kernels bound their loops
(``minigraph/backends/webgpu/loops.py``, the reductions' chunks, the convolutions' multi-pass
paths); this file holds them to it. The enumeration comes from the webgpu kernel registry: a
newly registered op must get a case in ``LONG``, or a reasoned entry in ``BOUNDED`` (its work per
invocation does not grow with any input size) or ``REFUSED`` (it refuses sizes past the bound with
a ``ResourceLimitError`` instead of computing them), or ``test_every_kernel_is_enumerated`` fails.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigraph as mg
from minigraph.backends.webgpu import loops
from minigraph.backends.webgpu.registry import KERNELS
from minigraph.descriptors import (Convolution2DOpDescriptor, Convolution3DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                                   DepthwiseConvolution3DOpDescriptor, Pooling2DOpDescriptor, ScatterMode)

N = 70_000  # iterations of a loop over the long axis, past llvmpipe's 65,535

_ELEMENTWISE = """absolute addition atan2 cast ceil clamp cos division equal erf exponent exponent_base2 floor
floor_modulo greater_than greater_than_or_equal_to is_finite is_infinite is_nan leaky_relu leaky_relu_gradient
less_than less_than_or_equal_to relu_gradient sigmoid_gradient logarithm logarithm_base2 logical_and logical_not logical_or logical_xor maximum
maximum_with_nan_propagation minimum minimum_with_nan_propagation modulo multiplication negative not_equal power
reciprocal relu reverse_square_root rint round select sigmoid sign sin square square_root subtraction tanh
tan sinh cosh asin acos atan asinh acosh atanh exponent_base10 logarithm_base10 truncate signbit division_no_nan
logical_nand logical_nor logical_xnor bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift
bitwise_right_shift bitwise_population_count"""
_COPIES = ("broadcast concat permute transpose slice slice_gradient split stack tile reverse pad_tensor slice_tensor "
           "slice_gradient_tensor slice_update_data_tensor space_to_depth_2d depth_to_space_2d space_to_batch "
           "batch_to_space")

# op -> why one invocation's work does not grow with any input size
BOUNDED: dict[str, str] = {
    **{op: "one element per invocation; the math functions' loops have constant bounds (Payne-Hanek's 4 "
           "words, fmod's exponent difference under 300)" for op in _ELEMENTWISE.split()},
    **{op: "a strided copy (pad_tensor: a closed-form source coordinate per axis), one element per invocation"
       for op in _COPIES.split()},
    "gather": "one indexed read per element", "gather_along_axis": "one indexed read per element",
    "gather_nd": "one indexed read per element; a loop over the index depth, at most the rank",
    "one_hot": "one element per invocation",
    "normalize": "an elementwise map of x, mean, variance, gamma, beta",
    "adam": "elementwise maps, one element per invocation",
    "stochastic_gradient_descent": "an elementwise map, one element per invocation",
    "dropout": "Philox 4x32-10 per element: 10 rounds", "random_tensor": "Philox 4x32-10 per element: 10 rounds",
    "random_uniform_tensor": "Philox 4x32-10 per element: 10 rounds",
    **{op: "Philox 4x32-10 per block of 4 words: 10 rounds (a truncated normal's rejection: at most 64 attempts); "
           "the new state: one invocation adding a constant" for op in (
        "random_tensor_with_state", "random_uniform_tensor_with_state")},
    "random_philox_state_tensor": "one invocation writes seven constant words",
    "band_part": "one masked copy, one element per invocation",
    **{op: "an elementwise map, one element per invocation" for op in (
        "complex_tensor", "real_part_of_tensor", "imaginary_part_of_tensor", "conjugate", "absolute_square",
        "planar_tensor")},
    "reinterpret_cast": "a word copy, one word per invocation",
    "im_to_col": "one read (or a zero of the padding) per column element",
    "shape_of": "one invocation per axis writes a value from its parameters",
    "coordinate_along_axis": "one element per invocation: a division and a remainder",
    "resize": "separable passes, one result element per invocation, two loads each",
    "sample_grid": "one result element per invocation: two positions and at most four loads",
    **{op: "one element per invocation, no loop (a closed-form parameter or LUT index)" for op in (
        "quantize", "quantize_with_scale_tensor", "quantize_with_tensors", "dequantize", "dequantize_with_scale_tensor",
        "dequantize_with_tensors", "dequantize_blockwise", "dequantize_blockwise_symmetric", "dequantize_lut",
        "dequantize_vector_lut")},
}

# op -> why it refuses, and the case that must raise ResourceLimitError rather than compute wrongly
BOUNDED["call"] = "no shader of its own: the host reads the inputs back, runs the callee and writes its results"
BOUNDED["non_zero_indices"] = ("no shader of its own: a host step reads the input back and computes the indices "
                                "with the NumPy kernel (its result's size depends on the data)")

REFUSED: dict[str, str] = {
    **{op: "a direct DFT sums each axis in loops.long_loop passes, O(n^2) work: an axis longer than "
           "fft.MAX_AXIS (32,768) is refused at compile time (tests/test_fft.py)"
       for op in ("fast_fourier_transform", "real_to_hermitean_fft", "hermitean_to_real_fft")},
    "resize_gradient": "one input element gathers the gradient of every result that reads it in one "
                       "loop; more than loops.LOOP_MAX such results is refused at compile time",
}


def _ramp(n, lo=-3, period=7):
    """Small integers (exact in float32 sums in any order), the pattern repeating along the axis."""
    return (np.arange(n) % period + lo).astype(np.float32)


def _ph(g, value, name):
    return g.placeholder(list(value.shape), mg.as_dtype(value.dtype), name=name)


LONG: dict = {}


def long_case(*ops):
    """Register ``fn(g) -> (feeds, targets)`` as the long case of ``ops``."""
    def deco(fn):
        for op in ops:
            assert op not in LONG, op
            LONG[op] = fn
        return fn
    return deco


def _row(last=None, lo=-3):
    v = _ramp(N, lo)[None, :]
    if last is not None:
        v[0, -1] = last
    return v


def _last(fill, last):
    v = np.full((1, N), fill, np.float32)
    v[0, -1] = last
    return v


def _reduction(op, value):
    def case(g):
        x = _ph(g, value, "x")
        return {x: value}, [getattr(g, op)(x, axes=[1])]
    case.__name__ = op
    return case


for _op, _v in [("reduction_sum", _row()), ("mean", _row(100.0)), ("reduction_maximum", _row(5.0)),
                ("reduction_minimum", _row(-5.0)), ("reduction_maximum_propagate_nan", _row(np.nan)),
                ("reduction_minimum_propagate_nan", _row(np.nan)),
                ("reduction_product", _last(1.0, 3.0)), ("reduction_and", _last(1.0, 0.0)),
                ("reduction_or", _last(0.0, 1.0))]:
    long_case(_op)(_reduction(_op, _v))


@long_case("for_loop", "while_loop", "if_then_else")
def _control_flow(g):
    """Blocks over a long row: their kernels are the ordinary ones, encoded per iteration."""
    v = _row(100.0)
    x = _ph(g, v, "x")
    (looped,) = g.for_loop(3, [x], lambda i, a: [a[0] * 0.5 + g.cast(i, mg.float32)])
    (halved,) = g.while_loop([x], lambda ins, res: (res.extend(ins), g.greater_than(
        g.squeeze(g.reduction_maximum(g.absolute(ins[0]), axes=None)), 1.0))[1], lambda a: [a[0] * 0.5])
    (picked,) = g.if_then_else(g.greater_than(g.squeeze(g.reduction_sum(x, axes=None)), 0.0),
                               lambda: [g.negative(x)], lambda: [x + 1.0])
    return {x: v}, [looped, halved, picked]


@long_case("variance")
def _variance(g):
    v = _row(100.0)
    x = _ph(g, v, "x")
    return {x: v}, [g.variance(x, axes=[1])]


@long_case("reduction_arg_maximum", "reduction_arg_minimum")
def _arg(g):
    """The extremes at the end; two rows (the second's extreme inside the first pass), NaN between."""
    v = np.concatenate([_row(5.0), _row(-5.0)])
    v[0, 70] = v[1, 70_000 - 3] = np.nan
    v[1, 10] = 7.0
    x = _ph(g, v, "x")
    return {x: v}, [g.reduction_arg_maximum(x, 1), g.reduction_arg_minimum(x, 1)]


@long_case("cumulative_sum")
def _cumsum(g):
    v = np.stack([_ramp(N), _ramp(N, -2, 5)], 1)  # the scan along axis 0: rows `inner` apart
    x = _ph(g, v, "x")
    return {x: v}, [g.cumulative_sum(x, 0), g.cumulative_sum(x, 0, exclusive=True, reverse=True)]


@long_case("cumulative_product", "cumulative_maximum", "cumulative_minimum")
def _cumulative_extremes(g):
    """Products of +-1 (exact), maxima and minima that change at the far end of the axis (the
    exclusive ones' infinities are in test_long_loop_kernels_in_many_passes, compared exactly)."""
    v = np.stack([np.where(_ramp(N) > 0, 1.0, -1.0).astype(np.float32), _ramp(N, -2, 5)], 1)
    v[N - 2, 1] = 9.0
    v[N - 3, 1] = np.nan
    x = _ph(g, v, "x")
    return {x: v}, [g.cumulative_product(x, 0), g.cumulative_product(x, 0, exclusive=True, reverse=True),
                    g.cumulative_maximum(x, 0), g.cumulative_maximum(x, 0, reverse=True),
                    g.cumulative_minimum(x, 0, reverse=True), g.cumulative_minimum(x, 0)]


@long_case("softmax")
def _softmax(g):
    v = _row(9.0) / 4
    x = _ph(g, v, "x")
    return {x: v}, [g.softmax(x, axis=1)]


@long_case("softmax_cross_entropy")
def _softmax_ce(g):
    v = _row(9.0) / 4
    lab = np.zeros_like(v)
    lab[0, -1] = 1.0
    x, y = _ph(g, v, "x"), _ph(g, lab, "labels")
    return {x: v, y: lab}, [g.softmax_cross_entropy(x, y, axis=1, reduction="none")]


@long_case("softmax_gradient", "softmax_cross_entropy_gradient")
def _softmax_gradients(g):
    v = _row(9.0) / 4
    lab = np.zeros_like(v)
    lab[0, -1] = 1.0
    dyv = _row(2.0, -1) / 3
    x, y, dy = _ph(g, v, "x"), _ph(g, lab, "labels"), _ph(g, dyv, "dy")
    return {x: v, y: lab, dy: dyv}, [g.softmax_gradient(dy, x, 1),
                                     g.softmax_cross_entropy_gradient(g.constant(np.ones((1, 1), np.float32)), x, y, 1,
                                                                      "mean")]


@long_case("matrix_multiplication")
def _matmul(g):
    a, b = _row(), np.ones((N, 2), np.float32)
    b[-1] = [1000.0, -1000.0]
    x, y = _ph(g, a, "a"), _ph(g, b, "b")
    return {x: a, y: b}, [g.matrix_multiplication(x, y)]


@long_case("normalization_beta_gradient", "normalization_gamma_gradient", "normalization_gradient")
def _norm_grads(g):
    xv, dyv = _ramp(N)[:, None], _ramp(N, -2, 5)[:, None]
    xv[-1] = 50.0
    x, dy = _ph(g, xv, "x"), _ph(g, dyv, "dy")
    mean, var = g.mean(x, axes=[0]), g.variance(x, axes=[0])
    beta = g.normalization_beta_gradient(dy, x, [0])
    gamma = g.normalization_gamma_gradient(dy, x, mean, var, [0], 1e-3)
    dx = g.normalization_gradient(dy, x, mean, var, None, None, None, [0], 1e-3)
    return {x: xv, dy: dyv}, [beta, gamma, dx]


@long_case("avg_pooling_2d", "max_pooling_2d", "avg_pooling_2d_gradient", "max_pooling_2d_gradient")
def _pooling(g):
    d = Pooling2DOpDescriptor(kernel_width=N, kernel_height=1)
    xv = _ramp(N).reshape(1, 1, 1, N)
    xv[..., -1] = 9.0
    dyv = np.full((1, 1, 1, 1), 2.0, np.float32)
    x, dy = _ph(g, xv, "x"), _ph(g, dyv, "dy")
    return {x: xv, dy: dyv}, [g.avg_pooling_2d(x, d), g.max_pooling_2d(x, d),
                              g.avg_pooling_2d_gradient(dy, x, d), g.max_pooling_2d_gradient(dy, x, d)]


@long_case("avg_pooling_4d", "max_pooling_4d", "l2_norm_pooling_4d", "avg_pooling_4d_gradient",
           "max_pooling_4d_gradient", "l2_norm_pooling_4d_gradient", "max_pooling_4d_return_indices",
           "max_pooling_4d_gradient_with_indices", "max_pooling_2d_return_indices",
           "max_pooling_2d_gradient_with_indices")
def _pooling_4d(g):
    d = mg.Pooling4DOpDescriptor(kernel_sizes=(1, 1, 1, N), return_indices_mode="GLOBAL_FLATTEN_1D")
    d2 = Pooling2DOpDescriptor(kernel_width=N, kernel_height=1, return_indices_mode="LOCAL_FLATTEN_2D")
    xv = _ramp(N).reshape(1, 1, 1, 1, N)
    xv[..., -1] = 9.0
    dyv = np.full((1, 1, 1, 1, 1), 2.0, np.float32)
    x, dy = _ph(g, xv, "x"), _ph(g, dyv, "dy")
    x4, dy4 = g.reshape(x, [1, 1, 1, N]), g.reshape(dy, [1, 1, 1, 1])
    v, i = g.max_pooling_4d_return_indices(x, d)
    v2, i2 = g.max_pooling_2d_return_indices(x4, d2)
    return {x: xv, dy: dyv}, [g.avg_pooling_4d(x, d), g.max_pooling_4d(x, d), g.l2_norm_pooling_4d(x, d),
                              g.avg_pooling_4d_gradient(dy, x, d), g.max_pooling_4d_gradient(dy, x, d),
                              g.l2_norm_pooling_4d_gradient(dy, x, d), v, i,
                              g.max_pooling_4d_gradient_with_indices(dy, i, x.shape, d), v2, i2,
                              g.max_pooling_2d_gradient_with_indices(dy4, i2, x4.shape, d2)]


def _conv_feeds(g, **shapes):
    feeds, ts = {}, {}
    for k, (name, shape) in enumerate(shapes.items()):
        v = _ramp(int(np.prod(shape)), -1 - k % 2, 3 + k).reshape(shape)
        ts[name] = _ph(g, v, name)
        feeds[ts[name]] = v
    return feeds, ts


@long_case("convolution_2d", "convolution_2d_data_gradient", "convolution_2d_weights_gradient")
def _conv2d(g):
    """Forward: N input channels; data gradient: N output channels; weights gradient: N positions."""
    d = Convolution2DOpDescriptor()
    feeds, t = _conv_feeds(g, x=(1, N, 1, 1), w=(1, N, 1, 1), dy=(1, N, 1, 1), wt=(N, 1, 1, 1),
                           xs=(1, 1, 1, N), dys=(1, 1, 1, N))
    return feeds, [g.convolution_2d(t["x"], t["w"], d),
                   g.convolution_2d_data_gradient(t["dy"], t["wt"], [1, 1, 1, 1], d),
                   g.convolution_2d_weights_gradient(t["dys"], t["xs"], [1, 1, 1, 1], d)]


@long_case("convolution_3d", "convolution_3d_data_gradient", "convolution_3d_weights_gradient")
def _conv3d(g):
    """Forward: a kernel of N taps along D; data gradient: N output channels; weights gradient: N
    positions along D."""
    d = Convolution3DOpDescriptor()
    feeds, t = _conv_feeds(g, x=(1, 1, N, 1, 1), w=(1, 1, N, 1, 1), dy=(1, N, 1, 1, 1), wt=(N, 1, 1, 1, 1),
                           xs=(1, 1, N, 1, 1), dys=(1, 1, N, 1, 1))
    return feeds, [g.convolution_3d(t["x"], t["w"], d),
                   g.convolution_3d_data_gradient(t["dy"], t["wt"], [1, 1, 1, 1, 1], d),
                   g.convolution_3d_weights_gradient(t["dys"], t["xs"], [1, 1, 1, 1, 1], d)]


@long_case("convolution_transpose_2d", "convolution_transpose_2d_data_gradient",
           "convolution_transpose_2d_weights_gradient")
def _conv_transpose(g):
    """The transpose of a convolution from N channels to 1: its source has 1 channel, its result N."""
    d = Convolution2DOpDescriptor()
    feeds, t = _conv_feeds(g, s=(1, N, 1, 1), wt=(N, 1, 1, 1), dy=(1, N, 1, 1), w=(1, N, 1, 1),
                           ss=(1, 1, 1, N), dys=(1, 1, 1, N))
    return feeds, [g.convolution_transpose_2d(t["s"], t["wt"], [1, 1, 1, 1], d),
                   g.convolution_transpose_2d_data_gradient(t["dy"], t["w"], [1, 1, 1, 1], d),
                   g.convolution_transpose_2d_weights_gradient(t["dys"], t["ss"], [1, 1, 1, 1], d)]


@long_case("depthwise_convolution_2d", "depthwise_convolution_2d_data_gradient",
           "depthwise_convolution_2d_weights_gradient")
def _depthwise2d(g):
    """A 1 x N kernel (N taps per output and per input element); the weights gradient over N positions."""
    d = DepthwiseConvolution2DOpDescriptor()
    feeds, t = _conv_feeds(g, x=(1, 1, 1, N), w=(1, 1, 1, N), dy=(1, 1, 1, 1), xs=(1, 1, 1, N), dys=(1, 1, 1, N))
    return feeds, [g.depthwise_convolution_2d(t["x"], t["w"], d),
                   g.depthwise_convolution_2d_data_gradient(t["dy"], t["w"], [1, 1, 1, N], d),
                   g.depthwise_convolution_2d_weights_gradient(t["dys"], t["xs"], [1, 1, 1, 1], d)]


@long_case("depthwise_convolution_3d", "depthwise_convolution_3d_data_gradient",
           "depthwise_convolution_3d_weights_gradient")
def _depthwise3d(g):
    d = DepthwiseConvolution3DOpDescriptor()
    feeds, t = _conv_feeds(g, x=(1, 1, 1, 1, N), w=(1, 1, 1, N), dy=(1, 1, 1, 1, 1), xs=(1, 1, 1, 1, N),
                           dys=(1, 1, 1, 1, N))
    return feeds, [g.depthwise_convolution_3d(t["x"], t["w"], d),
                   g.depthwise_convolution_3d_data_gradient(t["dy"], t["w"], [1, 1, 1, 1, N], d),
                   g.depthwise_convolution_3d_weights_gradient(t["dys"], t["xs"], [1, 1, 1, 1], d)]


@long_case("sort", "arg_sort", "top_k", "top_k_gradient")
def _sorts(g):
    """Merge sort passes; ties (the ramp repeats) keep index order, the largest values at the end."""
    v = _row()
    v[0, -3:] = [7.0, 9.0, 8.0]
    dyv = np.array([[1.0, 2.0, 3.0]], np.float32)
    x, dy = _ph(g, v, "x"), _ph(g, dyv, "dy")
    values, indices = g.top_k(x, 3)
    return {x: v, dy: dyv}, [g.sort(x, 1), g.arg_sort(x, 1, descending=True), values, indices,
                             g.top_k_gradient(dy, x, 3)]


@long_case("top_k_axis", "top_k_axis_gradient", "bottom_k", "bottom_k_gradient")
def _k_along_axis(g):
    """The merge sort along axis 0 of a two-column tensor (rows `inner` apart): extremes at the end."""
    v = np.stack([_ramp(N), _ramp(N, -2, 5)], 1)
    v[-3:, 0] = [7.0, 9.0, 8.0]
    v[-2:, 1] = [-5.0, -6.0]
    dyv = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    x, dy = _ph(g, v, "x"), _ph(g, dyv, "dy")
    return {x: v, dy: dyv}, [*g.top_k_axis(x, 0, 3), *g.bottom_k(x, 0, 3), g.top_k_axis_gradient(dy, x, 0, 3),
                             g.bottom_k_gradient(dy, x, 0, 3)]


@long_case("scatter", "scatter_along_axis", "scatter_nd", "scatter_with_data", "scatter_nd_with_data")
def _scatters(g):
    """N updates per result element (all aimed at the first two): passes over chunks of updates."""
    upd = _ramp(N)
    idx = (np.arange(N) % 2).astype(np.int32)
    idx[-1] = 1
    u, i = _ph(g, upd, "u"), _ph(g, idx, "i")
    i_nd = g.reshape(i, [N, 1])
    data = g.constant(np.full(3, 10.0, np.float32))
    return {u: upd, i: idx}, [g.scatter(u, i, [3], 0, ScatterMode.ADD),
                              g.scatter_along_axis(u, i, data, 0, ScatterMode.ADD),
                              g.scatter_nd(u, i_nd, [3]), g.scatter_with_data(data, u, i, 0, ScatterMode.ADD),
                              g.scatter_nd_with_data(data, u, i_nd)]


@long_case("col_to_im")
def _col_to_im(g):
    """A window N wide over three pixels padded to N on the right: each pixel visits N window
    positions (one window), the one at its own column reading the column value."""
    cols = _ramp(N).reshape(1, N, 1)
    d = mg.ImToColOpDescriptor(kernel_width=N, padding_right=N - 3)
    c = _ph(g, cols, "cols")
    return {c: cols}, [g.col_to_im(c, [1, 1, 1, 3], d)]


@long_case("stencil")
def _stencil(g):
    """A window of N positions along the last dimension: each result element visits all of them."""
    xv, wv = _ramp(N + 2).reshape(1, 1, 1, N + 2), (_ramp(N, -1, 3) / 4).reshape(1, 1, 1, N)
    x, w = _ph(g, xv, "x"), _ph(g, wv, "w")
    mx = mg.StencilOpDescriptor(reduction_mode=mg.ReductionMode.ARGUMENT_MAX)
    return {x: xv, w: wv}, [g.stencil(x, w), g.stencil(x, w, mx)]


@long_case("sparse_tensor")
def _sparse(g):
    """N values named in one dense element (COO) and N values in one row (CSR): each is summed in passes."""
    v = _ramp(N)
    z = np.zeros(N, np.int32)
    vals, i0 = _ph(g, v, "v"), _ph(g, z, "i0")
    starts = g.constant(np.array([0, N, N], np.int32))
    return {vals: v, i0: z}, [g.sparse_tensor("COO", [vals, i0, i0], [2, 2], mg.float32),
                              g.sparse_tensor("CSR", [vals, i0, starts], [2, 3], mg.float32)]


@long_case("non_maximum_suppression", "non_maximum_suppression_with_class_indices")
def _nms(g):
    """N class scores per box (the best one is the last): the scores' loop runs in passes."""
    sv = np.tile((np.arange(N) % 97 / 100).astype(np.float32), (1, 3, 1))
    sv[0, :, -1] = [0.99, 0.98, 0.97]
    bv = np.array([[[0, 0, 2, 2], [0, 1, 2, 3], [5, 5, 6, 6]]], np.float32)
    s, b = _ph(g, sv, "s"), _ph(g, bv, "b")
    c = g.constant(np.array([[0, 1, 0]], np.int32))
    return {s: sv, b: bv}, [g.non_maximum_suppression(b, s, 0.1, 0.5, False),
                            g.non_maximum_suppression_with_class_indices(b, g.slice(s, 2, N - 1, 1), c, 0.1, 0.5, True)]


@long_case("pad_gradient")
def _pad_grad(g):
    """Each source element visits the padding's positions and its own: N of padding on each side
    of 3 elements (a long loop), and 5 of padding around N elements (a short one)."""
    dyv, dyw = _ramp(2 * N + 3), _ramp(N + 5)
    dyv[-1] = dyw[-1] = 100.0
    s, t = np.zeros(3, np.float32), np.zeros(N, np.float32)
    ps, pt, dy, dw = _ph(g, s, "s"), _ph(g, t, "t"), _ph(g, dyv, "dy"), _ph(g, dyw, "dw")
    return {ps: s, pt: t, dy: dyv, dw: dyw}, [g.pad_gradient(dy, ps, mg.PaddingMode.CLAMP_TO_EDGE, [N], [N]),
                                              g.pad_gradient(dw, pt, mg.PaddingMode.REFLECT, [2], [3])]


@long_case("tile_gradient")
def _tile_grad(g):
    """[2] tiled N times: each source element sums N copies."""
    dyv = _ramp(2 * N)
    dyv[-1] = 100.0
    src = np.zeros(2, np.float32)
    s, dy = _ph(g, src, "s"), _ph(g, dyv, "dy")
    return {s: src, dy: dyv}, [g.tile_gradient(dy, s, [N])]


@long_case("scaled_dot_product_attention")
def _attention(g):
    """N keys: the online softmax's passes; the best key last, a row with every key masked but one."""
    kv = np.stack([_ramp(N) / 8, _ramp(N, -2, 5) / 8], 1)[None]
    kv[0, -1] = 2.0
    vv = _ramp(N)[None, :, None]
    qv = np.array([[[1.0, -0.5], [0.25, 2.0]]], np.float32)
    mv = np.zeros((2, N), np.float32)
    mv[1, 1:-1] = -np.inf
    q, k, v, m = _ph(g, qv, "q"), _ph(g, kv, "k"), _ph(g, vv, "v"), _ph(g, mv, "m")
    return {q: qv, k: kv, v: vv, m: mv}, [g.scaled_dot_product_attention(q, k, v, m, scale=1.5)]


@long_case("single_gate_rnn", "lstm", "gru")
def _rnn_forward(g):
    """An input width of N: the input projection's dot products run in passes."""
    xv = np.stack([_ramp(N), _ramp(N, -2, 5)])[:, None, :]
    targets, feeds = [], {}
    x = _ph(g, xv, "x")
    feeds[x] = xv
    for op, gates in (("single_gate_rnn", 1), ("lstm", 4), ("gru", 3)):
        wv = np.stack([_ramp(N, -1 - k, 3 + k) for k in range(gates)]) / 64
        rv = np.full((gates, 1), 0.5, np.float32)
        w, r = _ph(g, wv.astype(np.float32), f"w_{op}"), _ph(g, rv, f"r_{op}")
        feeds.update({w: wv.astype(np.float32), r: rv})
        targets += getattr(g, op)(x, r, w)
    return feeds, targets


@long_case("single_gate_rnn_gradients", "lstm_gradients", "gru_gradients")
def _rnn_gradients(g):
    """A batch of N: the weight and bias gradients sum over T N = N rows in passes (dyadic values: exact sums)."""
    xv = _ramp(N)[None, :, None]
    dyv = _ramp(N, -2, 5)[None, :, None]
    x, dy = _ph(g, xv, "x"), _ph(g, dyv, "dy")
    feeds = {x: xv, dy: dyv}
    targets = []
    for op, gates in (("single_gate_rnn", 1), ("lstm", 4), ("gru", 3)):
        wv, rv = np.full((gates, 1), 0.5, np.float32), np.full((gates, 1), 0.25, np.float32)
        zv = np.full((1, N, gates), 0.5, np.float32)
        w, r, b, z = (_ph(g, wv, f"w_{op}"), _ph(g, rv, f"r_{op}"), _ph(g, wv[:, 0], f"b_{op}"),
                      _ph(g, zv, f"z_{op}"))
        feeds.update({w: wv, r: rv, b: wv[:, 0], z: zv})
        if op == "single_gate_rnn":
            targets += g.single_gate_rnn_gradients(x, r, dy, z, input_weight=w, bias=b)
        elif op == "lstm":
            targets += g.lstm_gradients(x, r, dy, z, dy, input_weight=w, bias=b,
                                        descriptor=mg.LSTMDescriptor(activation=mg.RNNActivation.NONE))
        else:
            targets += g.gru_gradients(x, r, dy, z, dy, input_weight=w, bias=b)
    return feeds, targets


@long_case("hamming_distance")
def _hamming(g):
    """Vectors of N words: the bit count runs in passes."""
    rng = np.random.default_rng(3)
    pv, qv = rng.integers(0, 2**32, (2, N), dtype=np.uint32), rng.integers(0, 2**32, (3, N), dtype=np.uint32)
    p, q = _ph(g, pv, "p"), _ph(g, qv, "q")
    return {p: pv, q: qv}, [g.hamming_distance(p, q, mg.uint32)]


@long_case("inverse")
def _inverse(g):
    """48 x 48 matrices: one invocation eliminating a whole matrix would loop 48^3 > 65,535 times."""
    rng = np.random.default_rng(4)
    av = (rng.standard_normal((2, 48, 48)) + 48 * np.eye(48)).astype(np.float32)
    a = _ph(g, av, "a")
    return {a: av}, [g.inverse(a)]


# ----------------------------------------------------------------------------- the enumeration
def _unenumerated() -> list:
    """The registered webgpu kernels with neither a long case, a bounded declaration nor a refusal."""
    return sorted(set(KERNELS.ops()) - set(LONG) - set(BOUNDED) - set(REFUSED))


def test_every_kernel_is_enumerated():
    """Each registered webgpu kernel has exactly one of: a long case, a bounded declaration, a refusal."""
    ops = set(KERNELS.ops())
    missing = _unenumerated()
    assert not missing, (f"webgpu kernels without a long case in {__name__} (or a reasoned BOUNDED / REFUSED "
                         f"entry): {missing}")
    kinds = {"LONG": set(LONG), "BOUNDED": set(BOUNDED), "REFUSED": set(REFUSED)}
    for name, entries in kinds.items():
        assert entries <= ops, f"{name} names ops without a webgpu kernel: {sorted(entries - ops)}"
    for a, b in (("LONG", "BOUNDED"), ("LONG", "REFUSED"), ("BOUNDED", "REFUSED")):
        assert not kinds[a] & kinds[b], f"{sorted(kinds[a] & kinds[b])} in both {a} and {b}"
    assert all(len(why) > 20 for why in list(BOUNDED.values()) + list(REFUSED.values()))


def test_a_newly_registered_kernel_without_a_case_is_caught():
    assert "reshape" not in KERNELS  # a view: no kernel
    with KERNELS.replaced("reshape", lambda step, kb: None):
        assert _unenumerated() == ["reshape"]
    assert _unenumerated() == []


def _compare(g, feeds, targets, label):
    got = g.run(feeds, targets, backend="webgpu")
    want = g.run(feeds, targets, backend="numpy")
    for t in targets:
        a, b = np.asarray(got[t]), np.asarray(want[t])
        assert a.shape == b.shape and a.dtype == b.dtype, (label, t.name)
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(a, b, err_msg=f"{label}: {t.name}")
        else:
            scale = max(1.0, float(np.nanmax(np.abs(b), initial=0)))
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale, err_msg=f"{label}: {t.name}")


_CASES = sorted({fn.__name__: fn for fn in LONG.values()}.items())


@pytest.mark.parametrize("name, case", _CASES, ids=[n.strip("_") for n, _ in _CASES])
def test_long_case_matches_numpy(webgpu, name, case):
    g = mg.Graph()
    feeds, targets = case(g)
    ops = {t.operation.type for t in targets}
    assert ops <= set(LONG) and {op for op, fn in LONG.items() if fn is case} <= ops, name
    _compare(g, feeds, targets, name)


def test_resize_gradient_refuses_a_loop_past_the_bound(webgpu):
    g = mg.Graph()
    dy = g.placeholder([1, 1, 1, N], name="dy")
    x = g.placeholder([1, 1, 1, 2], name="x")
    dx = g.resize_gradient(dy, x, mg.ResizeMode.BILINEAR, False, False, mg.TensorNamedDataLayout.NCHW)
    with pytest.raises(mg.ResourceLimitError, match="loop iterations"):
        g.compile({dy: mg.ShapedType([1, 1, 1, N]), x: mg.ShapedType([1, 1, 1, 2])}, [dx], backend="webgpu")


# ----------------------------------------------------------------------------- the mechanism at small sizes
def test_passes_cover_the_loop_in_order():
    assert loops.passes(0) == [(0, 0)] and loops.passes(5) == [(0, 5)]
    assert loops.passes(70_000) == [(0, 32768), (32768, 65536), (65536, 70000)]
    assert loops.passes(70_000, inner=1) == [(j, min(70_000, j + 16384)) for j in range(0, 70_000, 16384)]
    assert loops.nested_iterations(3, 4) == 15


@pytest.mark.parametrize("dtype", [mg.float32, mg.float16, mg.int32])
def test_long_loop_kernels_in_many_passes(webgpu, monkeypatch, dtype):
    """With 3 iterations a pass, every long-loop kernel runs dozens of passes on small tensors:
    the state carried between them (float16 kept in float32), exclusive and reverse scans, rows
    `inner` apart, the arg reductions' first extreme and their NaN."""
    if dtype == mg.float16 and not mg.get_backend("webgpu").context.has_f16:
        pytest.skip("the adapter has no shader-f16")
    monkeypatch.setattr(loops, "LOOP_MAX", 3)
    rng = np.random.default_rng(0)
    npd = dtype.np_dtype
    xv = rng.integers(-4, 5, (37, 3)).astype(npd)
    if dtype == mg.float16:
        xv = (xv * np.float16(0.1)).astype(npd)  # sums that round in float16 but not in float32
        xv[30, 1] = np.nan
    g = mg.Graph()
    x = g.placeholder([37, 3], dtype, name="x")
    s1, s2 = g.placeholder([1, 3], dtype, name="s1"), g.placeholder([30, 2], dtype, name="s2")
    targets = [g.reduction_arg_maximum(x, 0), g.reduction_arg_minimum(x, 0), g.cumulative_sum(x, 0),
               g.cumulative_sum(x, 0, exclusive=True), g.cumulative_sum(x, 0, reverse=True),
               g.cumulative_product(x, 0, reverse=True), g.cumulative_maximum(x, 0, exclusive=True),
               g.cumulative_minimum(x, 0, reverse=True),
               g.tile_gradient(x, s1, [37, 1]),
               g.pad_gradient(x, s2, mg.PaddingMode.SYMMETRIC, [3, 0], [4, 1])]
    feeds = {x: xv, s1: np.zeros((1, 3), npd), s2: np.zeros((30, 2), npd)}
    got = g.run(feeds, targets, backend="webgpu")
    want = g.run(feeds, targets, backend="numpy")
    for t in targets:
        tol = 1e-2 if dtype == mg.float16 else 0  # the numpy backend's tile_gradient sums float16 in float16
        np.testing.assert_allclose(got[t].astype(np.float64), want[t].astype(np.float64), rtol=tol, atol=tol,
                                   err_msg=t.name)
