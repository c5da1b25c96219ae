"""GraphBuilder: the part of a Graph that builds ops (names, scopes, control dependencies, variables).

``add_op`` is the one way an op enters a graph: builders, autodiff and the loader all use it.
Nobody else edits a graph's op list, name tables or variable values.
"""
from __future__ import annotations

import contextlib
import difflib
import threading
import warnings
from typing import Any, Iterator, Mapping, Optional, Sequence

import numpy as np

from .coerce import as_ndarray, exact_array, is_array
from .errors import (AmbiguousNameError, DTypeError, GraphMismatchError, MiniGraphError, NameLookupError, ShapeError,
                     TargetError)
from .callsite import user_location
from .ir import OPS, Block, OpDef, Operation, Tensor
from .limits import MAX_RANK
from .op_builders import OpBuilders
from .types import FOUR_BIT, DataType, ShapedType, as_dtype

def op_label(type: str, name: str) -> str:
    return f"{type} op {name!r}"


class VariableStore:
    """The current values of a graph's variables, replaced as a whole on each commit.

    ``values`` is never edited in place: a run reads it once, and a commit swaps in a new dict
    with one reference assignment, so a concurrent run sees all of a run's assignments or none.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()  # runs that assign are serialised per graph
        self.values: Mapping[Operation, np.ndarray] = {}

    def set(self, op: Operation, value: np.ndarray) -> None:
        """Give one variable a value (a read-only array of the variable's dtype)."""
        with self.lock:
            self.values = {**self.values, op: value}

    def commit(self, assigned: Mapping[Operation, Any]) -> None:
        """Store a run's assignments: read-only copies in each variable's dtype."""
        if not assigned:
            return
        new = dict(self.values)
        for op, v in assigned.items():
            v = np.array(v, dtype=op.outputs[0].dtype.np_dtype, copy=True)
            v.setflags(write=False)
            new[op] = v
        self.values = new

    def restore(self, values: Mapping[Operation, np.ndarray]) -> None:
        """Put back values taken from ``values`` earlier (undo runs made since)."""
        self.values = values


class GraphBuilder(OpBuilders):
    """Builds named, typed ops: one method per op type (from ``OpBuilders``), names and scopes."""

    def __init__(self) -> None:
        self._ops: list[Operation] = []  # creation order; an op's index is its position
        self._by_name: dict[str, Operation] = {}  # unique name -> op
        self._requested: dict[str, list[Operation]] = {}  # user-given scoped name -> ops that asked for it
        self._user_names: dict[Operation, str] = {}  # the reverse of _requested
        self._next_suffix: dict[str, int] = {}  # where the search for a free "name_i" resumes
        self._scopes = threading.local()  # per-thread name scope and control dependency stacks
        self._placeholders: list[Tensor] = []
        self._variables: list[Tensor] = []  # creation order
        self._state_variables: set[Operation] = set()  # built inside non_trainable(): optimizer state
        self._build_lock = threading.RLock()  # guards the tables above
        self.variable_store = VariableStore()
        # the graph-level seed: random ops built with seed=None derive theirs from it and their
        # index, so a program that sets it is reproducible (docs/random.md); not in MPSGraph
        self.random_seed: Optional[int] = None
        # assign operations a training step runs besides the optimizer's (an imported model's
        # batch-norm running statistics, mg.from_onnx); not in MPSGraph
        self.update_operations: list[Operation] = []

    # ---------------------------------------------------------------- introspection
    @property
    def operations(self) -> list[Operation]:
        """All operations, in creation order (MPSGraph has no public list of them; see ``placeholders``)."""
        return list(self._ops)

    @property
    def placeholders(self) -> list[Tensor]:
        """All placeholder tensors (MPSGraph ``placeholderTensors``), in creation order."""
        return list(self._placeholders)

    @property
    def placeholder_tensors(self) -> list[Tensor]:
        """Deprecated: use ``placeholders`` (MPSGraph ``placeholderTensors``)."""
        warnings.warn("Graph.placeholder_tensors is deprecated; use Graph.placeholders", DeprecationWarning, stacklevel=2)
        return self.placeholders

    @property
    def variables(self) -> list[Tensor]:
        """All variable tensors, optimizer state included, in creation order (no MPSGraph counterpart)."""
        return list(self._variables)

    @property
    def trainable_variables(self) -> list[Tensor]:
        """The variables a model trains, in creation order: ``variables`` less those built inside
        ``non_trainable()`` (the optimizers' state, such as Adam's moments); no MPSGraph counterpart."""
        return [t for t in self._variables if t.operation not in self._state_variables]

    @contextlib.contextmanager
    def non_trainable(self) -> Iterator[None]:
        """Variables built inside the block are left out of ``trainable_variables`` (optimizer state);
        no MPSGraph counterpart. The block belongs to the thread that opens it."""
        marks = self._stack("state")
        marks.append(True)
        try:
            yield
        finally:
            marks.pop()

    def operation(self, name: str) -> Operation:
        """The operation with this unique name (``MPSGraphOperation.name``; MPSGraph itself has no lookup by name).

        Args:
            name: The op's unique name, scopes included (``"block1/conv_1"``).

        Raises:
            AmbiguousNameError: ``name`` was requested for several ops; the message lists the
                unique names they got (``name``, ``name_1``, ...).
            NameLookupError: no op has that name; the message lists close matches.
        """
        if not isinstance(name, str):
            raise NameLookupError(f"operation names are strings; got {type(name).__name__} {name!r:.60}")
        dup = self._requested.get(name)
        if dup is not None and len(dup) > 1:
            raise AmbiguousNameError(
                f"name {name!r} was given to {len(dup)} ops; they were made unique as "
                f"{', '.join(repr(o.name) for o in dup)}: look one up by its unique name")
        op = self._by_name.get(name)
        if op is None:
            raise NameLookupError(self._missing(name, "operation"))
        return op

    def tensor(self, name: str) -> Tensor:
        """The tensor with this name: an op's name, or ``"op:i"`` for output i (MPSGraph has no lookup by name).

        Args:
            name: The producing op's unique name, or ``"name:i"`` for its output ``i``.

        Raises:
            NameLookupError: no such tensor; the message lists close matches.
        """
        if not isinstance(name, str):
            raise NameLookupError(f"tensor names are strings; got {type(name).__name__} {name!r:.60}")
        base, _, idx = name.rpartition(":")
        if base and idx.isdigit() and base in self._by_name:
            op = self._by_name[base]
            if int(idx) < len(op.outputs):
                return op.outputs[int(idx)]
        op = self.operation(name)
        if not op.outputs:
            raise NameLookupError(f"{op_label(op.type, op.name)} has no output tensor "
                                  "(it is an operation such as assign); use g.operation(name)")
        return op.outputs[0]

    def user_name_of(self, op: Operation) -> Optional[str]:
        """The scoped name the user asked for when building ``op``, or None if it got a default name (not in MPSGraph).

        Args:
            op: An operation of this graph.
        """
        return self._user_names.get(op)

    def _missing(self, name: str, what: str) -> str:
        close = difflib.get_close_matches(name, list(self._by_name), n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
            f"; the graph has {len(self._ops)} ops"
        return f"no {what} named {name!r}{hint}"

    # ---------------------------------------------------------------- naming and scopes
    def _stack(self, which: str) -> list:
        st = getattr(self._scopes, which, None)
        if st is None:
            st = []
            setattr(self._scopes, which, st)
        return st

    @contextlib.contextmanager
    def name_scope(self, scope: str) -> Iterator[str]:
        """Prefix ``scope/`` to the names of every op built inside the block (scopes nest).

        MPSGraph has no name scopes; this is TensorFlow 1's ``name_scope``. Scopes belong to the
        thread that opens them.

        Args:
            scope: A non-empty name; nested scopes join with ``/``.
        """
        if not isinstance(scope, str) or not scope.strip("/"):
            raise NameLookupError(f"name_scope needs a non-empty string, got {scope!r}")
        scopes = self._stack("names")
        scopes.append(scope.strip("/"))
        try:
            yield "/".join(scopes) + "/"
        finally:
            scopes.pop()

    def _scoped(self, name: str) -> str:
        prefix = "/".join(self._stack("names"))
        return f"{prefix}/{name}" if prefix else name

    def _unique_name(self, full: str) -> str:
        if full not in self._by_name:
            return full
        # resume after the last suffix given to this base: names are never freed, so this is
        # the same smallest free suffix as a scan from 1, without the O(ops) scan per op
        i = self._next_suffix.get(full, 1)
        while f"{full}_{i}" in self._by_name:
            i += 1
        self._next_suffix[full] = i + 1
        return f"{full}_{i}"

    @contextlib.contextmanager
    def gradient_scope(self, scope: str) -> Iterator[str]:
        """A name scope whose ops are marked ``from_gradients``; autodiff builds inside one (not in MPSGraph).

        Args:
            scope: A non-empty name, as for ``name_scope``.
        """
        marks = self._stack("gradient")
        marks.append(True)
        try:
            with self.name_scope(scope) as prefix:
                yield prefix
        finally:
            marks.pop()

    @contextlib.contextmanager
    def control_dependencies(self, ops: Sequence[Any]) -> Iterator[None]:
        """Every op built inside the block runs only after ``ops`` (tensors mean their ops).

        MPSGraph ``controlDependency(with:dependentBlock:name:)``; an op listed here is pulled
        into any plan that needs an op built inside the block.

        Args:
            ops: Operations (or tensors, meaning the ops that made them) of this graph.
        """
        deps = []
        for o in ops:
            o = o.operation if isinstance(o, Tensor) else o
            if not isinstance(o, Operation):
                raise TargetError(f"control_dependencies takes operations or tensors, got {o!r}")
            self.check_same_graph(o, "control_dependencies")
            deps.append(o)
        control = self._stack("control")
        control.append(deps)
        try:
            yield
        finally:
            control.pop()

    # ---------------------------------------------------------------- building
    def complex_constant(self, real_part: float, imaginary_part: float, dtype: Any = "complex64",
                         shape: Optional[Sequence[int]] = None, name: Optional[str] = None) -> Tensor:
        """A complex constant ``real_part + i imaginary_part``, filled to ``shape`` when given (MPSGraph
        ``complexConstant(realPart:imaginaryPart:)`` and its ``dataType:`` and ``shape:dataType:`` forms).
        A ``constant`` op.

        Args:
            real_part: The real part (a Python number).
            imaginary_part: The imaginary part (a Python number).
            dtype: complex64 (the default, Apple's) or complex32.
            shape: The shape to fill; None gives a scalar.
            name: The op's name.
        """
        label = f"complex_constant {name or 'constant'!r}"
        try:
            dt = as_dtype(dtype)
        except DTypeError as e:
            raise type(e)(f"{label}: {e}") from None
        if not dt.is_complex:
            raise DTypeError(f"{label}: dtype must be complex64 or complex32, got {dt.name}")
        for what, v in (("real_part", real_part), ("imaginary_part", imaginary_part)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise DTypeError(f"{label}: {what} must be a real number, got {v!r}")
        return self.constant(np.complex64(complex(float(real_part), float(imaginary_part))), dt, shape, name)

    def check_same_graph(self, x: Any, label: str) -> None:
        """Raise GraphMismatchError if the tensor or operation ``x`` belongs to another graph (MPSGraph does not check).

        Args:
            x: A tensor or operation.
            label: What is being built, for the message.
        """
        if x.graph is not self:
            raise GraphMismatchError(f"{label}: {x!r} belongs to another graph; "
                                     "tensors and operations can only be used in the graph that made them")

    def as_tensor(self, value: Any, label: str, like: Optional[Tensor] = None,
                  dtype: Optional[DataType] = None) -> Tensor:
        """A tensor of this graph for an op's operand: tensors pass through, numbers and arrays become constants.

        A scalar (a Python number, a NumPy scalar or a 0-d array) takes the dtype of ``like`` (the
        other operand), as MPSGraph users cast, and must keep its value in it: ``x_int8 + 300``,
        ``x_int8 + np.int64(300)``, ``x_bool == 2`` and ``x_float16 + 70000`` are refused.

        Args:
            value: A tensor of this graph, a number, a nested list or an array.
            label: The op being built, for messages.
            like: The other operand, whose dtype a scalar takes.
            dtype: The constant's dtype (overrides ``like``).
        """
        if isinstance(value, Tensor):
            self.check_same_graph(value, label)
            return value
        if isinstance(value, Operation):
            raise TargetError(f"{label}: expected a tensor, got operation {value.name!r}")
        try:
            if is_array(value) and not isinstance(value, np.ndarray):
                value = as_ndarray(value)  # a torch tensor, a memoryview: read once, as NumPy reads it
            if dtype is None and like is not None and np.ndim(value) == 0:
                value, dtype = exact_array(value, like.dtype), like.dtype
            elif dtype is None and like is not None and not (is_array(value) or isinstance(value, np.generic)):
                dtype = like.dtype  # a list takes the other operand's dtype; arrays keep their own
            elif dtype is None and like is not None and like.dtype.name in FOUR_BIT and \
                    getattr(value, "dtype", None) == like.dtype.np_dtype:
                dtype = like.dtype  # NumPy has no int4: an int8 (uint8) array stands for int4 (uint4) codes
            return self.constant(value, dtype=dtype)
        except MiniGraphError as e:  # e.g. x + 300 with an int8 x: name the op being built
            raise type(e)(f"{label}: operand {value!r:.60} cannot be made a tensor: {e}") from None

    def add_op(self, type: str, inputs: Sequence[Tensor], attrs: dict, name: Optional[str] = None, *,
               control_dependencies: Optional[Sequence[Operation]] = None, location: Optional[str] = None,
               requested_name: Optional[str] = None, user_name: Optional[str] = None,
               from_gradients: Optional[bool] = None) -> Operation:
        """Add an op of a declared type after inferring (and checking) its output types (MPSGraph's op methods do this).

        The op gets a unique name (``name`` or the type, scoped, with ``_1``, ``_2``... when
        taken) and the control dependencies of the open ``control_dependencies`` blocks. The
        loader passes ``control_dependencies``, ``location``, ``requested_name`` and
        ``user_name`` (and ``from_gradients``) to rebuild an op as it was saved (no scopes apply then).

        Args:
            type: A declared op type (``minigraph.ir.OPS``).
            inputs: Tensors of this graph, one per declared input.
            attrs: The op's attributes.
            name: The requested name; None uses the type.
            control_dependencies: The op's control dependencies (the loader's; else the open blocks').
            location: ``file:line`` where the op was built (default: the caller's).
            requested_name: The name as requested, before scoping and uniquing.
            user_name: The scoped name the user gave, if any.
            from_gradients: Whether autodiff built it (default: whether a ``gradient_scope`` is open).

        Returns:
            The new Operation (``op.output`` is its result tensor).
        """
        opdef = OPS.get(type)
        if opdef is None:
            raise NameLookupError(f"no op type {type!r} is declared")
        if name is not None and not isinstance(name, str):
            raise NameLookupError(f"{type}: name must be a string or None, got {name!r}")
        label = op_label(type, name or type)
        inputs, attrs = _checked_signature(opdef, inputs, attrs, label)
        block = self._check_inputs(opdef, inputs, label, control_dependencies is not None)
        in_types = [ShapedType.__new__(ShapedType) for _ in inputs]
        for st, t in zip(in_types, inputs):
            object.__setattr__(st, "shape", t.shape)
            object.__setattr__(st, "dtype", t.dtype)
        try:
            out_types = opdef.infer(in_types, attrs)
        except MiniGraphError as e:
            raise type_of(e)(f"{label}: {e}") from None
        if not opdef.four_bit:
            _refuse_four_bit(label, in_types, out_types)
        for i, ot in enumerate(out_types):
            if len(ot.shape) > MAX_RANK:  # NumPy's limit: such a tensor could never be run
                raise ShapeError(f"{label}: {'its result' if len(out_types) == 1 else f'result {i}'} would have "
                                 f"rank {len(ot.shape)}, more than the {MAX_RANK} a tensor may have")
        rebuilding = control_dependencies is not None
        base = (name or type) if rebuilding else self._scoped(name or type)
        if user_name is None and name is not None and not rebuilding and not self._stack("gradient"):
            user_name = base  # autodiff's own names ("accumulate", "seed") are not the user's
        deps = tuple(control_dependencies or ()) if rebuilding else \
            tuple(o for group in self._stack("control") for o in group)
        with self._build_lock:
            full = self._unique_name(base)
            op = Operation(self, type, full, tuple(inputs), attrs, deps, len(self._ops),
                           location or user_location(), requested_name or name or type,
                           bool(self._stack("gradient")) if from_gradients is None else from_gradients)
            op.outputs = tuple(Tensor(self, op, i, ot.shape, ot.dtype) for i, ot in enumerate(out_types))
            if block is not None:
                op.block = block
                block.ops.append(op)
            self._ops.append(op)
            self._by_name[full] = op
            if user_name:
                self._requested.setdefault(user_name, []).append(op)
                self._user_names[op] = user_name
            if opdef.type == "placeholder":
                self._placeholders.append(op.outputs[0])
            if opdef.type == "variable":
                self._variables.append(op.outputs[0])
                if self._stack("state"):
                    self._state_variables.add(op)
        if "initial_value" in attrs:
            self.variable_store.set(op, attrs["initial_value"])
        return op

    def _check_inputs(self, opdef: OpDef, inputs: Sequence[Tensor], label: str, rebuilding: bool) -> Optional[Block]:
        """Tensors of this graph that the op may see; the block it is built in (None: the graph)."""
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TargetError(f"{label}: inputs must be tensors, got {t!r}")
            self.check_same_graph(t, label)
        block = self.current_block()
        if not rebuilding:
            for t in inputs:
                self.check_visible(t, label)
        if block is not None and opdef.type in ("variable", "assign", "placeholder"):
            raise TargetError(f"{label}: a {opdef.type} op cannot be built inside {block.label} (built at "
                              f"{block.location}); build it outside the block (a block may read outer tensors)")
        return block

    # ---------------------------------------------------------------- control-flow blocks
    def current_block(self) -> Optional[Block]:
        """The control-flow block being built on this thread (innermost), or None (not in MPSGraph)."""
        blocks = self._stack("blocks")
        return blocks[-1] if blocks else None

    @contextlib.contextmanager
    def open_block(self, block: Block) -> Iterator[Block]:
        """Build ops into ``block`` inside the ``with`` (the thread's innermost block), as an MPSGraph
        closure builds a block's ops; the open control-dependency blocks do not reach into it (the
        control-flow op itself gets them).

        Args:
            block: The ``ir.Block`` the ops built inside belong to.
        """
        blocks, control = self._stack("blocks"), self._stack("control")
        saved = list(control)
        blocks.append(block)
        control.clear()
        try:
            yield block
        finally:
            blocks.pop()
            control[:] = saved

    def scoped_name(self, name: str) -> str:
        """``name`` under the open name scopes (``block1/conv``), as an op built now asks for it (not
        in MPSGraph, which has no name scopes).

        Args:
            name: A name, without the scopes.
        """
        return self._scoped(name)

    def reserve_name(self, type: str, name: Optional[str]) -> tuple:
        """(the unique name an op about to be built will get, that name relative to the open name
        scopes): a control-flow op's blocks (MPSGraph's closures) are built before it, their ops
        named under it.

        Args:
            type: The op type (the name when ``name`` is None).
            name: The requested name, or None.
        """
        with self._build_lock:
            full = self._unique_name(self._scoped(name or type))
        prefix = "/".join(self._stack("names"))
        return full, full[len(prefix) + 1:] if prefix else full

    def check_visible(self, t: Tensor, label: str) -> None:
        """Refuse a tensor built inside a block that the op being built is not in: a block may
        read the tensors of the blocks around it, but nothing outside a block sees its tensors (in
        MPSGraph, a closure's tensors).

        Args:
            t: A tensor the op being built reads.
            label: The op being built, for the message.
        """
        inner = t.operation.block
        if inner is None or inner.encloses(self.current_block()):
            return
        raise TargetError(f"{label}: reads {t.name!r}, a tensor built inside {inner.label} (at "
                          f"{t.operation.location}); a block's tensors exist only while it runs: return "
                          "it from the block and use the control-flow op's result")

    def build_block(self, block: Block, arg_types: Sequence[ShapedType], fn: Any, call: Any) -> Block:
        """Open ``block``, make one ``block_argument`` tensor per type, run ``call(fn, arguments)``
        (the user's callable, MPSGraph's closure) inside it and record what it returns as the
        results, and the outer tensors its ops read as its captures.

        Args:
            block: The new, empty ``ir.Block``.
            arg_types: The ``ShapedType`` of each of its arguments.
            fn: The user's callable.
            call: ``call(fn, arguments) -> tensors``: how ``fn`` is called with the arguments.

        Returns:
            The block, filled.
        """
        with self.open_block(block):
            block.arguments = tuple(self.add_op("block_argument", [], {"shape": tuple(ty.shape), "dtype": ty.dtype,
                                                                        "index": i},
                                                f"arg{i}").outputs[0]
                                    for i, ty in enumerate(arg_types))
            got = call(fn, list(block.arguments))
            block.results = tuple(self._block_results(block, got))
        block.captures = tuple(block_captures(block))
        return block

    def _block_results(self, block: Block, got: Any) -> list:
        if isinstance(got, Tensor):
            got = [got]
        if got is None or isinstance(got, (str, bytes)) or not isinstance(got, Sequence):
            raise TargetError(f"{block.label} (built at {block.location}) returned "
                              f"{'nothing' if got is None else type(got).__name__}; a block returns a list of tensors")
        out = []
        for i, t in enumerate(got):
            t = self.as_tensor(t, f"{block.label} result {i}") if not isinstance(t, Tensor) else t
            self.check_same_graph(t, block.label)
            inner = t.operation.block
            if inner is not None and inner is not block and not inner.encloses(block):
                raise TargetError(f"{block.label} (built at {block.location}): result {i} {t.name!r} was built "
                                  f"inside {inner.label}, which the block does not see")
            out.append(t)
        return out

    # ---------------------------------------------------------------- variables
    def variable_operation(self, variable: Any, label: str) -> Operation:
        """The variable op behind a variable tensor (or the op itself); a clear error for anything else (not in MPSGraph).

        Args:
            variable: A variable tensor (made by ``g.variable``) or its operation.
            label: The op being built, for messages.
        """
        op = variable.operation if isinstance(variable, Tensor) else variable
        if not isinstance(op, Operation) or op.type != "variable":
            raise TargetError(f"{label}: expected a variable tensor (made by g.variable), got {variable!r}")
        self.check_same_graph(op, label)
        return op

    def value_of(self, variable: Any) -> np.ndarray:
        """A copy of a variable's current value (in MPSGraph, run ``read(_:name:)`` of the variable as a target).

        Args:
            variable: A variable tensor (made by ``g.variable``) or its operation.

        Returns:
            A new ndarray; changing it does not change the variable.
        """
        op = self.variable_operation(variable, "value_of")
        return np.array(self.variable_store.values[op], copy=True)

    def set_value(self, variable: Any, array: Any) -> None:
        """Give a variable a new value, checked against its shape and dtype; no MPSGraph counterpart
        (there, run an ``assign`` of a constant or a placeholder).

        An ndarray (or array-like) must have the variable's shape and dtype exactly, so nothing is
        cast silently; numbers and nested lists take the variable's dtype if they fit it exactly.
        The array is copied: changing it later does not change the variable.

        Args:
            variable: A variable tensor (made by ``g.variable``) or its operation.
            array: The new value.

        Raises:
            ShapeError: the value's shape is not the variable's.
            DTypeError: an array of another dtype, or a number the dtype does not hold.
        """
        op = self.variable_operation(variable, "set_value")
        t = op.outputs[0]
        label = f"set_value of variable {op.name!r} ({list(t.shape)} {t.dtype.name})"
        if is_array(array):
            arr = as_ndarray(array)
            if arr.dtype != t.dtype.np_dtype:
                hint = f"; convert it with .astype(np.{t.dtype.np_dtype.name})" if arr.dtype.kind in "fiub" else ""
                raise DTypeError(f"{label}: got an array of dtype {arr.dtype}{hint}")
        else:
            try:
                arr = exact_array(array, t.dtype)
            except MiniGraphError as e:
                raise type(e)(f"{label}: {e}") from None
        if tuple(arr.shape) != tuple(t.shape):
            raise ShapeError(f"{label}: got shape {list(arr.shape)}; the shape of a variable is fixed when it is built")
        value = np.array(arr, dtype=t.dtype.np_dtype, copy=True)
        value.setflags(write=False)
        self.variable_store.set(op, value)


def block_captures(block: Block) -> list:
    """The tensors built outside ``block`` that its ops (or results) read, in first-use order."""
    seen: dict = {}
    for op in block.ops:
        for t in op.inputs:
            if t.operation.block is not block and id(t) not in seen:
                seen[id(t)] = t
    for t in block.results:
        if t.operation.block is not block and id(t) not in seen:
            seen[id(t)] = t
    return list(seen.values())


def _refuse_four_bit(label: str, in_types: Sequence[ShapedType], out_types: Sequence[ShapedType]) -> None:
    """int4 / uint4 are storage types for the quantization ops: other ops refuse them."""
    for what, types in (("operand", in_types), ("result", out_types)):
        for ty in types:
            if ty.dtype.name in FOUR_BIT:
                raise DTypeError(f"{label}: takes no {ty.dtype.name} {what} (int4 and uint4 are taken only by "
                                 "the quantization ops, cast, identity and reshape); cast to int8 or int32 "
                                 "first with g.cast(x, mg.int32)")


def type_of(e: MiniGraphError) -> type:
    return type(e)


def _checked_signature(opdef: OpDef, inputs: Any, attrs: Any, label: str) -> tuple:
    """(inputs as a list, attrs as a dict) if they fit the declaration: one tensor per declared
    input (at least one for a list of tensors) and only declared attribute names. A kernel bound
    by arity would take an extra input as its ``out=`` and write into it."""
    if isinstance(inputs, (str, bytes, Tensor)) or not isinstance(inputs, Sequence):
        raise TargetError(f"{label}: inputs must be a list of tensors, got {type(inputs).__name__}")
    inputs = list(inputs)
    want = len(opdef.inputs)
    if (len(inputs) < 1) if opdef.variadic else (len(inputs) != want):
        expected = "one or more tensors" if opdef.variadic else \
            f"{want} input{'s' if want != 1 else ''} ({', '.join(opdef.inputs) or 'none'})"
        raise TargetError(f"{label}: takes {expected}, got {len(inputs)}")
    if not isinstance(attrs, Mapping):
        raise TargetError(f"{label}: attributes must be a dict, got {type(attrs).__name__}")
    unknown = [k for k in attrs if k not in opdef.attr_names]
    if unknown:
        raise TargetError(f"{label}: unknown attribute{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(repr(k) for k in unknown)}; {opdef.type} takes "
                          f"{', '.join(repr(k) for k in opdef.attr_names) or 'no attributes'}")
    return inputs, dict(attrs)
