"""Random graph programs for fuzzing minigraph, shared by tests/test_fuzz.py and scripts/fuzz_long.py.

A generated case is *Python source*: it builds a graph and, line by line beside it, an independent
NumPy reference (float64 for floats, Python ints wrapped to the dtype for integers, so NumPy's own
integer wrapping is not trusted). Printing the source gives a reproducer that runs on its own.

Draws come from a ``Draw``: ``HypothesisDraw`` (shrinkable, for the test suite) or ``RandomDraw``
(a seeded ``random.Random``, for the long script). Each float node carries an interval bound of its
values and a forward error bound (a few ulps per op, the GPU precision rules of WGSL, and the
propagated input error), so a backend is compared against the reference with a tolerance that is
derived, not guessed. Integer and bool results must match exactly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import minigraph as mg
from minigraph.ops import OPS

FLOATS = ("float32", "float16")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTS = SIGNED + UNSIGNED
U = {"float32": 2.0 ** -24, "float16": 2.0 ** -11}  # unit roundoff
ABS_FLOOR = {"float32": 2.0 ** -20, "float16": 2.0 ** -9}  # absolute error allowed per transcendental
MAXMAG = {"float32": 1e6, "float16": 1e4}  # keep values far from overflow
MAXERR = 0.05  # a node whose error bound exceeds this fraction of its magnitude is not built
C = 4.0  # ulps allowed per op for basic arithmetic (GPUs may be a couple of ulps off)


class FuzzFailure(AssertionError):
    """A property of minigraph that a generated case broke."""


# ------------------------------------------------------------------------------------- draws
class RandomDraw:
    """Draws from a seeded ``random.Random`` (the long script: case ``i`` of seed ``s`` is repeatable)."""

    def __init__(self, seed):
        import random

        self.r = random.Random(seed)

    def int(self, lo, hi):
        return self.r.randint(lo, hi)

    def choice(self, seq):
        seq = list(seq)
        return seq[self.r.randrange(len(seq))]

    def coin(self, p=0.5):
        return self.r.random() < p

    def weighted(self, table):
        total = sum(w for _, w in table)
        x = self.r.random() * total
        for f, w in table:
            x -= w
            if x < 0:
                return f
        return table[-1][0]


class HypothesisDraw:
    """Draws through hypothesis (``st.data()``), so failures shrink to small programs."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def int(self, lo, hi):
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return self.data.draw(self.st.sampled_from(list(seq)))

    def coin(self, p=0.5):  # shrinks towards False
        return self.data.draw(self.st.integers(0, 999)) >= 1000 - int(p * 1000)

    def weighted(self, table):
        """Uniform over a weight-expanded list: hypothesis' integer draws favour the ends of a range."""
        key = tuple(id(f) for f, _ in table)
        pool = self._pools.get(key) if hasattr(self, "_pools") else None
        if pool is None:
            pool = [f for f, w in table for _ in range(max(1, int(round(w * 10))))]
            self.__dict__.setdefault("_pools", {})[key] = pool
        return self.data.draw(self.st.sampled_from(pool))


# ------------------------------------------------------------------ helpers used by case code
def leaf(rng, shape, dtype, lo, hi, layout="C"):
    """A read-only random array (uniform in [lo, hi]; never all zeros).

    ``layout``: "C"; "F" (Fortran order); "rev" (negative strides); "step" (a strided view of a
    bigger array); "swap" (non-native byte order). The values are the same for every layout.
    """
    dt = np.dtype(dtype)
    shape = tuple(shape)
    if dt.kind == "f":
        a = np.asarray(rng.uniform(lo, hi, size=shape)).astype(dt)
    elif dt.kind == "b":
        a = np.asarray(rng.random(shape) < 0.5)
    else:
        a = np.asarray(rng.integers(int(lo), int(hi), size=shape, endpoint=True, dtype=dt))
    a = np.array(a, dtype=dt, copy=True)
    if layout == "F" and a.ndim:  # (asfortranarray makes a 0-d array 1-d)
        a = np.asfortranarray(a)
    elif layout == "rev" and a.ndim:
        a = np.ascontiguousarray(a[::-1])[::-1]
    elif layout == "step" and a.ndim:
        a = np.repeat(a, 2, axis=-1)[..., ::2]
    elif layout == "swap" and dt.itemsize > 1:
        a = a.astype(dt.newbyteorder("S"))
    a.setflags(write=False)
    return a


def up(a):
    """The reference representation: float64, Python ints (object), or bool."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    if a.dtype.kind == "b":
        return a.copy()
    return a.astype(object)


def W(x, dtype):
    """Wrap Python integers into ``dtype`` (two's complement), independently of NumPy's wrapping."""
    info = np.iinfo(dtype)
    m = 1 << info.bits
    f = np.frompyfunc(lambda v: (int(v) - info.min) % m + info.min, 1, 1)
    return np.asarray(f(np.asarray(x, dtype=object)), dtype=object)


def arr(x):
    """Keep references arrays: NumPy reductions of object arrays may return bare Python scalars."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (bool, np.bool_)):
        return np.asarray(x, dtype=bool)
    if isinstance(x, int):
        return np.asarray(x, dtype=object)
    return np.asarray(x)


def to_int(x):
    """Truncate floats toward zero, as Python ints."""
    return np.asarray(np.frompyfunc(lambda v: int(v), 1, 1)(np.asarray(x)), dtype=object)


def ints(x):
    """Bools or any integers as Python ints."""
    x = np.asarray(x)
    return np.asarray(np.frompyfunc(lambda v: int(v), 1, 1)(x), dtype=object)


def softmax_ref(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def as_dtype_array(ref, dtype):
    """The reference, as an array of the result dtype (for exact comparisons)."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return np.array(np.asarray(ref, dtype=object).tolist(), dtype=dt).reshape(np.shape(ref))
    return np.asarray(ref, dtype=dt)


# ---------------------------------------------------------------------------------- the program
@dataclass
class Node:
    i: int
    shape: tuple
    dtype: str
    lo: float = 0.0
    hi: float = 1.0
    err: float = 0.0
    phs: frozenset = frozenset()
    leaf: str = ""  # "placeholder", "constant", "variable" or "" for op outputs
    ref: str = ""

    def __post_init__(self):
        if not self.ref:
            self.ref = f"R{self.i}"

    @property
    def rank(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def M(self):
        return max(abs(self.lo), abs(self.hi))

    @property
    def kind(self):
        return "float" if self.dtype in FLOATS else "bool" if self.dtype == "bool" else "int"

    @property
    def t(self):
        return f"t{self.i}"


def _int_bounds(lo, hi, dtype):
    info = np.iinfo(dtype)
    if lo < info.min or hi > info.max:
        return int(info.min), int(info.max)
    return int(lo), int(hi)


def _corners(f, a, b):
    vals = [f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return min(vals), max(vals)


HEADER = """\
import sys; sys.path[:0] = [p for p in (".", "tests") if p not in sys.path]  # run from the repository root
import numpy as np, minigraph as mg
from fuzz_strategies import leaf, up, arr, W, to_int, ints, softmax_ref, check_case, check_invalid, expect
from fuzz_strategies import (depthwise2d_ref, depthwise2d_data_grad_ref, depthwise2d_weights_grad_ref, conv2d_ref,
    conv2d_data_grad_ref, conv2d_weights_grad_ref, depthwise3d_ref, depthwise3d_data_grad_ref,
    depthwise3d_weights_grad_ref, pool2d_ref, pool2d_grad_ref)
g = mg.Graph()
rng = np.random.default_rng({seed})
N, P, A, T, F, OPS = {{}}, {{}}, [], [], [], []
DYNAMIC = {dynamic}
"""


class Program:
    """Emits graph-building code and reference code side by side."""

    def __init__(self, d, dynamic=False, allow_zero=False, seed=None):
        self.d = d
        self.dynamic = dynamic
        self.allow_zero = allow_zero
        self.nodes: list[Node] = []
        self.seed = d.int(0, 2 ** 31 - 1) if seed is None else seed
        self.lines = [HEADER.format(seed=self.seed, dynamic=dynamic)]
        self.n = 0
        self.ops_used: list[str] = []
        self.assigns = 0

    def emit(self, line):
        self.lines.append(line)

    def source(self):
        return "\n".join(self.lines) + "\n"

    def fresh(self):
        self.n += 1
        return self.n - 1

    # ------------------------------------------------------------------ leaves
    def rand_shape(self, rank=None, maxdim=4):
        d = self.d
        if rank is None:
            rank = d.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        shape = [d.int(1, maxdim) for _ in range(rank)]
        if self.allow_zero and rank and d.coin(0.1):
            shape[d.int(0, rank - 1)] = 0
        return tuple(shape)

    def leaf(self, shape, dtype, kind=None, rng=None):
        d = self.d
        i = self.fresh()
        if dtype in FLOATS:
            lo, hi = rng or d.choice([(-2.0, 2.0), (0.5, 3.0), (-3.0, -0.5), (-8.0, 8.0), (0.1, 1.0)])
        elif dtype == "bool":
            lo, hi = 0, 1
        else:
            info = np.iinfo(dtype)
            if rng is not None:
                lo, hi = rng
            elif d.coin(0.2):
                lo, hi = int(info.min), int(info.max)
            else:
                lo, hi = (-6, 6) if dtype in SIGNED else (0, 9)
        if kind is None:
            kind = d.choice(["placeholder"] * 6 + ["constant"] * 3 + ["variable"] * 2)
        layout = d.choice(["C"] * 12 + ["F", "rev", "step", "swap"])
        extra = f", layout={layout!r}" if layout != "C" else ""
        self.emit(f"r{i} = leaf(rng, {tuple(shape)!r}, {dtype!r}, {lo!r}, {hi!r}{extra})")
        phs = frozenset()
        if kind == "placeholder":
            decl = [(-1 if (self.dynamic and d.coin(0.35)) else s) for s in shape]
            dt = d.choice([repr(dtype), f"mg.{dtype if dtype != 'bool' else 'bool'}", f"np.{dtype if dtype != 'bool' else 'bool_'}"])
            self.emit(f"t{i} = g.placeholder({decl!r}, {dt}, name='x{i}')")
            self.emit(f"P[{i}] = r{i}")
            phs = frozenset([i])
        elif kind == "constant":
            self.emit(f"t{i} = g.constant(r{i})")
        else:
            self.emit(f"t{i} = g.variable(r{i}, name='v{i}')")
        self.emit(f"R{i} = up(r{i})")
        node = Node(i, tuple(shape), dtype, lo, hi, 0.0, phs, kind)
        self._register(node)
        return node

    def _register(self, node):
        self.emit(f"N[{node.i}] = (t{node.i}, R{node.i}, {node.err!r}, {node.shape!r}, {node.dtype!r})")
        self.nodes.append(node)

    def op(self, build, ref, shape, dtype, lo, hi, err, phs, opname):
        """Emit an op and its reference; refuse (return None) if bounds or error blow up."""
        if dtype in FLOATS:
            M = max(abs(lo), abs(hi))
            if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(err)):
                return None
            if M > MAXMAG[dtype] or err > MAXERR * (1.0 + M):
                return None
        i = self.fresh()
        self.emit(f"t{i} = {build}")
        self.emit(f"R{i} = arr({ref})")
        node = Node(i, tuple(shape), dtype, lo, hi, float(err), frozenset(phs))
        self._register(node)
        self.ops_used.append(opname)
        return node

    def pick(self, pred=lambda n: True, recent=True):
        cands = [n for n in self.nodes if pred(n)]
        if not cands:
            return None
        if recent and len(cands) > 2 and self.d.coin(0.6):
            cands = cands[-3:]
        return self.d.choice(cands)

    # shapes that broadcast with ``shape``
    def compat_shape(self, shape):
        d = self.d
        s = list(shape)
        if s and d.coin(0.3):
            s = s[d.int(1, len(s)):] if len(s) > 0 else s
        s = [(d.int(2, 3) if d.coin(0.3) else 1) if x == 1 else 1 if (x != 0 and d.coin(0.3)) else x for x in s]
        if len(s) == len(shape) and len(s) < 4 and d.coin(0.15):
            s = [d.int(1, 3)] + s
        return tuple(s)

    def operand_like(self, a, shape=None, dtype=None):
        """An existing node of a's dtype whose shape broadcasts with ``a``, or a new leaf."""
        dtype = dtype or a.dtype
        shape = a.shape if shape is None else shape

        def ok(n):
            if n.dtype != dtype:
                return False
            try:
                np.broadcast_shapes(n.shape, shape)
                return True
            except ValueError:
                return False
        if self.d.coin(0.4):
            b = self.pick(ok)
            if b is not None:
                return b
        new = self.compat_shape(shape) if self.d.coin(0.5) else tuple(shape)
        return self.leaf(new, dtype)


# ----------------------------------------------------------------------- valid ops (one per kind)
# Bounds of each float unary op: (a, unit roundoff, absolute floor) -> (lo, hi, error bound), or None to refuse.
def _fu_exponent(a, u, fl):
    lo, hi, e, M = a.lo, a.hi, a.err, a.M
    if hi > (8.0 if a.dtype == "float16" else 20.0):
        return None
    nlo, nhi = math.exp(lo), math.exp(hi)
    return nlo, nhi, nhi * math.expm1(e) + (3 + 2 * M + C) * u * nhi


def _fu_logarithm(a, u, fl):
    lo, hi, e = a.lo, a.hi, a.err
    if lo - e < 0.05:
        return None
    nlo, nhi = math.log(lo), math.log(hi)
    return nlo, nhi, e / (lo - e) + 3 * u * max(abs(nlo), abs(nhi)) + fl


def _fu_square_root(a, u, fl):
    lo, hi, e = a.lo, a.hi, a.err
    if lo - e < 0.01:
        return None
    nlo, nhi = math.sqrt(lo), math.sqrt(hi)
    return nlo, nhi, e / (2 * math.sqrt(lo - e)) + C * u * nhi


def _fu_reciprocal(a, u, fl):
    lo, hi, e = a.lo, a.hi, a.err
    m = lo if lo > 0 else -hi
    if m - e < 0.1:
        return None
    return 1.0 / hi, 1.0 / lo, e / (m * (m - e)) + C * u / m


def _fu_tanh(a, u, fl):
    return math.tanh(a.lo), math.tanh(a.hi), a.err + C * u + fl


def _fu_sigmoid(a, u, fl):
    s = lambda x: 0.5 * (1 + math.tanh(x / 2))  # noqa: E731
    return s(a.lo), s(a.hi), a.err / 4 + C * u + fl


def _fu_sin_cos(a, u, fl):
    return -1.0, 1.0, a.err + fl + 2 * C * u * (1 + a.M)


def _fu_negative(a, u, fl):
    return -a.hi, -a.lo, a.err


def _fu_absolute(a, u, fl):
    lo, hi = a.lo, a.hi
    return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), a.M, a.err


def _fu_square(a, u, fl):
    lo, hi, e, M = a.lo, a.hi, a.err, a.M
    nlo = 0.0 if lo <= 0 <= hi else min(lo * lo, hi * hi)
    return nlo, M * M, 2 * M * e + e * e + C * u * M * M


def _fu_relu(a, u, fl):
    return max(a.lo, 0.0), max(a.hi, 0.0), a.err


def _fu_sign(a, u, fl):
    if a.err:
        return None
    return -1.0, 1.0, 0.0


def _fu_identity(a, u, fl):
    return a.lo, a.hi, a.err


# name -> (bounds, reference text with {r} for the operand's reference)
FLOAT_UNARY = {
    "exponent": (_fu_exponent, "np.exp({r})"),
    "logarithm": (_fu_logarithm, "np.log({r})"),
    "square_root": (_fu_square_root, "np.sqrt({r})"),
    "reciprocal": (_fu_reciprocal, "1.0 / {r}"),
    "tanh": (_fu_tanh, "np.tanh({r})"),
    "sigmoid": (_fu_sigmoid, "1.0 / (1.0 + np.exp(-{r}))"),
    "sin": (_fu_sin_cos, "np.sin({r})"),
    "cos": (_fu_sin_cos, "np.cos({r})"),
    "negative": (_fu_negative, "-{r}"),
    "absolute": (_fu_absolute, "np.abs({r})"),
    "square": (_fu_square, "np.square({r})"),
    "relu": (_fu_relu, "np.maximum(0.0, {r})"),
    "sign": (_fu_sign, "np.sign({r})"),
    "identity": (_fu_identity, "{r}.copy()"),
}


def _float_unary_build(p, a, name):
    """The graph call: an operator for some negatives and absolutes (one coin draw for those two ops)."""
    if name == "negative" and p.d.coin(0.5):
        return f"-{a.t}"
    if name == "absolute" and p.d.coin(0.3):
        return f"abs({a.t})"
    return f"g.{name}({a.t}, name='n{p.n}')"


def _float_unary(p, a, name):
    u, fl = U[a.dtype], ABS_FLOOR[a.dtype]
    bounds, ref = FLOAT_UNARY[name]
    b = bounds(a, u, fl)
    if b is None:
        return None
    nlo, nhi, err = b
    build = _float_unary_build(p, a, name)
    return p.op(build, ref.format(r=a.ref), a.shape, a.dtype, nlo, nhi, err, a.phs, name)


def _int_unary(p, a, name):
    dt, r = a.dtype, a.ref
    if name == "negative":
        ref, lo, hi = f"W(-{r}, {dt!r})", -a.hi, -a.lo
    elif name == "absolute":
        ref, lo, hi = f"W(abs({r}), {dt!r})", (0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))), a.M
    elif name == "square":
        ref, lo, hi = f"W({r} * {r}, {dt!r})", (0 if a.lo <= 0 <= a.hi else min(a.lo ** 2, a.hi ** 2)), a.M ** 2
    elif name == "relu":
        ref, lo, hi = f"W(np.maximum({r}, 0), {dt!r})", max(a.lo, 0), max(a.hi, 0)
    elif name == "sign":
        ref, lo, hi = f"W(np.sign({r}), {dt!r})", -1, 1
    else:
        ref, lo, hi = f"{r}.copy()", a.lo, a.hi
    if dt in UNSIGNED and name in ("negative",):
        lo, hi = -a.hi, -a.lo
    lo, hi = _int_bounds(lo, hi, dt)
    if dt in UNSIGNED and lo < 0:
        lo, hi = _int_bounds(-1, 1 << 70, dt)
    return p.op(f"g.{name}({a.t}, name='n{p.n}')", ref, a.shape, dt, lo, hi, 0.0, a.phs, name)


