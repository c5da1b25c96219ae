"""The intermediate representation: Tensor, Operation and OpDef, the facts about an op type.

Tensors and operations are symbolic nodes of a graph, immutable after creation. An ``OpDef``
holds every fact about an op type that a tool needs (names, inputs, infer rule, kind, family,
gradient role); ``OPS`` maps each op type to its ``OpDef``. Op modules fill it (minigraph/ops).
"""
from __future__ import annotations

import contextlib
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Mapping, Optional

from .errors import RegistrationError, SymbolicValueError
from .types import DataType, int32

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
    ``elementwise``: a pure elementwise map (each output element depends only on the input
    elements at its position, inputs broadcast as NumPy): the compiler may fuse such ops.
    ``since``: the first (macOS, iOS) versions whose MPSGraph has the op, per Apple's
    documentation (MPSGraph itself arrived in macOS 11.0 / iOS 14.0).
    ``data_dependent_shape``: the size of a -1 dimension of its output is known only once the op
    has run on its data (non_zero_indices): no buffer is planned for it, and it may only be a
    target of compile/run, never an input of another op (the compiler refuses that, PlanError).
    ``four_bit``: the op takes or makes int4 / uint4 (the quantization ops, cast, and ops that only
    move values); every other op refuses them.
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
    elementwise: bool = False
    grad: Optional[GradientRule] = None
    builder: Optional[Callable] = None
    attrs: tuple = ()  # attribute names shown in listings and docs
    hidden_attrs: tuple = ()  # attribute names not shown (arrays such as a constant's value)
    since: tuple = ("11.0", "14.0")  # (macOS, iOS)
    control_flow: bool = False  # runs the blocks in its ``blocks`` attribute (ops/control_flow.py)
    # (op, in_types, planner) -> (out types, Step.blocks): how the compiler specialises an op that
    # runs blocks or another executable (planner.subplan(block, arg_types), planner.callables)
    plan_rule: Optional[Callable] = None
    data_dependent_shape: bool = False
    four_bit: bool = False

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


KERNEL_TABLES: dict = {}  # backend name -> its KernelTable


@dataclass(frozen=True)
class MemoryFacts:
    """The op types whose kernels (on one backend) declared ``in_place``, ``fresh`` and
    ``reads_only`` (``KernelTable.register``); each set contains the one before it. A backend
    hands them to the compiler, which decides buffer reuse from them alone."""

    in_place: frozenset = frozenset()
    fresh: frozenset = frozenset()
    reads_only: frozenset = frozenset()


class KernelTable:
    """A backend's kernels keyed by ``OpDef``; registering a second kernel for an op is refused.
    Each table is listed in ``KERNEL_TABLES`` under its backend's name, so that the compiler can
    fold constants with the NumPy kernels without importing a backend."""

    def __init__(self, backend: str):
        self.backend = backend
        self._kernels: dict[OpDef, Callable] = {}
        self._memory: dict[OpDef, frozenset] = {}
        KERNEL_TABLES[backend] = self

    def register(self, *ops: str | OpDef, in_place: bool = False, fresh: bool = False,
                 reads_only: bool = False) -> Callable[[Callable], Callable]:
        """A decorator registering ``factory`` as the kernel of each op in ``ops``, with what the
        kernel may do with memory, which the compiler's buffer planning relies on
        (``memory_facts``): ``reads_only``, it only reads its inputs (its result may be a view of
        one, it keeps no reference); ``fresh``, its result is a new buffer, never a view of an input
        (implies ``reads_only``); ``in_place``, it may write its result into the input the plan
        names in ``step.reuse`` (implies ``fresh``). Undeclared: none of these, so the plan never
        reuses a buffer around the kernel."""
        defs = [opdef_of(o, f"{self.backend} kernel") for o in ops]
        flags = frozenset(f for f, on in (("in_place", in_place), ("fresh", fresh or in_place),
                                          ("reads_only", reads_only or fresh or in_place)) if on)

        def deco(factory: Callable) -> Callable:
            for d in defs:
                if d in self._kernels:
                    raise RegistrationError(f"{self.backend} kernel for {d.type!r} registered twice "
                                            f"({self._kernels[d].__qualname__} and {factory.__qualname__})")
                self._kernels[d] = factory
                self._memory[d] = flags
            return factory

        return deco

    def memory_facts(self) -> "MemoryFacts":
        """What the registered kernels declared they may do with memory (``register``)."""
        def having(flag: str) -> frozenset:
            return frozenset(d.type for d, f in self._memory.items() if flag in f and d in self._kernels)
        return MemoryFacts(having("in_place"), having("fresh"), having("reads_only"))

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
                 "attrs", "index", "location", "requested_name", "from_gradients", "block")

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
        self.block: Optional[Block] = None  # the control-flow block the op was built in; None: the graph

    @property
    def blocks(self) -> tuple:
        """The blocks a control-flow op runs (``if_then_else``'s then and else, a loop's), else ()."""
        return tuple(self.attrs.get("blocks", ())) if self.opdef.control_flow else ()

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


