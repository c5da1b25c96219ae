"""The ``cpu`` backend: the NumPy backend's runner, with the steps this package compiles swapped for
Numba kernels that run without the GIL on Numba's threads (docs/cpu.md).

``prepare`` builds the NumPy backend's runner for the plan (memory ops, and every op without a
compiled kernel here, keep its closures), then replaces the closure of each step it has a
kernel for: the depthwise 2D trio (depthwise.py), the batch-norm statistics, ``normalize`` and its
gradients (normalization.py), elementwise ops and fused elementwise steps (fused.py), and the
tails of epilogue steps (the anchor's kernel, then the tail as one loop).
Each run first gives Numba ``mg.get_num_threads()`` threads (at most the cores Numba started
with). This module imports Numba only when a plan is prepared, so ``import minigraph`` works
without the ``cpu`` extra; ``available()`` says what is missing.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import threading
from typing import Any, Callable, Optional

from ...errors import BackendUnavailableError, KernelMissingError
from ..numpy import NumpyBackend
from ..numpy.backend import _bind, _bind_several
from ..numpy.fused import EPILOGUE_OPS, FUSIBLE_OPS, _OpStep, _Tail, fused_kernel
from ..numpy.registry import KERNELS
from ..numpy.threads import get_num_threads

EXTRA_HINT = "pip install numba (or, in a checkout, pip install -e '.[cpu]')"


def _compiled() -> tuple:
    """``(kernel factories by op type, fused)``: the Numba kernels, imported once a plan is prepared
    (their modules import Numba, the optional extra, at their top; ``import minigraph`` must work
    without it)."""
    factories = {}
    for name in (".depthwise", ".normalization"):
        factories.update(importlib.import_module(name, __package__).KERNELS)
    return factories, importlib.import_module(".fused", __package__)


# Numba's OpenMP threads spin between kernels by default; on a step that also runs BLAS and the
# NumPy pool, at as many threads as cores, the spinning threads took the cores from them (the
# six-block step on 16 cores: 326 ms spinning, 111 ms passive). Set before Numba starts OpenMP,
# and only where the user has not chosen.
WAIT_POLICY = ("OMP_WAIT_POLICY", "PASSIVE")


# Where an OpenMP runtime was loaded before the policy was set (PyTorch imported first), its threads
# keep the spinning default, and Numba's OpenMP layer shares them: the six-block step took 268 ms at
# 16 threads, against 90 ms with the policy set at the start and 105 ms on Numba's own workqueue
# layer. So then Numba runs on workqueue, whose pool is not safe for two kernels at once
# (``RUN_LOCK``). A user's own NUMBA_THREADING_LAYER or OMP_WAIT_POLICY is left as it is.
_LAYER: dict = {"chosen": None}
RUN_LOCK = threading.Lock()


def _openmp_loaded() -> bool:
    """Whether an OpenMP runtime (libgomp, libomp, libiomp) is mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return False
    return any(name in maps for name in ("libgomp", "libomp", "libiomp"))


def _numba() -> tuple:
    """``(numba module or None, why not)``; first sets ``WAIT_POLICY`` unless it is set, and
    picks the threading layer once (above)."""
    spinning = _LAYER["chosen"] is None and WAIT_POLICY[0] not in os.environ and _openmp_loaded()
    os.environ.setdefault(*WAIT_POLICY)
    try:
        import numba
    except ImportError as e:
        return None, f"needs Numba, the 'cpu' extra ({EXTRA_HINT}): {e}"
    if _LAYER["chosen"] is None:
        if spinning and "NUMBA_THREADING_LAYER" not in os.environ:
            numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]
        _LAYER["chosen"] = numba.config.THREADING_LAYER  # type: ignore[attr-defined]
    return numba, ""


def threading_layer() -> Optional[str]:
    """The Numba threading layer this backend asked for (``"default"``, ``"workqueue"``, ...);
    None before the first plan is prepared."""
    return _LAYER["chosen"]


