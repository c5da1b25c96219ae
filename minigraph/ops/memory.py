"""Placeholders, constants, variables, read and assign (MPSGraphMemoryOps)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import DTypeError, ResourceLimitError, ShapeError, TargetError
from ..ir import Operation, Tensor
from ..types import FOUR_BIT, ShapedType, as_dtype, as_shape, check_four_bit, float32, num_elements, round_complex32
from ..coerce import frozen_array
from ..limits import MAX_BYTES, MAX_ELEMENTS
from .registry import defop, gradient


def _no_inputs(in_types, attrs):
    return [ShapedType(attrs["shape"], attrs["dtype"])]


@defop("placeholder", four_bit=True, swift="placeholder(shape:dataType:name:)",
       objc="placeholderWithShape:dataType:name:", inputs=(), infer=_no_inputs,
       family="memory", kind="memory", differentiable=False, attrs=("shape", "dtype"), internal=True)
def placeholder(g, shape, dtype=float32, name: Optional[str] = None):
    """A tensor fed at run time (MPSGraph ``placeholder(shape:dataType:name:)``).

    ``shape`` may hold -1 for dimensions known only when the graph runs.
    """
    try:
        attrs = {"shape": as_shape(shape), "dtype": as_dtype(dtype)}
    except (DTypeError, ShapeError) as e:
        raise type(e)(f"placeholder op {name or 'placeholder'!r}: {e}") from None
    return g.add_op("placeholder", [], attrs, name).output


@defop("constant", four_bit=True, swift="constant(_:shape:dataType:)", objc="constantWithData:shape:dataType:",
       inputs=(), infer=_no_inputs, family="memory", kind="memory", differentiable=False,
       attrs=("shape", "dtype"), hidden_attrs=("value",), internal=True)
def constant(g, value, dtype=None, shape=None, name: Optional[str] = None):
    """A constant from a scalar or array (MPSGraph ``constant``).

    ``dtype`` defaults to the array's dtype; Python floats give float32 and ints int32.
    With ``shape``, a scalar is filled to that shape (``constant(_:shape:dataType:)``).
    """
    try:
        arr = frozen_array(value, dtype)
        if shape is not None:
            arr = _filled(arr, as_shape(shape))
    except (DTypeError, ShapeError, ResourceLimitError) as e:
        raise type(e)(f"constant op {name or 'constant'!r}: {e}") from None
    except ValueError as e:
        raise ShapeError(f"constant op {name or 'constant'!r}: cannot fill shape {shape} from a value "
                         f"of shape {np.shape(value)}: {e}") from None
    dt = as_dtype(arr.dtype)
    if dtype is not None and as_dtype(dtype).name in FOUR_BIT:  # held in int8 / uint8, values in range
        dt = as_dtype(dtype)
        try:
            check_four_bit(arr, dt, f"constant op {name or 'constant'!r}")
        except DTypeError as e:
            raise DTypeError(f"{e}: give values the dtype holds") from None
    if dtype is not None and as_dtype(dtype).name == "complex32":  # held as complex64, parts rounded to float16
        dt = as_dtype(dtype)
        arr = _frozen(round_complex32(arr) if not arr.strides or any(arr.strides) else
                      np.broadcast_to(round_complex32(arr.reshape(-1)[:1]).reshape(()), arr.shape))
    return g.add_op("constant", [], {"shape": arr.shape, "dtype": dt, "value": arr}, name).output


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _filled(arr: np.ndarray, shp: tuple) -> np.ndarray:
    """``arr`` filled to ``shp``: one value stays one element (a read-only broadcast view, filled
    only when a run needs it); other arrays are copied, within the memory limit."""
    if -1 in shp:
        raise ShapeError(f"shape {list(shp)} must be static (no -1) to fill a constant")
    n = num_elements(shp)
    if n > MAX_ELEMENTS:
        raise ResourceLimitError(f"shape {list(shp)} has {n} elements, more than the limit {MAX_ELEMENTS}")
    if arr.size == 1 and n > 1:
        return np.broadcast_to(arr.reshape(()), shp)  # read-only, strides all 0
    if MAX_BYTES and n * arr.itemsize > MAX_BYTES:
        raise ResourceLimitError(f"filling shape {list(shp)} with a {list(arr.shape)} array needs "
                                 f"{n * arr.itemsize} bytes, more than this machine's memory ({MAX_BYTES})")
    out = np.broadcast_to(arr, shp).copy()
    out.setflags(write=False)
    return out


def filled_scalar(value: np.ndarray) -> Optional[np.ndarray]:
    """The one element (0-d) of a constant filled from a scalar, or None for a constant of its own data.

    A filled constant's value is a broadcast view of one element (every stride 0): it costs one
    element until a run fills it, and a saved file stores the element, not the array.
    """
    if isinstance(value, np.ndarray) and value.size > 1 and not any(value.strides):
        return value[(0,) * value.ndim + (Ellipsis,)]  # a 0-d view: nothing is copied
    return None


@defop("variable", swift="variable(with:shape:dataType:name:)",
       objc="variableWithData:shape:dataType:name:", inputs=(), infer=_no_inputs,
       family="memory", kind="memory", differentiable=True, attrs=("shape", "dtype"), hidden_attrs=("initial_value",), internal=True)
def variable(g, value, dtype=None, name: Optional[str] = None):
    """A variable whose value persists across runs (MPSGraph ``variable(with:shape:dataType:name:)``).

    Shape and dtype come from ``value``. Consumers read its current value; change it with
    ``assign`` or an optimizer op listed in ``target_operations``. ``value`` may be a tensor of
    this graph (MPSGraph ``variableFromTensor(_:name:)``): one computable when the variable is
    built, from constants through ops that are neither random nor control flow (no placeholders,
    variables or reads); its value, computed then on the numpy backend, is the initial value,
    and the variable keeps no link to it (no gradient flows back to the tensor).

    Args:
        value: A Python number, nested list or NumPy array (copied), or such a tensor.
        dtype: A data type: an ``mg`` dtype, its name, or a NumPy dtype; None keeps the value's.
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        Tensor: the variable, of the value's shape and dtype.

    Raises:
        MiniGraphError: a DTypeError for a value of no dtype; a TargetError for a tensor whose
            value is not known when built (naming the placeholder, variable or op it depends on).
    """
    if isinstance(value, Tensor):
        value = _value_when_built(g, value, f"variable op {name or 'variable'!r}")
    try:
        arr = frozen_array(value, dtype)
    except DTypeError as e:
        raise DTypeError(f"variable op {name or 'variable'!r}: {e}") from None
    return g.add_op("variable", [], {"shape": arr.shape, "dtype": as_dtype(arr.dtype), "initial_value": arr}, name).output


def _value_when_built(g, tensor: Tensor, label: str) -> np.ndarray:
    """A tensor's value from constants alone, computed now; refused where a run could change it."""
    g.check_same_graph(tensor.operation, label)
    seen, stack = set(), [tensor.operation]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        d = op.opdef
        if op.type in ("placeholder", "variable", "read") or d.family == "random" or d.control_flow \
                or op.type == "call":
            what = {"placeholder": "the placeholder", "variable": "the variable", "read": "a read of a variable"}
            source = what.get(op.type, f"the {op.type} op")
            raise TargetError(f"{label}: the initial tensor {tensor.name!r} depends on {source} {op.name!r}, whose value is known only when the graph runs; a variable from a "
                              "tensor needs one computed from constants (assign it in a run instead)")
        stack.extend(t.operation for t in op.inputs)
    return np.array(g.compile({}, [tensor], backend="numpy").run()[0])


