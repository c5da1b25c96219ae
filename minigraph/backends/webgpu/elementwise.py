"""Elementwise kernels: arithmetic, unary math, comparisons, select, cast (one WGSL family).

Each op is a WGSL expression over compute-typed values (f32 for float32 and float16, i32,
u32 for uint32 and bool, a bool being 0u or 1u); the template adds broadcasting. NaN behaves as
in MPSGraph: maximum and minimum skip it (np.fmax), their ``_with_nan_propagation`` forms
propagate it, ``relu`` (max(x, 0)), ``sign`` and ``clamp`` (Metal's fmin(fmax(x, lo), hi)) give
0 / the lower bound for it, comparisons with NaN are false (``not_equal`` true), and the
transcendental, rounding and remainder functions are minigraph's own (``kernels/math.wgsl``),
not the driver's.
"""
from __future__ import annotations

import numpy as np

from ...errors import KernelMissingError
from ...types import num_elements
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, collapse, contiguous_strides, load, params_decl, render, store

_F, _I, _U = "f32", "i32", "u32"


def _b(cond: str) -> str:
    return f"select(0u, 1u, {cond})"


def _any(*conds: str) -> str:
    return " || ".join(f"({c})" for c in conds)


def _arith(op):
    def fn(v, ct, out):
        return f"({v[0]} {op} {v[1]})"
    return fn


def _minmax(which, nan: str):
    """``max``/``min``; on floats ``mg_f{which}`` skips a NaN (MPSGraph's maximum), ``mg_{which}``
    propagates it (maximumWithNaNPropagation)."""
    def fn(v, ct, out):
        if ct[0] == _F:
            return f"mg_{'f' if nan == 'ignore' else ''}{which}({v[0]}, {v[1]})"
        return f"{which}({v[0]}, {v[1]})"
    return fn


def _compare(op):
    def fn(v, ct, out):
        a, b = v
        if ct[0] != _F:
            return _b(f"{a} {op} {b}")
        if op == "!=":
            return _b(_any(f"mg_isnan({a})", f"mg_isnan({b})", f"{a} != {b}"))
        return _b(f"!mg_isnan({a}) && !mg_isnan({b}) && ({a} {op} {b})")
    return fn


def _float_only(call):
    def fn(v, ct, out):
        if ct[0] != _F:
            raise KernelMissingError(f"no integer kernel ({call} needs a float tensor)")
        return call.format(*v)
    return fn


def _negative(v, ct, out):
    return f"(0u - {v[0]})" if ct[0] == _U else f"(-{v[0]})"


def _absolute(v, ct, out):
    return v[0] if ct[0] == _U else f"abs({v[0]})"


def _sign(v, ct, out):
    a = v[0]
    if ct[0] == _U:
        return f"select(0u, 1u, {a} > 0u)"
    if ct[0] == _I:
        return f"select(select(0i, 1i, {a} > 0i), -1i, {a} < 0i)"
    return f"select(select(select({a}, 1.0, {a} > 0.0), -1.0, {a} < 0.0), 0.0, mg_isnan({a}))"


def _relu(v, ct, out):
    a = v[0]
    if ct[0] == _U:
        return a
    if ct[0] == _I:
        return f"max({a}, 0i)"
    return f"select(0.0, {a}, {a} > 0.0)"


def _square(v, ct, out):
    return f"({v[0]} * {v[0]})"


def _nonzero(a: str, ct: str) -> str:
    """A WGSL bool: ``a`` is true as NumPy's astype(bool) sees it (NaN is true)."""
    if ct == _F:
        return f"({a} != 0.0 || mg_isnan({a}))"
    return f"({a} != 0{'u' if ct == _U else 'i'})"


def _select(v, ct, out):
    p, a, b = v
    return f"select({b}, {a}, {_nonzero(p, ct[0])})"


def _cast(v, ct, out):
    a, src = v[0], ct[0]
    if out == "bool":
        return _b(_nonzero(a, src))
    dst = COMPUTE[out]
    if src == dst:
        return a
    if {src, dst} == {_I, _U}:
        return f"bitcast<{dst}>({a})"
    return f"{dst}({a})"


