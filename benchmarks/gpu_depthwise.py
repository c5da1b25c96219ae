#!/usr/bin/env python3
"""Depthwise-convolution weights gradient on the GPU: minigraph's WGSL kernel vs PyTorch CUDA.

For each MobileNetV2 depthwise layer (N=32, fp32, 3x3, padding (K-1)/2), times

- ours: ``depthwise_convolution_2d_weights_gradient`` compiled by the webgpu backend (the same
  dispatches a graph run records), kernel time from timestamp queries around one compute pass
  per repetition (median), or, without the ``timestamp-query`` feature, wall time of many
  submits followed by one synchronisation;
- torch: ``torch.nn.grad.conv2d_weight(x, w.shape, dy, stride, padding, groups=C)`` on CUDA
  (cuDNN benchmark mode, TF32 off), CUDA events around each call after a warm-up, median;
- a WGSL copy kernel (vec4 loads and stores) in the same run, as the attainable bandwidth.

GB/s is the minimum traffic (read x and dy once, write dW once) over the time. Each layer's
result is checked against NumPy (and against PyTorch when it runs) before it is timed.

    python3 benchmarks/gpu_depthwise.py            # MobileNetV2 layers, N=32
    python3 benchmarks/gpu_depthwise.py --tiny     # a few small layers (lavapipe, tests)
    python3 benchmarks/gpu_depthwise.py --sweep    # also time other splits of the reduction

JSON goes to ``$OUT/gpu_depthwise.json`` when ``$OUT`` is set (or to ``--json PATH``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import minigraph as mg  # noqa: E402
from minigraph.backends.webgpu import convolution as wconv  # noqa: E402
from minigraph.backends.webgpu.device import GPU_LOCK  # noqa: E402
from minigraph.ops.geometry import geometry_of  # noqa: E402

# (C, H, W, K, stride): MobileNetV2's depthwise layers at 224x224 (as in benchmarks/shapes.py,
# derived from torchvision's model definition); multiplier 1, padding (K-1)//2, dilation 1
MOBILENET_V2_DW = [
    (32, 112, 112, 3, 1), (96, 112, 112, 3, 2), (144, 56, 56, 3, 1), (144, 56, 56, 3, 2),
    (192, 28, 28, 3, 1), (192, 28, 28, 3, 1), (192, 28, 28, 3, 2), (384, 14, 14, 3, 1),
    (384, 14, 14, 3, 1), (384, 14, 14, 3, 1), (384, 14, 14, 3, 1), (576, 14, 14, 3, 1),
    (576, 14, 14, 3, 1), (576, 14, 14, 3, 2), (960, 7, 7, 3, 1), (960, 7, 7, 3, 1), (960, 7, 7, 3, 1),
]
TINY = [(4, 12, 12, 3, 1), (8, 9, 9, 3, 2), (16, 5, 5, 3, 1)]
SWEEP = [{"wgrad_vec": 1}, {"wgrad_vec": 4}, {"wgrad_target_groups": 1024}, {"wgrad_target_groups": 16384},
         {"wgrad_min_items": 8}, {"wgrad_min_items": 64}]


def out_size(h, k, s):
    p = (k - 1) // 2
    return (h + 2 * p - k) // s + 1


def min_bytes(n, c, h, w, k, s, itemsize=4):
    oh, ow = out_size(h, k, s), out_size(w, k, s)
    return itemsize * (n * c * h * w + n * c * oh * ow + c * k * k)


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


# ----------------------------------------------------------------------------- ours
class GPUTimer:
    """Times recorded dispatches: timestamp queries if the device has them, else wall time."""

    warm_s = 0.15

    def __init__(self, ctx, reps, wall=False):
        import wgpu

        self.ctx, self.reps, self.wgpu = ctx, reps, wgpu
        self.timestamps = ctx.has_timestamps and not wall
        self.method = "timestamp-query" if self.timestamps else "wall (submit x reps, one sync)"
        self.period = 1.0
        if self.timestamps:
            try:
                from wgpu.backends.wgpu_native.extras import lib

                self.period = float(lib.wgpuQueueGetTimestampPeriod(ctx.device.queue._internal)) or 1.0
            except Exception:  # pragma: no cover - older wgpu-native
                self.period = 1.0

    def sync(self):
        """Wait for all submitted work (a 4-byte readback; on_submitted_work_done is not usable in
        every wgpu-py release)."""
        if not hasattr(self, "_probe"):
            self._probe = self.ctx.device.create_buffer(size=4, usage=self.wgpu.BufferUsage.COPY_SRC)
        self.ctx.device.queue.read_buffer(self._probe)

    def _encode(self, enc, dispatches, ts=None):
        kw = {}
        if ts is not None:
            qs, k = ts
            kw["timestamp_writes"] = {"query_set": qs, "beginning_of_pass_write_index": 2 * k,
                                      "end_of_pass_write_index": 2 * k + 1}
        cp = enc.begin_compute_pass(**kw)
        for pipe, bg, grid, _ in dispatches:
            cp.set_pipeline(pipe)
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(*grid)
        cp.end()

    def time_ms(self, dispatches, warmup=3):
        """Median milliseconds of one execution of ``dispatches``."""
        wgpu, dev = self.wgpu, self.ctx.device
        with GPU_LOCK:
            # keep the GPU busy for a while first, so its clocks are up (an idle H200 downclocks,
            # which made the same kernel measure 4x slower in a run with no other GPU work)
            t_end = time.perf_counter() + self.warm_s
            rounds = 0
            while rounds < warmup or time.perf_counter() < t_end:
                enc = dev.create_command_encoder()
                for _ in range(10):
                    self._encode(enc, dispatches)
                dev.queue.submit([enc.finish()])
                self.sync()
                rounds += 1
            if self.timestamps:
                n = self.reps
                qs = dev.create_query_set(type=wgpu.QueryType.timestamp, count=2 * n)
                res = dev.create_buffer(size=16 * n, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
                enc = dev.create_command_encoder()
                for k in range(n):
                    self._encode(enc, dispatches, (qs, k))
                enc.resolve_query_set(qs, 0, 2 * n, res, 0)
                dev.queue.submit([enc.finish()])
                ts = np.frombuffer(dev.queue.read_buffer(res), dtype=np.uint64).reshape(n, 2).astype(np.float64)
                dur = (ts[:, 1] - ts[:, 0]) * self.period * 1e-6
                return float(np.median(dur))
            t0 = time.perf_counter()
            for _ in range(self.reps):
                enc = dev.create_command_encoder()
                self._encode(enc, dispatches)
                dev.queue.submit([enc.finish()])
            self.sync()
            return (time.perf_counter() - t0) * 1e3 / self.reps


def copy_bandwidth(ctx, timer, nbytes):
    """GB/s (bytes read + written) of a WGSL vec4 copy over ``nbytes``."""
    import wgpu

    n4 = min(nbytes, ctx.max_binding, ctx.max_buffer) // 16
    src = (
        "@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;\n"
        "@group(0) @binding(1) var<storage, read_write> b: array<vec4<f32>>;\n"
        "@compute @workgroup_size(256)\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
        "        @builtin(local_invocation_index) lid: u32) {\n"
        "  let i = (wid.y * nwg.x + wid.x) * 256u + lid;\n"
        f"  if (i < {n4}u) {{ b[i] = a[i]; }}\n"
        "}\n")
    dev = ctx.device
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
    a = dev.create_buffer(size=n4 * 16, usage=usage)
    b = dev.create_buffer(size=n4 * 16, usage=usage)
    pipe = ctx.pipeline(src, ("ro", "rw"), "copy benchmark")
    bg = dev.create_bind_group(layout=ctx.layout(("ro", "rw"))[0], entries=[
        {"binding": 0, "resource": {"buffer": a, "offset": 0, "size": n4 * 16}},
        {"binding": 1, "resource": {"buffer": b, "offset": 0, "size": n4 * 16}}])
    ms = timer.time_ms([(pipe, bg, ctx.grid(-(-n4 // 256)), None)])
    return 2 * n4 * 16 / (ms * 1e-3) / 1e9


def ours(layer, n, rng, timer, tuning=None, check=True):
    """(ms, max relative error vs NumPy, result, inputs) for one layer."""
    c, h, w, k, s = layer
    p = (k - 1) // 2
    oh, ow = out_size(h, k, s), out_size(w, k, s)
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    dy = rng.standard_normal((n, c, oh, ow), dtype=np.float32)
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=s, stride_in_y=s, padding_left=p, padding_right=p,
                                                 padding_top=p, padding_bottom=p)
    g = mg.Graph()
    xt, dyt = g.placeholder(x.shape, name="x"), g.placeholder(dy.shape, name="dy")
    dw = g.depthwise_convolution_2d_weights_gradient(dyt, xt, [1, c, k, k], descriptor=desc, name="dw")
    saved = dict(wconv.TUNING)
    wconv.TUNING.update(tuning or {})
    try:
        exe = g.compile({xt: mg.ShapedType(x.shape), dyt: mg.ShapedType(dy.shape)}, [dw], backend="webgpu")
    finally:
        wconv.TUNING.clear()
        wconv.TUNING.update(saved)
    got = exe.run({xt: x, dyt: dy})[0]  # uploads x and dy; they stay on the device for the timing
    err = float("nan")
    if check:
        want = g.run({xt: x, dyt: dy}, [dw], backend="numpy")[dw]
        err = float(np.abs(got - want).max() / np.abs(want).max())
    plan = wconv.wgrad_plan(geometry_of(exe.plan.steps[-1]))
    ms = timer.time_ms(exe._runner.dispatches)
    return ms, err, got, (x, dy), plan


# ----------------------------------------------------------------------------- torch
def torch_cuda():
    try:
        import torch
    except Exception as e:
        return None, f"PyTorch not importable ({type(e).__name__})"
    if not torch.cuda.is_available():
        return None, "PyTorch has no CUDA device here"
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch, f"PyTorch {torch.__version__}, {torch.cuda.get_device_name()}"


def torch_time(torch, layer, inputs, reps, warmup=10):
    """(median ms with CUDA events per call, dW as ndarray)."""
    c, h, w, k, s = layer
    p = (k - 1) // 2
    x = torch.from_numpy(inputs[0]).cuda()
    dy = torch.from_numpy(inputs[1]).cuda()

    def f():
        return torch.nn.grad.conv2d_weight(x, (c, 1, k, k), dy, stride=s, padding=p, groups=c)
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), f().cpu().numpy()


def torch_copy_bandwidth(torch, nbytes, reps=50):
    """GB/s (read + write) of a CUDA device-to-device copy, timed with CUDA events."""
    a = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").normal_()
    b = torch.empty_like(a)
    for _ in range(10):
        b.copy_(a)
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        b.copy_(a)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    return 2 * nbytes / (statistics.median(times) * 1e-3) / 1e9


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="small layers and sizes (runs on lavapipe)")
    ap.add_argument("--n", type=int, default=None, help="batch size (default 32, tiny 2)")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions (default 50, tiny 5)")
    ap.add_argument("--sweep", action="store_true", help="also time other splits of the reduction")
    ap.add_argument("--sweep-json", default=None,
                    help='tunings to sweep instead of the built-in list, e.g. \'[{"wgrad_vec": 2}]\'')
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch column")
    ap.add_argument("--wall", action="store_true", help="wall-clock timing even if timestamp queries work")
    ap.add_argument("--json", default=None, help="where to write the JSON (default $OUT/gpu_depthwise.json)")
    args = ap.parse_args(argv)
    n = args.n or (2 if args.tiny else 32)
    reps = args.reps or (5 if args.tiny else 50)
    layers = TINY if args.tiny else MOBILENET_V2_DW

    backend = mg.get_backend("webgpu")
    ctx = backend.context
    timer = GPUTimer(ctx, reps, wall=args.wall)
    print(f"adapter: {ctx.description}; info {ctx.info}")
    print(f"timing: {timer.method}; N={n}, fp32, {reps} repetitions (median)")
    copy_bytes = (4 << 20) if args.tiny else (256 << 20)
    # the first measurements of a process read low, so measure once and discard
    copy_bandwidth(ctx, timer, copy_bytes)
    ours(layers[0], n, np.random.default_rng(1), timer, check=False)
    copy_gbps = copy_bandwidth(ctx, timer, copy_bytes)
    print(f"WGSL copy kernel: {copy_gbps:.1f} GB/s (read + write, {min(copy_bytes, ctx.max_binding) >> 20} MiB)")

    # pass 1: ours, with no CUDA context in the process (seen on the H200: while PyTorch's CUDA
    # context exists, the Vulkan copy kernel measures 1.7 TB/s instead of 4.1 TB/s)
    rng = np.random.default_rng(0)
    rows, kept = [], []
    for layer in layers:
        ms, err, got, inputs, plan = ours(layer, n, rng, timer)
        nbytes = min_bytes(n, *layer)
        row = {"layer": list(layer), "n": n, "ms_ours": ms, "gbps_ours": nbytes / (ms * 1e-3) / 1e9,
               "max_rel_err_vs_numpy": err, "bytes_min": nbytes,
               "split": {k: plan[k] for k in ("V", "FX", "CHUNKS", "CH", "TC")}}
        row["pct_copy"] = 100 * row["gbps_ours"] / copy_gbps
        if args.sweep:
            row["sweep"] = []
            for tu in (json.loads(args.sweep_json) if args.sweep_json else SWEEP):
                vms = ours(layer, n, rng, timer, tuning=tu, check=False)[0]
                row["sweep"].append({"tuning": tu, "ms": vms})
        rows.append(row)
        kept.append((got, inputs))

    # pass 2: PyTorch CUDA on the same inputs, and its own device-to-device copy for reference
    torch, torch_note = (None, "skipped (--no-torch)") if args.no_torch else torch_cuda()
    print(f"torch: {torch_note}")
    torch_copy = None
    if torch is not None:
        torch_copy = torch_copy_bandwidth(torch, copy_bytes)
        print(f"PyTorch device-to-device copy: {torch_copy:.1f} GB/s (read + write)")
        for row, (got, inputs) in zip(rows, kept):
            tms, tref = torch_time(torch, tuple(row["layer"]), inputs, reps)
            nbytes = row["bytes_min"]
            row.update(ms_torch=tms, gbps_torch=nbytes / (tms * 1e-3) / 1e9, ratio=tms / row["ms_ours"],
                       max_rel_err_vs_torch=float(np.abs(got - tref).max() / np.abs(tref).max()))

    hdr = (f"{'layer (C,H,W,K,s)':<22} {'ms ours':>9} {'ms torch':>9} {'ratio':>7} {'GB/s ours':>10} "
           f"{'GB/s torch':>10} {'% copy':>7} {'err':>8}  split")
    print(hdr)
    print("-" * len(hdr))
    for row in rows:
        layer, ms, err = row["layer"], row["ms_ours"], row["max_rel_err_vs_numpy"]
        tm = f"{row['ms_torch']:9.3f}" if "ms_torch" in row else f"{'-':>9}"
        rt = f"{row['ratio']:7.2f}" if "ratio" in row else f"{'-':>7}"
        tg = f"{row['gbps_torch']:10.1f}" if "gbps_torch" in row else f"{'-':>10}"
        sp = row["split"]
        print(f"{str(tuple(layer)):<22} {ms:9.3f} {tm} {rt} {row['gbps_ours']:10.1f} {tg} {row['pct_copy']:6.1f}% "
              f"{err:8.1e}  {sp['CHUNKS']}x{sp['CH']} v{sp['V']} fx{sp['FX']}", flush=True)
        if not err < 1e-4:
            print(f"  WARNING: layer {layer} differs from NumPy by {err:.2e} (relative to max |dW|)")
    summary = {"geomean_ms_ours": geomean([r["ms_ours"] for r in rows]),
               "geomean_pct_copy": geomean([r["pct_copy"] for r in rows])}
    if torch is not None:
        summary["geomean_ms_torch"] = geomean([r["ms_torch"] for r in rows])
        summary["geomean_ratio"] = geomean([r["ratio"] for r in rows])
    print("-" * len(hdr))
    print(f"geometric mean: ours {summary['geomean_ms_ours']:.3f} ms"
          + (f", torch {summary['geomean_ms_torch']:.3f} ms, ratio torch/ours {summary['geomean_ratio']:.2f} "
             "(> 1: ours faster)" if torch is not None else ", torch column skipped: " + torch_note)
          + f"; ours at {summary['geomean_pct_copy']:.1f}% of the copy kernel's bandwidth")
    if args.sweep:
        print("\nsweep (ms; default split first):")
        for r in rows:
            alts = "  ".join(f"{list(s['tuning'].items())[0][0].replace('wgrad_', '')}={list(s['tuning'].values())[0]}:"
                             f"{s['ms']:.3f}" for s in r["sweep"])
            print(f"  {str(tuple(r['layer'])):<22} default:{r['ms_ours']:.3f}  {alts}")
    result = {"adapter": {k: str(v) for k, v in ctx.info.items()}, "timing": timer.method, "n": n, "reps": reps,
              "dtype": "float32", "copy_gbps": copy_gbps, "torch_copy_gbps": torch_copy, "torch": torch_note, "tuning": dict(wconv.TUNING),
              "layers": rows, "summary": summary}
    path = args.json or (os.path.join(os.environ["OUT"], "gpu_depthwise.json") if os.environ.get("OUT") else None)
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
