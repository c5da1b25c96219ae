"""NumPy kernels for the core ops. Importing this module registers them.

Elementwise ops, reductions, softmax and matmul with large results split their work over the
backend's thread pool (threads.py) along independent blocks of the result.
"""
from __future__ import annotations

import math

import numpy as np

from ...ops._util import normalize_axes
from ...ops.shape import strided_slice
from . import threads
from ...types import FOUR_BIT, wrap_four_bit
from .registry import numpy_kernel
from .threads import elementwise, parallel, reduction, serial_blas, split

_BINARY = {
    "addition": np.add, "subtraction": np.subtract, "multiplication": np.multiply,
    "division": np.true_divide, "maximum": np.fmax, "minimum": np.fmin,  # MPSGraph's ignore NaN
    "maximum_with_nan_propagation": np.maximum, "minimum_with_nan_propagation": np.minimum,
    "equal": np.equal, "not_equal": np.not_equal, "less_than": np.less,
    "less_than_or_equal_to": np.less_equal, "greater_than": np.greater,
    "greater_than_or_equal_to": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
}
_UNARY = {
    "negative": np.negative, "absolute": np.absolute, "exponent": np.exp,
    "logarithm": np.log, "square": np.square, "square_root": np.sqrt,
    "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
    "logical_not": np.logical_not, "is_nan": np.isnan, "is_infinite": np.isinf, "is_finite": np.isfinite,
    "bitwise_not": np.invert, "signbit": np.signbit,
}


def _typed(fn, dtype):
    """Wrap a ufunc so 0-d results stay arrays of the op's dtype (NumPy returns scalars)."""
    def run(*args):
        r = fn(*args)
        return r if type(r) is np.ndarray and r.dtype == dtype else np.asarray(r, dtype=dtype)
    return run


def _ufunc_factory(table):
    def factory(step):
        fn = table[step.op.type]
        dt = step.out_types[0].dtype.np_dtype
        if step.out_types[0].shape == ():
            return _typed(fn, dt)
        return elementwise(fn, step.out_types[0].shape, dt, getattr(step, "reuse", None))
    return factory


def _split(factory):
    """A kernel factory whose elementwise kernels split large results over the thread pool."""
    def split_factory(step):
        return elementwise(factory(step), step.out_types[0].shape, step.out_types[0].dtype.np_dtype)
    return split_factory


# a ufunc kernel writes into step.reuse where the plan names one (elementwise() below)
numpy_kernel(*_BINARY, in_place=True)(_ufunc_factory(_BINARY))
numpy_kernel(*_UNARY, in_place=True)(_ufunc_factory(_UNARY))


@numpy_kernel("reciprocal")
@_split
def _reciprocal(step):
    dt = step.out_types[0].dtype.np_dtype
    one = dt.type(1)
    return lambda x: np.divide(one, x, dtype=dt)


@numpy_kernel("power")
@_split
def _power(step):
    dt = step.out_types[0].dtype.np_dtype
    return lambda a, b: np.asarray(np.power(a, b), dtype=dt)


@numpy_kernel("relu", fresh=True)
@_split
def _relu(step):
    """max(x, 0) with MPSGraph's NaN-ignoring maximum: relu(NaN) = 0, relu(-0) = +0. For floats
    ``fmax(x, 0)`` (NaN-ignoring), then ``+ 0`` turns a -0 into +0: two SIMD passes, no mask."""
    dt = step.out_types[0].dtype.np_dtype
    zero = dt.type(0)
    if dt.kind != "f":
        return lambda x: np.asarray(np.maximum(x, zero), dtype=dt)

    def relu(x):
        y = np.fmax(x, zero)
        if type(y) is not np.ndarray:
            return np.asarray(y + zero, dtype=dt)
        return np.add(y, zero, out=y)
    return relu


