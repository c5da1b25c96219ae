"""Executable.profile: one record per executed op with its median time, bytes moved and flops;
a table sorted by time; a Chrome trace with one lane per thread; and no timing in normal runs."""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import minigraph as mg
from minigraph import profiling, recording
from minigraph.backends.numpy import KERNELS as NUMPY_KERNELS

SOURCE_OPS = {"placeholder", "constant", "variable"}  # bound to buffers, never run
HOST_BACKENDS = ("numpy", "cpu")  # timed on the host; cpu runs the NumPy runner with compiled steps


def _training_step(backend, rng, n=2, c=4, hw=8):
    """A small training step: depthwise conv -> relu -> pointwise conv -> mean square, SGD."""
    g = mg.Graph()
    x = g.placeholder((n, c, hw, hw), name="x")
    dw = g.variable(rng.standard_normal((1, c, 3, 3)).astype(np.float32), name="dw")
    pw = g.variable(rng.standard_normal((2 * c, c, 1, 1)).astype(np.float32), name="pw")
    d = mg.DepthwiseConvolution2DOpDescriptor(padding_left=1, padding_right=1, padding_top=1, padding_bottom=1)
    h = g.relu(g.depthwise_convolution_2d(x, dw, d))
    h = g.convolution_2d(h, pw, mg.Convolution2DOpDescriptor())
    loss = g.mean(g.square(h), [0, 1, 2, 3])
    grads = g.gradients(loss, [dw, pw])
    steps = [g.apply_stochastic_gradient_descent(0.1, w, grads[w]) for w in (dw, pw)]
    exe = g.compile({x: mg.ShapedType(x.shape, mg.float32)}, [loss], target_operations=steps, backend=backend)
    feeds = {x: rng.standard_normal((n, c, hw, hw)).astype(np.float32)}
    return g, exe, feeds, (dw, pw)


def _executed(exe, backend):
    """The plan's ops a backend runs: not the sources, and on webgpu not the views, reads and
    assigns (aliases, no GPU work); the host backends (numpy, and cpu, which runs the NumPy runner
    with compiled steps) record them."""
    ops = []
    for st in exe.plan.steps:
        if st.op.type in SOURCE_OPS:
            continue
        if backend not in HOST_BACKENDS and (st.op.opdef.kind == "view" or st.memory in ("read", "assign") or
                                   (st.op.type == "cast" and st.in_types[0].dtype == st.out_types[0].dtype)):
            continue
        ops.append(st.op)
    return ops


def test_records_cover_every_executed_op_with_positive_times(backend, rng):
    g, exe, feeds, ws = _training_step(backend, rng)
    prof = exe.profile(feeds, repeats=3)
    want = _executed(exe, backend)
    assert sorted(r.name for r in prof.records) == sorted(o.name for o in want)
    assert len(prof.records) == len(want)  # one record per op
    # a fused step: "fused_elementwise"; an epilogue step: its anchor's type
    types = {st.op.name: st.anchor.type if st.anchor is not None else st.type for st in exe.plan.steps}
    shapes = {st.op.name: tuple(st.out_types[0].shape) for st in exe.plan.steps if st.out_types}
    for r in prof.records:
        assert r.type == types[r.name]
        if r.dtype:
            assert r.shape == shapes[r.name]
        assert len(r.times) == 3 and all(t > 0 for t in r.times), r
        assert r.time == pytest.approx(float(np.median(r.times)))
    assert sum(r.share for r in prof.records) == pytest.approx(1.0)
    assert prof.total == pytest.approx(sum(r.time for r in prof.records))
    assert list(prof) == prof.records and len(prof) == len(want)
    assert prof.repeats == 3 and prof.backend == backend
    assert prof.clock in profiling.CLOCKS


def test_table_is_sorted_by_time_with_shares_and_a_total(backend, rng):
    _, exe, feeds, _ = _training_step(backend, rng)
    prof = exe.profile(feeds, repeats=2)
    text = str(prof)
    assert text == prof.table()
    lines = text.splitlines()
    body = [ln for ln in lines[3:-2]]  # title, header, rule ... rule, total
    assert len(body) == len(prof.records)
    times = [float(ln.split()[0]) for ln in body]
    assert times == sorted(times, reverse=True)
    slowest = max(prof.records, key=lambda r: r.time)
    assert body[0].rstrip().endswith(slowest.name) and f"{slowest.share:.1%}" in body[0]
    assert lines[-1].split()[:2] == [f"{prof.total * 1e3:.3f}", "100.0%"] and "total" in lines[-1]
    top = prof.table(top=3).splitlines()
    assert len(top) == 3 + 3 + 1 + 2 and f"({len(prof.records) - 3} more ops)" in top[6]