class Block:
    """The ops of one block of a control-flow op (an MPSGraph then/else, before/after or body
    closure): its ``arguments`` (``block_argument`` tensors, placeholder-like, typed), the ops
    built inside (``ops``, creation order, arguments included), its ``results`` and the
    ``captures``, the tensors built outside the block that its ops read (the control-flow op
    takes them as inputs, so that a plan computes them before it runs the block)."""

    __slots__ = ("name", "label", "arguments", "ops", "results", "captures", "parent", "location")

    def __init__(self, name: str, label: str, parent: Optional["Block"], location: str):
        self.name = name  # "then", "else", "before", "after", "body"
        self.label = label  # the control-flow op and block, for messages
        self.arguments: tuple = ()
        self.ops: list = []
        self.results: tuple = ()
        self.captures: tuple = ()
        self.parent = parent
        self.location = location

    def encloses(self, other: Optional["Block"]) -> bool:
        """Whether ``other`` is this block or one nested in it."""
        while other is not None:
            if other is self:
                return True
            other = other.parent
        return False

    def __repr__(self) -> str:
        return f"<Block {self.label} ({len(self.ops)} ops, {len(self.results)} results)>"


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

    # -------------------------------------------------------------- no values while building
    def _no_value(self, what: str):
        return SymbolicValueError(
            f"{what}: {self.name!r} ({list(self.shape)} {self.dtype.name}) is a symbolic tensor, a node of the graph "
            "being built; it has values only when the graph runs. Run it first, e.g. value = g.run(feeds, [t])[t], "
            "and use the array (the shape is known now: t.shape)")

    def __array__(self, dtype=None, copy=None):
        raise self._no_value("np.asarray(t) has no values to read")

    __array_ufunc__ = None  # ndarray <op> tensor defers to the tensor's reflected op (a graph op)

    def __float__(self):
        raise self._no_value("float(t) has no value to read")

    def __int__(self):
        raise self._no_value("int(t) has no value to read")

    def __index__(self):
        raise self._no_value("a tensor cannot be a Python index")

    def __complex__(self):
        raise self._no_value("complex(t) has no value to read")

    def __len__(self):
        raise self._no_value("len(t) is not defined (t.shape[0] is the first size; -1 there means known only at run time)")

    # -------------------------------------------------------------- conveniences that build ops
    def __getitem__(self, key):
        """``t[1:3, :, ::2]``, ``t[0]``, ``t[..., None]`` as ops; no MPSGraph counterpart (there,
        ``sliceTensor`` takes the arguments explicitly).

        Each sliced axis is a ``slice`` op (a step other than 1 a gather of constant indices); an
        int index drops its axis, None inserts one, ``...`` fills the axes not named."""
        return index_tensor(self, key)

    @property
    def T(self) -> "Tensor":
        """The transpose of a rank-2 tensor (``g.transpose(t, 0, 1)``); no MPSGraph counterpart."""
        if len(self.shape) != 2:
            raise SymbolicValueError(f"t.T needs a rank-2 tensor; {self.name!r} has shape {self.shape}: use "
                                     "g.permute(t, permutation) or g.transpose(t, dimension, with_dimension)")
        return self.graph.transpose(self, 0, 1)

    def reshape(self, *shape) -> "Tensor":
        """``g.reshape(t, shape)``: ``t.reshape(2, -1)`` or ``t.reshape([2, -1])``; no MPSGraph counterpart as a method.

        Args:
            shape: The new shape, as ints or one list; one -1 is inferred.
        """
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return self.graph.reshape(self, list(shape))

    def sum(self, axes=None) -> "Tensor":
        """``g.reduction_sum(t, axes)``: reduced axes kept as size 1, as in MPSGraph; no MPSGraph counterpart as a method.

        Args:
            axes: An axis or a list of axes; None reduces every axis.
        """
        return self.graph.reduction_sum(self, axes=_axes(axes))

    def mean(self, axes=None) -> "Tensor":
        """``g.mean(t, axes)``: reduced axes kept as size 1, as in MPSGraph; no MPSGraph counterpart as a method.

        Args:
            axes: An axis or a list of axes; None reduces every axis.
        """
        return self.graph.mean(self, axes=_axes(axes) if axes is not None else list(range(len(self.shape))))

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


