"""The compiler's passes (minigraph/compiler/passes.py), each alone; the compilation descriptor;
``Plan.check``; ``exe.steps``; and fused plans computing the same bits as unfused ones on numpy,
over every elementwise case of tests/op_cases.py and over the suite's networks."""
from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
import pytest

import minigraph as mg
from minigraph import backends as registry
from minigraph import demo, sixblock
from minigraph.backends.numpy import fused, threads
from minigraph.backends.numpy.backend import NumpyBackend
from minigraph.compiler import passes
from minigraph.compiler.plan import Step, build_plan, needed_ops
from minigraph.ir import OPS
from minigraph.listing import describe_plan
from op_cases import ELEMENTWISE, input_domains
from graph_zoo import every_op_graph

PLAIN = mg.CompilationDescriptor(mg.OptimizationLevel.LEVEL0, fusion=False)  # one step per needed op
NUMPY_FUSIBLE = NumpyBackend.fusible_ops


def _types(feeds):
    return {t: mg.ShapedType(np.shape(v), mg.as_dtype(np.asarray(v).dtype)) for t, v in feeds.items()}


def _dense(shape=(4, 3)):
    """relu(x * w + b) with w and b constants that broadcast."""
    g = mg.Graph()
    x = g.placeholder(list(shape), name="x")
    w = g.constant(np.full(shape[-1], 2, np.float32), name="w")
    b = g.constant(np.ones(shape[-1], np.float32), name="b")
    y = g.relu(g.addition(g.multiplication(x, w, name="mul"), b, name="add"), name="relu")
    return g, x, y


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ------------------------------------------------------------------------------ descriptor
def test_compilation_descriptor_defaults_and_apple_raw_values():
    d = mg.CompilationDescriptor()
    assert d.optimization_level is mg.OptimizationLevel.LEVEL1 and d.fusion is True
    assert int(mg.OptimizationLevel.LEVEL0) == 0 and int(mg.OptimizationLevel.LEVEL1) == 1
    assert mg.CompilationDescriptor(0).optimization_level is mg.OptimizationLevel.LEVEL0
    assert mg.CompilationDescriptor("level0").optimization_level is mg.OptimizationLevel.LEVEL0


@pytest.mark.parametrize("kw,field", [({"optimization_level": 2}, "optimization_level"),
                                      ({"optimization_level": "LEVEL9"}, "optimization_level"),
                                      ({"optimization_level": 1.0}, "optimization_level"),
                                      ({"optimization_level": True}, "optimization_level"),
                                      ({"fusion": "yes"}, "fusion"), ({"fusion": 1}, "fusion")])
def test_compilation_descriptor_refuses_wrong_fields(kw, field):
    with pytest.raises(mg.DescriptorError, match=field) as e:
        mg.CompilationDescriptor(**kw)
    assert ("LEVEL0, LEVEL1" if field == "optimization_level" else "bool") in str(e.value)
    d = mg.CompilationDescriptor()
    setattr(d, field, kw[field])  # mutable: checked again when compiled
    g, x, y = _dense()
    with pytest.raises(mg.DescriptorError, match=field):
        g.compile({x: mg.ShapedType([4, 3])}, [y], compilation_descriptor=d)


def test_compile_and_run_refuse_a_descriptor_of_another_type():
    g, x, y = _dense()
    for bad in ({"fusion": False}, mg.Convolution2DOpDescriptor(), 1):
        with pytest.raises(mg.DescriptorError, match="CompilationDescriptor"):
            g.compile({x: mg.ShapedType([4, 3])}, [y], compilation_descriptor=bad)
        with pytest.raises(mg.DescriptorError, match="optimization_level.*fusion"):
            g.run({x: np.ones((4, 3), np.float32)}, [y], compilation_descriptor=bad)


def test_run_with_a_descriptor_caches_by_it():
    g, x, y = _dense()
    feeds = {x: np.arange(12, dtype=np.float32).reshape(4, 3) - 6}
    a = g.run(feeds, [y])[y]
    b = g.run(feeds, [y], compilation_descriptor=mg.CompilationDescriptor(fusion=False))[y]
    c = g.run(feeds, [y], compilation_descriptor=mg.CompilationDescriptor())[y]  # the default's key: a hit
    assert _same_bits(a, b) and _same_bits(a, c)
    info = g.cache_info()
    assert info.misses == 2 and info.hits == 1


def test_a_later_edit_of_the_descriptor_changes_nothing_compiled():
    g, x, y = _dense()
    d = mg.CompilationDescriptor()
    exe = g.compile({x: mg.ShapedType([4, 3])}, [y], compilation_descriptor=d)
    d.fusion = False
    assert exe.compilation_descriptor.fusion is True
    assert any(s.fused for s in exe.steps)


