"""Elementwise arithmetic, unary math, comparisons, select, cast, identity (MPSGraphArithmeticOps)."""
from __future__ import annotations

from typing import Optional

from ..errors import DTypeError
from ..types import ShapedType, as_dtype, bool_
from ._util import broadcast_shapes, same_dtype, unbroadcast
from .registry import defop, gradient


def _numeric(t: ShapedType, what: str) -> None:
    if t.dtype.is_bool:
        raise DTypeError(f"{what} is not defined for bool tensors; cast to a number type first")


def _floating(t: ShapedType, what: str) -> None:
    if not t.dtype.is_floating:
        raise DTypeError(f"{what} needs a floating-point tensor (float32, float16), got {t.dtype.name}; "
                         "cast it first")


def _infer_binary(kind: str):
    def infer(in_types, attrs):
        same_dtype(in_types)
        for t in in_types:
            if kind == "float":
                _floating(t, "this op")
            elif kind == "numeric":
                _numeric(t, "arithmetic")
        shape = broadcast_shapes(in_types[0].shape, in_types[1].shape)
        return [ShapedType(shape, bool_ if kind == "compare" else in_types[0].dtype)]
    return infer


def _infer_unary(kind: str):
    def infer(in_types, attrs):
        t = in_types[0]
        if kind == "float":
            _floating(t, "this op")
        elif kind == "numeric":
            _numeric(t, "this op")
        return [t]
    return infer


def _binary(type: str, swift: str, objc: str, kind: str, doc: str):
    def builder(g, primary, secondary, name: Optional[str] = None):
        label = f"{type} op {name or type!r}"
        if _is_py(primary) and not _is_py(secondary):  # a scalar takes the tensor's dtype
            secondary = g._as_tensor(secondary, label)
            primary = g._as_tensor(primary, label, like=secondary)
        else:
            primary = g._as_tensor(primary, label)
            secondary = g._as_tensor(secondary, label, like=primary)
        return g._make(type, [primary, secondary], {}, name)

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = f"{doc} (MPSGraph ``{swift}``). Broadcasts as NumPy; operands need one dtype."
    defop(type, swift=swift, objc=objc, inputs=("primary", "secondary"), infer=_infer_binary(kind),
          category="comparison" if kind == "compare" else "arithmetic")(builder)
    return builder


def _is_py(x) -> bool:
    return not hasattr(x, "graph")


def _unary(type: str, swift: str, objc: str, kind: str, doc: str):
    def builder(g, tensor, name: Optional[str] = None):
        tensor = g._as_tensor(tensor, f"{type} op {name or type!r}")
        return g._make(type, [tensor], {}, name)

    builder.__name__ = builder.__qualname__ = type
    builder.__doc__ = f"{doc} (MPSGraph ``{swift}``)."
    defop(type, swift=swift, objc=objc, inputs=("tensor",), infer=_infer_unary(kind),
          category="arithmetic")(builder)
    return builder


for _t, _s, _o, _k, _d in [
    ("addition", "addition(_:_:name:)", "additionWithPrimaryTensor:secondaryTensor:name:", "numeric", "Elementwise a + b"),
    ("subtraction", "subtraction(_:_:name:)", "subtractionWithPrimaryTensor:secondaryTensor:name:", "numeric", "Elementwise a - b"),
    ("multiplication", "multiplication(_:_:name:)", "multiplicationWithPrimaryTensor:secondaryTensor:name:", "numeric", "Elementwise a * b"),
    ("division", "division(_:_:name:)", "divisionWithPrimaryTensor:secondaryTensor:name:", "float", "Elementwise a / b (floating point only)"),
    ("maximum", "maximum(_:_:name:)", "maximumWithPrimaryTensor:secondaryTensor:name:", "numeric", "Elementwise max; NaN propagates"),
    ("minimum", "minimum(_:_:name:)", "minimumWithPrimaryTensor:secondaryTensor:name:", "numeric", "Elementwise min; NaN propagates"),
    ("power", "power(_:_:name:)", "powerWithPrimaryTensor:secondaryTensor:name:", "float", "Elementwise a ** b"),
    ("equal", "equal(_:_:name:)", "equalWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a == b, a bool tensor"),
    ("not_equal", "notEqual(_:_:name:)", "notEqualWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a != b, a bool tensor"),
    ("less_than", "lessThan(_:_:name:)", "lessThanWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a < b, a bool tensor"),
    ("less_than_or_equal_to", "lessThanOrEqualTo(_:_:name:)", "lessThanOrEqualToWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a <= b, a bool tensor"),
    ("greater_than", "greaterThan(_:_:name:)", "greaterThanWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a > b, a bool tensor"),
    ("greater_than_or_equal_to", "greaterThanOrEqualTo(_:_:name:)", "greaterThanOrEqualToWithPrimaryTensor:secondaryTensor:name:", "compare", "Elementwise a >= b, a bool tensor"),
]:
    _binary(_t, _s, _o, _k, _d)

