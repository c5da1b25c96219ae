"""Command line: ``python -m minigraph {demo,backends,bench,show}``."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from .backends import available_backends
from .demo import main as demo_main
from .errors import MiniGraphError
from .graph import load


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
    avail = available_backends()
    for name in avail:
        print(f"{name:8s} available")
    for name, why in avail.unavailable.items():
        print(f"{name:8s} unavailable: {why}")
    return 0


def show_main(argv) -> int:
    """``python -m minigraph show FILE [--png OUT] [--svg OUT] [--dot] [--mermaid] [--swift]``."""
    argv = list(argv)
    if argv and argv[0] == "show":
        argv = argv[1:]
    p = argparse.ArgumentParser(prog="python -m minigraph show",
                                description="Print the listing of a graph saved with g.save(), or draw it.")
    p.add_argument("file", help="the .json file written by g.save(path)")
    p.add_argument("--png", metavar="OUT", help="render a PNG with Graphviz")
    p.add_argument("--svg", metavar="OUT", help="render an SVG with Graphviz")
    p.add_argument("--dot", action="store_true", help="print Graphviz DOT text instead of the listing")
    p.add_argument("--mermaid", action="store_true", help="print Mermaid text instead of the listing")
    p.add_argument("--swift", action="store_true", help="print Swift (MPSGraph) source instead of the listing")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        g = load(args.file)
        if args.dot:
            sys.stdout.write(g.to_dot())
        elif args.mermaid:
            sys.stdout.write(g.to_mermaid())
        elif args.swift:
            sys.stdout.write(g.to_swift())
        else:
            print(g)
        for fmt, out in (("png", args.png), ("svg", args.svg)):
            if out:
                g.render(out, format=fmt)
                print(f"wrote {out}", file=sys.stderr)
    except MiniGraphError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands: dict[str, Callable[[list], int]] = {"demo": demo_main, "backends": _backends, "bench": _bench,
                                                  "show": show_main}
    if not argv or argv[0] not in commands:
        print("usage: python -m minigraph {demo,backends,bench,show} [options]\n"
              "  demo      train a depthwise-separable CNN and check its gradients (--backend, --steps, --seed, --quiet)\n"
              "  backends  list the backends that work on this machine, and why others do not\n"
              "  bench     run the benchmarks (from a source checkout)\n"
              "  show      print or render a saved graph: show FILE [--png out.png]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
