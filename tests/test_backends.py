"""The backend registry: what works here and why the rest does not, clear errors for unknown or
unavailable backends, kernels missing at compile time (never a silent fallback), and third-party
backends registered at run time or found through the ``minigraph.backends`` entry-point group.
The webgpu backend itself is in test_webgpu_backend.py."""
import importlib.metadata
import os
import sys
import textwrap

import numpy as np
import pytest

import minigraph as mg
import minigraph.backends as registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------------------------- availability
def test_available_backends_reports_what_works_and_why_not():
    avail = mg.available_backends()
    assert "numpy" in avail
    assert all(isinstance(n, str) for n in avail)
    if sys.platform != "darwin":
        assert "metal" not in avail
        text = str(avail) + repr(avail)
        assert "macOS" in text and "webgpu" in text


def test_available_backends_also_reads_as_a_mapping():
    avail = mg.available_backends()
    assert avail["numpy"] and avail["numpy"].available
    assert list(avail)[0] == avail[0]
    if sys.platform != "darwin":
        st = avail["metal"]
        assert not st and st.available is False and "macOS" in st.reason
        assert dict(avail.items())["metal"] == st
    with pytest.raises(KeyError):
        avail["no_such_backend"]


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(mg.BackendUnavailableError, match="unknown backend 'cuda'.*numpy"):
        mg.get_backend("cuda")
    avail = mg.available_backends()
    assert "numpy" in avail
    g = mg.Graph()
    x = g.placeholder([1], mg.float32, name="x")
    y = g.negative(x)
    np.testing.assert_array_equal(g.run({x: np.ones(1, np.float32)}, [y], backend="numpy")[y], [-1])
    with pytest.raises(mg.BackendUnavailableError) as ei:
        g.run({x: np.ones(1, np.float32)}, [y], backend="no-such-backend")
    assert isinstance(ei.value, mg.MiniGraphError)
    assert "numpy" in str(ei.value) and "no-such-backend" in str(ei.value)
    with pytest.raises(mg.BackendUnavailableError):
        g.compile({x: mg.ShapedType([1], mg.float32)}, [y], backend="no-such-backend")
    with pytest.raises(mg.BackendUnavailableError):
        g.run({x: np.ones(1, np.float32)}, [x], backend="nope")
    with pytest.raises(mg.MiniGraphError) as ei:
        g.run({x: np.ones(1, np.float32)}, [g.relu(x)], backend="cuda")
    assert "cuda" in str(ei.value) and "numpy" in str(ei.value)


@pytest.mark.skipif(sys.platform == "darwin", reason="this machine may have Metal")
def test_metal_is_unavailable_off_macos_and_says_to_use_webgpu():
    avail = mg.available_backends()
    assert "metal" not in avail
    with pytest.raises(mg.BackendUnavailableError, match="Metal"):
        mg.get_backend("metal")
    g = mg.Graph()
    x = g.placeholder(shape=(2,), dtype=mg.float32, name="x")
    y = g.relu(x)
    for call in (lambda: g.run({x: np.ones(2, np.float32)}, [y], backend="metal"),
                 lambda: g.run(feeds={x: np.ones(2, np.float32)}, target_tensors=[y], backend="metal"),
                 lambda: g.compile({x: mg.ShapedType((2,), mg.float32)}, [y], backend="metal"),
                 lambda: mg.get_backend("metal")):
        with pytest.raises(mg.BackendUnavailableError) as ei:
            call()
        msg = str(ei.value)
        assert "Metal" in msg and "macOS" in msg and "webgpu" in msg and "same kernels" in msg


