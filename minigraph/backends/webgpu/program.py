"""A fused program's WGSL: one ``let`` per elementwise entry, the expressions of
``elementwise.EXPRESSIONS``; the fused elementwise kernel (fused.py) and the epilogues of
convolution, matmul and normalization kernels (epilogue.py) both write their tails with it."""
from __future__ import annotations

from typing import Callable, Sequence

from ...errors import KernelMissingError
from .elementwise import EXPRESSIONS, alpha_word
from .wgsl import COMPUTE

FUSIBLE_OPS = frozenset(EXPRESSIONS) | {"leaky_relu"}


def _label(op) -> str:
    return f"{op.type} op {op.name!r} (built at {op.location})"


def _leaky_relu(word: int, accessor: str) -> Callable:
    """leaky_relu with its alpha read as the u32 word ``accessor(word)`` (as elementwise.leaky_relu_at:
    a literal alpha of 0 would let the shader compiler fold ``0 * x`` and lose NaN and -0)."""
    def fn(v, ct, out):
        x = v[0]
        return f"select(bitcast<f32>({accessor}({word}u)) * {x}, {x}, {x} >= 0.0)"
    return fn


def program_lines(program: Sequence, vals: Sequence[str], cts: Sequence[str], dtypes: Sequence[str],
                  accessor: str = "extra", prefix: str = "t") -> tuple:
    """The WGSL of a program's entries: ``(lines, extra words, name of the last result)``.

    ``program``: ``(op, args, out_type)`` triples whose args index ``vals`` (the names of the
    values before the program, compute-typed, with their compute types ``cts`` and dtypes) and
    then the earlier entries' results, ``{prefix}{j}``. Every result but the last is rounded to
    float16 where its dtype is float16 (the unfused plan stores it so). leaky_relu alphas become
    the returned u32 words, read in WGSL as ``accessor(k)``."""
    if not program:
        raise ValueError("a fused elementwise program needs at least one entry")
    vals, cts, dtypes = list(vals), list(cts), list(dtypes)
    words: list = []
    lines = []
    last = len(program) - 1
    for j, (op, args, ty) in enumerate(program):
        if op.type == "leaky_relu":
            fn = _leaky_relu(len(words), accessor)
            words.append(alpha_word(op.attrs["alpha"]))
        elif op.type in EXPRESSIONS:
            fn = EXPRESSIONS[op.type]
        else:
            raise KernelMissingError(f"{_label(op)}: the webgpu backend's fused elementwise kernel has no "
                                     f"expression for it (it fuses {', '.join(sorted(FUSIBLE_OPS))})")
        dt = ty.dtype.name
        try:
            expr = fn([vals[a] for a in args], [cts[a] for a in args], dt)
        except KernelMissingError as e:
            raise KernelMissingError(f"{_label(op)}: the webgpu backend has {e}; got {dtypes[args[0]]}") from None
        if dt == "float16" and j != last:
            expr = f"f32(f16({expr}))"  # stored as float16 in the unfused plan: round as it would
        lines.append(f"  let {prefix}{j}: {COMPUTE[dt]} = {expr};")
        vals.append(f"{prefix}{j}")
        cts.append(COMPUTE[dt])
        dtypes.append(dt)
    return lines, words, f"{prefix}{last}"


def program_words(program) -> tuple:
    """The extra u32 words ``program_lines`` reads: each leaky_relu's alpha, in program order."""
    return tuple(alpha_word(op.attrs["alpha"]) for op, _, _ in program if op.type == "leaky_relu")
