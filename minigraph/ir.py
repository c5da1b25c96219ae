"""The intermediate representation: Tensor, Operation and OpDef, the facts about an op type.

Tensors and operations are symbolic nodes of a graph, immutable after creation. An ``OpDef``
holds every fact about an op type that a tool needs (names, inputs, infer rule, kind, family,
gradient role); ``OPS`` maps each op type to its ``OpDef``. Op modules fill it (minigraph/ops).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Mapping, Optional

from .errors import RegistrationError, SymbolicValueError
from .types import DataType

if TYPE_CHECKING:  # pragma: no cover
    from .builder import GraphBuilder as Graph

Kind = Literal["memory", "view", "compute"]
Role = Literal["forward", "data_gradient", "weights_gradient"]
InferRule = Callable[[list, dict], list]  # (input ShapedTypes, attrs) -> output ShapedTypes
GradientRule = Callable[..., list]  # (g, op, dy, wanted) -> [gradient tensor or None per input]


@dataclass(eq=False)
class OpDef:
    """Everything about one op type; tools read these fields instead of matching names.

    ``kind``: ``"memory"`` (placeholder, constant, variable, read, assign), ``"view"`` (the
    output is the input's bytes under another shape: reshape and friends) or ``"compute"``.
    ``family``: the MPSGraph op family (``"arithmetic"``, ``"convolution"``, ...).
    ``role``: ``"forward"``, or ``"data_gradient"`` / ``"weights_gradient"`` for MPSGraph's
    gradient ops of a convolution-family op (``forward`` names that op).
    ``internal``: the executor handles the op itself (no backend kernel).
    ``attrs`` are the attribute names listings and docs show; ``hidden_attrs`` the others (a
    constant's value); ``attr_names`` both: an op with any other attribute is refused.
    ``since``: the first (macOS, iOS) versions whose MPSGraph has the op, per Apple's
    documentation (MPSGraph itself arrived in macOS 11.0 / iOS 14.0).
    """

    type: str
    swift: str
    objc: str
    inputs: tuple
    infer: InferRule
    family: str = "misc"
    kind: Kind = "compute"
    role: Role = "forward"
    forward: Optional[str] = None
    differentiable: bool = True
    internal: bool = False
    grad: Optional[GradientRule] = None
    builder: Optional[Callable] = None
    attrs: tuple = ()  # attribute names shown in listings and docs
    hidden_attrs: tuple = ()  # attribute names not shown (arrays such as a constant's value)
    since: tuple = ("11.0", "14.0")  # (macOS, iOS)

    @property
    def attr_names(self) -> tuple:
        """Every attribute name an op of this type may have."""
        return self.attrs + self.hidden_attrs

    @property
    def variadic(self) -> bool:
        """Whether the op takes a list of tensors (``inputs == ("tensors",)``, e.g. concat)."""
        return self.inputs == ("tensors",)


OPS: dict[str, OpDef] = {}


def register_op(opdef: OpDef) -> OpDef:
    """Add an op type to ``OPS``; a second declaration of the same type is refused."""
    if opdef.type in OPS:
        raise RegistrationError(f"op type {opdef.type!r} declared twice")
    OPS[opdef.type] = opdef
    return opdef


def opdef_of(key: str | OpDef, what: str) -> OpDef:
    """The declared ``OpDef`` for an op type or ``OpDef`` (kernel tables are keyed by it)."""
    opdef = OPS.get(key) if isinstance(key, str) else key
    if not isinstance(opdef, OpDef) or OPS.get(opdef.type) is not opdef:
        raise RegistrationError(f"{what}: {key!r} is not a declared op type")
    return opdef


class KernelTable:
    """A backend's kernels keyed by ``OpDef``; registering a second kernel for an op is refused."""

    def __init__(self, backend: str):
        self.backend = backend
        self._kernels: dict[OpDef, Callable] = {}

    def register(self, *ops: str | OpDef) -> Callable[[Callable], Callable]:
        """A decorator registering ``factory`` as the kernel of each op in ``ops``."""
        defs = [opdef_of(o, f"{self.backend} kernel") for o in ops]

        def deco(factory: Callable) -> Callable:
            for d in defs:
                if d in self._kernels:
                    raise RegistrationError(f"{self.backend} kernel for {d.type!r} registered twice "
                                            f"({self._kernels[d].__qualname__} and {factory.__qualname__})")
                self._kernels[d] = factory
            return factory

        return deco

    @contextlib.contextmanager
    def replaced(self, key: str | OpDef, factory: Optional[Callable]) -> Iterator[None]:
        """Run with another kernel (None: none) for one op inside the block; tests inject failures this way."""
        opdef = opdef_of(key, f"{self.backend} kernel")
        old = self._kernels.get(opdef)
        if factory is None:
            self._kernels.pop(opdef, None)
        else:
            self._kernels[opdef] = factory
        try:
            yield
        finally:
            if old is None:
                self._kernels.pop(opdef, None)
            else:
                self._kernels[opdef] = old

    def unregister(self, key: str | OpDef) -> None:
        """Remove an op's kernel (a plugin or test that registered one and is done with it)."""
        opdef = OPS.get(key) if isinstance(key, str) else key
        self._kernels.pop(opdef, None)  # type: ignore[arg-type]

    def get(self, key: str | OpDef) -> Optional[Callable]:
        """The kernel factory of an op type, or None."""
        opdef = OPS.get(key) if isinstance(key, str) else key
        return self._kernels.get(opdef) if opdef is not None else None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, (str, OpDef)) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.ops())

    def ops(self) -> list[str]:
        """The op types that have a kernel."""
        return sorted(d.type for d in self._kernels)


