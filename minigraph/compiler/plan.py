"""Turn the part of a graph the targets need into an ordered plan of steps.

Every tensor gets a slot; each step reads input slots, writes output slots, and lists the
slots that are dead after it (the buffer plan). An elementwise step may also be told which input
buffer it can write its result into (``Step.reuse``). Types are re-inferred with the concrete feed
shapes, so dynamic (-1) dimensions are resolved here. Then the passes of passes.py run
(docs/compiler.md), and ``Plan.check`` verifies the result before any backend sees it.

The step contract backends run against: ``Step.ops`` are the graph operations a step computes,
in order (``(op,)`` for an ordinary step); ``Step.op`` is the op itself, or a fused step's last
op. A fused step (``Step.type == "fused_elementwise"``) has a ``program``: one
``(op, args, out_type)`` per op of ``ops``, ``args`` indexing a value list whose first
``len(inputs)`` entries are the step's inputs (``inputs`` / ``in_types`` order) and whose entry
``len(inputs) + j`` is the result of ``program[j]``; the last result is the step's one output.
A step with an epilogue (``Step.type == "fused_epilogue"``) has the same kind of program whose
first entry is its anchor, a convolution, matmul or normalization op of one output (``anchor``),
and whose other entries are the elementwise tail computed on the anchor's result before it is
stored, in the anchor's output shape; a second output, where it has one, is the anchor's result
(stored too, for readers after the tail). A ``fused_siblings`` step has no program: its ``ops`` are
two one-output reductions of the same data that one kernel computes in one pass, ``outputs``
theirs in that order, ``inputs`` the last op's (``Step.op``, whose kernel runs it).

The memory contract (buffers.py) is decided here too, once: ``Step.memory`` says what a backend
does for each step (``MEMORY_ACTIONS``: ``feed``, ``constant``, ``filled_constant``, ``variable``,
``read``, ``assign``, ``view``, ``kernel``), ``Step.source`` which value a read sees, ``Step.free``
when a slot dies and ``Step.reuse`` which input an in-place kernel may write into. A backend only
allocates, runs ``kernel`` steps and copies; ``start_env`` and ``run_memory_action`` do the rest
for a backend whose buffers are NumPy arrays (docs/backends.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import networkx as nx

from ..coerce import cast_hint
from ..descriptors import OptimizationLevel
from ..errors import (FeedDTypeError, FeedError, MiniGraphError, MissingFeedError, PlanError, ResourceLimitError,
                      TargetError)
from ..ir import OPS, MemoryFacts, Operation, Tensor
from ..limits import MAX_BYTES, MAX_ELEMENTS
from ..types import ShapedType, is_static, num_elements
from .buffers import MEMORY_ACTIONS, memory_action, plan_buffers
from .passes import (FUSED, FUSED_EPILOGUE, SIBLINGS, common_subexpression_elimination, constant_folding,
                     dead_code_elimination, elementwise_fusion, epilogue_fusion, sibling_fusion)

@dataclass
class Step:
    op: Operation
    inputs: tuple  # slot ids
    outputs: tuple  # slot ids
    in_types: tuple  # concrete ShapedTypes
    out_types: tuple
    free: tuple = ()  # slots whose last use is this step
    reuse: Optional[int] = None  # position of an input whose buffer may take the result (buffers.py)
    ops: tuple = ()  # the graph operations this step computes, in order; (op,) for an ordinary step
    program: tuple = ()  # a fused step's (op, args, out_type) per op of ops; () otherwise
    memory: str = ""  # what a backend does for it, one of MEMORY_ACTIONS (buffers.py)
    source: Optional[int] = None  # a read's: the slot an earlier assign of this run wrote; None: the variable's value
    blocks: tuple = ()  # a control-flow step's SubPlan per block (a call step's: the callee Executable)

    def __post_init__(self) -> None:
        if not self.ops:
            self.ops = (self.op,)

    @property
    def fused(self) -> bool:
        """Whether the step computes several ops (a fused program, or fused siblings)."""
        return bool(self.program) or len(self.ops) > 1

    @property
    def anchor(self) -> Optional[Operation]:
        """A fused step's first op when it is not elementwise (the op its epilogue follows)."""
        if self.program and not self.program[0][0].opdef.elementwise:
            return self.program[0][0]
        return None

    @property
    def type(self) -> str:
        """``"fused_elementwise"``, ``"fused_epilogue"`` or ``"fused_siblings"`` for a fused step, else
        its op's type."""
        if not self.program:
            return SIBLINGS if len(self.ops) > 1 else self.op.type
        return FUSED_EPILOGUE if self.anchor is not None else FUSED

    @property
    def kernel(self) -> str:
        """The kernel's name: the op type, ``fused_elementwise(multiplication+addition+relu)`` or
        ``fused_epilogue(convolution_2d+relu)``, ``fused_siblings(mean+variance)``."""
        if self.program:
            return f"{self.type}({'+'.join(o.type for o, _, _ in self.program)})"
        if len(self.ops) > 1:
            return f"{SIBLINGS}({'+'.join(o.type for o in self.ops)})"
        return self.op.type

    @property
    def attrs(self) -> Mapping[str, Any]:
        """The op's attributes (a fused step's last op's; the others are in ``program``)."""
        return self.op.attrs