def test_type_table_sums_the_ops_of_each_type(rng):
    _, exe, feeds, _ = _training_step("numpy", rng)
    prof = exe.profile(feeds, repeats=2)
    rows = [ln.split() for ln in prof.type_table().splitlines()[1:]]
    want = {}
    for r in prof.records:
        n, t = want.get(r.type, (0, 0.0))
        want[r.type] = (n + 1, t + r.time)
    assert {row[0]: int(row[1]) for row in rows} == {k: n for k, (n, _) in want.items()}
    assert [float(row[2]) for row in rows] == sorted((float(row[2]) for row in rows), reverse=True)
    for row in rows:
        assert float(row[2]) == pytest.approx(want[row[0]][1] * 1e3, abs=1e-3)
    assert [t for t, _, _ in prof.by_type()] == [row[0] for row in rows]


def test_trace_has_one_complete_event_per_op_per_repeat(backend, rng, tmp_path):
    _, exe, feeds, _ = _training_step(backend, rng)
    prof = exe.profile(feeds, repeats=4)
    path = tmp_path / "trace.json"
    prof.save_trace(str(path))
    trace = json.loads(path.read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 4 * len(prof.records)
    for r in prof.records:
        mine = [e for e in events if e["name"] == r.name]
        assert sorted(e["args"]["repeat"] for e in mine) == [0, 1, 2, 3]
        assert all(e["cat"] == r.type and e["dur"] >= 0 and e["ts"] >= 0 for e in mine)
        assert all(e["args"]["bytes"] == r.bytes and e["args"]["flops"] == r.flops for e in mine)
    named = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in events} <= set(named)
    assert trace["otherData"]["clock"] == prof.clock


def test_each_thread_that_profiles_gets_a_lane_of_its_own(rng):
    """Host lanes are OS thread ids, named after the Python thread: two threads, two lanes."""
    _, exe, feeds, _ = _training_step("numpy", rng)
    got = {}

    def work(key):
        got[key] = exe.profile(feeds, repeats=1).trace()

    t = threading.Thread(target=work, args=("worker",), name="profiler-thread")
    t.start()
    t.join()
    work("main")
    lanes = {k: {e["tid"] for e in tr["traceEvents"] if e["ph"] == "X"} for k, tr in got.items()}
    assert len(lanes["worker"]) == 1 and len(lanes["main"]) == 1 and lanes["worker"] != lanes["main"]
    names = {k: {e["tid"]: e["args"]["name"] for e in tr["traceEvents"] if e["name"] == "thread_name"}
             for k, tr in got.items()}
    assert [names["worker"][t] for t in lanes["worker"]] == ["profiler-thread"]
    assert [names["main"][t] for t in lanes["main"]] == [threading.current_thread().name]


