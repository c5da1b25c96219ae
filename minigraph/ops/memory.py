"""Placeholders, constants, variables, read and assign (MPSGraphMemoryOps)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import DTypeError, ResourceLimitError, ShapeError
from ..ir import Operation
from ..types import ShapedType, as_dtype, as_shape, float32, num_elements
from ..coerce import frozen_array
from ..limits import MAX_ELEMENTS
from .registry import defop, gradient


def _no_inputs(in_types, attrs):
    return [ShapedType(attrs["shape"], attrs["dtype"])]


@defop("placeholder", swift="placeholder(shape:dataType:name:)",
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


@defop("constant", swift="constant(_:shape:dataType:)", objc="constantWithData:shape:dataType:",
       inputs=(), infer=_no_inputs, family="memory", kind="memory", differentiable=False,
       attrs=("shape", "dtype"), internal=True)
def constant(g, value, dtype=None, shape=None, name: Optional[str] = None):
    """A constant from a scalar or array (MPSGraph ``constant``).

    ``dtype`` defaults to the array's dtype; Python floats give float32 and ints int32.
    With ``shape``, a scalar is filled to that shape (``constant(_:shape:dataType:)``).
    """
    try:
        arr = frozen_array(value, dtype)
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
    return g.add_op("constant", [], {"shape": arr.shape, "dtype": as_dtype(arr.dtype), "value": arr}, name).output


@defop("variable", swift="variable(with:shape:dataType:name:)",
       objc="variableWithData:shape:dataType:name:", inputs=(), infer=_no_inputs,
       family="memory", kind="memory", differentiable=True, attrs=("shape", "dtype"), internal=True)
def variable(g, value, dtype=None, name: Optional[str] = None):
    """A variable whose value persists across runs (MPSGraph ``variable(with:shape:dataType:name:)``).

    Shape and dtype come from ``value``. Consumers read its current value; change it with
    ``assign`` or an optimizer op listed in ``target_operations``.
    """
    try:
        arr = frozen_array(value, dtype)
    except DTypeError as e:
        raise DTypeError(f"variable op {name or 'variable'!r}: {e}") from None
    return g.add_op("variable", [], {"shape": arr.shape, "dtype": as_dtype(arr.dtype), "initial_value": arr}, name).output


@defop("read", swift="read(_:name:)", objc="readVariable:name:", inputs=("variable",),
       infer=lambda ts, a: [ts[0]], family="memory", kind="memory", internal=True)
def read(g, variable, name: Optional[str] = None):
    """The variable's value at this point of the run (MPSGraph ``read(_:name:)``)."""
    op = g.variable_operation(variable, f"read op {name or 'read'!r}")
    return g.add_op("read", [op.outputs[0]], {}, name).output


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
