"""Reverse-mode automatic differentiation: ``Graph.gradients`` (MPSGraph ``gradients(of:with:name:)``).

The walk is micrograd's: find the ops between the requested tensors and ``of``, then visit them
in reverse creation order (a reverse topological order), asking each op's registered gradient
rule for the gradients of its inputs. Rules build ordinary graph ops, so the gradient is a
symbolic tensor in the same graph — and gradients of gradients work wherever rules exist.

Conventions (MPSGraph leaves them open; see docs/autodiff.md):
- a non-scalar ``of`` is seeded with ones: the result is the gradient of ``sum(of)``;
- a requested tensor that ``of`` does not depend on gets a zeros gradient of its shape;
- integer and bool tensors carry no gradient; asking for one explicitly is an error;
- an op without a rule (e.g. a weights-gradient op) on the path raises NotDifferentiableError.
"""
from __future__ import annotations

from typing import Optional, Sequence

from .errors import DTypeError, NotDifferentiableError, ShapeError, TargetError
from .tensor import Tensor
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


def gradients(g, of: Tensor, with_tensors: Sequence[Tensor], name: Optional[str] = "gradients") -> dict:
    """Symbolic gradients of ``of`` with respect to each tensor in ``with_tensors``.

    MPSGraph ``gradients(of:with:name:)``. Gradient ops are built into this graph and named
    ``<name>/<forward op name>/<op type>`` (e.g.
    ``grad/dw/depthwise_convolution_2d_weights_gradient``); run them like any other tensor.

    Args:
        of: a floating-point tensor. If it is not a scalar, it is seeded with ones (the
            gradient of ``sum(of)``).
        with_tensors: floating-point tensors (placeholders, variables, intermediates).
        name: the name scope of the inserted ops.

    Returns:
        ``{tensor: gradient tensor}``, each of the tensor's shape and dtype; zeros for a tensor
        ``of`` does not depend on.

    Raises:
        NotDifferentiableError: an op without a gradient rule lies on the path (named).
        DTypeError: ``of`` or a requested tensor is integer or bool.
    """
    from .ops.registry import OPS

    label = f"gradients {name!r}"
    if not isinstance(of, Tensor):
        raise TargetError(f"{label}: `of` must be a tensor, got {of!r}")
    g._check_mine(of, label)
    if not of.dtype.is_floating:
        raise DTypeError(f"{label}: `of` ({of.name!r}) is {of.dtype.name}; gradients need a floating-point tensor")
    if isinstance(with_tensors, Tensor):
        with_tensors = [with_tensors]
    with_tensors = list(with_tensors)
    for t in with_tensors:
        if not isinstance(t, Tensor):
            raise TargetError(f"{label}: with_tensors must hold tensors, got {t!r}")
        g._check_mine(t, label)
        if not t.dtype.is_floating:
            raise DTypeError(f"{label}: {t.name!r} is {t.dtype.name}; integer and bool tensors have no gradient")

    up = _ancestors(of)
    # ops reachable from a requested tensor, inside the ancestors of `of`
    wanted = {t.operation.index for t in with_tensors if t.operation.index in up}
    down = set(wanted)
    for op in g._ops[min(wanted) if wanted else len(g._ops):of.operation.index + 1]:
        if op.index in up and any(t.operation.index in down for t in op.inputs):
            down.add(op.index)

    grads: dict[int, list] = {}  # id(tensor) -> contributions
    tensor_of: dict[int, Tensor] = {}
    result: dict = {}
    scope = name or "gradients"
    with g.name_scope(scope):
        if not is_static(of.shape):
            raise ShapeError(f"{label}: `of` ({of.name!r}) has a dynamic shape {of.shape}; "
                             "gradients need static shapes")
        seed = g.constant(1.0, dtype=of.dtype, shape=of.shape, name=f"{of.operation.name}/seed")
        grads[id(of)] = [seed]
        tensor_of[id(of)] = of
        for op in sorted((g._ops[i] for i in down), key=lambda o: -o.index):
            if op.index in wanted and not op.inputs:
                continue
            outs = [t for t in op.outputs if id(t) in grads]
            if not outs:
                continue
            live = [i for i, t in enumerate(op.inputs)
                    if t.operation.index in down and t.dtype.is_floating]
            if not live:
                continue
            opdef = OPS[op.type]
            if opdef.grad is None or not opdef.differentiable:
                raise NotDifferentiableError(
                    f"{label}: {op.type} op {op.name!r} (built at {op.location}) is not differentiable "
                    f"(MPSGraph has no gradient rule for {opdef.swift}), but it lies between "
                    f"{of.name!r} and {', '.join(repr(with_tensors[k].name) for k in range(len(with_tensors)))}; "
                    "use g.stop_gradient(...) to cut the path if that is intended")
            for t in op.inputs + op.outputs:
                if not is_static(t.shape):
                    raise ShapeError(
                        f"{label}: {op.type} op {op.name!r} (built at {op.location}) has the dynamic shape "
                        f"{t.shape} on the path from {of.name!r}; gradients need static shapes (give the "
                        "placeholders full shapes, one graph per batch size)")
            dy = _total(g, grads[id(outs[0])])
            start = len(g._ops)
            with g.name_scope(op.name):
                in_grads = opdef.grad(g, op, dy)
            _drop_unused(g, start, [in_grads[i] for i in live if in_grads[i] is not None])
            for i in live:
                d = in_grads[i]
                if d is None:
                    continue
                t = op.inputs[i]
                if tuple(d.shape) != tuple(t.shape) or d.dtype != t.dtype:
                    raise ShapeError(f"{label}: the gradient rule of {op.type} produced {d.shape} "
                                     f"{d.dtype.name} for input {i} ({t.name!r}, {t.shape} {t.dtype.name})")
                grads.setdefault(id(t), []).append(d)
                tensor_of[id(t)] = t
        for t in with_tensors:
            contribs = grads.get(id(t))
            if contribs:
                result[t] = _total(g, contribs)
            else:
                if not is_static(t.shape):
                    raise ShapeError(f"{label}: {t.name!r} does not affect {of.name!r} and has a dynamic shape; "
                                     "cannot build its zeros gradient")
                result[t] = g.constant(0.0, dtype=t.dtype, shape=t.shape, name=f"{t.operation.name}/zeros")
    return result


def _drop_unused(g, start: int, keep: list) -> None:
    """Remove the ops a rule built only for inputs nobody asked about (e.g. the data gradient
    toward a placeholder), so listings and exports show just what the gradients need."""
    new = g._ops[start:]
    if not new:
        return
    needed, stack = set(), [t.operation for t in keep]
    while stack:
        o = stack.pop()
        if o.index < start or o.index in needed:
            continue
        needed.add(o.index)
        stack.extend(t.operation for t in o.inputs)
        stack.extend(o.control_dependencies)
    if len(needed) == len(new):
        return
    with g._lock:
        kept = [o for o in new if o.index in needed]
        dropped = {id(o) for o in new if o.index not in needed}
        for o in new:
            if id(o) in dropped:
                del g._by_name[o.name]
        for k, users in list(g._requested.items()):
            users[:] = [u for u in users if id(u) not in dropped]
            if not users:
                del g._requested[k]
        del g._ops[start:]
        for o in kept:
            o.index = len(g._ops)
            g._ops.append(o)


def _total(g, contribs: list) -> Tensor:
    if len(contribs) > 1:
        total = contribs[0]
        for c in contribs[1:]:
            total = g.addition(total, c, name="accumulate")
        contribs[:] = [total]
    return contribs[0]


def _attach():
    from .graph import Graph

    Graph.gradients = gradients


_attach()