@numpy_kernel("sign")
@_split
def _sign(step):
    """-1, 0 or 1; a zero keeps its sign and NaN gives 0 (Apple's header for signWithTensor)."""
    dt = step.out_types[0].dtype.np_dtype
    zero = dt.type(0)
    if dt.kind != "f":
        return _typed(np.sign, dt)
    return lambda x: np.asarray(np.where(x == zero, x, np.where(np.isnan(x), zero, np.sign(x))), dtype=dt)


@numpy_kernel("sigmoid", fresh=True)
@_split
def _sigmoid(step):
    """1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, through e^-|x| only: nothing
    overflows, and for x < 0 the result keeps its relative precision down to e^x's underflow
    (0.5 * (1 + tanh(x / 2)) cancels to 0 from x = -18, so log(sigmoid(-20)) was -inf).
    float16 and float32 are computed in float64 and rounded once (NumPy's float32 exp alone can
    be 2 ulp off), so the reference backend's sigmoid is within about half an ulp."""
    dt = step.out_types[0].dtype.np_dtype
    return lambda x: _sigmoid_values(x, dt)


def _sigmoid_values(x: np.ndarray, dt) -> np.ndarray:
    one = np.float64(1)
    x = x.astype(np.float64, copy=False)
    e = np.exp(-np.abs(x))
    return np.asarray(np.where(x < 0, e, one) / (one + e), dtype=dt)


@numpy_kernel("clamp")
@_split
def _clamp(step):
    """Metal's clamp: fmin(fmax(x, lo), hi), NaN-ignoring, so clamp(NaN, 0, 6) = 0."""
    dt = step.out_types[0].dtype.np_dtype
    return lambda x, lo, hi: np.asarray(np.fmin(np.fmax(x, lo), hi), dtype=dt)


def _in_float64(fn):
    """A float64 evaluation rounded once to the op's dtype: within half an ulp for float32 and float16."""
    @_split
    def factory(step):
        dt = step.out_types[0].dtype.np_dtype

        def run(*xs):
            with np.errstate(all="ignore"):
                return np.asarray(fn(*(x.astype(np.float64, copy=False) for x in xs)), dtype=dt)
        return run
    return factory


_erf64 = np.frompyfunc(math.erf, 1, 1)
numpy_kernel("erf")(_in_float64(lambda x: np.asarray(_erf64(x), dtype=np.float64)))
numpy_kernel("reverse_square_root")(_in_float64(lambda x: 1.0 / np.sqrt(x)))
numpy_kernel("exponent_base2")(_in_float64(np.exp2))
numpy_kernel("logarithm_base2")(_in_float64(np.log2))
numpy_kernel("atan2")(_in_float64(np.arctan2))
for _op, _fn in {"tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
                 "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
                 "exponent_base10": lambda x: np.power(10.0, x), "logarithm_base10": np.log10}.items():
    numpy_kernel(_op)(_in_float64(_fn))


_LOGICAL_NOT_OF = {"logical_nand": np.logical_and, "logical_nor": np.logical_or, "logical_xnor": np.logical_xor}


@numpy_kernel(*_LOGICAL_NOT_OF)
@_split
def _logical_not_of(step):
    fn = _LOGICAL_NOT_OF[step.op.type]
    return lambda a, b: np.asarray(np.logical_not(fn(a, b)))


@numpy_kernel("division_no_nan")
@_split
def _division_no_nan(step):
    """a / b, and 0 where b == 0 (a NaN divisor is not zero: NaN)."""
    dt = step.out_types[0].dtype.np_dtype
    zero, one = dt.type(0), dt.type(1)

    def div(a, b):
        z = b == zero
        with np.errstate(all="ignore"):
            return np.asarray(np.where(z, zero, np.true_divide(a, np.where(z, one, b))), dtype=dt)
    return div


@numpy_kernel("bitwise_left_shift", "bitwise_right_shift")
@_split
def _shift(step):
    """NumPy's shifts: the count read as unsigned, so a count >= the width (or negative) shifts every
    bit out: 0, or -1 for a right shift of a negative signed value."""
    dt = step.out_types[0].dtype.np_dtype
    fn = np.left_shift if step.op.type == "bitwise_left_shift" else np.right_shift
    return lambda a, b: np.asarray(fn(a, b), dtype=dt)


