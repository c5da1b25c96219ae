"""Where a run's time goes: ``Executable.profile`` times every op of a plan (not in MPSGraph).

A backend runner that can be profiled has a ``profile(feed_values, variables, clock)`` method, a
run path of its own beside ``__call__``: the normal run path times nothing. It returns
``(results, assigned, spans, clock name)``, where each span is ``(op, start ns, end ns, lane)``
for one op and ``lane`` names the thread (or the GPU queue) that ran it. The numpy backend times
each step with ``time.perf_counter_ns`` on the thread that runs it; the webgpu backend reads
timestamp queries written around each dispatch where the adapter has the ``timestamp-query``
feature, and otherwise waits for each op's dispatches on the host.

This module turns the spans of several repeats into a ``Profile``: one ``OpRecord`` per
executed op (median time, bytes moved, flops where known), a table sorted by time, and a
Chrome trace-event JSON file (Perfetto, chrome://tracing) with one lane per thread.
"""
from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from math import prod
from typing import Any, Iterator, Optional, Sequence

from .ops.convolution_transpose import transpose_geometry
from .ops.geometry import geometry_of
from .types import ShapedType

CLOCKS = ("gpu-timestamps", "host")

# families whose ops cost about one operation per output element
_ELEMENTWISE_FAMILIES = ("arithmetic", "comparison")
_ELEMENTWISE_TYPES = ("leaky_relu", "leaky_relu_gradient", "relu_gradient", "sigmoid_gradient")
# families that only move data: no arithmetic at all
_MOVEMENT_FAMILIES = ("shape", "gather", "memory")


# ----------------------------------------------------------------------------- costs
def nbytes(ty: ShapedType) -> int:
    """Bytes of a tensor of this type (its dtype's item size, as NumPy stores it; 0 for a
    data-dependent-shape result, whose -1 dimension is sized only when it runs)."""
    return prod(max(d, 0) for d in ty.shape) * ty.dtype.np_dtype.itemsize


def bytes_moved(step: Any) -> int:
    """Bytes an op reads and writes: every input once plus every output once."""
    return sum(nbytes(t) for t in step.in_types) + sum(nbytes(t) for t in step.out_types)


def conv_flops(step: Any) -> int:
    """Flops of a convolution-family step (forward, data or weights gradient, any kind): 2 per
    multiply-add, ``batch * out channels * in channels per group * kernel taps * output
    positions`` of them. The three ops of one convolution do the same number of multiply-adds."""
    geo = transpose_geometry(step) if step.op.type.startswith("convolution_transpose") else geometry_of(step)
    return 2 * geo.batch * geo.out_channels * geo.in_per_group * prod(geo.kernel_size) * prod(geo.output_size)


def pooling_flops(step: Any) -> int:
    """One comparison or addition per window tap of each output position."""
    geo = geometry_of(step)
    return geo.batch * geo.out_channels * prod(geo.kernel_size) * prod(geo.output_size)


def matmul_flops(step: Any) -> int:
    """2 * M * N * K per matrix of the (broadcast) batch."""
    a, out = step.in_types[0].shape, step.out_types[0].shape
    return 2 * prod(out) * (a[-1] if len(a) else 1)


class _Anchor:
    """The anchor of an epilogue step as a step of its own (what the cost formulas read)."""

    def __init__(self, op: Any, in_types: tuple, out_types: tuple):
        self.op, self.in_types, self.out_types = op, in_types, out_types
        self.attrs = op.attrs
        self.program = ()


