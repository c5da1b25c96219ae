"""Executable: a compiled plan bound to a backend (MPSGraphExecutable)."""
from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections import OrderedDict
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from . import recording
from .backends import get_backend
from .coerce import KNOWN_DTYPES, cast_hint, coerce_feed
from .compiler.plan import build_plan, check_feed_type, every_step
from .descriptors import CompilationDescriptor, compilation_key
from .errors import (BackendUnavailableError, ExecutionError, FeedDTypeError, FeedError, MiniGraphError,
                     MissingFeedError, TargetError)
from .ir import MemoryFacts, Operation, Tensor
from .dot import plan_to_dot, render_dot
from .listing import describe_executable
from .ops.random import random_stream
from .ops.registry import renamed
from .philox import drawing
from .profiling import Profile, build_profile
from .tensor_data import TensorData
from .types import ShapedType, as_dtype, feed_dtype, is_static


class Executable:
    """A compiled graph (MPSGraphExecutable): ``run(inputs)`` returns the targets as a list, in ``target_tensors`` order.

    Compiling with dynamic (-1) feed dimensions specialises lazily per concrete feed shape;
    ``compile_count`` says how many plans were built. The specialisations are kept in an LRU
    cache of ``cache_size`` entries (64 by default, as ``g.run``'s cache), so a loop over ever
    new shapes does not keep every plan (and its device buffers) alive.

    ``compilation_descriptor`` (a ``CompilationDescriptor``, default level 1 with fusion) says
    which passes build the plan (docs/compiler.md); the plan is built for this executable's
    backend, whose ``fusible_ops`` say which elementwise ops it can run fused and whose
    ``epilogue_ops`` which ops' kernels can apply an elementwise tail before they store (its
    ``epilogue_keeping_ops``: and store their own result too, for other readers), and
    whose ``sibling_ops`` which pairs of reductions one of its kernels computes in one pass.
    """

    DEFAULT_CACHE_SIZE = 64

    def __init__(self, graph, feed_types: Mapping[Tensor, ShapedType], target_tensors: Sequence[Tensor],
                 target_operations: Sequence[Operation], backend: str = "numpy",
                 compilation_descriptor: Optional[CompilationDescriptor] = None):
        level, fusion, callables = compilation_key(compilation_descriptor)
        # a copy: later edits change nothing
        self.compilation_descriptor = CompilationDescriptor(level, fusion, dict(callables))
        self.graph = graph
        self.backend = get_backend(backend)
        self.backend_name = backend
        self.feed_types = dict(feed_types)
        self.target_tensors = list(target_tensors)
        self.target_operations = list(target_operations)
        self._specialised: OrderedDict = OrderedDict()
        self._cache_size = self.DEFAULT_CACHE_SIZE
        self._lock = threading.Lock()
        self.compile_count = 0
        self._stream = random_stream(graph)  # the graph's draw counter, shared by its executables (docs/random.md)
        self._random_plans: dict = {}  # id(plan) -> (plan, whether it has a random op)
        self.plan = None
        if all(is_static(ty.shape) for ty in self.feed_types.values()):
            self.plan, self._runner = self._prepare(self.feed_types)
            self._specialised[self._key(self.feed_types)] = (self.plan, self._runner)
        else:  # still validate the structure now: targets, feeds, static parts
            for t, ty in self.feed_types.items():
                if isinstance(t, Tensor) and t.operation.type == "placeholder":
                    check_feed_type(t, ty)
        self.feed_tensors = [t for t, _ in sorted(self.feed_types.items(), key=lambda kv: _order(kv[0]))] \
            if self.plan is None else [t for t, _, _ in self.plan.feeds]

    @staticmethod
    def _key(types):
        return tuple((id(t), ty.shape, ty.dtype.name) for t, ty in types.items())

    def _prepare(self, types):
        was = gc.isenabled()
        gc.disable()  # compiling allocates many small objects and no cycles: collections only cost time
        try:
            desc = self.compilation_descriptor
            plan = build_plan(self.graph, types, self.target_tensors, self.target_operations,
                              fusible_ops=frozenset(getattr(self.backend, "fusible_ops", frozenset())),
                              epilogue_ops=frozenset(getattr(self.backend, "epilogue_ops", frozenset())),
                              memory_facts=getattr(self.backend, "memory_facts", None) or MemoryFacts(),
                              optimization_level=desc.optimization_level, fusion=desc.fusion,
                              callables=desc.callables,
                              sibling_ops=frozenset(getattr(self.backend, "sibling_ops", frozenset())),
                              epilogue_keeping_ops=frozenset(getattr(self.backend, "epilogue_keeping_ops",
                                                                     frozenset())))
            runner = self.backend.prepare(plan)
        finally:
            if was:
                gc.enable()
        self.compile_count += 1
        return plan, runner

    def run(self, inputs: Any = None, *, feeds: Any = None) -> list:
        """Run once (MPSGraphExecutable ``run(with:inputs:results:executionDescriptor:)``).

        Args:
            inputs: ``{placeholder: array}``, or a list of arrays in ``feed_tensors`` order; a
                ``TensorData`` wherever an array goes (of this backend: read on its device).
            feeds: Deprecated spelling of ``inputs``.

        Returns:
            A list of arrays in ``target_tensors`` order.

        Raises:
            ExecutionError: a kernel failed, or the backend returned results or assignments that are
                not what the plan declares (count, shapes, dtypes); no variable changes.
        """
        inputs = renamed("Executable.run", "feeds", "inputs", feeds, inputs)
        plan, runner, feed_values = self._feed_values(inputs)
        if not self._has_random(plan):
            return _execute(self.graph, plan, runner, feed_values, self.backend_name)
        stream = self._stream
        with stream.lock:  # one draw per run: a failed run leaves the counter where it was
            with drawing(stream.draws):
                out = _execute(self.graph, plan, runner, feed_values, self.backend_name)
            stream.draws += 1
        return out

    def _feed_values(self, inputs: Any) -> tuple:
        """(plan, runner, feed values in ``plan.feeds`` order), every feed checked: arrays, and for a
        ``TensorData`` what its backend holds (this executable's backend) or its host array (another's)."""
        arrays = self._arrays({} if inputs is None else inputs)
        plan, runner = self._specialise(arrays)
        feed_values = []
        for t, _, ty in plan.feeds:
            a = arrays[t]
            held = isinstance(a, TensorData)
            npd = a.dtype.np_dtype if held else a.dtype
            if npd != ty.dtype.np_dtype or a.shape != ty.shape:
                raise (FeedError if npd == ty.dtype.np_dtype else FeedDTypeError)(
                    f"feed for placeholder {t.name!r}: got {'a TensorData of ' if held else ''}shape {a.shape} dtype "
                    f"{as_dtype(npd).name if npd in KNOWN_DTYPES else npd}, but the "
                    f"executable was compiled for {ty}{cast_hint(npd, ty.dtype)}")
            feed_values.append(a.feed_value(self.backend) if held else a)
        return plan, runner, feed_values

    def profile(self, feeds: Any = None, repeats: int = 10, *, inputs: Any = None, warmup: int = 1,
                clock: Optional[str] = None) -> Profile:
        """Time every op of a run (not in MPSGraph; docs/performance.md#profiling).

        Runs the plan ``warmup`` times untimed, then ``repeats`` times timing each op, and
        commits nothing: variables and the random ops' draw counter stay as they were, so every
        repeat does the same work. The normal ``run`` path times nothing.

        Args:
            feeds: As ``run``'s ``inputs``: ``{placeholder: array}`` or a list in ``feed_tensors`` order.
            repeats: Timed runs; each op's time is its median over them.
            inputs: ``run``'s spelling of ``feeds`` (give one of the two).
            warmup: Untimed runs first (caches, lazily built buffers).
            clock: ``"gpu-timestamps"`` (timestamp queries around each dispatch, webgpu on an
                adapter with the ``timestamp-query`` feature) or ``"host"`` (the host clock around
                each op, waiting for a GPU op to finish); default: the best the backend has.

        Returns:
            A ``Profile``: ``records`` (one ``OpRecord`` per executed op), ``table()`` (also its
            ``str``), ``save_trace(path)`` (Chrome trace-event JSON), ``clock``.

        Raises:
            FeedError: as ``run``; nothing runs.
            BackendUnavailableError: the backend cannot profile, or not with ``clock``.
        """
        if feeds is not None and inputs is not None:
            raise FeedError("Executable.profile: give the feeds once (feeds or inputs, not both)")
        for what, n, least in (("repeats", repeats, 1), ("warmup", warmup, 0)):
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < least:
                raise TargetError(f"Executable.profile: {what} must be an int >= {least}, got {n!r}")
        plan, runner, feed_values = self._feed_values(inputs if feeds is None else feeds)
        clocks = tuple(getattr(runner, "profile_clocks", ()))
        if hasattr(runner, "profile") and not clocks:
            raise BackendUnavailableError(f"backend {self.backend_name!r} cannot profile this plan: it has no fixed "
                                          "dispatches to time (a loop or branch decides on the host as it runs); "
                                          "profile it with backend='numpy'")
        if not hasattr(runner, "profile") or not clocks:
            raise BackendUnavailableError(f"backend {self.backend_name!r} cannot profile: its runner has no "
                                          "profile(feed_values, variables, clock) method (docs/performance.md)")
        chosen = clocks[0] if clock is None else clock
        if chosen not in clocks:
            raise BackendUnavailableError(f"backend {self.backend_name!r} cannot profile with clock {clock!r} here; "
                                          f"it has {list(clocks)}")
        with drawing(self._stream.draws) if self._has_random(plan) else contextlib.nullcontext():
            runs = [_profiled(self.graph, plan, runner, feed_values, self.backend_name, chosen)
                    for _ in range(int(warmup) + int(repeats))][int(warmup):]
        return build_profile(plan, runs, self.backend_name, chosen, str(getattr(runner, "device", "") or ""))

    def _has_random(self, plan) -> bool:
        got = self._random_plans.get(id(plan))
        if got is None or got[0] is not plan:
            got = self._random_plans[id(plan)] = (plan, any(st.op.opdef.family == "random" for st in every_step(plan)))
        return got[1]

    @property
    def random_draws(self) -> int:
        """How many runs of the graph drew random values so far, through this executable or any
        other of the graph's: the Philox counter of the next run's random ops (``g.random_draws``;
        not in MPSGraph; docs/random.md)."""
        return self._stream.draws

    def _arrays(self, inputs: Any) -> dict:
        """``{placeholder: ndarray or TensorData}`` from a dict or a list in ``feed_tensors`` order, every feed checked."""
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
            arrays[t] = v.checked_for(t) if isinstance(v, TensorData) else coerce_feed(t, v)
        for t in self.feed_types:
            if t not in arrays:
                raise MissingFeedError(f"missing feed for placeholder {t.name!r} {list(t.shape)} {t.dtype.name}; "
                                       f"this executable needs {[k.name for k in self.feed_types]}")
        return arrays

    def _specialise(self, arrays: dict) -> tuple:
        """The plan and runner for these feeds' concrete shapes (built once per shape)."""
        if self.plan is not None:
            return self.plan, self._runner
        types = {t: ShapedType(a.shape, feed_dtype(t.dtype, a.dtype.np_dtype if isinstance(a, TensorData) else a.dtype))
                 for t, a in arrays.items()}
        for t, ty in types.items():
            want = self.feed_types[t]
            if ty.dtype != want.dtype or len(ty.shape) != len(want.shape) or any(
                    w != -1 and w != s for w, s in zip(want.shape, ty.shape)):
                raise (FeedDTypeError if ty.dtype != want.dtype else FeedError)(
                    f"feed for {t.name!r}: {ty} does not match the compiled type {want}"
                    f"{cast_hint(ty.dtype, want.dtype) if ty.dtype != want.dtype else ''}")
        key = self._key(types)
        with self._lock:
            got = self._specialised.get(key)
            if got is None:
                got = self._prepare(types)
                self._specialised[key] = got
                while len(self._specialised) > self._cache_size:
                    self._specialised.popitem(last=False)
            else:
                self._specialised.move_to_end(key)
        return got

    @property
    def cache_size(self) -> int:
        """How many specialisations (one per concrete feed shape) a dynamic executable keeps, LRU; not in MPSGraph.

        Assigning it (an int >= 1) evicts at once; an evicted shape compiles again when it comes back.
        """
        return self._cache_size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise TargetError(f"Executable.cache_size must be an int >= 1, got {size!r}")
        with self._lock:
            self._cache_size = int(size)
            while len(self._specialised) > self._cache_size:
                self._specialised.popitem(last=False)

    @property
    def specialisations(self) -> int:
        """How many specialised plans this executable holds now (at most ``cache_size``)."""
        return len(self._specialised)

    @property
    def steps(self) -> list:
        """The plan's steps (not in MPSGraph): each with ``ops`` (the graph operations it
        computes), ``kernel`` (``"addition"``, ``"fused_elementwise(multiplication+addition+relu)"``),
        ``inputs``/``outputs`` (slots), ``in_types``/``out_types`` and ``free``. For an executable
        with dynamic feed dimensions, the steps of the most recent specialisation.

        Raises:
            ExecutionError: a dynamic executable that has not run yet (it has no plan).
        """
        return list(self._current_plan().steps)

    def _current_plan(self):
        plan = self.plan
        if plan is None:
            with self._lock:
                specialised = list(self._specialised.values())
            if not specialised:
                raise ExecutionError("Executable.steps: the feed types have dynamic (-1) dimensions and nothing "
                                     "has run yet, so there is no plan; run it once (or compile with static "
                                     "feed shapes) first")
            plan = specialised[-1][0]
        return plan

    def describe(self) -> str:
        """A listing of the compiled plan: feeds, targets, steps with concrete shapes, frees, pruned ops (not in MPSGraph)."""
        return describe_executable(self)

    def to_dot(self, rankdir: str = "TB") -> str:
        """Graphviz DOT text of the compiled plan: one node per step, fused steps in green
        listing their ops; not in MPSGraph.

        Args:
            rankdir: Graphviz layout direction: ``TB``, ``LR``, ``BT`` or ``RL``.
        """
        return plan_to_dot(self._current_plan(), rankdir)

    def render(self, path: str, format: Optional[str] = None, rankdir: str = "TB", timeout: float = 120.0) -> str:
        """Draw the compiled plan to ``path`` with Graphviz (format from the suffix; ``.dot``
        written directly), as ``Graph.render`` draws the graph. Returns the path.

        Args:
            path: Where to write; its suffix picks the format unless ``format`` is given.
            format: A Graphviz output format (``svg``, ``png``, ``pdf``, ...).
            rankdir: Graphviz layout direction: ``TB``, ``LR``, ``BT`` or ``RL``.
            timeout: Seconds to wait for Graphviz's ``dot``.
        """
        fmt = (format or os.path.splitext(os.fspath(path))[1].lstrip(".")).lower()
        if not fmt:
            raise MiniGraphError(f"render: cannot tell the image format of {path!r}; give a suffix "
                                 "(.svg, .png, .pdf) or format=")
        return render_dot(self.to_dot(rankdir), os.fspath(path), fmt, timeout,
                                    f"{len(self.steps)} steps")

    def __repr__(self) -> str:
        return (f"<Executable targets={[t.name for t in self.target_tensors]} "
                f"ops={[o.name for o in self.target_operations]} backend={self.backend_name!r}>")