@dataclass
class Plan:
    graph: Any
    steps: list
    feeds: list  # [(placeholder Tensor, slot, ShapedType)], in executable feed order
    targets: list  # [(Tensor, slot)]
    target_operations: list
    num_slots: int
    digraph: Any  # networkx DiGraph of the needed ops
    pruned: list = field(default_factory=list)  # ops of the graph the targets do not need
    types: dict = field(default_factory=dict)  # slot -> ShapedType
    passes: tuple = ()  # the names of the passes that built it, in order
    folded: dict = field(default_factory=dict)  # constant op of a folded step -> the op it replaces
    merged: dict = field(default_factory=dict)  # slot dropped by CSE -> the slot that holds its value
    inputs: tuple = ()  # a sub-plan's slots given from outside (block arguments, then captures)

    def check(self) -> None:
        """Verify the step contract (as torch.fx's ``Graph.lint``), before a backend sees the plan.

        Every input slot is written before it is read, each slot once; a freed slot is not read
        or written later; targets are written and never freed; a fused step's program has one
        triple per op of ``ops``, args in range and in order, elementwise ops only (but for an
        epilogue's anchor, first and of the output's shape), and each intermediate read by
        exactly one later triple. The memory plan: every step has a memory action and the one its op
        calls for, a read's source is the latest earlier assign of its variable (still alive), a
        view has one input and output of the same bytes, and an in-place ``reuse`` names an input
        of the result's shape and dtype that dies at the step. An output type with a -1 dimension
        is a data-dependent-shape op's (``OpDef.data_dependent_shape``), and no step reads it.

        Raises:
            PlanError: naming the step and the broken rule.
        """
        written: dict = {s: -1 for s in self.inputs}
        freed: dict = {}
        targets = {s for _, s in self.targets}
        latest: dict = {}
        unsized: dict = {}  # slot of a data-dependent-shape result -> the step that writes it
        for i, st in enumerate(self.steps):
            kernel = st.kernel if len(st.kernel) <= 80 else st.kernel[:76] + "...)"
            where = f"plan step {i} ({kernel} op {st.op.name!r})"
            _check_memory(st, where, latest, freed)
            _check_unsized(st, where, unsized, i)
            for s in st.inputs:
                if s in freed:
                    raise PlanError(f"{where} reads slot {s}, freed at step {freed[s]}")
                if s not in written:
                    raise PlanError(f"{where} reads slot {s} before any step writes it")
            for s in st.outputs:
                if s in written:
                    raise PlanError(f"{where} writes slot {s}, already written by step {written[s]}")
                if s in freed:
                    raise PlanError(f"{where} writes slot {s}, freed at step {freed[s]}")
                written[s] = i
            if st.program or st.type in (FUSED, FUSED_EPILOGUE):
                _check_program(st, where)
            elif len(st.ops) > 1:
                _check_siblings(st, where)
            for s in st.free:
                if s in targets:
                    raise PlanError(f"{where} frees slot {s}, a target's; targets are kept for the caller")
                freed[s] = i
        for t, s in self.targets:
            if s not in written:
                raise PlanError(f"target {t.name!r}: no step writes its slot {s}")

    @property
    def has_assignments(self) -> bool:
        return bool(self.assigned_variables)

    @property
    def assigned_variables(self) -> frozenset:
        """The variable ops the plan's ``assign`` steps write (a runner may assign only these)."""
        # asked on every run: scan the steps once, not once per run (O(steps) per call)
        got = self.__dict__.get("_assigned_variables")
        if got is None:
            got = self.__dict__["_assigned_variables"] = frozenset(
                s.op.inputs[0].operation for s in self.steps if s.op.type == "assign")
        return got


