"""Reverse-mode automatic differentiation: ``Graph.gradients`` (MPSGraph ``gradients(of:with:name:)``).

The walk is micrograd's: find the ops between the requested tensors and ``of``, then visit them
in reverse creation order (a reverse topological order), asking each op's registered gradient
rule for the gradients of its inputs. Rules build ordinary graph ops, so the gradient is a
symbolic tensor in the same graph — and gradients of gradients work wherever rules exist.

Conventions (MPSGraph leaves them open; see docs/autodiff.md):
- a non-scalar ``of`` is seeded with ones: the result is the gradient of ``sum(of)``;
- a requested tensor that ``of`` does not depend on gets a zeros gradient of its shape;
- integer and bool tensors carry no gradient; asking for one explicitly is an error;
- an op without a rule (e.g. a weights-gradient op) on the path raises NotDifferentiableError;
- dynamic (-1) dimensions, such as a batch size left open, flow through: rules build the sizes
  they need from the tensors (``ops/_dynamic.py``), so one graph trains at any batch size;
- a rule is told which inputs need a gradient (``wanted``) and builds only those; autodiff
  never removes ops from the graph, and ops nobody runs are pruned by the plan.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .errors import DTypeError, NotDifferentiableError, ShapeError, TargetError
from .ir import OPS, Operation, Tensor
from .ops._dynamic import ones_like, zeros_like
from .types import is_static


def _ancestors(of: Tensor) -> set:
    """Indices of the ops ``of`` depends on through data edges (not control dependencies)."""
    seen, stack = set(), [of.operation]
    while stack:
        op = stack.pop()
        if op.index in seen:
            continue
        seen.add(op.index)
        stack.extend(t.operation for t in op.inputs)
    return seen


def gradients(g: Any, of: Tensor, with_tensors: Sequence[Tensor], name: Optional[str] = "gradients") -> dict:
    """Symbolic gradients of ``of`` with respect to each tensor in ``with_tensors`` (``Graph.gradients``)."""
    label = f"gradients {name!r}"
    with_tensors = _check_request(g, of, with_tensors, label)
    ops = g.operations  # a snapshot: ops other threads add meanwhile are not on the path
    up = _ancestors(of)
    wanted = {t.operation.index for t in with_tensors if t.operation.index in up}
    down = set(wanted)
    for op in ops[min(wanted) if wanted else len(ops):of.operation.index + 1]:
        if op.index in up and any(t.operation.index in down for t in op.inputs):
            down.add(op.index)
    grads: dict[int, list] = {}  # id(tensor) -> contributions
    with g.gradient_scope(name or "gradients"):
        grads[id(of)] = [g.constant(1.0, dtype=of.dtype, shape=of.shape, name=f"{of.operation.name}/seed")
                         if is_static(of.shape) else ones_like(g, of)]
        for op in sorted((ops[i] for i in down), key=lambda o: -o.index):
            if op.index in wanted and not op.inputs:
                continue
            _backward(g, op, grads, down, label, of, with_tensors)
        return {t: _result(g, t, grads.get(id(t)), of, label) for t in with_tensors}


def _check_request(g: Any, of: Tensor, with_tensors: Any, label: str) -> list:
    if not isinstance(of, Tensor):
        raise TargetError(f"{label}: `of` must be a tensor, got {of!r}")
    g.check_same_graph(of, label)
    if not of.dtype.is_floating:
        raise DTypeError(f"{label}: `of` ({of.name!r}) is {of.dtype.name}; gradients need a floating-point tensor")
    if isinstance(with_tensors, Tensor):
        with_tensors = [with_tensors]
    with_tensors = list(with_tensors)
    for t in with_tensors:
        if not isinstance(t, Tensor):
            raise TargetError(f"{label}: with_tensors must hold tensors, got {t!r}")
        g.check_same_graph(t, label)
        if not (t.dtype.is_floating or t.dtype.is_complex):
            raise DTypeError(f"{label}: {t.name!r} is {t.dtype.name}; integer and bool tensors have no gradient")
    return with_tensors


def _backward(g: Any, op: Operation, grads: dict, down: set, label: str, of: Tensor, with_tensors: list) -> None:
    """Ask ``op``'s rule for the gradients of its inputs on the path and record them."""
    outs = [t for t in op.outputs if id(t) in grads]
    wanted = tuple(t.operation.index in down and (t.dtype.is_floating or t.dtype.is_complex) for t in op.inputs)
    if not outs or not any(wanted):
        return
    opdef = OPS[op.type]
    if opdef.grad is None or not opdef.differentiable:
        raise NotDifferentiableError(
            f"{label}: {op.type} op {op.name!r} (built at {op.location}) is not differentiable "
            f"(MPSGraph has no gradient rule for {opdef.swift}), but it lies between "
            f"{of.name!r} and {', '.join(repr(t.name) for t in with_tensors)}; "
            "use g.stop_gradient(...) to cut the path if that is intended")
    if len(op.outputs) == 1:
        dy: Any = _total(g, grads[id(outs[0])])
    else:  # one entry per output, None where no gradient reaches it
        dy = [_total(g, grads[id(t)]) if id(t) in grads else None for t in op.outputs]
    with g.name_scope(op.name):
        in_grads = opdef.grad(g, op, dy, wanted)
    for t, d, want in zip(op.inputs, in_grads, wanted):
        if d is None or not want:
            continue
        if not _fits(d.shape, t.shape) or d.dtype != t.dtype:
            raise ShapeError(f"{label}: the gradient rule of {op.type} produced {d.shape} "
                             f"{d.dtype.name} for input {t.name!r} ({t.shape} {t.dtype.name})")
        grads.setdefault(id(t), []).append(d)


def _fits(got: tuple, want: tuple) -> bool:
    """A rule's gradient has its input's shape; a -1 (known at run time) on either side matches any size."""
    return len(got) == len(want) and all(a == b or -1 in (a, b) for a, b in zip(got, want))


def _result(g: Any, t: Tensor, contribs: Optional[list], of: Tensor, label: str) -> Tensor:
    if contribs:
        return _total(g, contribs)
    if not is_static(t.shape):
        return zeros_like(g, t)
    return g.constant(0.0, dtype=t.dtype, shape=t.shape, name=f"{t.operation.name}/zeros")


def _total(g: Any, contribs: list) -> Tensor:
    if len(contribs) > 1:
        total = contribs[0]
        for c in contribs[1:]:
            total = g.addition(total, c, name="accumulate")
        contribs[:] = [total]
    return contribs[0]
