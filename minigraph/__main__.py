"""Command line: ``minigraph`` (or ``python -m minigraph``) ``{demo,backends,bench,show,profile,import}``.

argparse subcommands: ``--help`` on stdout for the program and for each command, ``--version``.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from . import demo, onnx_import, profiling
from .backends import available_backends
from .errors import MiniGraphError
from .graph import load
from .version import __version__

BENCH_NAMES = ("depthwise", "dw", "executor", "overhead", "compile", "gpu", "network", "step", "all")


def program_name() -> str:
    """``minigraph`` when run through the installed script, else ``python -m minigraph``."""
    base = os.path.basename(sys.argv[0] or "")
    return "minigraph" if base in ("minigraph", "minigraph.exe") else "python -m minigraph"


def _bench(args: argparse.Namespace) -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, "benchmarks")):
        print("error: the benchmarks live in the source checkout (benchmarks/); run this from a clone "
              "of the repository (pip install -e .)", file=sys.stderr)
        return 2
    sys.path.insert(0, root)
    import benchmarks

    return benchmarks.main(([args.name] if args.name else []) + list(args.options))


def _backends(args: argparse.Namespace) -> int:
    avail = available_backends()
    for name in avail:
        detail = avail.details.get(name, "")
        print(f"{name:8s} available" + (f": {detail}" if detail and "available" not in detail else ""))
    for name, why in avail.unavailable.items():
        print(f"{name:8s} unavailable: {why}")
    return 0


def _add_show_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("file", help="the .json file written by g.save(path)")
    p.add_argument("--png", metavar="OUT", help="render a PNG with Graphviz")
    p.add_argument("--svg", metavar="OUT", help="render an SVG with Graphviz")
    p.add_argument("--expand", action="store_true",
                   help="draw every op: by default a picture shows each gradient and optimizer scope as one node")
    p.add_argument("--collapse", metavar="SCOPE", action="append",
                   help="draw this name scope as one node (repeatable; replaces the default choice)")
    p.add_argument("--dot", action="store_true", help="print Graphviz DOT text instead of the listing (every op)")
    p.add_argument("--mermaid", action="store_true", help="print Mermaid text instead of the listing")
    p.add_argument("--swift", action="store_true", help="print Swift (MPSGraph) source instead of the listing")
    return p


def _show(args: argparse.Namespace) -> int:
    try:
        g = load(args.file)
        if args.dot:
            sys.stdout.write(g.to_dot(collapse=args.collapse or False))
        elif args.mermaid:
            sys.stdout.write(g.to_mermaid())
        elif args.swift:
            sys.stdout.write(g.to_swift())
        else:
            print(g)
        collapse = args.collapse or (not args.expand)
        for fmt, out in (("png", args.png), ("svg", args.svg)):
            if out:
                g.render(out, format=fmt, collapse=collapse)
                print(f"wrote {out}", file=sys.stderr)
    except (MiniGraphError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def show_main(argv: Sequence[str]) -> int:
    """``show FILE [--png OUT] [--svg OUT] [--expand] [--dot] [--mermaid] [--swift]``; returns the exit code."""
    argv = list(argv)
    if argv and argv[0] == "show":
        argv = argv[1:]
    p = _add_show_arguments(argparse.ArgumentParser(prog=f"{program_name()} show", description=SHOW))
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    return _show(args)


def _import(args: argparse.Namespace) -> int:
    try:
        imported = onnx_import.import_model(args.file)
        print(onnx_import.summary(args.file, imported))
        g = imported[0]
        if args.swift:
            with open(args.swift, "w", encoding="utf-8") as f:
                f.write(g.to_swift())
            print(f"wrote {args.swift}", file=sys.stderr)
        if args.render:
            fmt = os.path.splitext(args.render)[1].lstrip(".").lower() or "svg"
            g.render(args.render, format=fmt, collapse=True)
            print(f"wrote {args.render}", file=sys.stderr)
    except (MiniGraphError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


IMPORT = ("Import an ONNX model (mg.from_onnx) and print it one ONNX node per line, with the ops each became, "
          "the depthwise convolutions and the gradient ops training would insert.")
SHOW = "Print the listing of a graph saved with g.save(), or draw it."
BENCH = ("Benchmarks against PyTorch, JAX and MLX (from a source checkout). NAME is one of: depthwise (dw): the "
         "depthwise weights gradient on MobileNet layers, NumPy backend vs PyTorch / JAX / MLX; executor (overhead): "
         "microseconds per node of a 1,000-node chain; compile: compile time and peak memory of 1k-100k-node "
         "graphs; gpu: the webgpu backend on a GPU; network (step): a whole training step vs PyTorch and JAX; all: "
         "depthwise, executor and compile. Options after NAME go to "
         "that benchmark (`bench NAME --help` lists them; each takes --json PATH and --tiny).")


def parser() -> argparse.ArgumentParser:
    prog = program_name()
    p = argparse.ArgumentParser(prog=prog, description="minigraph: build, compile and run graphs with the semantics "
                                "of Apple's MPSGraph, on any machine.",
                                epilog=f"`{prog} COMMAND --help` describes a command.")
    p.add_argument("--version", action="version", version=f"minigraph {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    d = sub.add_parser("demo", help="train a small depthwise-separable CNN and check its gradients",
                       description=demo.__doc__.splitlines()[0].split(": ", 1)[1])
    demo.add_arguments(d).set_defaults(func=demo.run)
    b = sub.add_parser("backends", help="list the backends that work here (and the GPU adapter), and why others do not",
                       description="List the backends that work on this machine, with the GPU adapter the webgpu "
                                   "backend uses (name, type, graphics API), and why the others do not work.")
    b.set_defaults(func=_backends)
    be = sub.add_parser("bench", help="run the benchmarks (from a source checkout)", description=BENCH)
    be.add_argument("name", nargs="?", choices=BENCH_NAMES, metavar="NAME", help="the benchmark (default depthwise)")
    be.add_argument("options", nargs=argparse.REMAINDER, help="options for the benchmark")
    be.set_defaults(func=_bench)
    s = sub.add_parser("show", help="print or draw a saved graph: show FILE [--png out.png]", description=SHOW)
    _add_show_arguments(s).set_defaults(func=_show)
    pr = sub.add_parser("profile", help="time each op of a training step of the benchmark network (a table, a trace)",
                        description=profiling.PROFILE)
    profiling.add_arguments(pr).set_defaults(func=profiling.run_command)
    im = sub.add_parser("import", help="list an ONNX model as minigraph imports it; --swift / --render write it",
                        description=IMPORT)
    im.add_argument("file", help="the .onnx file")
    im.add_argument("--swift", metavar="OUT", help="write the MPSGraph Swift code that builds the model")
    im.add_argument("--render", metavar="OUT", help="draw the graph (format from the extension: svg, png, pdf)")
    im.set_defaults(func=_import)
    COMMANDS.update(demo=d, backends=b, bench=be, show=s, profile=pr, **{"import": im})
    return p


COMMANDS: dict = {}  # command name -> its parser (for its own usage line in errors)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    p = parser()
    try:
        args, extra = p.parse_known_args(list(sys.argv[1:] if argv is None else argv))
        if extra and getattr(args, "command", None) != "bench":  # bench passes options on: `bench --tiny`
            sub = COMMANDS.get(args.command or "", p)
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
        elif extra:
            args.options = extra + list(args.options)
    except SystemExit as e:  # --help, --version (0) and usage errors (2)
        return int(e.code or 0)
    if args.command is None:
        p.print_help()
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