def op_unary(p):
    a = p.pick(lambda n: n.kind != "bool")
    if a is None:
        return None
    if a.kind == "float":
        name = p.d.choice(["exponent", "logarithm", "square_root", "reciprocal", "tanh", "sigmoid", "sin",
                           "cos", "negative", "absolute", "square", "relu", "sign", "identity"])
        return _float_unary(p, a, name)
    name = p.d.choice(["negative", "absolute", "square", "relu", "sign", "identity"])
    return _int_unary(p, a, name)


SCALARS = {"float": [0.5, 1.5, -2.0, 3.0, 0.25, -0.75], "signed": [-3, -1, 1, 2, 5], "unsigned": [0, 1, 2, 5]}


def _scalar_node(p, a):
    d = p.d
    if a.kind == "float":
        s = d.choice(SCALARS["float"])
        return Node(-1, (), a.dtype, s, s, 0.0, frozenset(), "scalar", f"np.float64({s!r})"), repr(s)
    s = d.choice(SCALARS["signed" if a.dtype in SIGNED else "unsigned"])
    return Node(-1, (), a.dtype, s, s, 0.0, frozenset(), "scalar", f"np.asarray({s}, dtype=object)"), repr(s)


def _bshape(a, b):
    return tuple(np.broadcast_shapes(a.shape, b.shape))


def op_binary(p, scalar=False):
    d = p.d
    a = p.pick(lambda n: n.kind != "bool")
    if a is None:
        return None
    if scalar:
        b, btxt = _scalar_node(p, a)
    else:
        b = p.operand_like(a)
        btxt = b.t
    swap = d.coin(0.3)
    x, y = (b, a) if swap else (a, b)
    xt, yt = (btxt, a.t) if swap else (a.t, btxt)
    shape = _bshape(a, b)
    dt = a.dtype
    phs = a.phs | b.phs
    names = ["addition", "subtraction", "multiplication", "maximum", "minimum"]
    if a.kind == "float":
        names += ["division", "power"]
    name = d.choice(names)
    sym = {"addition": "+", "subtraction": "-", "multiplication": "*", "division": "/", "power": "**"}
    if name in sym and d.coin(0.5):
        build = f"{xt} {sym[name]} {yt}"
    else:
        build = f"g.{name}({xt}, {yt}, name='n{p.n}')"
    if a.kind == "int":
        rx, ry = x.ref, y.ref
        ref = {"addition": f"W({rx} + {ry}, {dt!r})", "subtraction": f"W({rx} - {ry}, {dt!r})",
               "multiplication": f"W({rx} * {ry}, {dt!r})", "maximum": f"np.maximum({rx}, {ry})",
               "minimum": f"np.minimum({rx}, {ry})"}[name]
        if name in ("maximum", "minimum"):
            lo, hi = (max(x.lo, y.lo), max(x.hi, y.hi)) if name == "maximum" else (min(x.lo, y.lo), min(x.hi, y.hi))
        else:
            f = {"addition": lambda s, t: s + t, "subtraction": lambda s, t: s - t,
                 "multiplication": lambda s, t: s * t}[name]
            lo, hi = _corners(f, x, y)
        lo, hi = _int_bounds(lo, hi, dt)
        return p.op(build, ref, shape, dt, lo, hi, 0.0, phs, name)
    u = U[dt]
    ex, ey = x.err, y.err
    rx, ry = x.ref, y.ref
    if name == "addition":
        lo, hi = x.lo + y.lo, x.hi + y.hi
        err = ex + ey + C * u * max(abs(lo), abs(hi))
        ref = f"{rx} + {ry}"
    elif name == "subtraction":
        lo, hi = x.lo - y.hi, x.hi - y.lo
        err = ex + ey + C * u * max(abs(lo), abs(hi))
        ref = f"{rx} - {ry}"
    elif name == "multiplication":
        lo, hi = _corners(lambda s, t: s * t, x, y)
        err = x.M * ey + y.M * ex + ex * ey + C * u * max(abs(lo), abs(hi))
        ref = f"{rx} * {ry}"
    elif name in ("maximum", "minimum"):
        lo, hi = (max(x.lo, y.lo), max(x.hi, y.hi)) if name == "maximum" else (min(x.lo, y.lo), min(x.hi, y.hi))
        err = max(ex, ey)
        ref = f"np.{name}({rx}, {ry})"
    elif name == "division":
        m = y.lo if y.lo > 0 else -y.hi if y.hi < 0 else 0.0
        if m - ey < 0.1:
            return None
        lo, hi = _corners(lambda s, t: s / t, x, y)
        Mo = max(abs(lo), abs(hi))
        err = (ex + Mo * ey) / (m - ey) + C * u * Mo
        ref = f"{rx} / {ry}"
    else:  # power
        if x.lo - ex < 0.1 or y.M > 3.0:
            return None
        lo, hi = _corners(lambda s, t: s ** t, x, y)
        Mo = max(abs(lo), abs(hi))
        lna = max(abs(math.log(x.lo - ex)), abs(math.log(x.hi + ex)))
        dm = max(abs(v) for v in _corners(lambda s, t: s ** (t - 1), x, y))
        err = y.M * dm * ex * 1.5 + Mo * lna * ey * 1.5 + (3 + 2 * y.M * lna / math.log(2) + 2 * C) * u * Mo
        ref = f"np.power({rx}, {ry})"
    return p.op(build, ref, shape, dt, lo, hi, err, phs, name)


def op_compare(p):
    d = p.d
    a = p.pick(lambda n: n.kind != "float" or n.err == 0)
    if a is None:
        return None
    if d.coin(0.3) and a.kind != "bool":
        b, btxt = _scalar_node(p, a)
    else:
        b = p.operand_like(a)
        if b.kind == "float" and b.err:
            return None
        btxt = b.t
    name = d.choice(["equal", "not_equal", "less_than", "less_than_or_equal_to", "greater_than",
                     "greater_than_or_equal_to"])
    npf = {"equal": "equal", "not_equal": "not_equal", "less_than": "less", "less_than_or_equal_to": "less_equal",
           "greater_than": "greater", "greater_than_or_equal_to": "greater_equal"}[name]
    sym = {"less_than": "<", "less_than_or_equal_to": "<=", "greater_than": ">", "greater_than_or_equal_to": ">=",
           "equal": "==", "not_equal": "!="}[name]
    build = f"({a.t} {sym} {btxt})" if d.coin(0.4) else f"g.{name}({a.t}, {btxt}, name='n{p.n}')"
    ref = f"np.asarray(np.{npf}({a.ref}, {b.ref}), dtype=bool)"
    return p.op(build, ref, _bshape(a, b), "bool", 0, 1, 0.0, a.phs | b.phs, name)


def op_select(p):
    d = p.d
    a = p.pick()
    if a is None:
        return None
    b = p.operand_like(a)
    shape = _bshape(a, b)
    pred = p.pick(lambda n: n.dtype == "bool" and _broadcasts(n.shape, shape))
    if pred is None or d.coin(0.4):
        pred = p.leaf(p.compat_shape(shape), "bool")
    out = tuple(np.broadcast_shapes(pred.shape, shape))
    lo, hi = min(a.lo, b.lo), max(a.hi, b.hi)
    ref = f"np.where({pred.ref}, {a.ref}, {b.ref})"
    return p.op(f"g.select({pred.t}, {a.t}, {b.t}, name='n{p.n}')", ref, out, a.dtype, lo, hi,
                max(a.err, b.err), a.phs | b.phs | pred.phs, "select")


def _broadcasts(s1, s2):
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


def op_matmul(p):
    d = p.d
    a = p.pick(lambda n: n.rank >= 2 and n.kind != "bool")
    if a is None:
        return None
    K = a.shape[-1]
    batch = a.shape[:-2]
    bb = p.compat_shape(batch) if d.coin(0.5) else batch
    Nn = d.int(1, 4)
    b = p.leaf(tuple(bb) + (K, Nn), a.dtype)
    out = tuple(np.broadcast_shapes(batch, bb)) + (a.shape[-2], Nn)
    build = f"{a.t} @ {b.t}" if d.coin(0.3) else f"g.matrix_multiplication({a.t}, {b.t}, name='n{p.n}')"
    dt = a.dtype
    if a.kind == "int":
        lo, hi = _corners(lambda s, t: s * t, a, b)
        lo, hi = _int_bounds(min(lo * K, 0), max(hi * K, 0), dt)
        return p.op(build, f"W(np.matmul({a.ref}, {b.ref}), {dt!r})", out, dt, lo, hi, 0.0, a.phs | b.phs,
                    "matrix_multiplication")
    if dt == "float16" and K > 4:
        return None
    mo = K * a.M * b.M
    err = K * (a.M * b.err + b.M * a.err + a.err * b.err) + C * (K + 1) * U[dt] * mo
    return p.op(build, f"np.matmul({a.ref}, {b.ref})", out, dt, -mo, mo, err, a.phs | b.phs,
                "matrix_multiplication")


def _axes_spec(p, rank):
    """(code text for axes=, normalized tuple)."""
    d = p.d
    if rank == 0 or d.coin(0.2):
        return "None", tuple(range(rank))
    if d.coin(0.3):
        ax = d.int(-rank, rank - 1)
        return repr(ax), (ax % rank,)
    k = d.int(0, rank)
    pool = list(range(rank))
    chosen = []
    for _ in range(k):
        c = d.choice(pool)
        pool.remove(c)
        chosen.append(c)
    spec = [c - rank if d.coin(0.3) else c for c in chosen]
    return repr(spec), tuple(sorted(chosen))


def op_reduce(p):
    d = p.d
    name = d.choice(["reduction_sum", "reduction_maximum", "reduction_minimum", "mean"])
    pred = {"reduction_sum": lambda n: True, "reduction_maximum": lambda n: n.kind != "bool",
            "reduction_minimum": lambda n: n.kind != "bool", "mean": lambda n: n.kind == "float"}[name]
    a = p.pick(pred)
    if a is None:
        return None
    spec, axes = _axes_spec(p, a.rank)
    n = int(np.prod([a.shape[x] for x in axes], dtype=np.int64))
    if n == 0 and name != "reduction_sum":
        return None
    out = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
    build = f"g.{name}({a.t}, axes={spec}, name='n{p.n}')" if spec != "None" or d.coin(0.5) else f"g.{name}({a.t}, name='n{p.n}')"
    np_f = {"reduction_sum": "np.sum", "reduction_maximum": "np.max", "reduction_minimum": "np.min",
            "mean": "np.mean"}[name]
    ref = f"{np_f}({a.ref}, axis={axes!r}, keepdims=True)"
    if a.kind == "bool":
        lo, hi = _int_bounds(0, n, "int32")
        return p.op(build, f"np.sum(ints({a.ref}), axis={axes!r}, keepdims=True)", out, "int32", lo, hi, 0.0,
                    a.phs, name)
    if a.kind == "int":
        if name == "reduction_sum":
            lo, hi = _int_bounds(min(a.lo * n, 0), max(a.hi * n, 0), a.dtype)
            ref = f"W(np.sum({a.ref}, axis={axes!r}, keepdims=True), {a.dtype!r})"
        else:
            lo, hi = a.lo, a.hi
            ref = f"np.asarray({ref}, dtype=object)"
        return p.op(build, ref, out, a.dtype, lo, hi, 0.0, a.phs, name)
    u = U[a.dtype]
    if name == "reduction_sum":
        if a.dtype == "float16" and n > 16:
            return None
        lo, hi = min(a.lo * n, a.lo), max(a.hi * n, a.hi)
        err = n * a.err + C * (n + 1) * u * n * a.M
    elif name == "mean":
        if n > 256:
            return None
        lo, hi, err = a.lo, a.hi, a.err + C * (n + 2) * u * a.M
    else:
        lo, hi, err = a.lo, a.hi, a.err
    return p.op(build, ref, out, a.dtype, lo, hi, err, a.phs, name)


def op_softmax(p):
    a = p.pick(lambda n: n.kind == "float" and n.rank >= 1 and n.size > 0)
    if a is None:
        return None
    ax = p.d.int(-a.rank, a.rank - 1)
    n = a.shape[ax]
    u = U[a.dtype]
    err = 0.5 * a.err + (3 + 2 * (a.hi - a.lo) + n + 3 * C) * u + ABS_FLOOR[a.dtype]
    build = f"g.softmax({a.t}, axis={ax}, name='n{p.n}')"
    return p.op(build, f"softmax_ref({a.ref}, {ax})", a.shape, a.dtype, 0.0, 1.0, err, a.phs, "softmax")


def _factor(p, n, maxrank=4):
    """A random shape with ``n`` elements."""
    d = p.d
    if n == 0:
        r = d.int(1, 3)
        s = [d.int(1, 3) for _ in range(r)]
        s[d.int(0, r - 1)] = 0
        return s
    primes, m, f = [], n, 2
    while m > 1:
        while m % f == 0:
            primes.append(f)
            m //= f
        f += 1
    rank = d.int(1 if n > 1 else 0, maxrank)
    dims = [1] * rank
    for q in primes:
        dims[d.int(0, rank - 1)] *= q
    return dims


def op_reshape(p):
    a = p.pick()
    if a is None:
        return None
    dims = _factor(p, a.size)
    shown = list(dims)
    if dims and a.size > 0 and p.d.coin(0.35):
        shown[p.d.int(0, len(dims) - 1)] = -1
    return p.op(f"g.reshape({a.t}, {shown!r}, name='n{p.n}')", f"{a.ref}.reshape({tuple(dims)!r})", tuple(dims),
                a.dtype, a.lo, a.hi, a.err, a.phs, "reshape")


def op_transpose(p):
    a = p.pick(lambda n: n.rank >= 1)
    if a is None:
        return None
    r = a.rank
    x, y = p.d.int(-r, r - 1), p.d.int(-r, r - 1)
    s = list(a.shape)
    s[x], s[y] = s[y], s[x]
    return p.op(f"g.transpose({a.t}, {x}, {y}, name='n{p.n}')", f"np.swapaxes({a.ref}, {x}, {y})", tuple(s),
                a.dtype, a.lo, a.hi, a.err, a.phs, "transpose")


def op_permute(p):
    a = p.pick(lambda n: n.rank >= 1)
    if a is None:
        return None
    r = a.rank
    pool, perm = list(range(r)), []
    while pool:
        c = p.d.choice(pool)
        pool.remove(c)
        perm.append(c)
    shown = [q - r if p.d.coin(0.2) else q for q in perm]
    return p.op(f"g.permute({a.t}, {shown!r}, name='n{p.n}')", f"np.transpose({a.ref}, {tuple(perm)!r})",
                tuple(a.shape[q] for q in perm), a.dtype, a.lo, a.hi, a.err, a.phs, "permute")


def op_slice(p):
    d = p.d
    a = p.pick(lambda n: n.rank >= 1)
    if a is None:
        return None
    r = a.rank
    dim = d.int(0, r - 1)
    size = a.shape[dim]
    start = d.int(0, max(size - 1, 0))
    length = d.int(0 if (p.allow_zero or size == 0) else min(1, size - start), size - start)
    shown_start = start - size if (size and d.coin(0.3)) else start
    shown_dim = dim - r if d.coin(0.3) else dim
    idx = ", ".join([":"] * dim + [f"{start}:{start + length}"])
    s = list(a.shape)
    s[dim] = length
    return p.op(f"g.slice({a.t}, {shown_dim}, {shown_start}, {length}, name='n{p.n}')", f"{a.ref}[{idx}]",
                tuple(s), a.dtype, a.lo, a.hi, a.err, a.phs, "slice")


def op_concat(p):
    d = p.d
    a = p.pick(lambda n: n.rank >= 1)
    if a is None:
        return None
    r = a.rank
    dim = d.int(0, r - 1)
    parts = [a]
    for _ in range(d.int(1, 2)):
        s = list(a.shape)
        s[dim] = d.int(1, 3)
        same = p.pick(lambda n: n.dtype == a.dtype and n.rank == r and all(
            n.shape[i] == a.shape[i] for i in range(r) if i != dim))
        parts.append(same if (same is not None and d.coin(0.4)) else p.leaf(tuple(s), a.dtype))
    out = list(a.shape)
    out[dim] = sum(x.shape[dim] for x in parts)
    shown = dim - r if d.coin(0.3) else dim
    lo, hi = min(x.lo for x in parts), max(x.hi for x in parts)
    ts = ", ".join(x.t for x in parts)
    rs = ", ".join(x.ref for x in parts)
    phs = frozenset().union(*[x.phs for x in parts])
    return p.op(f"g.concat([{ts}], {shown}, name='n{p.n}')", f"np.concatenate([{rs}], axis={dim})", tuple(out),
                a.dtype, lo, hi, max(x.err for x in parts), phs, "concat")


def op_broadcast(p):
    d = p.d
    a = p.pick()
    if a is None:
        return None
    s = [d.int(2, 3) if (x == 1 and d.coin(0.6)) else x for x in a.shape]
    while len(s) < 4 and d.coin(0.4):
        s.insert(0, d.int(1, 3))
    return p.op(f"g.broadcast({a.t}, {s!r}, name='n{p.n}')", f"np.broadcast_to({a.ref}, {tuple(s)!r}).copy()",
                tuple(s), a.dtype, a.lo, a.hi, a.err, a.phs, "broadcast")


