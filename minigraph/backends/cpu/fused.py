"""Elementwise programs (a fused step's ``program``, an epilogue's tail, or one elementwise op) as
one compiled loop over the output's elements.

The program is written out as Python source, one line per op, and compiled by Numba like the
hand-written kernels. The source goes to a file of the kernel cache (named by its hash) and is
imported from there, so Numba's on-disk cache holds its machine code as well: a later process
compiles nothing. Every element is computed alone, in the program's order and in each op's
dtype, so the result does not depend on the thread count, and the expressions below are the
NumPy kernels' own IEEE operations (the same bits as the NumPy backend).

An input either has the output's shape or one element (a scalar, loaded once); any other
broadcast, float16, or an op without an expression here leaves the step to the NumPy kernel.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from math import prod
from typing import Callable, Optional, Sequence

import numpy as np

from ...types import ShapedType

# below this many output elements the serial loop runs (a parallel launch costs ~10 us)
PARALLEL_ELEMENTS = 1 << 15
CACHE_ENV = "MINIGRAPH_CPU_CACHE_DIR"

_FLOAT = frozenset("f")
_NUMBER = frozenset("fiu")
_ANY = frozenset("fiub")

# op type -> (expression over {0}, {1}, ...; the dtype kinds its inputs may have; result kind rule)
# "same": every input has the result's dtype; "compare": the inputs share a dtype, the result is bool;
# "select": the branches have the result's dtype, the predicate any.
_OPS = {
    "addition": ("{0} + {1}", _NUMBER, "same"),
    "subtraction": ("{0} - {1}", _NUMBER, "same"),
    "multiplication": ("{0} * {1}", _NUMBER, "same"),
    "division": ("{0} / {1}", _FLOAT, "same"),
    "negative": ("-{0}", frozenset("fi"), "same"),
    "absolute": ("abs({0})", frozenset("fi"), "same"),
    "square": ("{0} * {0}", _NUMBER, "same"),
    "square_root": ("np.sqrt({0})", _FLOAT, "same"),
    "relu": ("{0} if {0} > {z} else {z}", _NUMBER, "same"),  # NaN and -0 give +0, as fmax(x, 0) + 0
    "greater_than": ("{0} > {1}", _NUMBER, "compare"),
    "greater_than_or_equal_to": ("{0} >= {1}", _NUMBER, "compare"),
    "less_than": ("{0} < {1}", _NUMBER, "compare"),
    "less_than_or_equal_to": ("{0} <= {1}", _NUMBER, "compare"),
    "equal": ("{0} == {1}", _NUMBER, "compare"),
    "not_equal": ("{0} != {1}", _NUMBER, "compare"),
    "select": ("{1} if {0} else {2}", _ANY, "select"),
    "relu_gradient": ("{0} if {1} > {z} else {z}", _FLOAT, "same"),  # dy where source > 0 (NaN, -0: 0)
}
SUPPORTED_OPS = frozenset(_OPS)


def _dtype(ty: ShapedType) -> np.dtype:
    return np.dtype(ty.dtype.np_dtype)


def _numba_name(dt: np.dtype) -> str:
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


def _supported(op_type: str, arg_dts: Sequence[np.dtype], out_dt: np.dtype) -> bool:
    entry = _OPS.get(op_type)
    if entry is None or out_dt == np.float16 or any(d == np.float16 for d in arg_dts):
        return False
    _, kinds, rule = entry
    if rule == "same":
        return out_dt.kind in kinds and all(d == out_dt for d in arg_dts)
    if rule == "compare":
        return out_dt == np.bool_ and arg_dts[0].kind in kinds and all(d == arg_dts[0] for d in arg_dts)
    return out_dt.kind in kinds and arg_dts[1] == out_dt and arg_dts[2] == out_dt and arg_dts[0].kind in _ANY


def source(kinds: Sequence[str], in_dts: Sequence[np.dtype], program: Sequence[tuple]) -> Optional[str]:
    """The module source of a program (``kinds[k]``: ``"full"`` or ``"scalar"`` per input; the
    kernels take the inputs the program reads, in order), or None when an op has no expression
    for its dtypes."""
    n = len(kinds)
    dts = list(in_dts)
    pre: list = []
    body: list = []
    used = {a for _, args, _ in program for a in args}
    for k in range(n):
        if k not in used:
            continue
        (pre if kinds[k] == "scalar" else body).append(f"a{k} = v{k}[{0 if kinds[k] == 'scalar' else 'i'}]")
    for j, (op, args, ty) in enumerate(program):
        out_dt = _dtype(ty)
        if not _supported(op.type, [dts[a] for a in args], out_dt):
            return None
        expr, _, _ = _OPS[op.type]
        z = f"z{j}"
        if "{z}" in expr:
            pre.append(f"{z} = {_numba_name(out_dt)}(0)")
        body.append(f"a{n + j} = {_numba_name(out_dt)}({expr.format(*[f'a{a}' for a in args], z=z)})")
        dts.append(out_dt)
    body.append(f"out[i] = a{n + len(program) - 1}")
    params = ", ".join(["out"] + [f"v{k}" for k in range(n) if k in used])
    lines = ['"""A fused elementwise program of the cpu backend (generated; see minigraph/backends/cpu/fused.py)."""',
             "import numpy as np", "", "from minigraph.backends.cpu.jit import kernel, parallel_kernel, prange", ""]
    for name, deco, loop in (("parallel", "parallel_kernel", "prange"), ("serial", "kernel", "range")):
        lines += ["", f"@{deco}", f"def {name}({params}):"]
        lines += [f"    {s}" for s in pre]
        lines += [f"    for i in {loop}(out.shape[0]):"] + [f"        {s}" for s in body]
    return "\n".join(lines) + "\n"


def cache_dir() -> str:
    """Where the generated kernel modules (and Numba's cache of them) live: ``$MINIGRAPH_CPU_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/minigraph/cpu-kernels`` (``~/.cache`` by default), else a temporary folder."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "minigraph", "cpu-kernels")


_modules: dict = {}
_lock = threading.Lock()


def _writable_dir() -> str:
    for d in (cache_dir(), os.path.join(tempfile.gettempdir(), f"minigraph-cpu-kernels-{os.getuid()}")):
        try:
            os.makedirs(d, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise OSError(f"no writable folder for the cpu backend's kernels (tried {cache_dir()!r}; set {CACHE_ENV})")


def load(src: str):
    """The module of a generated source: written once (atomically) under its hash, imported once."""
    key = hashlib.sha1(src.encode()).hexdigest()[:20]
    with _lock:
        mod = _modules.get(key)
        if mod is not None:
            return mod
        folder = _writable_dir()
        path = os.path.join(folder, f"fused_{key}.py")
        if not os.path.exists(path):  # never rewritten: Numba's cache keys on the file's time stamp
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w") as f:
                f.write(src)
            os.replace(tmp, path)
        name = f"minigraph_cpu_fused_{key}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        _modules[key] = mod
        return mod


def program_kernel(in_types: Sequence[ShapedType], out_type: ShapedType, program: Sequence[tuple]) -> Optional[Callable]:
    """``fn(*inputs, out=None) -> output`` computing ``program`` (``(op, args, out_type)`` triples,
    args indexing inputs then earlier results), or None where it cannot be compiled. ``out``: a
    C-contiguous array of the output's dtype and size that may take the result (it may be an input)."""
    shape = tuple(out_type.shape)
    size = prod(shape)
    dt = _dtype(out_type)
    if size == 0 or not program:
        return None
    used = sorted({a for _, args, _ in program for a in args if a < len(in_types)})
    kinds = []
    for k, ty in enumerate(in_types):
        n = prod(ty.shape)
        if k not in used:
            kinds.append("unused")
        elif n == 1:
            kinds.append("scalar")
        elif tuple(ty.shape) == shape:
            kinds.append("full")
        else:
            return None
    src = source(kinds, [_dtype(t) for t in in_types], program)
    if src is None:
        return None
    mod = load(src)
    fn = mod.parallel if size >= PARALLEL_ELEMENTS else mod.serial

    def run(*xs, out=None):
        o = np.empty(size, dt) if out is None else out.reshape(-1)
        fn(o, *[np.ravel(xs[k]) for k in used])
        return o.reshape(shape)
    return run


def step_kernel(step) -> Optional[Callable]:
    """``fn(*inputs) -> output`` for a fused elementwise step or one elementwise op, or None."""
    if len(step.outputs) != 1:
        return None
    program = step.program or ((step.op, tuple(range(len(step.in_types))), step.out_types[0]),)
    kernel = program_kernel(step.in_types, step.out_types[0], program)
    if kernel is None:
        return None
    return lambda *xs: kernel(*xs)


def can_take(result: np.ndarray, dt: np.dtype, inputs: Sequence[np.ndarray]) -> bool:
    """Whether an anchor's fresh result may be overwritten by its tail: contiguous, writeable, of
    the output's dtype, and sharing no memory with the step's inputs."""
    return (isinstance(result, np.ndarray) and result.flags.c_contiguous and result.flags.writeable
            and result.dtype == dt and not any(np.may_share_memory(result, x) for x in inputs))


def epilogue_kernel(step, anchor: Callable) -> Optional[Callable]:
    """``fn(*inputs) -> output`` for an epilogue step: ``anchor`` (the anchor op's kernel), then the
    tail compiled, written into the anchor's result where it may be; None if the tail cannot be."""
    a_op, a_args, a_ty = step.program[0]
    tail = program_kernel(tuple(step.in_types) + (a_ty,), step.out_types[0], step.program[1:])
    if tail is None:
        return None
    return with_tail(step, anchor, tail)


def with_tail(step, anchor: Callable, tail: Callable) -> Callable:
    """``anchor``, then ``tail(*inputs, anchor's result, out=...)``."""
    a_args = step.program[0][1]
    dt = _dtype(step.out_types[0])

    def run(*xs):
        a = anchor(*[xs[i] for i in a_args])
        return tail(*xs, a, out=a if can_take(a, dt, xs) else None)
    return run