def _check_unsized(st, where: str, unsized: dict, i: int) -> None:
    """No step reads a data-dependent-shape result, and only such an op (unfused) writes a type
    with a -1 dimension (``unsized``: slot -> the step that wrote it, updated here)."""
    for s in st.inputs:
        if s in unsized:
            raise PlanError(f"{where} reads slot {s}, the result of step {unsized[s]}, whose size "
                            "depends on its data: only a target may hold it")
    for s, ty in zip(st.outputs, st.out_types):
        if not is_static(ty.shape):
            if not st.op.opdef.data_dependent_shape or st.program:
                raise PlanError(f"{where} writes slot {s} of type {ty}, still dynamic; only a "
                                "data-dependent-shape op's result may be")
            unsized[s] = i


def _check_memory(st, where: str, latest: dict, freed: dict) -> None:
    """One step's memory action, read source, view and in-place reuse (``latest``: variable op ->
    slot of its latest assigned value, updated here)."""
    if st.memory not in MEMORY_ACTIONS:
        raise PlanError(f"{where}: memory action {st.memory!r} is none of {list(MEMORY_ACTIONS)}")
    want = memory_action(st)
    if st.memory != want:
        raise PlanError(f"{where}: memory action {st.memory!r}, but a {st.op.type} step is {want!r}")
    if st.memory == "read":
        expect = latest.get(st.op.inputs[0].operation)
        if st.source != expect:
            raise PlanError(f"{where}: the read sees slot {st.source}, but the latest earlier assign of its "
                            f"variable wrote " + (f"slot {expect}" if expect is not None else "nothing (source None)"))
        if st.source is not None and st.source in freed:
            raise PlanError(f"{where}: the read sees slot {st.source}, freed at step {freed[st.source]}")
    elif st.source is not None:
        raise PlanError(f"{where}: only a read has a source (got slot {st.source})")
    if st.memory == "assign":
        latest[st.op.inputs[0].operation] = st.inputs[1]
    if st.memory == "view":
        a, b = st.in_types[0], st.out_types[0]
        if len(st.inputs) != 1 or len(st.outputs) != 1 or a.dtype != b.dtype or num_elements(a.shape) != num_elements(b.shape):
            raise PlanError(f"{where}: a view has one input and one output of the same bytes "
                            f"(got {list(st.in_types)} -> {list(st.out_types)})")
    if st.reuse is not None:
        ok = isinstance(st.reuse, int) and 0 <= st.reuse < len(st.inputs) and len(st.out_types) == 1
        if ok:
            s, ty, out = st.inputs[st.reuse], st.in_types[st.reuse], st.out_types[0]
            ok = s in st.free and ty.shape == out.shape and ty.dtype == out.dtype and st.memory == "kernel"
        if not ok:
            raise PlanError(f"{where}: reuse={st.reuse!r} must name an input of the result's shape and dtype "
                            "that dies at this kernel step")


def every_step(plan) -> list:
    """The plan's steps and, after each control-flow step, those of its sub-plans (nested too)."""
    out = []
    for st in plan.steps:
        out.append(st)
        for sp in st.blocks:
            if isinstance(sp, SubPlan):
                out.extend(every_step(sp.plan))
    return out


def start_env(plan, feed_values: Sequence) -> list:
    """A run's slot list with the feeds in place (``plan.feeds`` order), the rest empty; the other
    memory actions fill it as the steps run (``run_memory_action``)."""
    env: list = [None] * plan.num_slots
    for (_, s, _), v in zip(plan.feeds, feed_values):
        env[s] = v
    return env


