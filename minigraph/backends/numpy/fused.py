"""The NumPy backend's fused elementwise step: one step computing a chain or tree of elementwise
ops (``Step.program``, see minigraph/compiler/plan.py) block by block.

Each op runs the same NumPy kernel as unfused, on blocks of the output's leading axis small
enough to stay in cache (``BLOCK_ELEMENTS``), so the intermediates of a block are never written
to memory whole; large outputs spread their blocks over the thread pool. An input that has the
output's leading axis is sliced with the block, one that broadcasts along it is passed whole.
Elementwise kernels compute each element alone, so the result is bit-identical to the unfused plan.

A step with an epilogue (``Step.anchor``: a convolution, matmul or normalization op of
``EPILOGUE_OPS``) runs the anchor's kernel, then its tail as above on the anchor's result: the
same bits as the unfused plan, and the listing shows the plan the GPU backend runs.
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable, Optional

import numpy as np

from ...errors import KernelMissingError
from ...types import ShapedType
from .registry import KERNELS
from .threads import ELEMENTWISE_THRESHOLD, get_num_threads, parallel, split

# elements of one block: its inputs and intermediates stay in the core's cache
BLOCK_ELEMENTS = 1 << 16

# the op types whose NumPy kernel is a pure elementwise map (each element from the inputs'
# elements at its position, broadcast as NumPy): every op declared ``elementwise`` has one
FUSIBLE_OPS = frozenset({
    "absolute", "addition", "atan2", "cast", "ceil", "clamp", "cos", "division", "equal", "erf", "exponent",
    "exponent_base2", "floor", "floor_modulo", "greater_than", "greater_than_or_equal_to", "is_finite",
    "is_infinite", "is_nan", "leaky_relu", "leaky_relu_gradient", "less_than", "less_than_or_equal_to",
    "logarithm", "logarithm_base2", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum",
    "maximum_with_nan_propagation", "minimum", "minimum_with_nan_propagation", "modulo", "multiplication",
    "negative", "not_equal", "power", "reciprocal", "relu", "relu_gradient", "reverse_square_root", "rint",
    "round", "select", "sigmoid", "sigmoid_gradient", "sign", "sin", "square", "square_root", "subtraction", "tanh",
    # MPSGraph's further unary math, logical and bitwise ops
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_and", "bitwise_left_shift", "bitwise_not",
    "bitwise_or", "bitwise_population_count", "bitwise_right_shift", "bitwise_xor", "cosh", "division_no_nan",
    "exponent_base10", "logarithm_base10", "logical_nand", "logical_nor", "logical_xnor", "signbit", "sinh",
    "tan", "truncate"})


# the ops an elementwise tail may follow in one step (epilogue fusion): one output each
EPILOGUE_OPS = frozenset({
    "convolution_2d", "convolution_2d_data_gradient", "convolution_2d_weights_gradient",
    "convolution_3d", "convolution_3d_data_gradient", "convolution_3d_weights_gradient",
    "convolution_transpose_2d", "convolution_transpose_2d_data_gradient",
    "convolution_transpose_2d_weights_gradient", "depthwise_convolution_2d",
    "depthwise_convolution_2d_data_gradient", "depthwise_convolution_2d_weights_gradient",
    "depthwise_convolution_3d", "depthwise_convolution_3d_data_gradient",
    "depthwise_convolution_3d_weights_gradient", "matrix_multiplication", "normalize"})


class _OpStep:
    """What a kernel factory reads of a step, for one op of a fused program on one block size."""

    __slots__ = ("op", "in_types", "out_types", "reuse")

    def __init__(self, op: Any, in_types: tuple, out_type: ShapedType):
        self.op = op
        self.in_types = in_types
        self.out_types = (out_type,)
        self.reuse = None

    @property
    def type(self) -> str:
        return self.op.type

    @property
    def attrs(self) -> Any:
        return self.op.attrs

    @property
    def inputs(self) -> tuple:
        return tuple(range(len(self.in_types)))

    @property
    def outputs(self) -> tuple:
        return (0,)


def _kernels(step, rows: Optional[int], cut: list) -> list:
    """One kernel per op of the program, built for blocks of ``rows`` leading rows (None: whole)."""
    def sized(ty: ShapedType, sliced: bool) -> ShapedType:
        return ShapedType((rows,) + tuple(ty.shape[1:]), ty.dtype) if sliced and rows is not None else ty
    types = [sized(ty, c) for ty, c in zip(step.in_types, cut)]
    fns = []
    for op, args, out in step.program:
        ty = sized(out, True)
        factory = KERNELS.get(op.type)
        if factory is None:  # prepare checked every op of the program has a kernel
            raise KernelMissingError(f"numpy backend has no kernel for {op.type} op {op.name!r} of a fused step")
        fns.append(factory(_OpStep(op, tuple(types[a] for a in args), ty)))
        types.append(ty)
    return fns


def _evaluate(fns: list, program: tuple, values: list) -> Any:
    for fn, (_, args, _) in zip(fns, program):
        values.append(fn(*[values[a] for a in args]))
    return values[-1]


class _Tail:
    """An epilogue step's tail as a fused elementwise step: its inputs are the step's and then the
    anchor's result (value ``len(inputs)`` in both numberings)."""

    def __init__(self, step):
        a_op, _, a_ty = step.program[0]
        self.in_types = tuple(step.in_types) + (a_ty,)
        self.inputs = tuple(range(len(self.in_types)))
        self.out_types = step.out_types
        self.program = tuple(step.program[1:])