def _rounding(fn):
    """Floats through minigraph's own (exact, sign-keeping) function; integers are already integral."""
    def f(v, ct, out):
        return f"{fn}({v[0]})" if ct[0] == _F else v[0]
    return f


def _predicate(fn, int_value: str):
    def f(v, ct, out):
        return _b(fn.format(v[0])) if ct[0] == _F else int_value
    return f


def _logical(op):
    def f(v, ct, out):
        return _b(op.format(*(f"({x} != 0u)" for x in v)))
    return f


def _signbit(v, ct, out):
    """The sign bit, read on the bits of a float (-0.0 and a negative NaN have it)."""
    a = v[0]
    if ct[0] == _F:
        return f"(bitcast<u32>({a}) >> 31u)"
    return _b(f"{a} < 0i") if ct[0] == _I else "0u"


def _int_only(make):
    def f(v, ct, out):
        if ct[0] == _F:
            raise KernelMissingError("no float kernel (the bitwise ops take integer tensors)")
        return make(*v, ct[0])
    return f


def _bitwise(op):
    return _int_only(lambda a, b, ct: f"({a} {op} {b})")


def _popcount(a, ct):
    """countOneBits counts the i32 two's complement bits too (-1 gives 32)."""
    return f"countOneBits({a})"


def _shift(left: bool):
    """WGSL takes a shift count modulo 32; minigraph reads the count as unsigned and shifts every bit
    out past the width: 0 for a left shift and an unsigned right shift, the sign for a signed one
    (WGSL's >> on i32 is arithmetic)."""
    def make(a, b, ct):
        c = f"bitcast<u32>({b})"
        if left:
            return f"select({ct}(0), {a} << ({c} & 31u), {c} < 32u)"
        if ct == _I:
            return f"({a} >> min({c}, 31u))"
        return f"select(0u, {a} >> ({c} & 31u), {c} < 32u)"
    return _int_only(make)


def _modulo(floor: bool):
    """Truncated (C's %) or floored (Python's %) remainder; a zero divisor gives 0 for integers
    (and for floats in floor_modulo), and so does i32's most negative value modulo -1."""
    def f(v, ct, out):
        a, b = v
        if ct[0] == _F:
            return f"mg_{'floor_mod' if floor else 'fmod'}({a}, {b})"
        if ct[0] == _U:
            return f"select({a} % select({b}, 1u, {b} == 0u), 0u, {b} == 0u)"
        ok = f"({b} != 0i && {b} != -1i)"
        r = f"select(0i, {a} % select(1i, {b}, {ok}), {ok})"
        if floor:
            r = f"mg_floor_fix_i32({r}, {b})"
        return r
    return f


def leaky_relu_at(word: int):
    """x >= 0 ? x : alpha * x, alpha being the uniform parameters' extra word ``word``
    (``extra(0u)`` for the op's own kernel; a fused step gives each leaky_relu a word of its own),
    not a literal: with a constant 0 the shader compiler folds ``0 * x`` to 0, which turns NaN and
    -inf (0 * -inf is NaN) into 0 and -3 into +0."""
    def fn(v, ct, out):
        x = v[0]
        return f"select(bitcast<f32>(extra({word}u)) * {x}, {x}, {x} >= 0.0)"
    return fn


_leaky_relu = leaky_relu_at(0)


def alpha_word(alpha) -> int:
    """A leaky_relu's alpha as the u32 word of its float32 bits (read back with ``bitcast<f32>``)."""
    return int(np.float32(alpha).view(np.uint32))


