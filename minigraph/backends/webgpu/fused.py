"""The kernel of a fused elementwise step: its ops' WGSL expressions in one kernel, one pass.

A fused step (``Step.program``, built by the compiler for the ops in ``FUSIBLE_OPS``) computes a
chain or tree of elementwise ops. Its kernel reads each external input once per element (with
the same broadcasting as ``elementwise.map_source``), computes one ``let t{j}`` per program
entry with the op's own expression from ``elementwise.EXPRESSIONS``, and writes the last one:
one dispatch and one pass over memory instead of one per op, no intermediate tensor.

The results are those of the unfused plan: an intermediate is held in its compute type (f32,
i32, or u32 with bool as 0u/1u), and a float16 intermediate is rounded to float16 where the
unfused plan would have stored it (``f32(f16(x))``). A float32 chain may differ in the last
bit where the shader compiler contracts ``a * b + c`` to a fused multiply-add. Each leaky_relu
gets its own extra uniform word for its alpha.
"""
from __future__ import annotations

from ...errors import KernelMissingError
from .elementwise import EXPRESSIONS, alpha_word, leaky_relu_at, map_source
from .wgsl import COMPUTE, store

FUSED_TYPE = "fused_elementwise"
FUSIBLE_OPS = frozenset(EXPRESSIONS) | {"leaky_relu"}


def _label(op) -> str:
    return f"{op.type} op {op.name!r} (built at {op.location})"


def fused_source(in_dtypes, in_shapes, program):
    """(WGSL source, params) of a fused program: ``(op, args, out_type)`` triples whose args
    index the inputs (``0 .. len(in_dtypes) - 1``) and then the earlier entries' results."""
    if not program:
        raise ValueError("a fused elementwise step needs a non-empty program")
    extra: list[int] = []
    fns = []
    for op, _args, _ty in program:
        if op.type == "leaky_relu":
            fns.append(leaky_relu_at(len(extra)))
            extra.append(alpha_word(op.attrs["alpha"]))
        elif op.type in EXPRESSIONS:
            fns.append(EXPRESSIONS[op.type])
        else:
            raise KernelMissingError(f"{_label(op)}: the webgpu backend's fused elementwise kernel has no "
                                     f"expression for it (it fuses {', '.join(sorted(FUSIBLE_OPS))})")
    out_dtype = program[-1][2].dtype.name
    last = len(program) - 1

    def body(vals, cts):
        vals, cts = list(vals), list(cts)
        lines = []
        for j, ((op, args, ty), fn) in enumerate(zip(program, fns)):
            dt = ty.dtype.name
            try:
                expr = fn([vals[a] for a in args], [cts[a] for a in args], dt)
            except KernelMissingError as e:
                raise KernelMissingError(f"{_label(op)}: the webgpu backend has {e}; got "
                                         f"{_dtype_of(args[0], in_dtypes, program)}") from None
            if dt == "float16" and j != last:
                expr = f"f32(f16({expr}))"  # stored as float16 in the unfused plan: round as it would
            lines.append(f"  let t{j}: {COMPUTE[dt]} = {expr};")
            vals.append(f"t{j}")
            cts.append(COMPUTE[dt])
        lines.append(f"  out[i] = {store(out_dtype, f't{last}')};")
        return lines

    return map_source(in_dtypes, in_shapes, out_dtype, program[-1][2].shape, body, tuple(extra))


def _dtype_of(arg: int, in_dtypes, program) -> str:
    n = len(in_dtypes)
    return in_dtypes[arg] if arg < n else program[arg - n][2].dtype.name


def fused_elementwise(step, kb):
    """Kernel factory of a step whose ``program`` is non-empty: one dispatch for the whole step."""
    in_dt = [t.dtype.name for t in step.in_types]
    src, params = fused_source(in_dt, [t.shape for t in step.in_types], tuple(step.program))
    binds = [("u", params)] + [("ro", kb.input(k)) for k in range(len(in_dt))] + [("rw", kb.output())]
    kb.dispatch(src, binds, -(-params[0] // 256))
