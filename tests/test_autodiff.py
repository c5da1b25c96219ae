"""Autodiff: every gradient rule against central finite differences (float64), over the registry;
g.gradients itself (what it returns, the ops it inserts and their names, seeds for non-scalar
losses, zeros for unrelated tensors, stop_gradient, integer paths, second order); training.

A new differentiable op without a case in CASES fails ``test_every_rule_has_a_case``.
"""
import numpy as np
import pytest

import minigraph as mg
from minigraph.ops import OPS
from gradcheck import central_differences
from op_cases import ELEMENTWISE, fd_domain

D = mg.DepthwiseConvolution2DOpDescriptor
C2 = mg.Convolution2DOpDescriptor
D3 = mg.DepthwiseConvolution3DOpDescriptor
C3 = mg.Convolution3DOpDescriptor
P2 = mg.Pooling2DOpDescriptor
S = mg.PaddingStyle


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _dw(**kw):
    return D(stride_in_x=2, dilation_rate_in_y=2, padding_left=1, padding_bottom=2, **kw)


def _elementwise(op):
    return lambda g, *xs: getattr(g, op)(*xs)


def _sparse_sum(g, v):
    """The three storage types over the same 5 values (duplicates, a dropped value, an empty row)."""
    outs = [g.sparse_tensor(st, [v, g.constant(np.array(i0, np.int32)), g.constant(np.array(i1, np.int32))], [3, 4],
                            v.dtype)
            for st, i0, i1 in (("COO", [0, 2, 2, 5, 1], [1, 3, 3, 0, 0]), ("CSR", [1, 3, 0, 2, 2], [0, 2, 2, 9]),
                               ("CSC", [2, 1, 0, 2, 2], [0, 1, 1, 5, 4]))]
    return g.addition(g.addition(outs[0], g.multiplication(outs[1], 2.0)), g.multiplication(outs[2], 3.0))