def flops(step: Any) -> Optional[int]:
    """Floating-point operations of one step, where the op's cost is known; else None."""
    op = step.op
    program = getattr(step, "program", ())
    if program:  # a fused step: its ops' elementwise work, after its anchor's (an epilogue's)
        tail = sum(prod(ty.shape) for o, _, ty in program if o.opdef.elementwise)
        if program[0][0].opdef.elementwise:
            return tail
        a_op, args, a_ty = program[0]
        first = flops(_Anchor(a_op, tuple(step.in_types[a] for a in args), (a_ty,)))
        return None if first is None else first + tail
    family = op.opdef.family
    out = step.out_types
    if family == "convolution":
        return conv_flops(step)
    if family == "pooling":
        return pooling_flops(step)
    if family == "matmul":
        return matmul_flops(step)
    if family in _ELEMENTWISE_FAMILIES or op.type in _ELEMENTWISE_TYPES:
        return sum(prod(t.shape) for t in out)
    if family == "reduction" or op.type == "cumulative_sum":
        return prod(step.in_types[0].shape)
    if family in _MOVEMENT_FAMILIES or op.opdef.kind == "view":
        return 0
    return None


# ----------------------------------------------------------------------------- records
@dataclass
class OpRecord:
    """One executed op of a ``Profile``: its median time over the repeats and what it moved and
    computed (not in MPSGraph, which leaves profiling to Xcode's Metal System Trace)."""

    name: str
    type: str  # the step's type: the op's, fused_elementwise, or an epilogue step's anchor's
    shape: tuple  # the (first) output's shape
    dtype: str
    time: float  # seconds, median over the repeats
    times: list  # seconds, one per repeat
    bytes: int  # inputs read plus outputs written
    flops: Optional[int]  # None where the op's cost is not known
    lane: str = ""  # the thread (or GPU queue) that ran it
    share: float = 0.0  # of the profile's total op time
    kernel: str = ""  # the step's kernel: the op type, or fused_elementwise(multiplication+addition+relu)
    ops: tuple = ()  # the names of the ops the step computed (several for a fused step)

    @property
    def bandwidth(self) -> float:
        """Bytes per second at the median time."""
        return self.bytes / self.time if self.time > 0 else 0.0

    @property
    def flop_rate(self) -> Optional[float]:
        """Flops per second at the median time (None where the flops are not known)."""
        if self.flops is None:
            return None
        return self.flops / self.time if self.time > 0 else 0.0