BINARY = {
    "addition": _arith("+"), "subtraction": _arith("-"), "multiplication": _arith("*"),
    "division": _float_only("({0} / {1})"), "maximum": _minmax("max", "ignore"),
    "minimum": _minmax("min", "ignore"), "maximum_with_nan_propagation": _minmax("max", "propagate"),
    "minimum_with_nan_propagation": _minmax("min", "propagate"),
    "power": _float_only("mg_pow({0}, {1})"),
    "equal": _compare("=="), "not_equal": _compare("!="), "less_than": _compare("<"),
    "less_than_or_equal_to": _compare("<="), "greater_than": _compare(">"),
    "greater_than_or_equal_to": _compare(">="),
    "modulo": _modulo(False), "floor_modulo": _modulo(True), "atan2": _float_only("mg_atan2({0}, {1})"),
    "logical_and": _logical("{0} && {1}"), "logical_or": _logical("{0} || {1}"),
    "logical_xor": _logical("{0} != {1}"),
    "logical_nand": _logical("!({0} && {1})"), "logical_nor": _logical("!({0} || {1})"),
    "logical_xnor": _logical("{0} == {1}"),
    "division_no_nan": _float_only("select({0} / {1}, 0.0, {1} == 0.0)"),
    "bitwise_and": _bitwise("&"), "bitwise_or": _bitwise("|"), "bitwise_xor": _bitwise("^"),
    "bitwise_left_shift": _shift(left=True), "bitwise_right_shift": _shift(left=False),
}
UNARY = {
    "negative": _negative, "absolute": _absolute, "sign": _sign, "square": _square, "relu": _relu,
    "exponent": _float_only("mg_exp({0})"), "logarithm": _float_only("mg_log({0})"),
    "square_root": _float_only("mg_sqrt({0})"), "reciprocal": _float_only("(1.0 / {0})"),
    "tanh": _float_only("mg_tanh({0})"), "sigmoid": _float_only("mg_sigmoid({0})"),
    "sin": _float_only("mg_sin({0})"), "cos": _float_only("mg_cos({0})"),
    "erf": _float_only("mg_erf({0})"), "reverse_square_root": _float_only("mg_rsqrt({0})"),
    "exponent_base2": _float_only("mg_exp2({0})"), "logarithm_base2": _float_only("mg_log2({0})"),
    "floor": _rounding("mg_floor"), "ceil": _rounding("mg_ceil"), "round": _rounding("mg_round"),
    "rint": _rounding("mg_rint"),
    "is_nan": _predicate("mg_isnan({0})", "0u"), "is_infinite": _predicate("mg_isinf({0})", "0u"),
    "is_finite": _predicate("!mg_isnan({0}) && !mg_isinf({0})", "1u"),
    "logical_not": _logical("!{0}"),
    "tan": _float_only("mg_tan({0})"), "sinh": _float_only("mg_sinh({0})"), "cosh": _float_only("mg_cosh({0})"),
    "asin": _float_only("mg_asin({0})"), "acos": _float_only("mg_acos({0})"), "atan": _float_only("mg_atan({0})"),
    "asinh": _float_only("mg_asinh({0})"), "acosh": _float_only("mg_acosh({0})"),
    "atanh": _float_only("mg_atanh({0})"), "exponent_base10": _float_only("mg_exp10({0})"),
    "logarithm_base10": _float_only("mg_log10({0})"), "truncate": _rounding("mg_trunc"),
    "signbit": _signbit,
    "bitwise_not": _int_only(lambda a, ct: f"(~{a})"), "bitwise_population_count": _int_only(_popcount),
}
def _clamp(v, ct, out):
    x, lo, hi = v
    if ct[0] == _F:
        return f"mg_fmin(mg_fmax({x}, {lo}), {hi})"
    return f"min(max({x}, {lo}), {hi})"


def _leaky_relu_gradient(v, ct, out):
    dy, x, alpha = v
    return f"select({alpha} * {dy}, {dy}, {x} >= 0.0)"


def _relu_gradient(v, ct, out):
    dy, x = v
    return f"select(0.0, {dy}, {x} > 0.0)"


def _sigmoid_gradient(v, ct, out):
    """dy * (s * (1 - s)) with s the forward op's result: sigmoid rounded to the type (float16
    rounds there, as the forward op's tensor does), the rest in f32."""
    dy, x = v
    s = load(out, store(out, f"mg_sigmoid({x})"))
    return f"({dy} * ({s} * (1.0 - {s})))"


OTHER = {"select": _select, "cast": _cast, "clamp": _clamp, "leaky_relu_gradient": _leaky_relu_gradient,
         "relu_gradient": _relu_gradient, "sigmoid_gradient": _sigmoid_gradient}
EXPRESSIONS = {**BINARY, **UNARY, **OTHER}


