"""Placeholders, constants, variables, read and assign (MPSGraphMemoryOps)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import DTypeError, ResourceLimitError, ShapeError, TargetError
from ..types import ShapedType, as_dtype, as_shape, float32, num_elements
from ..compiler.plan import MAX_ELEMENTS
from .registry import defop, gradient


def _no_inputs(in_types, attrs):
    return [ShapedType(attrs["shape"], attrs["dtype"])]


@defop("placeholder", swift="placeholder(shape:dataType:name:)",
       objc="placeholderWithShape:dataType:name:", inputs=(), infer=_no_inputs,
       category="memory", differentiable=False, attrs=("shape", "dtype"), internal=True)
def placeholder(g, shape, dtype=float32, name: Optional[str] = None):
    """A tensor fed at run time (MPSGraph ``placeholder(shape:dataType:name:)``).

    ``shape`` may hold -1 for dimensions known only when the graph runs.
    """
    try:
        attrs = {"shape": as_shape(shape), "dtype": as_dtype(dtype)}
    except (DTypeError, ShapeError) as e:
        raise type(e)(f"placeholder op {name or 'placeholder'!r}: {e}") from None
    return g._make("placeholder", [], attrs, name)


def _frozen(value: Any, dtype) -> np.ndarray:
    npd = None if dtype is None else as_dtype(dtype).np_dtype  # an unknown dtype keeps its own error
    if npd is not None:
        non_numbers(value)  # np.array(None, float32) is NaN and np.array("2", float32) is 2.0: refuse
    try:
        arr = np.array(value, dtype=npd, copy=True)
    except (TypeError, ValueError, OverflowError) as e:  # OverflowError: 300 as int8
        raise DTypeError(f"cannot make an array of {dtype!r} from {type(value).__name__} {value!r:.80}: {e}") from None
    if dtype is None:
        if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)  # Python floats default to float32, as in MPSGraph
        elif arr.dtype == np.int64 and not isinstance(value, (np.ndarray, np.generic)):
            arr = arr.astype(np.int32)
    as_dtype(arr.dtype)  # rejects object/str/complex arrays with a clear error
    if dtype is not None and not isinstance(value, np.ndarray):
        inexact_conversion(value, arr)
    if not arr.dtype.isnative:  # keep values in native byte order, so results are too
        arr = arr.astype(arr.dtype.newbyteorder("="))
    arr.setflags(write=False)
    return arr


def non_numbers(value: Any) -> None:
    """Refuse Python values holding None, strings or other non-numbers before a dtype'd conversion
    (NumPy would turn None into NaN and "2" into 2.0 silently). NumPy arrays are left alone."""
    if isinstance(value, (np.ndarray, np.generic)):
        return
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        return  # ragged and the like: the conversion itself reports it
    if raw.dtype.kind in "USV" or (raw.dtype.kind == "O" and not all(
            isinstance(e, (int, float, bool, np.number, np.bool_)) for e in raw.ravel())):
        raise DTypeError(f"{type(value).__name__} {value!r:.60} holds non-numbers (None, strings or "
                         f"objects); give numbers or a numeric array")


def inexact_conversion(value: Any, arr: np.ndarray) -> None:
    """Python numbers and lists must convert exactly to an integer or bool dtype: ``x + 0.5`` on an
    int32 tensor would otherwise add 0 (NumPy arrays are explicit casts and are left alone)."""
    if arr.dtype.kind not in "iub":
        return
    raw = np.asarray(value)
    if raw.dtype.kind in "fc" and not np.array_equal(arr, raw):
        raise DTypeError(f"{value!r:.60} is not exactly a {arr.dtype.name} value (it would become "
                         f"{arr.tolist()!r:.40}); use a whole number, or cast a float tensor explicitly")


@defop("constant", swift="constant(_:shape:dataType:)", objc="constantWithData:shape:dataType:",
       inputs=(), infer=_no_inputs, category="memory", differentiable=False,
       attrs=("shape", "dtype"), internal=True)
def constant(g, value, dtype=None, shape=None, name: Optional[str] = None):
    """A constant from a scalar or array (MPSGraph ``constant``).

    ``dtype`` defaults to the array's dtype; Python floats give float32 and ints int32.
    With ``shape``, a scalar is filled to that shape (``constant(_:shape:dataType:)``).
    """
    try:
        arr = _frozen(value, dtype)
        if shape is not None:
            shp = as_shape(shape)
            if -1 in shp:
                raise ShapeError(f"shape {list(shp)} must be static (no -1) to fill a constant")
            if num_elements(shp) > MAX_ELEMENTS:
                raise ResourceLimitError(f"shape {list(shp)} has {num_elements(shp)} elements, more than "
                                         f"the limit {MAX_ELEMENTS}")
            arr = np.broadcast_to(arr, shp).copy()
            arr.setflags(write=False)
    except (DTypeError, ShapeError, ResourceLimitError) as e:
        raise type(e)(f"constant op {name or 'constant'!r}: {e}") from None
    except ValueError as e:
        raise ShapeError(f"constant op {name or 'constant'!r}: cannot fill shape {shape} from a value "
                         f"of shape {np.shape(value)}: {e}") from None
    return g._make("constant", [], {"shape": arr.shape, "dtype": as_dtype(arr.dtype), "value": arr}, name)


@defop("variable", swift="variable(with:shape:dataType:name:)",
       objc="variableWithData:shape:dataType:name:", inputs=(), infer=_no_inputs,
       category="memory", differentiable=True, attrs=("shape", "dtype"), internal=True)
def variable(g, value, dtype=None, name: Optional[str] = None):
    """A variable whose value persists across runs (MPSGraph ``variable(with:shape:dataType:name:)``).

    Shape and dtype come from ``value``. Consumers read its current value; change it with
    ``assign`` or an optimizer op listed in ``target_operations``.
    """
    try:
        arr = _frozen(value, dtype)
    except DTypeError as e:
        raise DTypeError(f"variable op {name or 'variable'!r}: {e}") from None
    t = g._make("variable", [], {"shape": arr.shape, "dtype": as_dtype(arr.dtype), "initial_value": arr}, name)
    with g._lock:
        g._var_values[t.operation] = arr
    return t


@defop("read", swift="read(_:name:)", objc="readVariable:name:", inputs=("variable",),
       infer=lambda ts, a: [ts[0]], category="memory", internal=True)
def read(g, variable, name: Optional[str] = None):
    """The variable's value at this point of the run (MPSGraph ``read(_:name:)``)."""
    op = g._variable_op(variable, f"read op {name or 'read'!r}")
    return g._make("read", [op.outputs[0]], {}, name)


