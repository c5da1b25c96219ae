"""Cross-backend diff: run every intermediate tensor on several backends and say where they part.

``compare_backends`` makes every tensor the targets need a target, runs the graph on each
backend with the same feeds, and compares each backend with the first (the reference) in
topological order, so the first tensor over tolerance is the op to look at: everything before it
agreed. MPSGraph has no such tool; its nearest aid is running a graph with
``MPSGraphOptions.verbose``.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import networkx as nx
import numpy as np

from .coerce import coerce_feed
from .compiler.plan import needed_ops
from .errors import TargetError
from .listing import fmt_shape
from .ir import Operation, Tensor


@dataclass(frozen=True)
class TensorDiff:
    """How one backend's value of one tensor differs from the reference backend's."""

    position: int  # topological position among the compared tensors
    tensor: str
    op_type: str
    shape: tuple
    dtype: str
    backend: str
    max_abs: float  # max |value - reference|
    max_rel: float  # max |value - reference| / |reference| over non-zero reference elements
    ok: bool  # every element within atol + rtol * |reference| (NaN matches NaN)
    note: str = ""

    @property
    def name(self) -> str:
        """The tensor's name (``report.first_failure.name`` names the node to look at)."""
        return self.tensor

    @property
    def max_abs_error(self) -> float:
        """Deprecated: use ``max_abs``."""
        warnings.warn("TensorDiff.max_abs_error is deprecated; use max_abs", DeprecationWarning, stacklevel=2)
        return self.max_abs

    @property
    def max_rel_error(self) -> float:
        """Deprecated: use ``max_rel``."""
        warnings.warn("TensorDiff.max_rel_error is deprecated; use max_rel", DeprecationWarning, stacklevel=2)
        return self.max_rel


@dataclass
class BackendComparison:
    """The result of ``compare_backends``: ``diffs`` in topological order, ``first_failure``."""

    reference: str
    backends: tuple
    rtol: float
    atol: float
    diffs: list = field(default_factory=list)
    results: dict = field(default_factory=dict)  # backend -> {tensor name: ndarray}

    @property
    def failures(self) -> list:
        return [d for d in self.diffs if not d.ok]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def first_failure(self):
        """The earliest tensor (in topological order) over tolerance on some backend, or None."""
        f = self.failures
        return f[0] if f else None

    def __iter__(self):
        """The diffs, in topological order."""
        return iter(self.diffs)

    def __len__(self) -> int:
        return len(self.diffs)

    def diff(self, tensor: Any, backend: Optional[str] = None) -> TensorDiff:
        """The diff of one tensor (by name or Tensor) on ``backend`` (default: the first other)."""
        name = tensor.name if isinstance(tensor, Tensor) else tensor
        backend = backend or self.backends[1]
        for d in self.diffs:
            if d.tensor == name and d.backend == backend:
                return d
        raise KeyError(f"no diff for tensor {name!r} on backend {backend!r}")

    def __str__(self) -> str:
        others = [b for b in self.backends if b != self.reference]
        n = len({d.tensor for d in self.diffs})
        lines = [f"compare_backends: {', '.join(others)} against {self.reference} "
                 f"(rtol={self.rtol:g}, atol={self.atol:g}): {n} tensors, "
                 f"{len({d.tensor for d in self.failures})} over tolerance"]
        f = self.first_failure
        if f is None:
            lines.append("all tensors agree within tolerance")
        else:
            lines.append(f"first over tolerance: {f.tensor!r} ({f.op_type}) on {f.backend}: max abs "
                         f"{_num(f.max_abs)}, max rel {_num(f.max_rel)}" + (f" ({f.note})" if f.note else ""))
        rows: dict[int, list] = {}
        for d in self.diffs:
            rows.setdefault(d.position, []).append(d)
        wn = min(max([len(d.tensor) for d in self.diffs] + [6]), 40)
        wt = min(max([len(d.op_type) for d in self.diffs] + [4]), 28)
        head = f"  {'#':>3}  {'tensor':<{wn}}  {'type':<{wt}}  {'dtype[shape]':<18}"
        for b in others:
            head += f"  {b + ' abs':>12} {'rel':>9}     "
        lines.append(head.rstrip())
        for pos in sorted(rows):
            ds = rows[pos]
            d0 = ds[0]
            line = f"  {pos:>3}  {d0.tensor:<{wn}}  {d0.op_type:<{wt}}  {d0.dtype + fmt_shape(d0.shape):<18}"
            for d in ds:
                line += f"  {_num(d.max_abs):>12} {_num(d.max_rel):>9} {'ok  ' if d.ok else 'FAIL'}"
                if d.note:
                    line += f" {d.note}"
            lines.append(line.rstrip())
        return "\n".join(lines)

    __repr__ = __str__


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if math.isinf(x) or math.isnan(x):
        return str(x)
    return f"{x:.2e}"