def run_memory_action(st, env: list, variables: Mapping, assigned: dict) -> None:
    """Do what the plan says for a step that is not a ``kernel`` step, on NumPy arrays: a backend
    calls it for every other step, in plan order, then frees ``st.free``. ``assigned`` collects
    ``{variable op: value}`` for the executor to commit after the run (variables and feeds are
    never written)."""
    m = st.memory
    out: int = st.outputs[0] if st.outputs else -1  # -1: an assign, which makes no value
    if m == "constant":
        env[out] = st.op.attrs["value"]
    elif m == "filled_constant":  # for this run only: kernels see plain arrays
        env[out] = _np_array(st.op.attrs["value"])
    elif m == "variable":
        env[out] = variables[st.op]
    elif m == "read":
        env[out] = env[st.source] if st.source is not None else env[st.inputs[0]]
    elif m == "assign":
        assigned[st.op.inputs[0].operation] = env[st.inputs[1]]
    elif m == "view":
        env[out] = env[st.inputs[0]].reshape(st.out_types[0].shape)
    elif m != "feed":
        raise PlanError(f"{st.kernel} op {st.op.name!r}: memory action {m!r} is a backend's to run")


def _np_array(value):
    import numpy as np

    try:
        return np.array(value)
    except MemoryError:
        raise ResourceLimitError(f"no memory to fill a constant of {value.dtype}{list(value.shape)}; "
                                 "no variable was changed") from None


def _check_anchor(st, where: str) -> bool:
    """Whether the step has an epilogue's anchor (checked: one output, the step's shape, a tail)."""
    if st.anchor is None:
        return False
    a_op, _, a_ty = st.program[0]
    if len(st.program) < 2 or len(a_op.outputs) != 1 or a_ty.shape != st.out_types[0].shape:
        raise PlanError(f"{where}: an epilogue step's anchor {a_op.type} op {a_op.name!r} has one output, "
                        f"of the step's output shape {st.out_types[0].shape} (got {a_ty.shape}), and a tail")
    return True


def _check_program(st, where: str) -> None:
    """A fused step's program: well formed, in order, elementwise, one consumer per intermediate."""
    n = len(st.inputs)
    if not st.program:
        raise PlanError(f"{where}: a fused step without a program")
    if tuple(o for o, _, _ in st.program) != tuple(st.ops) or st.ops[-1] is not st.op:
        raise PlanError(f"{where}: program ops {[o.name for o, _, _ in st.program]} are not the step's ops "
                        f"{[o.name for o in st.ops]} (the last must be Step.op)")
    anchored = _check_anchor(st, where)
    outs = 2 if anchored and len(st.outputs) == 2 else 1  # an epilogue step may store its anchor's result too
    if len(st.outputs) != outs or len(st.out_types) != outs or len(st.in_types) != n:
        raise PlanError(f"{where}: a fused step has one output (an epilogue step: or two, the tail's and "
                        "the anchor's) and one type per input")
    if outs == 2 and st.out_types[1] != st.program[0][2]:
        raise PlanError(f"{where}: an epilogue step's second output is its anchor's, of type {st.program[0][2]} "
                        f"(got {st.out_types[1]})")
    uses = [0] * len(st.program)
    for j, (op, args, ty) in enumerate(st.program):
        if not op.opdef.elementwise and not (anchored and j == 0):
            raise PlanError(f"{where}: program[{j}] is {op.type} op {op.name!r}, not an elementwise op"
                            + (" (only program[0] may be an epilogue's anchor)" if j else ""))
        if not isinstance(ty, ShapedType):
            raise PlanError(f"{where}: program[{j}] has out_type {ty!r}, not a ShapedType")
        for a in args:
            if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < n + j:
                raise PlanError(f"{where}: program[{j}] ({op.name!r}) reads value {a!r}: it may read the "
                                f"{n} inputs (0..{n - 1}) and the results of program[0..{j - 1}]")
        for a in set(args):
            if a >= n:
                uses[a - n] += 1
    if st.program[-1][2] != st.out_types[0]:
        raise PlanError(f"{where}: the program's last result {st.program[-1][2]} is not the step's output "
                        f"type {st.out_types[0]}")
    for j, u in enumerate(uses[:-1]):
        if u != 1 and not (anchored and j == 0 and u > 1):  # the anchor's value may feed several tail ops
            raise PlanError(f"{where}: the result of program[{j}] ({st.program[j][0].name!r}) is read by {u} "
                            "later ops; an intermediate of a fused step has exactly one consumer")


