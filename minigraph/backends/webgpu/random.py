"""WGSL kernels of the random ops (semantics: ops/random.py; the formulas: backends/numpy/random.py).

``kernels/random.wgsl`` holds Philox4x32-10 in u32 arithmetic (the 32x32 -> 64-bit products
from 16-bit halves) and the float32 formulas of the NumPy kernels, with every constant baked
in as its exact float32 bits. One invocation computes one Philox block (4 words). The run's
draw number is a small storage buffer written before each run (``before_each_run``), so the
recorded dispatches stay the same from run to run.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ... import philox
from ...descriptors import RandomDistribution, RandomNormalSamplingMethod
from ...ops.random import blocks_used, descriptor_of, keep_threshold
from ..numpy.random import TRUNCATED_ATTEMPTS, below, dropout_scale, truncated_params, uniform_params
from .buffers import Ref, _Buf
from .registry import webgpu_kernel
from .wgsl import STORAGE, render


def lit(x) -> str:
    """A float32 constant as its exact bits."""
    return f"bitcast<f32>({int(np.float32(x).view(np.uint32))}u)"


def _poly(coeffs) -> str:
    lines = [f"    p = {lit(coeffs[0])};"]
    lines += [f"    p = {lit(c)} + p * v;" for c in coeffs[1:]]
    return "\n".join(lines)


_COS_POLY = (f"  let c = (({lit(2.443315711809948e-05)} * z - {lit(1.388731625493765e-03)}) * z + "
             f"{lit(4.166664568298827e-02)}) * z * z - 0.5 * z + 1.0;\n"
             f"  let s = (({lit(-1.9515295891e-04)} * z + {lit(8.3321608736e-03)}) * z - {lit(1.6666654611e-01)}) "
             "* z * a + a;")


def _draw_buffer(kb) -> Ref:
    """A 16-byte buffer holding the draw number, rewritten before every run."""
    import wgpu

    dev = kb.ctx.device
    buf = dev.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST)
    kb.keep_alive(buf)

    def write() -> None:
        d = philox.current_draw()
        dev.queue.write_buffer(buf, 0, np.array([d & philox.MASK32, (d >> 32) & philox.MASK32, 0, 0], np.uint32))
    kb.before_each_run(write)
    return Ref(_Buf(buf, 16, pooled=False), 16)


def _truncated_box_muller(d, bm: str, inv_cdf: str) -> str:
    """A WGSL function drawing element ``j`` of block ``b`` by rejection, as the NumPy kernel does."""
    return f"""fn truncated_box_muller(b: u32, j: u32) -> f32 {{
  for (var attempt = 0u; attempt < {TRUNCATED_ATTEMPTS}u; attempt = attempt + 1u) {{
    let w = philox(ctr(b, attempt));
    let wa = w[2u * j];
    let wb = w[2u * j + 1u];
    let x = {bm};
    if (x >= {lit(d.min)} && x < {lit(d.max)}) {{
      return x;
    }}
  }}
  let wl = philox(ctr(b, 0u))[2u * j];
  return {inv_cdf};
}}
"""


def _value(d) -> tuple[str, int, str]:
    """(the WGSL expression of one result from the word ``wl`` (or ``wa``/``wb``), words per element,
    helper functions it needs)."""
    dist = d.distribution
    m, s, sqrt2 = lit(d.mean), lit(d.standard_deviation), lit(math.sqrt(2.0))
    u1 = "(f32((wa >> 8u) + 1u) * (1.0 / 16777216.0))"
    bm = f"{m} + {s} * (sqrt(-2.0 * log_f32({u1})) * cos_2pi(uniform01(wb)))"
    box_muller = d.sampling_method == RandomNormalSamplingMethod.BOX_MULLER
    if dist == RandomDistribution.NORMAL and box_muller:
        return bm, 2, ""
    if dist == RandomDistribution.UNIFORM:
        if d.dtype.name == "int32":
            span = d.max_integer - d.min_integer + 1
            off = "wl" if span == 1 << 32 else f"mulhilo(wl, {span}u).x"
            return f"bitcast<i32>({d.min_integer & philox.MASK32}u + {off})", 1, ""
        low, span_f, top = uniform_params(d)
        return f"min({lit(low)} + uniform01(wl) * {lit(span_f)}, {lit(top)})", 1, ""
    if dist == RandomDistribution.NORMAL:
        return f"{m} + {s} * ({sqrt2} * erfinv(open_unit(wl)))", 1, ""
    a, b = truncated_params(d)
    t = f"{lit(a)} + ((open_unit(wl) + 1.0) * 0.5) * {lit(np.float32(b - a))}"
    inv_cdf = f"{m} + {s} * ({sqrt2} * erfinv({t}))"
    top = lit(below(d.max, d.dtype.name))
    if box_muller:
        return f"clamp(truncated_box_muller(b, {{J}}u), {lit(d.min)}, {top})", 2, _truncated_box_muller(d, bm, inv_cdf)
    return f"clamp({inv_cdf}, {lit(d.min)}, {top})", 1, ""


# The Philox counter of block b: (b, attempt, draw) for the seeded ops; for the ops taking a
# state tensor D (seven words: 1, counter low word first, key), D's counter + b + attempt * 2^32
# with carries, as minigraph.philox.random_words
_DRAW_CTR = """fn ctr(b: u32, attempt: u32) -> vec4<u32> {
  return vec4<u32>(b, attempt, D[0], D[1]);
}"""
_STATE_CTR = """fn ctr(b: u32, attempt: u32) -> vec4<u32> {
  let x0 = D[1] + b;
  let c0 = select(0u, 1u, x0 < b);
  let t1 = D[2] + attempt;
  let x1 = t1 + c0;
  let c1 = select(0u, 1u, t1 < attempt) + select(0u, 1u, x1 < c0);
  let x2 = D[3] + c1;
  let x3 = D[4] + select(0u, 1u, x2 < c1);
  return vec4<u32>(x0, x1, x2, x3);
}"""


def _source(out_dtype: str, n: int, seed: Optional[int], io: str, value: str, per_block: int, words: int,
            extra: str = "") -> str:
    """A random kernel; ``seed=None`` reads the counter and key from the state tensor in binding 0."""
    if seed is None:
        k0, k1, ctr = "D[5]", "D[6]", _STATE_CTR
    else:
        keys = philox.split_key(seed)
        k0, k1, ctr = f"{keys[0]}u", f"{keys[1]}u", _DRAW_CTR
    body = []
    for j in range(per_block):
        if words == 2:
            pick = f"    let wa = w[{2 * j}];\n    let wb = w[{2 * j + 1}];"
        else:
            pick = f"    let wl = w[{j}];"
        conv = "" if out_dtype == "int32" else STORAGE[out_dtype]
        body.append(f"  if (b * {per_block}u + {j}u < {n}u) {{\n    let i = b * {per_block}u + {j}u;\n{pick}\n"
                    f"    y[i] = {conv}({value.replace('{J}', str(j))});\n  }}")
    return render("random", IO=io, K0=k0, K1=k1, CTR=ctr, BLOCKS=-(-n // per_block), TWO_PI=lit(2 * math.pi),
                  COS_POLY=_COS_POLY, EXTRA=extra, SQRTHF=lit(0.70710677), LOG_C1=lit(-2.12194440e-4),
                  LOG_POLY="\n".join([f"  var p = {lit(philox.LOG_POLY[0])};"]
                                     + [f"  p = p * t + {lit(c)};" for c in philox.LOG_POLY[1:]]),
                  CENTRAL=_poly(philox.ERFINV_CENTRAL), TAIL=_poly(philox.ERFINV_TAIL), BODY="\n".join(body))


def _random(step, kb) -> None:
    d = descriptor_of(step.op)
    out = step.out_types[0]
    n = int(np.prod(out.shape, dtype=np.int64))
    stateful = step.op.type.endswith("_with_state")
    if n:
        value, words, extra = _value(d)
        per_block = 4 // words
        io = f"@group(0) @binding(1) var<storage, read_write> y: array<{STORAGE[out.dtype.name]}>;"
        src = _source(out.dtype.name, n, None if stateful else step.op.attrs["seed"], io, value, per_block,
                      words, extra)
        head = kb.input(0) if stateful else _draw_buffer(kb)
        kb.dispatch(src, [("ro", head), ("rw", kb.output())], -(-(-(-n // per_block)) // 256))
    if stateful:  # after the values: they read the state before it is advanced
        _advance_state(kb, blocks_used(d, n))


webgpu_kernel("random_tensor")(_random)
webgpu_kernel("random_uniform_tensor")(_random)
webgpu_kernel("random_tensor_with_state")(_random)
webgpu_kernel("random_uniform_tensor_with_state")(_random)


_ADVANCE = """@group(0) @binding(0) var<storage, read> D: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(1)
fn main() {
  let x0 = D[1] + {LO}u;
  let c0 = select(0u, 1u, x0 < {LO}u);
  let t1 = D[2] + {HI}u;
  let x1 = t1 + c0;
  let c1 = select(0u, 1u, t1 < {HI}u) + select(0u, 1u, x1 < c0);
  let x2 = D[3] + c1;
  y[0] = D[0];
  y[1] = x0;
  y[2] = x1;
  y[3] = x2;
  y[4] = D[4] + select(0u, 1u, x2 < c1);
  y[5] = D[5];
  y[6] = D[6];
}
"""


def _advance_state(kb, blocks: int) -> None:
    """Output 1: the input state with its 128-bit counter advanced by ``blocks``."""
    src = _ADVANCE.replace("{LO}", str(blocks & philox.MASK32)).replace("{HI}", str((blocks >> 32) & philox.MASK32))
    kb.dispatch(src, [("ro", kb.input(0)), ("rw", kb.output(1))], 1)


@webgpu_kernel("random_philox_state_tensor")
def _philox_state(step, kb) -> None:
    a = step.op.attrs
    words = philox.state_words(a["counter_low"] | a["counter_high"] << 64, a["key"]).view(np.uint32)
    body = "\n".join(f"  y[{i}] = {int(w)}u;" for i, w in enumerate(words))
    src = ("@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n"
           f"@compute @workgroup_size(1)\nfn main() {{\n{body}\n}}\n")
    kb.dispatch(src, [("rw", kb.output())], 1)


@webgpu_kernel("dropout")
def _dropout(step, kb) -> None:
    out = step.out_types[0]
    n = int(np.prod(out.shape, dtype=np.int64))
    if n == 0:
        return
    rate = step.op.attrs["rate"]
    t = STORAGE[out.dtype.name]
    io = (f"@group(0) @binding(1) var<storage, read> x: array<{t}>;\n"
          f"@group(0) @binding(2) var<storage, read_write> y: array<{t}>;")
    value = f"select(0.0, f32(x[i]) * {lit(dropout_scale(rate))}, (wl >> 8u) >= {keep_threshold(rate)}u)"
    src = _source(out.dtype.name, n, step.op.attrs["seed"], io, value, 4, 1)
    kb.dispatch(src, [("ro", _draw_buffer(kb)), ("ro", kb.input(0)), ("rw", kb.output())], -(-n // 1024))
