"""Command line: ``minigraph`` (or ``python -m minigraph``) ``{demo,backends,bench,show,profile,import,onnx-conformance}``.

argparse subcommands: ``--help`` on stdout for the program and for each command, ``--version``.
A usage error (an unknown option, a value out of range) prints one line on stderr and exits 2;
Ctrl-C prints one line and exits 130; neither prints a traceback.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import NoReturn, Optional, Sequence

from . import demo, onnx_conformance, onnx_import, sixblock
from .backends import available_backends, get_backend
from .backends.cpu.backend import thread_count as cpu_thread_count
from .backends.numpy import threads as numpy_threads
from .errors import BackendUnavailableError, MiniGraphError, UnknownBackendError
from .graph import load
from .listing import escape
from .profiling import CLOCKS
from .types import ShapedType
from .version import __version__

BENCH_NAMES = ("depthwise", "dw", "executor", "overhead", "compile", "gpu", "network", "step", "all")


def program_name() -> str:
    """``minigraph`` when run through the installed script, else ``python -m minigraph``."""
    base = os.path.basename(sys.argv[0] or "")
    return "minigraph" if base in ("minigraph", "minigraph.exe") else "python -m minigraph"


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error on one line: ``PROG: error: MESSAGE (PROG --help lists the options)``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def checkout_root() -> Optional[str]:
    """The source checkout this package runs from (the folder holding ``benchmarks/`` next to
    ``minigraph/``), or None for an installed package."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return root if os.path.isfile(os.path.join(root, "benchmarks", "__init__.py")) else None


def _bench(args: argparse.Namespace) -> int:
    root = checkout_root()
    if root is None:
        print("error: the benchmarks live in the source checkout (benchmarks/); run `bench` from a clone "
              "of the repository (pip install -e .)", file=sys.stderr)
        return 2
    env = dict(os.environ)  # the benchmarks run in a child interpreter that finds the checkout first
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    argv = ([args.name] if args.name else []) + list(args.options)
    return subprocess.run([sys.executable, "-m", "benchmarks", *argv], env=env).returncode


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
    p = _add_show_arguments(_Parser(prog=f"{program_name()} show", description=SHOW))
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    return _show(args)


def _import(args: argparse.Namespace) -> int:
    # names and messages from the file pass through escape: no escape sequence, no forged line
    for flag, out in (("--swift", args.swift), ("--render", args.render)):
        folder = os.path.dirname(os.path.abspath(out)) if out else ""
        if out and not os.path.isdir(folder):  # a usage error, found before the import
            COMMANDS["import"].error(f"argument {flag}: no folder {escape(repr(folder))} to write "
                                     f"{escape(repr(os.path.basename(out)))} into")
    try:
        imported = onnx_import.import_model(args.file)
        print(onnx_import.summary(args.file, imported))
        g = imported[0]
        if args.swift:
            with open(args.swift, "w", encoding="utf-8") as f:
                f.write(g.to_swift())
            print(f"wrote {escape(args.swift)}", file=sys.stderr)
        if args.render:
            fmt = os.path.splitext(args.render)[1].lstrip(".").lower() or "svg"
            g.render(args.render, format=fmt, collapse=True)
            print(f"wrote {escape(args.render)}", file=sys.stderr)
    except (MiniGraphError, OSError) as e:
        print(f"error: {escape(str(e))}", file=sys.stderr)  # one line
        return 1
    return 0


# ---------------------------------------------------------------------------------------------- profile
PROFILE = ("Profile one SGD training step of the six-block network (six depthwise-separable blocks, "
           "minigraph/sixblock.py): each op's median time, share, bytes moved and flops, sorted by time; "
           "--trace writes a Chrome trace-event JSON for Perfetto.")