def test_worker_threads_of_a_kernel_get_lanes(rng, replace_kernel):
    """A kernel that splits its work over a thread pool reports each block through the
    profiler's recorder: the trace has a lane per worker thread, the op's time stays its span."""
    g = mg.Graph()
    x = g.placeholder((4, 64), name="x")
    y = g.exponent(x, name="exp")
    pool = ThreadPoolExecutor(4, thread_name_prefix="exp-worker")
    barrier = threading.Barrier(4)  # each of the 4 workers takes exactly one block

    def split_exp(step):
        def run(a):
            out = np.empty_like(a)
            rec = recording.recorder()  # asked on the thread that runs the op, handed to the blocks

            def block(i):
                barrier.wait()
                if rec is None:
                    np.exp(a[i], out=out[i])
                else:
                    rec.time(np.exp, a[i], out=out[i])
            for f in [pool.submit(block, i) for i in range(4)]:
                f.result()
            return out
        return run

    replace_kernel(NUMPY_KERNELS, "exponent", split_exp)
    exe = g.compile({x: mg.ShapedType((4, 64), mg.float32)}, [y])
    xv = rng.standard_normal((4, 64)).astype(np.float32)
    try:
        prof = exe.profile({x: xv}, repeats=2)
        again = exe.run({x: xv})[0]
    finally:
        pool.shutdown()
    np.testing.assert_allclose(prof.results[0], np.exp(xv), rtol=1e-6)
    np.testing.assert_allclose(again, np.exp(xv), rtol=1e-6)
    assert [r.name for r in prof.records] == ["exp"]
    trace = prof.trace()
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    blocks = [e for e in trace["traceEvents"] if e["ph"] == "B"]
    ends = [e for e in trace["traceEvents"] if e["ph"] == "E"]
    assert len(ops) == 2 and len(blocks) == 8 and len(ends) == 8
    assert all(e["args"]["block"] for e in blocks)
    for tid in {e["tid"] for e in blocks}:  # on each lane, every block begins, then ends
        seq = [e for e in trace["traceEvents"] if e["tid"] == tid and e["ph"] in "BE"]
        assert [e["ph"] for e in seq] == ["B", "E"] * (len(seq) // 2)
        assert all(b["ts"] <= e["ts"] for b, e in zip(seq[::2], seq[1::2]))
    for op in ops:  # every block lies inside its op's span
        mine = [e for e in blocks if e["args"]["repeat"] == op["args"]["repeat"]]
        assert len(mine) == 4 and all(op["ts"] <= e["ts"] <= op["ts"] + op["dur"] + 1e-3 for e in mine)
    assert all(e["name"] == "exp" and e["cat"] == "exponent" for e in blocks)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    lanes = {e["tid"] for e in blocks}
    assert len(lanes) == 4 and ops[0]["tid"] not in lanes
    assert all(names[t].startswith("exp-worker") for t in lanes)
    assert names[ops[0]["tid"]] == threading.current_thread().name
    assert recording.recorder() is None  # only while profiling


def test_a_profile_records_only_its_own_runs_blocks(rng, replace_kernel):
    """The recorder is the profiled run's, not the process's: another thread's run of an
    unrelated pooled graph, made while the profile times its op, adds no block to the trace."""
    from minigraph.backends.numpy import threads

    before = threads._explicit
    mg.set_num_threads(4)
    n = 1 << 19
    other = mg.Graph()
    ox = other.placeholder((n,), name="ox")
    other_exe = other.compile({ox: mg.ShapedType((n,), mg.float32)}, [other.addition(ox, ox)])
    ov = rng.standard_normal(n).astype(np.float32)
    go, done = threading.Event(), threading.Event()

    def other_thread():
        go.wait(60)
        start = threads.tasks_run()
        other_exe.run({ox: ov})
        assert threads.tasks_run() > start  # it used the pool
        done.set()

    def exp_in_blocks(step):
        def run(a):
            go.set()  # the other thread's run happens while this op is being timed
            assert done.wait(60)
            out = np.empty_like(a)
            threads.parallel(lambda i, j: np.exp(a[i:j], out=out[i:j]), [(0, 2), (2, 4)])
            return out
        return run

    replace_kernel(NUMPY_KERNELS, "exponent", exp_in_blocks)
    g = mg.Graph()
    x = g.placeholder((4, 64), name="x")
    y = g.exponent(x, name="exp")
    exe = g.compile({x: mg.ShapedType((4, 64), mg.float32)}, [y])
    xv = rng.standard_normal((4, 64)).astype(np.float32)
    t = threading.Thread(target=other_thread)
    t.start()
    try:
        prof = exe.profile({x: xv}, repeats=1, warmup=0)
    finally:
        go.set()
        t.join(60)
        threads._explicit = before
    assert done.is_set()
    assert [len(b) for b in prof.blocks] == [2]  # its own two blocks, none of the other run's
    blocks = [e for e in prof.trace()["traceEvents"] if e["ph"] == "B"]
    assert len(blocks) == 2 and all(e["name"] == "exp" for e in blocks)


def test_convolution_flops_follow_the_formula(backend, rng):
    """2 * N * Cout * (Cin / groups) * kH * kW * Ho * Wo, for the forward op and both gradients."""
    n, c, h, w, cout, k = 2, 6, 9, 7, 4, 3
    g = mg.Graph()
    x = g.placeholder((n, c, h, w), name="x")
    wv = g.variable(rng.standard_normal((cout, c // 2, k, k)).astype(np.float32), name="w")
    dwv = g.variable(rng.standard_normal((2, c, k, k)).astype(np.float32), name="dw")  # multiplier 2
    conv = g.convolution_2d(x, wv, mg.Convolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, groups=2), name="conv")
    dconv = g.depthwise_convolution_2d(x, dwv, mg.DepthwiseConvolution2DOpDescriptor(), name="dconv")
    loss = g.reduction_sum(conv, [0, 1, 2, 3]) + g.reduction_sum(dconv, [0, 1, 2, 3])
    grads = g.gradients(loss, [x, wv, dwv])
    exe = g.compile({x: mg.ShapedType(x.shape, mg.float32)}, [loss, grads[x], grads[wv], grads[dwv]],
                    backend=backend, compilation_descriptor=mg.CompilationDescriptor(fusion=False))
    prof = exe.profile({x: rng.standard_normal((n, c, h, w)).astype(np.float32)}, repeats=1)
    ho, wo = (h - k) // 2 + 1, (w - k) // 2 + 1
    conv_flops = 2 * n * cout * (c // 2) * k * k * ho * wo
    dw_flops = 2 * n * (2 * c) * 1 * k * k * (h - k + 1) * (w - k + 1)
    by_type = {}
    for r in prof.records:
        by_type.setdefault(r.type, []).append(r.flops)
    assert by_type["convolution_2d"] == [conv_flops]
    assert by_type["convolution_2d_data_gradient"] == [conv_flops]
    assert by_type["convolution_2d_weights_gradient"] == [conv_flops]
    assert by_type["depthwise_convolution_2d"] == [dw_flops]
    assert by_type["depthwise_convolution_2d_data_gradient"] == [dw_flops]
    assert by_type["depthwise_convolution_2d_weights_gradient"] == [dw_flops]


def test_bytes_and_flops_of_simple_ops(backend, rng):
    g = mg.Graph()
    a = g.placeholder((3, 5), name="a")
    b = g.placeholder((5,), name="b")
    m = g.placeholder((5, 7), name="m")
    s = g.addition(a, b, name="add")
    mm = g.matrix_multiplication(s, m, name="mm")
    r = g.reduction_sum(mm, [1], name="sum")
    exe = g.compile({a: mg.ShapedType((3, 5), mg.float32), b: mg.ShapedType((5,), mg.float32),
                     m: mg.ShapedType((5, 7), mg.float32)}, [r], backend=backend)
    feeds = {a: rng.standard_normal((3, 5)).astype(np.float32), b: rng.standard_normal(5).astype(np.float32),
             m: rng.standard_normal((5, 7)).astype(np.float32)}
    rec = {r.name: r for r in exe.profile(feeds, repeats=2).records}
    assert rec["add"].bytes == (3 * 5 + 5 + 3 * 5) * 4  # both inputs read, the output written
    assert rec["add"].flops == 15
    assert rec["mm"].bytes == (15 + 35 + 21) * 4 and rec["mm"].flops == 2 * 3 * 7 * 5
    assert rec["sum"].bytes == (21 + 3) * 4 and rec["sum"].flops == 21
    assert rec["add"].shape == (3, 5) and rec["add"].dtype == "float32"


def test_profile_commits_nothing_and_returns_the_run_results(backend, rng):
    g, exe, feeds, ws = _training_step(backend, rng)
    before = [g.value_of(w).copy() for w in ws]
    prof = exe.profile(feeds, repeats=2)
    for w, v in zip(ws, before):
        np.testing.assert_array_equal(g.value_of(w), v)
    (loss,) = exe.run(feeds)
    np.testing.assert_allclose(prof.results[0], loss, rtol=1e-6)


def test_a_bad_feed_raises_the_usual_feed_error_and_changes_nothing(backend, rng):
    g, exe, feeds, ws = _training_step(backend, rng)
    before = [g.value_of(w).copy() for w in ws]
    (x,) = feeds
    with pytest.raises(mg.FeedError, match="'x'"):
        exe.profile({x: np.zeros((3, 4, 8, 8), np.float32)})
    with pytest.raises(mg.FeedError):
        exe.profile({})
    with pytest.raises(mg.TargetError, match="repeats"):
        exe.profile(feeds, repeats=0)
    for w, v in zip(ws, before):
        np.testing.assert_array_equal(g.value_of(w), v)


def test_a_normal_run_calls_no_timer(backend, rng, monkeypatch):
    """The run path times nothing: the profiler's clock (and time.perf_counter_ns under it) is
    not called by exe.run; exe.profile calls it (so this test sees a timer when there is one)."""
    _, exe, feeds, _ = _training_step(backend, rng)
    exe.run(feeds)  # compile-time work done
    calls = []
    real = time.perf_counter_ns

    def counting():
        calls.append(1)
        return real()
    monkeypatch.setattr(time, "perf_counter_ns", counting)
    for _ in range(3):
        exe.run(feeds)
    assert calls == []
    exe.profile(feeds, repeats=1, warmup=0)
    assert len(calls) >= 2


def test_normal_runs_are_unaffected_by_profiling(backend, rng):
    g, exe, feeds, ws = _training_step(backend, rng)
    g2, exe2, feeds2, ws2 = _training_step(backend, np.random.default_rng(1234))
    g3, exe3, feeds3, ws3 = _training_step(backend, np.random.default_rng(1234))
    exe2.profile(feeds2, repeats=2)
    for _ in range(2):
        a = exe2.run(feeds2)
        b = exe3.run(feeds3)
        np.testing.assert_array_equal(a[0], b[0])
    for w2, w3 in zip(ws2, ws3):
        np.testing.assert_array_equal(g2.value_of(w2), g3.value_of(w3))


def test_clocks(backend, rng):
    _, exe, feeds, _ = _training_step(backend, rng)
    assert exe.profile(feeds, repeats=1, clock="host").clock == "host"
    if backend in HOST_BACKENDS:  # host clocks only: no GPU queue to time
        with pytest.raises(mg.BackendUnavailableError, match="gpu-timestamps"):
            exe.profile(feeds, clock="gpu-timestamps")
        return
    ctx = mg.backends.get_backend(backend).context
    if ctx.has_timestamps:
        prof = exe.profile(feeds, repeats=2)
        assert prof.clock == "gpu-timestamps"
        assert all(t > 0 for r in prof.records for t in r.times)
        assert [n for n in prof.lanes.values()] == [f"GPU queue ({ctx.description})"]


def test_random_ops_draw_as_the_next_run_would(backend):
    g = mg.Graph()
    x = g.placeholder((64,), name="x")
    y = g.dropout(x, 0.5, name="drop")
    exe = g.compile({x: mg.ShapedType((64,), mg.float32)}, [y], backend=backend)
    xv = np.ones(64, np.float32)
    prof = exe.profile({x: xv}, repeats=2)
    assert exe.random_draws == 0
    np.testing.assert_array_equal(prof.results[0], exe.run({x: xv})[0])
    assert exe.random_draws == 1


def test_profile_command_tiny(run_python, tmp_path):
    path = tmp_path / "t.json"
    p = run_python("-m", "minigraph", "profile", "--tiny", "--repeats", "2", "--top", "5", "--by-type", "--threads", "1",
                   "--trace", str(path))
    assert p.returncode == 0, p.stderr
    assert "N=2, 16x16, channels / 8, 1 numpy threads" in p.stdout
    assert "six-block network" in p.stdout and "total (" in p.stdout and "depthwise_convolution_2d" in p.stdout
    assert "convolution_2d_weights_gradient" in p.stdout.split("total (")[1]  # the per-type summary
    trace = json.loads(path.read_text())
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) > 100


def test_a_profile_indexes_like_its_records_and_shows_its_table():
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    y = g.relu(g.addition(x, 1.0), name="y")
    exe = g.compile({x: mg.ShapedType([2, 3], mg.float32)}, [y])
    prof = exe.profile({x: np.ones((2, 3), np.float32)}, repeats=2)
    assert prof[0] is prof.records[0] and list(prof) == prof.records
    assert repr(prof) == str(prof) == prof.table() and "total" in repr(prof)


def test_an_epilogue_step_is_profiled_as_its_anchor_with_the_tails_flops(rng):
    g = mg.Graph()
    x = g.placeholder((2, 3, 6, 6), name="x")
    w = g.variable(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), name="w")
    y = g.relu(g.convolution_2d(x, w, mg.Convolution2DOpDescriptor(), name="conv"), name="y")
    exe = g.compile({x: mg.ShapedType(x.shape, mg.float32)}, [y])
    (rec,) = [r for r in exe.profile({x: np.ones(x.shape, np.float32)}, repeats=1).records if r.name == "y"]
    assert rec.type == "convolution_2d" and rec.kernel == "fused_epilogue(convolution_2d+relu)"
    assert rec.ops == ("conv", "y") and rec.flops == 2 * 2 * 4 * 3 * 9 * 16 + 2 * 4 * 16
