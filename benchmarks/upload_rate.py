"""Host-to-device upload rate of the webgpu backend: ``queue.write_buffer`` against the plan's
mapped staging buffer (``backends/webgpu/uploads.py``), and PyTorch's pinned and pageable
``.cuda()`` copies where CUDA is present, for the feed sizes of the networks (12.85 MB is the
six-block step's input, 19.3 MB MobileNetV2's at N=32, 224²).

Each figure is the median over ``--repeats`` of the bytes over the seconds from the start of the
upload until the device has the data (4 bytes of it read back after the copy), and for the staging buffer also
the host part alone (until the copies are submitted).

Run: ``python benchmarks/upload_rate.py [--mb 12.85,19.27] [--repeats 20] [--json out.json]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minigraph.backends.webgpu import device as wdevice  # noqa: E402
from minigraph.backends.webgpu.buffers import Pool  # noqa: E402
from minigraph.backends.webgpu import uploads  # noqa: E402
from minigraph.backends.webgpu.uploads import COPY_THREADS, PIECE, Uploads  # noqa: E402
from minigraph.types import ShapedType, float32  # noqa: E402


def _median_rate(fn, nbytes: int, repeats: int) -> float:
    times = []
    for _ in range(repeats + 2):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times[2:]) / 1e9


def webgpu_rates(nbytes: int, repeats: int, variants: bool = False) -> dict:
    ctx = wdevice.get_context()
    dev = ctx.device
    pool = Pool(ctx)
    n = nbytes // 4
    ref = pool.dedicated(ShapedType((n,), float32), "feed")
    host = np.random.default_rng(0).random(n, dtype=np.float32)

    import wgpu

    probe = dev.create_buffer(size=4, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    def wait():  # the device has run everything submitted: 4 bytes of the feed read back after it
        enc = dev.create_command_encoder()
        enc.copy_buffer_to_buffer(ref.buffer, 0, probe, 0, 4)
        dev.queue.submit([enc.finish()])
        probe.map_sync(wgpu.MapMode.READ)
        probe.unmap()

    def write_buffer():
        dev.queue.write_buffer(ref.buffer, 0, host)
        wait()

    up = Uploads(ctx, [(ref, "float32", (n,))])
    host_part = []

    def staging():
        up.write([host])
        host_part.append(up.seconds)
        wait()

    out = {"write_buffer_GBps": _median_rate(write_buffer, n * 4, repeats),
           "staging_GBps": _median_rate(staging, n * 4, repeats)}
    out["staging_host_GBps"] = n * 4 / statistics.median(host_part[2:]) / 1e9
    if variants:  # the staging layout's two knobs: one buffer or pieces, host threads per piece
        for piece, threads in ((1 << 30, 1), (1 << 30, 2), (1 << 30, 4), (4 << 20, 1), (4 << 20, 4), (2 << 20, 2)):
            uploads.PIECE, uploads.COPY_THREADS = piece, threads
            up = Uploads(ctx, [(ref, "float32", (n,))])
            host_part.clear()
            key = f"staging_piece{piece >> 20}MiB_threads{threads}"
            out[key + "_GBps"] = _median_rate(staging, n * 4, repeats)
            out[key + "_host_GBps"] = n * 4 / statistics.median(host_part[2:]) / 1e9
        uploads.PIECE, uploads.COPY_THREADS = PIECE, COPY_THREADS
    return out


def torch_rates(nbytes: int, repeats: int) -> dict:
    try:
        import torch
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    n = nbytes // 4
    pageable = torch.rand(n)
    pinned = pageable.pin_memory()

    def copy(src):
        def fn():
            src.to("cuda", non_blocking=True)
            torch.cuda.synchronize()
        return fn

    return {"torch_pageable_GBps": _median_rate(copy(pageable), n * 4, repeats),
            "torch_pinned_GBps": _median_rate(copy(pinned), n * 4, repeats)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", default="12.85,19.27", help="feed sizes in MB (1e6 bytes), comma separated")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", default=None)
    ap.add_argument("--variants", action="store_true", help="also time other staging layouts")
    args = ap.parse_args(argv)
    rows = []
    for mb in (float(m) for m in args.mb.split(",")):
        nbytes = int(mb * 1e6) // 4 * 4
        row = {"MB": mb, **webgpu_rates(nbytes, args.repeats, args.variants), **torch_rates(nbytes, args.repeats)}
        rows.append(row)
        print("  ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": wdevice.get_context().description, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
