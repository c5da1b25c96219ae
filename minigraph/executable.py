"""Executable: a compiled plan bound to a backend (MPSGraphExecutable)."""
from __future__ import annotations

import gc
import threading
from typing import Any, Mapping, Sequence

import numpy as np

from .backends import get_backend
from .compiler.plan import build_plan
from .errors import ExecutionError, FeedDTypeError, FeedError, MiniGraphError, MissingFeedError
from .tensor import Operation, Tensor
from .types import ShapedType, as_dtype, is_static


def coerce_feed(t: Any, v: Any) -> np.ndarray:
    """An ndarray for a feed value; lists and scalars take the placeholder's dtype.

    An ndarray keeps its own dtype (and must match the placeholder): no silent casts. One of
    non-native byte order is converted to native order (a copy: the same values, the feed intact).
    """
    if v is None:  # np.asarray(None, float32) would be NaN
        raise FeedError(f"feed for {t.name if isinstance(t, Tensor) else t!r}: got None; give an array or a number")
    if isinstance(v, np.ndarray):
        if not v.dtype.isnative and v.dtype.newbyteorder("=") in _KNOWN:
            return v.astype(v.dtype.newbyteorder("="))
        return v
    if isinstance(v, np.generic):
        return np.asarray(v)
    dtype = t.dtype.np_dtype if isinstance(t, Tensor) else None
    name = t.name if isinstance(t, Tensor) else repr(t)
    from .errors import DTypeError
    from .ops.memory import inexact_conversion, non_numbers

    try:
        non_numbers(v)  # [None, 1.0] would become [nan, 1.0]
        arr = np.asarray(v, dtype=dtype)
    except DTypeError as e:
        raise FeedError(f"feed for {name!r}: {e}") from None
    except (TypeError, ValueError, OverflowError) as e:
        raise FeedError(f"feed for {name!r}: cannot be turned into an array of "
                        f"{t.dtype.name if isinstance(t, Tensor) else 'numbers'}: {e}") from None
    if dtype is not None:
        try:
            inexact_conversion(v, arr)  # [1.5] fed to an int32 placeholder is a mistake, not [1]
        except DTypeError as e:
            raise FeedError(f"feed for {name!r}: {e}") from None
    return arr


