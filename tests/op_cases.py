"""One case per elementwise op, the source of every elementwise test table.

The conformance cases (tests/test_conformance.py), the finite-difference cases
(tests/test_autodiff.py) and the every-op graph (tests/graph_zoo.py) take their elementwise
entries from ``ELEMENTWISE``, so a new unary or binary op of ``minigraph/ops/elementwise.py``
needs one entry here; the completeness tests of those files fail until it has one.
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Tuple, Union

Range = Tuple[float, float]
NO_FD = "not differentiable"  # ``fd`` value for ops without a finite-difference check


class OpCase(NamedTuple):
    """``domain``: the random-data range, one for all inputs or one per input. ``ints``: the op
    takes int32/uint32 too. ``compare``: the result is bool. ``fd``: a narrower range for the
    finite-difference check (None: ``domain``, or NO_FD); ``fd_shapes``: its input shapes.
    ``bools``: the inputs are bool (the logical ops; ``domain`` is unused). ``integer``: the op takes
    integer tensors only (the bitwise ops; ``domain`` is the int32 range of the random data)."""
    arity: int
    domain: Union[Range, Tuple[Range, ...]] = (-2, 2)
    ints: bool = False
    compare: bool = False
    fd: Union[None, Range, str] = None
    fd_shapes: Optional[list] = None
    bools: bool = False
    integer: bool = False


def _bin(domain=(-2, 2), fd_shapes=((2, 3), (2, 3)), **kw) -> OpCase:
    return OpCase(2, domain, fd_shapes=list(fd_shapes), **kw)


def _cmp() -> OpCase:
    return OpCase(2, (-3, 3), ints=True, compare=True, fd=NO_FD)


def _un(domain, fd=None, ints=False, fd_shapes=((4,),)) -> OpCase:
    return OpCase(1, domain, ints=ints, fd=fd, fd_shapes=list(fd_shapes))


def _pred() -> OpCase:
    return OpCase(1, (-3, 3), ints=True, compare=True, fd=NO_FD)


def _logic(arity: int) -> OpCase:
    return OpCase(arity, (0, 1), compare=True, fd=NO_FD, bools=True)


def _bits(arity: int, domain=(-1000, 1000)) -> OpCase:
    return OpCase(arity, domain, ints=True, fd=NO_FD, integer=True)


ELEMENTWISE = {
    "addition": _bin(ints=True, fd_shapes=[(2, 3), (3,)]),
    "subtraction": _bin(ints=True, fd_shapes=[(2, 1), (1, 3)]),
    "multiplication": _bin(ints=True),
    "division": _bin(((-2, 2), (0.5, 2)), fd=(0.5, 2), fd_shapes=[(2, 3), (3,)]),
    "maximum": _bin(ints=True),
    "minimum": _bin(ints=True, fd_shapes=[(3,), (2, 3)]),
    "power": _bin(((0.1, 3), (-2, 2)), fd=(0.5, 2)),
    "maximum_with_nan_propagation": _bin(ints=True, fd_shapes=[(2, 3), (3,)]),
    "minimum_with_nan_propagation": _bin(ints=True),
    "equal": _cmp(),
    "not_equal": _cmp(),
    "less_than": _cmp(),
    "less_than_or_equal_to": _cmp(),
    "greater_than": _cmp(),
    "greater_than_or_equal_to": _cmp(),
    "negative": _un((-3, 3), fd=(-2, 2), ints=True),
    "absolute": _un((-3, 3), fd=(0.2, 2), ints=True),
    "sign": _un((-3, 3), fd=(0.2, 2), ints=True),
    "exponent": _un((-10, 10), fd=(-2, 2)),
    "logarithm": _un((0.01, 100), fd=(0.5, 3)),
    "square": _un((-3, 3), fd=(-2, 2), ints=True),
    "square_root": _un((0.01, 100), fd=(0.5, 3)),
    "reciprocal": _un((0.2, 5), fd=(0.5, 3)),
    "tanh": _un((-6, 6), fd=(-2, 2)),
    "sigmoid": _un((-8, 8), fd=(-3, 3)),
    "relu": _un((-3, 3), fd=(-2, 2), ints=True, fd_shapes=[(6,)]),
    "sin": _un((-20, 20), fd=(-3, 3)),
    "cos": _un((-20, 20), fd=(-3, 3)),
    "identity": _un((-3, 3), fd=(-2, 2), ints=True),
    "stop_gradient": _un((-3, 3), fd=NO_FD, ints=True),
    # tensor, min_value, max_value; one finite-difference range for all three, so the bounds
    # also cross (min_value > max_value gives max_value)
    "erf": _un((-5, 5), fd=(-2, 2)),
    "floor": _un((-5, 5), fd=(-3, 3), ints=True),  # zero gradient; a jump is 1e-6 from a sample only by chance
    "ceil": _un((-5, 5), fd=(-3, 3), ints=True),
    "round": _un((-5, 5), fd=(-3, 3), ints=True),
    "rint": _un((-5, 5), fd=(-3, 3), ints=True),
    "reverse_square_root": _un((0.01, 100), fd=(0.5, 3)),
    "exponent_base2": _un((-20, 20), fd=(-2, 2)),
    "logarithm_base2": _un((0.01, 100), fd=(0.5, 3)),
    "is_nan": _pred(),
    "is_infinite": _pred(),
    "is_finite": _pred(),
    "modulo": _bin(((-5, 5), (-3, 3)), ints=True, fd=(0.5, 3), fd_shapes=[(2, 3), (3,)]),
    "floor_modulo": _bin(((-5, 5), (-3, 3)), ints=True, fd=(0.5, 3), fd_shapes=[(2, 1), (1, 3)]),
    "atan2": _bin(((-3, 3), (-3, 3)), fd=(0.5, 2), fd_shapes=[(2, 3), (3,)]),
    "logical_and": _logic(2),
    "logical_or": _logic(2),
    "logical_xor": _logic(2),
    "logical_not": _logic(1),
    "tan": _un((-1.5, 1.5), fd=(-1, 1)),
    "sinh": _un((-10, 10), fd=(-2, 2)),
    "cosh": _un((-10, 10), fd=(-2, 2)),
    "asin": _un((-1, 1), fd=(-0.8, 0.8)),
    "acos": _un((-1, 1), fd=(-0.8, 0.8)),
    "atan": _un((-10, 10), fd=(-2, 2)),
    "asinh": _un((-10, 10), fd=(-2, 2)),
    "acosh": _un((1, 10), fd=(1.5, 3)),
    "atanh": _un((-0.99, 0.99), fd=(-0.8, 0.8)),
    "exponent_base10": _un((-10, 10), fd=(-1, 1)),
    "logarithm_base10": _un((0.01, 100), fd=(0.5, 3)),
    "truncate": _un((-5, 5), fd=(-3, 3), ints=True),
    "signbit": _pred(),
    "division_no_nan": _bin(((-2, 2), (0.5, 2)), fd=(0.5, 2), fd_shapes=[(2, 3), (3,)]),
    "logical_nand": _logic(2),
    "logical_nor": _logic(2),
    "logical_xnor": _logic(2),
    "bitwise_and": _bits(2),
    "bitwise_or": _bits(2),
    "bitwise_xor": _bits(2),
    "bitwise_not": _bits(1),
    "bitwise_left_shift": _bits(2, ((-1000, 1000), (-2, 40))),  # counts past the width and negative ones
    "bitwise_right_shift": _bits(2, ((-1000, 1000), (-2, 40))),
    "bitwise_population_count": _bits(1),
    "clamp": OpCase(3, ((-8, 8), (-1, 0.5), (0.5, 6)), ints=True, fd=(-2, 2), fd_shapes=[(2, 3), (3,), (2, 1)]),
}

UNARY = [t for t, c in ELEMENTWISE.items() if c.arity == 1 and not c.bools and not c.integer]
BINARY = [t for t, c in ELEMENTWISE.items() if c.arity == 2 and not c.compare and not c.integer]
COMPARE = [t for t, c in ELEMENTWISE.items() if c.arity == 2 and c.compare and not c.bools]
LOGICAL = [t for t, c in ELEMENTWISE.items() if c.bools]  # bool in, bool out
BITWISE = [t for t, c in ELEMENTWISE.items() if c.integer]  # integer in, integer out


def input_domains(op: str) -> list:
    """The random-data range of each input of ``op``."""
    c = ELEMENTWISE[op]
    return list(c.domain) if isinstance(c.domain[0], tuple) else [c.domain] * c.arity


def fd_domain(op: str) -> Optional[Range]:
    """The finite-difference range of ``op``, None where the check does not apply."""
    c = ELEMENTWISE[op]
    if c.fd == NO_FD:
        return None
    if c.fd is not None:
        return c.fd  # type: ignore[return-value]
    lo, hi = zip(*input_domains(op))
    return max(lo), min(hi)