@numpy_kernel("bitwise_population_count")
@_split
def _population_count(step):
    """The bits set in the two's complement pattern (np.bitwise_count of a signed value counts |x|)."""
    dt = step.out_types[0].dtype.np_dtype
    bits = np.dtype(f"u{dt.itemsize}")
    return lambda x: np.asarray(np.bitwise_count(np.asarray(x).view(bits)), dtype=dt)


def _round_half_away(x):
    """Metal's round: x - trunc(x) is exact, so its magnitude says which way a halfway case goes."""
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        up = np.abs(x - t) >= 0.5
    return np.copysign(np.abs(t) + up, x)


_ROUNDING = {"floor": np.floor, "ceil": np.ceil, "rint": np.rint, "round": _round_half_away, "truncate": np.trunc}


@numpy_kernel(*_ROUNDING)
def _rounding(step):
    """Integers are already integral; floats round in their own dtype (exact), the sign kept."""
    dt = step.out_types[0].dtype.np_dtype
    if dt.kind != "f":
        return lambda x: x
    fn = _ROUNDING[step.op.type]
    return lambda x: np.asarray(fn(x), dtype=dt)


@numpy_kernel("modulo")
@_split
def _modulo(step):
    """C's fmod: truncated, the sign of the dividend; an integer divisor of 0 gives 0 (a float one NaN)."""
    dt = step.out_types[0].dtype.np_dtype
    if dt.kind == "f":
        def fmod(a, b):
            with np.errstate(invalid="ignore"):
                return np.asarray(np.fmod(a, b), dtype=dt)
        return fmod

    def imod(a, b):
        zero = b == 0
        return np.asarray(np.where(zero, 0, np.fmod(a, np.where(zero, 1, b))), dtype=dt)
    return imod


@numpy_kernel("floor_modulo")
@_split
def _floor_modulo(step):
    """Python's % (np.mod: the divisor's sign, exact for floats); a divisor of 0 gives 0 (Apple's
    floorModulo), for floats too, where np.mod gives NaN."""
    dt = step.out_types[0].dtype.np_dtype

    def mod(a, b):
        zero = b == 0
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.mod(a, np.where(zero, 1, b).astype(dt, copy=False))
        return np.asarray(np.where(zero, dt.type(0), r), dtype=dt)
    return mod


@numpy_kernel("leaky_relu")
@_split
def _leaky_relu(step):
    """x >= 0 ? x : alpha * x, alpha rounded to float32 (float16 computed in float32, as the GPU does)."""
    dt = step.out_types[0].dtype.np_dtype
    ct = np.float64 if dt == np.float64 else np.float32
    alpha = ct(step.attrs["alpha"])

    def leaky(x):
        xc = x.astype(ct, copy=False)
        return np.asarray(np.where(xc >= 0, xc, alpha * xc), dtype=dt)
    return leaky


@numpy_kernel("leaky_relu_gradient")
def _leaky_relu_gradient(step):
    """source >= 0 ? dy : alpha * dy (float16 in float32, as the forward op)."""
    dt = step.out_types[0].dtype.np_dtype
    ct = np.float64 if dt == np.float64 else np.float32
    shape = step.out_types[0].shape

    def grad(dy, x, alpha):
        dyc, xc, ac = (v.astype(ct, copy=False) for v in (dy, x, alpha))
        return np.asarray(np.broadcast_to(np.where(xc >= 0, dyc, ac * dyc), shape), dtype=dt)
    return grad


@numpy_kernel("relu_gradient")
def _relu_gradient(step):
    """source > 0 ? dy : 0 (NaN and -0 give 0)."""
    dt = step.out_types[0].dtype.np_dtype
    shape = step.out_types[0].shape
    zero = dt.type(0)
    return lambda dy, x: np.asarray(np.broadcast_to(np.where(x > zero, dy, zero), shape), dtype=dt)


