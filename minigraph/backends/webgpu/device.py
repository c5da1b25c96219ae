"""Adapter and device selection, raised limits, and the pipeline cache (one per device).

Every GPU call of the process goes through ``GPU_LOCK``: wgpu objects are shared by all
executables and runs may come from several threads.
"""
from __future__ import annotations

import threading
from typing import Optional

from ...errors import ExecutionError

GPU_LOCK = threading.RLock()

# limits we raise to what the adapter allows (large tensors, big workgroup arrays)
_RAISED_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroup-storage-size",
                  "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x",
                  "max-compute-workgroup-size-y", "max-compute-workgroups-per-dimension",
                  "max-storage-buffers-per-shader-stage", "max-uniform-buffer-binding-size")
_OPTIONAL_FEATURES = ("shader-f16", "timestamp-query")

_KIND_TO_BINDING = {"ro": "read-only-storage", "rw": "storage", "u": "uniform"}


def _backend_type(adapter) -> str:
    return str(dict(adapter.info).get("backend_type", ""))


def _quiet_wsi() -> None:
    """Mesa's window-system layer complains on stderr when XDG_RUNTIME_DIR is unset (headless
    machines, CI); compute needs no window, so point it at a private temporary directory."""
    import os
    import sys
    import tempfile

    if sys.platform.startswith("linux") and not os.environ.get("XDG_RUNTIME_DIR"):
        d = os.path.join(tempfile.gettempdir(), f"minigraph-runtime-{os.getuid()}")
        os.makedirs(d, mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = d


def find_adapter(metal_only: bool):
    """The adapter to use, or raise RuntimeError saying why there is none.

    ``metal_only`` picks a Metal adapter (macOS) and refuses every other one.
    """
    _quiet_wsi()
    import wgpu

    if metal_only:
        try:
            adapters = wgpu.gpu.enumerate_adapters_sync()
        except Exception as e:  # pragma: no cover - depends on the platform
            raise RuntimeError(f"wgpu could not enumerate adapters: {e}") from None
        metal = [a for a in adapters if _backend_type(a).lower() == "metal"]
        if not metal:
            found = ", ".join(f"{dict(a.info).get('device', '?')} ({_backend_type(a)})" for a in adapters) or "none"
            raise RuntimeError("Metal needs macOS; the 'webgpu' backend runs the same kernels on "
                               f"Vulkan/D3D12/Metal through wgpu (adapters here: {found})")
        return metal[0]
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        raise RuntimeError("wgpu found no adapter (on Linux install Mesa's lavapipe: "
                           "apt-get install mesa-vulkan-drivers; check VK_ICD_FILENAMES)")
    return adapter


# wgpu's adapter_type values, in the words a reader of timings needs
ADAPTER_TYPES = {"cpu": "CPU software renderer", "integratedgpu": "integrated GPU", "discretegpu": "discrete GPU",
                 "virtualgpu": "virtual GPU", "unknown": "unknown adapter type"}


def describe_adapter(info: dict) -> str:
    """``"llvmpipe (LLVM 15.0.6, 256 bits): CPU software renderer, Vulkan backend (driver Mesa 22.3.6 (LLVM 15.0.6))"``:
    the adapter's name, its type and the graphics API wgpu drives it through."""
    raw = str(info.get("adapter_type", "") or "unknown")
    kind = ADAPTER_TYPES.get(raw.replace("-", "").replace("_", "").replace(" ", "").lower(), raw)
    name = info.get("device") or info.get("description") or "unnamed adapter"
    api = info.get("backend_type") or "unknown"
    driver = info.get("description")
    return f"{name}: {kind}, {api} backend" + (f" (driver {driver})" if driver and driver != name else "")


class GPUContext:
    """One wgpu device with its features, limits and caches of pipelines and layouts."""

    def __init__(self, adapter):
        self.adapter = adapter
        self.info = dict(adapter.info)
        have = set(adapter.features)
        features = [f for f in _OPTIONAL_FEATURES if f in have]
        alim = adapter.limits
        limits = {k: alim[k] for k in _RAISED_LIMITS if k in alim}
        self.device = adapter.request_device_sync(required_features=features, required_limits=limits,
                                                  label="minigraph")
        self.features = set(self.device.features)
        self.limits = dict(self.device.limits)
        self.has_f16 = "shader-f16" in self.features
        self.has_timestamps = "timestamp-query" in self.features
        self.max_binding = int(self.limits.get("max-storage-buffer-binding-size", 1 << 27))
        self.max_buffer = int(self.limits.get("max-buffer-size", 1 << 28))
        self.max_groups = int(self.limits.get("max-compute-workgroups-per-dimension", 65535))
        self.max_wg_storage = int(self.limits.get("max-compute-workgroup-storage-size", 16384))
        self._pipelines: dict = {}
        self._layouts: dict = {}
        self.compiled = 0  # how many pipelines were built (tests check the cache works)

    @property
    def description(self) -> str:
        """The adapter in words: its name, kind and graphics API (timings mean little without them)."""
        return describe_adapter(self.info)

    def layout(self, kinds: tuple):
        """(bind group layout, pipeline layout) for bindings of ``kinds`` ("ro", "rw", "u")."""
        got = self._layouts.get(kinds)
        if got is None:
            import wgpu

            entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": _KIND_TO_BINDING[k]}} for i, k in enumerate(kinds)]
            bgl = self.device.create_bind_group_layout(entries=entries)
            got = (bgl, self.device.create_pipeline_layout(bind_group_layouts=[bgl]))
            self._layouts[kinds] = got
        return got

    def pipeline(self, source: str, kinds: tuple, label: str = ""):
        """The compute pipeline for a WGSL source (entry point ``main``), built once per device."""
        key = (source, kinds)
        pipe = self._pipelines.get(key)
        if pipe is None:
            _, layout = self.layout(kinds)
            try:
                module = self.device.create_shader_module(code=source, label=label)
                pipe = self.device.create_compute_pipeline(layout=layout, compute={"module": module,
                                                                                    "entry_point": "main"},
                                                           label=label)
            except Exception as e:  # a WGSL bug of ours: say which kernel
                raise ExecutionError(f"{label}: the webgpu backend could not compile its WGSL kernel: "
                                     f"{type(e).__name__}: {e}") from None
            self._pipelines[key] = pipe
            self.compiled += 1
        return pipe

    def grid(self, groups: int) -> tuple:
        """A 2D workgroup grid covering ``groups`` workgroups (kernels linearise wid.y * nwg.x + wid.x)."""
        if groups <= self.max_groups:
            return (max(groups, 1), 1, 1)
        gy = -(-groups // self.max_groups)
        gx = -(-groups // gy)
        return (gx, gy, 1)


_CONTEXTS: dict = {}


def get_context(metal_only: bool = False) -> GPUContext:
    """The process-wide context for the default (or the Metal) adapter, created once."""
    with GPU_LOCK:
        ctx: Optional[GPUContext] = _CONTEXTS.get(metal_only)
        if ctx is None:
            ctx = GPUContext(find_adapter(metal_only))
            _CONTEXTS[metal_only] = ctx
        return ctx
