"""Complex and Fourier-transform kernels (semantics: ``ops/complex.py``, ``ops/fft.py``).

complex64 is stored as (real, imaginary) f32 pairs (``vec2<f32>``); complex32 is refused. The
complex ops are broadcasting elementwise maps. A Fourier transform is one direct DFT pass per
transformed axis (``kernels/dft_axis.wgsl``), each result element summing the axis with a
host-made twiddle table (float64 rounded to f32, indexed by ``m k mod n``, so no sine is
evaluated on the device), through complex64 scratch buffers between axes; the scale is applied
in the last pass. The sum over an axis runs in passes of at most ``loops.LOOP_MAX`` iterations
(``loops.long_loop``). Work is O(n) per element, O(N sum n_j) in all: meant for moderate sizes.
The terms are summed in blocks of 64 (rounding grows with 64 + n / 64, not n). Axes longer than
``MAX_AXIS`` are refused. Measured against numpy.fft in float64 (largest error over the largest
value, random complex input): 6e-8 at n = 8, 2e-7 at 256, 3e-7 at 4096, 9e-7 at 32768.
"""
from __future__ import annotations


import numpy as np

from ...errors import ResourceLimitError
from ...types import num_elements
from .buffers import Ref, _Buf
from .elementwise import COMPLEX_EXPRESSIONS, elementwise_source
from .kernel_builder import COMPLEX_OPS
from .loops import long_loop
from .registry import webgpu_kernel
from .wgsl import f32_literal, params_decl, render

_PARTS = {"complex_tensor", "real_part_of_tensor", "imaginary_part_of_tensor", "conjugate", "absolute_square",
          "planar_tensor"}
_FFTS = {"fast_fourier_transform", "real_to_hermitean_fft", "hermitean_to_real_fft"}
COMPLEX_OPS.update(_PARTS | _FFTS | set(COMPLEX_EXPRESSIONS) | {"cast"})
MAX_AXIS = 32768  # the longest transformed axis (a direct DFT is O(n^2) work)