def _order(t):
    return t.operation.index if isinstance(t, Tensor) else 0


def _profiled(graph, plan, runner, feed_values, backend: str, clock_name: str) -> tuple:
    """One profiled run, checked as a run is and committing nothing: (spans, lanes, host
    seconds, results, kernels' worker blocks)."""
    got: list = []

    def timed(feeds, variables):
        results, assigned, spans, lanes = runner.profile(feeds, variables, clock_name)
        got.append((spans, lanes))
        return results, assigned
    with recording.record() as rec:
        start = recording.clock()
        results, _ = _call(timed, plan, feed_values, graph.variable_store.values, backend)
        took = (recording.clock() - start) / 1e9
    spans, lanes = got[0]
    if rec is not None:
        lanes = {**rec.lanes, **lanes}
    return spans, lanes, took, results, rec.blocks if rec is not None else []


def _call(runner, plan, feed_values, variables, backend: str):
    """The backend's runner, its output checked against the plan; a raw exception from it (a
    third-party backend, a lost device) becomes an ExecutionError, so only MiniGraphErrors escape
    a run (nothing is committed either way)."""
    try:
        out = runner(feed_values, variables)
    except MiniGraphError:
        raise
    except Exception as e:
        names = [t.name for t, _ in plan.targets] or ["(target operations only)"]
        raise ExecutionError(f"the backend failed while running the plan for targets {names}: "
                             f"{type(e).__name__}: {e}") from e
    return _checked(plan, backend, out)


