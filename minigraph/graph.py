"""Graph: build named, typed ops, then compile and run them (MPSGraph).

``Graph`` is ``GraphBuilder`` (one method per op, names, scopes, variables) plus compiling,
running and the tools: gradients, optimizers, listings, pictures, save and Swift export. The
methods here are thin: each delegates to the module that does the work.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Mapping, Optional, Sequence

import networkx as nx
import numpy as np

from . import autodiff, checkpoint, listing, optimizers, serialize, swift, visualize
from .builder import GraphBuilder
from .coerce import coerce_feed
from .descriptors import CompilationDescriptor, compilation_key
from .errors import BackendUnavailableError, DTypeError, FeedDTypeError, FeedError, TargetError
from .executable import Executable
from .ir import Operation, Tensor
from .ops.random import RandomStream
from .tensor_data import TensorData
from .types import ShapedType, feed_dtype

_log = logging.getLogger("minigraph")  # INFO: why run compiled (also g.last_compile_reason)


_ASYNC_LOCK = threading.Lock()
_ASYNC: list = []


def _async_executor() -> concurrent.futures.ThreadPoolExecutor:
    """The one background thread ``run_async`` runs on (made on first use)."""
    with _ASYNC_LOCK:
        if not _ASYNC:
            _ASYNC.append(concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="minigraph-run-async"))
        return _ASYNC[0]


class Graph(GraphBuilder):
    """A lazy tensor graph with MPSGraph semantics.

    Build ops with the builder methods (``g.addition``, ``g.depthwise_convolution_2d``, ...),
    then ``run`` or ``compile`` them. Builders infer shapes and dtypes at once and raise a
    ``MiniGraphError`` naming the op on any mismatch. ``seed`` sets ``random_seed``, the
    graph-level seed of the random ops (docs/random.md; not in MPSGraph).
    """

    def __init__(self, cache_size: Optional[int] = 64, *, seed: Optional[int] = None):
        super().__init__()
        self.random_seed = seed
        # the random ops' draw counter: every executable of this graph draws from it and advances
        # it, so an executable compiled again continues the stream (docs/random.md); not in MPSGraph
        self.random_stream = RandomStream()
        self._lock = threading.RLock()  # guards the executable cache
        self._cache: OrderedDict[Any, Executable] = OrderedDict()
        self._cache_size = _cache_bound(cache_size)
        self._cache_hits = 0
        self._cache_misses = 0
        self._compiles = 0
        self._last_compile_reason = ""
        self._feed_history: dict[Any, dict] = {}
        self._evicted: OrderedDict[Any, None] = OrderedDict()  # keys the LRU dropped (bounded)

    # ---------------------------------------------------------------- tools
    def gradients(self, of: Tensor, with_tensors: Sequence[Tensor], name: Optional[str] = "gradients") -> dict[Tensor, Tensor]:
        """Symbolic gradients of ``of`` with respect to each tensor in ``with_tensors``.

        MPSGraph ``gradients(of:with:name:)``. Gradient ops are built into this graph and named
        ``<name>/<forward op name>/<op type>`` (e.g.
        ``grad/dw/depthwise_convolution_2d_weights_gradient``); run them like any other tensor.

        Args:
            of: a floating-point tensor. If it is not a scalar, it is seeded with ones (the
                gradient of ``sum(of)``).
            with_tensors: floating-point tensors (placeholders, variables, intermediates;
                ``g.trainable_variables`` for a training step).
            name: the name scope of the inserted ops.

        Dynamic (-1) dimensions, such as an open batch size, may lie on the path: sizes the
        rules need are computed from the tensors when the graph runs.

        Returns:
            ``{tensor: gradient tensor}``, each of the tensor's shape and dtype; zeros for a tensor
            ``of`` does not depend on.

        Raises:
            NotDifferentiableError: an op without a gradient rule lies on the path (named).
            DTypeError: ``of`` or a requested tensor is integer or bool.
        """
        return autodiff.gradients(self, of, with_tensors, name)

    def apply_stochastic_gradient_descent(self, learning_rate: Any, variable: Tensor, gradient: Tensor,
                                          name: Optional[str] = None) -> Operation:
        """``variable -= learning_rate * gradient`` as one operation (MPSGraph
        ``applyStochasticGradientDescent(learningRate:variable:gradient:name:)``).

        Args:
            learning_rate: A number or scalar tensor, of the variable's dtype.
            variable: A variable tensor (made by ``g.variable``).
            gradient: A tensor of the variable's shape and dtype, e.g. from ``g.gradients``.
            name: The operation's name (default ``apply_stochastic_gradient_descent``); scopes prefix it.

        Returns:
            Operation: the update; list it in ``target_operations`` to apply it.
        """
        return optimizers.apply_stochastic_gradient_descent(self, learning_rate, variable, gradient, name)

    def apply_adam(self, variable: Tensor, gradient: Tensor, learning_rate: Any = 1e-3, beta1: float = 0.9,
                   beta2: float = 0.999, epsilon: float = 1e-8, name: Optional[str] = None) -> Operation:
        """One Adam step on ``variable`` as one operation (MPSGraph ``adam(learningRate:...)``, wrapped with its state).

        MPSGraph's formula: ``lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)``,
        ``variable -= lr_t * m / (sqrt(v) + epsilon)``; epsilon sits outside the bias correction,
        unlike Kingma & Ba's (PyTorch's) ``sqrt(v / (1 - beta2^t)) + epsilon``.

        Args:
            variable: A variable tensor (made by ``g.variable``).
            gradient: A tensor of the variable's shape and dtype, e.g. from ``g.gradients``.
            learning_rate: The step size (MPSGraph's ``learningRate``).
            beta1: Decay of the first moment estimate.
            beta2: Decay of the second moment estimate.
            epsilon: Added to ``sqrt(v)``, the uncorrected second moment's root.
            name: The operation's name (default ``adam_<variable>``); it also scopes the state variables.

        Returns:
            Operation: the update; list it in ``target_operations`` to apply it.
        """
        return optimizers.apply_adam(self, variable, gradient, learning_rate, beta1, beta2, epsilon, name)

    def describe(self) -> str:
        """A listing of the graph, one op per line (MPSGraph has no listing; see ``docs/visualize.md``)."""
        return listing.describe_graph(self)

    def __str__(self) -> str:
        return listing.describe_graph(self)

    def to_networkx(self) -> nx.DiGraph:
        """The graph as a networkx DiGraph (nodes: ops; edges: data and control); not in MPSGraph.

        Node attributes: ``type``, ``index`` (creation order), ``scope``, ``location``,
        ``gradient``, ``kind``, ``shape``, ``dtype``; edges carry ``kind`` (data or control).
        """
        return visualize.to_networkx(self)

    def to_dot(self, rankdir: str = "TB", collapse: Any = False) -> str:
        """Graphviz DOT text of the graph (no dependency needed to produce it); not in MPSGraph.

        Name scopes are clusters; gradient ops are red, placeholders blue, constants grey.
        Attributes are wrapped onto several lines, never cut short.

        Args:
            rankdir: Graphviz layout direction: TB, LR, BT or RL.
            collapse: True draws each gradient scope (ops from ``g.gradients``) and optimizer
                scope (assigns, no placeholders) as one node with its op count; a scope name or
                a list of names collapses those; False draws every op.
        """
        return visualize.to_dot(self, rankdir, collapse)

    def to_mermaid(self, direction: str = "TD") -> str:
        """Mermaid flowchart text (renders on GitHub and in many Markdown viewers); not in MPSGraph.

        Args:
            direction: Flowchart direction: TD, TB, LR, BT or RL.
        """
        return visualize.to_mermaid(self, direction)

    def render(self, path: str, format: Optional[str] = None, rankdir: str = "TB", timeout: float = 120.0,
               collapse: Any = False) -> str:
        """Draw the graph to ``path`` with Graphviz (format from the suffix: svg, png, pdf, ...); not in MPSGraph.

        A ``.dot``/``.gv`` path is written directly, without Graphviz.

        Args:
            path: The file to write.
            format: The Graphviz output format; None takes it from the suffix.
            rankdir: Graphviz layout direction: TB, LR, BT or RL.
            timeout: Seconds to wait for ``dot``.
            collapse: As for ``to_dot``: True draws gradient and optimizer scopes as one node each.

        Returns:
            The path written.

        Raises:
            GraphvizNotFoundError: Graphviz's ``dot`` is not installed.
            RenderError: ``dot`` failed (the message carries its stderr).
        """
        return visualize.render(self, path, format, rankdir, timeout, collapse)

    def save(self, path: str) -> str:
        """Save the graph and its variables' current values; ``mg.load`` reads them back.

        MPSGraph serializes compiled executables (``.mpsgraphpackage``), not graphs; this format
        is minigraph's own: ``path`` (JSON) and the arrays beside it (``.npz``).

        Args:
            path: The JSON file to write (or a directory: ``graph.json`` and ``graph.npz`` in it).

        Returns:
            The path of the JSON document.
        """
        return serialize.save(self, path)

    def save_variables(self, path: Any, variables: Optional[Sequence[Tensor]] = None) -> str:
        """Write the variables' current values to ``path`` in the safetensors format, keyed by
        variable name (no MPSGraph counterpart).

        PyTorch (``safetensors.torch.load_file``), JAX, MLX and NumPy read the file; ``load_variables``
        puts it back into a graph with variables of the same names, shapes and dtypes. Unlike
        ``save``, it holds no graph: it is a weights checkpoint.

        Args:
            path: The file to write (``.safetensors`` by convention); replaced atomically.
            variables: The variables to save (default: ``g.variables``, optimizer state included).

        Returns:
            The path written.
        """
        return checkpoint.save_variables(self, path, variables)

    def load_variables(self, path: Any, variables: Optional[Sequence[Tensor]] = None, strict: bool = True) -> list:
        """Set variables from a safetensors file, by variable name (no MPSGraph counterpart).

        Every entry is checked before any variable changes.

        Args:
            path: A safetensors file (from ``save_variables``, PyTorch, JAX, MLX, ...).
            variables: The variables to set (default: ``g.variables``).
            strict: With True, a variable without an entry (missing) or an entry without a
                variable (extra) is an error; with False, only the names both have are loaded.

        Returns:
            The variables that were set.

        Raises:
            SerializationError: not a safetensors file, or missing or extra entries (named).
            ShapeError, DTypeError: an entry's shape or dtype is not its variable's (also SerializationErrors).
        """
        return checkpoint.load_variables(self, path, variables, strict)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        """Jupyter's display: an SVG picture (through the ``graphviz`` package and Graphviz's
        ``dot``; gradient and optimizer scopes collapsed) and the text listing; the listing alone
        where either is missing. No MPSGraph counterpart."""
        return visualize.mimebundle(self)

    def _repr_svg_(self) -> Optional[str]:
        """The graph as SVG for Jupyter, or None (Jupyter then shows the text) without Graphviz; no MPSGraph counterpart."""
        return visualize.svg_or_none(self)

    def to_swift(self, feeds: Optional[Mapping[Tensor, Any]] = None, target_tensors: Optional[Sequence[Tensor]] = None,
                 target_operations: Optional[Sequence[Operation]] = None) -> str:
        """Swift source that builds this graph with MPSGraph and runs it.

        Args:
            feeds: Optional ``{placeholder: array}`` embedded as the run's data.
            target_tensors: The tensors the Swift run returns (default: those nothing consumes).
            target_operations: The operations it runs (default: assigns nothing depends on).

        Returns:
            The Swift source, one MPSGraph call per op.
        """
        return swift.to_swift(self, feeds, target_tensors, target_operations)

    # ---------------------------------------------------------------- compile and run
    def compile(self, feeds: Mapping[Tensor, Any], target_tensors: Sequence[Tensor] = (),
                target_operations: Sequence[Operation] = (), backend: str = "numpy", *,
                compilation_descriptor: Optional[CompilationDescriptor] = None):
        """Compile the ops the targets need into a reusable ``Executable``.

        MPSGraph ``compile(with:feeds:targetTensors:targetOperations:compilationDescriptor:)``.

        Args:
            feeds: placeholder -> ``ShapedType`` (or an array, whose type is used). A -1
                dimension makes the executable specialise on each new concrete shape.
            target_tensors: tensors whose values ``Executable.run`` returns, in this order.
            target_operations: operations (``assign``, optimizer steps) run for their effect.
            backend: a name from ``mg.available_backends()``.
            compilation_descriptor: a ``CompilationDescriptor`` (None: level 1 with elementwise
                fusion), MPSGraph's ``compilationDescriptor:`` (docs/compiler.md).

        Returns:
            An ``Executable``.

        Raises:
            FeedError, TargetError, KernelMissingError, BackendUnavailableError: naming the
                placeholder, target, op or backend at fault.
            DescriptorError: ``compilation_descriptor`` is not a valid ``CompilationDescriptor``.
        """
        compilation_key(compilation_descriptor)  # a wrong descriptor fails before anything is built
        types = {}
        for t, v in _as_feeds(feeds).items():
            types[t] = v if isinstance(v, ShapedType) else _type_of_feed(t, v)
        with self._lock:
            self._compiles += 1
        return Executable(self, types, _as_list(target_tensors, "target_tensors", TargetError),
                          _as_list(target_operations, "target_operations", TargetError), backend,
                          compilation_descriptor)

    def run(self, feeds: Optional[Mapping[Tensor, Any]] = None, target_tensors: Sequence[Tensor] = (),
            target_operations: Sequence[Operation] = (), backend: str = "numpy", *,
            compilation_descriptor: Optional[CompilationDescriptor] = None) -> dict:
        """Compile (cached by feed types, targets, backend and compilation descriptor) and run.

        MPSGraph ``run(feeds:targetTensors:targetOperations:)``.

        Args:
            feeds: placeholder -> array. An ndarray must have the placeholder's dtype; lists
                and numbers are converted to it; a ``TensorData`` is read where it is held.
                Feeds are never modified.
            target_tensors: tensors to compute and return.
            target_operations: operations (``assign``, optimizer steps) run for their effect.
            backend: a name from ``mg.available_backends()``.
            compilation_descriptor: a ``CompilationDescriptor`` (None: level 1 with elementwise
                fusion); its fields are part of the cache key (docs/compiler.md).

        Returns:
            ``{tensor: ndarray}`` for the target tensors.
        """
        feeds = _as_feeds(feeds)
        target_tensors = _as_list(target_tensors, "target_tensors", TargetError)
        target_operations = _as_list(target_operations, "target_operations", TargetError)
        if not isinstance(backend, str):
            raise BackendUnavailableError(f"backend must be a name such as 'numpy', got {backend!r}")
        ckey = compilation_key(compilation_descriptor)
        types = {t: _type_of_feed(t, v) for t, v in feeds.items()}
        key = (tuple((id(t), types[t].shape, types[t].dtype.name) for t in feeds),
               tuple(id(t) for t in target_tensors), tuple(id(o) for o in target_operations), backend, ckey)
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
                    "g.cache_size = n keeps more)")
            self._last_compile_reason = reason
            _log.info("run compiles for backend %r: %s", backend, reason)
            exe = self.compile(types, target_tensors, target_operations, backend,
                               compilation_descriptor=CompilationDescriptor(ckey[0], ckey[1], dict(ckey[2])))
            with self._lock:
                self._cache_misses += 1
                self._cache[key] = exe
                self._evicted.pop(key, None)
                self._evict_to(self._cache_size)
        values = exe.run(feeds)
        return dict(zip(target_tensors, values))

    def run_async(self, feeds: Optional[Mapping[Tensor, Any]] = None, target_tensors: Sequence[Tensor] = (),
                  target_operations: Sequence[Operation] = (), backend: str = "numpy", *,
                  compilation_descriptor: Optional[CompilationDescriptor] = None,
                  executor: Optional[concurrent.futures.Executor] = None) -> concurrent.futures.Future:
        """``g.run`` in the background: returns at once with a ``concurrent.futures.Future`` of its
        ``{tensor: ndarray}`` (MPSGraph ``runAsync(feeds:targetTensors:targetOperations:executionDescriptor:)``;
        the execution descriptor's completion handler is ``future.add_done_callback``).

        The feed arrays are copied when called, so the caller may reuse them at once (a
        ``TensorData`` is not: nothing writes it). Without an
        ``executor`` the runs go to one background thread shared by every graph, in the order they
        were asked for, as runs on one command queue; ``future.result()`` returns the results or
        raises the run's error (a failed run assigns nothing, as with ``g.run``).

        Args:
            feeds: placeholder -> array, as for ``g.run``.
            target_tensors: tensors to compute and return.
            target_operations: operations run for their effect.
            backend: a name from ``mg.available_backends()``.
            compilation_descriptor: a ``CompilationDescriptor``, as for ``g.run``.
            executor: a ``concurrent.futures.Executor`` to run on instead (runs may then overlap).

        Returns:
            ``concurrent.futures.Future`` whose result is ``{tensor: ndarray}``.
        """
        feeds = {t: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v) for t, v in _as_feeds(feeds).items()}
        target_tensors = _as_list(target_tensors, "target_tensors", TargetError)
        target_operations = _as_list(target_operations, "target_operations", TargetError)
        return (executor or _async_executor()).submit(
            self.run, feeds, target_tensors, target_operations, backend,
            compilation_descriptor=compilation_descriptor)

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
    def random_draws(self) -> int:
        """How many runs with random ops succeeded so far, through any of the graph's executables: the
        draw number of the next such run (docs/random.md; not in MPSGraph). Assign an int >= 0 to
        replay a draw (``g.random_draws = 0`` makes the next run draw what the first one drew)."""
        return self.random_stream.draws

    @random_draws.setter
    def random_draws(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n < 1 << 64:
            raise TargetError(f"random_draws must be an int in [0, 2**64), got {n!r:.60}")
        with self.random_stream.lock:  # not in the middle of a run's draw
            self.random_stream.draws = int(n)

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

    @property
    def cache_size(self) -> Optional[int]:
        """How many executables ``run`` keeps (LRU; 0 disables the cache, None: unbounded).

        Assigning it evicts at once. MPSGraph's own run cache is not configurable.
        """
        return self._cache_size

    @cache_size.setter
    def cache_size(self, size: Optional[int]) -> None:
        with self._lock:
            self._cache_size = _cache_bound(size)
            self._evict_to(self._cache_size)

    def set_cache_size(self, size: Optional[int]) -> None:
        """Deprecated: assign ``g.cache_size = size`` (MPSGraph's run cache is not configurable).

        Args:
            size: How many executables ``run`` keeps.
        """
        warnings.warn("Graph.set_cache_size(n) is deprecated; assign g.cache_size = n", DeprecationWarning, stacklevel=2)
        self.cache_size = size

    def cache_clear(self) -> None:
        """Drop every cached executable, as ``functools.lru_cache``'s ``cache_clear`` (MPSGraph's run cache is internal, no equivalent)."""
        with self._lock:
            self._cache.clear()

    def _evict_to(self, size: Optional[int]) -> None:
        """Drop least-recently-used executables; remember their keys to explain a recompile."""
        while size is not None and len(self._cache) > size:
            k, _ = self._cache.popitem(last=False)
            self._evicted[k] = None
            while len(self._evicted) > 4096:
                self._evicted.popitem(last=False)

    def __repr__(self) -> str:
        return f"<minigraph.Graph with {len(self.operations)} ops>"



class CacheInfo(namedtuple("CacheInfo", "hits misses maxsize currsize")):
    """``functools.lru_cache``'s statistics tuple, plus ``compiles`` and ``last_reason`` attributes."""

    compiles: int
    last_reason: str

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
    if isinstance(v, TensorData):
        return ShapedType(v.checked_for(t).shape, feed_dtype(t.dtype, v.dtype.np_dtype))
    arr = coerce_feed(t, v)
    try:
        return ShapedType(arr.shape, feed_dtype(t.dtype, arr.dtype) if isinstance(t, Tensor) else arr.dtype)
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


def load(path: str) -> Graph:
    """A graph saved by ``Graph.save``, rebuilt op by op with its variables' saved values.

    The file is checked before anything is built: a malformed or hostile file raises
    ``SerializationError``. MPSGraph loads compiled executables from a ``.mpsgraphpackage`` instead.

    Args:
        path: The JSON file ``g.save`` wrote (its ``.npz`` beside it), or the directory it saved into.
    """
    doc = serialize.read(path)
    g = Graph(cache_size=doc.cache_size)
    serialize.rebuild(g, doc)
    return g