def _map(kb, step, expr) -> None:
    ins = [(kb.input(i), t.dtype.name, tuple(t.shape)) for i, t in enumerate(step.in_types)]
    out = step.out_types[0]
    if num_elements(tuple(out.shape)) == 0:
        return
    src, params = elementwise_source([d for _, d, _ in ins], [s for _, _, s in ins], out.dtype.name,
                                     tuple(out.shape), lambda v, ct, o: expr(v))
    kb.dispatch(src, [("u", params)] + [("ro", r) for r, _, _ in ins] + [("rw", kb.output())],
                -(-params[0] // 256))


_COMPLEX_EXPR = {
    "real_part_of_tensor": lambda v: f"{v[0]}.x",
    "imaginary_part_of_tensor": lambda v: f"{v[0]}.y",
    "conjugate": lambda v: f"vec2<f32>({v[0]}.x, -{v[0]}.y)",
    "absolute_square": lambda v: f"({v[0]}.x * {v[0]}.x + {v[0]}.y * {v[0]}.y)",
}
_REAL_EXPR = {  # a real input: the op's meaning for a number with no imaginary part
    "real_part_of_tensor": lambda v: v[0], "imaginary_part_of_tensor": lambda v: "0.0",
    "conjugate": lambda v: v[0], "absolute_square": lambda v: f"({v[0]} * {v[0]})",
}


@webgpu_kernel(*sorted(_PARTS - {"planar_tensor", "complex_tensor"}))
def _part(step, kb):
    table = _COMPLEX_EXPR if step.in_types[0].dtype.is_complex else _REAL_EXPR
    _map(kb, step, table[step.op.type])


@webgpu_kernel("complex_tensor")
def _complex_tensor(step, kb):
    _map(kb, step, lambda v: f"vec2<f32>({v[0]}, {v[1]})")


@webgpu_kernel("planar_tensor")
def _planar(step, kb):
    """Two strided maps: the real parts into the first half of each last-axis row, then the imaginary parts."""
    t = step.in_types[0]
    shape = tuple(t.shape)
    total, n = num_elements(shape), shape[-1]
    if total == 0:
        return
    src = (params_decl(1) + "@group(0) @binding(1) var<storage, read> z: array<vec2<f32>>;\n"
           "@group(0) @binding(2) var<storage, read_write> out: array<f32>;\n"
           "@compute @workgroup_size(256)\n"
           "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
           "        @builtin(local_invocation_index) lid: u32) {\n"
           "  let i = (wid.y * nwg.x + wid.x) * 256u + lid;\n"
           f"  if (i >= {total}u) {{ return; }}\n"
           f"  let row = i / {n}u;\n  let c = i % {n}u;\n  let v = z[i];\n"
           f"  out[row * {2 * n}u + c] = v.x;\n  out[row * {2 * n}u + {n}u + c] = v.y;\n}}\n")
    kb.dispatch(src, [("u", [0]), ("ro", kb.input(0)), ("rw", kb.output())], -(-total // 256))


def _table(kb, n: int, inverse: bool) -> Ref:
    """exp(s 2 pi i r / n) for r < n, in float64 rounded to f32 pairs, as a device buffer."""
    r = np.arange(max(n, 1), dtype=np.float64)
    tw = np.exp((1j if inverse else -1j) * 2 * np.pi * r / max(n, 1)).astype(np.complex64)
    buf = kb.ctx.device.create_buffer_with_data(data=tw, usage=kb._pool._usage)
    kb.keep_alive(buf)
    return Ref(_Buf(buf, tw.nbytes, pooled=False), tw.nbytes)


def _axis_pass(kb, src_ref, src_shape, real_in: bool, axis: int, n: int, len_out: int, mode: str,
               dst_ref, scale: float, inverse: bool) -> None:
    """One axis: ``mode`` "c2c" (len_out = n), "r2c" (real input, the first len_out outputs) or
    "c2r" (Hermitean half of ``src_shape[axis]`` entries to n real outputs)."""
    len_in = src_shape[axis]
    inner = num_elements(src_shape[axis + 1:])
    outer = num_elements(src_shape[:axis])
    total = outer * len_out * inner
    if total == 0:
        return
    load = "vec2<f32>(x[base + m * {inner}u], 0.0)" if real_in else "x[base + m * {inner}u]"
    if mode == "c2r":
        half = f"(m == 0u || {'m * 2u == ' + str(n) + 'u' if n % 2 == 0 else 'false'})"
        weight = f"select(2.0, 1.0, {half})"
        store, tout = f"{f32_literal(scale)} * s.x", "f32"
    else:
        weight, store, tout = "1.0", f"{f32_literal(scale)} * s", "vec2<f32>"
    src = render("dft_axis", PARAMS=params_decl(2), TIN="f32" if real_in else "vec2<f32>", TOUT=tout,
                 TOTAL=total, INNER=max(inner, 1), LEN_OUT=max(len_out, 1), LEN_IN=len_in, N=max(n, 1),
                 LOAD=load.format(inner=inner), WEIGHT=weight, STORE=store)
    tw = _table(kb, n, inverse)

    def record(j0, j1, state):
        kb.dispatch(src, [("u", [j0, j1]), ("ro", src_ref), ("ro", tw), ("rw", dst_ref), ("rw", state)],
                    -(-total // 256))

    long_loop(kb, len_in, total, 4, record)


@webgpu_kernel(*sorted(_FFTS))
def _fft(step, kb):
    t, out = step.in_types[0], step.out_types[0]
    a = step.attrs
    axes, desc = tuple(a["axes"]), a["descriptor"]
    last = axes[-1]
    in_shape, out_shape = tuple(t.shape), tuple(out.shape)
    if num_elements(out_shape) == 0:
        return
    typ = step.op.type
    for ax in axes:
        n = max(in_shape[ax], out_shape[ax])
        if n > MAX_AXIS:
            raise ResourceLimitError(f"{kb.label}: the webgpu backend's Fourier transform sums each axis directly "
                                     f"(O(n^2)); axis {ax} has {n} entries, more than {MAX_AXIS}: run it with "
                                     "backend='numpy'")
    sizes = [out_shape[ax] if typ == "hermitean_to_real_fft" else in_shape[ax] for ax in axes]
    scale = desc.scaling_mode.factor(int(np.prod(sizes)))
    # the passes in order: (axis, mode); r2c does its last axis first, c2r last
    if typ == "real_to_hermitean_fft":
        order = [(last, "r2c")] + [(ax, "c2c") for ax in axes[:-1]]
    elif typ == "hermitean_to_real_fft":
        order = [(ax, "c2c") for ax in axes[:-1]] + [(last, "c2r")]
    else:
        order = [(ax, "c2c") for ax in axes]
    cur_ref, cur_shape, real = kb.input(0), in_shape, not t.dtype.is_complex
    for j, (ax, mode) in enumerate(order):
        final = j == len(order) - 1
        if mode == "c2r":
            n = out_shape[ax]
        else:
            n = cur_shape[ax]
        len_out = out_shape[ax] if mode != "c2c" else n
        nxt_shape = tuple(len_out if i == ax else d for i, d in enumerate(cur_shape))
        dst = kb.output() if final else kb.scratch(8 * num_elements(nxt_shape))
        _axis_pass(kb, cur_ref, cur_shape, real, ax, n, len_out, mode, dst, scale if final else 1.0, desc.inverse)
        cur_ref, cur_shape, real = dst, nxt_shape, False