def test_require_backends_env_turns_a_missing_backend_into_a_failure(run_python):
    me = os.path.relpath(__file__, ROOT)
    k = "test_available_backends_reports_what_works_and_why_not"
    ok = run_python("-m", "pytest", "-q", "-p", "no:cacheprovider", f"{me}::{k}",
                    env={"MINIGRAPH_REQUIRE_BACKENDS": "numpy"})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = run_python("-m", "pytest", "-q", "-p", "no:cacheprovider", f"{me}::{k}",
                     env={"MINIGRAPH_REQUIRE_BACKENDS": "numpy,no_such_backend_xyz"})
    assert bad.returncode != 0
    assert "no_such_backend_xyz" in bad.stdout + bad.stderr


# ------------------------------------------------------------------------ missing kernels: compile time
_MISSING_KERNEL = textwrap.dedent("""
    import numpy as np, minigraph as mg
    from minigraph.ops.registry import defop
    @defop("kernelless_twice", swift="kernellessTwice(_:name:)", objc="kernellessTwice:name:", inputs=("tensor",),
           infer=lambda ts, attrs: [ts[0]], family="elementwise", differentiable=False, attrs=())
    def kernelless_twice(g, tensor, name=None):
        return g.add_op("kernelless_twice", [g.as_tensor(tensor, "kernelless_twice")], {}, name).output
    g = mg.Graph()
    x = g.placeholder(shape=(2,), dtype=mg.float32, name="x")
    y = kernelless_twice(g, x, name="my_op_7")
    try:
        g.compile({x: mg.ShapedType((2,), mg.float32)}, [y], backend="BACKEND")
    except mg.KernelMissingError as e:
        assert "my_op_7" in str(e) and "kernelless_twice" in str(e) and "(built at <string>:" in str(e), e
        print("OK")
    """)


def test_missing_kernel_is_a_compile_time_error_naming_the_op(backend, run_python):
    """An op with no kernel on the chosen backend fails when compiled, naming the op and where it was built."""
    r = run_python("-c", _MISSING_KERNEL.replace("BACKEND", backend))
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr


# ---------------------------------------------------------------------------- third-party backends
class _Toy:
    """A third-party backend: relu only (anything else: KernelMissingError)."""

    name = "toy"

    def available(self):
        return True, ""

    def prepare(self, plan):
        fns = []
        for st in plan.steps:
            if st.op.type == "placeholder":
                fns.append(None)
            elif st.op.type == "relu":
                fns.append(lambda a: np.maximum(a, 0))
            else:
                raise mg.KernelMissingError(f"toy backend: no kernel for {st.op.type} op {st.op.name!r}")

        def runner(feeds, variables):
            slots = {}
            for (t, slot, _), v in zip(plan.feeds, feeds):
                slots[slot] = v
            for st, fn in zip(plan.steps, fns):
                if fn is not None:
                    slots[st.outputs[0]] = fn(*(slots[i] for i in st.inputs))
            return [slots[s] for _, s in plan.targets], {}

        return runner


class _Minimal:
    """No name, no available(): only prepare (delegating to numpy)."""

    def prepare(self, plan):
        return mg.get_backend("numpy").prepare(plan)


class _BoolAvailable(_Minimal):
    def available(self):
        return False


def _fresh_registry(monkeypatch):
    """Registry tables restored after the test, without any 'tiny' registered elsewhere (the
    docs register their own example backend under that name)."""
    factories = {k: v for k, v in registry._FACTORIES.items() if not k.startswith("tiny")}
    instances = {k: v for k, v in registry._INSTANCES.items() if not k.startswith("tiny")}
    monkeypatch.setattr(registry, "_FACTORIES", factories)
    monkeypatch.setattr(registry, "_INSTANCES", instances)