def _check_siblings(st, where: str) -> None:
    """A ``fused_siblings`` step: its last op is ``Step.op`` and reads the step's inputs, and the
    outputs are its ops' outputs, one each, in order."""
    if st.ops[-1] is not st.op or len(st.in_types) != len(st.inputs):
        raise PlanError(f"{where}: a fused_siblings step's last op must be Step.op, with one type per input")
    if len(st.outputs) != len(st.ops) or len(st.out_types) != len(st.ops) or any(
            len(o.outputs) != 1 for o in st.ops):
        raise PlanError(f"{where}: a fused_siblings step has one output per op ({len(st.ops)}), "
                        f"not {len(st.outputs)}")


def _label(op: Operation) -> str:
    return f"{op.type} op {op.name!r} (built at {op.location})"


def needed_ops(graph, target_tensors: Sequence[Tensor], target_operations: Sequence[Operation]) -> nx.DiGraph:
    """The networkx DiGraph of ops the targets need (data edges and control dependencies)."""
    dg = nx.DiGraph()
    stack = [t.operation for t in target_tensors] + list(target_operations)
    seen = set()
    while stack:
        op = stack.pop()
        if op.index in seen:
            continue
        seen.add(op.index)
        dg.add_node(op.index, op=op, name=op.name, type=op.type)
        for t in op.inputs:
            dg.add_edge(t.operation.index, op.index, kind="data", tensor=t.name)
            stack.append(t.operation)
        for d in op.control_dependencies:
            dg.add_edge(d.index, op.index, kind="control")
            stack.append(d)
    return dg


@dataclass(frozen=True)
class Options:
    """What the passes are told: the backend's fusible, epilogue and sibling ops and memory facts, the
    level, fusion, and the compilation descriptor's ``callables`` (for ``call`` steps)."""

    fusible_ops: frozenset = frozenset()
    epilogue_ops: frozenset = frozenset()
    sibling_ops: frozenset = frozenset()
    memory_facts: MemoryFacts = MemoryFacts()
    optimization_level: int = OptimizationLevel.LEVEL1
    fusion: bool = True
    callables: Any = None
    epilogue_keeping_ops: frozenset = frozenset()


@dataclass
class SubPlan:
    """A control-flow block compiled: ``plan`` (a ``Plan`` whose ``inputs`` are the block's
    arguments, then its captures; its ``targets`` the block's results) and, for each capture, the
    position of the control-flow op's input that holds it."""

    block: Any
    plan: Plan
    capture_positions: tuple

    @property
    def result_types(self) -> list:
        return [self.plan.types[s] for _, s in self.plan.targets]


def build_plan(graph, feed_types: dict, target_tensors: Sequence[Tensor],
               target_operations: Sequence[Operation], *, fusible_ops: frozenset = frozenset(),
               epilogue_ops: frozenset = frozenset(), memory_facts: MemoryFacts = MemoryFacts(),
               optimization_level: int = OptimizationLevel.LEVEL1, fusion: bool = True,
               callables: Any = None, sibling_ops: frozenset = frozenset(),
               epilogue_keeping_ops: frozenset = frozenset()) -> Plan:
    """The plan for running ``target_tensors`` and ``target_operations`` with feeds of
    ``feed_types``: check the targets, order the ops they need, specialise the types with the
    feed shapes, then run the passes (docs/compiler.md): at ``LEVEL1`` common-subexpression
    elimination and constant folding, then dead-code elimination, elementwise fusion of the op
    types in ``fusible_ops`` (the backend's; none: no fusion) and epilogue fusion into the op
    types in ``epilogue_ops`` (of those in ``epilogue_keeping_ops`` also where more steps read the
    anchor's result: the fused step stores it too) and sibling fusion of the op-type pairs in ``sibling_ops`` when
    ``fusion``, and buffer planning, which lets a step write into a
    dying input only where the backend's kernels declared it safe (``memory_facts``; none: no
    reuse). A control-flow step's blocks are compiled the same way into sub-plans
    (``Step.blocks``); a ``call`` step finds its executable in ``callables``. ``Plan.check``
    verifies the result."""
    opts = Options(frozenset(fusible_ops), frozenset(epilogue_ops), frozenset(sibling_ops), memory_facts,
                   optimization_level, fusion, dict(callables or {}), frozenset(epilogue_keeping_ops))
    _check_targets(graph, feed_types, target_tensors, target_operations)
    dg, order = _order(graph, target_tensors, target_operations)
    steps, feeds, slot_of, types = _specialise(graph, dg, order, feed_types, opts)
    for t, ty in feed_types.items():  # feeds the targets don't need are allowed (as in MPSGraph), but checked
        check_feed_type(t, ty)
    target_slots = [slot_of[id(t)] for t in target_tensors]
    steps, target_slots, names, folded, alias = _passes(steps, target_slots, target_operations, opts, set())
    pruned = [op for op in graph.operations[: (order[-1].index + 1 if order else 0)]
              if op.index not in dg and op.block is None]
    plan = Plan(graph, steps, feeds, list(zip(target_tensors, target_slots)),
                list(target_operations), len(slot_of), dg, pruned, types, tuple(names), folded, alias)
    plan.check()
    return plan


