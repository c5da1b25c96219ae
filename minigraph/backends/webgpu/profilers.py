"""The webgpu backend's two ways of timing a run op by op (``exe.profile``, minigraph/profiling.py).

A normal run times nothing; a profiled run encodes the same pre-bound dispatches differently:

- ``host_spans``: each op's dispatches in a submission of their own, timed on the host up to the
  map of a 4-byte buffer copied after them (the queue runs in order, so the map waits for them);
- ``Timestamps``: each dispatch in a compute pass of its own whose beginning and end the GPU
  timestamps, all in one submission; the timestamps are resolved and read back with the results.
"""
from __future__ import annotations

import numpy as np

from ... import recording
from .kernel_builder import encode

MAX_QUERIES = 4096  # queries per query set (wgpu's limit)
GPU_LANE = 1  # the trace lane (tid) of GPU timestamps: OS thread ids of the host lanes are larger


def by_op(dispatches) -> list:
    """``[(op, its consecutive dispatches)]`` in dispatch order."""
    groups: list = []
    for d in dispatches:
        if groups and groups[-1][0] is d[3]:
            groups[-1][1].append(d)
        else:
            groups.append((d[3], [d]))
    return groups


def host_spans(ctx, dispatches) -> tuple:
    """Run ``dispatches`` op by op, each timed on the host: ``(spans, lanes)``."""
    import wgpu

    dev = ctx.device
    lane, lane_name = recording.host_lane()
    spans = []
    src = dev.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
    dst = dev.create_buffer(size=4, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    for op, group in by_op(dispatches):
        start = recording.clock()
        enc = dev.create_command_encoder()
        cp = enc.begin_compute_pass()
        encode(cp, group)
        cp.end()
        enc.copy_buffer_to_buffer(src, 0, dst, 0, 4)
        dev.queue.submit([enc.finish()])
        dst.map_sync(wgpu.MapMode.READ)
        dst.unmap()
        spans.append((op, start, recording.clock(), lane))
    return spans, {lane: lane_name}


class Timestamps:
    """GPU timestamps around every dispatch: ``record`` encodes them (the caller submits the
    encoder), ``spans`` reads them back afterwards as ``(spans, lanes)``."""

    def __init__(self, ctx, dispatches) -> None:
        self.ctx, self.dispatches = ctx, dispatches
        self.sets: list = []  # (query set, resolve buffer, queries)

    def record(self):
        """A command encoder with every dispatch timestamped and the queries resolved."""
        import wgpu

        dev = self.ctx.device
        n = 2 * len(self.dispatches)
        for first in range(0, n, MAX_QUERIES):
            count = min(MAX_QUERIES, n - first)
            self.sets.append((dev.create_query_set(type=wgpu.QueryType.timestamp, count=count),
                              dev.create_buffer(size=8 * count, usage=wgpu.BufferUsage.QUERY_RESOLVE
                                                | wgpu.BufferUsage.COPY_SRC), count))
        enc = dev.create_command_encoder()
        for i, d in enumerate(self.dispatches):
            qs, j = self.sets[2 * i // MAX_QUERIES][0], 2 * i % MAX_QUERIES
            cp = enc.begin_compute_pass(timestamp_writes={"query_set": qs, "beginning_of_pass_write_index": j,
                                                          "end_of_pass_write_index": j + 1})
            encode(cp, [d])
            cp.end()
        for qs, buf, count in self.sets:
            enc.resolve_query_set(qs, 0, count, buf, 0)
        return enc

    def spans(self) -> tuple:
        """The timestamps, once the recorded encoder ran, as ``(spans, lanes)`` in nanoseconds."""
        dev = self.ctx.device
        ticks = np.concatenate([np.frombuffer(dev.queue.read_buffer(buf), np.uint64)[:count]
                                for _, buf, count in self.sets]) if self.sets else np.zeros(0, np.uint64)
        period = float(getattr(dev.queue, "get_timestamp_period", lambda: 1.0)())  # ns per tick
        ns = (ticks.astype(np.float64) * period).astype(np.int64)
        spans = [(d.op, int(ns[2 * i]), int(ns[2 * i + 1]), GPU_LANE) for i, d in enumerate(self.dispatches)]
        return spans, {GPU_LANE: f"GPU queue ({self.ctx.description})"}
