"""minigraph's benchmarks, side by side with the peers a user would pick instead.

``python -m minigraph bench [NAME] [options]`` calls :func:`main`; each benchmark also runs as a
script (``python benchmarks/NAME.py``). Every benchmark prints a table, writes JSON with
``--json PATH`` and has a ``--tiny`` mode that only checks the pipeline (used by the tests).

========================  =====================================================================
name (aliases)            what it measures
========================  =====================================================================
``depthwise`` (dw)        depthwise weights gradient (+ forward, data gradient) on MobileNet
                          layers, NumPy backend vs PyTorch / JAX / MLX on the CPU
``executor`` (overhead)   µs per node of a 1,000-node elementwise chain: executor vs raw NumPy
                          vs PyTorch eager
``compile``               compile time for 1k/10k/100k-node graphs; peak memory of a
                          forward+backward run vs the plan's largest live set
``gpu``                   the webgpu backend on a GPU (``benchmarks/gpu_depthwise.py``)
``network`` (step)        a whole training step (six depthwise-separable blocks; MobileNetV2)
                          vs PyTorch and JAX, optionally at several thread counts
``all``                   depthwise, executor and compile, one after another
========================  =====================================================================
"""
from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "depthwise": "depthwise_cpu",
    "executor": "executor_overhead",
    "compile": "compile_time",
    "gpu": "gpu_depthwise",
    "network": "network_step",
}
ALIASES = {"dw": "depthwise", "depthwise_cpu": "depthwise", "overhead": "executor",
           "executor_overhead": "executor", "compile_time": "compile", "gpu_depthwise": "gpu",
           "step": "network", "network_step": "network"}


def _usage() -> str:
    names = ", ".join(BENCHMARKS)
    return (f"usage: python -m minigraph bench [{names}|all] [--json PATH] [--tiny] [options]\n"
            "  (default: depthwise). 'python -m minigraph bench NAME --help' lists a benchmark's options.")


def main(argv=None) -> int:
    """Dispatch ``bench [NAME] [options]``; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(_usage())
        print(__doc__)
        return 0
    name = "depthwise"
    if argv and not argv[0].startswith("-"):
        name = ALIASES.get(argv[0], argv[0])
        argv = argv[1:]
    if name == "all":
        code = 0
        json_path = None
        if "--json" in argv:  # one file per benchmark: PATH -> PATH with the name inserted
            i = argv.index("--json")
            json_path = argv[i + 1] if i + 1 < len(argv) else None
        for sub in ("depthwise", "executor", "compile"):
            args = list(argv)
            if json_path:
                i = args.index("--json")
                stem, dot, ext = json_path.rpartition(".")
                args[i + 1] = f"{stem}_{sub}.{ext}" if dot else f"{json_path}_{sub}"
            code = code or _run(sub, args)
        return code
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}\n{_usage()}", file=sys.stderr)
        return 2
    return _run(name, argv)


def _run(name: str, argv) -> int:
    try:
        mod = importlib.import_module(f"{__name__}.{BENCHMARKS[name]}")
    except ImportError as e:
        print(f"benchmark {name!r} is not available here: {e}", file=sys.stderr)
        return 2
    rc = mod.main(argv)  # some benchmarks return their result dict
    return rc if isinstance(rc, int) else 0