def elementwise_source(in_dtypes, in_shapes, out_dtype, out_shape, expr_fn, extra=(), bake=False):
    """(WGSL source, params) of an elementwise map ``expr_fn(values, compute types, out dtype)``;
    the u32 words of ``extra`` follow the parameters, read in WGSL as ``extra(k)``; ``bake``: as
    ``map_source``'s."""
    def body(vals, cts):
        return [f"  out[i] = {store(out_dtype, expr_fn(vals, cts, out_dtype))};"]
    return map_source(in_dtypes, in_shapes, out_dtype, out_shape, body, extra, bake=bake)


def map_source(in_dtypes, in_shapes, out_dtype, out_shape, body_fn, extra=(), decls="", bake=False):
    """(WGSL source, params) of a one-pass elementwise kernel with NumPy broadcasting: the
    template decodes each input's index and loads it as ``v{k}`` in its compute type; the lines
    ``body_fn(value names, compute types)`` then compute and write ``out[i]``. The u32 words of
    ``extra`` follow the parameters, read in WGSL as ``extra(k)``; ``decls`` (WGSL declarations,
    an epilogue's) follow the bindings, which take numbers 0 to ``len(in_dtypes) + 1``. With
    ``bake``, the broadcast index is decoded with the sizes and strides as constants (a division
    by a constant is a multiplication; by a parameter, tens of instructions per element): a
    pipeline per shape instead of one for all sizes, for the per-channel passes of a batch norm."""
    rank = len(out_shape)
    modes, strides = [], []
    for shp in in_shapes:
        padded = (1,) * (rank - len(shp)) + tuple(shp)
        if padded == tuple(out_shape):
            modes.append("same")
        elif num_elements(shp) == 1:
            modes.append("one")
        else:
            cs = contiguous_strides(padded)
            strides.append(tuple(0 if p != o else s for p, s, o in zip(padded, cs, out_shape)))
            modes.append("bcast")
    n = num_elements(out_shape)
    params = [n]
    index = []
    if strides:
        shape, sts = collapse(out_shape, *strides)
        nb = len(sts)
        for k in reversed(range(len(shape))):
            params.append(shape[k])
            params.extend(s[k] for s in sts)
        index.append("  var r = i;")
        index.extend(f"  var j{m} = 0u;" for m in range(nb))
        step = 1 + nb
        if bake:  # innermost axis first, as the loop below
            for k in reversed(range(len(shape))):
                index.append(f"  {{ let q = r % {shape[k]}u; r = r / {shape[k]}u;"
                             + "".join(f" j{m} = j{m} + q * {sts[m][k]}u;" for m in range(nb) if sts[m][k]) + " }")
        else:
            loop = [f"  for (var k = 0u; k < {len(shape)}u; k = k + 1u) {{",
                    f"    let q = r % prm(1u + {step}u * k);",
                    f"    r = r / prm(1u + {step}u * k);"]
            loop += [f"    j{m} = j{m} + q * prm({2 + m}u + {step}u * k);" for m in range(nb)]
            index += loop + ["  }"]
    binds, vals, cts = [], [], []
    m = 0
    for k, (dt, mode) in enumerate(zip(in_dtypes, modes)):
        binds.append(f"@group(0) @binding({k + 1}) var<storage, read> in{k}: array<{STORAGE[dt]}>;")
        idx = {"same": "i", "one": "0u"}.get(mode)
        if idx is None:
            idx = f"j{m}"
            m += 1
        index.append(f"  let v{k} = {load(dt, f'in{k}[{idx}]')};")
        vals.append(f"v{k}")
        cts.append(COMPUTE[dt])
    binds.append(f"@group(0) @binding({len(in_dtypes) + 1}) var<storage, read_write> out: array<{STORAGE[out_dtype]}>;")
    if decls:
        binds.append(decls)
    body = "\n".join(body_fn(vals, cts))
    decl = params_decl(len(params) + len(extra))
    if extra:
        decl += f"fn extra(k: u32) -> u32 {{ return prm({len(params)}u + k); }}\n"
        params.extend(int(w) for w in extra)
    src = render("elementwise", PARAMS=decl, BINDINGS="\n".join(binds),
                 INDEX="\n".join(index), BODY=body)
    return src, params


def _cmul(a: str, b: str) -> str:
    return f"vec2<f32>({a}.x * {b}.x - {a}.y * {b}.y, {a}.x * {b}.y + {a}.y * {b}.x)"