@numpy_kernel("sigmoid_gradient")
def _sigmoid_gradient(step):
    """dy * (s * (1 - s)), with s the sigmoid kernel's result (rounded to the type) and the
    products in the type, as the elementwise ops the formula is made of compute them."""
    dt = step.out_types[0].dtype.np_dtype
    shape = step.out_types[0].shape
    one = dt.type(1)

    def grad(dy, x):
        s = _sigmoid_values(x, dt)
        return np.asarray(np.broadcast_to(dy * (s * (one - s)), shape), dtype=dt)
    return grad


@numpy_kernel("identity", "stop_gradient")
def _identity(step):
    return lambda x: x


_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


@numpy_kernel("select", fresh=True)
@_split
def _select(step):
    """np.where; with a bool predicate and both branches of the result's dtype, a bit mask instead
    (``a & m | b & ~m`` on the bits, ``m`` all ones where the predicate holds): the same bits, several
    times faster than np.where's masked loop. A branch that is a scalar +0 costs no pass."""
    dt = step.out_types[0].dtype.np_dtype
    if dt.kind not in "fiu" or not step.out_types[0].shape:
        return lambda p, a, b: np.asarray(np.where(p.astype(bool, copy=False), a, b), dtype=dt)
    bits = _BITS[dt.itemsize]

    def select(p, a, b):
        if p.dtype != np.bool_ or a.dtype != dt or b.dtype != dt:
            return np.asarray(np.where(p.astype(bool, copy=False), a, b), dtype=dt)
        shape = np.broadcast_shapes(p.shape, a.shape, b.shape)  # a block's, under the thread pool
        m = np.asarray(np.negative(p.view(np.uint8), dtype=bits))  # 0 or all ones (an array, also for a rank-0 p)
        r = np.bitwise_and(np.broadcast_to(a.view(bits), shape), m)
        if r.shape != shape:
            r = np.broadcast_to(r, shape).copy()
        bb = b.view(bits)
        if not (bb.ndim == 0 and bb == 0):
            np.bitwise_or(r, np.bitwise_and(bb, np.invert(m, out=m), out=m if m.shape == shape else None), out=r)
        return r.view(dt)
    return select


@numpy_kernel("cast")
@_split
def _cast(step):
    dt = step.out_types[0].dtype.np_dtype
    if step.in_types[0].dtype.is_complex and not step.out_types[0].dtype.is_complex:
        if dt.kind == "b":  # NumPy's rule: true where either part is nonzero
            return lambda x: x != 0
        return lambda x: x.real.astype(dt)  # NumPy's rule: the real part (without its ComplexWarning)
    out = step.out_types[0].dtype
    if out.name in FOUR_BIT and step.in_types[0].dtype != out:  # the low 4 bits of the integer, as int8 keeps 8
        return lambda x: wrap_four_bit(np.trunc(x.real) if x.dtype.kind in "fc" else x, out)
    return lambda x: x.astype(dt, copy=False)  # a cast to the same dtype is the tensor itself


@numpy_kernel("reinterpret_cast")
def _reinterpret_cast(step):
    out = step.out_types[0]
    return lambda x: np.ascontiguousarray(x).view(out.dtype.np_dtype).reshape(out.shape).copy()


def _split_reduction(factory):
    """A reduction's kernel factory whose kernels split large inputs over the thread pool along
    an axis they do not reduce."""
    def split_factory(step):
        axes = step.attrs["axes"] if "axes" in step.attrs else (step.attrs["axis"],)
        axes = normalize_axes(axes, len(step.in_types[0].shape)) if step.in_types[0].shape else ()
        return reduction(factory(step), step.in_types[0].shape, axes, step.out_types[0].shape,
                         step.out_types[0].dtype.np_dtype)
    return split_factory