# op type -> (builder(g, *inputs), [input shapes], (low, high) value range); the elementwise ops
# come from tests/op_cases.py
CASES = {
    **{t: (_elementwise(t), c.fd_shapes, fd_domain(t)) for t, c in ELEMENTWISE.items() if fd_domain(t) is not None},
    "select": (lambda g, a, b: g.select(g.greater_than(a, 0.0), a, b), [(2, 3), (3,)], (-2, 2)),
    "leaky_relu": (lambda g, a: g.leaky_relu(a, 0.2), [(6,)], (-2, 2)),
    "leaky_relu_gradient": (lambda g, dy, x, a: g.leaky_relu_gradient(dy, x, a), [(2, 3), (2, 3), (3,)], (-2, 2)),
    "relu_gradient": (lambda g, dy, x: g.relu_gradient(dy, x), [(3,), (2, 3)], (-2, 2)),
    "sigmoid_gradient": (lambda g, dy, x: g.sigmoid_gradient(dy, x), [(2, 3), (2, 3)], (-2, 2)),
    # rate 0: the exe below runs once per step with a fresh mask; tests/test_random.py checks rate 0.5
    "dropout": (lambda g, a: g.dropout(a, 0.0, seed=1), [(2, 3)], (-2, 2)),
    "cast": (lambda g, a: g.cast(g.cast(a, mg.float32), mg.float64), [(4,)], (-2, 2)),
    "reduction_sum": (lambda g, a: g.reduction_sum(a, axes=[0, 2]), [(2, 3, 4)], (-2, 2)),
    "reduction_maximum": (lambda g, a: g.reduction_maximum(a, axes=[1]), [(2, 5)], (-2, 2)),
    "reduction_minimum": (lambda g, a: g.reduction_minimum(a, axes=None), [(2, 5)], (-2, 2)),
    "reduction_maximum_propagate_nan": (lambda g, a: g.reduction_maximum_propagate_nan(a, axes=[0]), [(3, 4)], (-2, 2)),
    "reduction_minimum_propagate_nan": (lambda g, a: g.reduction_minimum_propagate_nan(a, axes=[1, 0]), [(2, 5)],
                                        (-2, 2)),
    "mean": (lambda g, a: g.mean(a, axes=[-1]), [(2, 3, 4)], (-2, 2)),
    "reduction_product": (lambda g, a: g.reduction_product(a, axes=[0, 2]), [(2, 3, 3)], (-2, 2)),
    "cumulative_sum": (lambda g, a: g.cumulative_sum(a, 1, exclusive=True, reverse=True), [(2, 4, 3)], (-2, 2)),
    "cumulative_product": (lambda g, a: g.cumulative_product(a, 1, reverse=True), [(2, 4, 3)], (-2, 2)),
    "cumulative_maximum": (lambda g, a: g.cumulative_maximum(a, -1), [(3, 5)], (-2, 2)),
    "cumulative_minimum": (lambda g, a: g.cumulative_minimum(a, 0, reverse=True), [(5, 3)], (-2, 2)),
    "top_k": (lambda g, a: g.top_k(a, 3)[0], [(2, 3, 5)], (-2, 2)),
    "top_k_axis": (lambda g, a: g.top_k(a, 2, axis=1)[0], [(2, 3, 5)], (-2, 2)),
    "bottom_k": (lambda g, a: g.bottom_k(a, 0, 2)[0], [(3, 4)], (-2, 2)),
    "sort": (lambda g, a: g.sort(a, 1, descending=True), [(3, 5, 2)], (-2, 2)),
    "softmax": (lambda g, a: g.softmax(a, axis=1), [(3, 4)], (-2, 2)),
    "softmax_gradient": (lambda g, dy, x: g.softmax_gradient(dy, x, 0), [(3, 4), (3, 4)], (-2, 2)),
    "softmax_cross_entropy_gradient": (lambda g, dy, x, lab: g.addition(
        g.softmax_cross_entropy_gradient(dy, x, lab, 1, "none"),
        g.softmax_cross_entropy_gradient(g.reduction_sum(dy, axes=None), x, lab, -1, "mean")), [(3, 1), (3, 4), (3, 4)],
        (0.1, 1)),
    "softmax_cross_entropy": (lambda g, a, b: g.softmax_cross_entropy(a, b, axis=-1, reduction="mean"),
                              [(3, 4), (3, 4)], (0.1, 1)),
    "matrix_multiplication": (lambda g, a, b: g.matrix_multiplication(a, b), [(2, 1, 3, 4), (3, 4, 2)], (-2, 2)),
    "reshape": (lambda g, a: g.reshape(a, [3, -1]), [(2, 3, 2)], (-2, 2)),
    "transpose": (lambda g, a: g.transpose(a, 0, 2), [(2, 3, 4)], (-2, 2)),
    "permute": (lambda g, a: g.permute(a, [2, 0, 1]), [(2, 3, 4)], (-2, 2)),
    "slice": (lambda g, a: g.slice(a, 1, 1, 2), [(2, 4)], (-2, 2)),
    "slice_gradient": (lambda g, a: g.slice_gradient(a, [2, 5], 1, 2, 2), [(2, 2)], (-2, 2)),
    "im_to_col": (lambda g, a: g.im_to_col(a, mg.ImToColOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=1,
                                                                      padding_left=1, padding_top=1)), [(1, 2, 3, 3)],
                  (-2, 2)),
    "col_to_im": (lambda g, a: g.col_to_im(a, [1, 4, 3, 2], mg.ImToColOpDescriptor(
        kernel_width=2, kernel_height=2, padding_bottom=1, data_layout="NHWC")), [(1, 8, 8)], (-2, 2)),
    "sample_grid": (lambda g, a, c: g.sample_grid(a, c, mg.TensorNamedDataLayout.NCHW, True, True, True,
                                                 mg.PaddingMode.REFLECT, mg.ResizeMode.BILINEAR),
                    [(2, 2, 4, 5), (2, 3, 4, 2)], (-1.3, 1.3)),
    "stencil": (lambda g, a, w: g.stencil(a, w, mg.StencilOpDescriptor(
        strides=(1, 2, 1, 1), dilation_rates=(1, 1, 2, 1), explicit_padding=(0, 1, 1, 0, 0, 0, 2, 1),
        boundary_mode=mg.PaddingMode.REFLECT)), [(2, 2, 3, 4, 4), (1, 2, 2, 2)], (-2, 2)),
    "sparse_tensor": (lambda g, v: _sparse_sum(g, v), [(5,)], (-2, 2)),
    "slice_tensor": (lambda g, a: g.slice_tensor(a, [1, -1], [3, 0], [1, -2], squeeze_mask=1), [(3, 5)], (-2, 2)),
    "slice_gradient_tensor": (lambda g, a: g.slice_gradient_tensor(a, [3, 5], [0, 4], [3, 0], [2, -3]), [(2, 2)],
                              (-2, 2)),
    "slice_update_data_tensor": (lambda g, a, b: g.slice_update_data_tensor(a, b, [1, 0], [3, 5], [1, 2]),
                                 [(3, 5), (2, 3)], (-2, 2)),
    "space_to_depth_2d": (lambda g, a: g.space_to_depth_2d(a, 2, 1, 0, 2, True), [(2, 4, 2)], (-2, 2)),
    "depth_to_space_2d": (lambda g, a: g.depth_to_space_2d(a, 2, 1, 0, 2, False), [(8, 1, 2)], (-2, 2)),
    "space_to_batch": (lambda g, a: g.space_to_batch(a, [1], 0, [3], True), [(2, 3)], (-2, 2)),
    "batch_to_space": (lambda g, a: g.batch_to_space(a, [1], 0, [2], False), [(4, 3)], (-2, 2)),
    "concat": (lambda g, a, b: g.concat([a, b, a], 0), [(1, 3), (2, 3)], (-2, 2)),
    "broadcast": (lambda g, a: g.broadcast(a, [2, 3, 4]), [(3, 1)], (-2, 2)),
    "expand_dims": (lambda g, a: g.expand_dims(a, [0, 2]), [(2, 3)], (-2, 2)),
    "squeeze": (lambda g, a: g.squeeze(a), [(2, 1, 3)], (-2, 2)),
    # padding and data movement
    "pad_tensor": (lambda g, a: g.addition(g.pad_tensor(a, mg.PaddingMode.REFLECT, [1, 2], [2, 1]),
                                           g.pad_tensor(a, mg.PaddingMode.ANTI_PERIODIC, [2, 1], [1, 2])),
                   [(3, 4)], (-2, 2)),
    "pad_gradient": (lambda g, a, s: g.pad_gradient(a, s, mg.PaddingMode.SYMMETRIC, [2, 1], [1, 3]), [(6, 8), (3, 4)],
                     (-2, 2)),
    "tile": (lambda g, a: g.tile(a, [2, 1, 3]), [(2, 3, 2)], (-2, 2)),
    "tile_gradient": (lambda g, a, s: g.tile_gradient(a, s, [3, 2]), [(6, 4), (2, 2)], (-2, 2)),
    "split": (lambda g, a: g.concat(g.split(a, 3, 1)[::2], 1), [(2, 6)], (-2, 2)),
    "stack": (lambda g, a, b: g.stack([a, b, a], -2), [(2, 3), (3,)], (-2, 2)),
    "flatten_2d": (lambda g, a: g.flatten_2d(a, -2), [(2, 3, 4)], (-2, 2)),
    "reverse": (lambda g, a: g.reverse(a, [0, -1]), [(2, 3, 4)], (-2, 2)),
    # linear algebra
    "band_part": (lambda g, a: g.band_part(a, 1, 2), [(2, 4, 5)], (-2, 2)),
    "inverse": (lambda g, a: g.inverse(g.addition(a, g.cast(g.constant(4 * np.eye(3, dtype=np.float32)), a.dtype))), [(2, 3, 3)],
                (-1, 1)),
    # convolution family
    "depthwise_convolution_2d": (lambda g, x, w: g.depthwise_convolution_2d(x, w, descriptor=_dw()),
                                 [(2, 2, 6, 7), (2, 2, 3, 2)], (-1, 1)),
    "depthwise_convolution_2d_data_gradient": (
        lambda g, dy, w: g.depthwise_convolution_2d_data_gradient(dy, w, output_shape=[2, 2, 6, 7], descriptor=_dw()),
        [(2, 4, 4, 4), (2, 2, 3, 2)], (-1, 1)),
    "convolution_2d": (lambda g, x, w: g.convolution_2d(x, w, descriptor=C2(groups=2, stride_in_y=2, padding_left=1)),
                       [(2, 4, 5, 5), (6, 2, 2, 3)], (-1, 1)),
    "convolution_2d_data_gradient": (
        lambda g, dy, w: g.convolution_2d_data_gradient(dy, w, output_shape=[2, 4, 5, 5],
                                                        descriptor=C2(groups=2, stride_in_y=2, padding_left=1)),
        [(2, 6, 2, 4), (6, 2, 2, 3)], (-1, 1)),
    "convolution_3d": (lambda g, x, w: g.convolution_3d(x, w, descriptor=C3(groups=2, stride_in_y=2, padding_left=1)),
                       [(1, 4, 3, 5, 5), (6, 2, 2, 2, 3)], (-1, 1)),
    "convolution_3d_data_gradient": (
        lambda g, dy, w: g.convolution_3d_data_gradient(dy, w, output_shape=[1, 4, 3, 5, 5],
                                                        descriptor=C3(groups=2, stride_in_y=2, padding_left=1)),
        [(1, 6, 2, 2, 4), (6, 2, 2, 2, 3)], (-1, 1)),
    "convolution_transpose_2d": (
        lambda g, x, w: g.convolution_transpose_2d(x, w, [2, 4, 6, 5],
                                                   C2(groups=2, stride_in_y=2, stride_in_x=2, padding_left=1)),
        [(2, 6, 3, 2), (6, 2, 2, 3)], (-1, 1)),
    "convolution_transpose_2d_data_gradient": (
        lambda g, dy, w: g.convolution_transpose_2d_data_gradient(
            dy, w, [2, 6, 3, 2], C2(groups=2, stride_in_y=2, stride_in_x=2, padding_left=1)),
        [(2, 4, 6, 5), (6, 2, 2, 3)], (-1, 1)),
    "resize": (lambda g, x: g.resize(x, [5, 7], mg.ResizeMode.BILINEAR, True, False, mg.TensorNamedDataLayout.NCHW),
               [(1, 2, 3, 4)], (-2, 2)),
    "resize_gradient": (
        lambda g, dy, x: g.resize_gradient(dy, x, mg.ResizeMode.NEAREST, False, True, mg.TensorNamedDataLayout.NHWC),
        [(2, 5, 3, 3), (2, 4, 6, 3)], (-2, 2)),
    "depthwise_convolution_3d": (
        lambda g, x, w: g.depthwise_convolution_3d(x, w, descriptor=D3(strides=(1, 2, 1), padding_values=(0, 1, 1, 0, 1, 1))),
        [(2, 3, 4, 5), (4, 2, 2, 2)], (-1, 1)),
    "depthwise_convolution_3d_data_gradient": (
        lambda g, dy, w: g.depthwise_convolution_3d_data_gradient(
            dy, w, output_shape=[2, 3, 4, 5], descriptor=D3(strides=(1, 2, 1), padding_values=(0, 1, 1, 0, 1, 1))),
        [(4, 3, 2, 6), (4, 2, 2, 2)], (-1, 1)),
    # attention: batch and head broadcasting, an additive mask (its gradient too), Dv != D
    "scaled_dot_product_attention": (
        lambda g, q, k, v, m: g.scaled_dot_product_attention(q, k, v, m, scale=0.7),
        [(2, 2, 3, 4), (2, 1, 5, 4), (1, 2, 5, 3), (3, 5)], (-1.5, 1.5)),
    # normalization: normalize with free mean/variance takes the elementwise rule; the batch-norm
    # rule (mean/variance of its own tensor) is checked in tests/test_normalization.py
    "variance": (lambda g, a: g.variance(a, [0, 2]), [(3, 2, 4)], (-2, 2)),
    "normalize": (lambda g, x, m, v, ga, be: g.normalize(x, m, v, ga, be, 1e-3),
                  [(2, 3), (3,), (2, 1), (3,), (1, 3)], (0.3, 2)),
    "normalization_beta_gradient": (lambda g, dy, x: g.normalization_beta_gradient(dy, x, [0, 2]),
                                    [(2, 3, 2), (2, 3, 2)], (-2, 2)),
    "max_pooling_2d": (lambda g, x: g.max_pooling_2d(x, P2(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=1)),
                       [(2, 2, 4, 4)], (-2, 2)),
    "avg_pooling_2d": (lambda g, x: g.avg_pooling_2d(x, P2(kernel_width=3, kernel_height=2, padding_style=S.TF_SAME)),
                       [(2, 2, 4, 5)], (-2, 2)),
    "avg_pooling_2d_gradient": (
        lambda g, dy, x: g.avg_pooling_2d_gradient(dy, x, P2(kernel_width=3, kernel_height=2, stride_in_x=2,
                                                              padding_left=1, padding_right=1)),
        [(2, 2, 3, 3), (2, 2, 4, 5)], (-2, 2)),
    "max_pooling_4d": (lambda g, x: g.max_pooling_4d(x, mg.Pooling4DOpDescriptor(
        kernel_sizes=(1, 2, 2, 2), strides=(1, 1, 2, 1), padding_values=(0, 0, 1, 0, 0, 1, 1, 0))),
        [(2, 2, 3, 4, 3)], (-2, 2)),
    "avg_pooling_4d": (lambda g, x: g.avg_pooling_4d(x, mg.Pooling4DOpDescriptor(
        kernel_sizes=(2, 1, 2, 3), strides=(1, 1, 2, 2), padding_style=S.TF_SAME)), [(2, 3, 4, 5)], (-2, 2)),
    "avg_pooling_4d_gradient": (lambda g, dy, x: g.avg_pooling_4d_gradient(dy, x, mg.Pooling4DOpDescriptor(
        kernel_sizes=(1, 2, 2, 3), strides=(1, 1, 2, 2), padding_values=(0, 0, 0, 1, 1, 0, 1, 1),
        include_zero_pad_to_average=True)), [(2, 3, 2, 3), (2, 3, 4, 5)], (-2, 2)),
    "l2_norm_pooling_4d": (lambda g, x: g.l2_norm_pooling_4d(x, mg.Pooling4DOpDescriptor(
        kernel_sizes=(1, 2, 3, 2), strides=(1, 1, 2, 1), dilation_rates=(1, 1, 1, 2), padding_values=(0, 0, 1, 0, 1, 1, 0, 1))),
        [(2, 2, 3, 4, 3)], (-2, 2)),
    "max_pooling_2d_return_indices": (lambda g, x: g.max_pooling_2d_return_indices(x, P2(
        kernel_width=2, kernel_height=3, stride_in_x=2, padding_top=1, return_indices_mode="GLOBAL_FLATTEN_2D"))[0],
        [(2, 2, 4, 5)], (-2, 2)),
    "max_pooling_4d_return_indices": (lambda g, x: g.max_pooling_4d_return_indices(x, mg.Pooling4DOpDescriptor(
        kernel_sizes=(1, 2, 2, 2), strides=(1, 2, 1, 2), return_indices_mode="LOCAL_FLATTEN_3D"))[0],
        [(2, 2, 4, 3, 4)], (-2, 2)),
    # gather / scatter: constant indices with repeats, negatives (and one skipped for the scatters)
    "gather": (lambda g, u: g.gather(u, g.constant(np.array([[2, -1, 0, 2], [1, 1, -3, 0]], np.int32)), 2,
                                     batch_dimensions=1), [(2, 3, 3)], (-2, 2)),
    "gather_along_axis": (lambda g, u: g.gather_along_axis(u, g.constant(np.array([[0, 0, -1, 1, 2]] * 2, np.int32)), 1),
                          [(2, 3)], (-2, 2)),
    "gather_nd": (lambda g, u: g.gather_nd(u, g.constant(np.array([[[1], [1], [-3]], [[-1], [0], [2]]], np.int32)),
                                           batch_dimensions=1), [(2, 3, 2)], (-2, 2)),
    "scatter_along_axis": (lambda g, u, d: g.scatter_along_axis(
        u, g.constant(np.array([[0, 0, -1], [2, 1, 1]], np.int32)), d, 1, mg.ScatterMode.ADD),
        [(2, 3), (2, 4)], (-2, 2)),
    "scatter": (lambda g, u: g.scatter(u, g.constant(np.array([1, 1, -3], np.int32)), [2, 3], 1, mg.ScatterMode.SUB),
                [(2, 3)], (-2, 2)),
    "scatter_with_data": (lambda g, d, u: g.scatter_with_data(d, u, g.constant(np.array([1, -1], np.int32)), 1,
                                                            mg.ScatterMode.SET), [(2, 4), (2, 2)], (-2, 2)),
    "scatter_nd_with_data": (lambda g, d, u: g.scatter_nd_with_data(d, u, g.constant(np.array([[[2], [0], [2]]],
                                                                                             np.int32)), 1,
                                                                  mg.ScatterMode.SUB), [(1, 3, 2), (1, 3, 2)], (-2, 2)),
    "scatter_nd": (lambda g, u: g.scatter_nd(u, g.constant(np.array([[[2], [0], [2]]], np.int32)), [1, 3, 2],
                                             batch_dimensions=1), [(1, 3, 2)], (-2, 2)),
    # recurrent layers: every optional input but the mask; bidirectional, reverse, reset_after with flip_z
    "single_gate_rnn": (lambda g, x, r, w, b, h0: g.single_gate_rnn(
        x, r, w, b, h0, descriptor=mg.SingleGateRNNDescriptor(activation=mg.RNNActivation.TANH, bidirectional=True))[0],
        [(3, 2, 2), (2, 2, 2), (4, 2), (4,), (2, 4)], (-1, 1)),
    "lstm": (lambda g, x, r, w, b, h0, c0, p: g.lstm(x, r, w, b, h0, c0, None, p,
                                                    descriptor=mg.LSTMDescriptor(reverse=True))[0],
             [(3, 2, 2), (8, 2), (8, 2), (8,), (2, 2), (2, 2), (8,)], (-1, 1)),
    "gru": (lambda g, x, r, w, b, h0, b2: g.gru(x, r, w, b, h0, None, b2,
                                               descriptor=mg.GRUDescriptor(reset_after=True, flip_z=True))[0],
            [(3, 2, 2), (6, 2), (6, 2), (6,), (2, 2), (2,)], (-1, 1)),
    # complex numbers and Fourier transforms (JAX's convention; tests/test_fft.py has more)
    "complex_tensor": (lambda g, a, b: g.planar_tensor(g.complex_tensor(a, b)), [(2, 3), (3,)], (-2, 2)),
    "real_part_of_tensor": (lambda g, a, b: g.real_part_of_tensor(g.multiplication(g.complex_tensor(a, b),
                                                                                   g.complex_tensor(b, a))),
                            [(3,), (3,)], (-2, 2)),
    "imaginary_part_of_tensor": (lambda g, a, b: g.imaginary_part_of_tensor(g.multiplication(
        g.complex_tensor(a, b), g.complex_tensor(b, a))), [(3,), (3,)], (-2, 2)),
    "conjugate": (lambda g, a, b: g.planar_tensor(g.conjugate(g.complex_tensor(a, b))), [(3,), (3,)], (-2, 2)),
    "absolute_square": (lambda g, a, b: g.absolute_square(g.complex_tensor(a, b)), [(2, 3), (2, 3)], (-2, 2)),
    "planar_tensor": (lambda g, a, b: g.planar_tensor(g.complex_tensor(g.square(a), b)), [(2, 3), (2, 3)], (-2, 2)),
    "fast_fourier_transform": (lambda g, a, b: g.planar_tensor(g.fast_fourier_transform(
        g.complex_tensor(a, b), [0, 1], mg.FFTDescriptor(inverse=True, scaling_mode="unitary"))),
        [(3, 4), (3, 4)], (-2, 2)),
    "real_to_hermitean_fft": (lambda g, a: g.planar_tensor(g.real_to_hermitean_fft(a, [0, 1])), [(3, 5)], (-2, 2)),
    "hermitean_to_real_fft": (lambda g, a, b: g.hermitean_to_real_fft(g.complex_tensor(a, b), [0, 1],
                                                                       mg.FFTDescriptor(scaling_mode="size")),
                              [(3, 4), (3, 4)], (-2, 2)),
    # control flow (tests/test_control_flow.py has the other branch, the bounds form, nesting)
    "if_then_else": (lambda g, a, b: g.if_then_else(g.constant(True), lambda: [g.sin(a) * b], lambda: [a * a])[0],
                     [(2, 3), (3,)], (-2, 2)),
    "for_loop": (lambda g, a, b: g.for_loop(3, [a], lambda i, s: [g.tanh(s[0] * b) + g.cast(i, mg.float64)])[0],
                 [(2, 3), (3,)], (-1, 1)),
}