def _add_profile_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--backend", default="numpy", help="numpy, cpu or webgpu (default numpy)")
    p.add_argument("--batch", type=demo.whole_number(1), help="images per step (default 32; 2 with --tiny)")
    p.add_argument("--size", type=demo.whole_number(1), help="image height and width (default 56; 16 with --tiny)")
    p.add_argument("--repeats", type=demo.whole_number(1), default=10,
                   help="timed steps; each op's time is its median (default 10)")
    p.add_argument("--threads", type=demo.whole_number(1), help="the numpy and cpu backends' threads (mg.set_num_threads; default: the "
                   "usable cores or MINIGRAPH_NUM_THREADS)")
    p.add_argument("--clock", choices=CLOCKS, help="gpu-timestamps or host (default: the best the backend has)")
    p.add_argument("--top", type=demo.whole_number(1), help="show only the N slowest ops")
    p.add_argument("--by-type", action="store_true", help="also print the time summed per op type")
    p.add_argument("--trace", metavar="PATH", help="write a Chrome trace-event JSON (open it in ui.perfetto.dev)")
    p.add_argument("--tiny", action="store_true", help="channels / 8, N=2, 16x16: checks the pipeline only")
    return p


def _threads_note(backend: str) -> str:
    """``", 4 numpy threads"``: the threads a host backend runs on; nothing for a GPU backend."""
    if backend == "numpy":
        return f", {numpy_threads.get_num_threads()} numpy threads"
    if backend == "cpu":
        return f", {cpu_thread_count()} cpu threads"
    return ""


def _profile(args: argparse.Namespace) -> int:
    """``profile``: build, compile and profile the six-block network's step; print the table."""
    usage = COMMANDS["profile"]
    try:
        get_backend(args.backend)
    except (UnknownBackendError, BackendUnavailableError) as e:
        usage.error(f"argument --backend: {e}")
    if args.trace:
        folder = os.path.dirname(os.path.abspath(args.trace))
        if not os.path.isdir(folder):
            usage.error(f"argument --trace: no folder {folder!r} to write {os.path.basename(args.trace)!r} into")
    batch = args.batch or (2 if args.tiny else 32)
    size = args.size or (16 if args.tiny else 56)
    width = 0.125 if args.tiny else 1.0
    try:
        if args.threads is not None:
            numpy_threads.set_num_threads(args.threads)
        x, labels = sixblock.data(batch, size, width)
        g, feeds, loss, steps = sixblock.build(x, labels, width)
        exe = g.compile({t: ShapedType(a.shape, a.dtype) for t, a in feeds.items()}, [loss], target_operations=steps,
                        backend=args.backend)
        prof = exe.profile(feeds, repeats=args.repeats, clock=args.clock)
    except (MiniGraphError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"six-block network, one SGD training step: N={batch}, {size}x{size}"
          + (", channels / 8" if args.tiny else "") + _threads_note(args.backend))
    print(prof.table(top=args.top))
    if args.by_type:
        print()
        print(prof.type_table())
    if args.trace:
        try:
            prof.save_trace(args.trace)
        except OSError as e:
            print(f"error: cannot write the trace: {e}", file=sys.stderr)
            return 1
        print(f"wrote {args.trace} (open it in https://ui.perfetto.dev)", file=sys.stderr)
    return 0