def thread_count() -> int:
    """The threads a run of this backend uses now: ``mg.get_num_threads()``, at most the cores
    Numba started with (``NUMBA_NUM_THREADS``); 0 without Numba. Sets nothing."""
    numba, _ = _numba()
    if numba is None:
        return 0
    return max(1, min(get_num_threads(), numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]


def numba_threads(n: Optional[int] = None) -> int:
    """Give Numba ``n`` threads (``mg.get_num_threads()`` by default), at most the cores it started
    with (``NUMBA_NUM_THREADS``); returns the count in effect. Numba's count is per calling thread."""
    import numba

    want = get_num_threads() if n is None else n
    got = max(1, min(want, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    if numba.get_num_threads() != got:
        numba.set_num_threads(got)
    return got


class CpuBackend:
    """Compiled CPU kernels (Numba, no GIL, on Numba's threads); the NumPy backend's for the rest."""

    name = "cpu"
    fusible_ops = FUSIBLE_OPS  # the same programs as the NumPy backend: a step fused.py cannot compile runs NumPy's
    epilogue_ops = EPILOGUE_OPS

    @property
    def memory_facts(self):
        """The NumPy kernels' declarations: the compiled kernels here return new arrays and keep
        nothing, so the plans may reuse buffers as the NumPy backend's do."""
        return KERNELS.memory_facts()

    def available(self):
        numba, why = _numba()
        if numba is None:
            return False, why
        return True, (f"Numba {numba.__version__}: compiled kernels on {thread_count()} "
                      f"threads (of {numba.config.NUMBA_NUM_THREADS})")

    def prepare(self, plan):
        numba, why = _numba()
        if numba is None:
            raise BackendUnavailableError(f"backend 'cpu' is not available: {why}")
        base = NumpyBackend().prepare(plan)  # KernelMissingError for an op no backend here can run
        return CpuRunner(base, _compile_steps(plan, base))


def _kernel_for(step) -> Optional[Callable]:
    """The compiled kernel of one step, or None where the NumPy kernel stays."""
    factories, fused = _compiled()
    if len(step.outputs) != 1:
        return None
    if step.program:
        anchor = step.anchor
        if anchor is None:
            return fused.step_kernel(step)
        anchor_kernel = _anchor_kernel(step)
        got = fused.epilogue_kernel(step, anchor_kernel)
        if got is None and anchor.type in factories:  # the compiled anchor, NumPy's tail: the
            got = fused.with_tail(step, anchor_kernel, _numpy_tail(step))  # same anchor bits as unfused
        return got
    factory = factories.get(step.op.type)
    if factory is not None:
        return factory(step)
    if step.op.opdef.elementwise and step.op.type in fused.SUPPORTED_OPS:
        return fused.step_kernel(step)
    return None


def _numpy_tail(step) -> Callable:
    """The NumPy backend's kernel of an epilogue step's tail, as ``fn(*inputs, anchor, out=None)``."""
    tail = fused_kernel(_Tail(step))
    return lambda *xs, out=None: tail(*xs)


def _anchor_kernel(step) -> Callable:
    """The kernel of an epilogue step's anchor: compiled here, else the NumPy backend's."""
    factories, _ = _compiled()
    a_op, a_args, a_ty = step.program[0]
    sub = _OpStep(a_op, tuple(step.in_types[a] for a in a_args), a_ty)
    factory = factories.get(a_op.type)
    fn = factory(sub) if factory is not None else None
    if fn is None:
        numpy_factory = KERNELS.get(a_op.type)
        if numpy_factory is None:  # pragma: no cover - the NumPy runner's prepare checked every op
            raise KernelMissingError(f"no kernel for the {a_op.type} op {a_op.name!r} of an epilogue step")
        fn = numpy_factory(sub)
    return fn


def _compile_steps(plan, base) -> list:
    """Swap the closures of the steps compiled here into the NumPy runner ``base``; returns their
    kernel names, in plan order."""
    by_op = {id(st.op): st for st in plan.steps if not st.op.opdef.internal}
    compiled = []
    for i, (_closure, op) in enumerate(base.steps):
        st = by_op.get(id(op))
        if st is None:
            continue
        fn = _kernel_for(st)
        if fn is None:
            continue
        if len(st.outputs) > 1:  # pragma: no cover - _kernel_for compiles one-output steps only
            base.steps[i] = (_bind_several(fn, st.inputs, st.outputs, st.free), op)
        else:
            base.steps[i] = (_bind(fn, st.inputs, st.outputs[0], st.free), op)
        compiled.append(st.kernel)
    return compiled


class CpuRunner:
    """The NumPy runner with compiled steps; each run sets Numba's thread count first."""

    profile_clocks = ("host",)

    def __init__(self, base: Any, compiled: list):
        self.base = base
        self.compiled = compiled  # the kernel names of the steps that run compiled code

    def __call__(self, feed_values, variables):
        with self._serial():
            numba_threads()
            return self.base(feed_values, variables)

    def profile(self, feed_values, variables, clock_name: str = "host"):
        with self._serial():
            numba_threads()
            return self.base.profile(feed_values, variables, clock_name)

    @staticmethod
    def _serial():
        """``RUN_LOCK`` on the workqueue layer (one parallel kernel at a time), else nothing."""
        return RUN_LOCK if threading_layer() == "workqueue" else contextlib.nullcontext()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["base"], name)