def _fd_check(op_type, seed=0):
    build, shapes, (lo, hi) = CASES[op_type]
    rng = np.random.default_rng(seed)
    g = mg.Graph()
    xs = [g.placeholder(s, mg.float64, name=f"in{i}") for i, s in enumerate(shapes)]
    y = build(g, *xs)
    weights = g.placeholder(y.shape, mg.float64, name="r")
    loss = g.reduction_sum(g.multiplication(y, weights), axes=None, name="loss")
    grads = g.gradients(loss, xs, name="grad")
    vals = [rng.uniform(lo, hi, s) for s in shapes]
    if op_type.startswith(("maximum", "minimum", "reduction_maximum", "reduction_minimum", "relu", "select")):
        vals = [v + np.sign(v) * 0.05 for v in vals]  # stay away from kinks
    eps = 1e-6
    if op_type == "cast":  # float32 round trip: use values and steps that float32 holds exactly
        vals, eps = [np.round(v * 8) / 8 for v in vals], 0.125
    rv = rng.uniform(0.5, 1.5, y.shape)
    feeds = {**dict(zip(xs, vals)), weights: rv}
    out = g.run(feeds, [grads[x] for x in xs])
    for x, fd in zip(xs, central_differences(g, loss, feeds, xs, eps)):
        np.testing.assert_allclose(out[grads[x]], fd, rtol=1e-5, atol=1e-6, err_msg=f"{op_type} d/d{x.name}")


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_gradient_rule_matches_finite_differences(op_type):
    assert op_type in OPS, f"{op_type} has a finite-difference case but is not declared"
    _fd_check(op_type)