def _checked(plan, backend: str, out) -> tuple:
    """(results, assigned) if they are what the plan declares: one array per target, each of the
    target's specialised shape and dtype, and assignments only to the variables the plan assigns,
    of each variable's shape and dtype. A backend that breaks this would commit wrong values."""
    where = f"backend {backend!r}"
    try:
        results, assigned = out
        results = [np.asarray(r) for r in results]
    except Exception as e:
        raise ExecutionError(f"{where} returned {type(out).__name__}, not (results, assigned): {e}") from e
    if len(results) != len(plan.targets):
        raise ExecutionError(f"{where} returned {len(results)} result(s) for {len(plan.targets)} target(s) "
                             f"{[t.name for t, _ in plan.targets]}")
    for (t, slot), r in zip(plan.targets, results):
        _check_value(r, plan.types[slot], f"{where} returned for target {t.name!r} "
                                          f"({t.operation.type} op {t.operation.name!r})")
    if not isinstance(assigned, Mapping):
        raise ExecutionError(f"{where} returned assignments as {type(assigned).__name__}, not a dict "
                             "{variable op: value}")
    allowed = plan.assigned_variables
    checked = {}
    for op, v in assigned.items():
        if op not in allowed:
            raise ExecutionError(f"{where} assigned {op!r}, which the plan does not assign (it assigns "
                                 f"{sorted(o.name for o in allowed)})")
        var = op.outputs[0]
        checked[op] = _check_value(v if getattr(v, "resident", False) else np.asarray(v),
                                   ShapedType(var.shape, var.dtype), f"{where} assigned to variable {op.name!r}")
    return results, checked