def op_expand(p):
    d = p.d
    a = p.pick(lambda n: n.rank <= 3)
    if a is None:
        return None
    k = d.int(1, 2)
    r = a.rank + k
    pool, axes = list(range(r)), []
    for _ in range(k):
        c = d.choice(pool)
        pool.remove(c)
        axes.append(c - r if d.coin(0.3) else c)
    spec = repr(axes[0]) if (k == 1 and d.coin(0.5)) else repr(axes)
    out = list(a.shape)
    for q in sorted(x % r for x in axes):
        out.insert(q, 1)
    return p.op(f"g.expand_dims({a.t}, {spec}, name='n{p.n}')", f"{a.ref}.reshape({tuple(out)!r})", tuple(out),
                a.dtype, a.lo, a.hi, a.err, a.phs, "expand_dims")


def op_squeeze(p):
    d = p.d
    a = p.pick(lambda n: 1 in n.shape)
    if a is None:
        return None
    ones = [i for i, s in enumerate(a.shape) if s == 1]
    if d.coin(0.3) and not p.dynamic:  # with dynamic dims, axes=None is tested in test_reliability
        spec, drop = "None", ones
    else:
        drop = [q for q in ones if d.coin(0.6)] or [ones[0]]
        shown = [q - a.rank if d.coin(0.3) else q for q in drop]
        spec = repr(shown[0]) if (len(shown) == 1 and d.coin(0.5)) else repr(shown)
    out = tuple(s for i, s in enumerate(a.shape) if i not in drop)
    build = f"g.squeeze({a.t}, name='n{p.n}')" if spec == "None" else f"g.squeeze({a.t}, {spec}, name='n{p.n}')"
    return p.op(build, f"{a.ref}.reshape({out!r})", out, a.dtype, a.lo, a.hi, a.err, a.phs, "squeeze")


def op_identity(p):
    a = p.pick()
    if a is None:
        return None
    return p.op(f"g.identity({a.t}, name='n{p.n}')", f"{a.ref}.copy()", a.shape, a.dtype, a.lo, a.hi, a.err,
                a.phs, "identity")


def op_stop_gradient(p):
    a = p.pick()
    if a is None:
        return None
    return p.op(f"g.stop_gradient({a.t}, name='n{p.n}')", f"{a.ref}.copy()", a.shape, a.dtype, a.lo, a.hi, a.err,
                a.phs, "stop_gradient")


def op_slice_gradient(p):
    """slice_gradient(dy, input_shape, ...): zeros of input_shape with dy where slice read."""
    d = p.d
    a = p.pick(lambda n: n.rank >= 1)
    if a is None:
        return None
    dim = d.int(0, a.rank - 1)
    start = d.int(0, 3)
    full = list(a.shape)
    full[dim] = a.shape[dim] + start + d.int(0, 2)
    shown_start = start - full[dim] if (full[dim] and d.coin(0.3)) else start
    idx = ", ".join([":"] * dim + [f"{start}:{start + a.shape[dim]}"])
    ref = f"_z = np.zeros({tuple(full)!r}, dtype=object if {a.kind!r} == 'int' else None if {a.kind!r} == 'float' else bool)"
    p.emit(ref)
    p.emit(f"_z[{idx}] = {a.ref}")
    zero_lo, zero_hi = min(a.lo, 0), max(a.hi, 0)
    return p.op(f"g.slice_gradient({a.t}, {full!r}, {dim}, {shown_start}, {a.shape[dim]}, name='n{p.n}')", "_z",
                tuple(full), a.dtype, zero_lo, zero_hi, a.err, a.phs, "slice_gradient")


def op_softmax_cross_entropy(p):
    d = p.d
    a = p.pick(lambda n: n.kind == "float" and n.rank >= 1 and n.size > 0)
    if a is None:
        return None
    labels = _float_source(p, a.shape, a.dtype)
    ax = d.int(-a.rank, a.rank - 1)
    n = a.shape[ax]
    red = d.choice(["none", "sum", "mean"])
    rows = a.size // n
    u = U[a.dtype]
    span = (a.hi - a.lo) + math.log(n) + 1.0
    e_lsm = 2 * a.err + (3 + 2 * (a.hi - a.lo) + n + 3 * C) * u * span + ABS_FLOOR[a.dtype]
    row_err = n * (labels.M * e_lsm + span * labels.err) + C * (n + 1) * u * n * labels.M * span
    mo = n * labels.M * span
    if red == "none":
        out, err = tuple(1 if i == ax % a.rank else s for i, s in enumerate(a.shape)), row_err
        ref = f"-np.sum({labels.ref} * _lsm, axis={ax}, keepdims=True)"
    else:
        out = tuple(1 for _ in a.shape)
        k = rows if red == "sum" else 1
        err, mo = k * row_err + C * (rows + 1) * u * k * mo, k * mo
        ref = (f"np.{'sum' if red == 'sum' else 'mean'}(-np.sum({labels.ref} * _lsm, axis={ax}, keepdims=True))"
               f".reshape({out!r})")
    if a.dtype == "float16" and n * rows > 16:
        return None
    p.emit(f"_lsm = {a.ref} - np.max({a.ref}, axis={ax}, keepdims=True)")
    p.emit(f"_lsm = _lsm - np.log(np.sum(np.exp(_lsm), axis={ax}, keepdims=True))")
    return p.op(f"g.softmax_cross_entropy({a.t}, {labels.t}, axis={ax}, reduction={red!r}, name='n{p.n}')", ref,
                out, a.dtype, -mo, mo, err, a.phs | labels.phs, "softmax_cross_entropy")


def op_cast(p):
    d = p.d
    a = p.pick()
    if a is None:
        return None
    to = d.choice(FLOATS + INTS + ("bool",))
    spell = d.choice([repr(to), f"mg.{to}", f"np.{to if to != 'bool' else 'bool_'}"])
    build = f"g.cast({a.t}, {spell}, name='n{p.n}')"
    k = a.kind
    tk = "float" if to in FLOATS else "bool" if to == "bool" else "int"
    lo, hi, err = a.lo, a.hi, a.err
    if k == "float" and tk == "float":
        if to == "float16" and a.M > 6e4:
            return None
        err = a.err + (U["float16"] * a.M if (to == "float16" and a.dtype != "float16") else 0.0)
        ref = f"{a.ref}.copy()"
    elif k == "float" and tk == "int":
        info = np.iinfo(to)
        if a.err or a.lo <= info.min - 1 or a.hi >= info.max + 1 or (to in UNSIGNED and a.lo < 0):
            return None
        ref = f"to_int({a.ref})"
        lo, hi, err = math.trunc(a.lo), math.trunc(a.hi), 0.0
    elif tk == "bool":
        if k == "float" and a.err:
            return None
        ref = f"np.asarray({a.ref} != 0, dtype=bool)"
        lo, hi, err = 0, 1, 0.0
    elif k in ("int", "bool") and tk == "float":
        lim = 2048 if to == "float16" else 2 ** 24
        if a.M > lim:
            return None
        ref = f"ints({a.ref}).astype(np.float64)"
        err = 0.0
    else:  # int/bool -> int
        ref = f"W(ints({a.ref}), {to!r})"
        lo, hi = _int_bounds(a.lo, a.hi, to)
        if to in UNSIGNED and lo < 0:
            lo, hi = _int_bounds(-1, 1 << 70, to)
    return p.op(build, ref, a.shape, to, lo, hi, err, a.phs, "cast")


def op_assign(p):
    """``assign(v, expr)`` as a target operation; the check reads the variable afterwards."""
    d = p.d
    done = {a[0] for a in getattr(p, "_assigned", [])}
    v = p.pick(lambda n: n.leaf == "variable" and n.i not in done, recent=False)
    if v is None:
        return None
    x = p.pick(lambda n: n.leaf == "" and n.shape == v.shape and n.dtype == v.dtype)
    if x is None:
        if v.kind == "bool":
            x = p.op(f"g.not_equal({v.t}, True, name='n{p.n}')", f"~{v.ref}", v.shape, "bool", 0, 1, 0.0,
                     v.phs, "not_equal")
        elif v.kind == "int":
            x = _int_unary(p, v, "negative") if d.coin(0.5) else op_binary_fixed(p, v)
        else:
            x = _float_unary(p, v, d.choice(["tanh", "negative", "square"]))
        if x is None:
            return None
    k = p.assigns
    p.assigns += 1
    p.emit(f"a{k} = g.assign({v.t}, {x.t}, name='as{k}')")
    p.emit(f"OPS.append(a{k}); A.append(({v.i}, {x.i}))")
    p._assigned = getattr(p, "_assigned", []) + [(v.i, x.i)]
    p.ops_used.append("assign")
    if d.coin(0.4):  # a read ordered after the assign by a control dependency sees the new value
        i = p.fresh()
        p.emit(f"with g.control_dependencies([a{k}]):\n    t{i} = g.read({v.t}, name='r{i}')")
        p.emit(f"R{i} = {x.ref}")
        node = Node(i, v.shape, v.dtype, x.lo, x.hi, x.err, x.phs)
        p._register(node)
        p.ops_used.append("read")
    return x


def op_binary_fixed(p, v):
    """v + 1 (wrapping) for an integer variable."""
    return p.op(f"{v.t} + 1", f"W({v.ref} + 1, {v.dtype!r})", v.shape, v.dtype, *_int_bounds(v.lo + 1, v.hi + 1, v.dtype),
                0.0, v.phs, "addition")


OP_TABLE = [  # (generator, weight)
    (op_unary, 3.0), (op_binary, 3.0), (lambda p: op_binary(p, scalar=True), 1.0), (op_compare, 1.0),
    (op_select, 1.0), (op_matmul, 1.5), (op_reduce, 1.5), (op_softmax, 0.7), (op_reshape, 1.0),
    (op_transpose, 0.7), (op_permute, 0.7), (op_slice, 1.0), (op_concat, 0.7), (op_broadcast, 0.7),
    (op_expand, 0.5), (op_squeeze, 0.5), (op_identity, 0.3), (op_cast, 1.0), (op_stop_gradient, 0.2),
    (op_slice_gradient, 0.4), (op_softmax_cross_entropy, 0.5),
]
EXTRA_OPS: list = []  # (generator, weight) added by op families that exist (see conv_strategies)


def _weighted(d, table):
    if hasattr(d, "weighted"):
        return d.weighted(table)
    total = sum(w for _, w in table)
    x = d.int(0, 9999) * total / 10000.0
    for f, w in table:
        x -= w
        if x < 0:
            return f
    return table[-1][0]


DTYPE_WEIGHTS = [("float32", 10), ("float16", 3), ("int32", 3), ("int8", 2), ("uint8", 2), ("int64", 1),
                 ("int16", 1), ("uint16", 1), ("uint32", 1), ("uint64", 1), ("bool", 1)]


