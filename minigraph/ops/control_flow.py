"""Control flow (MPSGraph ``if``, ``while``, ``for``) and ``call``.

A control-flow op holds its blocks (``ir.Block``) in the hidden attribute ``blocks``; the ops
built inside a block live in the graph's op list, each marked with its ``block``. The op's inputs
are its leading operands (predicate, loop count or bounds, initial values) followed by the
captures of its blocks, the outer tensors their ops read, so a plan computes them first and keeps
them alive until the op finishes. Each block compiles to a sub-plan of its own (compiler/plan.py).

Gradients (Apple documents none for control flow; we follow JAX's ``cond`` and ``scan``): an
``if_then_else`` differentiates into another ``if_then_else`` whose branches replay the forward
branch and take its vector-Jacobian product; a ``for_loop`` whose count (or bounds) are constants
differentiates into a reverse ``for_loop`` that recomputes the loop-carried values of each step
(another ``for_loop`` from the initial values, O(N^2) body runs, O(1) extra graph) and takes the
body's vector-Jacobian product there; ``while_loop`` and ``call`` are not differentiable.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..callsite import user_location
from ..errors import DTypeError, NotDifferentiableError, PlanError, ShapeError, TargetError
from ..ir import Block, Operation, Tensor
from ..types import ShapedType, as_dtype, int32, is_static
from ._dynamic import zeros_like
from .registry import defop, gradient

TensorLike = Any  # a tensor, or a value that becomes a constant (op_builders.TensorLike)

IF_URL = "https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/if(_:then:else:name:)"
WHILE_URL = ("https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"
             "while(initialinputs:before:after:name:)")
FOR_URL = ("https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"
           "for(numberofiterations:initialbodyarguments:body:name:)")
FOR_RANGE_URL = ("https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"
                 "for(lowerbound:upperbound:step:initialbodyarguments:body:name:)")
CALL_URL = ("https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"
            "call(symbolname:inputtensors:outputtypes:name:)")


def _types(ts: Sequence[Tensor]) -> list:
    return [ShapedType(t.shape, t.dtype) for t in ts]


def _fmt(ty: ShapedType) -> str:
    return f"{ty.dtype.name}{list(ty.shape)}"


def _result_types(blocks: Sequence[Block], which: int = 0, skip: int = 0) -> list:
    return _types(blocks[which].results[skip:])


def _infer_if(in_types: list, attrs: dict) -> list:
    return _result_types(attrs["blocks"])


def _infer_while(in_types: list, attrs: dict) -> list:
    return _result_types(attrs["blocks"], 0, 1)  # the before block's results after its predicate


def _infer_for(in_types: list, attrs: dict) -> list:
    return _result_types(attrs["blocks"])


def _infer_argument(in_types: list, attrs: dict) -> list:
    return [ShapedType(tuple(attrs["shape"]), attrs["dtype"])]


def _infer_call(in_types: list, attrs: dict) -> list:
    return [ShapedType(tuple(s), d) for s, d in attrs["output_types"]]


@defop("block_argument", swift="blockArgument(index:)", objc="blockArgument:", inputs=(), infer=_infer_argument,
       family="control_flow", kind="memory", differentiable=False, attrs=("shape", "dtype", "index"),
       internal=True)
def block_argument(g, shape, dtype, index: int = 0, name: Optional[str] = None):
    """An argument of a control-flow block (the tensors MPSGraph passes to a loop's closures):
    placeholder-like, typed, built by the control-flow builders inside the block."""
    return g.add_op("block_argument", [], {"shape": tuple(shape), "dtype": as_dtype(dtype), "index": int(index)},
                    name).output


# ------------------------------------------------------------------------------ building blocks
def _reserve(g, type_: str, name: Optional[str]) -> tuple:
    """(the op's unique name, the scope its blocks' ops are named under): the blocks are built
    before the op, so their ops are named ``<op>/<block>/...`` with the name the op will get."""
    return g.reserve_name(type_, name)


def _block(g, rel: str, full: str, type_: str, which: str, arg_types: Sequence[ShapedType], fn: Any,
           call: Callable, location: str) -> Block:
    if not callable(fn):
        raise TargetError(f"{type_} op {full!r}: the {which} block must be a callable (a Python function that "
                          f"builds ops and returns tensors), got {type(fn).__name__}")
    block = Block(which, f"the {which} block of {type_} op {full!r}", g.current_block(), location)
    with g.name_scope(f"{rel}/{which}"):
        return g.build_block(block, arg_types, fn, call)


def _captures(blocks: Sequence[Block]) -> list:
    seen: dict = {}
    for b in blocks:
        for t in b.captures:
            seen.setdefault(id(t), t)
    return list(seen.values())


def _finish(g, type_: str, rel: str, leading: list, blocks: Sequence[Block], attrs: dict, name: Optional[str]) -> list:
    """Add the control-flow op: its leading inputs, then its blocks' captures."""
    attrs = {**attrs, "blocks": tuple(blocks)}
    op = g.add_op(type_, leading + _captures(blocks), attrs, rel, requested_name=name or type_,
                  user_name=_user_name(g, name))
    return list(op.outputs)


def _user_name(g, name: Optional[str]) -> Optional[str]:
    """The scoped name the user asked for (``g.operation(name)`` finds the op by it)."""
    return None if name is None else g.scoped_name(name)


def _scalar(g, value: Any, what: str, label: str, dtype=None) -> Tensor:
    t = g.as_tensor(value, label, dtype=dtype)
    if t.shape != ():
        raise ShapeError(f"{label}: {what} must be a rank-0 (scalar) tensor, got shape {list(t.shape)}")
    return t


def _check_same(label: str, block: Block, got: Sequence[Tensor], want: Sequence[ShapedType], what: str) -> None:
    if len(got) != len(want):
        raise TargetError(f"{label}: {block.label} (built at {block.location}) returned {len(got)} tensors; "
                          f"it must return {len(want)}, {what}")
    for i, (t, w) in enumerate(zip(got, want)):
        if t.shape != tuple(w.shape) or t.dtype != w.dtype:
            raise (DTypeError if t.shape == tuple(w.shape) else ShapeError)(
                f"{label}: {block.label} (built at {block.location}) returned {_fmt(ShapedType(t.shape, t.dtype))} "
                f"as result {i}, but {what} is {_fmt(w)}")


def _call0(fn: Callable, args: list) -> Any:
    return fn()


# ------------------------------------------------------------------------------ plan rules
def _same_types(sp: Any, want: Sequence[ShapedType], what: str) -> None:
    got = sp.result_types
    if [(tuple(t.shape), t.dtype) for t in got] != [(tuple(t.shape), t.dtype) for t in want]:
        raise PlanError(f"{sp.block.label} computes {[_fmt(t) for t in got]} with these feeds, but {what} are "
                        f"{[_fmt(t) for t in want]}; a block's types must not change between iterations or branches")


def _plan_if(op: Operation, in_types: tuple, planner: Any) -> tuple:
    subs = tuple(planner.subplan(op, in_types, b, []) for b in op.blocks)
    out = subs[0].result_types
    if len(subs) > 1:
        _same_types(subs[1], out, "the then block's results")
    return out, subs


def _plan_while(op: Operation, in_types: tuple, planner: Any) -> tuple:
    n = int(op.attrs["num_inputs"])
    before = planner.subplan(op, in_types, op.blocks[0], in_types[:n])
    res = before.result_types
    if tuple(res[0].shape) != ():
        raise PlanError(f"the predicate of {before.block.label} has shape {list(res[0].shape)} with these feeds; "
                        "it must be rank 0")
    after = planner.subplan(op, in_types, op.blocks[1], res[1:])
    _same_types(after, list(in_types[:n]), "the initial inputs")
    return res[1:], (before, after)


def _plan_for(op: Operation, in_types: tuple, planner: Any) -> tuple:
    nb = 1 if op.attrs["form"] == "count" else 3
    args = list(in_types[nb:nb + int(op.attrs["num_arguments"])])
    body = planner.subplan(op, in_types, op.blocks[0], [ShapedType((), int32)] + args)
    _same_types(body, args, "the initial body arguments")
    return args, (body,)


def _fit(declared: Sequence[ShapedType], given: Sequence[ShapedType]) -> bool:
    """Types that agree one by one (dtype, rank, sizes; a -1 of ``declared`` matches any size)."""
    return len(declared) == len(given) and all(
        d.dtype == g.dtype and len(d.shape) == len(g.shape) and all(a in (-1, b) for a, b in zip(d.shape, g.shape))
        for d, g in zip(declared, given))


def _plan_call(op: Operation, in_types: tuple, planner: Any) -> tuple:
    """The callee from the compilation descriptor's ``callables``, checked against the op."""
    sym = op.attrs["symbol_name"]
    exe = planner.callables.get(sym)
    if exe is None:
        raise PlanError(f"no executable for symbol {sym!r} in the compilation descriptor's callables "
                        f"({sorted(planner.callables) or 'none given'}); compile with "
                        f"mg.CompilationDescriptor(callables={{{sym!r}: executable}})")
    feeds = [exe.feed_types[t] for t in exe.feed_tensors]
    if not _fit(feeds, in_types):
        raise PlanError(f"the executable for symbol {sym!r} takes {[_fmt(t) for t in feeds]}, but the op passes "
                        f"{[_fmt(t) for t in in_types]}")
    outs = [ShapedType(tuple(s), d) for s, d in op.attrs["output_types"]]
    got = [exe.plan.types[s] for _, s in exe.plan.targets] if exe.plan is not None else \
        [ShapedType(t.shape, t.dtype) for t in exe.target_tensors]
    if not _fit(got, outs):
        raise PlanError(f"the executable for symbol {sym!r} returns {[_fmt(t) for t in got]}, but the op declares "
                        f"output_types {[_fmt(t) for t in outs]}")
    return outs, (exe,)


# ------------------------------------------------------------------------------ if
@defop("if_then_else", swift="if(_:then:else:name:)", objc="ifWithPredicateTensor:thenBlock:elseBlock:name:",
       inputs=("tensors",), infer=_infer_if, family="control_flow", hidden_attrs=("blocks",),
       since=("12.0", "15.0"), control_flow=True, plan_rule=_plan_if)
def if_then_else(g, predicate: "TensorLike", then_block: "Callable[[], Sequence[TensorLike]]",
                 else_block: "Optional[Callable[[], Sequence[TensorLike]]]" = None,
                 name: Optional[str] = None) -> "list":
    """Run ``then_block`` when the rank-0 ``predicate`` is true (non-zero), else ``else_block``
    (MPSGraph ``if(_:then:else:name:)``); only the taken branch runs. Both return lists of tensors
    of the same shapes and dtypes; without ``else_block`` the then block returns no tensors.
    Blocks may read tensors built outside them.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/if(_:then:else:name:)

    Args:
        predicate: A rank-0 tensor (bool or a number; non-zero is true).
        then_block: ``() -> [tensors]``, built once, run when the predicate is true.
        else_block: ``() -> [tensors]``, run when it is false; None: nothing runs then.
        name: The op's name; the blocks' ops are named ``<name>/then/...`` and ``<name>/else/...``.

    Returns:
        list[Tensor]: the taken branch's results.

    Raises:
        ShapeError: a predicate that is not rank 0, or branches whose results differ in shape.
        DTypeError: branches whose results differ in dtype.
        TargetError: a block that returns nothing or a different number of tensors.
    """
    location = user_location()
    full, rel = _reserve(g, "if_then_else", name)
    label = f"if_then_else op {full!r}"
    pred = _scalar(g, predicate, "the predicate", label)
    then = _block(g, rel, full, "if_then_else", "then", [], then_block, _call0, location)
    blocks = [then]
    if else_block is not None:
        other = _block(g, rel, full, "if_then_else", "else", [], else_block, _call0, location)
        _check_same(label, other, other.results, _types(then.results), "the then block's result")
        blocks.append(other)
    elif then.results:
        raise TargetError(f"{label}: {then.label} (built at {location}) returns {len(then.results)} tensors but "
                          "there is no else block; give else_block returning tensors of the same types")
    return _finish(g, "if_then_else", rel, [pred], blocks, {}, name)


# ------------------------------------------------------------------------------ while
@defop("while_loop", swift="while(initialInputs:before:after:name:)", objc="whileWithInitialInputs:before:after:name:",
       inputs=("tensors",), infer=_infer_while, family="control_flow", attrs=("num_inputs",),
       hidden_attrs=("blocks",), differentiable=False, since=("12.0", "15.0"), control_flow=True,
       plan_rule=_plan_while)
def while_loop(g, initial_inputs: "Sequence[TensorLike]",
               before: "Callable[[list[Tensor], list[Tensor]], TensorLike]",
               after: "Callable[[list[Tensor]], Sequence[TensorLike]]", name: Optional[str] = None) -> "list":
    """A while loop (MPSGraph ``while(initialInputs:before:after:name:)``): ``before(inputs,
    results)`` returns a rank-0 predicate and appends the values passed on to ``results``; while
    the predicate is true, ``after(results)`` returns the next inputs (the types of
    ``initial_inputs``); when it is false the loop returns ``results``.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/while(initialinputs:before:after:name:)

    Args:
        initial_inputs: The first iteration's inputs (a list of tensors).
        before: ``(inputs, results) -> predicate``; appends tensors to ``results``.
        after: ``(results) -> next inputs``.
        name: The op's name; the blocks' ops are named ``<name>/before/...`` and ``<name>/after/...``.

    Returns:
        list[Tensor]: the before block's results of the last iteration.

    Raises:
        ShapeError: a predicate that is not rank 0; next inputs of other shapes than the initial ones.
        DTypeError: next inputs of other dtypes.
        TargetError: a block that returns nothing.
    """
    location = user_location()
    full, rel = _reserve(g, "while_loop", name)
    label = f"while_loop op {full!r}"
    inits = [g.as_tensor(t, label) for t in _listed(initial_inputs, "initial_inputs", label)]

    def call_before(fn, args):
        results: list = []
        pred = fn(list(args), results)
        if pred is None:
            return None
        p = _scalar(g, pred, "the predicate the before block returns", label)
        return [p, *results]

    first = _block(g, rel, full, "while_loop", "before", _types(inits), before, call_before, location)
    second = _block(g, rel, full, "while_loop", "after", _types(first.results[1:]), after,
                    lambda fn, args: fn(list(args)), location)
    _check_same(label, second, second.results, _types(inits), "the matching initial input")
    return _finish(g, "while_loop", rel, inits, [first, second], {"num_inputs": len(inits)}, name)


def _listed(values: Any, what: str, label: str) -> list:
    if isinstance(values, Tensor) or isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TargetError(f"{label}: {what} must be a list of tensors, got {type(values).__name__}")
    return list(values)


# ------------------------------------------------------------------------------ for
@defop("for_loop", swift="for(numberOfIterations:initialBodyArguments:body:name:)",
       objc="forLoopWithNumberOfIterations:initialBodyArguments:body:name:", inputs=("tensors",), infer=_infer_for,
       family="control_flow", attrs=("form", "num_arguments"), hidden_attrs=("blocks",), since=("12.0", "15.0"),
       control_flow=True, plan_rule=_plan_for)
def for_loop(g, number_of_iterations: "Optional[TensorLike]", initial_body_arguments: "Sequence[TensorLike]",
             body: "Callable[[Tensor, list[Tensor]], Sequence[TensorLike]]", name: Optional[str] = None, *,
             lower_bound: "Optional[TensorLike]" = None, upper_bound: "Optional[TensorLike]" = None,
             step: "Optional[TensorLike]" = None) -> "list":
    """A for loop (MPSGraph ``for(numberOfIterations:initialBodyArguments:body:name:)``, or with
    ``lower_bound``, ``upper_bound`` and ``step`` ``for(lowerBound:upperBound:step:...)``, the
    half-open range): ``body(index, args)`` returns the next args, of the types of
    ``initial_body_arguments``; the index (int32, rank 0) goes 0 .. N-1, or lower, lower + step, ...
    below upper.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/for(numberofiterations:initialbodyarguments:body:name:)
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/for(lowerbound:upperbound:step:initialbodyarguments:body:name:)

    Args:
        number_of_iterations: A rank-0 int32 tensor or int; None with the bounds form.
        initial_body_arguments: The first iteration's arguments (a list of tensors).
        body: ``(index, args) -> next args``.
        name: The op's name; the body's ops are named ``<name>/body/...``.
        lower_bound: The first index (rank 0, int32), with ``upper_bound`` and ``step``.
        upper_bound: The index the loop stops before.
        step: The index's increment (positive).

    Returns:
        list[Tensor]: the arguments after the last iteration (the initial ones if none runs).

    Raises:
        ShapeError: a count or bound that is not rank 0; a body result of another shape.
        DTypeError: a count or bound that is not int32; a body result of another dtype.
        TargetError: a body that returns nothing or another number of tensors; both forms given.
    """
    location = user_location()
    full, rel = _reserve(g, "for_loop", name)
    label = f"for_loop op {full!r}"
    bounds = _bounds(g, number_of_iterations, lower_bound, upper_bound, step, label)
    args = [g.as_tensor(t, label) for t in _listed(initial_body_arguments, "initial_body_arguments", label)]
    arg_types = [ShapedType((), int32)] + _types(args)
    blk = _block(g, rel, full, "for_loop", "body", arg_types, body, lambda fn, a: fn(a[0], list(a[1:])), location)
    _check_same(label, blk, blk.results, _types(args), "the matching initial body argument")
    form = "count" if len(bounds) == 1 else "range"
    return _finish(g, "for_loop", rel, bounds + args, [blk], {"form": form, "num_arguments": len(args)}, name)


def _bounds(g, count: Any, lower: Any, upper: Any, step: Any, label: str) -> list:
    ranged = [v is not None for v in (lower, upper, step)]
    if count is not None and any(ranged):
        raise TargetError(f"{label}: give number_of_iterations or lower_bound, upper_bound and step, not both")
    if count is None and not all(ranged):
        raise TargetError(f"{label}: give number_of_iterations, or all of lower_bound, upper_bound and step")
    values = [("number_of_iterations", count)] if count is not None else \
        [("lower_bound", lower), ("upper_bound", upper), ("step", step)]
    out = []
    for what, v in values:
        t = _scalar(g, v, what, label, dtype=None if isinstance(v, Tensor) else int32)
        if t.dtype != int32:
            raise DTypeError(f"{label}: {what} must be int32, got {t.dtype.name}")
        out.append(t)
    return out


# ------------------------------------------------------------------------------ call
@defop("call", swift="call(symbolName:inputTensors:outputTypes:name:)", objc="callSymbolName:inputTensors:outputTypes:name:",
       inputs=("tensors",), infer=_infer_call, family="control_flow", attrs=("symbol_name", "output_types"),
       differentiable=False, since=("15.0", "18.0"), plan_rule=_plan_call)
def call(g, symbol_name: str, input_tensors: "Sequence[TensorLike]", output_types: "Sequence[Any]",
         name: Optional[str] = None) -> "list":
    """Run another executable (MPSGraph ``call(symbolName:inputTensors:outputTypes:name:)``),
    found at compile time in ``CompilationDescriptor(callables={symbol_name: executable})``; its
    results must have ``output_types``.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/call(symbolname:inputtensors:outputtypes:name:)

    Args:
        symbol_name: The key of the executable in the compilation descriptor's ``callables``.
        input_tensors: Its inputs, in its ``feed_tensors`` order.
        output_types: ``ShapedType``s (or ``(shape, dtype)`` pairs) of its results.
        name: The op's name.

    Returns:
        list[Tensor]: the executable's results.

    Raises:
        TargetError: an empty symbol name; compiling without the callable (a PlanError there).
    """
    label = f"call op {name or 'call'!r}"
    if not isinstance(symbol_name, str) or not symbol_name:
        raise TargetError(f"{label}: symbol_name must be a non-empty string, got {symbol_name!r}")
    ins = [g.as_tensor(t, label) for t in _listed(input_tensors, "input_tensors", label)]
    types = []
    for ty in _listed(output_types, "output_types", label):
        shape, dtype = (ty.shape, ty.dtype) if isinstance(ty, ShapedType) else ty
        types.append((tuple(int(d) for d in shape), as_dtype(dtype)))
    return list(g.add_op("call", ins, {"symbol_name": symbol_name, "output_types": tuple(types)}, name).outputs)


# ------------------------------------------------------------------------------ replaying blocks
def replay(g, block: Block, args: Sequence[Tensor], outer: Optional[dict] = None) -> list:
    """Build ``block``'s ops again in the block being built, its arguments taken as ``args`` and
    the tensors in ``outer`` (id -> tensor) replaced: the results, as the new ops compute them."""
    m = dict(outer or {})
    m.update({id(a): v for a, v in zip(block.arguments, args)})
    for op in block.ops:
        if op.type == "block_argument":
            continue
        ins = [m.get(id(t), t) for t in op.inputs]
        outs = _replay_control_flow(g, op, ins, m) if op.opdef.control_flow else \
            list(g.add_op(op.type, ins, dict(op.attrs), op.requested_name).outputs)
        for t, n in zip(op.outputs, outs):
            m[id(t)] = n
    return [m.get(id(t), t) for t in block.results]


def _replay_control_flow(g, op: Operation, ins: list, m: dict) -> list:
    """A nested control-flow op built again: its blocks replayed with the enclosing mapping."""
    full, rel = _reserve(g, op.type, op.requested_name)
    lead = ins[:_leading(op)]
    blocks = []
    for b in op.blocks:
        def call(fn, args, b=b):
            return replay(g, b, args, m)
        blk = Block(b.name, f"the {b.name} block of {op.type} op {full!r}", g.current_block(), b.location)
        with g.name_scope(f"{rel}/{b.name}"):
            blocks.append(g.build_block(blk, _types(b.arguments), None, call))
    attrs = {k: v for k, v in op.attrs.items() if k != "blocks"}
    return _finish(g, op.type, rel, lead, blocks, attrs, op.requested_name)


def _leading(op: Operation) -> int:
    """How many of a control-flow op's inputs come before its captures."""
    if op.type == "if_then_else":
        return 1
    if op.type == "while_loop":
        return int(op.attrs["num_inputs"])
    return (1 if op.attrs["form"] == "count" else 3) + int(op.attrs["num_arguments"])


def leading_inputs(op: Operation) -> int:
    """How many of a control-flow op's inputs come before its blocks' captures."""
    return _leading(op)


# ------------------------------------------------------------------------------ gradients
def _vjp(g, outs: Sequence[Tensor], cots: Sequence[Optional[Tensor]], wrt: Sequence[Tensor]) -> list:
    """The vector-Jacobian product of ``outs`` with ``cots`` toward ``wrt`` (zeros where no path)."""
    # the cotangents are constants here: a path through them (they may be computed from the
    # forward op's own results) is not part of this product
    terms = [g.reduction_sum(g.multiplication(o, g.stop_gradient(c)), axes=None) for o, c in zip(outs, cots)
             if c is not None and o.dtype.is_floating]
    if not wrt:
        return []
    if not terms:
        return [_zeros(g, t) for t in wrt]
    loss = terms[0]
    for t in terms[1:]:
        loss = g.addition(loss, t)
    grads = g.gradients(loss, list(wrt), name="vjp")
    return [grads[t] for t in wrt]


def _proxies(g, caps: Sequence[Tensor]) -> dict:
    """A ``stop_gradient`` of each capture, for a replayed block to read instead: the partial
    derivatives toward each capture as an independent input (a capture computed from another
    gets the rest of its gradient from the graph around the block, not twice)."""
    return {id(c): g.stop_gradient(c) for c in caps}


def _zeros(g, t: Tensor) -> Tensor:
    return g.constant(0.0, dtype=t.dtype, shape=t.shape) if is_static(t.shape) else zeros_like(g, t)


def _dys(op: Operation, dy: Any) -> list:
    return list(dy) if isinstance(dy, (list, tuple)) else [dy]


@gradient("if_then_else")
def _if_gradient(g, op, dy, wanted):
    dys = _dys(op, dy)
    caps = [t for t, w in zip(op.inputs[1:], wanted[1:]) if w]
    if not caps:
        return [None] * len(op.inputs)

    def branch(block):
        def fn():
            proxies = _proxies(g, caps)
            outs = replay(g, block, [], proxies)
            return _vjp(g, outs, dys, [proxies[id(c)] for c in caps])
        return fn

    blocks = op.blocks
    if len(blocks) > 1:
        got = g.if_then_else(op.inputs[0], branch(blocks[0]), branch(blocks[1]), name="gradient")
    else:  # no results, so no gradient: zeros
        got = [_zeros(g, t) for t in caps]
    by_id = {id(t): d for t, d in zip(caps, got)}
    return [None] + [by_id.get(id(t)) if w else None for t, w in zip(op.inputs[1:], wanted[1:])]


def _constant_int(t: Tensor) -> Optional[int]:
    op = t.operation
    return int(op.attrs["value"]) if op.type == "constant" else None


@gradient("for_loop")
def _for_gradient(g, op, dy, wanted):
    nb = 1 if op.attrs["form"] == "count" else 3
    bounds = [_constant_int(t) for t in op.inputs[:nb]]
    if any(b is None for b in bounds):
        raise NotDifferentiableError(
            f"for_loop op {op.name!r} (built at {op.location}): gradients flow through a for_loop only when its "
            "number of iterations (or its bounds) are constants, known when the graph is built; a while_loop or "
            "a run-time count is not differentiable")
    lo, hi, step = (0, bounds[0], 1) if nb == 1 else bounds
    n = max(0, -(-(hi - lo) // step)) if step > 0 else 0
    na = int(op.attrs["num_arguments"])
    inits = list(op.inputs[nb:nb + na])
    caps = list(op.inputs[nb + na:])
    (body,) = op.blocks
    dys = _dys(op, dy)
    cot0 = [d if d is not None else _zeros(g, t) if t.dtype.is_floating else None for d, t in zip(dys, inits)]
    fl = [i for i, t in enumerate(inits) if t.dtype.is_floating]
    wc = [c for c, w in zip(caps, wanted[nb + na:]) if w and c.dtype.is_floating]
    start = [cot0[i] for i in fl] + [_zeros(g, c) for c in wc]

    def back(j, carried):
        k = g.subtraction(g.constant(n - 1, dtype=int32), j)
        again = g.for_loop(k, inits, lambda i, a: replay(g, body, [_index(g, i, lo, step), *a]), name="recompute")
        at = [g.stop_gradient(t) for t in again]
        proxies = _proxies(g, caps)
        outs = replay(g, body, [_index(g, k, lo, step), *at], proxies)
        cots: list = [None] * na
        for pos, i in enumerate(fl):
            cots[i] = carried[pos]
        grads = _vjp(g, outs, cots, [at[i] for i in fl] + [proxies[id(c)] for c in wc])
        acc = [g.addition(carried[len(fl) + p], grads[len(fl) + p]) for p in range(len(wc))]
        return grads[:len(fl)] + acc

    got = g.for_loop(n, start, back, name="gradient") if start else []
    d_init = {fl[p]: got[p] for p in range(len(fl))}
    d_cap = {id(c): got[len(fl) + p] for p, c in enumerate(wc)}
    out: list = [None] * nb
    out += [d_init.get(i) if wanted[nb + i] else None for i in range(na)]
    out += [d_cap.get(id(c)) if w else None for c, w in zip(caps, wanted[nb + na:])]
    return out


def _index(g, i: Tensor, lo: int, step: int) -> Tensor:
    """The body's index at iteration ``i`` of the loop (``lo + i * step``)."""
    if lo == 0 and step == 1:
        return i
    return g.addition(g.multiplication(i, g.constant(step, dtype=int32)), g.constant(lo, dtype=int32))