@dataclass
class Profile:
    """What ``Executable.profile`` measured: ``records`` in plan order, one per executed op (not
    in MPSGraph, which leaves profiling to Xcode's Metal System Trace).

    ``clock`` says where the times come from: ``"gpu-timestamps"`` (timestamp queries written by
    the GPU around each dispatch) or ``"host"`` (the host's clock around each op, waiting for a
    GPU op to finish). ``str(profile)`` is ``profile.table()``.
    """

    records: list
    backend: str
    clock: str
    repeats: int
    device: str = ""
    run_times: list = field(default_factory=list)  # seconds: each profiled run, on the host
    spans: list = field(default_factory=list)  # per repeat: [(record index, start ns, end ns, lane id)]
    lanes: dict = field(default_factory=dict)  # lane id -> lane name
    results: list = field(default_factory=list)  # the targets of the last repeat
    blocks: list = field(default_factory=list)  # per repeat: kernels' worker blocks, as spans

    def __iter__(self) -> Iterator[OpRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i: int) -> OpRecord:
        return self.records[i]

    def __repr__(self) -> str:  # the table, so a REPL or notebook shows it where the call was typed
        return self.table()

    @property
    def total(self) -> float:
        """Seconds: the sum of the ops' median times."""
        return sum(r.time for r in self.records)

    @property
    def run_time(self) -> float:
        """Seconds: the median host time of a whole profiled run (uploads, readback and the
        profiler's own waits included)."""
        return statistics.median(self.run_times) if self.run_times else 0.0

    def by_type(self) -> list:
        """``[(op type, seconds, share)]``: the time summed per op type, largest first."""
        acc: dict = {}
        for r in self.records:
            acc[r.type] = acc.get(r.type, 0.0) + r.time
        total = self.total
        return sorted(((t, s, s / total if total else 0.0) for t, s in acc.items()), key=lambda x: -x[1])

    def type_table(self) -> str:
        """The time summed per op type, largest first: type, ops, ms, share, bytes and flops."""
        acc: dict = {}
        for r in self.records:
            n, t, b, f = acc.get(r.type, (0, 0.0, 0, 0))
            acc[r.type] = (n + 1, t + r.time, b + r.bytes, f + (r.flops or 0))
        total = self.total
        head = ["type", "ops", "time ms", "share", "MB", "MFLOP"]
        body = [[t, str(n), f"{s * 1e3:.3f}", f"{s / total if total else 0.0:6.1%}", f"{b / 1e6:.3f}", f"{f / 1e6:.3f}"]
                for t, (n, s, b, f) in sorted(acc.items(), key=lambda kv: -kv[1][1])]
        widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
        return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                         for row in [head] + body)

    def table(self, top: Optional[int] = None) -> str:
        """The ops sorted by time, largest first, each with its share of the total; a total line.

        Args:
            top: Show only this many ops (the total still counts every op).
        """
        rows = sorted(self.records, key=lambda r: -r.time)
        shown = rows if top is None else rows[:top]
        head = ["time ms", "share", "cum", "type", "output", "MB", "MFLOP", "GB/s", "GFLOP/s", "op"]
        body = []
        cum = 0.0
        for r in shown:
            cum += r.share
            rate = r.flop_rate
            body.append([f"{r.time * 1e3:.3f}", f"{r.share:6.1%}", f"{cum:6.1%}", r.type,
                         ("x".join(str(d) if d >= 0 else "?" for d in r.shape) or "scalar") if r.dtype else "-", f"{r.bytes / 1e6:.3f}",
                         "-" if r.flops is None else f"{r.flops / 1e6:.3f}", f"{r.bandwidth / 1e9:.2f}",
                         "-" if rate is None else f"{rate / 1e9:.2f}", r.name])
        if len(shown) < len(rows):
            rest = rows[len(shown):]
            body.append([f"{sum(r.time for r in rest) * 1e3:.3f}", f"{sum(r.share for r in rest):6.1%}", "100.0%",
                         f"({len(rest)} more ops)", "", "", "", "", "", ""])
        moved = sum(r.bytes for r in self.records)
        known = sum(r.flops or 0 for r in self.records)
        body.append([f"{self.total * 1e3:.3f}", "100.0%", "", f"total ({len(rows)} op{'' if len(rows) == 1 else 's'})", "", f"{moved / 1e6:.3f}",
                     f"{known / 1e6:.3f}", "", "", ""])
        widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
        left = {3, 4, 9}

        def line(cells):
            return "  ".join(str(c).ljust(w) if i in left else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
        title = (f"profile: {self.backend} backend{' on ' + self.device if self.device else ''}, "
                 f"{self.repeats} repeat(s), median per op, clock: {self.clock}; "
                 f"whole run {self.run_time * 1e3:.3f} ms on the host")
        rule = "-" * len(line(head))
        return "\n".join([title, line(head), rule] + [line(b) for b in body[:-1]] + [rule, line(body[-1])])

    def __str__(self) -> str:
        return self.table()

    def trace(self) -> dict:
        """The profile as Chrome trace events: one complete ("X") event per op per repeat, one
        lane (tid) per thread that ran kernels (or the GPU queue), named by metadata events; the
        blocks a kernel ran on worker threads as begin/end ("B", "E") pairs under the op's name."""
        pid = os.getpid()
        events: list = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                         "args": {"name": f"minigraph {self.backend}" + (f" ({self.device})" if self.device else "")}}]
        for lane, name in self.lanes.items():
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": lane, "args": {"name": name}})
        starts = [s for spans in self.spans for _, s, _, _ in spans]
        origin = min(starts) if starts else 0
        for rep, spans in enumerate(self.spans):
            for i, start, end, lane in spans:
                r = self.records[i]
                events.append({"name": r.name, "cat": r.type, "ph": "X", "pid": pid, "tid": lane,
                               "ts": (start - origin) / 1e3, "dur": max(end - start, 0) / 1e3,
                               "args": {"type": r.type, "shape": list(r.shape), "dtype": r.dtype, "bytes": r.bytes,
                                        "flops": r.flops, "repeat": rep}})
        for rep, blocks in enumerate(self.blocks):  # begin/end pairs: the ops alone are complete events
            for i, start, end, lane in blocks:
                r = self.records[i]
                events.append({"name": r.name, "cat": r.type, "ph": "B", "pid": pid, "tid": lane,
                               "ts": (start - origin) / 1e3, "args": {"type": r.type, "block": True, "repeat": rep}})
                events.append({"name": r.name, "cat": r.type, "ph": "E", "pid": pid, "tid": lane,
                               "ts": (max(end, start) - origin) / 1e3})
        return {"traceEvents": events, "displayTimeUnit": "ms",
                "otherData": {"backend": self.backend, "clock": self.clock, "repeats": self.repeats,
                              "device": self.device}}

    def save_trace(self, path: str) -> None:
        """Write the Chrome trace-event JSON (open it in https://ui.perfetto.dev or chrome://tracing).

        Args:
            path: The file to write (``.json``).
        """
        with open(path, "w") as f:
            json.dump(self.trace(), f)