# ------------------------------------------------------------ convolution family (independent refs)
# Written from MPSGRAPH.md §2-§6, not from minigraph's kernels: §3 geometry, grouped convolution as a
# sum over kernel taps of strided slices of the zero-padded input, data gradients as the adjoint
# scatter, pooling as window gathers with validity masks.
def geom(size, k, s, d, style, pb, pa, ceil=False):
    """(pad_before, pad_after, out) per MPSGRAPH.md §3, or None when the output would be empty."""
    K = (k - 1) * d + 1
    style = int(style)
    if style in (2, 4):  # TF_SAME (extra pad at the end), ONNX_SAME_LOWER (extra at the beginning)
        out = -(-size // s)
        T = max((out - 1) * s + K - size, 0)
        small, big = T // 2, T - T // 2
        return (small, big, out) if style == 2 else (big, small, out)
    if style == 1:
        pb = pa = 0
    span = size + pb + pa - K
    if span < 0:
        return None
    if ceil:
        out = -(-span // s) + 1
        if (out - 1) * s >= size + pb:  # the last window must start inside the input or the pad before it
            out -= 1
    else:
        out = span // s + 1
    return pb, pa, out


def _tap_slices(k, s, d, out):
    import itertools
    for idx in itertools.product(*[range(x) for x in k]):
        yield idx, tuple(slice(i * dd, i * dd + (o - 1) * ss + 1, ss) for i, dd, ss, o in zip(idx, d, s, out))


def conv_nd(x, w, groups, s, d, pads, out):
    """Grouped cross-correlation: x [N, Cin, *S], w [Cout, Cin/G, *k] -> [N, Cout, *out]."""
    N, cin = x.shape[:2]
    cout, cg = w.shape[:2]
    G, og = groups, cout // groups
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    y = np.zeros((N, cout) + tuple(out))
    for idx, sl in _tap_slices(w.shape[2:], s, d, out):
        pg = xp[(slice(None), slice(None)) + sl].reshape((N, G, cg) + tuple(out))
        wg = w[(slice(None), slice(None)) + idx].reshape(G, og, cg)
        y += np.einsum("ngc...,goc->ngo...", pg, wg).reshape((N, cout) + tuple(out))
    return y


def conv_nd_data_grad(dy, w, groups, s, d, pads, in_sizes):
    """Adjoint of conv_nd in x: scatter dy * w back through every tap, then drop the padding."""
    N, cout = dy.shape[:2]
    out = dy.shape[2:]
    cg = w.shape[1]
    G, og = groups, cout // groups
    full = tuple(n + pb + pa for n, (pb, pa) in zip(in_sizes, pads))
    dxp = np.zeros((N, G * cg) + full)
    dyg = dy.reshape((N, G, og) + tuple(out))
    for idx, sl in _tap_slices(w.shape[2:], s, d, out):
        wg = w[(slice(None), slice(None)) + idx].reshape(G, og, cg)
        dxp[(slice(None), slice(None)) + sl] += np.einsum("ngo...,goc->ngc...", dyg, wg).reshape(
            (N, G * cg) + tuple(out))
    crop = tuple(slice(pb, pb + n) for n, (pb, pa) in zip(in_sizes, pads))
    return dxp[(slice(None), slice(None)) + crop]


def conv_nd_weights_grad(dy, x, groups, s, d, pads, k):
    N, cin = x.shape[:2]
    cout = dy.shape[1]
    out = dy.shape[2:]
    G, cg, og = groups, cin // groups, cout // groups
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    dyg = dy.reshape((N, G, og) + tuple(out))
    dw = np.zeros((cout, cg) + tuple(k))
    for idx, sl in _tap_slices(k, s, d, out):
        pg = xp[(slice(None), slice(None)) + sl].reshape((N, G, cg) + tuple(out))
        dw[(slice(None), slice(None)) + idx] = np.einsum("ngos,ngcs->goc", dyg.reshape(N, G, og, -1),
                                                         pg.reshape(N, G, cg, -1)).reshape(cout, cg)
    return dw


def _nchw(x, layout):
    return x.transpose(0, 3, 1, 2) if layout == "NHWC" else x


def _from_nchw(y, layout):
    return y.transpose(0, 2, 3, 1) if layout == "NHWC" else y


def _oihw(w, layout):
    return w.transpose(3, 2, 0, 1) if layout == "HWIO" else w


def _from_oihw(w, layout):
    return w.transpose(2, 3, 1, 0) if layout == "HWIO" else w


def _geo2(h, w, kh, kw, strides, dil, style, pads, ceil=False):
    sy, sx = strides
    dy_, dx_ = dil
    pt, pb, pl, pr = pads
    gy = geom(h, kh, sy, dy_, style, pt, pb, ceil)
    gx = geom(w, kw, sx, dx_, style, pl, pr, ceil)
    return gy, gx


def conv2d_ref(x, w, groups=1, strides=(1, 1), dil=(1, 1), style=0, pads=(0, 0, 0, 0), layout="NCHW",
               wlayout="OIHW"):
    """convolution_2d per MPSGRAPH.md §6 (strides and dilations as (y, x); pads (top, bottom, left, right))."""
    xc, wc = _nchw(x, layout), _oihw(w, wlayout)
    (pt, pb, oh), (pl, pr, ow) = _geo2(xc.shape[2], xc.shape[3], wc.shape[2], wc.shape[3], strides, dil, style, pads)
    return _from_nchw(conv_nd(xc, wc, groups, strides, dil, [(pt, pb), (pl, pr)], (oh, ow)), layout)


def conv2d_data_grad_ref(dy, w, out_shape, groups=1, strides=(1, 1), dil=(1, 1), style=0, pads=(0, 0, 0, 0),
                         layout="NCHW", wlayout="OIHW"):
    dyc, wc = _nchw(dy, layout), _oihw(w, wlayout)
    n, c, h, wd = out_shape if layout == "NCHW" else (out_shape[0], out_shape[3], out_shape[1], out_shape[2])
    (pt, pb, _), (pl, pr, _) = _geo2(h, wd, wc.shape[2], wc.shape[3], strides, dil, style, pads)
    return _from_nchw(conv_nd_data_grad(dyc, wc, groups, strides, dil, [(pt, pb), (pl, pr)], (h, wd)), layout)


def conv2d_weights_grad_ref(dy, x, w_shape, groups=1, strides=(1, 1), dil=(1, 1), style=0, pads=(0, 0, 0, 0),
                            layout="NCHW", wlayout="OIHW"):
    dyc, xc = _nchw(dy, layout), _nchw(x, layout)
    o, i, kh, kw = w_shape if wlayout == "OIHW" else (w_shape[3], w_shape[2], w_shape[0], w_shape[1])
    (pt, pb, _), (pl, pr, _) = _geo2(xc.shape[2], xc.shape[3], kh, kw, strides, dil, style, pads)
    return _from_oihw(conv_nd_weights_grad(dyc, xc, groups, strides, dil, [(pt, pb), (pl, pr)], (kh, kw)), wlayout)


def _dw_as_grouped(w_oihw):
    """Depthwise OIHW weights [M, C, kH, kW] as grouped weights [C*M, 1, kH, kW]: o = c*M + m (§2.4)."""
    m, c = w_oihw.shape[:2]
    return w_oihw.transpose(1, 0, 2, 3).reshape((c * m, 1) + w_oihw.shape[2:])


def depthwise2d_ref(x, w, **kw):
    layout, wlayout = kw.get("layout", "NCHW"), kw.get("wlayout", "OIHW")
    wc = _dw_as_grouped(_oihw(w, wlayout))
    c = _nchw(x, layout).shape[1]
    return conv2d_ref(x, wc, groups=c, strides=kw.get("strides", (1, 1)), dil=kw.get("dil", (1, 1)),
                      style=kw.get("style", 0), pads=kw.get("pads", (0, 0, 0, 0)), layout=layout, wlayout="OIHW")


def depthwise2d_data_grad_ref(dy, w, out_shape, **kw):
    layout, wlayout = kw.get("layout", "NCHW"), kw.get("wlayout", "OIHW")
    wc = _dw_as_grouped(_oihw(w, wlayout))
    c = out_shape[1] if layout == "NCHW" else out_shape[3]
    return conv2d_data_grad_ref(dy, wc, out_shape, groups=c, strides=kw.get("strides", (1, 1)),
                                dil=kw.get("dil", (1, 1)), style=kw.get("style", 0),
                                pads=kw.get("pads", (0, 0, 0, 0)), layout=layout, wlayout="OIHW")


def depthwise2d_weights_grad_ref(dy, x, w_shape, **kw):
    layout, wlayout = kw.get("layout", "NCHW"), kw.get("wlayout", "OIHW")
    m, c, kh, kwd = w_shape if wlayout == "OIHW" else (w_shape[3], w_shape[2], w_shape[0], w_shape[1])
    g = conv2d_weights_grad_ref(dy, x, (c * m, 1, kh, kwd), groups=c, strides=kw.get("strides", (1, 1)),
                                dil=kw.get("dil", (1, 1)), style=kw.get("style", 0),
                                pads=kw.get("pads", (0, 0, 0, 0)), layout=layout, wlayout="OIHW")
    return _from_oihw(g.reshape(c, m, kh, kwd).transpose(1, 0, 2, 3), wlayout)


def _to_ncdhw(x, cdi):
    r = x.ndim
    x = np.moveaxis(x, r + cdi, r - 4)
    return x.reshape((-1,) + x.shape[-4:]), x.shape[:-4]


def _from_ncdhw(y, batch, cdi):
    y = y.reshape(tuple(batch) + y.shape[1:])
    r = y.ndim
    return np.moveaxis(y, r - 4, r + cdi)


def _geo3(sizes, k, strides, dil, style, pv):
    return [geom(sizes[a], k[a], strides[a], dil[a], style, pv[2 * a], pv[2 * a + 1]) for a in range(3)]


def depthwise3d_ref(x, w, strides=(1, 1, 1), dil=(1, 1, 1), pv=(0,) * 6, style=0, cdi=-4):
    """depthwise_convolution_3d per MPSGRAPH.md §5: output channel o reads input channel o // M, filter o."""
    xc, batch = _to_ncdhw(x, cdi)
    wc = np.moveaxis(w, 4 + cdi, 0)  # [C*M, kD, kH, kW]
    c = xc.shape[1]
    geo = _geo3(xc.shape[2:], wc.shape[1:], strides, dil, style, pv)
    y = conv_nd(xc, wc[:, None], c, strides, dil, [(a, b) for a, b, _ in geo], [o for _, _, o in geo])
    return _from_ncdhw(y, batch, cdi)


def depthwise3d_data_grad_ref(dy, w, out_shape, strides=(1, 1, 1), dil=(1, 1, 1), pv=(0,) * 6, style=0, cdi=-4):
    dyc, batch = _to_ncdhw(dy, cdi)
    wc = np.moveaxis(w, 4 + cdi, 0)
    r = len(out_shape)
    ca = r + cdi
    c = out_shape[ca]
    sizes = [out_shape[a] for a in range(r - 4, r) if a != ca]
    geo = _geo3(sizes, wc.shape[1:], strides, dil, style, pv)
    dx = conv_nd_data_grad(dyc, wc[:, None], c, strides, dil, [(a, b) for a, b, _ in geo], sizes)
    return _from_ncdhw(dx, batch, cdi)


def depthwise3d_weights_grad_ref(dy, x, w_shape, strides=(1, 1, 1), dil=(1, 1, 1), pv=(0,) * 6, style=0, cdi=-4):
    dyc, _ = _to_ncdhw(dy, cdi)
    xc, _ = _to_ncdhw(x, cdi)
    k = [w_shape[a] for a in range(4) if a != 4 + cdi]
    geo = _geo3(xc.shape[2:], k, strides, dil, style, pv)
    dw = conv_nd_weights_grad(dyc, xc, xc.shape[1], strides, dil, [(a, b) for a, b, _ in geo], k)
    return np.moveaxis(dw[:, 0], 0, 4 + cdi)


def _pool_index(out, s, pb, k, d):
    return np.arange(out)[:, None] * s - pb + np.arange(k)[None, :] * d  # [out, k]


def _pool_parts(x, k, strides, dil, style, pads, ceil):
    n, c, h, w = x.shape
    (pt, pb, oh), (pl, pr, ow) = _geo2(h, w, k[0], k[1], strides, dil, style, pads, ceil)
    ih = _pool_index(oh, strides[0], pt, k[0], dil[0])
    iw = _pool_index(ow, strides[1], pl, k[1], dil[1])
    vh, vw = (ih >= 0) & (ih < h), (iw >= 0) & (iw < w)
    inpad_h, inpad_w = (ih >= -pt) & (ih < h + pb), (iw >= -pl) & (iw < w + pr)
    gath = x[:, :, np.clip(ih, 0, h - 1)[:, :, None, None], np.clip(iw, 0, w - 1)[None, None, :, :]]
    mask = vh[:, :, None, None] & vw[None, None, :, :]  # [OH, kh, OW, kw]
    padmask = inpad_h[:, :, None, None] & inpad_w[None, None, :, :]
    return gath, mask, padmask, ih, iw


def pool2d_ref(x, kind, k, strides=(1, 1), dil=(1, 1), style=0, pads=(0, 0, 0, 0), ceil=False,
               include_pad=False, layout="NCHW"):
    """max/avg pooling: max over input taps; avg divides by input taps (or padded-extent taps)."""
    xc = _nchw(x, layout)
    g, mask, padmask, _, _ = _pool_parts(xc, k, strides, dil, style, pads, ceil)
    if kind == "max":
        y = np.where(mask, g, -np.inf).max(axis=(3, 5))
    else:
        cnt = (padmask if include_pad else mask).sum(axis=(1, 3))
        y = np.where(mask, g, 0.0).sum(axis=(3, 5)) / cnt
    return _from_nchw(y, layout)


def pool2d_grad_ref(dy, x, kind, k, strides=(1, 1), dil=(1, 1), style=0, pads=(0, 0, 0, 0), ceil=False,
                    include_pad=False, layout="NCHW"):
    """avg: dy / count to every input tap; max: dy to the first maximal input tap (kernel row, then column)."""
    xc, dyc = _nchw(x, layout), _nchw(dy, layout)
    n, c, h, w = xc.shape
    g, mask, padmask, ih, iw = _pool_parts(xc, k, strides, dil, style, pads, ceil)
    OH, kh = ih.shape
    OW, kw = iw.shape
    dx = np.zeros((n, c, h, w))
    if kind == "max":
        vals = np.where(mask, g, -np.inf).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, OH, OW, kh * kw)
        first = np.argmax(vals, axis=-1)  # first maximal tap in row-major (i, j) order
        ti, tj = first // kw, first % kw
        rows = ih[np.arange(OH)[:, None], ti]  # [n, c, OH, OW] via broadcasting on the last axes
        cols = iw[np.arange(OW)[None, :], tj]
        nn, cc = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
        np.add.at(dx, (nn[:, :, None, None], cc[:, :, None, None], rows, cols), dyc)
    else:
        cnt = (padmask if include_pad else mask).sum(axis=(1, 3))
        share = dyc / cnt
        for i in range(kh):
            for j in range(kw):
                m = mask[:, i, :, j]
                oh_, ow_ = np.nonzero(m)
                np.add.at(dx, (slice(None), slice(None), ih[oh_, i], iw[ow_, j]), share[:, :, oh_, ow_])
    return _from_nchw(dx, layout)


_STYLE_NAMES = ["EXPLICIT", "TF_VALID", "TF_SAME", "EXPLICIT_OFFSET", "ONNX_SAME_LOWER"]


def _spell_enum(d, enum_name, member, value):
    return d.choice([f"mg.{enum_name}.{member}", repr(member), repr(member.lower()), str(value)])


def _float_source(p, shape, dtype):
    """An existing float node of exactly this shape (exact values), or a new leaf."""
    n = p.pick(lambda n: n.shape == tuple(shape) and n.dtype == dtype)
    return n if (n is not None and p.d.coin(0.5)) else p.leaf(tuple(shape), dtype)


def _conv_dtype(p):
    src = p.pick(lambda n: n.kind == "float" and n.rank == 4 and n.size > 0)
    dt = src.dtype if src is not None else ("float16" if p.d.coin(0.15) else "float32")
    return src, dt


def _desc2d(p, cls, strides, dil, style, pads, layout, wlayout, extra=""):
    d = p.d
    k = p.fresh()
    fields = [f"stride_in_x={strides[1]}", f"stride_in_y={strides[0]}", f"dilation_rate_in_x={dil[1]}",
              f"dilation_rate_in_y={dil[0]}", f"padding_top={pads[0]}", f"padding_bottom={pads[1]}",
              f"padding_left={pads[2]}", f"padding_right={pads[3]}",
              f"padding_style={_spell_enum(d, 'PaddingStyle', _STYLE_NAMES[style], style)}",
              f"data_layout={_spell_enum(d, 'TensorNamedDataLayout', layout, 0 if layout == 'NCHW' else 1)}",
              f"weights_layout={_spell_enum(d, 'TensorNamedDataLayout', wlayout, 2 if wlayout == 'OIHW' else 3)}"]
    p.emit(f"d{k} = mg.{cls}({', '.join(fields)}{extra})")
    return f"d{k}"


def _scribble(p, desc):
    """Edit the descriptor after the op is built: ops keep a copy, so results must not change."""
    if p.d.coin(0.3):
        p.emit(f"{desc}.stride_in_x = 3; {desc}.padding_left = 5; {desc}.padding_style = mg.PaddingStyle.TF_VALID")


def _rand_geometry2d(p, h, w, kh, kw, ceil=False, max_tries=8):
    d = p.d
    for _ in range(max_tries):
        strides = (d.int(1, 3), d.int(1, 3))
        dil = (d.int(1, 2), d.int(1, 2))
        style = d.choice([0, 0, 1, 2, 4])
        pads = tuple(d.int(0, 2) for _ in range(4))
        gy, gx = _geo2(h, w, kh, kw, strides, dil, style, pads, ceil)
        if gy is not None and gx is not None and gy[2] >= 1 and gx[2] >= 1:
            return strides, dil, style, pads, gy, gx
    return None


def _conv_err(K, mx, mw, ex, ew, dt):
    return K * (mx * ew + mw * ex + ex * ew) + C * (K + 1) * U[dt] * K * mx * mw


def _kwtxt(strides, dil, style, pads, layout, wlayout):
    return f"strides={strides}, dil={dil}, style={style}, pads={pads}, layout={layout!r}, wlayout={wlayout!r}"


def op_depthwise2d(p):
    """One of the three depthwise 2D ops with a random descriptor."""
    d = p.d
    src, dt = _conv_dtype(p)
    layout, wlayout = d.choice(["NCHW", "NHWC"]), d.choice(["OIHW", "HWIO"])
    if src is not None and d.coin(0.6):
        n, c, h, w = src.shape if layout == "NCHW" else (src.shape[0], src.shape[3], src.shape[1], src.shape[2])
    else:
        src = None
        n, c, h, w = d.int(1, 2), d.int(1, 3), d.int(1, 6), d.int(1, 6)
    m, kh, kw = d.int(1, 2), d.int(1, 3), d.int(1, 3)
    geo = _rand_geometry2d(p, h, w, kh, kw)
    if geo is None:
        return None
    strides, dil, style, pads, (pt, pb, oh), (pl, pr, ow) = geo
    xs = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
    ws = (m, c, kh, kw) if wlayout == "OIHW" else (kh, kw, c, m)
    ys = (n, c * m, oh, ow) if layout == "NCHW" else (n, oh, ow, c * m)
    which = d.choice(["forward", "forward", "data", "weights"])
    desc = _desc2d(p, "DepthwiseConvolution2DOpDescriptor", strides, dil, style, pads, layout, wlayout)
    kwt = _kwtxt(strides, dil, style, pads, layout, wlayout)
    nm = f"n{p.n}"
    if which == "forward":
        x = src if src is not None else p.leaf(xs, dt)
        wt = p.leaf(ws, dt)
        K = kh * kw
        node = p.op(f"g.depthwise_convolution_2d({x.t}, {wt.t}, {desc}, name={nm!r})",
                    f"depthwise2d_ref({x.ref}, {wt.ref}, {kwt})", ys, dt, -K * x.M * wt.M, K * x.M * wt.M,
                    _conv_err(K, x.M, wt.M, x.err, wt.err, dt), x.phs | wt.phs, "depthwise_convolution_2d")
    elif which == "data":
        dy = _float_source(p, ys, dt)
        wt = p.leaf(ws, dt)
        K = m * kh * kw
        node = p.op(f"g.depthwise_convolution_2d_data_gradient({dy.t}, {wt.t}, {list(xs)!r}, {desc}, name={nm!r})",
                    f"depthwise2d_data_grad_ref({dy.ref}, {wt.ref}, {xs!r}, {kwt})", xs, dt, -K * dy.M * wt.M,
                    K * dy.M * wt.M, _conv_err(K, dy.M, wt.M, dy.err, wt.err, dt), dy.phs | wt.phs,
                    "depthwise_convolution_2d_data_gradient")
    else:
        dy = p.leaf(ys, dt)
        x = src if src is not None else p.leaf(xs, dt)
        K = n * oh * ow
        node = p.op(f"g.depthwise_convolution_2d_weights_gradient({dy.t}, {x.t}, {list(ws)!r}, {desc}, name={nm!r})",
                    f"depthwise2d_weights_grad_ref({dy.ref}, {x.ref}, {ws!r}, {kwt})", ws, dt, -K * dy.M * x.M,
                    K * dy.M * x.M, _conv_err(K, dy.M, x.M, dy.err, x.err, dt), dy.phs | x.phs,
                    "depthwise_convolution_2d_weights_gradient")
    if node is not None:
        _scribble(p, desc)
    return node


def op_conv2d(p):
    d = p.d
    src, dt = _conv_dtype(p)
    layout, wlayout = d.choice(["NCHW", "NHWC"]), d.choice(["OIHW", "HWIO"])
    G = d.int(1, 3)
    if src is not None and d.coin(0.6):
        n, cin, h, w = src.shape if layout == "NCHW" else (src.shape[0], src.shape[3], src.shape[1], src.shape[2])
        if cin % G:
            G = 1
    else:
        src = None
        n, cin, h, w = d.int(1, 2), G * d.int(1, 2), d.int(1, 6), d.int(1, 6)
    cout = G * d.int(1, 2)
    kh, kw = d.int(1, 3), d.int(1, 3)
    geo = _rand_geometry2d(p, h, w, kh, kw)
    if geo is None:
        return None
    strides, dil, style, pads, (pt, pb, oh), (pl, pr, ow) = geo
    cg = cin // G
    xs = (n, cin, h, w) if layout == "NCHW" else (n, h, w, cin)
    ws = (cout, cg, kh, kw) if wlayout == "OIHW" else (kh, kw, cg, cout)
    ys = (n, cout, oh, ow) if layout == "NCHW" else (n, oh, ow, cout)
    desc = _desc2d(p, "Convolution2DOpDescriptor", strides, dil, style, pads, layout, wlayout, f", groups={G}")
    kwt = f"groups={G}, " + _kwtxt(strides, dil, style, pads, layout, wlayout)
    nm = f"n{p.n}"
    which = d.choice(["forward", "forward", "data", "weights"])
    if which == "forward":
        x = src if src is not None else p.leaf(xs, dt)
        wt = p.leaf(ws, dt)
        K = cg * kh * kw
        node = p.op(f"g.convolution_2d({x.t}, {wt.t}, {desc}, name={nm!r})", f"conv2d_ref({x.ref}, {wt.ref}, {kwt})",
                    ys, dt, -K * x.M * wt.M, K * x.M * wt.M, _conv_err(K, x.M, wt.M, x.err, wt.err, dt),
                    x.phs | wt.phs, "convolution_2d")
    elif which == "data":
        dy = _float_source(p, ys, dt)
        wt = p.leaf(ws, dt)
        K = (cout // G) * kh * kw
        node = p.op(f"g.convolution_2d_data_gradient({dy.t}, {wt.t}, {list(xs)!r}, {desc}, name={nm!r})",
                    f"conv2d_data_grad_ref({dy.ref}, {wt.ref}, {xs!r}, {kwt})", xs, dt, -K * dy.M * wt.M,
                    K * dy.M * wt.M, _conv_err(K, dy.M, wt.M, dy.err, wt.err, dt), dy.phs | wt.phs,
                    "convolution_2d_data_gradient")
    else:
        dy = p.leaf(ys, dt)
        x = src if src is not None else p.leaf(xs, dt)
        K = n * oh * ow
        node = p.op(f"g.convolution_2d_weights_gradient({dy.t}, {x.t}, {list(ws)!r}, {desc}, name={nm!r})",
                    f"conv2d_weights_grad_ref({dy.ref}, {x.ref}, {ws!r}, {kwt})", ws, dt, -K * dy.M * x.M,
                    K * dy.M * x.M, _conv_err(K, dy.M, x.M, dy.err, x.err, dt), dy.phs | x.phs,
                    "convolution_2d_weights_gradient")
    if node is not None:
        _scribble(p, desc)
    return node


def op_depthwise3d(p):
    d = p.d
    dt = "float16" if d.coin(0.1) else "float32"
    cdi = d.choice([-4, -3, -2, -1])
    nb = d.int(0, 2)
    batch = tuple(d.int(1, 2) for _ in range(nb))
    c, m = d.int(1, 3), d.int(1, 2)
    sizes = [d.int(1, 4) for _ in range(3)]
    k = [d.int(1, 3) for _ in range(3)]
    for _ in range(8):
        strides = tuple(d.int(1, 2) for _ in range(3))
        dil = tuple(d.int(1, 2) for _ in range(3))
        style = d.choice([0, 0, 1, 2, 4])
        pv = tuple(d.int(0, 2) for _ in range(6))
        geo = _geo3(sizes, k, strides, dil, style, pv)
        if all(gg is not None and gg[2] >= 1 for gg in geo):
            break
    else:
        return None
    out = [o for _, _, o in geo]

    def place(ch, sp):
        last = list(sp)
        last.insert(4 + cdi, ch)
        return last

    xs = batch + tuple(place(c, sizes))
    ws = tuple(place(c * m, k))
    ys = batch + tuple(place(c * m, out))
    kk = p.fresh()
    style_txt = _spell_enum(d, "PaddingStyle", _STYLE_NAMES[style], style)
    p.emit(f"d{kk} = mg.DepthwiseConvolution3DOpDescriptor(strides={list(strides)}, dilation_rates={list(dil)}, "
           f"padding_values={list(pv)}, padding_style={style_txt}, channel_dimension_index={cdi})")
    desc = f"d{kk}"
    kwt = f"strides={strides}, dil={dil}, pv={pv}, style={style}, cdi={cdi}"
    nm = f"n{p.n}"
    which = d.choice(["forward", "forward", "data", "weights"])
    K3 = k[0] * k[1] * k[2]
    if which == "forward":
        x = _float_source(p, xs, dt)
        wt = p.leaf(ws, dt)
        node = p.op(f"g.depthwise_convolution_3d({x.t}, {wt.t}, {desc}, name={nm!r})",
                    f"depthwise3d_ref({x.ref}, {wt.ref}, {kwt})", ys, dt, -K3 * x.M * wt.M, K3 * x.M * wt.M,
                    _conv_err(K3, x.M, wt.M, x.err, wt.err, dt), x.phs | wt.phs, "depthwise_convolution_3d")
    elif which == "data":
        dy = _float_source(p, ys, dt)
        wt = p.leaf(ws, dt)
        node = p.op(f"g.depthwise_convolution_3d_data_gradient({dy.t}, {wt.t}, {list(xs)!r}, {desc}, name={nm!r})",
                    f"depthwise3d_data_grad_ref({dy.ref}, {wt.ref}, {xs!r}, {kwt})", xs, dt, -m * K3 * dy.M * wt.M,
                    m * K3 * dy.M * wt.M, _conv_err(m * K3, dy.M, wt.M, dy.err, wt.err, dt), dy.phs | wt.phs,
                    "depthwise_convolution_3d_data_gradient")
    else:
        dy = p.leaf(ys, dt)
        x = _float_source(p, xs, dt)
        K = int(np.prod(batch, dtype=np.int64)) * out[0] * out[1] * out[2]
        node = p.op(f"g.depthwise_convolution_3d_weights_gradient({dy.t}, {x.t}, {list(ws)!r}, {desc}, name={nm!r})",
                    f"depthwise3d_weights_grad_ref({dy.ref}, {x.ref}, {ws!r}, {kwt})", ws, dt, -K * dy.M * x.M,
                    K * dy.M * x.M, _conv_err(K, dy.M, x.M, dy.err, x.err, dt), dy.phs | x.phs,
                    "depthwise_convolution_3d_weights_gradient")
    return node


def op_pool(p):
    d = p.d
    src, dt = _conv_dtype(p)
    layout = d.choice(["NCHW", "NHWC"])
    if src is not None and d.coin(0.6):
        n, c, h, w = src.shape if layout == "NCHW" else (src.shape[0], src.shape[3], src.shape[1], src.shape[2])
    else:
        src = None
        n, c, h, w = d.int(1, 2), d.int(1, 3), d.int(1, 6), d.int(1, 6)
    kh, kw = d.int(1, 3), d.int(1, 3)
    ceil = d.coin(0.3)
    include = d.coin(0.4)
    kind = d.choice(["max", "avg"])
    geo = _rand_geometry2d(p, h, w, kh, kw, ceil)
    if geo is None:
        return None
    strides, dil, style, pads, (pt, pb, oh), (pl, pr, ow) = geo
    # windows that hold no input element are rejected at build time (except avg with include_pad)
    ih, iw = _pool_index(oh, strides[0], pt, kh, dil[0]), _pool_index(ow, strides[1], pl, kw, dil[1])
    empty = not (((ih >= 0) & (ih < h)).any(axis=1).all() and ((iw >= 0) & (iw < w)).any(axis=1).all())
    if empty and not (kind == "avg" and include):
        return None
    if empty:
        cnt_h = ((ih >= -pt) & (ih < h + pb)).sum(axis=1)
        cnt_w = ((iw >= -pl) & (iw < w + pr)).sum(axis=1)
        if (cnt_h == 0).any() or (cnt_w == 0).any():
            return None
    xs = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
    ys = (n, c, oh, ow) if layout == "NCHW" else (n, oh, ow, c)
    kk = p.fresh()
    style_txt = _spell_enum(d, "PaddingStyle", _STYLE_NAMES[style], style)
    lay_txt = _spell_enum(d, "TensorNamedDataLayout", layout, 0 if layout == "NCHW" else 1)
    p.emit(f"d{kk} = mg.Pooling2DOpDescriptor(kernel_width={kw}, kernel_height={kh}, stride_in_x={strides[1]}, "
           f"stride_in_y={strides[0]}, dilation_rate_in_x={dil[1]}, dilation_rate_in_y={dil[0]}, "
           f"padding_top={pads[0]}, padding_bottom={pads[1]}, padding_left={pads[2]}, padding_right={pads[3]}, "
           f"padding_style={style_txt}, data_layout={lay_txt}, ceil_mode={ceil}, include_zero_pad_to_average={include})")
    desc = f"d{kk}"
    kwt = (f"{kind!r}, ({kh}, {kw}), strides={strides}, dil={dil}, style={style}, pads={pads}, ceil={ceil}, "
           f"include_pad={include}, layout={layout!r}")
    nm = f"n{p.n}"
    u = U[dt]
    taps = kh * kw
    if d.coin(0.6):
        x = src if src is not None else p.leaf(xs, dt)
        err = x.err if kind == "max" else x.err + C * (taps + 2) * u * x.M
        lo, hi = (x.lo, x.hi) if not (kind == "avg" and include) else (min(x.lo, 0.0), max(x.hi, 0.0))
        node = p.op(f"g.{kind}_pooling_2d({x.t}, {desc}, name={nm!r})", f"pool2d_ref({x.ref}, {kwt})", ys, dt,
                    lo, hi, err, x.phs, f"{kind}_pooling_2d")
    else:
        x = src if (src is not None and (kind == "avg" or src.err == 0)) else p.leaf(xs, dt)
        dy = p.leaf(ys, dt)
        over = (-(-kh * dil[0] // strides[0])) * (-(-kw * dil[1] // strides[1])) * taps
        M = over * dy.M
        node = p.op(f"g.{kind}_pooling_2d_gradient({dy.t}, {x.t}, {desc}, name={nm!r})",
                    f"pool2d_grad_ref({dy.ref}, {x.ref}, {kwt})", xs, dt, -M, M,
                    over * dy.err + C * (over + 2) * u * M, dy.phs | x.phs, f"{kind}_pooling_2d_gradient")
    if node is not None:
        _scribble(p, desc)
    return node


def _register_conv_family():
    table = [("depthwise_convolution_2d", op_depthwise2d, 1.5), ("convolution_2d", op_conv2d, 1.2),
             ("depthwise_convolution_3d", op_depthwise3d, 0.8), ("max_pooling_2d", op_pool, 1.0)]
    for opname, gen, w in table:
        if opname in OPS and all(gen is not f for f, _ in EXTRA_OPS):
            EXTRA_OPS.append((gen, w))


def gen_valid(d, max_ops=8, table=None):
    """A random valid program. Returns the Program (``.source()`` is the reproducer)."""
    dynamic = d.coin(0.3)
    p = Program(d, dynamic=dynamic, allow_zero=d.coin(0.08))
    dtype = _weighted(d, [(k, w) for k, w in DTYPE_WEIGHTS])
    p.leaf(p.rand_shape(), dtype)
    _register_conv_family()
    table = table or (OP_TABLE + EXTRA_OPS)
    for _ in range(d.int(1, max_ops)):
        for _attempt in range(6):
            f = _weighted(d, table)
            if f(p) is not None:
                break
    if d.coin(0.25) and any(n.leaf == "variable" for n in p.nodes):
        op_assign(p)
    ops_nodes = [n for n in p.nodes if n.leaf == ""] or p.nodes
    targets = [ops_nodes[-1].i]
    for _ in range(d.int(0, 2)):
        targets.append(d.choice(p.nodes).i)
    if d.coin(0.1):
        targets.append(targets[0])  # the same tensor twice
    phs = set()
    for n in p.nodes:
        if n.i in targets:
            phs |= n.phs
    for v, x in getattr(p, "_assigned", []):
        phs |= next(n for n in p.nodes if n.i == x).phs
    mode = d.choice(["run", "run", "compile", "compile_list", "compile_dynamic"])
    p.emit(f"T[:] = {targets!r}")
    p.emit(f"F[:] = {sorted(phs)!r}")
    p.emit(f"MODE = {mode!r}")
    if mode in ("run", "compile") and d.coin(0.1) and all(n.size for n in p.nodes if n.i in phs):
        p.emit("LISTS = True")  # (nested lists cannot express an empty trailing dimension)
    return p


# ------------------------------------------------------------------------------ running a case
def _compatible(decl, shape):
    return len(decl) == len(shape) and all(a == -1 or a == b for a, b in zip(decl, shape))


def _exec(src):
    ns = {"__name__": "__fuzz_case__"}
    exec(compile(src, "<fuzz case>", "exec"), ns)
    return ns


def run_mode(ns, backend):
    g, N, mode = ns["g"], ns["N"], ns["MODE"]
    targets = [N[i][0] for i in ns["T"]]
    feeds = {N[i][0]: ns["P"][i] for i in ns["F"]}
    if ns.get("LISTS"):  # lists and numbers take the placeholder's dtype
        feeds = {t: a.tolist() for t, a in feeds.items()}
    ops = list(ns["OPS"])
    if mode == "run":
        res = g.run(feeds, targets, ops, backend=backend)
        return [res[t] for t in targets], None
    if mode == "compile":
        exe = g.compile({N[i][0]: mg.ShapedType(ns["P"][i].shape, ns["P"][i].dtype) for i in ns["F"]}, targets, ops,  # noqa: E501
                        backend=backend)
        return exe.run(feeds), exe
    if mode == "compile_list":
        exe = g.compile(feeds, targets, ops, backend=backend)
        return exe.run([feeds[t] for t in exe.feed_tensors]), exe
    exe = g.compile({t: mg.ShapedType(t.shape, t.dtype) for t in feeds}, targets, ops, backend=backend)
    return exe.run(feeds), exe


DECLINED = (mg.KernelMissingError, mg.BackendUnavailableError)


def compare(out, ref, err, shape, dtype, what):
    """Raise FuzzFailure unless ``out`` matches the reference within ``err``."""
    if not isinstance(out, np.ndarray):
        raise FuzzFailure(f"{what}: result is {type(out).__name__}, not an ndarray")
    if out.dtype != np.dtype(dtype):
        raise FuzzFailure(f"{what}: dtype {out.dtype}, expected {dtype}")
    if out.shape != tuple(shape):
        raise FuzzFailure(f"{what}: shape {out.shape}, expected {tuple(shape)}")
    ref = np.asarray(ref)
    if np.dtype(dtype).kind == "f":
        o = out.astype(np.float64)
        r = np.asarray(ref, dtype=np.float64)
        if not np.all(np.isfinite(o)):
            raise FuzzFailure(f"{what}: non-finite values {o[~np.isfinite(o)][:5]} where the reference is finite")
        bad = np.abs(o - r) > err * 1.0001 + 1e-300
        if np.any(bad):
            k = np.argwhere(bad)[0]
            raise FuzzFailure(f"{what}: |out - ref| = {np.abs(o - r).max():.3g} exceeds the bound {err:.3g} "
                              f"(first at {tuple(k)}: out {o[tuple(k)]!r}, ref {r[tuple(k)]!r})")
    else:
        want = as_dtype_array(ref, dtype)
        if not np.array_equal(out, want):
            bad = np.argwhere(out != want)
            k = tuple(bad[0]) if len(bad) else ()
            raise FuzzFailure(f"{what}: {dtype} result differs from the reference at {k}: "
                              f"{out[k]!r} != {want[k]!r}")


def check_case(ns, backends=("numpy",), stats=None, src=None):
    """Run a valid case on every backend and check every property; raise FuzzFailure on the first break."""
    stats = stats if stats is not None else {}
    _check_build_time(ns)
    for bi, backend in enumerate(backends):
        if bi:
            ns = _exec(src)
        _check_backend(ns, backend, stats)
    return stats


def _check_build_time(ns):
    """Every node's build-time dtype and shape agree with its reference values."""
    for i, (t, R, err, shape, dtype) in ns["N"].items():
        if t.dtype.name != dtype:
            raise FuzzFailure(f"build-time dtype of t{i} is {t.dtype.name}, expected {dtype}")
        ok = _compatible(t.shape, shape) if ns["DYNAMIC"] else tuple(t.shape) == tuple(shape)
        if not ok:
            raise FuzzFailure(f"build-time shape of t{i} is {t.shape}, but its values have shape {shape}")


def _check_backend(ns, backend, stats):
    """Run the case on one backend and check its results, feeds, aliasing and variables."""
    N, g = ns["N"], ns["g"]
    feeds_before = {i: np.array(a, copy=True) for i, a in ns["P"].items()}
    vars_before = {i: g.value_of(N[i][0]) for i in N if N[i][0].operation.type == "variable"}
    ran = _run_valid(ns, backend, stats)
    if ran is None:
        return
    outs, exe = ran
    stats["compared"] = stats.get("compared", 0) + 1
    stats.setdefault("by_backend", {}).setdefault(backend, 0)
    stats["by_backend"][backend] += 1
    _check_targets(ns, backend, outs)
    _check_feeds_unchanged(ns, backend, feeds_before)
    _check_no_aliasing(ns, backend, outs)
    _check_variables(ns, backend, vars_before)
    if backend == "numpy" and not ns["A"]:
        _rerun_checks(ns, backend, outs, exe)


def _run_valid(ns, backend, stats):
    """``run_mode``'s (outs, exe); None (counted in stats) when a backend other than numpy declined."""
    try:
        outs, exe = run_mode(ns, backend)
        return outs, exe
    except DECLINED as e:
        if backend == "numpy":
            raise FuzzFailure(f"numpy declined a valid graph: {type(e).__name__}: {e}") from e
        stats.setdefault("declined", {}).setdefault(backend, 0)
        stats["declined"][backend] += 1
        return None
    except mg.MiniGraphError as e:
        raise FuzzFailure(f"{backend}: a valid graph raised {type(e).__name__}: {e}") from e
    except Exception as e:
        raise FuzzFailure(f"{backend}: a valid graph raised non-MiniGraphError {type(e).__name__}: {e}") from e


def _check_targets(ns, backend, outs):
    """One result per target, each matching its reference."""
    N = ns["N"]
    if len(outs) != len(ns["T"]):
        raise FuzzFailure(f"{backend}: {len(outs)} results for {len(ns['T'])} targets")
    for k, (i, out) in enumerate(zip(ns["T"], outs)):
        t, R, err, shape, dtype = N[i]
        compare(out, R, err, shape, dtype, f"{backend}: target {k} (t{i}, {t.operation.type} {t.name!r})")


def _check_feeds_unchanged(ns, backend, feeds_before):
    for i, a in ns["P"].items():
        if not np.array_equal(a, feeds_before[i], equal_nan=a.dtype.kind == "f"):
            raise FuzzFailure(f"{backend}: feed x{i} was mutated")


def _check_no_aliasing(ns, backend, outs):
    """No result shares memory with a feed, nor (except in run mode) with another result."""
    for j, o in enumerate(outs):
        for i in ns["F"]:
            if o.size and np.shares_memory(o, ns["P"][i]):
                raise FuzzFailure(f"{backend}: result {j} shares memory with feed x{i}")
        for k in range(j):
            if o.size and np.shares_memory(o, outs[k]) and ns["MODE"] != "run":
                raise FuzzFailure(f"{backend}: results {k} and {j} share memory")


def _check_variables(ns, backend, vars_before):
    """Assigned variables hold their assigned values; the others are unchanged."""
    N, g = ns["N"], ns["g"]
    assigned = {v for v, _ in ns["A"]}
    for v, x in ns["A"]:
        _, Rx, errx, shape, dtype = N[x]
        compare(g.value_of(N[v][0]), Rx, errx, shape, dtype, f"{backend}: variable v{v} after assign")
    for i, before in vars_before.items():
        if i not in assigned and not np.array_equal(g.value_of(N[i][0]), before):
            raise FuzzFailure(f"{backend}: variable v{i} changed without an assign")


def _rerun_checks(ns, backend, outs, exe):
    """Scribble over the results and run again: bit-identical (determinism) and not aliased."""
    first = [np.array(o, copy=True) for o in outs]
    for o in outs:
        if o.size and o.flags.writeable:
            o[...] = True if o.dtype == np.bool_ else 7
    again, _ = run_mode(ns, backend) if exe is None else (exe.run({ns["N"][i][0]: ns["P"][i] for i in ns["F"]}), None)
    for k, (a, b) in enumerate(zip(first, again)):
        if a.tobytes() != b.tobytes() or a.shape != b.shape:
            raise FuzzFailure(f"{backend}: second run differs from the first for target {k} "
                              "(nondeterminism, or a result aliased to an internal buffer)")


# ----------------------------------------------------------------------------- invalid calls
def expect(fn, must=(), classes=(mg.MiniGraphError,), registry=None):
    """Call ``fn``; it must raise a MiniGraphError of ``classes`` whose message contains ``must``."""
    try:
        fn()
    except mg.MiniGraphError as e:
        msg = str(e)
        missing = [m for m in must if m not in msg]
        if missing:
            raise FuzzFailure(f"{type(e).__name__} message does not name {missing}: {msg!r}") from e
        if not isinstance(e, classes):
            raise FuzzFailure(f"expected {[c.__name__ for c in classes]}, got {type(e).__name__}: {msg}") from e
        if registry is not None:
            registry.append(type(e).__name__)
        return type(e).__name__
    except Exception as e:
        raise FuzzFailure(f"non-MiniGraphError escaped: {type(e).__name__}: {e}") from e
    raise FuzzFailure("no error was raised for an invalid call")


def check_invalid(ns, stats=None):
    """After an invalid call: feeds unchanged, every variable at its previous value."""
    stats = stats if stats is not None else {}
    for i, before in ns["P0"].items():
        a = ns["P"][i]
        if not np.array_equal(a, before, equal_nan=a.dtype.kind == "f"):
            raise FuzzFailure(f"feed x{i} was mutated by a failing call")
    g = ns["g"]
    for i, before in ns["V0"].items():
        if not np.array_equal(g.value_of(ns["N"][i][0]), before):
            raise FuzzFailure(f"variable v{i} changed although the run failed")
    for cls in ns["ERRS"]:
        stats.setdefault("errors", {}).setdefault(cls, 0)
        stats["errors"][cls] += 1
    return stats


def _name(d):
    return f"q{d.int(100, 999)}"


def _expect(p, call, must, classes="mg.MiniGraphError", kind=""):
    p.emit(f"expect(lambda: {call}, {list(must)!r}, ({classes},), ERRS)  # {kind}")
    p.kind = kind


def _bad_int(d):
    return d.choice(["None", "'a'", "1.5", "[0]", "True"])


def inv_binary_shape(p, d):
    a = p.pick(lambda n: n.kind != "bool" and any(s >= 2 for s in n.shape))
    if a is None:
        return False
    dims = [i for i, s in enumerate(a.shape) if s >= 2]
    k = d.choice(dims)
    s = list(a.shape)
    s[k] += d.int(1, 2)
    b = p.leaf(tuple(s), a.dtype, kind=d.choice(["placeholder", "constant"]))
    op = d.choice(["addition", "subtraction", "multiplication", "maximum", "minimum", "equal", "less_than"])
    nm = _name(d)
    _expect(p, f"g.{op}({a.t}, {b.t}, name={nm!r})", [op, nm], "mg.ShapeError", "binary shape mismatch")
    return True


def inv_binary_dtype(p, d):
    a = p.pick()
    other = d.choice([x for x in FLOATS + INTS + ("bool",) if x != a.dtype])
    b = p.leaf(a.shape, other, kind=d.choice(["placeholder", "constant"]))
    ops = ["addition", "subtraction", "multiplication", "maximum", "minimum", "equal", "less_than"]
    op = d.choice(ops + ["matrix_multiplication"] if a.rank >= 2 and a.shape[-1] == a.shape[-2] else ops)
    nm = _name(d)
    _expect(p, f"g.{op}({a.t}, {b.t}, name={nm!r})", [op, nm, a.dtype, other], "mg.DTypeError", "dtype mismatch")
    return True


def inv_float_only(p, d):
    a = p.pick(lambda n: n.kind != "float")
    if a is None:
        a = p.leaf(p.rand_shape(), d.choice(INTS + ("bool",)))
    nm = _name(d)
    op = d.choice(["exponent", "logarithm", "square_root", "reciprocal", "tanh", "sigmoid", "sin", "cos",
                   "mean" if a.dtype == "bool" else "exponent", "softmax", "division", "power"])  # mean of ints is valid
    if op in ("division", "power"):
        call = f"g.{op}({a.t}, {a.t}, name={nm!r})"
    elif op == "softmax":
        if a.rank == 0:
            return False
        call = f"g.softmax({a.t}, axis=0, name={nm!r})"
    else:
        call = f"g.{op}({a.t}, name={nm!r})"
    _expect(p, call, [op, nm, a.dtype], "mg.DTypeError", "float-only op on " + a.dtype)
    return True


def inv_bool_arith(p, d):
    a = p.pick(lambda n: n.kind == "bool")
    if a is None:
        a = p.leaf(p.rand_shape(), "bool")
    nm = _name(d)
    op = d.choice(["addition", "negative", "absolute", "square", "relu", "reduction_maximum", "maximum"])
    call = f"g.{op}({a.t}, {a.t}, name={nm!r})" if op in ("addition", "maximum") else f"g.{op}({a.t}, name={nm!r})"
    _expect(p, call, [op, nm, "bool"], "mg.DTypeError", "arithmetic on bool")
    return True


def inv_axes(p, d):
    a = p.pick(lambda n: n.kind == "float") or p.leaf(p.rand_shape(), "float32")
    r = a.rank
    op = d.choice(["reduction_sum", "reduction_maximum", "reduction_minimum", "mean"])
    bad = d.choice([repr(r), repr(-r - 1), repr([0, r]) if r else "[0]", repr([r + 3]), "1.5", "'ab'",
                    "[None]", "[[0]]", repr([-r - 1, 0] if r else [1])])  # a repeated axis is valid (a set)
    nm = _name(d)
    _expect(p, f"g.{op}({a.t}, axes={bad}, name={nm!r})", [op, nm], "mg.ShapeError, mg.DTypeError", "bad axes")
    return True


def inv_softmax_axis(p, d):
    a = p.pick(lambda n: n.kind == "float") or p.leaf(p.rand_shape(), "float32")
    r = a.rank
    bad = d.choice([repr(r), repr(-r - 1), "1.5", "'x'", "[0, 0]", "[0]", "None"])
    nm = _name(d)
    _expect(p, f"g.softmax({a.t}, axis={bad}, name={nm!r})", ["softmax", nm], "mg.ShapeError, mg.DTypeError",
            "bad softmax axis")
    return True


def inv_matmul(p, d):
    nm = _name(d)
    how = d.choice(["rank", "inner", "batch"])
    dt = d.choice(["float32", "int32"])
    if how == "rank":
        a = p.leaf((d.int(1, 4),) if d.coin() else (), dt)
        b = p.leaf((d.int(1, 3), d.int(1, 3)), dt)
    elif how == "inner":
        k = d.int(1, 4)
        a = p.leaf((d.int(1, 3), k), dt)
        b = p.leaf((k + d.int(1, 2), d.int(1, 3)), dt)
    else:
        a = p.leaf((2, 3, 4), dt)
        b = p.leaf((3, 4, 2), dt)
    x, y = (a, b) if d.coin() else (b, a) if how == "rank" else (a, b)
    _expect(p, f"g.matrix_multiplication({x.t}, {y.t}, name={nm!r})", ["matrix_multiplication", nm],
            "mg.ShapeError", "matmul " + how)
    return True


def inv_reshape(p, d):
    a = p.pick() or p.leaf(p.rand_shape(), "float32")
    n = a.size
    bad = d.choice([repr([n + 1]), repr([-1, -1]), repr([-2, n]) if n else "[-2]", "[1.5]", "'ab'", "None",
                    f"{a.t}", repr([n, 0, -1]) if n else "[-1, 0]", "[[2]]"])
    nm = _name(d)
    _expect(p, f"g.reshape({a.t}, {bad}, name={nm!r})", ["reshape", nm], "mg.ShapeError, mg.DTypeError",
            "bad reshape")
    return True


def inv_transpose(p, d):
    a = p.pick(lambda n: n.rank >= 1) or p.leaf((2, 3), "float32")
    r = a.rank
    x = d.choice([repr(r), repr(-r - 1), _bad_int(d)])
    y = d.int(0, r - 1)
    args = (x, y) if d.coin() else (y, x)
    nm = _name(d)
    _expect(p, f"g.transpose({a.t}, {args[0]}, {args[1]}, name={nm!r})", ["transpose", nm],
            "mg.ShapeError, mg.DTypeError", "bad transpose")
    return True


def inv_permute(p, d):
    a = p.pick(lambda n: n.rank >= 1) or p.leaf((2, 3), "float32")
    r = a.rank
    bad = d.choice([repr(list(range(r + 1))), repr([0] * r) if r > 1 else "[1]", repr(list(range(r))[:-1]),
                    repr([r] + list(range(1, r))), "None", "[0.5]" if r == 1 else "'ab'"])
    nm = _name(d)
    _expect(p, f"g.permute({a.t}, {bad}, name={nm!r})", ["permute", nm], "mg.ShapeError, mg.DTypeError",
            "bad permutation")
    return True


def inv_slice(p, d):
    a = p.pick(lambda n: n.rank >= 1) or p.leaf((3, 2), "float32")
    r = a.rank
    dim = d.int(0, r - 1)
    size = a.shape[dim]
    case = d.choice(["start", "length", "neglen", "dim", "type", "negstart"])
    args = {"start": (dim, size + d.int(0, 2), 1), "length": (dim, 0, size + d.int(1, 3)),
            "neglen": (dim, 0, -d.int(1, 3)), "dim": (d.choice([r, -r - 1]), 0, 1),
            "type": (dim, _bad_int(d), 1) if d.coin() else (_bad_int(d), 0, 1),
            "negstart": (dim, -size - d.int(1, 3), 1)}[case]
    nm = _name(d)
    _expect(p, f"g.slice({a.t}, {args[0]}, {args[1]}, {args[2]}, name={nm!r})", ["slice", nm],
            "mg.ShapeError, mg.DTypeError", "bad slice " + case)
    return True


def inv_concat(p, d):
    a = p.pick(lambda n: n.rank >= 1) or p.leaf((2, 3), "float32")
    r = a.rank
    case = d.choice(["empty", "rank", "dtype", "shape", "dim", "junk"])
    nm = _name(d)
    if case == "empty":
        call = f"g.concat([], 0, name={nm!r})"
    elif case == "rank":
        b = p.leaf(a.shape + (1,), a.dtype, kind="constant")
        call = f"g.concat([{a.t}, {b.t}], 0, name={nm!r})"
    elif case == "dtype":
        b = p.leaf(a.shape, "int32" if a.dtype != "int32" else "float32", kind="constant")
        call = f"g.concat([{a.t}, {b.t}], 0, name={nm!r})"
    elif case == "shape":
        if r < 2:
            return False
        s = list(a.shape)
        s[1] += 1
        b = p.leaf(tuple(s), a.dtype, kind="constant")
        call = f"g.concat([{a.t}, {b.t}], 0, name={nm!r})"
    elif case == "dim":
        call = f"g.concat([{a.t}, {a.t}], {d.choice([r, -r - 1])}, name={nm!r})"
    else:
        call = f"g.concat([{a.t}, 'junk'], 0, name={nm!r})"
    _expect(p, call, ["concat", nm], "mg.ShapeError, mg.DTypeError", "bad concat " + case)
    return True


def inv_broadcast(p, d):
    a = p.pick(lambda n: any(s >= 2 for s in n.shape))
    if a is None:
        return False
    k = next(i for i, s in enumerate(a.shape) if s >= 2)
    case = d.choice(["size", "rank", "type", "neg"])
    s = list(a.shape)
    if case == "size":
        s[k] += 1
        bad = repr(s)
    elif case == "rank":
        bad = repr(s[1:])
    elif case == "type":
        bad = d.choice(["[1.5]", "'ab'", "None", "[[1]]"])
    else:
        s[k] = -3
        bad = repr(s)
    nm = _name(d)
    _expect(p, f"g.broadcast({a.t}, {bad}, name={nm!r})", ["broadcast", nm], "mg.ShapeError, mg.DTypeError",
            "bad broadcast " + case)
    return True


def inv_expand_squeeze(p, d):
    a = p.pick() or p.leaf((2, 3), "float32")
    r = a.rank
    nm = _name(d)
    if d.coin() or not any(s != 1 for s in a.shape):
        bad = d.choice([repr(r + 2), repr(-r - 3), "[0, 0]", "1.5", "None"])
        _expect(p, f"g.expand_dims({a.t}, {bad}, name={nm!r})", ["expand_dims", nm], "mg.ShapeError, mg.DTypeError",
                "bad expand_dims")
    else:
        k = next(i for i, s in enumerate(a.shape) if s != 1)
        bad = d.choice([repr(k), repr([k]), repr(r + 1), "'a'"])
        _expect(p, f"g.squeeze({a.t}, {bad}, name={nm!r})", ["squeeze", nm], "mg.ShapeError, mg.DTypeError",
                "bad squeeze")
    return True


def inv_cast(p, d):
    a = p.pick() or p.leaf((2,), "float32")
    bad = d.choice(["'float128'", "'complex256'", "'foo'", "np.clongdouble", "object", "3.5", "None", "str"])
    nm = _name(d)
    _expect(p, f"g.cast({a.t}, {bad}, name={nm!r})", ["cast", nm], "mg.DTypeError", "bad cast dtype")
    return True


def inv_placeholder(p, d):
    nm = _name(d)
    case = d.choice(["shape", "dtype"])
    if case == "shape":
        bad = d.choice(["[-2]", "[1.5]", "'ab'", "None", "[[1]]", "[2, None]", "[True]"])
        call = f"g.placeholder({bad}, 'float32', name={nm!r})"
        cls = "mg.ShapeError"
    else:
        bad = d.choice(["'float128'", "'foo'", "object", "np.clongdouble", "None", "str", "3"])
        call = f"g.placeholder([2], {bad}, name={nm!r})"
        cls = "mg.DTypeError"
    _expect(p, call, ["placeholder", nm], cls, "bad placeholder " + case)
    return True


def inv_constant(p, d):
    nm = _name(d)
    case = d.choice(["str", "ragged", "object", "complex", "range", "fill", "dict", "nan_int", "huge"])
    call = {"str": f"g.constant('abc', name={nm!r})",
            "ragged": f"g.constant([[1, 2], [3]], name={nm!r})",
            "object": f"g.constant(np.array([object()]), name={nm!r})",
            "complex": f"g.constant(np.clongdouble(1 + 2j), name={nm!r})",
            "range": "g.constant(%d, dtype=mg.%s, name=%r)" % (d.choice([(300, "int8"), (256, "uint8"), (-1, "uint8"),
                (-1, "uint16"), (70000, "int16"), (70000, "uint16"), (2 ** 40, "int32"), (-5, "uint32"),
                (2 ** 64, "int64"), (2 ** 64, "uint64"), (-1, "uint64")]) + (nm,)),
            "fill": f"g.constant([1.0, 2.0, 3.0], shape=[2], name={nm!r})",
            "dict": f"g.constant({{'a': 1}}, name={nm!r})",
            "nan_int": f"g.constant(float('nan'), dtype=mg.int32, name={nm!r})",
            "huge": f"g.constant(1.0, shape=[2 ** 20, 2 ** 20], name={nm!r})"}[case]
    cls = {"huge": "mg.ResourceLimitError", "fill": "mg.ShapeError"}.get(case, "mg.DTypeError, mg.ShapeError")
    _expect(p, call, ["constant", nm], cls, "bad constant " + case)
    return True


def inv_scalar_operand(p, d):
    """A Python scalar that does not fit the other operand's dtype (x + 300 with int8 x)."""
    a = p.pick(lambda n: n.kind in ("int", "bool")) or p.leaf((2,), "int8")
    if a.kind == "bool" or d.coin(0.4):  # not exactly representable: x + 0.5 must not silently add 0
        bad = d.choice([0.5, -1.25, 2.75]) if a.kind == "int" else d.choice([0.5, 2.5])
    else:
        bad = {"int8": 300, "uint8": -1 if d.coin() else 256, "int16": 40000, "uint16": -5, "int32": 2 ** 31,
               "uint32": -1, "int64": 2 ** 63, "uint64": 2 ** 64}[a.dtype]
    op = d.choice(["addition", "multiplication", "maximum", "less_than"] if a.kind == "int" else ["equal", "not_equal"])
    nm = _name(d)
    _expect(p, f"g.{op}({a.t}, {bad}, name={nm!r})", [op, nm], "mg.DTypeError", "scalar out of range or inexact")
    return True


def inv_variable_assign(p, d):
    nm = _name(d)
    case = d.choice(["value", "shape", "dtype", "target", "read"])
    if case == "value":
        call = f"g.variable({d.choice(['abc', None])!r}, name={nm!r})"
        _expect(p, call, ["variable", nm], "mg.DTypeError, mg.ShapeError", "bad variable value")
        return True
    v = p.pick(lambda n: n.leaf == "variable") or p.leaf((2, 3), "float32", kind="variable")
    if case == "shape":
        x = p.leaf(v.shape + (2,), v.dtype, kind="constant")
        call, cls = f"g.assign({v.t}, {x.t}, name={nm!r})", "mg.ShapeError"
    elif case == "dtype":
        x = p.leaf(v.shape, "int32" if v.dtype != "int32" else "float32", kind="constant")
        call, cls = f"g.assign({v.t}, {x.t}, name={nm!r})", "mg.DTypeError"
    elif case == "target":
        x = p.pick(lambda n: n.leaf != "variable") or p.leaf((2,), "float32", kind="constant")
        call, cls = f"g.assign({x.t}, {x.t}, name={nm!r})", "mg.TargetError"
    else:
        x = p.pick(lambda n: n.leaf != "variable") or p.leaf((2,), "float32", kind="constant")
        call, cls = f"g.read({x.t}, name={nm!r})", "mg.TargetError"
    op = "read" if case == "read" else "assign"
    _expect(p, call, [op, nm], cls, "bad assign " + case)
    return True


def inv_select(p, d):
    a = p.pick(lambda n: any(s >= 2 for s in n.shape))
    if a is None:
        return False
    nm = _name(d)
    if d.coin():
        s = list(a.shape)
        k = next(i for i, x in enumerate(s) if x >= 2)
        s[k] += 1
        pr = p.leaf(tuple(s), "bool", kind="constant")
        call, cls = f"g.select({pr.t}, {a.t}, {a.t}, name={nm!r})", "mg.ShapeError"
    else:
        pr = p.leaf(a.shape, "bool", kind="constant")
        b = p.leaf(a.shape, "int32" if a.dtype != "int32" else "float32", kind="constant")
        call, cls = f"g.select({pr.t}, {a.t}, {b.t}, name={nm!r})", "mg.DTypeError"
    _expect(p, call, ["select", nm], cls, "bad select")
    return True


def inv_names(p, d):
    case = d.choice(["nonstr", "lookup_op", "lookup_tensor", "ambiguous", "scope"])
    a = p.pick() or p.leaf((2,), "float32")
    if case == "nonstr":
        bad = d.choice(["123", "['x']", "b'x'"])
        _expect(p, f"g.identity({a.t}, name={bad})", ["identity"], "mg.MiniGraphError", "non-string name")
    elif case == "lookup_op":
        _expect(p, "g.operation('no_such_op')", ["no_such_op"], "mg.NameLookupError", "unknown op name")
    elif case == "lookup_tensor":
        _expect(p, "g.tensor('no_such:3')", ["no_such"], "mg.NameLookupError", "unknown tensor name")
    elif case == "ambiguous":
        p.emit(f"g.identity({a.t}, name='dup'); g.identity({a.t}, name='dup')")
        _expect(p, "g.operation('dup')", ["dup"], "mg.NameLookupError", "ambiguous name")
    else:
        bad = d.choice(["''", "5", "None", "'/'"])
        p.emit("def _scope(s):\n    with g.name_scope(s):\n        pass")
        _expect(p, f"_scope({bad})", [], "mg.MiniGraphError", "bad name scope")
    return True


def _target_for(p, d):
    """A target node and the feeds it needs."""
    x = p.pick(lambda n: n.leaf == "")
    if x is None:
        a = p.pick()
        x = _float_unary(p, a, "identity") if a.kind == "float" else _int_unary(p, a, "identity") \
            if a.kind == "int" else op_identity(p)
    return x, {i: f"P[{i}]" for i in sorted(x.phs)}


def _feeds_txt(fd):
    return "{" + ", ".join(f"t{i}: {v}" for i, v in fd.items()) + "}"


def inv_feeds(p, d):
    """Missing, wrong-shaped, wrong-dtype, foreign, unneeded, non-placeholder or unconvertible feeds."""
    a = p.leaf(p.rand_shape(rank=d.int(1, 3)), d.choice(["float32", "int32", "float16"]), kind="placeholder")
    x = _float_unary(p, a, "negative") if a.kind == "float" else _int_unary(p, a, "negative")
    if x is None:
        return False
    fd = {i: f"P[{i}]" for i in sorted(x.phs)}
    nm = f"x{a.i}"
    case = d.choice(["missing", "shape", "dtype", "nonph", "foreign", "unneeded", "str", "ragged", "rank", "key",
                     "inexact"])
    if case == "inexact" and a.dtype != "int32":
        case = "ragged"
    classes = "mg.FeedError"
    must = [nm]
    if case == "missing":
        del fd[a.i]
    elif case == "shape":
        fd[a.i] = f"np.zeros({a.shape + (2,)!r}, {a.dtype!r})" if d.coin() else \
            f"np.ones({tuple(s + 1 for s in a.shape)!r}, {a.dtype!r})"
    elif case == "rank":
        fd[a.i] = f"np.ones((), {a.dtype!r})"
    elif case == "dtype":
        other = d.choice([t for t in ("float32", "int32", "float64", "uint8") if t != a.dtype])
        fd[a.i] = f"P[{a.i}].astype({other!r})"
    elif case == "nonph":
        fd_txt = _feeds_txt(fd)[:-1] + (", " if fd else "") + f"t{x.i}: P[{a.i}]" + "}"
        _expect(p, f"g.run({fd_txt}, [t{x.i}])", ["placeholder"], classes, "feed a non-placeholder")
        return True
    elif case == "foreign":
        p.emit(f"g2 = mg.Graph(); y2 = g2.placeholder({list(a.shape)!r}, {a.dtype!r}, name='other')")
        fd_txt = _feeds_txt(fd)[:-1] + f", y2: P[{a.i}]" + "}"
        _expect(p, f"g.run({fd_txt}, [t{x.i}])", ["other"], "mg.GraphMismatchError, mg.FeedError",
                "foreign feed")
        return True
    elif case == "unneeded":  # a feed the targets don't need is allowed, but still checked
        u = p.leaf((2,), "float32", kind="placeholder")
        fd[u.i] = d.choice(["np.ones((3,), np.float32)", "np.ones((2,), np.int32)", "'abc'"])
        must = [f"x{u.i}"]
    elif case == "str":
        fd[a.i] = "'abc'"
    elif case == "ragged":
        fd[a.i] = "[[1.0, 2.0], [3.0]]"
    elif case == "inexact":  # a list with a fraction for an int32 placeholder: not silently truncated
        fd[a.i] = f"(np.asarray(P[{a.i}], np.float64) + 0.5).tolist()"
    else:  # key is not a tensor
        fd_txt = "{" + ", ".join([f"'x{a.i}': P[{a.i}]"] + [f"t{i}: P[{i}]" for i in fd if i != a.i]) + "}"
        _expect(p, f"g.run({fd_txt}, [t{x.i}])", [], classes, "feed keyed by a string")
        return True
    via = d.choice(["run", "exe"])
    bk = d.choice(["numpy", "webgpu"]) if a.dtype in ("float32", "int32", "float16") else "numpy"
    p.emit(f"BK = {bk!r} if {bk!r} in mg.available_backends() else 'numpy'")
    if via == "run":
        call = f"g.run({_feeds_txt(fd)}, [t{x.i}], backend=BK)"
    else:
        p.emit(f"exe = g.compile({{t{a.i}: mg.ShapedType({list(a.shape)!r}, {a.dtype!r})}}, [t{x.i}], backend=BK)")
        call = f"exe.run({_feeds_txt(fd)})"
    _expect(p, call, must, classes, f"feed {case} via {via}")
    return True


def inv_exe_inputs(p, d):
    a = p.leaf(p.rand_shape(rank=d.int(1, 3)), "float32", kind="placeholder")
    x = _float_unary(p, a, "tanh")
    if x is None:
        return False
    p.emit(f"exe = g.compile({{t{a.i}: mg.ShapedType({list(a.shape)!r}, 'float32')}}, [t{x.i}])")
    case = d.choice(["count", "dynrank", "wrongkey"])
    if case == "count":
        _expect(p, f"exe.run([P[{a.i}], P[{a.i}]])", [f"x{a.i}"], "mg.FeedError", "exe list inputs count")
    elif case == "wrongkey":
        b = p.leaf((2,), "float32", kind="placeholder")
        _expect(p, f"exe.run({{t{a.i}: P[{a.i}], t{b.i}: P[{b.i}]}})", [f"x{b.i}"], "mg.FeedError",
                "exe unexpected feed")
    else:
        k = p.fresh()
        p.emit(f"t{k} = g.placeholder({[-1] * a.rank!r}, 'float32', name='x{k}'); y{k} = g.tanh(t{k})")
        p.emit(f"exe2 = g.compile({{t{k}: mg.ShapedType({[-1] * a.rank!r}, 'float32')}}, [y{k}])")
        bad = d.choice([f"np.ones({a.shape + (1,)!r}, np.float32)", f"np.ones({a.shape!r}, np.float16)"])
        _expect(p, f"exe2.run({{t{k}: {bad}}})", [f"x{k}"], "mg.FeedError", "dynamic exe, wrong rank or dtype")
    return True


def inv_targets(p, d):
    x, fd = _target_for(p, d)
    if x is None:
        return False
    case = d.choice(["int", "str", "op_as_tensor", "tensor_as_op", "foreign", "empty", "foreign_op"])
    f = _feeds_txt(fd)
    if case == "int":
        call, cls = f"g.run({f}, [5])", "mg.TargetError"
    elif case == "str":
        call, cls = f"g.run({f}, ['t{x.i}'])", "mg.TargetError"
    elif case == "op_as_tensor":
        call, cls = f"g.run({f}, [t{x.i}.operation])", "mg.TargetError"
    elif case == "tensor_as_op":
        call, cls = f"g.run({f}, [t{x.i}], [t{x.i}])", "mg.TargetError"
    elif case == "foreign":
        p.emit("g2 = mg.Graph(); c2 = g2.constant(1.0)")
        call, cls = f"g.run({f}, [c2])", "mg.GraphMismatchError, mg.TargetError"
    elif case == "foreign_op":
        p.emit("g2 = mg.Graph(); w2 = g2.variable(np.ones(2, np.float32)); as2 = g2.assign(w2, w2)")
        call, cls = f"g.run({f}, [t{x.i}], [as2])", "mg.GraphMismatchError, mg.TargetError"
    else:
        call, cls = "g.run({}, [])", "mg.TargetError"
    if d.coin(0.3) and case not in ("empty",):
        call = call.replace("g.run(", "g.compile(")
    _expect(p, call, [], cls, "bad target " + case)
    return True


def inv_foreign_input(p, d):
    p.emit("g2 = mg.Graph(); c2 = g2.constant(np.ones((2,), np.float32))")
    a = p.pick(lambda n: n.dtype == "float32") or p.leaf((2,), "float32")
    op = d.choice(["addition", "maximum", "identity", "reshape", "concat"])
    nm = _name(d)
    call = {"addition": f"g.addition({a.t}, c2, name={nm!r})", "maximum": f"g.maximum(c2, {a.t}, name={nm!r})",
            "identity": f"g.identity(c2, name={nm!r})", "reshape": f"g.reshape(c2, [2], name={nm!r})",
            "concat": f"g.concat([{a.t}, c2], 0, name={nm!r})"}[op]
    _expect(p, call, [op, nm], "mg.GraphMismatchError", "tensor of another graph")
    return True


def inv_containers(p, d):
    """Arguments of the wrong kind of container: raw TypeErrors must not escape."""
    x, fd = _target_for(p, d)
    f = _feeds_txt(fd)
    case = d.choice(["exe_int", "feeds_int", "feeds_list", "targets_int", "targets_tensor", "ops_int", "targets_str",
                     "backend_list", "feed_none", "feed_object"])
    if case == "exe_int":
        p.emit(f"exe = g.compile({f}, [t{x.i}])")
        call, cls = "exe.run(5)", "mg.FeedError"
    elif case == "feeds_int":
        call, cls = f"g.run(5, [t{x.i}])", "mg.FeedError"
    elif case == "feeds_list":
        call, cls = f"g.compile([1, 2], [t{x.i}])", "mg.FeedError"
    elif case == "targets_int":
        call, cls = f"g.run({f}, 5)", "mg.TargetError"
    elif case == "targets_tensor":
        call, cls = f"g.run({f}, t{x.i})", "mg.TargetError"
    elif case == "targets_str":
        call, cls = f"g.compile({f}, 'abc')", "mg.TargetError"
    elif case == "ops_int":
        call, cls = f"g.run({f}, [t{x.i}], 5)", "mg.TargetError"
    elif case == "backend_list":
        call, cls = f"g.run({f}, [t{x.i}], backend=['numpy'])", "mg.BackendUnavailableError"
    else:
        a = p.leaf((2,), "float32", kind="placeholder")
        y = _float_unary(p, a, "negative")
        bad = "None" if case == "feed_none" else "np.array([1, 2], dtype=object)"
        _expect(p, f"g.run({{t{a.i}: {bad}}}, [t{y.i}])", [f"x{a.i}"], "mg.FeedError", "bad container " + case)
        return True
    _expect(p, call, [], cls, "bad container " + case)
    return True


def inv_backend(p, d):
    x, fd = _target_for(p, d)
    bad = d.choice(["'nope'", "'NumPy'", "None", "3"])
    call = d.choice([f"g.run({_feeds_txt(fd)}, [t{x.i}], backend={bad})",
                     f"g.compile({_feeds_txt(fd)}, [t{x.i}], backend={bad})"])
    _expect(p, call, [], "mg.BackendUnavailableError", "unknown backend")
    return True


def inv_control_deps(p, d):
    bad = d.choice(["[5]", "['x']", "[None]"])
    p.emit("def _deps(ds):\n    with g.control_dependencies(ds):\n        pass")
    _expect(p, f"_deps({bad})", [], "mg.MiniGraphError", "bad control dependency")
    return True


def inv_huge(p, d):
    nm = _name(d)
    case = d.choice(["placeholder", "broadcast", "matmul"])
    if case == "placeholder":
        p.emit(f"h = g.placeholder([2 ** 20, 2 ** 20], 'float32', name={nm!r}); hy = g.exponent(h)")
        call = "g.compile({h: mg.ShapedType([2 ** 20, 2 ** 20], 'float32')}, [hy])"
        must = [nm, "placeholder"]
    elif case == "broadcast":
        a = p.leaf((1,), "float32", kind="constant")
        p.emit(f"h = g.broadcast({a.t}, [2 ** 18, 2 ** 18], name={nm!r})")
        call = "g.run({}, [h])"
        must = [nm, "broadcast"]
    else:
        p.emit("h1 = g.placeholder([2 ** 19, 2], 'float32', name='h1'); h2 = g.placeholder([2, 2 ** 19], 'float32', name='h2')")
        p.emit(f"hm = g.matrix_multiplication(h1, h2, name={nm!r})")
        call = "g.compile({h1: mg.ShapedType([2 ** 19, 2], 'float32'), h2: mg.ShapedType([2, 2 ** 19], 'float32')}, [hm])"
        must = [nm, "matrix_multiplication"]
    _expect(p, call, must, "mg.ResourceLimitError", "huge declared shape " + case)
    return True


def inv_late(p, d):
    """Shapes that only clash once the dynamic dims are known: fails at run, before any assignment."""
    nm = _name(d)
    n = d.int(2, 4)
    case = d.choice(["add", "matmul", "reshape", "slice", "concat", "assign"])
    if case == "assign":
        n = d.choice([2, 4])
    p.emit("la = g.placeholder([-1], 'float32', name='la'); lb = g.placeholder([-1], 'float32', name='lb')")
    p.emit("wv = g.variable(np.arange(3, dtype=np.float32), name='wv'); V0_wv = g.value_of(wv)")
    if case == "add":
        p.emit(f"ly = g.addition(la, lb, name={nm!r})")
        feeds = f"{{la: np.ones({n}, np.float32), lb: np.ones({n + 1}, np.float32)}}"
        op = "addition"
    elif case == "matmul":
        p.emit(f"ly = g.matrix_multiplication(g.reshape(la, [1, -1]), g.reshape(lb, [-1, 1]), name={nm!r})")
        feeds = f"{{la: np.ones({n}, np.float32), lb: np.ones({n + 1}, np.float32)}}"
        op = "matrix_multiplication"
    elif case == "reshape":
        p.emit(f"ly = g.reshape(g.addition(la, lb), [2, -1], name={nm!r})")
        feeds = f"{{la: np.ones({2 * n + 1}, np.float32), lb: np.ones({2 * n + 1}, np.float32)}}"
        op = "reshape"
    elif case == "slice":
        p.emit(f"ly = g.slice(g.addition(la, lb), 0, 1, {n}, name={nm!r})")
        feeds = f"{{la: np.ones({n}, np.float32), lb: np.ones({n}, np.float32)}}"
        op = "slice"
    elif case == "concat":
        p.emit(f"ly = g.concat([g.reshape(la, [1, -1]), g.reshape(lb, [1, -1])], 0, name={nm!r})")
        feeds = f"{{la: np.ones({n}, np.float32), lb: np.ones({n + 1}, np.float32)}}"
        op = "concat"
    else:
        p.emit("ly = g.addition(la, lb, name='lsum')")
        p.emit(f"las = g.assign(wv, ly, name={nm!r})")
        feeds = f"{{la: np.ones({n}, np.float32), lb: np.ones({n}, np.float32)}}"
        op = "assign"
    p.emit("wa = g.assign(wv, g.addition(wv, 1.0), name='wa')")
    p.emit(f"LF = {feeds}")
    p.emit("P.update({'la': LF[la], 'lb': LF[lb]}); P0.update({k: v.copy() for k, v in P.items()})")
    p.emit("for _v in LF.values(): _v.setflags(write=False)")
    target = "[], [las, wa]" if case == "assign" else "[ly], [wa]"
    bk = d.choice(["numpy", "webgpu"])
    p.emit(f"BK = {bk!r} if {bk!r} in mg.available_backends() else 'numpy'")
    call = d.choice([f"g.run(LF, {target}, backend=BK)",
                     f"g.compile({{la: mg.ShapedType([-1], 'float32'), lb: mg.ShapedType([-1], 'float32')}}, "
                     f"{target}, backend=BK).run(LF)"])
    _expect(p, call, [op, nm], "mg.MiniGraphError", "late failure " + case)
    p.emit("assert np.array_equal(g.value_of(wv), V0_wv), 'variable changed by a failed run'")
    return True


def _bad_desc_field(d, kind):
    """(field text, expected class) that makes a descriptor invalid."""
    if kind == "pool":
        return d.choice(["kernel_width=0", "kernel_height=-1", "stride_in_x=0", "padding_top=-1", "kernel_width=1.5",
                         "padding_style=3", "padding_style='bogus'", "data_layout='OIHW'", "stride_in_y=True"])
    if kind == "3d":
        return d.choice(["strides=[1, 1]", "dilation_rates=[1, 0, 1]", "padding_values=[0] * 5",
                         "padding_values=[0, 0, -1, 0, 0, 0]", "channel_dimension_index=0",
                         "channel_dimension_index=-5", "padding_style=3", "strides=5", "padding_style='nope'"])
    return d.choice(["stride_in_x=0", "dilation_rate_in_y=0", "padding_left=-1", "padding_style=3",
                     "padding_style='bogus'", "data_layout='OIHW'", "data_layout=mg.TensorNamedDataLayout.CHW",
                     "weights_layout='NCHW'", "stride_in_x=1.5", "stride_in_y=True"]
                    + (["groups=0"] if kind == "conv" else []))


def _fields_txt(fields):
    return ", ".join(f"{a}={b}" for a, b in fields.items())


def _x_dtype(case):
    return "int32" if case == "dtype_int" else "float32"


def _w_dtype(case):
    return "float16" if case == "dtype" else "int32" if case == "dtype_int" else "float32"


def inv_conv_family(p, d):
    """Bad descriptors, ranks, channels, dtypes, output_shape, empty outputs for the conv family."""
    fams = [f for f, op in (("dw", "depthwise_convolution_2d"), ("conv", "convolution_2d"),
                            ("3d", "depthwise_convolution_3d"), ("pool", "max_pooling_2d")) if op in OPS]
    if not fams:
        return False
    fam = d.choice(fams)
    nm = _name(d)
    k = p.fresh()
    dims = n, c, h, w = d.int(1, 2), d.int(1, 3), d.int(3, 5), d.int(3, 5)
    case = d.choice(["desc", "rank", "channels", "dtype", "empty", "dtype_int", "wrong_class"]
                    + (["data_shape", "weights_shape"] if fam != "pool" else ["grad_shape"]))
    if fam == "pool":
        return _inv_pool(p, d, k, nm, dims, case)
    if fam == "3d":
        return _inv_conv3d(p, d, k, nm, dims, case)
    return _inv_conv2d(p, d, k, nm, dims, case, fam == "conv")


# ------------------------------------------------------------- invalid pooling (max / avg)
def _inv_pool(p, d, k, nm, dims, case):
    op = f"{d.choice(['max', 'avg'])}_pooling_2d"
    xs, classes = _inv_pool_descriptor(p, d, k, dims, case)
    x = p.leaf(xs, "int32" if case in ("dtype", "dtype_int") else "float32", kind="constant")
    op, call = _inv_pool_call(p, op, k, nm, dims, case, x)
    _expect(p, call, [op, nm], classes, f"conv family: {op} {case}")
    return True


def _inv_pool_descriptor(p, d, k, dims, case):
    """Emit descriptor ``d{k}``; return the input shape and the expected error class."""
    fields = {"kernel_width": "2", "kernel_height": "2"}
    xs, classes = dims, "mg.ShapeError"
    if case == "desc":
        fields.update([_bad_desc_field(d, "pool").split("=", 1)])
        classes = "mg.DescriptorError"
    elif case == "rank":
        xs = dims[1:]
    elif case == "empty":
        fields.update(padding_top="3", padding_bottom="0", kernel_height="1", kernel_width="1")
    elif case in ("dtype", "dtype_int"):
        classes = "mg.DTypeError"
    if case == "wrong_class":
        p.emit(f"d{k} = mg.DepthwiseConvolution2DOpDescriptor()")
        classes = "mg.DescriptorError"
    else:
        p.emit(f"d{k} = mg.Pooling2DOpDescriptor(" + _fields_txt(fields) + ")")
    return xs, classes


def _inv_pool_call(p, op, k, nm, dims, case, x):
    """(op name, call text); a gradient with a bad dy for grad_shape, and for channels (pooling has no weights)."""
    n, c, h, w = dims
    if case not in ("grad_shape", "channels"):
        return op, f"g.{op}({x.t}, d{k}, name={nm!r})"
    op += "_gradient"
    dys = (n, c, h + 1, w) if case == "grad_shape" else (n, c + 1, h - 1, w - 1)
    dy = p.leaf(dys, "float32", kind="constant")
    return op, f"g.{op}({dy.t}, {x.t}, d{k}, name={nm!r})"


# ------------------------------------------------------------- invalid depthwise 3D convolution
def _inv_conv3d(p, d, k, nm, dims, case):
    n, c, h, w = dims
    op = "depthwise_convolution_3d"
    m = d.int(1, 2)
    spec = _inv_conv3d_spec(d, dims, m, case)
    if spec is None:
        return False
    xs, ws, fields, classes = spec
    desc_txt = "mg.DepthwiseConvolution3DOpDescriptor(" + _fields_txt(fields) + ")"
    if case == "wrong_class":
        desc_txt, classes = "mg.Convolution2DOpDescriptor()", "mg.DescriptorError"
    p.emit(f"d{k} = {desc_txt}")
    x = p.leaf(xs, _x_dtype(case), kind="constant")
    wt = p.leaf(ws, _w_dtype(case), kind="constant")
    op, call = _inv_conv3d_call(p, d, op, k, nm, dims, m, case, x, wt)
    _expect(p, call, [op, nm], classes, f"conv family: {op} {case}")
    return True


def _inv_conv3d_spec(d, dims, m, case):
    """(input shape, weights shape, descriptor fields, expected class); None when no bad channel count fits."""
    n, c, h, w = dims
    xs, ws = (n, c, h, h, w), (c * m, 2, 2, 2)
    fields, classes = {"strides": "[1, 1, 1]"}, "mg.ShapeError"
    if case == "desc":
        fields.update([_bad_desc_field(d, "3d").split("=", 1)])
        classes = "mg.DescriptorError"
    elif case == "rank":
        xs = (c, h, w)
    elif case == "channels":
        ws = _bad_channels_3d(c, m)
        if ws[0] % c == 0:
            return None
    elif case == "empty":
        ws = (c * m, h + 3, 2, 2)
        fields["padding_style"] = "mg.PaddingStyle.TF_VALID"
    elif case in ("dtype", "dtype_int"):
        classes = "mg.DTypeError"
    return xs, ws, fields, classes


def _bad_channels_3d(c, m):
    ws = (c * m + 1, 2, 2, 2) if c > 1 or m > 1 else (c + 1, 2, 2, 2)
    if (c * m + 1) % c == 0 and c > 1:
        ws = (c * m + 1 + (c - 1), 2, 2, 2)
    return ws


def _inv_conv3d_call(p, d, op, k, nm, dims, m, case, x, wt):
    """(op name, call text); a gradient with a bad output_shape for data_shape and weights_shape."""
    n, c, h, w = dims
    if case not in ("data_shape", "weights_shape"):
        return op, f"g.{op}({x.t}, {wt.t}, d{k}, name={nm!r})"
    dy = p.leaf((n, c * m, h - 1, h - 1, w - 1), "float32", kind="constant")
    if case == "data_shape":
        op += "_data_gradient"
        bad = d.choice([repr([n, c, h, h]), repr([n, c, h + 2, h, w]), repr([n, c, h, h, 1.5]), "'abc'"])
        return op, f"g.{op}({dy.t}, {wt.t}, {bad}, d{k}, name={nm!r})"
    op += "_weights_gradient"
    bad = d.choice([repr([c * m, 2, 2]), repr([c * m, 3, 2, 2]), repr([c * m + (c if c > 1 else 1) + 1, 2, 2, 2])
                    if c > 1 else repr([c * m, 2, 2, 4]), "[None, 2, 2, 2]"])
    return op, f"g.{op}({dy.t}, {x.t}, {bad}, d{k}, name={nm!r})"


# ------------------------------------------- invalid 2D depthwise / grouped convolution, NCHW + OIHW
def _inv_conv2d(p, d, k, nm, dims, case, conv):
    n, c, h, w = dims
    op = "convolution_2d" if conv else "depthwise_convolution_2d"
    cls = "Convolution2DOpDescriptor" if conv else "DepthwiseConvolution2DOpDescriptor"
    groups = d.int(1, 2) if conv else 1
    cin = c * groups
    m = d.int(1, 2)
    xs = (n, cin, h, w)
    ws = (m * groups, c, 2, 2) if conv else (m, c, 2, 2)
    cout = m * groups if conv else c * m
    ys = (n, cout, h - 1, w - 1)
    xs, ws, extra, classes = _inv_conv2d_spec(d, conv, groups, xs, ws, case)
    desc_txt = f"mg.{cls}({extra.lstrip(', ')})"
    if case == "wrong_class":
        desc_txt, classes = "mg.Pooling2DOpDescriptor(kernel_width=2, kernel_height=2)", "mg.DescriptorError"
    p.emit(f"d{k} = {desc_txt}")
    x = p.leaf(xs, _x_dtype(case), kind="constant")
    wt = p.leaf(ws, _w_dtype(case), kind="constant")
    op, call = _inv_conv2d_call(p, d, op, k, nm, (n, cin, h, w), ws, ys, case, x, wt)
    _expect(p, call, [op, nm], classes, f"conv family: {op} {case}")
    return True


def _inv_conv2d_spec(d, conv, groups, xs, ws, case):
    """(input shape, weights shape, descriptor arguments text, expected class) for one case."""
    n, cin, h, w = xs
    extra, classes = (f", groups={groups}" if conv else ""), "mg.ShapeError"
    if case == "desc":
        extra, classes = extra + ", " + _bad_desc_field(d, "conv" if conv else "dw"), "mg.DescriptorError"
        if conv and "groups=0" in extra:
            extra = extra.replace(f"groups={groups}, ", "")
    elif case == "rank":
        xs = (cin, h, w)
    elif case == "channels":
        ws = (ws[0], ws[1] + 1, 2, 2)
    elif case == "empty":
        ws = (ws[0], ws[1], h + 2, 2)
        extra += ", padding_style=mg.PaddingStyle.TF_VALID"
    elif case in ("dtype", "dtype_int"):
        classes = "mg.DTypeError"
    return xs, ws, extra, classes


def _inv_conv2d_call(p, d, op, k, nm, xdims, ws, ys, case, x, wt):
    """(op name, call text); a gradient with a bad output_shape for data_shape and weights_shape."""
    n, cin, h, w = xdims
    if case not in ("data_shape", "weights_shape"):
        return op, f"g.{op}({x.t}, {wt.t}, d{k}, name={nm!r})"
    dy = p.leaf(ys, "float32", kind="constant")
    if case == "data_shape":
        op += "_data_gradient"
        bad = d.choice([repr([n, cin, h]), repr([n, cin, h + 3, w]), repr([n + 1, cin, h, w]),
                        repr([n, cin + 1, h, w]), repr([n, cin, h, 1.5]), "'abc'", "None"])
        return op, f"g.{op}({dy.t}, {wt.t}, {bad}, d{k}, name={nm!r})"
    op += "_weights_gradient"
    bad = d.choice([repr(list(ws[:3])), repr([ws[0], ws[1], 4, 2]), repr([ws[0], ws[1] + 1, 2, 2]),
                    repr([ws[0], ws[1], 2, "a"]), "None"])
    return op, f"g.{op}({dy.t}, {x.t}, {bad}, d{k}, name={nm!r})"


INVALID_TABLE = [
    (inv_binary_shape, 2), (inv_binary_dtype, 2), (inv_float_only, 1.5), (inv_bool_arith, 1),
    (inv_axes, 1.5), (inv_softmax_axis, 0.7), (inv_matmul, 1.5), (inv_reshape, 1.5), (inv_transpose, 1),
    (inv_permute, 1), (inv_slice, 1.5), (inv_concat, 1.5), (inv_broadcast, 1), (inv_expand_squeeze, 1),
    (inv_cast, 1), (inv_placeholder, 1), (inv_constant, 1.5), (inv_scalar_operand, 0.7),
    (inv_variable_assign, 1.5), (inv_select, 1), (inv_names, 1), (inv_feeds, 3), (inv_exe_inputs, 1),
    (inv_targets, 2), (inv_foreign_input, 1), (inv_backend, 0.5), (inv_control_deps, 0.5), (inv_huge, 0.7),
    (inv_late, 2), (inv_conv_family, 4), (inv_containers, 1.5),
]
EXTRA_INVALID: list = []  # added by op families that exist (see conv_strategies)


def gen_invalid(d, table=None):
    """A small valid prefix, then one invalid call. Returns the Program (``.kind`` names the call)."""
    table = table or (INVALID_TABLE + EXTRA_INVALID)
    for _ in range(20):
        p = Program(d)
        p.emit("ERRS, P0 = [], {}")
        p.leaf(p.rand_shape(), _weighted(d, DTYPE_WEIGHTS))
        for _ in range(d.int(0, 2)):
            _weighted(d, OP_TABLE)(p)
        p.emit("P0.update({k: v.copy() for k, v in P.items()})")
        p.emit("V0 = {i: g.value_of(N[i][0]) for i in N if N[i][0].operation.type == 'variable'}")
        f = _weighted(d, table)
        if f(p, d):
            return p
        start = [g for g, _ in table].index(f)  # not applicable here: the next kinds in table order
        for g, _ in table[start + 1:] + table[:start]:
            if g(p, d):
                return p
    raise RuntimeError("could not generate an invalid case")


def run_valid_source(src, backends, stats=None):
    ns = _exec(src)
    return check_case(ns, backends, stats, src)


def run_invalid_source(src, stats=None):
    ns = _exec(src)
    return check_invalid(ns, stats)


def reproducer(p, backends=("numpy",), invalid=False):
    """The program plus the line that checks it: a standalone script."""
    tail = "check_invalid(globals())" if invalid else \
        f"check_case(globals(), {list(backends)!r}, src=open(__file__).read().split(CUT)[0])"
    return p.source() + "CUT = '# ' + '-' * 20 + ' check'\n" + "# " + "-" * 20 + " check\n" + tail + "\nprint('ok')\n"



# ------------------------------------------------------------------------ attention (Apple's formula)
def op_attention(p):
    """scaled_dot_product_attention of a float node as the query, against softmax(scale Q K^T + M) V
    written with np.matmul and softmax_ref; leading axes broadcast, the mask additive and finite."""
    d = p.d
    q = p.pick(lambda n: n.kind == "float" and 2 <= n.rank <= 4 and 0 not in n.shape)
    if q is None or (q.dtype == "float16" and q.shape[-1] > 4):
        return None
    batch, nq, D = q.shape[:-2], q.shape[-2], q.shape[-1]
    nkv, dv = d.int(1, 5), d.int(1, 4)
    kb = p.compat_shape(batch) if d.coin(0.4) else batch
    vb = p.compat_shape(batch) if d.coin(0.3) else batch
    if not (_broadcasts(kb, vb) and _broadcasts(kb, batch) and _broadcasts(vb, batch)):
        kb = vb = batch
    lead = tuple(np.broadcast_shapes(batch, kb, vb))
    k = p.leaf(tuple(kb) + (nkv, D), q.dtype, rng=(-2.0, 2.0))
    v = p.leaf(tuple(vb) + (nkv, dv), q.dtype)
    scale = d.choice([0.25, 0.5, 1.0 / math.sqrt(D)])
    m = None
    if d.coin(0.6):
        m = p.leaf(d.choice([(nq, nkv), (1, nkv), (nq, 1), lead[-1:] + (1, nkv) if lead else (nkv,)]), q.dtype,
                   rng=(-2.0, 2.0))
    u = U[q.dtype]
    ms = scale * D * q.M * k.M + (m.M if m is not None else 0.0)
    err_s = scale * D * (q.M * k.err + k.M * q.err + q.err * k.err) + C * (D + 2) * u * ms + (m.err if m else 0.0)
    rel = 2 * err_s + (3 + 4 * ms + nkv + 3 * C) * u
    err = v.M * rel + v.err + C * (nkv + 1) * u * v.M + ABS_FLOOR[q.dtype]
    mask_t, mask_ref = (m.t, f" + {m.ref}") if m is not None else ("None", "")
    build = f"g.scaled_dot_product_attention({q.t}, {k.t}, {v.t}, {mask_t}, scale={scale!r}, name='n{p.n}')"
    ref = f"np.matmul(softmax_ref(np.matmul({q.ref}, np.swapaxes({k.ref}, -1, -2)) * {scale!r}{mask_ref}, -1), {v.ref})"
    phs = q.phs | k.phs | v.phs | (m.phs if m is not None else frozenset())
    return p.op(build, ref, lead + (nq, dv), q.dtype, v.lo, v.hi, err, phs, "scaled_dot_product_attention")


OP_TABLE.append((op_attention, 0.5))


def inv_rnn(p, d):
    """A recurrent layer with one input of the wrong shape or dtype, or the wrong descriptor class."""
    nm = _name(d)
    op, gates = d.choice([("single_gate_rnn", 1), ("lstm", 4), ("gru", 3)])
    T, N, I, H = d.int(1, 3), d.int(1, 3), d.int(1, 3), d.int(1, 3)
    how = d.choice(["rank", "recurrent", "input_weight", "bias", "init_state", "dtype", "descriptor"])
    x = p.leaf((T, N) if how == "rank" else (T, N, I), "int32" if how == "dtype" else "float32")
    r = p.leaf((gates * H + (1 if how == "recurrent" else 0), H), "float32")
    w = p.leaf((gates * H, I + (1 if how == "input_weight" else 0)), "float32")
    extra = ""
    if how == "bias":
        extra = f", bias={p.leaf((gates * H + 1,), 'float32').t}"
    elif how == "init_state":
        extra = f", init_state={p.leaf((N + 1, H), 'float32').t}"
    elif how == "descriptor":
        extra = ", descriptor=mg.GRUDescriptor()" if op == "lstm" else ", descriptor=mg.LSTMDescriptor()"
    cls = {"dtype": "mg.DTypeError", "descriptor": "mg.DescriptorError"}.get(how, "mg.ShapeError")
    _expect(p, f"g.{op}({x.t}, {r.t}, {w.t}{extra}, name={nm!r})", [op, nm], cls, "rnn " + how)
    return True


if "lstm" in OPS:
    EXTRA_INVALID.append((inv_rnn, 1.0))