def test_every_rule_has_a_case():
    not_applicable = {t for t in ELEMENTWISE if fd_domain(t) is None}
    missing = sorted(t for t, d in OPS.items() if d.grad is not None and d.differentiable
                     and t not in CASES and not d.internal and t not in not_applicable)
    assert not missing, (f"ops with gradient rules but no finite-difference case: {missing} "
                         "(an elementwise op: add its case to ELEMENTWISE in tests/op_cases.py)")


def test_every_op_is_differentiable_or_declared_not():
    for t, d in OPS.items():
        assert d.internal or d.grad is not None or not d.differentiable, f"{t} has no rule and is not marked"


def test_a_second_rule_and_a_rule_for_an_undeclared_op_are_refused():
    """``@gradient`` refuses a second rule for an op (the first stays) and an op type that is not
    declared, naming it, as the kernel tables refuse a second kernel."""
    from minigraph.ops.registry import gradient

    rule = OPS["addition"].grad
    with pytest.raises(mg.errors.RegistrationError, match=r"'addition' registered twice"):
        gradient("addition")(lambda g, op, dy, wanted: None)
    assert OPS["addition"].grad is rule
    with pytest.raises(mg.errors.RegistrationError, match=r"'no_such_op' is not a declared op type"):
        gradient("no_such_op")
    assert "no_such_op" not in OPS


def test_gradients_api_and_sgd(backend, rng):
    g = mg.Graph()
    x = g.placeholder(shape=[4, 3], dtype=mg.float32, name="x")
    w1 = g.variable(f32(rng, 3, 2), name="w1")
    w2 = g.variable(f32(rng, 2), name="w2")
    h = g.tanh(g.matrix_multiplication(x, w1))
    loss = g.reduction_sum(g.square(h + w2), axes=None, name="loss")
    grads = g.gradients(loss, [w1, w2], name="grad")
    assert isinstance(grads, dict) and set(grads) == {w1, w2}
    assert grads[w1].shape == (3, 2) and grads[w2].shape == (2,)
    assert isinstance(grads[w1], mg.Tensor)
    lr = 0.1
    step = g.apply_stochastic_gradient_descent(lr, w1, grads[w1])
    assert isinstance(step, mg.Operation)
    xv = f32(rng, 4, 3)
    w1v, w2v = g.value_of(w1), g.value_of(w2)
    # reference gradient by hand
    hv = np.tanh(xv @ w1v)
    d = 2 * (hv + w2v)
    gw2 = d.sum(0)
    gw1 = xv.T @ (d * (1 - hv ** 2))
    r = g.run(feeds={x: xv}, target_tensors=[loss, grads[w1], grads[w2]], target_operations=[step],
              backend=backend)
    np.testing.assert_allclose(r[grads[w1]], gw1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r[grads[w2]], gw2, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g.value_of(w1), w1v - lr * gw1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g.value_of(w2), w2v)


def test_broadcasting_undone_and_non_scalar_of_seeded_with_ones(backend, rng):
    g = mg.Graph()
    a = g.placeholder([3, 4], mg.float32, name="a")
    b = g.placeholder([4], mg.float32, name="b")
    y = g.multiplication(a, b)  # non-scalar `of`
    grads = g.gradients(y, [a, b])
    av, bv = f32(rng, 3, 4), f32(rng, 4)
    r = g.run({a: av, b: bv}, [grads[a], grads[b]], backend=backend)
    assert grads[b].shape == (4,)
    np.testing.assert_allclose(r[grads[a]], np.broadcast_to(bv, (3, 4)), rtol=1e-6)
    # a float32 sum in the backend's order: its rounding scales with the terms, not with the sum
    np.testing.assert_allclose(r[grads[b]], av.astype(np.float64).sum(0), rtol=1e-5,
                               atol=4 * np.finfo(np.float32).eps * float(np.abs(av).sum(0).max()))


