"""The webgpu backend: plans become pre-bound dispatches of our WGSL kernels through wgpu.

``WebGPUBackend`` probes for an adapter once (``available``), refuses a plan with an op it has
no kernel for, and prepares the rest as a ``Runner`` (runner.py). The rest of the backend, one
idea a module: ``device.py`` the adapter, device and pipeline cache; ``buffers.py`` device
buffers and their pool; ``kernel_builder.py`` what a kernel factory sees; ``runner.py`` the
prepared plan and its runs; ``profilers.py`` its timed runs; ``resident.py`` the variables that
stay on the device; ``tensor_data.py`` the feeds held there (``mg.TensorData``); the kernels
themselves, registered in ``registry.py``, in the other modules.
"""
from __future__ import annotations

import sys
import threading

from ...errors import BackendUnavailableError, KernelMissingError
from ...compiler.plan import every_step
from ...ir import OPS
from .channel_stats import SIBLING_OPS
from .device import GPU_LOCK, get_context
from .epilogue import EPILOGUE_FACTORIES, EPILOGUE_KEEPING
from .kernel_builder import op_label
from .program import FUSIBLE_OPS
from .registry import KERNELS
from .runner import Runner
from .tensor_data import hold

__all__ = ["WebGPUBackend"]


class WebGPUBackend:
    """Runs plans with minigraph's WGSL kernels on a wgpu adapter (MPSGraph runs on Metal).

    ``metal_only=True`` is the ``"metal"`` backend: the same kernels, but only on a Metal
    adapter (macOS); elsewhere it is unavailable and says why.
    """

    fusible_ops = FUSIBLE_OPS  # the compiler fuses runs of these into one step (webgpu/fused.py)
    sibling_ops = SIBLING_OPS  # reduction pairs one kernel computes in one pass (webgpu/channel_stats.py)

    @property
    def epilogue_ops(self) -> frozenset:
        """The ops whose kernels apply a fused elementwise tail before they store (epilogue.py)."""
        return frozenset(EPILOGUE_FACTORIES)

    @property
    def epilogue_keeping_ops(self) -> frozenset:
        """The anchors whose epilogue kernels also store their own result, for its other readers."""
        return frozenset(EPILOGUE_KEEPING)

    def __init__(self, metal_only: bool = False):
        self.metal_only = metal_only
        self.name = "metal" if metal_only else "webgpu"
        self._status = None
        self._interrupted = False  # a probe was interrupted: a failure is no verdict
        self._ctx = None
        self._lock = threading.Lock()

    def available(self):
        """``(ok, reason)``, probed once. An interrupted probe (Ctrl-C while wgpu loads or the
        adapter is requested) is no verdict, and neither is a failure after one (the interruption
        may have left a module half imported): the next call probes again."""
        with self._lock:
            if self._status is not None:
                return self._status
            try:
                status = self._probe()
            except BaseException:  # KeyboardInterrupt, SystemExit: _probe turns every Exception into a reason
                self._interrupted = True
                raise
            if status[0] or not self._interrupted:
                self._status = status
            return status

    def _probe(self):
        if self.metal_only and sys.platform != "darwin":
            return False, (f"Metal needs macOS (this is {sys.platform}); the 'webgpu' backend runs the same "
                           "WGSL kernels through wgpu on Vulkan/D3D12 here")
        try:
            import wgpu  # noqa: F401
        except Exception as e:
            return False, (f"wgpu is not installed ({type(e).__name__}: {e}); "
                           "pip install wgpu (or, in a checkout, pip install -e '.[webgpu]')")
        try:
            self._ctx = get_context(self.metal_only)
        except Exception as e:
            msg = str(e)
            if self.metal_only and "Metal needs macOS" not in msg:
                msg = ("Metal needs macOS; the 'webgpu' backend runs the same kernels on Vulkan/D3D12/Metal "
                       f"through wgpu ({msg})")
            return False, msg
        return True, f"wgpu adapter {self._ctx.description}"

    @property
    def context(self):
        ok, why = self.available()
        if not ok:
            raise BackendUnavailableError(f"backend {self.name!r} is not available: {why}")
        return self._ctx

    def supported_ops(self) -> set:
        """Op types this backend has a kernel for (special ops included)."""
        return {d.type for d in OPS.values() if d.internal or d.kind == "view"} | set(KERNELS.ops())

    def tensor_data(self, array, dtype):
        """``array`` held in a device buffer of its own (``mg.TensorData``): runs copy it on the
        device instead of uploading it (tensor_data.py).

        Args:
            array: The value, a checked native-order ndarray.
            dtype: Its minigraph dtype.
        """
        return hold(self.context, array, dtype)

    def prepare(self, plan):
        ctx = self.context
        kernel_steps = [s for s in every_step(plan) if s.memory == "kernel"]  # the rest the runner does itself
        missing = sorted({s.op.type for s in kernel_steps if s.op.type not in self.supported_ops()})
        if missing:
            ops = [next(s.op for s in kernel_steps if s.op.type == t) for t in missing]
            raise KernelMissingError(f"{self.name} backend has no kernel for op type(s) {missing}: "
                                     + ", ".join(f"{op_label(o)} (built at {o.location})" for o in ops)
                                     + " (no silent fallback to numpy: run this graph with backend='numpy')")
        with GPU_LOCK:
            return Runner(plan, ctx, self.name)

