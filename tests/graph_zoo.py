"""Shared test graphs.

``every_op_graph`` holds every op type of the registry, for save/load and Swift export tests; it
fails (naming the op types) when the registry has an op it does not build, so a new op must be
added here and thereby gets a round-trip and a Swift-export test. ``scoped_cnn_graph`` is a small
depthwise block in a name scope, for listings, pictures, save/load, Swift and the CLI;
``pictured_graph`` exercises what the pictures must draw (nested scopes, gradients, control
dependencies, names that need quoting).
"""
from __future__ import annotations

import numpy as np

import minigraph as mg
from minigraph.ops.registry import OPS
from op_cases import BINARY, BITWISE, COMPARE, ELEMENTWISE, LOGICAL, UNARY


def every_op_graph(seed: int = 0):
    """(graph, feeds, target tensors, target operations) covering every registered op type."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    g = mg.Graph()
    x = g.placeholder([2, 3, 6, 6], name="x")
    m = g.placeholder([3, 4], name="m")
    wv = g.variable(rng.uniform(0.5, 1.5, (2, 3, 3, 3)).astype(f32), name="w_dw")
    feeds = {x: rng.uniform(0.5, 2.0, (2, 3, 6, 6)).astype(f32),
             m: rng.uniform(0.5, 2.0, (3, 4)).astype(f32)}
    outs = []

    with g.name_scope("elementwise"):
        a, b = m, g.constant(rng.uniform(0.5, 2.0, (3, 4)).astype(f32), name="b")
        for t in BINARY:  # the elementwise ops come from tests/op_cases.py
            outs.append(getattr(g, t)(a, b))
        cmps = {t: getattr(g, t)(a, b) for t in COMPARE}
        outs += cmps.values()
        for t in UNARY:
            outs.append(getattr(g, t)(a))
        outs.append(g.select(cmps["less_than"], a, b))
        outs.append(g.cast(a, mg.int32, name="to_int"))
        outs.append(g.reinterpret_cast(a, mg.uint32, name="bits"))
        outs.append(g.matrix_multiplication(a, g.permute(b, [1, 0])))
    with g.name_scope("reduce"):
        outs.append(g.reduction_sum(a, axes=1))
        outs.append(g.reduction_maximum(a, axes=[0]))
        outs.append(g.reduction_minimum(a))
        outs.append(g.reduction_maximum_propagate_nan(a, axes=[1]))
        outs.append(g.reduction_minimum_propagate_nan(a, axes=[0, -1]))
        outs.append(g.mean(a, axes=(0, 1)))
        outs.append(g.softmax(a, axis=-1))
        labels = g.constant(np.eye(3, 4, dtype=f32), name="labels")
        outs.append(g.softmax_cross_entropy(a, labels, axis=1, reduction="sum"))
    with g.name_scope("shape"):
        r = g.reshape(a, [4, 3])
        outs.append(g.transpose(r, 0, -1))
        s = g.slice(a, 1, -3, 2)
        outs.append(g.slice_gradient(s, [3, 4], 1, -3, 2))
        st = g.slice_tensor(a, [0, -1], [3, 0], [2, -2], squeeze_mask=0)
        outs += [st, g.slice_gradient_tensor(st, [3, 4], [0, -1], [3, 0], [2, -2]),
                 g.slice_update_data_tensor(a, g.negative(st), [0, -1], [3, 0], [2, -2]), g.shape_of(a),
                 g.coordinate_along_axis(0, [2, 3])]
        sp = g.space_to_depth_2d(g.reshape(a, [3, 2, 2]), 2, 1, 0, 2, True)
        outs += [sp, g.depth_to_space_2d(sp, 2, 1, 0, 2, True), g.space_to_batch(a, [1], 0, [2], False),
                 g.batch_to_space(g.reshape(a, [4, 3]), [1], 0, [2], True)]
        outs.append(g.concat([a, b, a], dimension=0))
        outs.append(g.broadcast(g.reduction_sum(a, axes=[0]), [2, 3, 4]))
        e = g.expand_dims(a, [0, -1])
        outs.append(g.squeeze(e))
        outs.append(g.squeeze(e, axes=[0]))
    with g.name_scope("conv"):
        d2 = mg.DepthwiseConvolution2DOpDescriptor(stride_in_y=2, padding_style=mg.PaddingStyle.TF_SAME)
        y = g.depthwise_convolution_2d(x, wv, descriptor=d2, name="dw")
        cdesc = mg.Convolution2DOpDescriptor(groups=3, dilation_rate_in_x=2)
        cdesc.set_explicit_padding(1, 2, 0, 1)
        wc = g.constant(rng.uniform(-1, 1, (6, 2, 2, 2)).astype(f32), name="w_conv")
        c = g.convolution_2d(y, wc, descriptor=cdesc, name="conv")
        pdesc = mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, stride_in_y=2,
                                         ceil_mode=True)
        p = g.max_pooling_2d(c, pdesc, name="maxpool")
        q = g.avg_pooling_2d(c, mg.Pooling2DOpDescriptor(kernel_width=3, kernel_height=1,
                                                         include_zero_pad_to_average=True,
                                                         padding_style=mg.PaddingStyle.TF_SAME), name="avgpool")
        x5 = g.reshape(x, [2, 3, 2, 3, 6])
        d3 = mg.DepthwiseConvolution3DOpDescriptor(strides=(1, 1, 2), padding_values=(0, 1, 1, 0, 1, 1))
        w3 = g.constant(rng.uniform(-1, 1, (6, 2, 2, 3)).astype(f32), name="w3")
        z = g.depthwise_convolution_3d(x5, w3, descriptor=d3, name="dw3")
        c3desc = mg.Convolution3DOpDescriptor(groups=3, stride_in_x=2, dilation_rate_in_y=2,
                                              padding_style=mg.PaddingStyle.TF_SAME,
                                              data_layout=mg.TensorNamedDataLayout.NDHWC,
                                              weights_layout=mg.TensorNamedDataLayout.DHWIO)
        w33 = g.constant(rng.uniform(-1, 1, (2, 2, 2, 1, 6)).astype(f32), name="w_conv3d")
        c3 = g.convolution_3d(g.reshape(x, [2, 2, 3, 6, 3]), w33, descriptor=c3desc, name="conv3d")
        loss = g.addition(g.addition(g.reduction_sum(p), g.reduction_sum(q)),
                          g.addition(g.reduction_sum(g.square(z)), g.reduction_sum(g.square(c3))), name="loss")
    grads = g.gradients(loss, [x, wv, wc, w3, w33], name="grad")
    outs += [loss] + [grads[t] for t in (x, wv, wc, w3, w33)]
    with g.name_scope("pool4d"):
        d4 = mg.Pooling4DOpDescriptor(kernel_sizes=(1, 2, 2, 3), strides=(1, 1, 1, 2),
                                      padding_values=(0, 0, 0, 1, 1, 0, 0, 1), ceil_mode=True,
                                      return_indices_mode=mg.PoolingReturnIndicesMode.LOCAL_FLATTEN_3D)
        for kind in ("max", "avg", "l2_norm"):
            y4 = getattr(g, f"{kind}_pooling_4d")(x5, d4)
            outs += [y4, getattr(g, f"{kind}_pooling_4d_gradient")(y4, x5, d4)]
        v4, i4 = g.max_pooling_4d_return_indices(x5, d4)
        outs += [v4, i4, g.max_pooling_4d_gradient_with_indices(v4, i4, x5.shape, d4)]
        d2i = mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=3, stride_in_x=2, data_layout="NHWC",
                                       return_indices_mode=mg.PoolingReturnIndicesMode.GLOBAL_FLATTEN_3D)
        v2i, i2i = g.max_pooling_2d_return_indices(x, d2i)
        outs += [v2i, i2i, g.max_pooling_2d_gradient_with_indices(v2i, i2i, x.shape, d2i)]
    with g.name_scope("train"):
        upd = g.apply_stochastic_gradient_descent(0.05, wv, grads[wv], name="sgd")
        v2 = g.variable(np.arange(4, dtype=np.int32), name="counter")
        inc = g.assign(v2, g.addition(g.read(v2), 1), name="inc")
        with g.control_dependencies([inc]):
            after = g.read(v2, name="after_inc")
    outs.append(after)
    with g.name_scope("arithmetic"):
        outs.append(g.clamp(a, 0.75, g.constant(np.full((4,), 1.5, f32), name="hi")))
        outs.append(g.leaky_relu(g.subtraction(a, 1.0), 0.1))
        outs.append(g.leaky_relu_gradient(b, g.subtraction(a, 1.0), g.constant(np.full((4,), 0.1, f32), name="alpha")))
        outs += [g.relu_gradient(b, g.subtraction(a, 1.0)), g.sigmoid_gradient(b, a), g.softmax_gradient(b, a, 0),
                 g.softmax_cross_entropy_gradient(g.constant(np.ones((1, 1), f32)), a, b, 0, "sum")]
        p, q = g.less_than(a, b), g.greater_than(a, 1.0)
        outs += [getattr(g, t)(p, q) if t != "logical_not" else g.logical_not(p) for t in LOGICAL]
        i, j = g.cast(g.multiplication(a, 100.0), mg.int32), g.constant(np.arange(12, dtype=np.int32).reshape(3, 4))
        outs += [getattr(g, t)(i, j) if ELEMENTWISE[t].arity == 2 else getattr(g, t)(i) for t in BITWISE]
    with g.name_scope("normalization"):  # a batch norm and its gradient: the three gradient ops
        bn_gamma = g.constant(rng.uniform(0.5, 1.5, (1, 3, 1, 1)).astype(f32), name="gamma")
        bn = g.normalize(x, g.mean(x, [0, 2, 3]), g.variance(x, [0, 2, 3]), bn_gamma, None, 1e-5, name="bn")
        outs += [bn, g.gradients(g.reduction_sum(g.square(bn)), [x], name="grad")[x]]
    with g.name_scope("optimizer"):
        outs.append(g.stochastic_gradient_descent(0.01, m, g.square(m)))
        outs += g.adam(0.01, 0.9, 0.999, 1e-8, 0.9, 0.999, m, g.constant(np.zeros((3, 4), f32), name="momentum"),
                       g.constant(np.ones((3, 4), f32), name="velocity"), None, b)
    with g.name_scope("reduction_scan_sort"):
        outs += [g.reduction_product(a, [1]), g.reduction_and(a, [0]), g.reduction_or(a, None),
                 g.reduction_arg_maximum(a, 1), g.reduction_arg_minimum(a, 0),
                 g.cumulative_sum(a, 1, exclusive=True, reverse=True), g.sort(a, 0, descending=True),
                 g.cumulative_product(a, 0, reverse=True), g.cumulative_maximum(a, 1, exclusive=True),
                 g.cumulative_minimum(a, 1),
                 g.arg_sort(a, 1)]
        top_values, top_indices = g.top_k(a, 2)
        column_values, _ = g.top_k(a, 1, axis=0)
        bottom_values, bottom_indices = g.bottom_k(a, 1, 2)
        outs += [bottom_indices, g.gradients(g.addition(g.reduction_sum(column_values), g.reduction_sum(bottom_values)),
                                             [a], name="grad_k")[a]]
        outs += [top_indices, g.gradients(g.reduction_sum(g.square(top_values)), [a], name="grad")[a]]

    with g.name_scope("random"):  # draws change from run to run: only the rate 0 / 1 dropouts are targets
        g.random_tensor([2, 3], mg.RandomOpDescriptor(mg.RandomDistribution.TRUNCATED_NORMAL, mg.float32,
                                                      mean=0.5, standard_deviation=2.0), seed=7, name="normal")
        g.random_uniform_tensor([5], seed=8, name="uniform")
        g.dropout(a, 0.5, seed=9, name="dropout")
        outs += [g.dropout(a, 0.0, name="keep_all"), g.dropout(a, 1.0, name="drop_all")]
        # the state forms draw the same values on every run: targets
        state = g.random_philox_state_tensor(counter_low=3, counter_high=2 ** 64 - 1, key=-5, name="philox_state")
        u_state, state = g.random_uniform_tensor_with_state([2, 2], state, name="uniform_from_state")
        n_state, state = g.random_tensor_with_state(
            [3], mg.RandomOpDescriptor(mg.RandomDistribution.UNIFORM, mg.int32, min_integer=-4, max_integer=4),
            state, name="ints_from_state")
        outs += [u_state, n_state, state]

    with g.name_scope("gather"):
        rows = g.constant(np.array([[2, 0, -1, 1]], np.int32), name="rows")
        picked = g.gather(a, rows, 1)
        along = g.gather_along_axis(a, g.constant(np.array([[3, 0], [1, 1], [-1, 2]], np.int32)), 1)
        nd = g.gather_nd(a, g.constant(np.array([[0, 1], [2, -1]], np.int32)))
        outs += [picked, nd, g.one_hot(rows, 4, axis=0, dtype=mg.int32, on_value=3),
                 g.scatter_along_axis(along, g.constant(np.array([[1, 1], [0, 3], [2, 2]], np.int32)), a, 1,
                                      mg.ScatterMode.MAX)]
        outs.append(g.gradients(g.reduction_sum(g.square(picked)) + g.reduction_sum(nd), [a], name="grad")[a])
        outs.append(g.scatter_nd(nd, g.constant(np.array([[1], [1]], np.int32)), [3], mode=mg.ScatterMode.MUL))
        outs.append(g.scatter_with_data(a, g.reshape(picked, [3, 4]), g.constant(np.array([3, 0, 1, 1], np.int32)),
                                        1, mg.ScatterMode.ADD))
        outs.append(g.scatter_nd_with_data(a, nd, g.constant(np.array([[1, 1], [0, 2]], np.int32)),
                                           mode=mg.ScatterMode.SET))

    with g.name_scope("image"):  # the windows of x as columns, and summed back
        idesc = mg.ImToColOpDescriptor(kernel_width=2, kernel_height=2, stride_in_x=2, padding_top=1)
        cols = g.im_to_col(x, idesc)
        outs += [cols, g.col_to_im(cols, x.shape, idesc)]
        warp = g.constant(rng.uniform(-0.3, 0.3, (2, 5, 4, 2)).astype(f32), name="warp")  # offsets, normalized
        sampled = g.sample_grid(x, warp, mg.TensorNamedDataLayout.NCHW, True, True, False, mg.PaddingMode.SYMMETRIC,
                                mg.ResizeMode.BILINEAR)
        outs += [sampled, g.gradients(g.reduction_sum(g.square(sampled)), [x], name="warp_grad")[x]]

    with g.name_scope("stencil_sparse_nms"):  # a 4-D stencil and its gradients, a dense CSR matrix, NMS
        x5 = g.reshape(x, [2, 3, 1, 6, 6])
        sw = g.constant(rng.uniform(-1.0, 1.0, (1, 1, 2, 3)).astype(f32), name="stencil_w")
        sd = mg.StencilOpDescriptor(strides=(1, 1, 2, 1), explicit_padding=(0, 0, 0, 0, 1, 0, 1, 1),
                                    boundary_mode=mg.PaddingMode.SYMMETRIC)
        st = g.stencil(x5, sw, sd)
        sg = g.gradients(g.reduction_sum(g.square(st)), [x5, sw], name="grad")
        dense = g.sparse_tensor(mg.CreateSparseOpDescriptor(sparse_storage_type=mg.SparseStorageType.CSR),
                                [g.reshape(m, [12])[:5], g.constant(np.array([0, 3, 1, 1, 2], np.int32)),
                                 g.constant(np.array([0, 2, 2, 5], np.int32))], [3, 4])
        dg = g.gradients(g.reduction_sum(g.square(dense)), [m], name="grad")[m]
        corners = g.concat([g.reshape(x[0, 0], [1, 12, 3])[:, :, :2], g.reshape(x[0, 0], [1, 12, 3])[:, :, :2] + 1.0], 2)
        nms_scores = g.reshape(x[1, 0], [1, 12, 3])
        outs += [st, sg[x5], sg[sw], dense, dg,
                 g.non_maximum_suppression(corners, nms_scores, 0.5, 0.0, True, mg.NonMaximumSuppressionCoordinateMode.CORNERS_WIDTH_FIRST),
                 g.non_maximum_suppression_with_class_indices(corners, nms_scores[:, :, :1],
                                                              g.constant(np.arange(12, dtype=np.int32).reshape(1, 12) % 2),
                                                              0.5, 0.0, False, 0)]
        outs.append(g.non_zero_indices(g.greater_than(m, 1.0), name="nonzero"))  # data-dependent: only a target

    with g.name_scope("transpose_resize"):  # a decoder step: upsample by a strided transpose, then resize
        up_d = mg.Convolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, padding_left=1, padding_right=1,
                                            padding_top=1, padding_bottom=1, groups=3)
        up_w = g.constant(rng.uniform(-1.0, 1.0, (3, 2, 3, 3)).astype(f32), name="up_w")
        up = g.convolution_transpose_2d(x, up_w, [2, 6, 12, 12], up_d)
        big = g.resize(up, [15, 9], mg.ResizeMode.BILINEAR, True, False, mg.TensorNamedDataLayout.NCHW)
        near = g.resize(x, [4, 9], mg.ResizeMode.NEAREST, False, False, mg.TensorNamedDataLayout.NCHW)
        even = g.resize(x, [9, 4], mg.ResizeMode.NEAREST, True, False, mg.TensorNamedDataLayout.NCHW,
                        nearest_rounding_mode=mg.ResizeNearestRoundingMode.ROUND_TO_EVEN)
        placed = g.resize(x, [2, 3, 9, 4], mg.ResizeMode.BILINEAR, scale=[1.0, 1.0, 1.5, 0.75],
                          offset=[0.0, 0.0, 0.25, -0.1])  # no layout: every axis, by scale and offset
        loss = g.reduction_sum(g.square(big)) + g.reduction_sum(near) + g.reduction_sum(even * placed)
        gx = g.gradients(loss, [x], name="grad")[x]
        outs += [big, even, placed, gx, g.gradients(g.reduction_sum(g.square(gx)), [x], name="grad2")[x],
                 g.convolution_transpose_2d_weights_gradient(up, x, [3, 2, 3, 3], up_d)]
    with g.name_scope("movement"):  # reflect-pad, tile, split, stack, flatten, reverse, and their gradients
        padded = g.pad_tensor(x, mg.PaddingMode.REFLECT, [0, 0, 2, 1], [0, 0, 1, 2])
        halves = g.split(g.tile(padded, [1, 2, 1, 1]), 2, 1)
        st = g.stack([g.reverse(halves[0], [2, 3]), halves[1]], 0)
        flat = g.flatten_2d(st, 2)
        mloss = g.reduction_sum(g.square(flat))
        outs += [flat, g.gradients(mloss, [x], name="grad")[x]]
    with g.name_scope("attention"):  # heads of m's rows attend over x's rows, with and without a mask
        keys = g.reshape(g.slice(x, 3, 0, 4), [2, 3, 6, 4])
        amask = g.constant(np.where(np.eye(3, 6) > 0, -np.inf, 0.0).astype(f32), name="amask")
        outs += [g.scaled_dot_product_attention(g.expand_dims(m, [0]), keys, keys, amask, scale=0.5),
                 g.scaled_dot_product_attention(g.expand_dims(m, [0]), keys, keys, scale=0.25, name="attn_nomask")]
    with g.name_scope("rnn"):  # m's rows as a sequence [T=3, N=1, I=4]: the three layers and their gradients
        seq = g.expand_dims(m, [1])
        rw = {k: g.constant(rng.uniform(-0.5, 0.5, (k * 2, 2)).astype(f32), name=f"rnn_r{k}") for k in (1, 3, 4)}
        iw = {k: g.constant(rng.uniform(-0.5, 0.5, (k * 2, 4)).astype(f32), name=f"rnn_w{k}") for k in (1, 3, 4)}
        srnn = g.single_gate_rnn(seq, rw[1], iw[1], descriptor=mg.SingleGateRNNDescriptor(activation=mg.RNNActivation.TANH))
        lstm_out = g.lstm(seq, rw[4], iw[4], descriptor=mg.LSTMDescriptor(produce_cell=True))
        gru_out = g.gru(seq, rw[3], iw[3], descriptor=mg.GRUDescriptor(reset_after=True))
        rloss = g.reduction_sum(g.square(srnn[0])) + g.reduction_sum(lstm_out[1]) + g.reduction_sum(gru_out[0])
        outs += [srnn[0], lstm_out[0], gru_out[0], g.gradients(rloss, [m], name="grad")[m]]
    with g.name_scope("linear_algebra"):  # the band of m and its gradient
        band = g.band_part(m, 1, 0)
        outs += [band, g.gradients(g.reduction_sum(g.square(band)), [m], name="grad")[m]]
        bits = g.cast(g.multiplication(m, 1000.0), mg.int32)
        outs.append(g.hamming_distance(bits, g.slice(bits, 0, 1, 2), mg.uint32))
        sq = g.addition(g.slice(m, 1, 0, 3), g.constant(4 * np.eye(3, dtype=f32)))
        inv = g.inverse(sq)
        outs += [inv, g.gradients(g.reduction_sum(g.square(inv)), [m], name="grad_inverse")[m]]

    with g.name_scope("quantization"):  # every form, on m and its quantized codes
        q = g.quantize(m, 0.05, -3, mg.int8)
        sc = g.constant(np.array([0.05, 0.1, 0.2, 0.4], f32), name="qscale")
        zp = g.constant(np.array([1, -2, 3, 0], np.int8), name="qzero")
        outs += [q, g.quantize_with_scale_tensor(m, sc, 4, mg.int8, 1), g.quantize_with_tensors(m, sc, zp, mg.int8, 1),
                 g.dequantize(q, 0.05, -3, mg.float32), g.dequantize_with_scale_tensor(q, sc, 0, mg.float32, 1),
                 g.dequantize_with_tensors(q, sc, zp, mg.float32, 1),
                 g.dequantize_blockwise(q, g.constant(np.full((3, 2), 0.5, f32)), g.constant(np.ones((3, 2), np.int8)),
                                        mg.float32),
                 g.dequantize_blockwise_symmetric(q, g.constant(np.full((3, 1), 0.25, f32)), mg.float32)]
        codes = g.constant(rng.integers(0, 256, (3, 4)).astype(np.uint8), name="codes")
        outs += [g.dequantize_lut(codes, g.constant(np.linspace(-1, 1, 256).astype(f32), name="lut")),
                 g.dequantize_vector_lut(codes, g.constant(rng.standard_normal((256, 2)).astype(f32), name="vlut"), 0)]
        q4 = g.quantize(m, 0.25, -1, mg.int4)  # 4-bit codes, held in int8 / uint8 arrays
        codes4 = g.constant(np.arange(12, dtype=np.uint8).reshape(3, 4), mg.uint4, name="codes4")
        outs += [q4, g.dequantize_blockwise(q4, g.constant(np.full((3, 2), 0.5, f32)),
                                            g.constant(np.array([[1, -2]] * 3, np.int8), mg.int4), mg.float32),
                 g.dequantize_lut(codes4, g.constant(np.linspace(-1, 1, 16).astype(f32), name="lut4"))]

    with g.name_scope("control_flow"):  # a branch, a loop with its gradient, a while loop, a call
        c0 = g.squeeze(g.reduction_sum(m, axes=None))
        (branch,) = g.if_then_else(g.greater_than(c0, 0.0), lambda: [g.tanh(m)], lambda: [g.square(m)], name="branch")
        (looped,) = g.for_loop(3, [m], lambda i, a: [g.sin(a[0]) + g.cast(i, mg.float32)], name="loop")
        (halved, steps) = g.while_loop([c0, g.constant(0, dtype=mg.int32)],
                                       lambda ins, res: (res.extend(ins), g.greater_than(g.absolute(ins[0]), 0.5))[1],
                                       lambda a: [a[0] * 0.5, a[1] + 1], name="halve")
        cf_loss = g.reduction_sum(g.multiplication(branch, looped))
        outs += [branch, looped, halved, steps, g.gradients(cf_loss, [m], name="grad")[m]]
        g.call("callee", [m], [mg.ShapedType(m.shape, m.dtype)], name="call")  # not a target: needs callables

    with g.name_scope("complex"):  # the complex ops, complex arithmetic and the three Fourier transforms
        zc = g.complex_tensor(m, g.negative(m), name="z")
        spec = g.fast_fourier_transform(g.multiplication(zc, g.complex_constant(0.5, 1.0)), [0, 1],
                                        mg.FFTDescriptor(inverse=True, scaling_mode=mg.FFTScalingMode.UNITARY))
        half = g.real_to_hermitean_fft(m, [1], mg.FFTDescriptor(scaling_mode=mg.FFTScalingMode.SIZE))
        outs += [g.real_part_of_tensor(spec), g.imaginary_part_of_tensor(spec), g.absolute_square(g.conjugate(half)),
                 g.planar_tensor(spec), g.hermitean_to_real_fft(half, [1], mg.FFTDescriptor(round_to_odd_hermitean=True)),
                 g.cast(spec, mg.float32)]

    built = {op.type for op in g.operations}
    missing = sorted(set(OPS) - built)
    assert not missing, (f"tests/graph_zoo.py does not build op types {missing}: add them to every_op_graph "
                         "(an elementwise op: add its case to ELEMENTWISE in tests/op_cases.py)")
    return g, feeds, outs, [upd, inc]


def scoped_cnn_graph():
    """(g, x, w, r, loss, unused): x [2, 3, 8, 8] -> block/dw (stride 2, TF_SAME) -> block/act -> loss,
    plus an op nothing needs (``unused``)."""
    g = mg.Graph()
    x = g.placeholder(shape=(2, 3, 8, 8), dtype=mg.float32, name="x")
    with g.name_scope("block"):
        w = g.constant(np.random.default_rng(0).standard_normal((1, 3, 3, 3)).astype(np.float32), name="w")
        desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2,
                                                     padding_style=mg.PaddingStyle.TF_SAME)
        y = g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw")
        r = g.relu(y, name="act")
    unused = g.sigmoid(x, name="unused")
    loss = g.reduction_sum(g.multiplication(r, r), axes=None, name="loss")
    return g, x, w, r, loss, unused


def pictured_graph():
    """(g, tensors): two nested name scopes, a tensor read twice by one op, a gradient, an SGD update,
    a control dependency, and an op whose name needs quoting in every output format."""
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    w = g.variable(np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32), name="w")
    with g.name_scope("layer1"):
        h = g.tanh(g.matrix_multiplication(x, w), name="act")
        with g.name_scope("inner"):
            sq = g.multiplication(h, h, name="sq")  # one tensor feeding both inputs
    loss = g.reduction_sum(sq, name="loss")
    grads = g.gradients(loss, [w], name="grad")
    upd = g.apply_stochastic_gradient_descent(0.1, w, grads[w], name="sgd")
    with g.control_dependencies([upd]):
        after = g.read(w, name="after")
    odd = g.identity(x, name='we"ird\\name {x} <b>|[1]')  # quoting must survive every format
    return g, dict(x=x, w=w, h=h, sq=sq, loss=loss, upd=upd, after=after, odd=odd)