class Executable:
    """A compiled graph (MPSGraphExecutable): ``run(inputs)`` returns the targets as a list, in ``target_tensors`` order.

    Compiling with dynamic (-1) feed dimensions specialises lazily per concrete feed shape;
    ``compile_count`` says how many plans were built.
    """

    def __init__(self, graph, feed_types: Mapping[Tensor, ShapedType], target_tensors: Sequence[Tensor],
                 target_operations: Sequence[Operation], backend: str = "numpy"):
        self.graph = graph
        self.backend = get_backend(backend)
        self.backend_name = backend
        self.feed_types = dict(feed_types)
        self.target_tensors = list(target_tensors)
        self.target_operations = list(target_operations)
        self._specialised: dict = {}
        self._lock = threading.Lock()
        self.compile_count = 0
        self.plan = None
        if all(is_static(ty.shape) for ty in self.feed_types.values()):
            self.plan, self._runner = self._prepare(self.feed_types)
            self._specialised[self._key(self.feed_types)] = (self.plan, self._runner)
        else:  # still validate the structure now: targets, feeds, static parts
            for t, ty in self.feed_types.items():
                if isinstance(t, Tensor):
                    from .compiler.plan import _check_feed_type

                    if t.operation.type == "placeholder":
                        _check_feed_type(t, ty)
        self.feed_tensors = [t for t, _ in sorted(self.feed_types.items(), key=lambda kv: _order(kv[0]))] \
            if self.plan is None else [t for t, _, _ in self.plan.feeds]

    @staticmethod
    def _key(types):
        return tuple((id(t), ty.shape, ty.dtype.name) for t, ty in types.items())

    def _prepare(self, types):
        was = gc.isenabled()
        gc.disable()  # compiling allocates many small objects and no cycles: collections only cost time
        try:
            plan = build_plan(self.graph, types, self.target_tensors, self.target_operations)
            runner = self.backend.prepare(plan)
        finally:
            if was:
                gc.enable()
        self.compile_count += 1
        return plan, runner

    def run(self, inputs: Any = None, *, feeds: Any = None) -> list:
        """Run once (MPSGraphExecutable ``run(with:inputs:results:executionDescriptor:)``).

        Args:
            inputs: ``{placeholder: array}``, or a list of arrays in ``feed_tensors`` order.
            feeds: The same, under the keyword ``Graph.run`` uses (give one of the two).

        Returns:
            A list of arrays in ``target_tensors`` order.
        """
        if feeds is not None:
            if inputs is not None:
                raise FeedError("give the feeds once: inputs or feeds, not both")
            inputs = feeds
        if inputs is None:
            inputs = {}
        if not isinstance(inputs, Mapping):
            try:
                inputs = list(inputs)
            except TypeError:
                raise FeedError(f"inputs must be a dict {{placeholder: array}} or a list in feed_tensors order "
                                f"{[t.name for t in self.feed_tensors]}, got {type(inputs).__name__}") from None
            if len(inputs) != len(self.feed_tensors):
                raise FeedError(f"expected {len(self.feed_tensors)} inputs in feed_tensors order "
                                f"{[t.name for t in self.feed_tensors]}, got {len(inputs)}")
            inputs = dict(zip(self.feed_tensors, inputs))
        arrays = {}
        for t, v in inputs.items():
            if not isinstance(t, Tensor) or t not in self.feed_types:  # tensors hash by identity
                name = t.name if isinstance(t, Tensor) else repr(t)
                raise FeedError(f"unexpected feed {name}: this executable was compiled for feeds "
                                f"{[k.name for k in self.feed_types]}")
            arrays[t] = coerce_feed(t, v)
        for t in self.feed_types:
            if t not in arrays:
                raise MissingFeedError(f"missing feed for placeholder {t.name!r} {list(t.shape)} {t.dtype.name}; "
                                f"this executable needs {[k.name for k in self.feed_types]}")
        if self.plan is not None:
            plan, runner = self.plan, self._runner
        else:
            types = {t: ShapedType(a.shape, a.dtype) for t, a in arrays.items()}
            for t, ty in types.items():
                want = self.feed_types[t]
                if ty.dtype != want.dtype or len(ty.shape) != len(want.shape) or any(
                        w != -1 and w != s for w, s in zip(want.shape, ty.shape)):
                    raise (FeedDTypeError if ty.dtype != want.dtype else FeedError)(
                        f"feed for {t.name!r}: {ty} does not match the compiled type {want}")
            key = self._key(types)
            with self._lock:
                got = self._specialised.get(key)
                if got is None:
                    got = self._prepare(types)
                    self._specialised[key] = got
            plan, runner = got
        feed_values = []
        for t, _, ty in plan.feeds:
            a = arrays[t]
            if a.dtype != ty.dtype.np_dtype or a.shape != ty.shape:
                raise (FeedError if a.dtype == ty.dtype.np_dtype else FeedDTypeError)(
                                f"feed for placeholder {t.name!r}: got shape {a.shape} dtype "
                                f"{as_dtype(a.dtype).name if a.dtype in _KNOWN else a.dtype}, but the "
                                f"executable was compiled for {ty}")
            feed_values.append(a)
        return _execute(self.graph, plan, runner, feed_values)

    def describe(self) -> str:
        """A listing of the compiled plan: feeds, targets, steps with concrete shapes, frees, pruned ops (not in MPSGraph)."""
        from .listing import describe_executable

        return describe_executable(self)

    def __repr__(self) -> str:
        return (f"<Executable targets={[t.name for t in self.target_tensors]} "
                f"ops={[o.name for o in self.target_operations]} backend={self.backend_name!r}>")


_KNOWN = {np.dtype(n) for n in ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                "uint8", "uint16", "uint32", "uint64", "bool")}


def _order(t):
    return t.operation.index if isinstance(t, Tensor) else 0


def _call(runner, plan, feed_values, variables):
    """The backend's runner; a raw exception from it (a third-party backend, a lost device) becomes
    an ExecutionError, so only MiniGraphErrors escape a run (nothing is committed either way)."""
    try:
        return runner(feed_values, variables)
    except MiniGraphError:
        raise
    except Exception as e:
        names = [t.name for t, _ in plan.targets] or ["(target operations only)"]
        raise ExecutionError(f"the backend failed while running the plan for targets {names}: "
                             f"{type(e).__name__}: {e}") from e


def _execute(graph, plan, runner, feed_values):
    """Run, then commit assignments only if the whole run succeeded; never alias results.

    Runs that assign are serialised per graph. The commit builds a new {variable: value} dict and
    swaps it in with one reference assignment, and every run reads ``graph._var_values`` once, so a
    concurrent run sees all of another run's assignments or none of them (no torn reads).
    """
    if plan.has_assignments:
        with graph._lock:  # runs that assign are serialised per graph
            results, assigned = _call(runner, plan, feed_values, graph._var_values)
            if assigned:
                new = dict(graph._var_values)
                for op, v in assigned.items():
                    v = np.array(v, dtype=op.outputs[0].dtype.np_dtype, copy=True)
                    v.setflags(write=False)
                    new[op] = v
                graph._var_values = new
    else:
        results, assigned = _call(runner, plan, feed_values, graph._var_values)
    out = []
    seen = set()
    for (t, _), r in zip(plan.targets, results):
        r = np.asarray(r)
        if r.base is not None or not r.flags.writeable or id(r) in seen or any(r is f for f in feed_values):
            try:
                r = r.copy()
            except MemoryError as e:  # a broadcast view as a target: its copy may not fit
                raise ExecutionError(f"result {t.name!r} ({r.shape}, {r.dtype}) could not be copied out: {e}") from e
        seen.add(id(r))
        out.append(r)
    return out