def epilogue_kernel(step) -> Callable[..., np.ndarray]:
    """``fn(*inputs) -> output`` for a step with an epilogue: the anchor's kernel, then the tail."""
    a_op, a_args, a_ty = step.program[0]
    factory = KERNELS.get(a_op.type)
    if factory is None:
        raise KernelMissingError(f"numpy backend has no kernel for {a_op.type} op {a_op.name!r} of a fused step")
    anchor = factory(_OpStep(a_op, tuple(step.in_types[a] for a in a_args), a_ty))
    tail = fused_kernel(_Tail(step))

    def run(*xs):
        return tail(*xs, anchor(*[xs[a] for a in a_args]))
    return run


def fused_kernel(step) -> Callable[..., np.ndarray]:
    """``fn(*inputs) -> output`` for a fused step: its program on blocks of the leading axis."""
    if step.program and not step.program[0][0].opdef.elementwise:
        return epilogue_kernel(step)
    out = step.out_types[0]
    shape, dt = tuple(out.shape), out.dtype.np_dtype
    program = step.program
    size = prod(shape)
    if not shape or size == 0:
        fns = _kernels(step, None, [False] * len(step.inputs))

        def whole(*xs):
            r = np.empty(shape, dt)
            r[...] = _evaluate(fns, program, list(xs))
            return r
        return whole
    n = shape[0]
    cut = [len(ty.shape) == len(shape) and ty.shape[0] == n for ty in step.in_types]
    rows = max(1, min(n, BLOCK_ELEMENTS // max(1, size // n)))
    by_rows = {rows: _kernels(step, rows, cut)}
    if n % rows:
        by_rows[n % rows] = _kernels(step, n % rows, cut)
    starts = list(range(0, n, rows))

    def run(*xs):
        r = np.empty(shape, dt)

        def blocks(i: int, j: int) -> None:
            for a in starts[i:j]:
                b = min(n, a + rows)
                r[a:b] = _evaluate(by_rows[b - a], program, [x[a:b] if c else x for x, c in zip(xs, cut)])

        if size >= ELEMENTWISE_THRESHOLD and get_num_threads() > 1:
            parallel(blocks, split(len(starts), rows * (size // n)))
        else:
            blocks(0, len(starts))
        return r
    return run