def _reduce_factory(fn):
    @_split_reduction
    def factory(step):
        axes = normalize_axes(step.attrs["axes"], len(step.in_types[0].shape))
        dt = step.out_types[0].dtype.np_dtype
        if fn is np.sum:
            return lambda x: np.sum(x, axis=axes, keepdims=True, dtype=dt)
        return lambda x: np.asarray(fn(x, axis=axes, keepdims=True), dtype=dt)
    return factory


def _lowest(dt: np.dtype, highest: bool):
    """The identity of a maximum (``highest=False``) or minimum: the seed MPSGraph's reductions start from."""
    if dt.kind == "f":
        return dt.type(np.inf if highest else -np.inf)
    info = np.iinfo(dt)
    return dt.type(info.max if highest else info.min)


def _extremum_factory(ufunc, highest: bool):
    """A maximum/minimum reduction seeded with its identity, so an empty slice gives -inf/+inf;
    with np.fmax/np.fmin a NaN is skipped and a slice of only NaN gives the seed too."""
    @_split_reduction
    def factory(step):
        axes = normalize_axes(step.attrs["axes"], len(step.in_types[0].shape))
        dt = step.out_types[0].dtype.np_dtype
        seed = _lowest(dt, highest)
        return lambda x: np.asarray(ufunc.reduce(x, axis=axes, keepdims=True, initial=seed), dtype=dt)
    return factory


numpy_kernel("reduction_sum", reads_only=True)(_reduce_factory(np.sum))
numpy_kernel("reduction_maximum")(_extremum_factory(np.fmax, False))
numpy_kernel("reduction_minimum")(_extremum_factory(np.fmin, True))
numpy_kernel("reduction_maximum_propagate_nan")(_extremum_factory(np.maximum, False))
numpy_kernel("reduction_minimum_propagate_nan")(_extremum_factory(np.minimum, True))


@numpy_kernel("mean", reads_only=True)
@_split_reduction
def _mean(step):
    """Float: np.mean. Integer: the sum in the tensor's dtype (wrapping) divided by the count, the
    quotient truncated toward zero, as MPSGraph does; an empty slice gives 0."""
    axes = normalize_axes(step.attrs["axes"], len(step.in_types[0].shape))
    dt = step.out_types[0].dtype.np_dtype
    if dt.kind == "f":
        return lambda x: np.asarray(np.mean(x, axis=axes, keepdims=True), dtype=dt)

    def mean(x):
        count = max(int(np.prod([x.shape[a] for a in axes], dtype=np.int64)), 1)
        total = np.sum(x, axis=axes, keepdims=True, dtype=dt).astype(np.int64)
        q = np.abs(total) // count
        return np.asarray(np.where(total < 0, -q, q), dtype=dt)
    return mean


def _wide(x: np.ndarray) -> np.ndarray:
    """float16 computed in float32 and rounded once at the end (as the convolutions and the webgpu
    backend do)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _row_max(x: np.ndarray, axis: int) -> np.ndarray:
    """The shift of a stable softmax; -inf over a zero-length axis, so the result is empty (as JAX)."""
    return np.max(x, axis=axis, keepdims=True, initial=-np.inf)


@numpy_kernel("softmax", reads_only=True)
@_split_reduction
def _softmax(step):
    axis = step.attrs["axis"]
    dt = step.out_types[0].dtype.np_dtype

    return lambda x: softmax_values(x, axis, dt)


def softmax_values(x: np.ndarray, axis: int, dt) -> np.ndarray:
    w = _wide(x)
    e = np.exp(w - _row_max(w, axis))
    return np.asarray(e / np.sum(e, axis=axis, keepdims=True), dtype=dt)


@numpy_kernel("softmax_gradient", reads_only=True)
def _softmax_gradient(step):
    """y * (dy - sum(dy * y)) with y the softmax kernel's result, each step in the tensor's type,
    as the ops of the formula compute it."""
    axis = step.attrs["axis"]
    dt = step.out_types[0].dtype.np_dtype

    def grad(dy, x):
        y = softmax_values(x, axis, dt)
        s = np.sum(np.multiply(dy, y, dtype=dt), axis=axis, keepdims=True, dtype=dt)
        return np.asarray(np.multiply(y, np.subtract(dy, s, dtype=dt), dtype=dt), dtype=dt)
    return grad


@numpy_kernel("softmax_cross_entropy_gradient", reads_only=True)
def _sce_gradient(step):
    """(softmax(x) * sum(labels) - labels) * scale, scale = dy (over the rows for "mean"), each
    step in the tensor's type."""
    axis = normalize_axes(step.attrs["axis"], len(step.in_types[1].shape))[0]
    red = step.attrs["reduction"]
    dt = step.out_types[0].dtype.np_dtype
    shape = step.in_types[1].shape

    def grad(dy, x, labels):
        scale = dy
        if red == "mean":
            rows = float(np.prod([d for i, d in enumerate(shape) if i != axis]))
            scale = np.divide(dy, dt.type(rows), dtype=dt)
        p = softmax_values(x, axis, dt)
        sl = np.sum(labels, axis=axis, keepdims=True, dtype=dt)
        return np.asarray(np.multiply(np.subtract(np.multiply(p, sl, dtype=dt), labels, dtype=dt), scale, dtype=dt),
                          dtype=dt)
    return grad


