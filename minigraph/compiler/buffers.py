"""Buffer planning, the last pass: when each slot dies and which steps may write into an input.

``plan_buffers`` sets ``Step.free`` (the slots whose last use a step is) and ``Step.reuse`` (the
input whose buffer an in-place step may take) on the final list of steps.
"""
from __future__ import annotations

from .passes import FUSED, FUSED_EPILOGUE

def plan_buffers(steps: list, keep: set) -> None:
    """The last pass: each step's ``free`` (``_plan_buffers``) and ``reuse`` (``_plan_reuse``),
    for ordinary and fused steps alike; the targets (``keep``) are never freed."""
    _plan_buffers(steps, keep)
    _plan_reuse(steps)


def _plan_buffers(steps: list, keep: set) -> None:
    """Set each step's ``free``: the slots whose last use it is, never the targets' (``keep``)."""
    last: dict[int, int] = {}
    for i, st in enumerate(steps):
        for s in st.outputs:
            last[s] = i
        for s in st.inputs:
            last[s] = i
    frees: dict[int, list] = {}
    for s, i in last.items():
        if s not in keep:
            frees.setdefault(i, []).append(s)
    for i, st in enumerate(steps):
        st.free = tuple(sorted(frees.get(i, ())))


# elementwise ops whose kernels can write their result into an input of the result's type
IN_PLACE_OPS = frozenset({
    "addition", "subtraction", "multiplication", "division", "maximum", "minimum",
    "maximum_with_nan_propagation", "minimum_with_nan_propagation", "negative", "absolute", "exponent",
    "logarithm", "square", "square_root", "tanh", "sin", "cos"})
# ops whose kernels return a new buffer: never a view of an input, a feed, a constant or a
# variable's value, and never kept by the backend after the step
FRESH_OPS = IN_PLACE_OPS | frozenset({
    "convolution_2d", "convolution_2d_data_gradient", "convolution_2d_weights_gradient",
    "convolution_transpose_2d", "convolution_transpose_2d_data_gradient",
    "convolution_transpose_2d_weights_gradient", "depthwise_convolution_2d",
    "depthwise_convolution_2d_data_gradient", "depthwise_convolution_2d_weights_gradient",
    "depthwise_convolution_3d", "depthwise_convolution_3d_data_gradient",
    "depthwise_convolution_3d_weights_gradient", "matrix_multiplication", "relu", "select", "sigmoid",
    "max_pooling_2d", "max_pooling_2d_gradient", "avg_pooling_2d", "avg_pooling_2d_gradient", FUSED, FUSED_EPILOGUE})
# consumers that only read an input (no view of it, no reference kept): a buffer all of whose
# consumers are such ops is seen by nothing else once it dies
_READ_ONLY_CONSUMERS = FRESH_OPS | frozenset({"reduction_sum", "mean", "softmax", "softmax_cross_entropy"})


def _plan_reuse(steps: list) -> None:
    """Set ``reuse`` on elementwise steps (``IN_PLACE_OPS``) that may write into an input buffer:
    one of the result's shape and dtype that dies at the step (``free``: never a target), made by
    an op that returns new buffers (``FRESH_OPS``: so never a feed, a constant, a variable's value
    or a view of another buffer), and read by no op that could keep or view it."""
    producer: dict = {}
    consumers: dict = {}
    for st in steps:
        for s in st.outputs:
            producer[s] = st.type
        for s in st.inputs:
            consumers.setdefault(s, set()).add(st.type)
    for st in steps:
        if st.type not in IN_PLACE_OPS or len(st.outputs) != 1:
            continue
        out = st.out_types[0]
        for i, (s, ty) in enumerate(zip(st.inputs, st.in_types)):
            if (s in st.free and ty.shape == out.shape and ty.dtype == out.dtype
                    and producer.get(s) in FRESH_OPS and consumers[s] <= _READ_ONLY_CONSUMERS):
                st.reuse = i
                break