def _cdiv(a: str, b: str) -> str:
    """Smith's division (NumPy's): scale by the larger part of the divisor, so |b|^2 never overflows."""
    r1, r2 = f"({b}.y / {b}.x)", f"({b}.x / {b}.y)"
    d1, d2 = f"({b}.x + {b}.y * {r1})", f"({b}.x * {r2} + {b}.y)"
    q1 = f"vec2<f32>(({a}.x + {a}.y * {r1}) / {d1}, ({a}.y - {a}.x * {r1}) / {d1})"
    q2 = f"vec2<f32>(({a}.x * {r2} + {a}.y) / {d2}, ({a}.y * {r2} - {a}.x) / {d2})"
    return f"select({q2}, {q1}, abs({b}.x) >= abs({b}.y))"


# the elementwise ops on complex64 values (vec2<f32>: real, imaginary); ops/elementwise.py COMPLEX_OPS
COMPLEX_EXPRESSIONS = {
    "addition": lambda v: f"({v[0]} + {v[1]})", "subtraction": lambda v: f"({v[0]} - {v[1]})",
    "multiplication": lambda v: _cmul(v[0], v[1]), "division": lambda v: _cdiv(v[0], v[1]),
    "negative": lambda v: f"(-{v[0]})", "square": lambda v: _cmul(v[0], v[0]),
    "exponent": lambda v: f"(mg_exp({v[0]}.x) * vec2<f32>(mg_cos({v[0]}.y), mg_sin({v[0]}.y)))",
    "equal": lambda v: _b(f"all({v[0]} == {v[1]})"), "not_equal": lambda v: _b(f"any({v[0]} != {v[1]})"),
}


def _complex_expression(step):
    """The expression of an op with a complex64 operand or result (cast: to and from complex, NumPy's rule)."""
    t = step.op.type
    src, dst = step.in_types[0].dtype.name, step.out_types[0].dtype.name
    if t == "cast":
        if src == dst:
            return lambda v, ct, out: v[0]
        if src == "complex64":
            if dst == "bool":
                return lambda v, ct, out: _b(f"any({v[0]} != vec2<f32>(0.0, 0.0))")
            return lambda v, ct, out: f"{COMPUTE[dst]}({v[0]}.x)"
        return lambda v, ct, out: f"vec2<f32>(f32({v[0]}), 0.0)"
    fn = COMPLEX_EXPRESSIONS[t]
    return lambda v, ct, out: fn(v)


@webgpu_kernel(*EXPRESSIONS, "leaky_relu")
def _elementwise(step, kb):
    extra: tuple = ()
    if any(t.dtype.name == "complex64" for t in (*step.in_types, *step.out_types)):
        fn = _complex_expression(step)
    elif step.op.type == "leaky_relu":
        fn, extra = _leaky_relu, (alpha_word(step.attrs["alpha"]),)
    else:
        fn = EXPRESSIONS[step.op.type]
    in_dt = [t.dtype.name for t in step.in_types]
    out = step.out_types[0]
    try:
        src, params = elementwise_source(in_dt, [t.shape for t in step.in_types], out.dtype.name, out.shape, fn,
                                         extra)
    except KernelMissingError as e:
        raise KernelMissingError(f"{kb.label}: the webgpu backend has {e}; got {in_dt[0]}") from None
    binds = [("u", params)] + [("ro", kb.input(k)) for k in range(len(in_dt))] + [("rw", kb.output())]
    kb.dispatch(src, binds, -(-params[0] // 256))

@webgpu_kernel("reinterpret_cast")
def _reinterpret_cast(step, kb):
    """Bits as another type: buffers are untyped, so both sides are read and written as 32-bit
    words (two float16 halves per word, little-endian, as NumPy's view): a word copy."""
    src, dst = step.in_types[0].dtype.name, step.out_types[0].dtype.name
    n = num_elements(step.out_types[0].shape)
    if not n:
        return
    if src == dst:
        t, total = STORAGE[src], n
    else:  # float16 sides hold an even number of halves (the last dimension scales by 2)
        t, total = "u32", n // 2 if dst == "float16" else n
    kb.dispatch(render("reinterpret_cast", T=t, TOTAL=total), [("ro", kb.input(0)), ("rw", kb.output())],
                -(-total // 256))