def _diff(a: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> tuple:
    """(max_abs, max_rel, ok, note) of ``a`` against ``ref``."""
    if a.shape != ref.shape:
        return math.inf, math.inf, False, f"shape {a.shape} vs reference {ref.shape}"
    note = "" if a.dtype == ref.dtype else f"dtype {a.dtype} vs reference {ref.dtype}"
    if a.size == 0:
        return 0.0, 0.0, not note, note
    x = a.astype(np.float64)
    r = ref.astype(np.float64)
    nan_x, nan_r = np.isnan(x), np.isnan(r)
    if (nan_x != nan_r).any():
        k = int((nan_x != nan_r).sum())
        return math.inf, math.inf, False, (note + "; " if note else "") + f"NaN in {k} places on one side only"
    both = ~nan_x
    x, r = x[both], r[both]
    with np.errstate(all="ignore"):
        inf_same = np.isinf(x) & (x == r)
        err = np.where(inf_same, 0.0, np.abs(x - r))
        err = np.where(np.isnan(err), np.inf, err)  # inf vs -inf
        max_abs = float(err.max()) if err.size else 0.0
        nz = (r != 0) & ~inf_same
        max_rel = float((err[nz] / np.abs(r[nz])).max()) if nz.any() else (0.0 if max_abs == 0 else math.inf)
        ok = bool((err <= atol + rtol * np.abs(np.where(inf_same, 0, r))).all())
    return max_abs, max_rel, ok and not note, note


def compare_backends(g: Any, feeds: Optional[Mapping[Tensor, Any]] = None, targets: Sequence[Tensor] = (),
                     backends: Sequence[str] = ("numpy", "webgpu"), rtol: float = 1e-5,
                     atol: float = 1e-6) -> BackendComparison:
    """Run every tensor the ``targets`` need on each backend and compare them with the first (not in MPSGraph).

    Returns a ``BackendComparison``: per tensor, in topological order, the max abs and rel error
    of each backend against the reference, and ``first_failure``, the earliest tensor over
    ``atol + rtol * |reference|``. Variables are left as they were, even if the targets depend on
    an assignment through a control dependency.

    Args:
        feeds: ``{placeholder: array}`` for the run.
        targets: The tensors whose computation is compared (with everything they need).
        backends: Backend names; the first is the reference.
        rtol: Relative tolerance of the comparison.
        atol: Absolute tolerance of the comparison.
    """

    backends = tuple(backends)
    if len(backends) < 2 or len(set(backends)) != len(backends):
        raise TargetError(f"compare_backends needs at least two distinct backends, got {list(backends)}")
    if isinstance(targets, Tensor):
        targets = [targets]
    targets = list(targets)
    if not targets:
        raise TargetError("compare_backends needs target tensors (the tensors whose inputs are compared)")
    for t in targets:
        if not isinstance(t, Tensor):
            raise TargetError(f"compare_backends: targets must be tensors, got {t!r}"
                              + (" (an operation)" if isinstance(t, Operation) else ""))
        g.check_same_graph(t, "compare_backends")
    feeds = {t: coerce_feed(t, v) for t, v in dict(feeds or {}).items()}
    dg = needed_ops(g, targets, [])
    order = [dg.nodes[n]["op"] for n in nx.lexicographical_topological_sort(dg)]
    tensors = [t for op in order for t in op.outputs]
    report = BackendComparison(backends[0], backends, rtol, atol)
    values = {}
    for b in backends:
        saved = g.variable_store.values
        try:
            exe = g.compile(feeds, tensors, [], backend=b)
            out = exe.run(feeds)
        finally:
            g.variable_store.restore(saved)  # a run through a control-dependent assign must not leak into the next backend
        values[b] = out
        report.results[b] = {t.name: v for t, v in zip(tensors, out)}
    ref = values[backends[0]]
    for pos, t in enumerate(tensors):
        for b in backends[1:]:
            a = np.asarray(values[b][pos])
            max_abs, max_rel, ok, note = _diff(a, np.asarray(ref[pos]), rtol, atol)
            report.diffs.append(TensorDiff(pos, t.name, t.operation.type, tuple(ref[pos].shape),
                                           t.dtype.name, b, max_abs, max_rel, ok, note))
    return report