def test_zeros_for_independent_tensor_and_stop_gradient(backend, rng):
    g = mg.Graph()
    a = g.placeholder([3], mg.float32, name="a")
    b = g.placeholder([2, 2], mg.float32, name="b")
    loss = g.reduction_sum(g.square(a), axes=None) + g.reduction_sum(g.stop_gradient(g.square(a)), axes=None)
    grads = g.gradients(loss, [a, b])
    av = f32(rng, 3)
    r = g.run({a: av, b: f32(rng, 2, 2)}, [grads[a], grads[b]], backend=backend)
    np.testing.assert_allclose(r[grads[a]], 2 * av, rtol=1e-5)
    assert r[grads[b]].shape == (2, 2) and grads[b].shape == (2, 2)
    np.testing.assert_array_equal(r[grads[b]], np.zeros((2, 2)))
    s = g.stop_gradient(a)
    assert s.operation.type == "stop_gradient"


@pytest.mark.parametrize("rule", ["conv2d", "pool", "matmul", "reductions", "shape", "activations", "softmax"])
def test_chained_gradient_rules_match_finite_differences(rule):
    rng = np.random.default_rng(11)
    g = mg.Graph()
    xv = rng.standard_normal((2, 4, 5, 5))
    x = g.placeholder(list(xv.shape), mg.float64, name="x")
    if rule == "conv2d":
        w = g.constant(rng.standard_normal((6, 2, 3, 3)))
        y = g.convolution_2d(x, w, descriptor=mg.Convolution2DOpDescriptor(groups=2, stride_in_x=2))
    elif rule == "pool":
        y = g.max_pooling_2d(x, descriptor=mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=3))
        y = g.addition(y, g.avg_pooling_2d(x, descriptor=mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=3)))
    elif rule == "matmul":
        y = g.matrix_multiplication(x, g.constant(rng.standard_normal((5, 3))))
    elif rule == "reductions":
        y = g.mean(x, axes=[1]) * g.reduction_maximum(x, axes=[2, 3]) + g.reduction_minimum(x, axes=0)
    elif rule == "shape":
        y = g.permute(g.reshape(g.slice(x, 1, 1, 2), [2, 2, 25]), [2, 0, 1])
        y = g.concat([y, g.transpose(y, 1, 2)], dimension=0)
        y = g.squeeze(g.expand_dims(g.broadcast(y, [2, 50, 2, 2]), axes=0), axes=[0])
    elif rule == "activations":
        y = g.relu(x) + g.sigmoid(x) * g.tanh(x) + g.exponent(g.sin(x)) + g.cos(x)
    else:
        y = g.softmax(x, axis=1)
    loss = g.reduction_sum(g.multiplication(y, g.constant(rng.standard_normal(y.shape))), axes=None)
    gx = g.gradients(loss, [x], name="grad")[x]
    got = g.run({x: xv}, [gx])[gx]
    exe = g.compile({x: mg.ShapedType(xv.shape, mg.float64)}, [loss])
    eps = 1e-6
    for idx in [(0, 0, 0, 0), (1, 2, 3, 4), (0, 3, 4, 1), (1, 1, 2, 2)]:
        p, m_ = xv.copy(), xv.copy()
        p[idx] += eps
        m_[idx] -= eps
        fd = (exe.run({x: p})[0].item() - exe.run({x: m_})[0].item()) / (2 * eps)
        assert abs(got[idx] - fd) <= 1e-5 * (1 + abs(fd)), (rule, idx, got[idx], fd)


def test_non_zero_indices_is_not_differentiable():
    """Declared not differentiable; its result is integer indices, so no gradient ever reaches it:
    a loss through a cast of them has a zero gradient (integer paths carry none), and the indices
    themselves cannot be differentiated."""
    assert not OPS["non_zero_indices"].differentiable and OPS["non_zero_indices"].grad is None
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float64, name="x")
    nz = g.non_zero_indices(x, name="nz")
    (gx,) = g.gradients(g.reduction_sum(g.multiplication(g.cast(nz, mg.float64), 2.0), axes=None), [x]).values()
    np.testing.assert_array_equal(g.run({x: np.ones((2, 3))}, [gx])[gx], np.zeros((2, 3)))
    with pytest.raises(mg.DTypeError, match="int32"):
        g.gradients(nz, [x])


def test_weights_gradient_ops_are_not_differentiable():
    for t in ("depthwise_convolution_2d_weights_gradient", "convolution_2d_weights_gradient",
              "convolution_3d_weights_gradient", "depthwise_convolution_3d_weights_gradient"):
        if t in OPS:
            assert not OPS[t].differentiable, t
    g = mg.Graph()
    dy, x = g.placeholder([1, 2, 4, 4], mg.float64), g.placeholder([1, 2, 4, 4], mg.float64)
    dw = g.depthwise_convolution_2d_weights_gradient(dy, x, output_shape=[1, 2, 1, 1], name="wg")
    with pytest.raises(mg.NotDifferentiableError, match=r"depthwise_convolution_2d_weights_gradient op 'wg'"):
        g.gradients(g.reduction_sum(dw), [x])
    g = mg.Graph()
    x = g.placeholder([1, 2, 5, 5], name="x")
    dW = g.depthwise_convolution_2d_weights_gradient(g.placeholder([1, 2, 3, 3]), x, output_shape=[1, 2, 3, 3],
                                                     name="wg")
    with pytest.raises(mg.NotDifferentiableError) as e:
        g.gradients(g.reduction_sum(dW), [x])
    assert "wg" in str(e.value)