class OpAttrs(Mapping):
    """An op's attributes, read-only: they are fixed when the op is built, so a plan compiled later
    sees what the op was built with (a live dict would change the next compile silently)."""

    __slots__ = ("_items", "_label")

    def __init__(self, items: Mapping, label: str):
        self._items = dict(items)
        self._label = label

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __setitem__(self, key: str, value: Any) -> None:
        raise SymbolicValueError(f"{self._label}: attributes are fixed when the op is built (cannot set "
                                 f"{key!r}); build a new op instead")

    def __delitem__(self, key: str) -> None:
        raise SymbolicValueError(f"{self._label}: attributes are fixed when the op is built (cannot delete "
                                 f"{key!r}); build a new op instead")

    def __repr__(self) -> str:
        return f"OpAttrs({self._items!r})"


class Operation:
    """One node of a graph (MPSGraphOperation): a typed op with named inputs and outputs.

    ``attrs`` is a read-only mapping, fixed when the op is built.
    """

    __slots__ = ("graph", "name", "type", "inputs", "outputs", "control_dependencies",
                 "attrs", "index", "location", "requested_name", "from_gradients")

    def __init__(self, graph: Graph, type: str, name: str, inputs: tuple, attrs: Mapping,
                 control_dependencies: tuple, index: int, location: str, requested_name: str,
                 from_gradients: bool = False):
        self.graph = graph
        self.type = type
        self.name = name
        self.inputs = inputs
        self.attrs: Mapping[str, Any] = attrs if isinstance(attrs, OpAttrs) else OpAttrs(attrs, f"{type} op {name!r}")
        self.control_dependencies = control_dependencies
        self.index = index
        self.location = location
        self.requested_name = requested_name
        self.from_gradients = from_gradients  # built by Graph.gradients
        self.outputs: tuple = ()

    def __repr__(self) -> str:
        return f"<Operation {self.name!r} type={self.type}>"

    @property
    def opdef(self) -> OpDef:
        """The declaration of this op's type."""
        return OPS[self.type]

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

    def __init__(self, graph: Graph, operation: Operation, index: int, shape: tuple, dtype: DataType):
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
        raise SymbolicValueError(f"the truth value of symbolic tensor {self.name!r} is not known until the "
                         "graph runs; use g.select(...) or run the graph and test the result")

    def __iter__(self):
        raise SymbolicValueError(f"symbolic tensor {self.name!r} is not iterable; use g.slice(...)")

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