def _infer_assign(in_types, attrs):
    var, val = in_types
    if var.dtype != val.dtype:
        raise DTypeError(f"cannot assign a {val.dtype.name} tensor to a {var.dtype.name} variable; "
                         f"cast it first")
    if len(var.shape) != len(val.shape) or any(a != b and -1 not in (a, b) for a, b in zip(var.shape, val.shape)):
        raise ShapeError(f"cannot assign a tensor of shape {val.shape} to a variable of shape {var.shape}")
    return []


@defop("assign", swift="assign(_:tensor:name:)", objc="assignVariable:withValueOfTensor:name:",
       inputs=("variable", "tensor"), infer=_infer_assign, category="memory",
       differentiable=False, internal=True)
def assign(g, variable, tensor, name: Optional[str] = None):
    """An operation that stores ``tensor`` into ``variable`` (MPSGraph ``assign(_:tensor:name:)``).

    It runs only when listed in ``target_operations`` (or as a control dependency of something
    that runs). Assignments take effect only if the whole run succeeds.
    """
    op = g._variable_op(variable, f"assign op {name or 'assign'!r}")
    tensor = g._as_tensor(tensor, f"assign op {name or 'assign'!r}", like=op.outputs[0])
    return g._make("assign", [op.outputs[0], tensor], {}, name)


_ = TargetError


@gradient("read")
def _(g, op, dy):
    """A read passes the gradient to the variable it reads."""
    return [dy]