for _t, _s, _o, _k, _d in [
    ("negative", "negative(with:name:)", "negativeWithTensor:name:", "numeric", "Elementwise -x"),
    ("absolute", "absolute(with:name:)", "absoluteWithTensor:name:", "numeric", "Elementwise |x|"),
    ("sign", "sign(with:name:)", "signWithTensor:name:", "numeric", "Elementwise sign (-1, 0, 1; NaN stays NaN)"),
    ("exponent", "exponent(with:name:)", "exponentWithTensor:name:", "float", "Elementwise e ** x"),
    ("logarithm", "logarithm(with:name:)", "logarithmWithTensor:name:", "float", "Elementwise natural log"),
    ("square", "square(with:name:)", "squareWithTensor:name:", "numeric", "Elementwise x * x"),
    ("square_root", "squareRoot(with:name:)", "squareRootWithTensor:name:", "float", "Elementwise sqrt(x)"),
    ("reciprocal", "reciprocal(with:name:)", "reciprocalWithTensor:name:", "float", "Elementwise 1 / x"),
    ("tanh", "tanh(with:name:)", "tanhWithTensor:name:", "float", "Elementwise tanh(x)"),
    ("sigmoid", "sigmoid(with:name:)", "sigmoidWithTensor:name:", "float", "Elementwise 1 / (1 + e ** -x)"),
    ("relu", "reLU(with:name:)", "reLUWithTensor:name:", "numeric", "Elementwise max(x, 0); NaN propagates"),
    ("sin", "sin(with:name:)", "sinWithTensor:name:", "float", "Elementwise sin(x)"),
    ("cos", "cos(with:name:)", "cosWithTensor:name:", "float", "Elementwise cos(x)"),
]:
    _unary(_t, _s, _o, _k, _d)


@defop("identity", swift="identity(with:name:)", objc="identityWithTensor:name:", inputs=("tensor",),
       infer=lambda ts, a: [ts[0]], category="arithmetic")
def identity(g, tensor, name: Optional[str] = None):
    """The same values as ``tensor`` (MPSGraph ``identity(with:name:)``)."""
    return g._make("identity", [g._as_tensor(tensor, f"identity op {name or 'identity'!r}")], {}, name)


@defop("stop_gradient", swift="identity(with:name:)", objc="identityWithTensor:name:",
       inputs=("tensor",), infer=lambda ts, a: [ts[0]], category="arithmetic")
def stop_gradient(g, tensor, name: Optional[str] = None):
    """Identity in the forward pass that blocks gradients.

    MPSGraph has no public op for this, only a private ``stopGradient`` flag on operations; the
    forward pass is ``identity(with:name:)``, so that is the Swift name shown in the reference.
    """
    return g._make("stop_gradient", [g._as_tensor(tensor, f"stop_gradient op {name or 'stop_gradient'!r}")], {}, name)


def _infer_select(in_types, attrs):
    p, a, b = in_types
    same_dtype([a, b], "true and false tensors")
    return [ShapedType(broadcast_shapes(p.shape, a.shape, b.shape), a.dtype)]


@defop("select", swift="select(predicate:trueTensor:falseTensor:name:)",
       objc="selectWithPredicateTensor:truePredicateTensor:falsePredicateTensor:name:",
       inputs=("predicate", "true_tensor", "false_tensor"), infer=_infer_select, category="arithmetic")
def select(g, predicate, true_tensor, false_tensor, name: Optional[str] = None):
    """``true_tensor`` where ``predicate`` is true (non-zero), else ``false_tensor``, broadcast
    (MPSGraph ``select(predicate:trueTensor:falseTensor:name:)``)."""
    label = f"select op {name or 'select'!r}"
    predicate = g._as_tensor(predicate, label, dtype=None if hasattr(predicate, "graph") else bool_)
    like = true_tensor if hasattr(true_tensor, "graph") else false_tensor if hasattr(false_tensor, "graph") else None
    true_tensor = g._as_tensor(true_tensor, label, like=like)
    false_tensor = g._as_tensor(false_tensor, label, like=true_tensor)
    return g._make("select", [predicate, true_tensor, false_tensor], {}, name)


def _infer_cast(in_types, attrs):
    return [ShapedType(in_types[0].shape, attrs["to_type"])]


@defop("cast", swift="cast(_:to:name:)", objc="castTensor:toType:name:", inputs=("tensor",),
       infer=_infer_cast, category="arithmetic", attrs=("to_type",))
