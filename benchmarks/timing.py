"""Timing helpers shared by the benchmarks: interleaved repeats, robust statistics, machine facts.

The machine these run on is small and often shared, so every contender is timed in the same
rounds (A B C, A B C, ...) rather than one after another: a burst of outside load then hits
all of them alike. We report the median (robust to outliers) and the minimum (the least
disturbed run); ratios use the median unless the caller asks otherwise.
"""
from __future__ import annotations

import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional


def time_interleaved(fns: Dict[str, Callable[[], object]], repeats: int = 7, warmup: int = 2,
                     budget_s: Optional[float] = None) -> Dict[str, List[float]]:
    """Seconds per call of each function, measured in interleaved rounds after ``warmup`` calls.

    ``budget_s`` caps a slow contender: it gets ``max(3, budget_s / first_call)`` repeats (at
    most ``repeats``), so one 1000x-slower peer does not take the whole run.
    """
    first = {}
    for name, f in fns.items():
        t0 = time.perf_counter()
        f()
        first[name] = time.perf_counter() - t0
        for _ in range(max(0, warmup - 1)):
            f()
    reps = {}
    for name in fns:
        r = repeats
        if budget_s is not None and first[name] > 0:
            r = min(repeats, max(3, int(budget_s / first[name])))
        reps[name] = r
    times: Dict[str, List[float]] = {k: [] for k in fns}
    was = gc.isenabled()
    gc.disable()
    try:
        for i in range(max(reps.values(), default=0)):
            for name, f in fns.items():
                if i >= reps[name]:
                    continue
                t0 = time.perf_counter()
                f()
                times[name].append(time.perf_counter() - t0)
    finally:
        if was:
            gc.enable()
    return times


def stats(ts: List[float]) -> dict:
    """Median and minimum in milliseconds."""
    return {"median_ms": statistics.median(ts) * 1e3, "min_ms": min(ts) * 1e3, "repeats": len(ts)}


def geomean(xs) -> float:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover
        return max(1, os.cpu_count() or 1)


def _lscpu() -> dict:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5).stdout
    except Exception:
        return {}
    keep = ("Model name", "CPU(s)", "Thread(s) per core", "L1d cache", "L2 cache", "L3 cache", "Flags")
    info = {}
    for line in out.splitlines():
        k, _, v = line.partition(":")
        k = k.strip()
        if k in keep:
            v = v.strip()
            if k == "Flags":  # just the SIMD level
                flags = set(v.split())
                v = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_bf16") if f in flags)
            info[k] = v
    return info


def _version(mod: str) -> Optional[str]:
    import importlib

    try:
        m = importlib.import_module(mod)
        return getattr(m, "__version__", "?")
    except Exception:
        return None


def machine_info() -> dict:
    """What the numbers were measured on (goes into every JSON file)."""
    import numpy as np

    info = {"python": sys.version.split()[0], "platform": platform.platform(), "cores": cpu_count(),
            "lscpu": _lscpu(), "numpy": np.__version__}
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        info["blas"] = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # pragma: no cover - older NumPy
        info["blas"] = "?"
    for mod in ("torch", "jax", "mlx.core"):
        v = _version(mod)
        if v is not None:
            info[mod.split(".")[0]] = v
    try:
        info["load_average"] = os.getloadavg()
    except OSError:  # pragma: no cover
        pass
    return info


def write_json(path: str, payload: dict) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f, indent=1, default=str)
        f.write("\n")


def format_table(headers: List[str], rows: List[List[object]]) -> str:
    """A plain, aligned text table (numbers right-aligned)."""
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in cells:
        out.append("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    return "\n".join(out)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "-"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.2f}" if abs(v) >= 0.1 else f"{v:.3f}"
    return str(v)