def _passes(steps: list, target_slots: list, target_operations: Sequence[Operation], opts: Options,
            inputs: set) -> tuple:
    """(steps, target slots, pass names, folded, alias) after the passes and buffer planning; the
    slots in ``inputs`` (a sub-plan's, owned by the step that runs it) are never freed."""
    names = ["dead_code_elimination"]  # the needed_ops walk of _order
    alias: dict = {}
    folded: dict = {}
    if int(opts.optimization_level) >= OptimizationLevel.LEVEL1:
        steps, alias = common_subexpression_elimination(steps, target_slots)
        target_slots = [alias.get(s, s) for s in target_slots]
        steps, folded = constant_folding(steps, target_slots)
        steps = dead_code_elimination(steps, target_slots, target_operations)
        names += ["common_subexpression_elimination", "constant_folding", "dead_code_elimination"]
    if opts.fusion and opts.fusible_ops:
        steps = elementwise_fusion(steps, target_slots, opts.fusible_ops)
        names.append("elementwise_fusion")
        if opts.epilogue_ops:
            steps = epilogue_fusion(steps, target_slots, opts.epilogue_ops, opts.fusible_ops,
                                    opts.epilogue_keeping_ops)
            names.append("epilogue_fusion")
    if opts.fusion and opts.sibling_ops:
        steps = sibling_fusion(steps, target_slots, opts.sibling_ops)
        names.append("sibling_fusion")
    plan_buffers(steps, set(target_slots) | inputs, opts.memory_facts)
    names.append("plan_buffers")
    return steps, target_slots, names, folded, alias


# ------------------------------------------------------------------------------- check targets
def _check_targets(graph, feed_types: dict, target_tensors: Sequence[Tensor],
                   target_operations: Sequence[Operation]) -> None:
    """Tensors and operations of this graph, at least one target, feeds keyed by its placeholders."""
    for t in target_tensors:
        _check_target_tensor(graph, t)
    for o in target_operations:
        _check_target_operation(graph, o)
    if not target_tensors and not target_operations:
        raise TargetError("nothing to run: give at least one target tensor or target operation")
    for t in feed_types:
        _check_feed_key(graph, t)


def _check_target_tensor(graph, t: Any) -> None:
    if not isinstance(t, Tensor):
        raise TargetError(f"target_tensors must hold tensors, got {t!r}"
                          + (" (an operation: pass it in target_operations)" if isinstance(t, Operation) else ""))
    graph.check_same_graph(t, "target_tensors")
    _check_outside_blocks(t.operation, f"target {t.name!r}")


def _check_outside_blocks(op: Operation, what: str) -> None:
    if op.block is not None:
        raise TargetError(f"{what} was built inside {op.block.label} (at {op.location}); a block's tensors exist "
                          "only while it runs: return it from the block and run the control-flow op's result")


def _check_target_operation(graph, o: Any) -> None:
    if isinstance(o, Tensor):
        raise TargetError(f"target_operations must hold operations, got tensor {o.name!r}; "
                          f"use target_tensors, or {o.name!r}.operation")
    if not isinstance(o, Operation):
        raise TargetError(f"target_operations must hold operations, got {o!r}")
    graph.check_same_graph(o, "target_operations")
    _check_outside_blocks(o, f"target operation {o.name!r}")


def _check_feed_key(graph, t: Any) -> None:
    if not isinstance(t, Tensor):
        raise FeedDTypeError(f"feeds must be keyed by placeholder tensors, got {t!r}")
    graph.check_same_graph(t, "feeds")
    if t.operation.type != "placeholder":
        raise FeedError(f"feed for {t.name!r}: only placeholders can be fed, but it is the output of "
                        f"{_label(t.operation)}; feed a placeholder instead")


