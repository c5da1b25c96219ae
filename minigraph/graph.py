"""Graph: builds named, typed ops; compiles and runs them (MPSGraph)."""
from __future__ import annotations

import contextlib
import difflib
import logging
import os
import sys
import threading
from collections import OrderedDict, namedtuple
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from .errors import (BackendUnavailableError, DTypeError, FeedDTypeError, FeedError, GraphMismatchError, MiniGraphError,
                     NameLookupError, TargetError)
from .tensor import Operation, Tensor
from .types import DataType, ShapedType, as_dtype

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_log = logging.getLogger("minigraph")  # INFO: why run compiled (also g.last_compile_reason)


class AmbiguousNameError(NameLookupError, ValueError):
    """A name the user gave to several ops; look them up by their unique names (MPSGraph allows duplicate names)."""


def _user_location() -> str:
    """file:line of the first frame outside the minigraph package (where the user built the op)."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"


def op_label(type: str, name: str) -> str:
    return f"{type} op {name!r}"


class Graph:
    """A lazy tensor graph with MPSGraph semantics.

    Build ops with the builder methods (``g.addition``, ``g.depthwise_convolution_2d``, ...),
    then ``run`` or ``compile`` them. Builders infer shapes and dtypes at once and raise a
    ``MiniGraphError`` naming the op on any mismatch.
    """

    def __init__(self, cache_size: int = 64):
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._requested: dict[str, list[Operation]] = {}
        self._scopes: list[str] = []
        self._control: list[list[Operation]] = []
        self._placeholders: list[Tensor] = []
        self._var_values: dict[Operation, np.ndarray] = {}
        self._lock = threading.RLock()  # guards variable commits and the cache
        self._cache: "OrderedDict[Any, Any]" = OrderedDict()
        self._cache_size = _cache_bound(cache_size)
        self._cache_hits = 0
        self._cache_misses = 0
        self._compiles = 0
        self._last_compile_reason = ""
        self._feed_history: dict[Any, tuple] = {}
        self._evicted: "OrderedDict[Any, None]" = OrderedDict()  # keys the LRU dropped (bounded)

    # ---------------------------------------------------------------- introspection
    @property
    def operations(self) -> list[Operation]:
        """All operations, in creation order (MPSGraph has no public list of them; see ``placeholders``)."""
        return list(self._ops)

    @property
    def placeholders(self) -> list[Tensor]:
        """All placeholder tensors (MPSGraph ``placeholderTensors``), in creation order."""
        return list(self._placeholders)

    placeholder_tensors = placeholders

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

    def _missing(self, name: str, what: str) -> str:
        close = difflib.get_close_matches(name, list(self._by_name), n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
            f"; the graph has {len(self._ops)} ops"
        return f"no {what} named {name!r}{hint}"

    # ---------------------------------------------------------------- naming and scopes
    @contextlib.contextmanager
    def name_scope(self, scope: str):
        """Prefix ``scope/`` to the names of every op built inside the block (scopes nest).

        MPSGraph has no name scopes; this is TensorFlow 1's ``name_scope``.

        Args:
            scope: A non-empty name; nested scopes join with ``/``.
        """
        if not isinstance(scope, str) or not scope.strip("/"):
            raise NameLookupError(f"name_scope needs a non-empty string, got {scope!r}")
        self._scopes.append(scope.strip("/"))
        try:
            yield "/".join(self._scopes) + "/"
        finally:
            self._scopes.pop()

    def _unique_name(self, base: str) -> str:
        prefix = "/".join(self._scopes)
        full = f"{prefix}/{base}" if prefix else base
        if full not in self._by_name:
            return full
        # resume after the last suffix given to this base: names are never freed, so this is
        # the same smallest free suffix as a scan from 1, without the O(ops) scan per op
        nxt = self.__dict__.setdefault("_next_suffix", {})
        i = nxt.get(full, 1)
        while f"{full}_{i}" in self._by_name:
            i += 1
        nxt[full] = i + 1
        return f"{full}_{i}"

    @contextlib.contextmanager
    def control_dependencies(self, ops: Iterable[Any]):
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
            self._check_mine(o, "control_dependencies")
            deps.append(o)
        self._control.append(deps)
        try:
            yield
        finally:
            self._control.pop()

    # ---------------------------------------------------------------- building
    def _check_mine(self, x: Any, label: str) -> None:
        if x.graph is not self:
            raise GraphMismatchError(f"{label}: {x!r} belongs to another graph; "
                                     "tensors and operations can only be used in the graph that made them")

    def _as_tensor(self, x: Any, label: str, like: Optional[Tensor] = None,
                   dtype: Optional[DataType] = None) -> Tensor:
        """Tensors pass through; Python/NumPy scalars and arrays become constants.

        Python scalars take the dtype of ``like`` (the other operand), as MPSGraph users cast.
        """
        if isinstance(x, Tensor):
            self._check_mine(x, label)
            return x
        if isinstance(x, Operation):
            raise TargetError(f"{label}: expected a tensor, got operation {x.name!r}")
        if dtype is None:
            if like is not None and np.ndim(x) == 0:
                dtype = like.dtype
            elif isinstance(x, (np.ndarray, np.generic)):
                dtype = as_dtype(x.dtype)
            else:
                dtype = like.dtype if like is not None else None
        try:
            return self.constant(x, dtype=dtype)
        except MiniGraphError as e:  # e.g. x + 300 with an int8 x: name the op being built
            raise type(e)(f"{label}: operand {x!r:.60} cannot be made a tensor: {e}") from None

    def _make(self, type: str, inputs: Sequence[Tensor], attrs: dict, name: Optional[str]):
        """Create an op of a registered type after inferring (and checking) its output types."""
        from .ops.registry import OPS

        opdef = OPS[type]
        if name is not None and not isinstance(name, str):
            raise NameLookupError(f"{type}: name must be a string or None, got {name!r}")
        label_name = name or type
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TargetError(f"{op_label(type, label_name)}: inputs must be tensors, got {t!r}")
            self._check_mine(t, op_label(type, label_name))
        in_types = [ShapedType.__new__(ShapedType) for _ in inputs]
        for st, t in zip(in_types, inputs):
            object.__setattr__(st, "shape", t.shape)
            object.__setattr__(st, "dtype", t.dtype)
        try:
            out_types = opdef.infer(in_types, attrs)
        except MiniGraphError as e:
            raise type_(e)(f"{op_label(type, label_name)}: {e}") from None
        with self._lock:
            full = self._unique_name(name or type)
            deps = tuple(o for group in self._control for o in group)
            op = Operation(self, type, full, tuple(inputs), attrs, deps, len(self._ops),
                           _user_location(), name or type)
            op.outputs = tuple(Tensor(self, op, i, ot.shape, ot.dtype) for i, ot in enumerate(out_types))
            self._ops.append(op)
            self._by_name[full] = op
            if name is not None:
                self._requested.setdefault(self._scoped(name), []).append(op)
        if type == "placeholder":
            self._placeholders.append(op.outputs[0])
        return op.outputs[0] if len(op.outputs) == 1 else (op if not op.outputs else op.outputs)

    def _scoped(self, name: str) -> str:
        prefix = "/".join(self._scopes)
        return f"{prefix}/{name}" if prefix else name

    # ---------------------------------------------------------------- variables
    def value_of(self, variable: Any) -> np.ndarray:
        """A copy of a variable's current value (in MPSGraph, run ``read(_:name:)`` of the variable as a target).

        Args:
            variable: A variable tensor (made by ``g.variable``) or its operation.

        Returns:
            A new ndarray; changing it does not change the variable.
        """
        op = self._variable_op(variable, "value_of")
        with self._lock:
            return self._var_values[op].copy()

    def _variable_op(self, variable: Any, label: str) -> Operation:
        op = variable.operation if isinstance(variable, Tensor) else variable
        if not isinstance(op, Operation) or op.type != "variable":
            raise TargetError(f"{label}: expected a variable tensor (made by g.variable), got {variable!r}")
        self._check_mine(op, label)
        return op

    # ---------------------------------------------------------------- compile and run
    def compile(self, feeds: Mapping[Tensor, Any], target_tensors: Sequence[Tensor] = (),
                target_operations: Sequence[Operation] = (), backend: str = "numpy"):
        """Compile the ops the targets need into a reusable ``Executable``.

        MPSGraph ``compile(with:feeds:targetTensors:targetOperations:compilationDescriptor:)``.

        Args:
            feeds: placeholder -> ``ShapedType`` (or an array, whose type is used). A -1
                dimension makes the executable specialise on each new concrete shape.
            target_tensors: tensors whose values ``Executable.run`` returns, in this order.
            target_operations: operations (``assign``, optimizer steps) run for their effect.
            backend: a name from ``mg.available_backends()``.

        Returns:
            An ``Executable``.

        Raises:
            FeedError, TargetError, KernelMissingError, BackendUnavailableError: naming the
                placeholder, target, op or backend at fault.
        """
        from .executable import Executable

        types = {}
        for t, v in _as_feeds(feeds).items():
            types[t] = v if isinstance(v, ShapedType) else _type_of_feed(t, v)
        with self._lock:
            self._compiles += 1
        return Executable(self, types, _as_list(target_tensors, "target_tensors", TargetError),
                          _as_list(target_operations, "target_operations", TargetError), backend)

    def run(self, feeds: Optional[Mapping[Tensor, Any]] = None, target_tensors: Sequence[Tensor] = (),
            target_operations: Sequence[Operation] = (), backend: str = "numpy") -> dict:
        """Compile (cached by feed types, targets and backend) and run.

        MPSGraph ``run(feeds:targetTensors:targetOperations:)``.

        Args:
            feeds: placeholder -> array. An ndarray must have the placeholder's dtype; lists
                and numbers are converted to it. Feeds are never modified.
            target_tensors: tensors to compute and return.
            target_operations: operations (``assign``, optimizer steps) run for their effect.
            backend: a name from ``mg.available_backends()``.

        Returns:
            ``{tensor: ndarray}`` for the target tensors.
        """
        feeds = _as_feeds(feeds)
        target_tensors = _as_list(target_tensors, "target_tensors", TargetError)
        target_operations = _as_list(target_operations, "target_operations", TargetError)
        if not isinstance(backend, str):
            raise BackendUnavailableError(f"backend must be a name such as 'numpy', got {backend!r}")
        types = {t: _type_of_feed(t, v) for t, v in feeds.items()}
        key = (tuple((id(t), types[t].shape, types[t].dtype.name) for t in feeds),
               tuple(id(t) for t in target_tensors), tuple(id(o) for o in target_operations), backend)
        with self._lock:
            exe = self._cache.get(key)
            if exe is not None:
                self._cache.move_to_end(key)
                self._cache_hits += 1
        if exe is None:
            reason = self._explain(feeds, types, target_tensors, target_operations, backend)
            if key in self._evicted:
                reason = ("" if reason == "evicted from the cache" else reason + "; ") + (
                    f"compiled before, then evicted from the LRU cache (maxsize {self._cache_size}; "
                    "g.set_cache_size(n) keeps more)")
            self._last_compile_reason = reason
            _log.info("run compiles for backend %r: %s", backend, reason)
            exe = self.compile(types, target_tensors, target_operations, backend)
            with self._lock:
                self._cache_misses += 1
                self._cache[key] = exe
                self._evicted.pop(key, None)
                self._evict_to(self._cache_size)
        values = exe.run(feeds)
        return dict(zip(target_tensors, values))

    def _explain(self, feeds, types, target_tensors, target_operations, backend) -> str:
        tkey = (tuple(id(t) for t in target_tensors), tuple(id(o) for o in target_operations), backend)
        prev = self._feed_history.get(tkey)
        now = {id(t): (t, types[t]) for t in feeds}
        self._feed_history[tkey] = now
        if prev is None:
            return "first run with these targets"
        reasons = []
        for k, (t, ty) in now.items():
            if k not in prev:
                reasons.append(f"new feed {t.name!r}")
            elif prev[k][1] != ty:
                old = prev[k][1]
                if old.shape != ty.shape:
                    reasons.append(f"new feed shape for {t.name!r}: {old.shape} -> {ty.shape}")
                else:
                    reasons.append(f"new feed dtype for {t.name!r}: {old.dtype.name} -> {ty.dtype.name}")
        for k, (t, _) in prev.items():
            if k not in now:
                reasons.append(f"feed {t.name!r} no longer given")
        return "; ".join(reasons) or "evicted from the cache"

    @property
    def last_compile_reason(self) -> str:
        """Why the most recent ``run`` compiled (e.g. a new feed shape); MPSGraph compiles silently, so it has no equivalent."""
        return self._last_compile_reason

    @property
    def compile_count(self) -> int:
        """How many executables this graph has compiled (``compile`` calls, including ``run``'s cache misses); MPSGraph does not expose this."""
        return self._compiles

    def cache_info(self):
        """Executable cache statistics: hits, misses, maxsize, currsize, compiles (MPSGraph's run cache is internal, no equivalent).

        Returns:
            A ``CacheInfo``: the 4-tuple ``(hits, misses, maxsize, currsize)`` of
            ``functools.lru_cache``, with ``compiles`` and ``last_reason`` as extra attributes.
        """
        with self._lock:
            return CacheInfo(self._cache_hits, self._cache_misses, self._cache_size,
                             len(self._cache), self._compiles, self._last_compile_reason)

    def set_cache_size(self, size: int) -> None:
        """Bound the number of cached executables (LRU); MPSGraph's own run cache is not configurable.

        Args:
            size: How many executables ``run`` keeps (0 disables the cache).
        """
        with self._lock:
            self._cache_size = _cache_bound(size)
            self._evict_to(self._cache_size)

    @property
    def cache_size(self) -> int:
        """The LRU bound on cached executables (None: unbounded); assigning it calls ``set_cache_size`` (no MPSGraph equivalent)."""
        return self._cache_size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        self.set_cache_size(size)

    def cache_clear(self) -> None:
        """Drop every cached executable, as ``functools.lru_cache``'s ``cache_clear`` (MPSGraph's run cache is internal, no equivalent)."""
        with self._lock:
            self._cache.clear()

    def _evict_to(self, size: int) -> None:
        """Drop least-recently-used executables; remember their keys to explain a recompile."""
        while size is not None and len(self._cache) > size:
            k, _ = self._cache.popitem(last=False)
            self._evicted[k] = None
            while len(self._evicted) > 4096:
                self._evicted.popitem(last=False)

    def __repr__(self) -> str:
        return f"<minigraph.Graph with {len(self._ops)} ops>"


class CacheInfo(namedtuple("CacheInfo", "hits misses maxsize currsize")):
    """``functools.lru_cache``'s statistics tuple, plus ``compiles`` and ``last_reason`` attributes."""

    def __new__(cls, hits, misses, maxsize, currsize, compiles=0, last_reason=""):
        self = super().__new__(cls, hits, misses, maxsize, currsize)
        self.compiles, self.last_reason = compiles, last_reason
        return self

    def __repr__(self) -> str:
        return (f"CacheInfo(hits={self.hits}, misses={self.misses}, maxsize={self.maxsize}, "
                f"currsize={self.currsize}, compiles={self.compiles}, last_reason={self.last_reason!r})")


def _cache_bound(size: Any) -> Optional[int]:
    """An LRU bound: an int >= 0 (negative means 0), or None for unbounded (as ``functools.lru_cache``)."""
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TargetError(f"cache_size must be an int >= 0 or None (unbounded), got {size!r}")
    return max(0, int(size))


def _type_of_feed(t: Any, v: Any) -> ShapedType:
    from .executable import coerce_feed

    arr = coerce_feed(t, v)
    try:
        return ShapedType(arr.shape, arr.dtype)
    except DTypeError as e:  # e.g. an object or complex array: name the feed
        raise FeedError(f"feed for {t.name if isinstance(t, Tensor) else t!r}: {e}") from None


def _as_feeds(feeds: Any) -> dict:
    """``{placeholder: value}`` from a mapping (or pairs); None means no feeds."""
    if feeds is None:
        return {}
    if isinstance(feeds, Tensor):
        raise FeedError(f"feeds must be a dict {{placeholder: array}}, got the tensor {feeds.name!r}")
    try:
        feeds = dict(feeds)
    except (TypeError, ValueError):
        raise FeedError(f"feeds must be a dict {{placeholder: array}}, got {type(feeds).__name__} "
                        f"{feeds!r:.60}") from None
    for t in feeds:
        if not isinstance(t, Tensor):
            hint = f"; look a placeholder up by name with g.tensor({t!r})" if isinstance(t, str) else ""
            raise FeedDTypeError(f"feeds must be keyed by placeholder tensors, got {type(t).__name__} {t!r:.60}{hint}")
    return feeds


def _as_list(items: Any, what: str, error: type) -> list:
    """A list of targets; a lone tensor or operation gets a hint instead of 'not iterable'."""
    if isinstance(items, (Tensor, Operation)):
        raise error(f"{what} must be a list, got {type(items).__name__.lower()} {items.name!r}; "
                    "pass a list, e.g. [t]")
    if isinstance(items, (str, bytes)):
        raise error(f"{what} must be a list of {'tensors' if what == 'target_tensors' else 'operations'}, "
                    f"got the string {items!r}")
    try:
        return list(items)
    except TypeError:
        raise error(f"{what} must be a list, got {type(items).__name__} {items!r:.60}") from None


def type_(e: MiniGraphError):
    return type(e)