def _check_value(a: np.ndarray, want: ShapedType, what: str) -> np.ndarray:
    """``a`` if it has ``want``'s dtype and shape (a -1 there, a data-dependent-shape op's, matches any size)."""
    shape_ok = len(a.shape) == len(want.shape) and all(w in (-1, n) for w, n in zip(want.shape, a.shape))
    if not shape_ok or a.dtype != want.dtype.np_dtype:
        got = as_dtype(a.dtype).name if a.dtype in KNOWN_DTYPES else str(a.dtype)
        raise ExecutionError(f"{what} {got}{list(a.shape)}, but the plan computes "
                             f"{want.dtype.name}{list(want.shape)}; nothing was committed")
    return a


def _commit(store, runner, assigned) -> None:
    """Store a run's assignments. Values the backend keeps on its device (``resident``: the
    webgpu backend's ``DeviceValue``) go in as they are, read back only when asked for."""
    kept = {op: v for op, v in assigned.items() if getattr(v, "resident", False)}
    store.commit({op: v for op, v in assigned.items() if op not in kept})
    if kept:
        store.values = runner.with_resident(store.values, kept)


def _execute(graph, plan, runner, feed_values, backend: str):
    """Run, then commit assignments only if the whole run succeeded; never alias results.

    Runs that assign are serialised per graph. The commit builds a new {variable: value} dict and
    swaps it in with one reference assignment, and every run reads ``graph.variable_store.values`` once,
    so a concurrent run sees all of another run's assignments or none of them (no torn reads).
    """
    store = graph.variable_store
    if plan.has_assignments:
        with store.lock:  # runs that assign are serialised per graph
            results, assigned = _call(runner, plan, feed_values, store.values, backend)
            _commit(store, runner, assigned)
    else:
        results, assigned = _call(runner, plan, feed_values, store.values, backend)
    out = []
    seen = set()
    for (t, _), r in zip(plan.targets, results):
        if r.base is not None or not r.flags.writeable or id(r) in seen or any(r is f for f in feed_values):
            try:
                r = r.copy()
            except MemoryError as e:  # a broadcast view as a target: its copy may not fit
                raise ExecutionError(f"result {t.name!r} ({r.shape}, {r.dtype}) could not be copied out: {e}") from e
        seen.add(id(r))
        out.append(r)
    return out
