"""Epilogues on the GPU: a kernel that computes an anchor op (a convolution, matmul or
normalization) applies the elementwise tail of its ``fused_epilogue`` step to each result before
it stores it, so the anchor's result never goes to memory (compiler/passes.py, epilogue_fusion).

A kernel module registers the anchor op types its kernels can do this for with
``@epilogue_kernel("op_type")``: ``factory(step, kb, epi)`` records the step's dispatches like the
op's ordinary kernel factory (``epi.anchor_step`` is the anchor's own step, ``epi.input(i)`` its
i-th input's buffer), and where it would store the anchor's result ``v`` at the output's flat
index ``i`` it stores ``epi.apply(v, i)`` instead, in the output's storage type
``epi.storage``; its shader declares ``epi.at(first).decls`` and binds ``epi.at(first).bindings``
after its own ``first`` bindings. A factory registered with ``keeps=True`` may get a step of two
outputs, the tail's and the anchor's (other steps read the anchor's result too): ``epi.apply``
then stores the anchor's result as well, so the kernel needs nothing more. A factory that cannot take the step (a geometry it has no
such kernel for) returns False before it records anything: the step then runs the anchor's
ordinary kernel into scratch memory and the tail after it (fused.py). ``EPILOGUE_FACTORIES`` is
what the backend offers the compiler as its ``epilogue_ops``, ``EPILOGUE_KEEPING`` its
``epilogue_keeping_ops``.

The tail is the fused elementwise kernel's code (``program.program_lines``) in a WGSL function
``ep_apply(v, i)``: its other inputs are read at ``i`` broadcast to the anchor's output shape as
NumPy broadcasts (shapes and strides baked in), and every value is rounded as the unfused plan
rounds it: a float16 anchor result to float16 first, then each float16 intermediate.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Callable, Dict, Set

from ...types import num_elements
from .program import program_lines, program_words
from .wgsl import COMPUTE, STORAGE, collapse, contiguous_strides, load, store

EPILOGUE_FACTORIES: Dict[str, Callable] = {}
EPILOGUE_KEEPING: Set[str] = set()


def epilogue_kernel(*op_types: str, keeps: bool = False) -> Callable:
    """Register ``factory(step, kb, epi)`` as the epilogue-applying kernel of ``op_types``.

    Args:
        op_types: the anchor op types it computes.
        keeps: whether it may get steps that store the anchor's result too (it stores what
            ``epi.apply`` returns and never declines one).
    """
    def register(factory: Callable) -> Callable:
        for t in op_types:
            EPILOGUE_FACTORIES[t] = factory
            if keeps:
                EPILOGUE_KEEPING.add(t)
        return factory
    return register


def broadcast_index(in_shape, out_shape, index: str) -> str:
    """The WGSL u32 offset into a contiguous tensor of ``in_shape`` of the element that NumPy
    broadcasting gives the output element at flat row-major ``index`` (constants baked in)."""
    rank = len(out_shape)
    padded = (1,) * (rank - len(in_shape)) + tuple(in_shape)
    if padded == tuple(out_shape):
        return index
    if num_elements(in_shape) == 1:
        return "0u"
    cs = contiguous_strides(padded)
    strides = tuple(0 if p != o else s for p, s, o in zip(padded, cs, out_shape))
    shape, (st,) = collapse(out_shape, strides)
    terms = []
    inner = 1
    for k in reversed(range(len(shape))):
        if st[k]:
            q = index if inner == 1 else f"({index} / {inner}u)"
            if k:  # the outermost axis needs no modulo (index < the output's size)
                q = f"({q} % {shape[k]}u)"
            terms.append(q if st[k] == 1 else f"{q} * {st[k]}u")
        inner *= shape[k]
    return " + ".join(reversed(terms)) or "0u"


class Epilogue:
    """The elementwise tail of a ``fused_epilogue`` step as WGSL for the anchor's kernel.

    ``bindings``: the ("ro", Ref) bindings of the tail's other inputs (and a uniform of its
    leaky_relu alphas, if any, and the anchor's own output for a step that keeps it), to append
    after the kernel's own ``first_binding`` bindings;
    ``decls``: their WGSL declarations and the function ``ep_apply``; ``apply(value, index)``:
    the stored WGSL expression for the anchor's compute-typed result ``value`` at the output's
    flat u32 ``index``. Names it declares start with ``ep_``.
    """

    def __init__(self, step, kb, first_binding: int = 0):
        a_op, a_args, a_ty = step.program[0]
        self.step = step
        self.anchor = a_op
        self.anchor_args = tuple(a_args)
        self.anchor_type = a_ty
        self.out_type = step.out_types[0]
        self.keeps = len(step.outputs) == 2  # the anchor's result is stored too (``ep_keep``)
        self.storage = STORAGE[self.out_type.dtype.name]
        self.first_binding = first_binding
        self._kb = kb
        self.anchor_step = dataclasses.replace(
            step, op=a_op, inputs=tuple(step.inputs[a] for a in a_args),
            in_types=tuple(step.in_types[a] for a in a_args), out_types=(a_ty,), free=(), reuse=None,
            ops=(a_op,), program=())
        n = len(step.in_types)
        tail = tuple(step.program[1:])
        self.inputs = sorted({a for _, args, _ in tail for a in args if a < n})
        a_dt = a_ty.dtype.name
        in_dt = [t.dtype.name for t in step.in_types]
        vals = [f"ep_v{k}" for k in range(n)] + ["ep_a"]
        cts = [COMPUTE[d] for d in in_dt] + [COMPUTE[a_dt]]
        lines, _, last = program_lines(tail, vals, cts, in_dt + [a_dt], accessor="ep_extra", prefix="ep_t")
        self.words = program_words(tail)
        out_dt = self.out_type.dtype.name
        head = [f"fn ep_apply(ep_r: {COMPUTE[a_dt]}, ep_i: u32) -> {self.storage} {{",
                # the unfused plan stores the anchor's result: a float16 one is rounded there
                f"  let ep_a: {COMPUTE[a_dt]} = {'f32(f16(ep_r))' if a_dt == 'float16' else 'ep_r'};"]
        for k in self.inputs:
            idx = broadcast_index(step.in_types[k].shape, self.out_type.shape, "ep_i")
            head.append(f"  let ep_v{k}: {COMPUTE[in_dt[k]]} = {load(in_dt[k], f'ep_in{k}[{idx}]')};")
        if self.keeps:
            head.append(f"  ep_keep[ep_i] = {store(a_dt, 'ep_r')};")
        self._function = "\n".join(head + lines + [f"  return {store(out_dt, last)};", "}"])

    def at(self, first_binding: int) -> "Epilogue":
        """This epilogue with its bindings numbered from ``first_binding``."""
        e = copy.copy(self)
        e.first_binding = first_binding
        return e

    def input(self, i: int):
        """The buffer (Ref) of the anchor's ``i``-th input."""
        return self._kb.input(self.anchor_args[i])

    @property
    def bindings(self) -> list:
        got: list = [("ro", self._kb.input(k)) for k in self.inputs]
        if self.words:
            got.append(("u", list(self.words)))
        if self.keeps:
            got.append(("rw", self._kb.output(1)))
        return got

    @property
    def decls(self) -> str:
        b = self.first_binding
        out = []
        for j, k in enumerate(self.inputs):
            dt = STORAGE[self.step.in_types[k].dtype.name]
            out.append(f"@group(0) @binding({b + j}) var<storage, read> ep_in{k}: array<{dt}>;")
        if self.words:
            n4 = -(-len(self.words) // 4)
            out.append(f"struct EpWords {{ v: array<vec4<u32>, {n4}> }}\n"
                       f"@group(0) @binding({b + len(self.inputs)}) var<uniform> ep_w: EpWords;\n"
                       "fn ep_extra(k: u32) -> u32 { return ep_w.v[k / 4u][k % 4u]; }")
        if self.keeps:
            k = b + len(self.inputs) + bool(self.words)
            out.append(f"@group(0) @binding({k}) var<storage, read_write> ep_keep: "
                       f"array<{STORAGE[self.anchor_type.dtype.name]}>;")
        return "\n".join(out + [self._function]) + "\n"

    def apply(self, value: str, index: str) -> str:
        return f"ep_apply({value}, {index})"
