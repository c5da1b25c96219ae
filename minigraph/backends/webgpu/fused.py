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

A step with an epilogue (``step.anchor``: a convolution, matmul or normalization op first, its
elementwise tail after) goes to the anchor's kernel in ``epilogue.EPILOGUE_FACTORIES``, which
applies the tail (``epilogue.Epilogue``, the same program-to-WGSL code as here) where it stores;
an anchor without one, or a geometry its kernel declines, runs its ordinary kernel into scratch
memory and then the tail as a fused kernel (two dispatches, the unfused plan's bits).
"""
from __future__ import annotations

from ...errors import KernelMissingError
from ...types import num_elements
from .elementwise import map_source
from .epilogue import EPILOGUE_FACTORIES, Epilogue
from .program import _label, program_lines, program_words
from .registry import KERNELS
from .wgsl import store

FUSED_TYPE = "fused_elementwise"


def fused_source(in_dtypes, in_shapes, program):
    """(WGSL source, params) of a fused program: ``(op, args, out_type)`` triples whose args
    index the inputs (``0 .. len(in_dtypes) - 1``) and then the earlier entries' results."""
    if not program:
        raise ValueError("a fused elementwise step needs a non-empty program")
    out_dtype = program[-1][2].dtype.name

    def body(vals, cts):
        lines, _, last = program_lines(program, vals, cts, in_dtypes)
        return lines + [f"  out[i] = {store(out_dtype, last)};"]

    return map_source(in_dtypes, in_shapes, out_dtype, program[-1][2].shape, body, program_words(program))


def fused_elementwise(step, kb):
    """Kernel factory of a step whose ``program`` is non-empty: one dispatch for the whole step
    (a step with an epilogue: its anchor's epilogue kernel, see the module docstring)."""
    if step.anchor is not None:
        factory = EPILOGUE_FACTORIES.get(step.anchor.type)
        if factory is None or factory(step, kb, Epilogue(step, kb)) is False:
            _anchor_then_tail(step, kb)
        return
    in_dt = [t.dtype.name for t in step.in_types]
    src, params = fused_source(in_dt, [t.shape for t in step.in_types], tuple(step.program))
    binds = [("u", params)] + [("ro", kb.input(k)) for k in range(len(in_dt))] + [("rw", kb.output())]
    kb.dispatch(src, binds, -(-params[0] // 256))


class _AnchorBuilder:
    """A KernelBuilder for an epilogue step's anchor alone: its inputs, a scratch output."""

    def __init__(self, kb, epi: Epilogue, out):
        self._kb, self._epi, self._out = kb, epi, out
        self.step = epi.anchor_step
        self.ctx = kb.ctx
        self.label = kb.label

    def input(self, i: int):
        return self._epi.input(i)

    def output(self, i: int = 0):
        return self._out

    def __getattr__(self, name):  # scratch, dispatch, before_each_run
        return getattr(self._kb, name)


def _anchor_then_tail(step, kb) -> None:
    """The anchor's ordinary kernel into scratch memory (or its kept output), then the tail over
    it (two dispatches)."""
    epi = Epilogue(step, kb)
    a_op, _, a_ty = step.program[0]
    factory = KERNELS.get(a_op.opdef)
    if factory is None:
        raise KernelMissingError(f"{_label(a_op)}: the webgpu backend has no kernel for it")
    if len(step.outputs) == 2:  # the anchor's result is kept: its own output
        tmp = kb.output(1)
    else:
        tmp = kb.scratch(4 * num_elements(a_ty.shape))  # 4 bytes an element at most (bool is a u32)
    factory(epi.anchor_step, _AnchorBuilder(kb, epi, tmp))
    # the tail's values: the step's inputs, then the anchor's result, then its own entries
    types = list(step.in_types) + [a_ty]
    in_dt = [t.dtype.name for t in types]
    src, params = fused_source(in_dt, [t.shape for t in types], tuple(step.program[1:]))
    binds = ([("u", params)] + [("ro", kb.input(k)) for k in range(len(step.in_types))] + [("ro", tmp)]
             + [("rw", kb.output())])
    kb.dispatch(src, binds, -(-params[0] // 256))