@defop("read", swift="read(_:name:)", objc="readVariable:name:", inputs=("variable",),
       infer=lambda ts, a: [ts[0]], family="memory", kind="memory", internal=True)
def read(g, variable, name: Optional[str] = None):
    """The variable's value at this point of the run (MPSGraph ``read(_:name:)``)."""
    op = g.variable_operation(variable, f"read op {name or 'read'!r}")
    return g.add_op("read", [op.outputs[0]], {}, name).output


# read and assign take a variable's tensor as their first input (MPSGraph's read(_:) and
# assign(_:tensor:) take an MPSGraphVariableOp's): the builders check it, and so does the loader.
VARIABLE_OPERAND_OPS = frozenset({"read", "assign"})


def variable_operand_problem(type: str, producer_type: str) -> Optional[str]:
    """Why an op of ``type`` cannot take the output of a ``producer_type`` op as its first input (None: it can)."""
    if type in VARIABLE_OPERAND_OPS and producer_type != "variable":
        return (f"{type} needs a variable (made by g.variable) as its first input, got the output of a "
                f"{producer_type} op")
    return None


def _infer_assign(in_types, attrs):
    var, val = in_types
    if var.dtype != val.dtype:
        raise DTypeError(f"cannot assign a {val.dtype.name} tensor to a {var.dtype.name} variable; "
                         f"cast it first")
    if len(var.shape) != len(val.shape) or any(a != b and -1 not in (a, b) for a, b in zip(var.shape, val.shape)):
        raise ShapeError(f"cannot assign a tensor of shape {val.shape} to a variable of shape {var.shape}")
    return []


@defop("assign", swift="assign(_:tensor:name:)", objc="assignVariable:withValueOfTensor:name:",
       inputs=("variable", "tensor"), infer=_infer_assign, family="memory", kind="memory",
       differentiable=False, internal=True)
def assign(g, variable, tensor, name: Optional[str] = None) -> Operation:
    """An operation that stores ``tensor`` into ``variable`` (MPSGraph ``assign(_:tensor:name:)``).

    It runs only when listed in ``target_operations`` (or as a control dependency of something
    that runs). Assignments take effect only if the whole run succeeds.
    """
    op = g.variable_operation(variable, f"assign op {name or 'assign'!r}")
    tensor = g.as_tensor(tensor, f"assign op {name or 'assign'!r}", like=op.outputs[0])
    return g.add_op("assign", [op.outputs[0], tensor], {}, name)




@gradient("read")
def _read_gradient(g, op, dy, wanted):
    """A read passes the gradient to the variable it reads."""
    return [dy]
