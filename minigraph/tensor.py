"""Tensor and Operation: symbolic nodes of a Graph, immutable after creation."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import MiniGraphError
from .types import DataType

if TYPE_CHECKING:  # pragma: no cover
    from .graph import Graph


class Operation:
    """One node of a graph (MPSGraphOperation): a typed op with named inputs and outputs."""

    __slots__ = ("graph", "name", "type", "inputs", "outputs", "control_dependencies",
                 "attrs", "index", "location", "requested_name")

    def __init__(self, graph: "Graph", type: str, name: str, inputs: tuple, attrs: dict,
                 control_dependencies: tuple, index: int, location: str, requested_name: str):
        self.graph = graph
        self.type = type
        self.name = name
        self.inputs = inputs
        self.attrs = attrs
        self.control_dependencies = control_dependencies
        self.index = index
        self.location = location
        self.requested_name = requested_name
        self.outputs: tuple = ()

    def __repr__(self) -> str:
        return f"<Operation {self.name!r} type={self.type}>"

    @property
    def output(self) -> "Tensor":
        """The first output tensor (most ops have exactly one): ``outputTensors[0]`` in MPSGraph."""
        return self.outputs[0]


def _binary(fname: str, reverse: bool = False):
    def method(self, other):
        g = self.graph
        a, b = (other, self) if reverse else (self, other)
        return getattr(g, fname)(a, b)

    method.__name__ = f"__{'r' if reverse else ''}{fname}__"
    return method


class Tensor:
    """A symbolic tensor (MPSGraphTensor): the output of an op, with a shape and dtype.

    ``shape`` is a tuple; -1 marks a dimension known only at run time. Tensors hash by
    identity, so they are dictionary keys for feeds and results. As in PyTorch, ``==``,
    ``<`` and friends build elementwise comparison ops.
    """

    __slots__ = ("graph", "operation", "index", "shape", "dtype", "__weakref__")
    __array_priority__ = 1000  # numpy scalars/arrays on the left defer to our reflected ops

    def __init__(self, graph: "Graph", operation: Operation, index: int, shape: tuple, dtype: DataType):
        self.graph = graph
        self.operation = operation
        self.index = index
        self.shape = shape
        self.dtype = dtype

    @property
    def name(self) -> str:
        """The producing op's unique name, or ``"op:i"`` for output i of a multi-output op (an MPSGraphTensor's name is private)."""
        op = self.operation
        return op.name if len(op.outputs) <= 1 else f"{op.name}:{self.index}"

    @property
    def rank(self) -> int:
        """The number of dimensions, ``len(shape)`` (``shape.count`` of an MPSGraphTensor)."""
        return len(self.shape)

    @property
    def location(self) -> str:
        """``file:line`` where the user built the producing op (its ``operation.location``)."""
        return self.operation.location

    def __repr__(self) -> str:
        return f"<Tensor {self.name!r} shape={self.shape} dtype={self.dtype.name}>"

    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError_(f"the truth value of symbolic tensor {self.name!r} is not known until the "
                         "graph runs; use g.select(...) or run the graph and test the result")

    def __iter__(self):
        raise TypeError_(f"symbolic tensor {self.name!r} is not iterable; use g.slice(...)")

    __add__ = _binary("addition")
    __radd__ = _binary("addition", True)
    __sub__ = _binary("subtraction")
    __rsub__ = _binary("subtraction", True)
    __mul__ = _binary("multiplication")
    __rmul__ = _binary("multiplication", True)
    __truediv__ = _binary("division")
    __rtruediv__ = _binary("division", True)
    __pow__ = _binary("power")
    __rpow__ = _binary("power", True)
    __matmul__ = _binary("matrix_multiplication")
    __rmatmul__ = _binary("matrix_multiplication", True)
    __lt__ = _binary("less_than")
    __le__ = _binary("less_than_or_equal_to")
    __gt__ = _binary("greater_than")
    __ge__ = _binary("greater_than_or_equal_to")
    __eq__ = _binary("equal")  # type: ignore[assignment]
    __ne__ = _binary("not_equal")  # type: ignore[assignment]

    def __neg__(self):
        return self.graph.negative(self)

    def __abs__(self):
        return self.graph.absolute(self)


class TypeError_(MiniGraphError, TypeError):
    """Misuse of a symbolic tensor as if it held a value."""


def as_operation(x: Any) -> Any:
    return x.operation if isinstance(x, Tensor) else x