def test_register_backend_at_run_time(monkeypatch, rng):
    """mg.register_backend makes a backend usable by name; what it cannot run fails at compile time."""
    from example_backend import TinyBackend

    _fresh_registry(monkeypatch)
    mg.register_backend("tiny2", TinyBackend)
    g = mg.Graph()
    y = g.addition(g.constant(np.float32([1, 2])), 1.0)
    np.testing.assert_array_equal(g.run({}, [y], backend="tiny2")[y], [2, 3])
    mg.register_backend("toy_relu", _Toy)
    assert "toy_relu" in mg.available_backends()
    g = mg.Graph()
    x = g.placeholder(shape=(3, 2), dtype=mg.float32, name="x")
    y = g.relu(x, name="r")
    xv = f32(rng, 3, 2)
    np.testing.assert_array_equal(g.run({x: xv}, [y], backend="toy_relu")[y], np.maximum(xv, 0))
    z = g.exponent(x, name="ex")
    with pytest.raises(mg.KernelMissingError, match="ex"):
        g.compile({x: mg.ShapedType((3, 2), mg.float32)}, [z], backend="toy_relu")


def test_lenient_backend_interface():
    """A backend without a name or available() is available; available() may return a bare bool."""
    mg.register_backend("minimal_be", _Minimal)
    mg.register_backend("bool_be", _BoolAvailable)
    avail = mg.available_backends()
    assert "minimal_be" in avail and "bool_be" not in avail
    assert "bool_be" in avail.unavailable
    g = mg.Graph()
    x = g.placeholder(shape=(2,), dtype=mg.float32, name="x")
    y = g.negative(x)
    assert g.run({x: np.array([1, 2], np.float32)}, [y], backend="minimal_be")[y].tolist() == [-1, -2]
    with pytest.raises(mg.BackendUnavailableError):
        g.run({x: np.array([1, 2], np.float32)}, [y], backend="bool_be")


def _entry_points_of(monkeypatch, *eps):
    """Make importlib.metadata report ``eps`` as the ``minigraph.backends`` entry-point group."""
    real = importlib.metadata.entry_points

    def fake(**kw):
        if kw.get("group") == "minigraph.backends":
            return importlib.metadata.EntryPoints(eps)
        return real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", fake)


def test_third_party_backend_from_an_entry_point(monkeypatch, rng):
    """A package that declares ``[project.entry-points."minigraph.backends"] tiny = ...`` is found."""
    group = "minigraph.backends"
    _entry_points_of(monkeypatch, importlib.metadata.EntryPoint(name="tiny", value="example_backend:TinyBackend",
                                                                group=group),
                     importlib.metadata.EntryPoint(name="toy_ep", value=f"{__name__}:_Toy", group=group))
    _fresh_registry(monkeypatch)
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    assert "tiny" in mg.available_backends()
    g = mg.Graph()
    a, b = g.placeholder([2, 3], name="a"), g.placeholder([3], name="b")
    y = g.reduction_sum(g.negative(g.multiplication(g.addition(a, b), 2.0)), axes=[1])
    feeds = {a: rng.uniform(-1, 1, (2, 3)).astype(np.float32), b: rng.uniform(-1, 1, 3).astype(np.float32)}
    np.testing.assert_allclose(g.run(feeds, [y], backend="tiny")[y], g.run(feeds, [y], backend="numpy")[y], rtol=1e-6)
    with pytest.raises(mg.KernelMissingError, match="softmax op 'sm'.*tiny backend"):
        g.run(feeds, [g.softmax(a, name="sm")], backend="tiny")
    assert "toy_ep" in mg.available_backends()
    g = mg.Graph()
    x = g.placeholder(shape=(2,), dtype=mg.float32, name="x")
    y = g.relu(x)
    np.testing.assert_array_equal(g.run({x: np.array([-1, 2], np.float32)}, [y], backend="toy_ep")[y], [0, 2])


def test_entry_point_to_the_builtin_numpy_backend_class(monkeypatch):
    """The simplest third-party backend: an entry point naming an existing class."""
    _entry_points_of(monkeypatch, importlib.metadata.EntryPoint(
        name="numpy_again", value="minigraph.backends.numpy:NumpyBackend", group="minigraph.backends"))
    assert "numpy_again" in mg.available_backends()
    g = mg.Graph()
    x = g.placeholder(shape=(3,), dtype=mg.float32, name="x")
    y = g.square(x)
    assert g.run({x: np.array([1, -2, 3], np.float32)}, [y], backend="numpy_again")[y].tolist() == [1, 4, 9]