def _onnx_conformance(args: argparse.Namespace) -> int:
    try:
        cases = onnx_conformance.load_cases()
    except ImportError:
        print("error: onnx-conformance needs the 'onnx' package: pip install onnx", file=sys.stderr)
        return 2
    if args.backend not in available_backends():
        print(f"error: backend {escape(repr(args.backend))} is not available here (available: "
              f"{', '.join(available_backends())})", file=sys.stderr)
        return 2
    if args.match:
        cases = [c for c in cases if args.match in c.name or args.match == c.op]
    results = onnx_conformance.run_all(cases, args.backend)
    print(onnx_conformance.report(results, args.verbose))
    if args.expected:
        numpy_results = results if args.backend == "numpy" else onnx_conformance.run_all(cases, "numpy")
        gpu = onnx_conformance.run_all(cases, "webgpu") if "webgpu" in available_backends() else None
        try:
            with open(args.expected, "w") as f:
                f.write(onnx_conformance.dump_expected(onnx_conformance.expected_table(numpy_results, gpu)))
        except OSError as e:
            print(f"error: cannot write {escape(repr(args.expected))}: {e}", file=sys.stderr)
            return 1
    if args.json:
        import json
        try:
            with open(args.json, "w") as f:
                json.dump({r.name: [r.op, r.status, r.reason] for r in results}, f, indent=1, sort_keys=True)
        except OSError as e:
            print(f"error: cannot write {escape(repr(args.json))}: {e}", file=sys.stderr)
            return 1
    return 1 if any(r.status in ("wrong", "crash") for r in results) else 0


IMPORT = ("Import an ONNX model (mg.from_onnx) and print it one ONNX node per line, with the ops each became, "
          "the depthwise convolutions and the gradient ops training would insert.")
CONFORMANCE = ("Run the ONNX backend node tests shipped with the installed onnx package through mg.from_onnx on a "
               "backend and print, per ONNX operator, how many cases pass, are skipped (an operator, attribute or "
               "dtype minigraph refuses, with its reason under --verbose), give wrong results or crash.")
SHOW = "Print the listing of a graph saved with g.save(), or draw it."
BENCH = ("Benchmarks against PyTorch, JAX and MLX (from a source checkout). NAME is one of: depthwise (dw): the "
         "depthwise weights gradient on MobileNet layers, NumPy backend vs PyTorch / JAX / MLX; executor (overhead): "
         "microseconds per node of a 1,000-node chain; compile: compile time and peak memory of 1k-100k-node "
         "graphs; gpu: the webgpu backend on a GPU; network (step): a whole training step vs PyTorch and JAX; all: "
         "depthwise, executor and compile. Options after NAME go to "
         "that benchmark (`bench NAME --help` lists them; each takes --json PATH and --tiny).")


def parser() -> argparse.ArgumentParser:
    prog = program_name()
    p = _Parser(prog=prog, description="minigraph: build, compile and run graphs with the semantics "
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
                        description=PROFILE)
    _add_profile_arguments(pr).set_defaults(func=_profile)
    im = sub.add_parser("import", help="list an ONNX model as minigraph imports it; --swift / --render write it",
                        description=IMPORT)
    im.add_argument("file", help="the .onnx file")
    im.add_argument("--swift", metavar="OUT", help="write the MPSGraph Swift code that builds the model")
    im.add_argument("--render", metavar="OUT", help="draw the graph (format from the extension: svg, png, pdf)")
    im.set_defaults(func=_import)
    oc = sub.add_parser("onnx-conformance", help="run the ONNX backend node tests: counts per operator",
                        description=CONFORMANCE)
    oc.add_argument("--backend", default="numpy", help="the backend to run the cases on (default numpy)")
    oc.add_argument("-k", metavar="TEXT", dest="match", help="only the cases whose name contains TEXT or whose operator is TEXT")
    oc.add_argument("--verbose", "-v", action="store_true", help="list every case that does not pass, with why")
    oc.add_argument("--json", metavar="OUT", help="write {case: [operator, status, reason]} to OUT")
    oc.add_argument("--expected", metavar="OUT", help="run on numpy and webgpu and write the expected statuses "
                    "(the tests' tests/golden/onnx_node_expected.json) to OUT")
    oc.set_defaults(func=_onnx_conformance)
    COMMANDS.update(demo=d, backends=b, bench=be, show=s, profile=pr, **{"import": im, "onnx-conformance": oc})
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
    try:
        return int(args.func(args))
    except SystemExit as e:  # a usage error found while running (a backend that is not there)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    except KeyboardInterrupt:
        print(f"{program_name()} {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`... | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141


if __name__ == "__main__":
    sys.exit(main())