def build_profile(plan: Any, runs: Sequence[tuple], backend: str, clock_name: str, device: str = "") -> Profile:
    """A ``Profile`` from each repeat's ``(spans, lanes {id: name}, host seconds of the run,
    results, worker blocks)``; the spans ``(op, start ns, end ns, lane id)`` come in execution
    order, and several spans of one op (its dispatches) add up. Worker blocks (the same tuples,
    from ``Recorder``) go to the trace only: their op's time is its span."""
    step_of = {id(st.op): st for st in plan.steps}
    index: dict = {}  # id(op) -> record index, in the order the ops first ran
    steps: list = []
    per_repeat: list = []  # per repeat: {record index: (ns, first start, lane)}
    lanes: dict = {}
    for spans, run_lanes, _, _, _ in runs:
        lanes.update(run_lanes)
        took: dict = {}
        for op, start, end, lane in spans:
            k = index.get(id(op))
            if k is None:
                k = index[id(op)] = len(steps)
                steps.append(step_of[id(op)])
            ns, first, ln = took.get(k, (0, start, lane))
            took[k] = (ns + max(end - start, 0), first, ln)
        per_repeat.append(took)
    records = []
    for k, st in enumerate(steps):
        times = [took[k][0] / 1e9 if k in took else 0.0 for took in per_repeat]
        lane = next((took[k][2] for took in per_repeat if k in took), 0)
        out = st.out_types[0] if st.out_types else None
        anchor = getattr(st, "anchor", None)  # an epilogue step counts as its anchor's type
        kind = anchor.type if anchor is not None else getattr(st, "type", st.op.type)
        records.append(OpRecord(st.op.name, kind, tuple(out.shape) if out else (),
                                out.dtype.name if out else "", statistics.median(times),
                                times, bytes_moved(st), flops(st), lanes.get(lane, str(lane)),
                                kernel=getattr(st, "kernel", st.op.type),
                                ops=tuple(o.name for o in getattr(st, "ops", (st.op,)))))
    total = sum(r.time for r in records)
    for r in records:
        r.share = r.time / total if total else 0.0
    spans_out = [sorted(((k, first, first + ns, ln) for k, (ns, first, ln) in took.items()), key=lambda s: s[1])
                 for took in per_repeat]
    blocks = [[(index[id(op)], start, end, lane) for op, start, end, lane in run[4] if id(op) in index]
              for run in runs]
    return Profile(records, backend, clock_name, len(runs), device, [run[2] for run in runs], spans_out, lanes,
                   list(runs[-1][3]) if runs else [], blocks)