def test_entry_point_group_from_an_installed_distribution(tmp_path, run_python):
    pkg = tmp_path / "site"
    pkg.mkdir()
    (pkg / "toybackend.py").write_text(textwrap.dedent("""
        import numpy as np
        class ToyBackend:
            name = "toyd"
            def available(self):
                return True, ""
            def prepare(self, plan):
                def runner(feeds, variables):
                    vals = {slot: v for (t, slot, _), v in zip(plan.feeds, feeds)}
                    for st in plan.steps:
                        if st.op.type == "relu":
                            vals[st.outputs[0]] = np.maximum(vals[st.inputs[0]], 0)
                    return [vals[s] for _, s in plan.targets], {}
                return runner
        """))
    di = pkg / "toybackend-1.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text("Metadata-Version: 2.1\nName: toybackend\nVersion: 1.0\n")
    (di / "entry_points.txt").write_text("[minigraph.backends]\ntoyd = toybackend:ToyBackend\n")
    code = ("import numpy as np, minigraph as mg\n"
            "assert 'toyd' in mg.available_backends(), mg.available_backends()\n"
            "g = mg.Graph(); x = g.placeholder(shape=(2,), dtype=mg.float32, name='x'); y = g.relu(x)\n"
            "print(g.run({x: np.array([-1, 3], np.float32)}, [y], backend='toyd')[y].tolist())\n")
    r = run_python("-c", code, env={"PYTHONPATH": f"{pkg}{os.pathsep}{ROOT}"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0.0, 3.0]"


# ------------------------------------------------------------------ the plan's memory contract
def _follower(monkeypatch):
    from example_backend import PlanFollowingBackend

    _fresh_registry(monkeypatch)
    mg.register_backend("follower", PlanFollowingBackend)


def _train(backend, build, desc, n=3):
    """``n`` runs of a training step on ``backend``: (losses, variables' values after each run)."""
    g, feeds, loss, updates = build()
    exe = g.compile({t: mg.ShapedType(v.shape, mg.as_dtype(v.dtype)) for t, v in feeds.items()}, [loss],
                    target_operations=updates, backend=backend, compilation_descriptor=desc)
    kept = {t: v.copy() for t, v in feeds.items()}
    out = []
    for _ in range(n):
        out.append(exe.run(feeds)[0])
        out.extend(np.array(g.value_of(v)) for v in g.variables)
    for t in feeds:  # feeds never change
        np.testing.assert_array_equal(feeds[t], kept[t])
    return out


def _sixblock():
    from minigraph import sixblock

    x, labels = sixblock.data(2, 8, width=0.25, seed=3)
    return sixblock.build(x, labels, width=0.25)


def _mlp():
    rng = np.random.default_rng(5)
    g = mg.Graph()
    x, y = g.placeholder((6, 5), name="x"), g.placeholder((6, 3), name="y")
    w1 = g.variable(rng.standard_normal((5, 7)).astype(np.float32), name="w1")
    b1 = g.variable(np.zeros((1, 7), np.float32), name="b1")
    w2 = g.variable(rng.standard_normal((7, 3)).astype(np.float32), name="w2")
    h = g.relu(g.addition(g.matrix_multiplication(x, w1), b1))
    logits = g.reshape(g.matrix_multiplication(h, w2), [6, 3])
    loss = g.softmax_cross_entropy(logits, y, axis=-1, reduction="mean")
    grads = g.gradients(loss, [w1, b1, w2])
    ups = [g.apply_stochastic_gradient_descent(0.1, v, grads[v]) for v in (w1, b1, w2)]
    feeds = {x: rng.standard_normal((6, 5)).astype(np.float32), y: np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]}
    return g, feeds, loss, ups