# ------------------------------------------------------------------------------- order
def _order(graph, target_tensors: Sequence[Tensor], target_operations: Sequence[Operation]) -> tuple:
    """(the DiGraph of the ops the targets need, those ops in a deterministic topological order)."""
    dg = needed_ops(graph, target_tensors, target_operations)
    return dg, [dg.nodes[n]["op"] for n in nx.lexicographical_topological_sort(dg)]


# ------------------------------------------------------------------------------- specialise types
def _specialise(graph, dg: nx.DiGraph, order: list, feed_types: dict, opts: Options) -> tuple:
    """(steps, feeds, {id(tensor): slot}, {slot: ShapedType}): one step per op, its output types
    inferred again from the concrete feed types, a slot for every output."""
    slot_of: dict[int, int] = {}  # id(tensor) -> slot
    types: dict[int, ShapedType] = {}
    steps: list[Step] = []
    feeds = []
    fed = {id(t): ty for t, ty in feed_types.items()}
    for op in order:
        if op.type == "placeholder":
            st = _step(op, slot_of, types, (_feed_type(graph, dg, op, fed),), ())
            feeds.append((op.outputs[0], st.outputs[0], st.out_types[0]))
        else:
            st = _specialised_step(op, slot_of, types, opts)
        steps.append(st)
    return steps, feeds, slot_of, types


def _specialised_step(op: Operation, slot_of: dict, types: dict, opts: Options) -> Step:
    """The step of a non-placeholder op: its types inferred again (an op with a ``plan_rule``, a
    control-flow op or a call, by that rule, with its blocks' sub-plans or its callee)."""
    _check_consumed(op)
    in_types = tuple(types[slot_of[id(t)]] for t in op.inputs)
    blocks: tuple = ()
    if op.opdef.plan_rule is not None:
        try:
            out, blocks = op.opdef.plan_rule(op, in_types, _Planner(opts))
        except MiniGraphError as e:
            raise type(e)(f"{_label(op)}: {e}") from None
        out_types = tuple(out)
    else:
        out_types = _infer(op, in_types)
    return _step(op, slot_of, types, out_types, tuple(blocks))


def _check_consumed(op: Operation) -> None:
    """No input of ``op`` is the result of a data-dependent-shape op (``OpDef.data_dependent_shape``):
    such a result is sized only when it has run, so no kernel can be planned to read it."""
    for t in op.inputs:
        src = t.operation
        if src.opdef.data_dependent_shape:
            raise PlanError(f"{_label(op)} reads {t.name!r}, the result of {_label(src)}, whose size depends on "
                            f"its data ({list(t.shape)}: known only once it has run); such a result may only be a "
                            "target of compile/run: run it, then feed what you need to another graph")


def _step(op: Operation, slot_of: dict, types: dict, out_types: tuple, blocks: tuple) -> Step:
    ins = tuple(slot_of[id(t)] for t in op.inputs)
    for ot in out_types:
        _check_output_type(op, ot)
    outs = []
    for t, ot in zip(op.outputs, out_types):
        s = len(slot_of)
        slot_of[id(t)] = s
        types[s] = ot
        outs.append(s)
    return Step(op, ins, tuple(outs), tuple(types[s] for s in ins), tuple(out_types), blocks=blocks)


# ------------------------------------------------------------------------------- control flow
class _Planner:
    """What an op's ``plan_rule`` may ask of the compiler: a block's sub-plan for given argument
    types (its captures typed from the op's inputs), and the descriptor's ``callables``."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.callables = dict(opts.callables or {})

    def subplan(self, op: Operation, in_types: tuple, block, arg_types: Sequence) -> "SubPlan":
        position = {id(t): i for i, t in enumerate(op.inputs)}
        caps = tuple(position[id(c)] for c in block.captures)
        return _subplan(block, list(arg_types), [in_types[p] for p in caps], caps, self.opts)


def _block_order(block) -> list:
    """The block's ops its results need (its own ops only; arguments and captures are inputs)."""
    own = {id(o) for o in block.ops}
    need: dict = {}
    stack = [t.operation for t in block.results if id(t.operation) in own]
    while stack:
        op = stack.pop()
        if id(op) in need or op.type == "block_argument":
            continue
        need[id(op)] = op
        stack.extend(t.operation for t in op.inputs if id(t.operation) in own)
        stack.extend(d for d in op.control_dependencies if id(d) in own)
    return sorted(need.values(), key=lambda o: o.index)