def _axes(axes: Any) -> Any:
    """An int axis as a list; None and lists unchanged."""
    return [axes] if isinstance(axes, int) else axes


def _index_error(t: Tensor, key: Any, why: str) -> SymbolicValueError:
    return SymbolicValueError(f"{t.name!r}[{key!r:.60}] ({list(t.shape)}): {why}")


def _expand_key(t: Tensor, key: Any) -> list:
    """The index as one entry per axis (an Ellipsis expanded, None kept as a new axis)."""
    key = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in key) > 1:
        raise _index_error(t, key, "at most one ... (Ellipsis)")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > len(t.shape):
        raise _index_error(t, key, f"{used} indices for a rank-{len(t.shape)} tensor")
    fill = [slice(None)] * (len(t.shape) - used)
    at = [i for i, k in enumerate(key) if k is Ellipsis]  # identity: == on a tensor builds an op
    return key[:at[0]] + fill + key[at[0] + 1:] if at else key + fill


def index_tensor(t: Tensor, key: Any) -> Tensor:
    """``t[key]`` as graph ops: slices, gathers of constant indices for steps, squeeze, expand_dims."""
    g = t.graph
    out, axis, pos, drop, new = t, 0, 0, [], []
    for k in _expand_key(t, key):
        if k is None:  # a new axis at this position of the result
            new.append(pos)
            pos += 1
            continue
        size = t.shape[axis]
        if isinstance(k, slice):
            out = _slice_axis(g, out, axis, k, size, t, key)
            pos += 1
        elif isinstance(k, (list, tuple)) or getattr(k, "ndim", 0) > 0:  # NumPy's integer or mask indexing
            raise _index_error(t, key, f"index {k!r:.40} is an array; a tensor takes ints, slices of ints, None and "
                               "... (Ellipsis): pick elements with g.gather(t, g.constant(indices), axis), or "
                               "g.gather_nd for several axes")
        elif hasattr(k, "__index__") and not isinstance(k, (bool, Tensor)) and getattr(getattr(k, "dtype", None), "kind", "") != "b":
            i = _as_index(t, key, k, "index")  # ints, NumPy ints and 0-d int arrays
            if size != -1 and not -size <= i < size:
                raise _index_error(t, key, f"index {i} is out of range for axis {axis} of size {size}")
            out = g.slice(out, axis, i, 1)
            drop.append(axis)
        else:
            raise _index_error(t, key, f"index {k!r:.40} is not an int, a slice, None or ...; index with a tensor "
                               "through g.gather(t, indices, axis)")
        axis += 1
    if drop:
        out = g.squeeze(out, axes=drop)
    if new:
        out = g.expand_dims(out, axes=new)
    return out


def _as_index(t: Tensor, key: Any, v: Any, what: str) -> int:
    """``v`` as a Python int (anything with ``__index__``, as Python's own indexing takes)."""
    try:
        return operator.index(v)
    except TypeError:
        raise _index_error(t, key, f"{what} {v!r:.40} is not an int; a tensor takes ints, slices of ints, None "
                           "and ... (Ellipsis)") from None


def _slice_axis(g: Any, out: Tensor, axis: int, k: slice, size: int, t: Tensor, key: Any) -> Tensor:
    k = slice(*(None if v is None else _as_index(t, key, v, f"slice {what}")
                for v, what in ((k.start, "start"), (k.stop, "stop"), (k.step, "step"))))
    if k.step == 0:
        raise _index_error(t, key, "slice step cannot be zero")
    if k == slice(None) or (k.start in (None, 0) and k.stop is None and k.step in (None, 1)):
        return out
    if size == -1:
        start, stop, step = k.start or 0, k.stop, k.step or 1
        if step != 1 or start < 0 or stop is None or stop < 0:
            raise _index_error(t, key, f"axis {axis} has a size known only at run time (-1): slice it with a "
                               "step of 1 and non-negative start and stop, e.g. t[0:8]")
        return g.slice(out, axis, start, max(stop - start, 0))
    start, stop, step = k.indices(size)
    if step == 1:
        return g.slice(out, axis, start, max(stop - start, 0))
    picks = list(range(start, stop, step))
    return g.gather(out, g.constant(picks, dtype=int32), axis)