@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("build", [_sixblock, _mlp], ids=["sixblock", "mlp"])
def test_a_backend_with_no_memory_code_matches_numpy_bitwise(monkeypatch, build, fusion):
    """The plan-following example backend runs training steps (variables, reads, assigns, views,
    fused steps) bit for bit as the NumPy backend does, step after step."""
    _follower(monkeypatch)
    desc = mg.CompilationDescriptor(fusion=fusion)
    want = _train("numpy", build, desc)
    got = _train("follower", build, desc)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(want[1], want[1 + len(want) // 3])  # the variables did change


def test_a_read_after_an_assign_sees_the_assigned_value_statically(monkeypatch, rng):
    """In plan order a read sees the latest earlier assign of its variable (``Step.source``); a failed
    run leaves the variable as it was."""
    _follower(monkeypatch)
    g = mg.Graph()
    v = g.variable(np.float32([1, 2, 3]), name="v")
    x = g.placeholder((3,), name="x")
    a1 = g.assign(v, g.addition(g.read(v), x), name="a1")
    with g.control_dependencies([a1]):
        r1 = g.read(v, name="r1")
    a2 = g.assign(v, g.multiplication(r1, 2.0), name="a2")
    with g.control_dependencies([a2]):
        r2 = g.read(v, name="r2")
    xv = f32(rng, 3)
    exe = g.compile({x: mg.ShapedType((3,), mg.float32)}, [r1, r2], target_operations=[a1, a2], backend="follower")
    reads = {s.op.name: s for s in exe.plan.steps if s.memory == "read"}
    assert reads["r1"].source == next(s for s in exe.plan.steps if s.op.name == "a1").inputs[1]
    assert reads["r2"].source == next(s for s in exe.plan.steps if s.op.name == "a2").inputs[1]
    assert [s.source for n, s in reads.items() if n not in ("r1", "r2")] == [None]  # the first read: the variable's value
    got = exe.run({x: xv})
    np.testing.assert_array_equal(got[0], np.float32([1, 2, 3]) + xv)
    np.testing.assert_array_equal(got[1], (np.float32([1, 2, 3]) + xv) * 2)


def _broken(mutate):
    g = mg.Graph()
    v = g.variable(np.float32([1, 2]), name="v")
    x = g.placeholder((2,), name="x")
    a = g.assign(v, g.exponent(g.addition(g.read(v), x)), name="a")
    with g.control_dependencies([a]):
        r = g.read(v, name="r")
    y = g.reshape(g.negative(r, name="n"), [2, 1], name="rs")
    exe = g.compile({x: mg.ShapedType((2,), mg.float32)}, [y], target_operations=[a],
                    compilation_descriptor=mg.CompilationDescriptor(fusion=False))
    plan = exe.plan
    plan.check()
    mutate({s.op.name: s for s in plan.steps}, plan)
    return plan


@pytest.mark.parametrize("mutate, msg", [
    (lambda st, p: setattr(st["r"], "memory", "kernel"), "memory action 'kernel'"),
    (lambda st, p: setattr(st["rs"], "memory", "copy"), "none of"),
    (lambda st, p: setattr(st["r"], "source", None), "latest earlier assign"),
    (lambda st, p: setattr(st["n"], "source", 0), "only a read"),
    (lambda st, p: setattr(st["n"], "reuse", 3), "reuse=3"),
    (lambda st, p: setattr(st["rs"], "out_types", (mg.ShapedType((3, 1), mg.float32),)), "same bytes"),
])
def test_plan_check_catches_a_broken_memory_plan(mutate, msg):
    """Plan.check names the step whose memory action, read source, reuse or view is wrong."""
    plan = _broken(mutate)
    with pytest.raises(mg.PlanError, match=msg) as e:
        plan.check()
    assert "plan step" in str(e.value)