def cast(g, tensor, to_type=None, name: Optional[str] = None, *, to=None, dtype=None):
    """Convert to another dtype (MPSGraph ``cast(_:to:name:)``; ``to=``/``dtype=`` work too).
    Float to int truncates toward zero; NaN, Inf and out-of-range values give unspecified
    integers (as on the GPU)."""
    tensor = g._as_tensor(tensor, f"cast op {name or 'cast'!r}")
    given = [v for v in (to_type, to, dtype) if v is not None]
    if len(given) != 1:
        raise DTypeError(f"cast op {name or 'cast'!r}: give the target dtype once (to_type, to or dtype)")
    to_type = given[0]
    try:
        dt = as_dtype(to_type)
    except DTypeError as e:
        raise type(e)(f"cast op {name or 'cast'!r}: {e}") from None
    return g._make("cast", [tensor], {"to_type": dt}, name)


# ------------------------------------------------------------------ gradient rules
def _ub(g, op, grads):
    return [None if d is None else unbroadcast(g, d, t.shape) for d, t in zip(grads, op.inputs)]


@gradient("addition")
def _(g, op, dy):
    return _ub(g, op, [dy, dy])


@gradient("subtraction")
def _(g, op, dy):
    return _ub(g, op, [dy, g.negative(dy)])


@gradient("multiplication")
def _(g, op, dy):
    a, b = op.inputs
    return _ub(g, op, [g.multiplication(dy, b), g.multiplication(dy, a)])


@gradient("division")
def _(g, op, dy):
    a, b = op.inputs
    da = g.division(dy, b)
    db = g.negative(g.division(g.multiplication(da, a), b))
    return _ub(g, op, [da, db])


def _minmax(pick_first):
    def rule(g, op, dy):
        a, b = op.inputs
        mask = pick_first(g, a, b)
        zero = g.constant(0, dtype=dy.dtype)
        return _ub(g, op, [g.select(mask, dy, zero), g.select(mask, zero, dy)])
    return rule


gradient("maximum")(_minmax(lambda g, a, b: g.greater_than_or_equal_to(a, b)))
gradient("minimum")(_minmax(lambda g, a, b: g.less_than_or_equal_to(a, b)))


@gradient("power")
def _(g, op, dy):
    a, b = op.inputs
    y = op.outputs[0]
    da = g.multiplication(dy, g.multiplication(b, g.power(a, g.subtraction(b, 1.0))))
    zero = g.constant(0, dtype=a.dtype)
    safe_log = g.select(g.greater_than(a, zero), g.logarithm(g.select(g.greater_than(a, zero), a, 1.0)), zero)
    db = g.multiplication(dy, g.multiplication(y, safe_log))
    return _ub(g, op, [da, db])


for _cmp in ("equal", "not_equal", "less_than", "less_than_or_equal_to", "greater_than",
             "greater_than_or_equal_to"):
    gradient(_cmp)(lambda g, op, dy: [None, None])


@gradient("negative")
def _(g, op, dy):
    return [g.negative(dy)]


@gradient("absolute")
def _(g, op, dy):
    return [g.multiplication(dy, g.sign(op.inputs[0]))]


@gradient("sign")
def _(g, op, dy):
    return [g.multiplication(dy, g.constant(0, dtype=dy.dtype))]


@gradient("exponent")
def _(g, op, dy):
    return [g.multiplication(dy, op.outputs[0])]


@gradient("logarithm")
def _(g, op, dy):
    return [g.division(dy, op.inputs[0])]


@gradient("square")
def _(g, op, dy):
    return [g.multiplication(dy, g.multiplication(op.inputs[0], 2.0))]


@gradient("square_root")
def _(g, op, dy):
    return [g.division(dy, g.multiplication(op.outputs[0], 2.0))]


@gradient("reciprocal")
def _(g, op, dy):
    y = op.outputs[0]
    return [g.negative(g.multiplication(dy, g.square(y)))]


@gradient("tanh")
def _(g, op, dy):
    y = op.outputs[0]
    return [g.multiplication(dy, g.subtraction(1.0, g.square(y)))]


@gradient("sigmoid")
def _(g, op, dy):
    y = op.outputs[0]
    return [g.multiplication(dy, g.multiplication(y, g.subtraction(1.0, y)))]


@gradient("relu")
def _(g, op, dy):
    x = op.inputs[0]
    zero = g.constant(0, dtype=x.dtype)
    return [g.select(g.greater_than(x, zero), dy, zero)]


@gradient("sin")
def _(g, op, dy):
    return [g.multiplication(dy, g.cos(op.inputs[0]))]


@gradient("cos")
def _(g, op, dy):
    return [g.negative(g.multiplication(dy, g.sin(op.inputs[0])))]


@gradient("identity")
def _(g, op, dy):
    return [dy]


@gradient("stop_gradient")
def _(g, op, dy):
    return [None]


@gradient("select")
def _(g, op, dy):
    p, a, b = op.inputs
    zero = g.constant(0, dtype=dy.dtype)
    return _ub(g, op, [None, g.select(p, dy, zero), g.select(p, zero, dy)])


@gradient("cast")
def _(g, op, dy):
    src = op.inputs[0]
    if not (src.dtype.is_floating and op.outputs[0].dtype.is_floating):
        return [None]
    return [g.cast(dy, src.dtype)]
