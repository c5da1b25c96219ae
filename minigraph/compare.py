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
from .descriptors import CompilationDescriptor, OptimizationLevel
from .errors import TargetError
from .listing import fmt_shape
from .ir import Operation, Tensor

# every op runs on each backend as its own step: no fusion (every tensor is a target anyway),
# no constant folding (which would compute a folded op with NumPy on every backend) and no CSE
_EVERY_OP = CompilationDescriptor(OptimizationLevel.LEVEL0, fusion=False)


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
    rtol: float = 0.0  # the tolerance this tensor was checked with
    atol: float = 0.0
    tolerance_used: float = 0.0  # max over elements of |error| / (atol + rtol * |reference|): <= 1 passes
    reduction_length: int = 1  # the op's longest sum per output element, which the default tolerance scales with

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
    rtol: Optional[float]  # None: each op's default tolerance (TensorDiff.rtol has the one used)
    atol: Optional[float]
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
        tol = (f"rtol={self.rtol:g}, atol={self.atol:g}" if self.rtol is not None and self.atol is not None else
               "default tolerances: rtol = max(floor, 8 * unit roundoff * sqrt(reduction length)) per op, "
               "atol = rtol * max|reference|")
        lines = [f"compare_backends: {', '.join(others)} against {self.reference} "
                 f"({tol}): {n} tensors, {len({d.tensor for d in self.failures})} over tolerance"]
        f = self.first_failure
        if f is None:
            worst = max(self.diffs, key=lambda d: d.tolerance_used, default=None)
            lines.append("all tensors agree within tolerance" + (
                f" (closest: {worst.tensor!r} at {worst.tolerance_used:.1%} of its tolerance)" if worst else ""))
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
            head += f"  {b + ' abs':>12} {'rel':>9} {'tol used':>8}     "
        lines.append(head.rstrip())
        for pos in sorted(rows):
            ds = rows[pos]
            d0 = ds[0]
            line = f"  {pos:>3}  {d0.tensor:<{wn}}  {d0.op_type:<{wt}}  {d0.dtype + fmt_shape(d0.shape):<18}"
            for d in ds:
                line += f"  {_num(d.max_abs):>12} {_num(d.max_rel):>9} {_used(d.tolerance_used):>8} {'ok  ' if d.ok else 'FAIL'}"
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


def _used(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.0%}" if x >= 0.01 or x == 0 else "<1%"


# the smallest default rtol per dtype: a few ulps of an elementwise math function on a GPU
RTOL_FLOOR = {"float32": 1e-5, "float64": 1e-12}  # others: 8 ulps (float16: 3.9e-3)