@numpy_kernel("softmax_cross_entropy", reads_only=True)
def _sce(step):
    axis = step.attrs["axis"]
    red = step.attrs["reduction"]
    dt = step.out_types[0].dtype.np_dtype
    shape = step.out_types[0].shape

    def sce(x, labels):
        x, labels = _wide(x), _wide(labels)
        m = _row_max(x, axis)
        with np.errstate(divide="ignore"):  # log(0) of a zero-length axis, which has no terms
            lsm = x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
        rows = -np.sum(labels * lsm, axis=axis, keepdims=True)  # -0 over a zero-length axis, as JAX
        if red == "sum":
            return np.asarray(np.sum(rows), dtype=dt).reshape(shape)
        if red == "mean":
            return np.asarray(np.mean(rows), dtype=dt).reshape(shape)
        return np.asarray(rows, dtype=dt)
    return sce


MATMUL_ROWS = 64  # rows (or columns) of one GEMM of a split 2-D product


@numpy_kernel("matrix_multiplication", fresh=True)
def _matmul(step):
    """np.matmul; a large product is split over the thread pool by matrices of its batch, or a
    single matrix by chunks of ``MATMUL_ROWS`` rows (columns where it is wider than tall). The
    chunks do not depend on the thread count, so neither does the result."""
    out = step.out_types[0]
    (a_shape, b_shape), shape = (t.shape for t in step.in_types), out.shape
    if len(shape) < 2 or min(len(a_shape), len(b_shape)) < 2:
        return serial_blas(np.matmul)
    work = math.prod(shape) * max(1, a_shape[-1])
    batch = math.prod(shape[:-2])
    rows, cols = shape[-2], shape[-1]
    if work < threads.MATMUL_THRESHOLD or (batch < 2 and max(rows, cols) < 2 * MATMUL_ROWS):
        return serial_blas(np.matmul)
    dt = out.dtype.np_dtype
    if batch >= 2:  # the batch axes flattened: an operand that broadcasts is expanded as a view
        def run(a, b):
            res = np.empty(shape, dt)
            a3 = np.broadcast_to(a, shape[:-2] + a.shape[-2:]).reshape((batch,) + a.shape[-2:])
            b3 = np.broadcast_to(b, shape[:-2] + b.shape[-2:]).reshape((batch,) + b.shape[-2:])
            r3 = res.reshape((batch, rows, cols))
            parallel(lambda i, j: np.matmul(a3[i:j], b3[i:j], out=r3[i:j]), split(batch, work // batch))
            return res
        return run
    by_rows = rows >= cols
    n = rows if by_rows else cols
    chunks = -(-n // MATMUL_ROWS)

    def run2(a, b):
        res = np.empty(shape, dt)

        def block(c0, c1):
            for c in range(c0, c1):
                i, j = c * MATMUL_ROWS, min(n, (c + 1) * MATMUL_ROWS)
                if by_rows:
                    np.matmul(a[..., i:j, :], b, out=res[..., i:j, :])
                else:
                    np.matmul(a, b[..., :, i:j], out=res[..., :, i:j])
        parallel(block, split(chunks, work // chunks))
        return res
    return run2


@numpy_kernel("reshape", "expand_dims", "squeeze")
def _reshape(step):
    shape = step.out_types[0].shape
    return lambda x: x.reshape(shape)


@numpy_kernel("broadcast")
def _broadcast(step):
    shape = step.out_types[0].shape
    return lambda x: np.broadcast_to(x, shape)


@numpy_kernel("permute")
def _permute(step):
    perm = step.attrs["permutation"]
    return lambda x: np.transpose(x, perm)


@numpy_kernel("transpose")
def _transpose(step):
    a, b = step.attrs["dimension"], step.attrs["with_dimension"]
    return lambda x: np.swapaxes(x, a, b)


def _slice_index(rank, dim, start, length, size):
    dim %= rank
    start = start + size if start < 0 else start
    idx = [slice(None)] * rank
    idx[dim] = slice(start, start + length)
    return tuple(idx)


@numpy_kernel("slice")
def _slice(step):
    shape = step.in_types[0].shape
    a = step.attrs
    d = a["dimension"] % len(shape)
    idx = _slice_index(len(shape), d, a["start"], a["length"], shape[d])
    return lambda x: x[idx]


@numpy_kernel("slice_gradient")
def _slice_grad(step):
    shape = step.out_types[0].shape
    dt = step.out_types[0].dtype.np_dtype
    a = step.attrs
    d = a["dimension"] % len(shape)
    idx = _slice_index(len(shape), d, a["start"], a["length"], shape[d])

    def run(dy):
        out = np.zeros(shape, dt)
        out[idx] = dy
        return out
    return run


def strided_index(shape, attrs) -> tuple:
    """The NumPy index of ``slice_tensor``'s strided slice of ``shape`` (an int on squeezed axes)."""
    idx: list = []
    for begin, s, size, squeezed in strided_slice(shape, attrs):
        if squeezed:
            idx.append(begin)
        elif size == 0:
            idx.append(slice(0, 0))
        else:
            stop = begin + size * s
            idx.append(slice(begin, None if stop < 0 else stop, s))
    return tuple(idx)


@numpy_kernel("slice_tensor")
def _slice_tensor(step):
    idx = strided_index(step.in_types[0].shape, step.attrs)
    return lambda x: np.array(np.asarray(x)[idx])


@numpy_kernel("slice_gradient_tensor")
def _slice_gradient_tensor(step):
    out = step.out_types[0]
    idx = strided_index(out.shape, step.attrs)

    def run(dy):
        y = np.zeros(out.shape, out.dtype.np_dtype)
        y[idx] = dy
        return y
    return run


@numpy_kernel("slice_update_data_tensor")
def _slice_update(step):
    idx = strided_index(step.in_types[0].shape, step.attrs)

    def run(data, update):
        y = np.array(data)
        y[idx] = update
        return y
    return run


@numpy_kernel("shape_of")
def _shape_of(step):
    shape = np.array(step.in_types[0].shape, np.int32)
    return lambda x: shape.copy()


@numpy_kernel("coordinate_along_axis")
def _coordinate(step):
    shape, a = step.out_types[0].shape, step.attrs["axis"]
    view = [1] * len(shape)
    view[a] = shape[a]
    return lambda: np.broadcast_to(np.arange(shape[a], dtype=np.int32).reshape(view), shape).copy()


@numpy_kernel("concat")
def _concat(step):
    d = step.attrs["dimension"]
    if step.attrs.get("interleave", False):
        out = step.out_types[0].shape
        a = d % len(out)
        return lambda *xs: np.stack(xs, axis=a + 1).reshape(out)
    return lambda *xs: np.concatenate(xs, axis=d)