# ------------------------------------------------------------------------------ steps and kernels
def test_relu_of_x_times_w_plus_b_is_one_fused_step():
    g, x, y = _dense()
    exe = g.compile({x: mg.ShapedType([4, 3])}, [y])
    assert [s.kernel for s in exe.steps] == ["placeholder", "constant", "constant",
                                            "fused_elementwise(multiplication+addition+relu)"]
    st = exe.steps[-1]
    assert st.type == "fused_elementwise" and st.op is y.operation
    assert [o.name for o in st.ops] == ["mul", "add", "relu"]
    assert st.attrs is y.operation.attrs
    # inputs x, w, b (0, 1, 2), then the results of program[0] (3) and program[1] (4)
    assert [(op.name, args) for op, args, _ in st.program] == [("mul", (0, 1)), ("add", (3, 2)), ("relu", (4,))]
    assert all(ty == mg.ShapedType([4, 3]) for _, _, ty in st.program)
    assert len(st.outputs) == 1 and st.out_types == (mg.ShapedType([4, 3]),)
    assert set(st.free) == set(st.inputs)  # x, w and b die here
    text = exe.describe()
    assert "fused_elementwise(multiplication+addition+relu)(x, w, b)" in text and "ops: mul, add, relu" in text
    xv = np.linspace(-3, 3, 12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(exe.run([xv])[0], np.maximum(xv * 2 + 1, 0))


def test_ordinary_steps_keep_their_op_as_ops_and_kernel():
    g, x, y = _dense()
    exe = g.compile({x: mg.ShapedType([4, 3])}, [y], compilation_descriptor=PLAIN)
    assert [s.kernel for s in exe.steps] == ["placeholder", "constant", "constant", "multiplication", "addition", "relu"]
    for s in exe.steps:
        assert s.ops == (s.op,) and s.program == () and s.type == s.op.type and not s.fused


def test_plain_plan_is_one_step_per_needed_op_in_order():
    g, feeds, outs, ops = every_op_graph()
    plan = g.compile(_types(feeds), outs, ops, compilation_descriptor=PLAIN).plan
    dg = needed_ops(g, outs, ops)
    assert [s.op for s in plan.steps] == [dg.nodes[n]["op"] for n in nx.lexicographical_topological_sort(dg)]
    assert plan.passes == ("dead_code_elimination", "plan_buffers")


def test_exe_steps_of_a_dynamic_executable():
    g = mg.Graph()
    x = g.placeholder([-1, 3], name="x")
    y = g.relu(g.addition(x, 1.0))
    exe = g.compile({x: mg.ShapedType([-1, 3])}, [y])
    with pytest.raises(mg.ExecutionError, match="nothing has run yet"):
        exe.steps
    exe.run([np.ones((2, 3), np.float32)])
    assert exe.steps[-1].kernel == "fused_elementwise(addition+relu)" and exe.steps[-1].out_types[0].shape == (2, 3)
    exe.run([np.ones((5, 3), np.float32)])
    assert exe.steps[-1].out_types[0].shape == (5, 3)  # the most recent specialisation


def test_profile_has_one_record_per_fused_step():
    g, x, y = _dense((64, 32))
    exe = g.compile({x: mg.ShapedType([64, 32])}, [y])
    prof = exe.profile([np.ones((64, 32), np.float32)], repeats=2)
    (rec,) = prof.records
    assert rec.name == "relu" and rec.type == "fused_elementwise"
    assert rec.kernel == "fused_elementwise(multiplication+addition+relu)" and rec.ops == ("mul", "add", "relu")
    assert rec.flops == 3 * 64 * 32


# ------------------------------------------------------------------------------ each pass alone
def _plain_steps(g, feeds, targets, ops=()):
    plan = build_plan(g, _types(feeds), targets, list(ops), optimization_level=0, fusion=False)
    return plan, plan.steps, [s for _, s in plan.targets]


def test_cse_merges_equal_compute_ops_and_equal_constants():
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    c1, c2 = g.constant(np.arange(3, dtype=np.float32), name="c1"), g.constant(np.arange(3, dtype=np.float32), name="c2")
    a, b = g.multiplication(x, c1, name="a"), g.multiplication(x, c2, name="b")
    other = g.multiplication(x, g.constant(np.ones(3, np.float32), name="ones"), name="other")
    s = g.addition(g.relu(a, name="ra"), g.relu(b, name="rb"), name="s")
    plan, steps, targets = _plain_steps(g, {x: np.ones(3, np.float32)}, [s, other])
    out, alias = passes.common_subexpression_elimination(steps, targets)
    names = [st.op.name for st in out]
    assert "c2" not in names and "b" not in names and "rb" not in names and "other" in names
    slot = {st.op.name: st.outputs[0] for st in steps}
    assert alias == {slot["c2"]: slot["c1"], slot["b"]: slot["a"], slot["rb"]: slot["ra"]}
    add = next(st for st in out if st.op.name == "s")
    assert add.inputs == (slot["ra"], slot["ra"])
    assert steps[[st.op.name for st in steps].index("s")].inputs != add.inputs  # the input list is unchanged


def test_cse_never_merges_memory_random_or_control_dependent_ops():
    g = mg.Graph()
    x = g.placeholder([4], name="x")
    v = g.variable(np.zeros(4, np.float32), name="v")
    r1, r2 = g.read(v, name="r1"), g.read(v, name="r2")
    d1, d2 = g.dropout(x, 0.5, name="d1"), g.dropout(x, 0.5, name="d2")  # two draws, even with one seed
    with g.control_dependencies([g.assign(v, x, name="set")]):
        late = g.negative(x, name="late")
    early = g.negative(x, name="early")
    outs = [r1, r2, d1, d2, late, early]
    plan, steps, targets = _plain_steps(g, {x: np.ones(4, np.float32)}, outs)
    out, alias = passes.common_subexpression_elimination(steps, targets)
    assert {st.op.name for st in steps} == {st.op.name for st in out} and not alias


def test_attr_key_compares_arrays_by_dtype_shape_and_bytes():
    k = passes.attr_key
    assert k(np.zeros(2, np.float32)) == k(np.zeros(2, np.float32))
    assert k(np.zeros(2, np.float32)) != k(np.zeros(2, np.float64))
    assert k(np.zeros((2, 1), np.float32)) != k(np.zeros(2, np.float32))
    assert k(mg.Convolution2DOpDescriptor()) == k(mg.Convolution2DOpDescriptor())
    assert k(mg.Convolution2DOpDescriptor(stride_in_x=2)) != k(mg.Convolution2DOpDescriptor())
    assert k(float("nan")) == k(float("nan"))


def test_constant_folding_computes_constant_chains_once():
    g = mg.Graph()
    x = g.placeholder([3], name="x")
    c = g.constant(np.array([1, 4, 9], np.float32), name="c")
    r = g.square_root(c, name="root")
    s = g.addition(r, 1.0, name="plus")
    y = g.multiplication(x, s, name="y")
    plan, steps, targets = _plain_steps(g, {x: np.ones(3, np.float32)}, [y])
    out, folded = passes.constant_folding(steps, targets)
    by = {st.op.name: st for st in out}
    assert by["root"].op.type == "constant" and by["plus"].op.type == "constant" and by["y"].op.type == "multiplication"
    np.testing.assert_array_equal(by["plus"].op.attrs["value"], [2, 3, 4])
    assert by["plus"].inputs == () and by["plus"].outputs == steps[[s.op.name for s in steps].index("plus")].outputs
    assert {o.name for o in folded.values()} == {"root", "plus"}
    kept = passes.dead_code_elimination(out, targets)
    assert [st.op.name for st in kept] == ["x", "root", "plus", "y"] or "c" not in [st.op.name for st in kept]
    full = g.compile({x: mg.ShapedType([3])}, [y], compilation_descriptor=mg.CompilationDescriptor(fusion=False))
    assert "folded from addition(root, " in full.describe()
    np.testing.assert_array_equal(full.run([np.ones(3, np.float32)])[0], [2, 3, 4])


def test_constant_folding_skips_random_control_dependent_and_large_ops(monkeypatch):
    g = mg.Graph()
    c = g.constant(np.ones(4, np.float32), name="c")
    v = g.variable(np.zeros(4, np.float32), name="v")
    drop = g.dropout(c, 0.5, name="drop")
    with g.control_dependencies([g.assign(v, c, name="set")]):
        after = g.negative(c, name="after")
    big = g.broadcast(c, [1024, 512, 4], name="big")  # 8 MiB: above the folding limit
    plan, steps, targets = _plain_steps(g, {}, [drop, after, big])
    out, folded = passes.constant_folding(steps, targets)
    assert not folded
    out, folded = passes.constant_folding(steps, targets, limit=1 << 30)
    assert [o.name for o in folded.values()] == ["big"]


def test_dead_code_elimination_keeps_effects_targets_and_control_dependencies():
    g = mg.Graph()
    x = g.placeholder([2], name="x")
    g.variable(np.zeros(2, np.float32), name="v")
    dep = g.negative(x, name="dep")
    with g.control_dependencies([dep]):
        y = g.absolute(x, name="y")
    plan, steps, targets = _plain_steps(g, {x: np.ones(2, np.float32)}, [y])
    assert [s.op.name for s in passes.dead_code_elimination(steps, targets)] == [s.op.name for s in steps]
    orphan = dataclasses.replace(steps[0], op=g.constant(1.0, name="orphan").operation, inputs=(), in_types=(),
                                 outputs=(99,), ops=())
    kept = passes.dead_code_elimination(steps + [orphan], targets)
    assert "orphan" not in [s.op.name for s in kept]
    assert [o.name for o in g.compile({x: mg.ShapedType([2])}, [y]).plan.pruned] == ["v"]


def test_elementwise_fusion_alone():
    g = mg.Graph()
    x = g.placeholder([4, 3], name="x")
    row = g.placeholder([3], name="row")
    shared = g.exponent(x, name="shared")  # two consumers: not an intermediate of one group
    a = g.multiplication(shared, 2.0, name="a")
    b = g.addition(shared, g.negative(row, name="nrow"), name="b")  # nrow has shape [3]: an external input
    t = g.tanh(a, name="t")  # a target: not fused into its consumer
    out = g.subtraction(t, b, name="out")
    m = g.reduction_sum(out, [1], name="sum")  # not elementwise
    plan, steps, targets = _plain_steps(g, {x: np.ones((4, 3), np.float32), row: np.ones(3, np.float32)}, [m, t])
    fused_steps = passes.elementwise_fusion(steps, targets, NUMPY_FUSIBLE)
    kernels = [s.kernel for s in fused_steps]
    assert "fused_elementwise(multiplication+tanh)" in kernels  # a, t
    assert "fused_elementwise(addition+subtraction)" in kernels  # b, out
    assert "exponent" in kernels and "negative" in kernels and "reduction_sum" in kernels
    assert passes.elementwise_fusion(steps, targets, frozenset()) == steps  # no fusible ops: no fusion
    only_add = passes.elementwise_fusion(steps, targets, frozenset({"addition", "subtraction"}))
    assert "fused_elementwise(addition+subtraction)" in [s.kernel for s in only_add]
    assert "fused_elementwise(multiplication+tanh)" not in [s.kernel for s in only_add]


def test_buffer_planning_runs_last_and_frees_fused_inputs():
    g, x, y = _dense()
    plan = build_plan(g, {x: mg.ShapedType([4, 3])}, [y], [], fusible_ops=NUMPY_FUSIBLE)
    assert plan.passes[-2:] == ("elementwise_fusion", "plan_buffers")
    fused_step = plan.steps[-1]
    assert fused_step.fused and set(fused_step.free) == set(fused_step.inputs) and fused_step.reuse is None


def test_build_plan_without_fusible_ops_does_not_fuse():
    g, x, y = _dense()
    plan = build_plan(g, {x: mg.ShapedType([4, 3])}, [y], [])
    assert not any(s.program for s in plan.steps) and "elementwise_fusion" not in plan.passes


# ------------------------------------------------------------------------------ Plan.check
def _fused_plan():
    g, x, y = _dense()
    return build_plan(g, {x: mg.ShapedType([4, 3])}, [y], [], fusible_ops=NUMPY_FUSIBLE)


def _broken(plan, i, **kw):
    steps = list(plan.steps)
    steps[i] = dataclasses.replace(steps[i], **kw)
    return dataclasses.replace(plan, steps=steps)


def test_plan_check_accepts_what_build_plan_makes():
    _fused_plan().check()
    g, feeds, outs, ops = every_op_graph()
    build_plan(g, _types(feeds), outs, ops, fusible_ops=NUMPY_FUSIBLE).check()


@pytest.mark.parametrize("how,match", [
    ("read_before_write", "reads slot .* before any step writes it"),
    ("written_twice", "already written by step"),
    ("read_after_free", "freed at step 0"),
    ("freed_target", "a target's"),
    ("arg_out_of_range", r"reads value 9"),
    ("arg_from_the_future", r"program\[0\].*reads value 3"),
    ("not_elementwise", "not an elementwise op"),
    ("two_consumers", "read by 2 later ops"),
    ("ops_mismatch", "are not the step's ops"),
])
def test_plan_check_catches_broken_plans(how, match):
    plan = _fused_plan()
    last = len(plan.steps) - 1
    st = plan.steps[last]
    prog = list(st.program)
    if how == "read_before_write":
        bad = _broken(plan, 0, inputs=(st.outputs[0],))
    elif how == "written_twice":
        bad = _broken(plan, 1, outputs=plan.steps[0].outputs)
    elif how == "read_after_free":
        bad = _broken(plan, 0, free=plan.steps[0].outputs)
    elif how == "freed_target":
        bad = _broken(plan, last, free=st.free + st.outputs)
    elif how == "arg_out_of_range":
        prog[2] = (prog[2][0], (9,), prog[2][2])
        bad = _broken(plan, last, program=tuple(prog))
    elif how == "arg_from_the_future":
        prog[0] = (prog[0][0], (3, 1), prog[0][2])
        bad = _broken(plan, last, program=tuple(prog))
    elif how == "not_elementwise":
        g = st.op.graph
        sm = g.softmax(g.placeholder([4, 3], name="p"), 1).operation
        prog[1] = (sm, prog[1][1], prog[1][2])
        bad = _broken(plan, last, program=tuple(prog), ops=tuple(o for o, _, _ in prog))
    elif how == "two_consumers":
        prog[2] = (prog[2][0], (4, 3), prog[2][2])  # relu reading add and mul: mul has two consumers
        bad = _broken(plan, last, program=tuple(prog))
    else:
        bad = _broken(plan, last, ops=st.ops[::-1])
    with pytest.raises(mg.PlanError, match=match) as e:
        bad.check()
    assert "plan step" in str(e.value)
    assert isinstance(e.value, mg.ExecutionError)


# ------------------------------------------------------------------------------ same bits, fused or not
def _case_dtypes(op):
    c = ELEMENTWISE[op]
    if c.bools:
        return ["bool"]
    if c.integer:
        return ["int32"]
    return ["float32", "float16"] + (["int32"] if c.ints else [])


CASES = [(op, dt) for op in ELEMENTWISE for dt in _case_dtypes(op)]


def _values(rng, op, dt, shapes):
    out = []
    for (lo, hi), shape in zip(input_domains(op), shapes):
        if dt == "bool":
            out.append(rng.integers(0, 2, shape).astype(bool))
        elif dt == "int32":
            out.append(rng.integers(int(np.floor(lo)), int(np.ceil(hi)) + 1, shape).astype(np.int32))
        else:
            out.append(rng.uniform(lo, hi, shape).astype(dt))
    return out


def _op_graph(op, dt, shapes):
    """op(pre(a), pre(b), ...) then post: pre and post are exact identities (two negations, two
    NOTs), so the fused step holds the op with neighbours on both sides; a broadcast input's pre
    has another shape and stays out of the main group."""
    g = mg.Graph()
    phs = [g.placeholder(list(s), mg.as_dtype(dt), name=f"in{i}") for i, s in enumerate(shapes)]
    twice = (lambda t: g.logical_not(g.logical_not(t))) if dt == "bool" else (lambda t: g.negative(g.negative(t)))
    r = getattr(g, op)(*[twice(p) for p in phs])
    post = g.logical_not(g.logical_not(r)) if r.dtype == mg.bool else g.negative(g.negative(r))
    return g, phs, post


@pytest.mark.parametrize("op,dt", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_every_elementwise_case_fused_equals_unfused_bitwise_on_numpy(op, dt, rng, monkeypatch):
    monkeypatch.setattr(fused, "BLOCK_ELEMENTS", 1000)  # several blocks and a tail
    n = ELEMENTWISE[op].arity
    for shapes in ([(37, 29)] * n, [(37, 29)] + [(29,)] * (n - 1), [(37, 1, 5)] + [(1, 29, 5)] * (n - 1)):
        g, phs, post = _op_graph(op, dt, shapes)
        feeds = dict(zip(phs, _values(rng, op, dt, shapes)))
        exe = g.compile(_types(feeds), [post])
        if op not in ("identity", "stop_gradient"):
            assert any(s.fused and r.operation in s.ops for s in exe.steps for r in [post]), exe.describe()
        got = exe.run(feeds)[0]
        want = g.compile(_types(feeds), [post], compilation_descriptor=PLAIN).run(feeds)[0]
        assert _same_bits(got, want), (op, dt, shapes)


def test_fused_blocks_on_the_thread_pool_compute_the_same_bits(rng, monkeypatch):
    monkeypatch.setattr(fused, "BLOCK_ELEMENTS", 257)
    monkeypatch.setattr(threads, "ELEMENTWISE_THRESHOLD", 1)
    monkeypatch.setattr(threads, "MIN_TASK_WORK", 1)
    monkeypatch.setattr(threads, "_explicit", 2)
    g = mg.Graph()
    x, b = g.placeholder([301, 17], name="x"), g.placeholder([17], name="b")
    y = g.select(g.greater_than(x, 0.0), g.sigmoid(g.addition(x, b)), g.tanh(x))
    feeds = {x: rng.standard_normal((301, 17)).astype(np.float32), b: rng.standard_normal(17).astype(np.float32)}
    before = threads.tasks_run()
    exe = g.compile(_types(feeds), [y])
    assert sum(s.fused for s in exe.steps) == 1
    got = exe.run(feeds)[0]
    assert threads.tasks_run() > before
    assert _same_bits(got, g.compile(_types(feeds), [y], compilation_descriptor=PLAIN).run(feeds)[0])


def test_numpy_fusible_ops_are_the_elementwise_ops():
    assert NUMPY_FUSIBLE == frozenset(t for t, d in OPS.items() if d.elementwise)
    assert not {"identity", "stop_gradient", "softmax"} & NUMPY_FUSIBLE


# ------------------------------------------------------------------------------ networks
def _run_both(g, feeds, targets, ops, backend, descs):
    """Each descriptor's results and variables after one run, from the same variables and draw."""
    saved = g.variable_store.values
    draws = g.random_draws
    out = []
    for d in descs:
        g.variable_store.restore(saved)
        g.random_draws = draws
        exe = g.compile(_types(feeds), targets, ops, backend=backend, compilation_descriptor=d)
        res = exe.run(feeds)
        out.append((exe, res, [np.asarray(g.variable_store.values[v]) for v in sorted(
            g.variable_store.values, key=lambda o: o.index)]))
    g.variable_store.restore(saved)
    return out


def _networks():
    g, feeds, outs, ops = every_op_graph()
    yield "every_op_graph", g, feeds, outs, ops
    x, labels = sixblock.data(2, 16, width=0.125)
    g, feeds, loss, steps = sixblock.build(x, labels, width=0.125)
    yield "sixblock", g, feeds, [loss], steps
    for model in ("small", "mobilenet_v2"):
        rng = np.random.default_rng(0)
        params = demo.MODELS[model][1](rng)
        g, xp, lp, _, logits, loss, steps = demo.training_graph(model, params)
        size = demo.MODELS[model][2]
        xv, yv, _ = demo.make_data(rng, 4, size)
        yield model, g, {xp: xv.astype(np.float32), lp: yv.astype(np.float32)}, [logits, loss], steps


NETWORKS = ["every_op_graph", "sixblock", "small", "mobilenet_v2"]
ADAM_NETWORKS = ("small", "mobilenet_v2")  # the demo's training graphs (an Adam step each)


@pytest.mark.parametrize("name", NETWORKS)
def test_networks_fused_equal_unfused(name, backend):
    _, g, feeds, targets, ops = next(n for n in _networks() if n[0] == name)
    (fexe, fres, fvars), (_, pres, pvars) = _run_both(g, feeds, targets, ops, backend,
                                                      [mg.CompilationDescriptor(), PLAIN])
    if backend == "numpy":
        assert any(s.fused for s in fexe.steps)
    pairs = list(zip(fres + fvars, pres + pvars))
    if backend != "numpy" and name in ADAM_NETWORKS:
        # Adam's first step divides a gradient by its own magnitude: where the gradient is zero in
        # exact arithmetic (MobileNetV2's batch-norm shifts feed only 1x1 convolutions and batch
        # norms, which remove them), it moves the variable by +-lr of rounding noise, which the
        # summation order of a fused kernel changes. There the gradients are compared instead,
        # within float32 rounding of the largest one.
        grads = g.gradients(targets[-1], g.trainable_variables, name="check")
        gts = [grads[t] for t in g.trainable_variables]
        (_, fg, _), (_, pg, _) = _run_both(g, feeds, gts, [], backend, [mg.CompilationDescriptor(), PLAIN])
        scale = max(float(np.max(np.abs(b))) for b in pg)
        for a, b in zip(fg, pg):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * scale)
        pairs = list(zip(fres, pres))
    for a, b in pairs:
        if backend == "numpy":
            assert _same_bits(a, b), name
        elif a.dtype.kind == "f":
            finite = np.abs(b[np.isfinite(b)])  # an inf in b must not make the tolerance inf
            np.testing.assert_allclose(a, b, rtol=2e-3 if a.dtype == np.float16 else 1e-4,
                                       atol=1e-5 * max(1.0, float(np.max(finite))) if finite.size else 0)
        else:
            np.testing.assert_array_equal(a, b)


def test_compare_backends_compiles_one_step_per_op(monkeypatch):
    seen = []
    real = mg.Graph.compile

    def spy(self, *a, **kw):
        seen.append(kw.get("compilation_descriptor"))
        return real(self, *a, **kw)
    monkeypatch.setattr(mg.Graph, "compile", spy)
    g, x, y = _dense()

    class Twin:  # a second numpy backend
        name = "numpy_twin"
        fusible_ops = NUMPY_FUSIBLE

        def available(self):
            return True, "always"

        def prepare(self, plan):
            assert not any(s.program for s in plan.steps)
            return NumpyBackend().prepare(plan)
    monkeypatch.setitem(registry._FACTORIES, "numpy_twin_compiler", Twin)
    monkeypatch.setattr(registry, "_INSTANCES", dict(registry._INSTANCES))
    report = mg.compare_backends(g, {x: np.ones((4, 3), np.float32)}, [y], backends=["numpy", "numpy_twin_compiler"])
    assert report.ok
    assert seen and all(d is not None and d.fusion is False and d.optimization_level == 0 for d in seen)


def test_step_is_a_dataclass_with_the_contract_fields():
    names = {f.name for f in dataclasses.fields(Step)}
    assert {"op", "inputs", "outputs", "in_types", "out_types", "free", "reuse", "ops", "program"} <= names


# ------------------------------------------------------------------------------ epilogue fusion
NUMPY_EPILOGUE = NumpyBackend.epilogue_ops


def _conv_net(rng, bias_shape=(1, 6, 1, 1)):
    """relu(conv(x, w) + b), a per-channel bias that broadcasts, and its gradient graph's mask."""
    g = mg.Graph()
    x = g.placeholder([2, 3, 9, 7], name="x")
    w = g.placeholder([6, 3, 3, 3], name="w")
    b = g.placeholder(list(bias_shape), name="b")
    desc = mg.Convolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    conv = g.convolution_2d(x, w, desc, name="conv")
    y = g.relu(g.addition(conv, b, name="bias"), name="relu")
    feeds = {x: rng.standard_normal((2, 3, 9, 7)).astype(np.float32),
             w: rng.standard_normal((6, 3, 3, 3)).astype(np.float32),
             b: rng.standard_normal(bias_shape).astype(np.float32)}
    return g, feeds, conv, y


def test_epilogue_fusion_alone(rng):
    g, feeds, conv, y = _conv_net(rng)
    plan, steps, targets = _plain_steps(g, feeds, [y])
    tails = passes.elementwise_fusion(steps, targets, NUMPY_FUSIBLE)
    out = passes.epilogue_fusion(tails, targets, NUMPY_EPILOGUE, NUMPY_FUSIBLE)
    (st,) = [s for s in out if s.program]
    assert st.type == "fused_epilogue" and st.kernel == "fused_epilogue(convolution_2d+addition+relu)"
    assert st.anchor is conv.operation and [o.name for o in st.ops] == ["conv", "bias", "relu"]
    slot = {s.op.name: s.outputs[0] for s in steps}
    assert st.inputs == (slot["x"], slot["w"], slot["b"]) and st.outputs == (slot["relu"],)
    assert [args for _, args, _ in st.program] == [(0, 1), (3, 2), (4,)]  # conv; conv + b; relu(sum)
    assert "convolution_2d" not in [s.kernel for s in out]
    assert passes.epilogue_fusion(tails, targets, frozenset(), NUMPY_FUSIBLE) == tails  # no anchors offered
    assert passes.epilogue_fusion(tails, targets, frozenset({"matrix_multiplication"}), NUMPY_FUSIBLE) == tails


def test_epilogue_fusion_leaves_a_shared_or_target_anchor_alone(rng):
    g, feeds, conv, y = _conv_net(rng)
    plan, steps, targets = _plain_steps(g, feeds, [y, conv])  # the convolution's result is a target
    out = passes.epilogue_fusion(passes.elementwise_fusion(steps, targets, NUMPY_FUSIBLE), targets,
                                 NUMPY_EPILOGUE, NUMPY_FUSIBLE)
    assert not any(s.anchor for s in out)
    g, feeds, conv, y = _conv_net(rng)
    z = g.reduction_sum(conv, [1], name="also")  # a second reader of the convolution's result
    plan, steps, targets = _plain_steps(g, feeds, [y, z])
    out = passes.epilogue_fusion(passes.elementwise_fusion(steps, targets, NUMPY_FUSIBLE), targets,
                                 NUMPY_EPILOGUE, NUMPY_FUSIBLE)
    assert not any(s.anchor for s in out)


def test_a_keeping_anchor_takes_its_first_reader_and_stores_its_result_too(rng):
    """An anchor of ``keeping_ops`` whose result two steps read joins the first as its epilogue;
    the fused step's outputs are the tail's and then the anchor's, which the later reader reads.
    A first reader that is no elementwise step, or no keeping ops, leaves the anchor alone."""
    g, feeds, conv, y = _conv_net(rng)
    z = g.reduction_sum(conv, [1], name="also")  # a second, later reader of the convolution's result
    plan, steps, targets = _plain_steps(g, feeds, [y, z])
    tails = passes.elementwise_fusion(steps, targets, NUMPY_FUSIBLE)
    out = passes.epilogue_fusion(tails, targets, NUMPY_EPILOGUE, NUMPY_FUSIBLE, frozenset({"convolution_2d"}))
    (st,) = [s for s in out if s.anchor is not None]
    slot = {s.op.name: s.outputs[0] for s in steps}
    assert st.kernel == "fused_epilogue(convolution_2d+addition+relu)"
    assert st.outputs == (slot["relu"], slot["conv"]) and st.out_types[1] == st.program[0][2]
    (also,) = [s for s in out if s.op.name == "also"]
    assert also.inputs == (slot["conv"],) and out.index(also) > out.index(st)
    assert passes.epilogue_fusion(tails, targets, NUMPY_EPILOGUE, NUMPY_FUSIBLE) == tails
    assert passes.epilogue_fusion(tails, targets, NUMPY_EPILOGUE, NUMPY_FUSIBLE, frozenset({"normalize"})) == tails
    g, feeds, conv, _ = _conv_net(rng)
    first = g.reduction_sum(conv, [1], name="first")  # the first reader is a reduction
    later = g.relu(conv, name="later")
    plan, steps, targets = _plain_steps(g, feeds, [first, later])
    names = [s.op.name for s in steps]
    assert names.index("first") < names.index("later")
    tails = passes.elementwise_fusion(steps, targets, NUMPY_FUSIBLE)
    assert passes.epilogue_fusion(tails, targets, NUMPY_EPILOGUE, NUMPY_FUSIBLE, frozenset({"convolution_2d"})) == tails


def test_plan_check_of_an_epilogue_step_that_keeps_its_anchor(rng):
    g, feeds, conv, y = _conv_net(rng)
    z = g.reduction_sum(conv, [1], name="also")
    plan = build_plan(g, _types(feeds), [y, z], [], fusible_ops=NUMPY_FUSIBLE, epilogue_ops=NUMPY_EPILOGUE,
                      epilogue_keeping_ops=frozenset({"convolution_2d"}))
    plan.check()
    i = next(i for i, s in enumerate(plan.steps) if s.anchor is not None)
    st = plan.steps[i]
    assert len(st.outputs) == 2
    with pytest.raises(mg.PlanError, match="second output is its anchor's"):
        _broken(plan, i, out_types=(st.out_types[0], mg.ShapedType([2, 6, 9, 1], mg.float32))).check()
    with pytest.raises(mg.PlanError, match="one output"):
        _broken(plan, i, outputs=st.outputs + (plan.num_slots + 1,), out_types=st.out_types + st.out_types[:1]).check()


def test_an_epilogue_tail_may_read_the_anchor_twice(rng, backend):
    """Hard-swish after a convolution (MobileNetV3), ``x * clamp(x + 3, 0, 6) / 6``, reads the
    convolution's result twice: one epilogue step, the unfused plan's bits on numpy, within
    float32 rounding elsewhere."""
    g = mg.Graph()
    x, w = g.placeholder([2, 3, 6, 5], name="x"), g.placeholder([4, 3, 3, 3], name="w")
    c = g.convolution_2d(x, w, mg.Convolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME), name="conv")
    hs = g.division(g.multiplication(c, g.clamp(g.addition(c, 3.0), g.constant(0.0), g.constant(6.0))), 6.0, name="hs")
    feeds = {x: rng.standard_normal([2, 3, 6, 5]).astype(np.float32),
             w: rng.standard_normal([4, 3, 3, 3]).astype(np.float32)}
    exe = g.compile(_types(feeds), [hs], backend=backend)
    (st,) = [s for s in exe.steps if s.fused]
    assert st.anchor is c.operation and sum(0 in [a - len(st.inputs) for a in args] for _, args, _ in st.program) == 2
    got = exe.run(feeds)[0]
    want = g.compile(_types(feeds), [hs], backend=backend, compilation_descriptor=PLAIN).run(feeds)[0]
    if backend == "numpy":
        assert _same_bits(got, want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_epilogue_fusion_needs_the_anchors_shape(rng):
    """A tail that broadcasts the anchor's result to a larger shape stays a step of its own."""
    g, feeds, conv, _ = _conv_net(rng)
    big = g.placeholder([3, 2, 6, 9, 7], name="big")
    z = g.addition(conv, big, name="wider")
    feeds[big] = np.ones((3, 2, 6, 9, 7), np.float32)
    plan = build_plan(g, _types(feeds), [z], [], fusible_ops=NUMPY_FUSIBLE, epilogue_ops=NUMPY_EPILOGUE)
    assert not any(s.anchor for s in plan.steps) and "epilogue_fusion" in plan.passes


def test_plan_check_catches_a_broken_epilogue(rng):
    g, feeds, conv, y = _conv_net(rng)
    plan = build_plan(g, _types(feeds), [y], [], fusible_ops=NUMPY_FUSIBLE, epilogue_ops=NUMPY_EPILOGUE)
    i = next(i for i, s in enumerate(plan.steps) if s.anchor is not None)
    st = plan.steps[i]
    prog = list(st.program)
    sm = g.softmax(g.placeholder([2, 6, 9, 7], name="p"), 1).operation
    second = prog[:1] + [(sm, prog[1][1], prog[1][2])] + prog[2:]  # a second non-elementwise op
    with pytest.raises(mg.PlanError, match=r"program\[1\] is softmax .*only program\[0\] may be"):
        _broken(plan, i, program=tuple(second), ops=tuple(o for o, _, _ in second)).check()
    lone = prog[:1]
    with pytest.raises(mg.PlanError, match="anchor .* and a tail"):
        _broken(plan, i, program=tuple(lone), ops=(st.anchor,), op=st.anchor).check()
    wrong = [(prog[0][0], prog[0][1], mg.ShapedType([2, 6, 9, 1], mg.float32))] + prog[1:]
    with pytest.raises(mg.PlanError, match="output shape"):
        _broken(plan, i, program=tuple(wrong)).check()


def _anchor_cases(rng):
    """(name, graph, feeds, target) with a tail on each anchor kind of the numpy backend."""
    g, feeds, _, y = _conv_net(rng)
    yield "convolution_2d", g, feeds, y
    g = mg.Graph()
    a, b = g.placeholder([3, 5, 4], name="a"), g.placeholder([4, 6], name="b")
    yield "matrix_multiplication", g, {a: rng.standard_normal((3, 5, 4)).astype(np.float32),
                                       b: rng.standard_normal((4, 6)).astype(np.float32)}, \
        g.clamp(g.matrix_multiplication(a, b), 0.0, 6.0)
    g = mg.Graph()
    x, w = g.placeholder([2, 4, 8, 8], name="x"), g.placeholder([1, 4, 3, 3], name="w")
    dy = g.placeholder([2, 4, 8, 8], name="dy")
    d = mg.DepthwiseConvolution2DOpDescriptor(padding_style=mg.PaddingStyle.TF_SAME)
    y = g.relu(g.depthwise_convolution_2d(x, w, d))
    dx = g.depthwise_convolution_2d_data_gradient(dy, w, [2, 4, 8, 8], d)
    masked = g.select(g.greater_than(y, 0.0), dx, 0.0)
    dw = g.depthwise_convolution_2d_weights_gradient(dy, x, [1, 4, 3, 3], d)
    sgd = g.subtraction(w, g.multiplication(dw, 0.01))
    fd = {x: rng.standard_normal((2, 4, 8, 8)).astype(np.float32), w: rng.standard_normal((1, 4, 3, 3)).astype(np.float32),
          dy: rng.standard_normal((2, 4, 8, 8)).astype(np.float32)}
    yield "depthwise_trio", g, fd, [y, masked, sgd]
    g = mg.Graph()
    x = g.placeholder([4, 3, 5, 5], name="x")
    mean, var = g.mean(x, [0, 2, 3]), g.variance(x, [0, 2, 3])
    n = g.normalize(x, mean, var, g.constant(np.full((1, 3, 1, 1), 1.5, np.float32)), None, 1e-5)
    yield "normalize", g, {x: rng.standard_normal((4, 3, 5, 5)).astype(np.float32)}, g.relu(n)


@pytest.mark.parametrize("case", ["convolution_2d", "matrix_multiplication", "depthwise_trio", "normalize"])
def test_epilogue_steps_compute_the_unfused_bits_on_numpy(case, rng):
    name, g, feeds, target = next(c for c in _anchor_cases(rng) if c[0] == case)
    targets = target if isinstance(target, list) else [target]
    exe = g.compile(_types(feeds), targets)
    anchored = [s for s in exe.steps if s.anchor is not None]
    assert anchored and all(s.type == "fused_epilogue" for s in anchored), exe.describe()
    if case == "depthwise_trio":
        assert {s.anchor.type for s in anchored} == {"depthwise_convolution_2d", "depthwise_convolution_2d_data_gradient",
                                                     "depthwise_convolution_2d_weights_gradient"}
    got = exe.run(feeds)
    want = g.compile(_types(feeds), targets, compilation_descriptor=PLAIN).run(feeds)
    for a, b in zip(got, want):
        assert _same_bits(a, b), case


def test_the_six_block_step_fuses_every_activation_and_update():
    x, labels = sixblock.data(2, 16, width=0.125)
    g, feeds, loss, steps = sixblock.build(x, labels, width=0.125)
    exe = g.compile(_types(feeds), [loss], steps)
    kinds = [s.kernel for s in exe.steps]
    assert kinds.count("fused_epilogue(convolution_2d+relu)") == 6
    assert kinds.count("fused_epilogue(depthwise_convolution_2d+relu)") == 6
    assert kinds.count("fused_epilogue(convolution_2d_weights_gradient+multiplication+subtraction)") == 6
    assert "relu" not in kinds and "convolution_2d" not in kinds


# ------------------------------------------------------------------------------ sibling fusion
BN_SIBLINGS = frozenset({("mean", "variance"), ("normalization_beta_gradient", "normalization_gamma_gradient")})


def _statistics_graph():
    g = mg.Graph()
    x = g.placeholder([2, 3, 4, 4], name="x")
    dy = g.placeholder([2, 3, 4, 4], name="dy")
    axes = [0, 2, 3]
    m = g.mean(x, axes, name="m")
    v = g.variance(x, axes, name="v")
    gg = g.normalization_gamma_gradient(dy, x, m, v, axes, 1e-5, name="gg")
    bg = g.normalization_beta_gradient(dy, x, axes, name="bg")
    dx = g.normalization_gradient(dy, x, m, v, None, gg, bg, axes, 1e-5, name="dx")
    feeds = {x: np.ones((2, 3, 4, 4), np.float32), dy: np.ones((2, 3, 4, 4), np.float32)}
    return g, feeds, (x, dy, m, v, gg, bg, dx)


def test_sibling_fusion_merges_a_mean_with_its_variance_and_beta_with_gamma_gradient():
    g, feeds, (x, dy, m, v, gg, bg, dx) = _statistics_graph()
    plan, steps, targets = _plain_steps(g, feeds, [dx])
    out = passes.sibling_fusion(steps, targets, BN_SIBLINGS)
    slot = {s.op.name: s.outputs[0] for s in steps}
    fused = [s for s in out if s.type == passes.SIBLINGS]
    assert [s.kernel for s in fused] == ["fused_siblings(mean+variance)",
                                         "fused_siblings(normalization_beta_gradient+normalization_gamma_gradient)"]
    a, b = fused
    assert a.op is v.operation and a.ops == (m.operation, v.operation) and a.fused
    assert a.outputs == (slot["m"], slot["v"]) and a.inputs == (slot["x"],)
    assert b.op is gg.operation and b.outputs == (slot["bg"], slot["gg"])
    assert b.inputs == (slot["dy"], slot["x"], slot["m"], slot["v"])  # the gamma gradient's
    assert len(out) == len(steps) - 2
    assert passes.sibling_fusion(steps, targets, frozenset()) == steps
    # through build_plan, checked; the listing names the kernel and its ops
    plan = build_plan(g, _types(feeds), [dx, m], [], sibling_ops=BN_SIBLINGS)
    assert "sibling_fusion" in plan.passes and sum(s.type == passes.SIBLINGS for s in plan.steps) == 2
    plan.check()
    lines = describe_plan(build_plan(g, _types(feeds), [dx], [], sibling_ops=BN_SIBLINGS))
    assert any("= fused_siblings(mean+variance)(x)" in ln and "ops: m, v" in ln for ln in lines)
    assert not any("#" in ln for ln in lines)  # every freed slot named: m's too
    assert all(s.type != passes.SIBLINGS for s in build_plan(g, _types(feeds), [dx], [], sibling_ops=BN_SIBLINGS,
                                                            fusion=False).steps)


def test_sibling_fusion_reads_the_axes_of_the_paired_ops_only():
    """An op whose ``axes`` count in its output's rank (expand_dims) stays as it is beside a mean
    and variance that merge: its axes are not read against its input."""
    g = mg.Graph()
    x = g.placeholder([2, 3, 4], name="x")
    y = g.expand_dims(x, axes=[3], name="y")
    m, v = g.mean(x, [1], name="m"), g.variance(x, [1], name="v")
    feeds = {x: np.arange(24, dtype=np.float32).reshape(2, 3, 4)}
    plan = build_plan(g, _types(feeds), [y, m, v], [], sibling_ops=BN_SIBLINGS)
    plan.check()
    assert [s.kernel for s in plan.steps if s.op.type != "placeholder"] == ["expand_dims",
                                                                           "fused_siblings(mean+variance)"]


def test_sibling_fusion_needs_the_same_data_and_axes_and_a_safe_place():
    g = mg.Graph()
    x = g.placeholder([4, 3], name="x")
    z = g.placeholder([4, 3], name="z")
    m = g.mean(x, [0], name="m")
    v_other_axes = g.variance(x, [1], name="v1")
    v_other_data = g.variance(z, [0], name="v2")
    feeds = {x: np.ones((4, 3), np.float32), z: np.ones((4, 3), np.float32)}
    _, steps, targets = _plain_steps(g, feeds, [m, v_other_axes, v_other_data])
    assert passes.sibling_fusion(steps, targets, BN_SIBLINGS) == steps
    # the beta gradient read before the gamma gradient's statistics are computed: neither place
    # has both what the merged step reads and what reads it
    g = mg.Graph()
    x, dy = g.placeholder([4, 3], name="x"), g.placeholder([4, 3], name="dy")
    bg = g.normalization_beta_gradient(dy, x, [0], name="bg")
    y = g.multiplication(bg, bg, name="y")
    m, v = g.mean(x, [0], name="m"), g.variance(x, [0], name="v")
    gg = g.normalization_gamma_gradient(dy, x, m, v, [0], 1e-5, name="gg")
    _, steps, targets = _plain_steps(g, {x: np.ones((4, 3), np.float32), dy: np.ones((4, 3), np.float32)}, [y, gg])
    out = passes.sibling_fusion(steps, targets, BN_SIBLINGS)
    assert [s.kernel for s in out if s.type == passes.SIBLINGS] == ["fused_siblings(mean+variance)"]
    # the mean read between the two: the merged step takes the earlier place
    g = mg.Graph()
    x = g.placeholder([4, 3], name="x")
    m = g.mean(x, [0], name="m")
    y = g.subtraction(x, m, name="y")
    v = g.variance(x, [0], name="v")
    _, steps, targets = _plain_steps(g, {x: np.ones((4, 3), np.float32)}, [y, v])
    out = passes.sibling_fusion(steps, targets, BN_SIBLINGS)
    assert [s.kernel for s in out][-2:] == ["fused_siblings(mean+variance)", "subtraction"]


def test_sibling_fusion_order_is_the_pairs_not_the_plans():
    """The gamma gradient built before the beta gradient: still (beta, gamma), at a safe place."""
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    dy = g.placeholder([2, 3], name="dy")
    m, v = g.mean(x, [0], name="m"), g.variance(x, [0], name="v")
    gg = g.normalization_gamma_gradient(dy, x, m, v, [0], 1e-5, name="gg")
    bg = g.normalization_beta_gradient(dy, x, [0], name="bg")
    feeds = {x: np.ones((2, 3), np.float32), dy: np.ones((2, 3), np.float32)}
    plan, steps, targets = _plain_steps(g, feeds, [bg, gg])
    out = passes.sibling_fusion(steps, targets, BN_SIBLINGS)
    (b,) = [s for s in out if "gamma" in s.kernel]
    assert [o.name for o in b.ops] == ["bg", "gg"]


def test_plan_check_catches_a_broken_siblings_step():
    g, feeds, (x, dy, m, v, gg, bg, dx) = _statistics_graph()
    plan = build_plan(g, _types(feeds), [dx], [], sibling_ops=BN_SIBLINGS)
    i = next(k for k, s in enumerate(plan.steps) if s.type == passes.SIBLINGS)
    st = plan.steps[i]
    with pytest.raises(mg.PlanError, match="one output per op"):
        _broken(plan, i, outputs=st.outputs[:1], out_types=st.out_types[:1]).check()
    with pytest.raises(mg.PlanError, match="last op must be Step.op"):
        _broken(plan, i, ops=st.ops[::-1]).check()