def reduction_length(op: Operation) -> int:
    """An upper estimate of the longest sum behind one output element of ``op`` (1 for elementwise
    ops): matmul's inner dimension, a reduction's reduced count, and for the convolution, pooling
    and gradient families the smaller operand's element count per output channel or the ratio of
    input to output elements, whichever is larger. Rounding grows with it, so tolerances do."""
    if not op.outputs or not op.inputs:
        return 1
    out = max(1, _numel(op.outputs[0].shape))
    sizes = [_numel(t.shape) for t in op.inputs]
    if op.type == "matrix_multiplication":
        return max(1, op.inputs[0].shape[-1])
    if op.opdef.family == "fft":  # a sum over the transformed axes
        return max(1, _numel([max(op.inputs[0].shape[a], op.outputs[0].shape[a]) for a in op.attrs["axes"]]))
    ratio = max(1, max(sizes) // out)
    if len(op.inputs) < 2 or op.opdef.family in ("arithmetic", "comparison", "memory", "shape", "activation", "gather"):
        return ratio
    return max(ratio, min(sizes))


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= max(d, 0)
    return n


def default_tolerance(op: Operation, dtype: Any, ref: np.ndarray) -> tuple:
    """(rtol, atol) for one tensor: rtol = max(floor, 8 * u * sqrt(K)) with ``u`` the dtype's unit
    roundoff and K the op's ``reduction_length`` (random-walk growth of rounding in a sum of K
    terms), atol = rtol * max|reference| (the tensor's scale: a sum that cancels to ~0 keeps the
    rounding of its terms). Integer and bool tensors must match exactly; a complex tensor takes the
    tolerance of its parts' dtype."""
    np_dtype = np.dtype(dtype.real_dtype.np_dtype if getattr(dtype, "is_complex", False) else dtype.np_dtype)
    if dtype.name == "complex32":
        np_dtype = np.dtype(np.float16)
    if np_dtype.kind != "f":
        return 0.0, 0.0
    u = float(np.finfo(np_dtype).eps) / 2
    rtol = max(RTOL_FLOOR.get(np_dtype.name, 8 * u), 8 * u * math.sqrt(reduction_length(op)))
    with np.errstate(all="ignore"):
        finite = np.abs(ref[np.isfinite(ref)]) if ref.size else np.zeros(0)
    return rtol, rtol * (float(finite.max()) if finite.size else 0.0)


def _diff(a: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> tuple:
    """(max_abs, max_rel, ok, note, tolerance used) of ``a`` against ``ref``."""
    if a.shape != ref.shape:
        return math.inf, math.inf, False, f"shape {a.shape} vs reference {ref.shape}", math.inf
    note = "" if a.dtype == ref.dtype else f"dtype {a.dtype} vs reference {ref.dtype}"
    if a.size == 0:
        return 0.0, 0.0, not note, note, 0.0
    if a.dtype.kind == "c" or ref.dtype.kind == "c":  # the parts, side by side
        a, ref = np.stack([a.real, np.imag(a)], -1), np.stack([ref.real, np.imag(ref)], -1)
    x = a.astype(np.float64)
    r = ref.astype(np.float64)
    nan_x, nan_r = np.isnan(x), np.isnan(r)
    if (nan_x != nan_r).any():
        k = int((nan_x != nan_r).sum())
        return math.inf, math.inf, False, (note + "; " if note else "") + f"NaN in {k} places on one side only", math.inf
    both = ~nan_x
    x, r = x[both], r[both]
    with np.errstate(all="ignore"):
        inf_same = np.isinf(x) & (x == r)
        err = np.where(inf_same, 0.0, np.abs(x - r))
        err = np.where(np.isnan(err), np.inf, err)  # inf vs -inf
        max_abs = float(err.max()) if err.size else 0.0
        nz = (r != 0) & ~inf_same
        max_rel = float((err[nz] / np.abs(r[nz])).max()) if nz.any() else (0.0 if max_abs == 0 else math.inf)
        tol = atol + rtol * np.abs(np.where(inf_same, 0, r))
        ok = bool((err <= tol).all())
        used = np.where(err == 0, 0.0, err / tol)
        used_max = float(np.nanmax(used)) if used.size else 0.0
    return max_abs, max_rel, ok and not note, note, used_max


def compare_backends(g: Any, feeds: Optional[Mapping[Tensor, Any]] = None, targets: Sequence[Tensor] = (),
                     backends: Sequence[str] = ("numpy", "webgpu"), rtol: Optional[float] = None,
                     atol: Optional[float] = None) -> BackendComparison:
    """Run every tensor the ``targets`` need on each backend and compare them with the first (not in MPSGraph).

    Returns a ``BackendComparison``: per tensor, in topological order, the max abs and rel error
    of each backend against the reference, the fraction of its tolerance it used
    (``tolerance_used``: <= 1 passes), and ``first_failure``, the earliest tensor over
    ``atol + rtol * |reference|``. Variables are left as they were, even if the targets depend on
    an assignment through a control dependency.

    By default each tensor gets the tolerance of its op (``default_tolerance``): float32 sums of K
    terms in another order differ by ~sqrt(K) ulps, so ``rtol = max(1e-5, 8 * 2**-24 * sqrt(K))``
    with K the op's ``reduction_length`` (float64: floor 1e-12; float16: 8 ulps, 3.9e-3) and
    ``atol = rtol * max|reference|``; integer and bool tensors must match exactly.

    Args:
        feeds: ``{placeholder: array}`` for the run.
        targets: The tensors whose computation is compared (with everything they need).
        backends: Backend names; the first is the reference.
        rtol: Relative tolerance for every tensor (None: each op's default).
        atol: Absolute tolerance for every tensor (None: each op's default; 0 when only ``rtol`` is given).
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
            exe = g.compile(feeds, tensors, [], backend=b, compilation_descriptor=_EVERY_OP)
            out = exe.run(feeds)
        finally:
            g.variable_store.restore(saved)  # a run through a control-dependent assign must not leak into the next backend
        values[b] = out
        report.results[b] = {t.name: v for t, v in zip(tensors, out)}
    ref = values[backends[0]]
    for pos, t in enumerate(tensors):
        r = np.asarray(ref[pos])
        if rtol is None and atol is None:
            rt, at = default_tolerance(t.operation, t.dtype, r)
        else:
            rt, at = (rtol or 0.0), (atol or 0.0)
        for b in backends[1:]:
            a = np.asarray(values[b][pos])
            max_abs, max_rel, ok, note, used = _diff(a, r, rt, at)
            report.diffs.append(TensorDiff(pos, t.name, t.operation.type, tuple(r.shape), t.dtype.name, b,
                                           max_abs, max_rel, ok, note, rt, at, used, reduction_length(t.operation)))
    return report