def _subplan(block, arg_types: list, capture_types: list, capture_positions: tuple, opts: Options) -> SubPlan:
    """A block's sub-plan: its arguments and captures are slots given from outside (``Plan.inputs``),
    its ops specialised and passed over as a plan's, its results the targets."""
    slot_of: dict = {}
    types: dict = {}
    given = list(block.arguments) + list(block.captures)
    for t, ty in zip(given, arg_types + capture_types):
        slot_of[id(t)] = len(slot_of)
        types[slot_of[id(t)]] = ty
    for a, ty in zip(block.arguments, arg_types):
        if tuple(a.shape) != tuple(ty.shape) and -1 not in a.shape or a.dtype != ty.dtype:
            raise PlanError(f"{block.label}: argument {a.name!r} is {a.dtype.name}{list(a.shape)}, but the plan "
                            f"gives it {ty}")
    steps = [_specialised_step(op, slot_of, types, opts) for op in _block_order(block)]
    for st in steps:
        if st.op.opdef.data_dependent_shape:
            raise PlanError(f"{block.label}: {_label(st.op)} computes a result whose size depends on its data; "
                            "it may only be a target of compile/run, not a block's result")
    inputs = tuple(range(len(given)))
    targets = [slot_of[id(t)] for t in block.results]
    steps, targets, names, folded, alias = _passes(steps, targets, (), opts, set(inputs))
    plan = Plan(None, steps, [], list(zip(block.results, targets)), [], len(slot_of), None, [], types,
                tuple(names), folded, alias, inputs)
    plan.check()
    return SubPlan(block, plan, capture_positions)


def _feed_type(graph, dg: nx.DiGraph, op: Operation, fed: dict) -> ShapedType:
    """The fed type of a placeholder the targets need, checked against its declared type."""
    t = op.outputs[0]
    ty = fed.get(id(t))
    if ty is None:
        names = [p.name for p in graph.placeholders if id(p) not in fed and p.operation.index in dg]
        raise MissingFeedError(f"missing feed for placeholder {t.name!r} {list(t.shape)} {t.dtype.name}, "
                               f"needed by the targets (placeholders without feeds: {names})")
    check_feed_type(t, ty)
    return ty


def _infer(op: Operation, in_types: tuple) -> tuple:
    try:
        return tuple(OPS[op.type].infer(list(in_types), dict(op.attrs)))
    except MiniGraphError as e:
        raise type(e)(f"{_label(op)}: {e}") from None


def _check_output_type(op: Operation, ot: ShapedType) -> None:
    """A specialised output is static and within the element and memory limits; a
    data-dependent-shape op's -1 dimensions stay (its size is known when it runs: no buffer is
    planned for it, and only a target may hold it, ``_check_consumed``)."""
    if op.opdef.data_dependent_shape:
        return
    if any(d < 0 for d in ot.shape):
        raise TargetError(f"{_label(op)}: output shape {ot.shape} is still dynamic after "
                          "feeding; give static feed shapes")
    if num_elements(ot.shape) > MAX_ELEMENTS:
        raise ResourceLimitError(f"{_label(op)}: output shape {ot.shape} has "
                                 f"{num_elements(ot.shape)} elements, more than the limit {MAX_ELEMENTS}")
    nbytes = num_elements(ot.shape) * ot.dtype.itemsize
    if MAX_BYTES and nbytes > MAX_BYTES:
        raise ResourceLimitError(f"{_label(op)}: output shape {ot.shape} {ot.dtype.name} needs "
                                 f"{nbytes / 2 ** 30:.1f} GiB, more than this machine's memory "
                                 f"({MAX_BYTES / 2 ** 30:.1f} GiB)")


def check_feed_type(t: Tensor, ty: ShapedType) -> None:
    if ty.dtype != t.dtype:
        raise FeedDTypeError(f"feed for placeholder {t.name!r}: dtype {ty.dtype.name} does not match the "
                        f"placeholder's {t.dtype.name}{cast_hint(ty.dtype, t.dtype)}")
    if len(ty.shape) != len(t.shape) or any(p != -1 and p != f for p, f in zip(t.shape, ty.shape)):
        raise FeedError(f"feed for placeholder {t.name!r}: shape {ty.shape} does not match the "
                        f"placeholder's {t.shape} (-1 matches any size)")