def test_depthwise_rule_inserts_named_explicit_ops(rng):
    g = mg.Graph()
    x = g.placeholder([1, 2, 5, 5], name="x")
    w = g.variable(np.ones((1, 2, 3, 3), np.float32), name="w")
    y = g.depthwise_convolution_2d(x, w, name="dw")
    grads = g.gradients(g.reduction_sum(y), [x, w], name="grad")
    assert grads[w].operation.name == "grad/dw/depthwise_convolution_2d_weights_gradient"
    assert grads[x].operation.name == "grad/dw/depthwise_convolution_2d_data_gradient"
    # they can be looked up by name, and the weights gradient equals the explicit op fed with dloss/dy
    g = mg.Graph()
    x = g.placeholder([2, 3, 6, 6], mg.float32, name="x")
    w = g.variable(f32(rng, 2, 3, 3, 3), name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    loss = g.reduction_sum(g.square(y), axes=None, name="loss")
    grads = g.gradients(loss, [w, x], name="grad")
    names = [o.name for o in g.operations]
    assert "grad/dw/depthwise_convolution_2d_weights_gradient" in names
    assert "grad/dw/depthwise_convolution_2d_data_gradient" in names
    wg = g.operation("grad/dw/depthwise_convolution_2d_weights_gradient")
    assert wg.type == "depthwise_convolution_2d_weights_gradient"
    assert grads[w].operation is wg
    assert grads[x].operation.type == "depthwise_convolution_2d_data_gradient"
    assert g.tensor("grad/dw/depthwise_convolution_2d_weights_gradient") is grads[w]
    xv = f32(rng, 2, 3, 6, 6)
    r = g.run({x: xv}, [y, grads[w]])
    explicit = g.depthwise_convolution_2d_weights_gradient(g.multiplication(y, 2.0), x, output_shape=w.shape,
                                                           descriptor=desc)
    np.testing.assert_allclose(g.run({x: xv}, [explicit])[explicit], r[grads[w]], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("style", [S.EXPLICIT, S.TF_VALID, S.TF_SAME, S.ONNX_SAME_LOWER])
@pytest.mark.parametrize("layouts", [("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NCHW", "HWIO"), ("NHWC", "OIHW")])
def test_autodiff_weights_gradient_equals_explicit_op(backend, style, layouts, rng):
    """The weights gradient autodiff inserts equals the explicit op with the same descriptor, in
    float32 on every backend and (on numpy) to 1e-12 in float64."""
    dl, wl = layouts
    L = mg.TensorNamedDataLayout
    desc32 = D(stride_in_x=2, dilation_rate_in_y=2, padding_style=style, data_layout=L[dl], weights_layout=L[wl])
    if style == S.EXPLICIT:
        desc32.set_explicit_padding(0, 1, 2, 1)
    xs32 = (2, 7, 6, 3) if dl == "NHWC" else (2, 3, 7, 6)
    ws32 = (3, 2, 3, 2) if wl == "HWIO" else (2, 3, 3, 2)
    g = mg.Graph()
    x = g.placeholder(list(xs32), mg.float32, name="x")
    w = g.variable(f32(rng, *ws32), name="w")
    y = g.depthwise_convolution_2d(x, w, descriptor=desc32, name="dw")
    r_ = g.constant(f32(rng, *y.shape))
    loss = g.reduction_sum(g.multiplication(y, r_), axes=None)
    gw = g.gradients(loss, [w], name="grad")[w]
    assert gw.operation.name == "grad/dw/depthwise_convolution_2d_weights_gradient"
    explicit = g.depthwise_convolution_2d_weights_gradient(r_, x, output_shape=w.shape, descriptor=desc32)
    out = g.run({x: f32(rng, *xs32)}, [gw, explicit], backend=backend)
    np.testing.assert_allclose(out[gw], out[explicit], rtol=1e-6, atol=1e-6)
    assert np.abs(out[gw]).max() > 0
    if backend != "numpy":  # float64: numpy only (MPSGraph has no float64)
        return
    desc = D(stride_in_x=2, stride_in_y=1, dilation_rate_in_x=1, dilation_rate_in_y=2, padding_left=1,
             padding_right=0, padding_top=2, padding_bottom=1, padding_style=style,
             data_layout=getattr(mg.TensorNamedDataLayout, dl), weights_layout=getattr(mg.TensorNamedDataLayout, wl))
    N, C, H, W, M, kh, kw = 2, 3, 7, 6, 2, 2, 3
    xs = (N, C, H, W) if dl == "NCHW" else (N, H, W, C)
    ws = (M, C, kh, kw) if wl == "OIHW" else (kh, kw, C, M)
    g = mg.Graph()
    x = g.placeholder(xs, mg.float64, name="x")
    w = g.placeholder(ws, mg.float64, name="w")
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    r = g.placeholder(y.shape, mg.float64, name="r")
    grads = g.gradients(g.reduction_sum(y * r), [w])
    explicit = g.depthwise_convolution_2d_weights_gradient(r, x, output_shape=ws, descriptor=desc)
    feeds = {x: rng.standard_normal(xs), w: rng.standard_normal(ws), r: rng.standard_normal(y.shape)}
    out = g.run(feeds, [grads[w], explicit])
    np.testing.assert_allclose(out[grads[w]], out[explicit], rtol=1e-12, atol=1e-12)


def test_seed_of_ones_for_non_scalar_of(rng):
    g = mg.Graph()
    x = g.placeholder([3, 2], mg.float64)
    y = g.square(x)
    (gx,) = g.gradients(y, [x]).values()
    xv = rng.standard_normal((3, 2))
    np.testing.assert_allclose(g.run({x: xv}, [gx])[gx], 2 * xv)


def test_unrelated_tensor_gets_zeros_and_int_paths_get_none(rng):
    g = mg.Graph()
    x, z = g.placeholder([3], mg.float64, name="x"), g.placeholder([2, 2], mg.float64, name="z")
    i = g.placeholder([3], mg.int32, name="i")
    loss = g.reduction_sum(x * g.cast(i, mg.float64))
    grads = g.gradients(loss, [x, z])
    iv = np.array([1, 2, 3], np.int32)
    out = g.run({x: np.ones(3), i: iv, z: np.ones((2, 2))}, [grads[x], grads[z]])
    np.testing.assert_array_equal(out[grads[z]], np.zeros((2, 2)))
    np.testing.assert_array_equal(out[grads[x]], iv)
    with pytest.raises(mg.DTypeError, match="int32"):
        g.gradients(loss, [i])
    # float32: the int path is skipped, and asking for the int tensor's gradient names it
    g = mg.Graph()
    x = g.placeholder([3], mg.float32, name="x")
    i = g.placeholder([3], mg.int32, name="i")
    loss = g.reduction_sum(g.multiplication(x, g.cast(i, mg.float32)), axes=None)
    gx = g.gradients(loss, [x])[x]
    r = g.run({x: np.ones(3, np.float32), i: np.array([1, 2, 3], np.int32)}, [gx])[gx]
    np.testing.assert_array_equal(r, [1, 2, 3])
    with pytest.raises(mg.MiniGraphError) as ei:
        g.gradients(loss, [i])
    assert "int32" in str(ei.value) and "i" in str(ei.value)


def test_stop_gradient_blocks(rng):
    g = mg.Graph()
    x = g.placeholder([3], mg.float64)
    loss = g.reduction_sum(x * g.stop_gradient(x))
    (gx,) = g.gradients(loss, [x]).values()
    xv = rng.standard_normal(3)
    np.testing.assert_allclose(g.run({x: xv}, [gx])[gx], xv)


def test_second_order_through_rules(rng):
    g = mg.Graph()
    x = g.placeholder([4], mg.float64)
    y = g.reduction_sum(g.sin(x) * x)
    (dx,) = g.gradients(y, [x]).values()
    (ddx,) = g.gradients(g.reduction_sum(dx), [x], name="g2").values()
    xv = rng.standard_normal(4)
    np.testing.assert_allclose(g.run({x: xv}, [ddx])[ddx], 2 * np.cos(xv) - xv * np.sin(xv), rtol=1e-10)


def test_second_order_through_depthwise_data_gradient(rng):
    """d/dW of <v, D(dy, W)>: the data-gradient op's own rule emits a weights gradient."""
    g = mg.Graph()
    x = g.placeholder([1, 2, 5, 5], mg.float64, name="x")
    w = g.placeholder([1, 2, 3, 3], mg.float64, name="w")
    y = g.depthwise_convolution_2d(x, w, name="dw")
    r = g.placeholder(y.shape, mg.float64, name="r")
    (dx,) = g.gradients(g.reduction_sum(y * r), [x]).values()
    v = g.placeholder(x.shape, mg.float64, name="v")
    (dw2,) = g.gradients(g.reduction_sum(dx * v), [w], name="g2").values()
    # <v, D(r, W)> = <F(v, W), r> is linear in W with gradient G(r, v)
    ref = g.depthwise_convolution_2d_weights_gradient(r, v, output_shape=w.shape)
    feeds = {x: rng.standard_normal(x.shape), w: rng.standard_normal(w.shape), r: rng.standard_normal(y.shape),
             v: rng.standard_normal(x.shape)}
    out = g.run(feeds, [dw2, ref])
    np.testing.assert_allclose(out[dw2], out[ref], rtol=1e-12, atol=1e-12 * float(np.abs(out[ref]).max()))
    # the same second-order path against central differences (TF_SAME)
    g = mg.Graph()
    xv = rng.standard_normal((1, 2, 5, 5))
    wv = rng.standard_normal((1, 2, 3, 3))
    x = g.placeholder([1, 2, 5, 5], mg.float64, name="x")
    w = g.placeholder([1, 2, 3, 3], mg.float64, name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
    loss = g.reduction_sum(g.square(y), axes=None)
    gx = g.gradients(loss, [x], name="g1")[x]
    assert gx.operation.type == "depthwise_convolution_2d_data_gradient"
    second = g.reduction_sum(g.square(gx), axes=None)
    gw2 = g.gradients(second, [w], name="g2")[w]
    got = g.run({x: xv, w: wv}, [gw2])[gw2]
    exe = g.compile({x: mg.ShapedType(xv.shape, mg.float64), w: mg.ShapedType(wv.shape, mg.float64)}, [second])
    eps = 1e-6
    for idx in [(0, 0, 0, 0), (0, 1, 2, 1)]:
        p, m_ = wv.copy(), wv.copy()
        p[idx] += eps
        m_[idx] -= eps
        fd = (exe.run({x: xv, w: p})[0].item() - exe.run({x: xv, w: m_})[0].item()) / (2 * eps)
        assert abs(got[idx] - fd) <= 1e-5 * (1 + abs(fd))


def test_training_reduces_loss_without_recompiles():
    from minigraph import demo

    rng = np.random.default_rng(3)
    params = demo.init_params(rng)
    g, x, labels, v, logits, loss, _ = demo.build(mg.float32, params, 16)
    grads = g.gradients(loss, list(v.values()))
    steps = [g.apply_stochastic_gradient_descent(0.5, v[k], grads[v[k]]) for k in v]
    exe = g.compile({x: mg.ShapedType(x.shape, mg.float32), labels: mg.ShapedType(labels.shape, mg.float32)},
                    [loss], steps)
    xb, yb, _ = demo.make_data(np.random.default_rng(5), 16)
    feeds = {x: xb.astype(np.float32), labels: yb.astype(np.float32)}
    first = float(exe.run(feeds)[0])
    for _ in range(60):
        last = float(exe.run(feeds)[0])
    assert last < 0.7 * first
    assert exe.compile_count == 1 and g.cache_info().compiles == 1


def test_gradient_through_read_reaches_the_variable():
    g = mg.Graph()
    w = g.variable(np.array([1.0, -2.0, 3.0]), name="w")
    (gw,) = g.gradients(g.reduction_sum(g.square(g.read(w))), [w]).values()
    np.testing.assert_allclose(g.run(target_tensors=[gw])[gw], [2.0, -4.0, 6.0])


# ----------------------------------------------------------------------- a dynamic batch (-1) on the path
# cases whose first input's axis 0 is not a batch axis that may be left open
NOT_A_BATCH_AXIS = {
    "concat": "axis 0 is the concatenated axis: the gradient's slice offsets need its size",
    "depthwise_convolution_3d": "a rank-4 source has its channels on axis 0",
    "normalization_beta_gradient": "its incoming gradient must have the (static) source's shape",
    "sparse_tensor": "axis 0 of the values counts the stored values, which the (constant) index tensors fix",
}
STATIC_COUNT_RULES: dict = {}  # op type -> why its rule needs static sizes


def _gradients_at(op_type, dynamic, vals, rv):
    build, shapes, _ = CASES[op_type]
    g = mg.Graph()
    xs = [g.placeholder(((-1,) + tuple(s[1:])) if dynamic and i == 0 else s, mg.float64, name=f"in{i}")
          for i, s in enumerate(shapes)]
    y = build(g, *xs)
    weights = g.placeholder(y.shape, mg.float64, name="r")
    loss = g.reduction_sum(g.multiplication(y, weights), axes=None, name="loss")
    grads = g.gradients(loss, xs, name="grad")
    out = g.run({**dict(zip(xs, vals)), weights: rv}, [loss] + [grads[x] for x in xs])
    return list(out.values())


# the rules whose first input has a batch axis to leave open (a scalar input has none)
BATCHED_CASES = sorted(t for t, (_, shapes, _) in CASES.items() if shapes[0] and t not in NOT_A_BATCH_AXIS)


@pytest.mark.parametrize("op_type", BATCHED_CASES)
def test_gradients_through_a_dynamic_batch_equal_the_static_ones(op_type):
    """Every rule with its first input's axis 0 left open (-1) gives the gradients of the same graph
    built with full shapes: counts and broadcasts come from the tensors when the graph runs."""
    _, shapes, (lo, hi) = CASES[op_type]
    if op_type in STATIC_COUNT_RULES:
        pytest.xfail(STATIC_COUNT_RULES[op_type])
    rng = np.random.default_rng(0)
    vals = [rng.uniform(lo, hi, s) for s in shapes]
    g = mg.Graph()
    y = CASES[op_type][0](g, *[g.placeholder(s, mg.float64) for s in shapes])
    rv = rng.uniform(0.5, 1.5, y.shape)
    static = _gradients_at(op_type, False, vals, rv)
    dynamic = _gradients_at(op_type, True, vals, rv)
    for a, b in zip(dynamic, static):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=op_type)


@pytest.mark.parametrize("batches", [(32, 256), (5, 1)])
def test_one_graph_trains_at_one_batch_and_evaluates_at_another(batches, backend):
    """The demo network with a dynamic batch: the gradients at batch 5 or 32 equal those of graphs
    built for that batch, and the same graph then runs its forward part at another batch."""
    from minigraph import demo

    train, evaluate = batches
    params = demo.init_params(np.random.default_rng(2))
    g, x, labels, v, logits, loss, _ = demo.build(mg.float32, params)  # batch -1
    assert x.shape[0] == -1 and loss.shape == ()
    grads = g.gradients(loss, g.trainable_variables)
    xb, yb, _ = demo.make_data(np.random.default_rng(3), train)
    feeds = {x: xb.astype(np.float32), labels: yb.astype(np.float32)}
    got = g.run(feeds, [grads[t] for t in v.values()], backend=backend)
    ref_g, rx, rl, rv, _, rloss, _ = demo.build(mg.float64, params, train)
    ref = ref_g.run({rx: xb, rl: yb}, [ref_g.gradients(rloss, [rv[k]])[rv[k]] for k in v])
    for (k, t), r in zip(v.items(), ref.values()):
        np.testing.assert_allclose(got[grads[t]], r, rtol=2e-3, atol=2e-5, err_msg=k)
    step = [g.apply_stochastic_gradient_descent(0.1, t, grads[t]) for t in g.trainable_variables]
    exe = g.compile({x: mg.ShapedType([-1, demo.C, demo.H, demo.W], mg.float32),
                     labels: mg.ShapedType([-1, demo.CLASSES], mg.float32)}, [loss], step, backend=backend)
    first = float(exe.run(feeds)[0])
    for _ in range(20):
        last = float(exe.run(feeds)[0])
    assert last < first
    xe, ye, _ = demo.make_data(np.random.default_rng(4), evaluate)
    out = g.run({x: xe.astype(np.float32), labels: ye.astype(np.float32)}, [logits, loss], backend=backend)
    assert out[logits].shape == (evaluate, demo.CLASSES) and np.isfinite(out[loss]).all()


def test_dynamic_seed_and_unrelated_dynamic_tensor():
    """A non-scalar ``of`` with a dynamic batch is seeded with ones of its run-time shape; a dynamic
    tensor it does not depend on gets zeros of its run-time shape."""
    g = mg.Graph()
    x = g.placeholder([-1, 3], mg.float64, name="x")
    other = g.placeholder([-1, 2], mg.float64, name="other")
    w = g.variable(np.arange(6.0).reshape(3, 2), name="w")
    y = g.matrix_multiplication(x, w, name="mm")  # [-1, 2], seeded with ones
    grads = g.gradients(y, [x, w, other])
    xv = np.arange(12.0).reshape(4, 3)
    out = g.run({x: xv, other: np.ones((7, 2))}, [grads[x], grads[w], grads[other]])
    np.testing.assert_array_equal(out[grads[x]], np.ones((4, 2)) @ np.arange(6.0).reshape(3, 2).T)
    np.testing.assert_array_equal(out[grads[w]], xv.T @ np.ones((4, 2)))
    np.testing.assert_array_equal(out[grads[other]], np.zeros((7, 2)))


def test_rules_do_not_leave_ops_for_inputs_nobody_asked_about():
    g = mg.Graph()
    x = g.placeholder([1, 2, 5, 5], name="x")
    w = g.variable(np.ones((1, 2, 3, 3), np.float32), name="w")
    loss = g.reduction_sum(g.depthwise_convolution_2d(x, w, name="dw"))
    g.gradients(loss, [w], name="grad")
    types = [op.type for op in g.operations]
    assert "depthwise_convolution_2d_weights_gradient" in types
    assert "depthwise_convolution_2d_data_gradient" not in types
    assert [op.index for op in g.operations] == list(range(len(g.operations)))


def test_demo_network_gradients_match_torch_autograd():
    """depthwise -> bias -> relu -> 1x1 conv -> avg pool -> softmax CE, against torch.autograd."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    from minigraph import demo

    rng = np.random.default_rng(11)
    params = {k: v + rng.normal(0, 0.1, v.shape) for k, v in demo.init_params(rng).items()}
    batch = 5
    xv, yv, _ = demo.make_data(rng, batch)
    g, x, labels, v, _, loss, _ = demo.build(mg.float64, params, batch)
    grads = g.gradients(loss, list(v.values()))
    out = g.run({x: xv, labels: yv}, [loss] + [grads[t] for t in v.values()])

    tp = {k: torch.tensor(p, requires_grad=True) for k, p in params.items()}
    C, M = demo.C, demo.M
    # MPSGraph OIHW depthwise weights [M, C, kH, kW] -> PyTorch [C*M, 1, kH, kW] (o = c*M + m)
    wt = tp["dw_weights"].permute(1, 0, 2, 3).reshape(C * M, 1, 3, 3)
    h = torch.nn.functional.conv2d(torch.tensor(xv), wt, padding="same", groups=C)
    h = torch.relu(h + tp["dw_bias"])
    logits = torch.nn.functional.conv2d(h, tp["pw_weights"]).mean(dim=(2, 3))
    tl = torch.nn.functional.cross_entropy(logits, torch.tensor(yv))
    tl.backward()
    np.testing.assert_allclose(out[loss], tl.item(), rtol=1e-12)
    for k, t in v.items():
        np.testing.assert_allclose(out[grads[t]], tp[k].grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=k)


# ----------------------------------------------------------------------- conventions at ties (docs/autodiff.md)
def _grads(g, loss, xs, feeds, backend):
    grads = g.gradients(loss, xs, name="grad")
    out = g.run(feeds, [grads[x] for x in xs], backend=backend)
    return [out[grads[x]] for x in xs]


@pytest.mark.parametrize("op", ["maximum", "minimum", "maximum_with_nan_propagation", "minimum_with_nan_propagation"])
def test_maximum_minimum_send_a_tie_to_the_first_operand(op, backend):
    """At a == b the whole gradient goes to the first operand; the NaN-ignoring ops send it to the
    operand that is not NaN. torch.fmax/fmin do the same; torch.maximum splits a tie in halves."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    av = np.array([1.0, 2.0, -0.5, 3.0, np.nan, 0.0, 4.0], np.float32)
    bv = np.array([1.0, 1.0, -0.5, np.nan, 2.0, -0.0, 5.0], np.float32)
    wv = np.arange(1, 8, dtype=np.float32)
    g = mg.Graph()
    a, b = g.placeholder([7], name="a"), g.placeholder([7], name="b")
    loss = g.reduction_sum(g.multiplication(getattr(g, op)(a, b), wv))
    da, db = _grads(g, loss, [a, b], {a: av, b: bv}, backend)
    ties = av == bv
    np.testing.assert_array_equal(da[ties], wv[ties])
    np.testing.assert_array_equal(db[ties], 0)
    if "propagation" in op:
        return
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (av, bv))
    (getattr(torch, "fmax" if op == "maximum" else "fmin")(ta, tb) * torch.from_numpy(wv)).sum().backward()
    np.testing.assert_array_equal(da, ta.grad.numpy())
    np.testing.assert_array_equal(db, tb.grad.numpy())


def test_absolute_has_gradient_zero_at_zero(backend):
    """d|x|/dx is sign(x), 0 at ±0 (MPSGraph's own rule multiplies by sign; torch.abs agrees)."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    xv = np.array([0.0, -0.0, 2.0, -3.0, 1e-30], np.float32)
    g = mg.Graph()
    x = g.placeholder([5], name="x")
    (dx,) = _grads(g, g.reduction_sum(g.absolute(x)), [x], {x: xv}, backend)
    tx = torch.tensor(xv, requires_grad=True)
    tx.abs().sum().backward()
    np.testing.assert_array_equal(dx, tx.grad.numpy())
    np.testing.assert_array_equal(dx[:2], [0.0, 0.0])


@pytest.mark.parametrize("op,ref", [("reduction_maximum", "amax"), ("reduction_minimum", "amin"),
                                    ("reduction_maximum_propagate_nan", "amax"),
                                    ("reduction_minimum_propagate_nan", "amin")])
def test_extremum_reduction_splits_ties_evenly(op, ref, backend):
    """k elements equal to the extremum get 1/k of the gradient each, as torch.amax/amin."""
    torch = pytest.importorskip("torch", reason="needs torch, in the oracles extra: pip install -e '.[oracles]'")
    xv = np.array([[3.0, 1.0, 3.0, 3.0], [-1.0, -1.0, 5.0, 0.0], [2.0, 2.0, 2.0, 2.0]], np.float32)
    wv = np.array([[1.0], [2.0], [3.0]], np.float32)
    g = mg.Graph()
    x = g.placeholder(xv.shape, name="x")
    (dx,) = _grads(g, g.reduction_sum(g.multiplication(getattr(g, op)(x, axes=[1]), wv)), [x], {x: xv}, backend)
    tx = torch.tensor(xv, requires_grad=True)
    (getattr(torch, ref)(tx, dim=1, keepdim=True) * torch.from_numpy(wv)).sum().backward()
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-6)


def test_extremum_reduction_of_only_nan_has_gradient_zero(backend):
    """A slice with nothing equal to its result (only NaN) gets a zero gradient, not 0 / 0."""
    xv = np.array([[np.nan, np.nan], [1.0, np.nan]], np.float32)
    g = mg.Graph()
    x = g.placeholder(xv.shape, name="x")
    (dx,) = _grads(g, g.reduction_sum(g.reduction_maximum(x, axes=[1])), [x], {x: xv}, backend)
    np.testing.assert_array_equal(dx, [[0.0, 0.0], [1.0, 0.0]])
