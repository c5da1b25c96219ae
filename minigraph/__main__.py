"""Command line: ``python -m minigraph {demo,backends,bench,show}``."""
from __future__ import annotations

import os
import sys


def _bench(argv) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, "benchmarks")):
        print("error: the benchmarks live in the source checkout (benchmarks/); run this from a clone "
              "of the repository (pip install -e .)", file=sys.stderr)
        return 2
    sys.path.insert(0, root)
    import benchmarks

    return benchmarks.main(argv)


def _backends(argv) -> int:
    import minigraph as mg

    avail = mg.available_backends()
    for name in avail:
        print(f"{name:8s} available")
    for name, why in avail.unavailable.items():
        print(f"{name:8s} unavailable: {why}")
    return 0


def _show(argv) -> int:
    from .visualize import show_main

    return show_main(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"demo": None, "backends": _backends, "bench": _bench, "show": _show}
    if not argv or argv[0] not in commands:
        print("usage: python -m minigraph {demo,backends,bench,show} [options]\n"
              "  demo      train a depthwise-separable CNN and check its gradients (--backend, --steps, --seed, --quiet)\n"
              "  backends  list the backends that work on this machine, and why others do not\n"
              "  bench     run the benchmarks (from a source checkout)\n"
              "  show      print or render a saved graph: show FILE [--png out.png]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "demo":
        from .demo import main as demo_main

        return demo_main(rest)
    return commands[cmd](rest)


if __name__ == "__main__":
    sys.exit(main())
