"""4-D pooling, max pooling with indices and the gradients from indices (semantics:
``ops/pooling_4d.py``; the NumPy kernels in ``backends/numpy/pooling_4d.py`` give the same tap order).

Forward: one invocation per window looping over its taps (``pool4d_forward.wgsl``); gradients
gather, one invocation per source element looping over the taps that can reach it
(``pool4d_grad.wgsl``), no atomics. Max-pooling gradients first record each window's chosen tap
in a scratch buffer: its argmax (the forward kernel in "arg" mode) or the tap its index names
(``pool4d_index_taps.wgsl``). The L2 gradient first computes the norms into a float32 scratch.
A window holds up to ``prod(kernel)`` taps, so both loops run in passes (``loops.long_loop``).
"""
from __future__ import annotations

from math import prod

from ...descriptors import PoolingReturnIndicesMode
from ...ops.pooling_4d import Window, covered_axes, is_local, window_of
from .loops import long_loop
from .registry import webgpu_kernel
from .wgsl import STORAGE, params_decl, render


def _suffix(sizes) -> list[int]:
    """Row-major strides of ``sizes`` (4 numbers) plus the whole product first: [all, s0, s1, s2]."""
    return [prod(sizes), prod(sizes[1:]), prod(sizes[2:]), prod(sizes[3:])]


def _constants(w: Window) -> dict:
    c: dict = {"TAPS": w.taps}
    for name, vals in (("K", w.kernel), ("S", w.strides), ("D", w.dilations), ("P", w.before),
                       ("N", w.input_size), ("O", w.output)):
        for a, v in enumerate(vals):
            c[f"{name}{a}"] = max(int(v), 1) if name in "KSDNO" else int(v)
    for name, vals in (("KP", w.kernel), ("NP", w.input_size), ("OP", w.output)):
        for a, v in enumerate(_suffix([max(s, 1) for s in vals])):
            c[f"{name}{a}"] = v
    return c


def _window(step) -> Window:
    return window_of(step.attrs["descriptor"], step.attrs.get("output_shape") or step.in_types[-1].shape)


def _divisor(w: Window, include_pad: bool) -> str:
    terms = []
    for a in range(4):
        lo, hi = (-w.before[a], w.input_size[a] + w.after[a]) if include_pad else (0, w.input_size[a])
        terms.append(f"taps_in(s{a}, {w.kernel[a]}, {w.dilations[a]}, {lo}, {hi})")
    return " * ".join(terms)


def _encode(w: Window, mode: PoolingReturnIndicesMode) -> str:
    """WGSL: the index of ``mode`` of tap ``best`` (i32)."""
    n = covered_axes(mode)
    lines = [f"  let e{a} = i32((best / {_suffix(w.kernel)[a + 1] if a < 3 else 1}u) % {w.kernel[a]}u);"
             for a in range(4)]
    expr = "0"
    for a in range(4 - n, 4):
        coord = f"e{a}" if is_local(mode) else f"(s{a} + e{a} * {w.dilations[a]})"
        size = w.kernel[a] if is_local(mode) else w.input_size[a]
        expr = f"({expr}) * {size} + {coord}"
    return "\n".join(lines) + f"\n    aux[t] = {expr};"


_MODES = {
    "max": ("if (best == 0xffffffffu || v > m || (mg_isnan(v) && !mg_isnan(m))) { m = v; best = k; }",
            "m = bitcast<f32>(state[2u * t]); best = state[2u * t + 1u];",
            "state[2u * t] = bitcast<u32>(m); state[2u * t + 1u] = best;", 2),
    "sum": ("acc = acc + v;", "acc = bitcast<f32>(state[t]);", "state[t] = bitcast<u32>(acc);", 1),
    "sq": ("acc = acc + v * v;", "acc = bitcast<f32>(state[t]);", "state[t] = bitcast<u32>(acc);", 1),
}


def record_forward(kb, w: Window, x, y, dt: str, kind: str, aux=None, mode=None, include_pad=False) -> None:
    """Windows of ``x`` into ``y``: kind "max" (and, with ``aux``, indices of ``mode``), "arg"
    (u32 taps), "avg", "l2", "l2f" (float32 norms)."""
    total = w.batch * prod(w.output)
    if total == 0:
        return
    step_kind = {"max": "max", "arg": "max", "avg": "sum", "l2": "sq", "l2f": "sq"}[kind]
    step, load, save, words = _MODES[step_kind]
    t = STORAGE[dt]
    store = {"max": f"    y[t] = {t}(m);", "arg": "    y[t] = best;",
             "avg": f"    y[t] = {t}(acc / ({_divisor(w, include_pad)}));",
             "l2": f"    y[t] = {t}(mg_sqrt(acc));", "l2f": "    y[t] = mg_sqrt(acc);"}[kind]
    if aux is not None:
        store += "\n" + _encode(w, mode)
    ty = {"arg": "u32", "l2f": "f32"}.get(kind, t)
    src = render("pool4d_forward", PARAMS=params_decl(2), T=t, TY=ty, TOTAL=total, STEP=step, LOAD=load, SAVE=save,
                 STORE=store, **_constants(w))
    dummy = aux if aux is not None else kb.scratch(4)

    def record(j0, j1, state):
        kb.dispatch(src, [("u", [j0, j1]), ("ro", x), ("rw", y), ("rw", dummy), ("rw", state)], -(-total // 256))

    long_loop(kb, w.taps, total, words, record)


def record_gradient(kb, w: Window, dy, aux, x, out, dt: str, kind: str, include_pad=False) -> None:
    """The gradient into ``out`` (source-shaped): kind "max" (``aux``: u32 chosen taps), "avg",
    "l2" (``aux``: float32 norms, ``x`` the source)."""
    total = prod(w.source_shape)
    if total == 0:
        return
    t = STORAGE[dt]
    div = " * ".join(f"taps_in(o{a} * {w.strides[a]} - {w.before[a]}, {w.kernel[a]}, {w.dilations[a]}, "
                     + (f"{-w.before[a]}, {w.input_size[a] + w.after[a]})" if include_pad else f"0, {w.input_size[a]})")
                     for a in range(4))
    step = {"max": "if (aux[w] == k) { acc = acc + f32(dy[w]); }",
            "avg": f"acc = acc + f32(dy[w]) / ({div});",
            "l2": "let yw = aux[w]; if (yw > 0.0) { acc = acc + f32(dy[w]) / yw; }"}[kind]
    store = f"out[t] = {t}(f32(x[t]) * acc);" if kind == "l2" else f"out[t] = {t}(acc);"
    src = render("pool4d_grad", PARAMS=params_decl(2), T=t, TA="f32" if kind == "l2" else "u32", TOTAL=total,
                 STEP=step, STORE=store, **_constants(w))

    def record(j0, j1, state):
        kb.dispatch(src, [("u", [j0, j1]), ("ro", dy), ("ro", aux), ("ro", x), ("rw", out), ("rw", state)],
                    -(-total // 256))

    long_loop(kb, w.taps, total, 1, record)


def record_index_taps(kb, w: Window, indices, taps, mode: PoolingReturnIndicesMode) -> None:
    total = w.batch * prod(w.output)
    if total == 0:
        return
    n = covered_axes(mode)
    sizes = w.kernel if is_local(mode) else w.input_size
    lines = []
    for a in range(3, 3 - n, -1):
        lines += [f"  let c{a} = rest % {sizes[a]};", f"  rest = rest / {sizes[a]};"]
    for a in range(4):
        lines.append(f"  let st{a} = o{a} * {w.strides[a]} - {w.before[a]};")
        if is_local(mode) or a < 4 - n:
            lines += [f"  let i{a} = {f'c{a}' if a >= 4 - n else '0'};", f"  let q{a} = st{a} + i{a} * {w.dilations[a]};"]
        else:
            lines += [f"  let q{a} = c{a};", f"  let f{a} = q{a} - st{a};",
                      f"  ok = ok && f{a} >= 0 && f{a} % {w.dilations[a]} == 0;", f"  let i{a} = f{a} / {w.dilations[a]};"]
        lines += [f"  ok = ok && i{a} >= 0 && i{a} < {w.kernel[a]} && q{a} >= 0 && q{a} < {w.input_size[a]};",
                  f"  tap = tap * {w.kernel[a]} + i{a};"]
    c = _constants(w)
    src = render("pool4d_index_taps", TOTAL=total, RANGE=prod(sizes[4 - n:]), DECODE="\n".join(lines),
                 **{k: c[k] for k in ("O0", "O1", "O2", "O3", "OP1", "OP2", "OP3")})
    kb.dispatch(src, [("ro", indices), ("rw", taps)], -(-total // 256))


def _dt(step) -> str:
    return step.out_types[0].dtype.name


@webgpu_kernel("max_pooling_4d")
def _max(step, kb):
    record_forward(kb, _window(step), kb.input(0), kb.output(), _dt(step), "max")


@webgpu_kernel("max_pooling_2d_return_indices", "max_pooling_4d_return_indices")
def _max_indices(step, kb):
    record_forward(kb, _window(step), kb.input(0), kb.output(0), _dt(step), "max", aux=kb.output(1),
                   mode=step.attrs["descriptor"].return_indices_mode)


@webgpu_kernel("avg_pooling_4d")
def _avg(step, kb):
    record_forward(kb, _window(step), kb.input(0), kb.output(), _dt(step), "avg",
                   include_pad=step.attrs["descriptor"].include_zero_pad_to_average)


@webgpu_kernel("l2_norm_pooling_4d")
def _l2(step, kb):
    record_forward(kb, _window(step), kb.input(0), kb.output(), _dt(step), "l2")


def _windows_scratch(kb, w: Window):
    return kb.scratch(4 * w.batch * prod(w.output))


@webgpu_kernel("max_pooling_4d_gradient")
def _max_grad(step, kb):
    w = _window(step)
    arg = _windows_scratch(kb, w)
    record_forward(kb, w, kb.input(1), arg, _dt(step), "arg")
    record_gradient(kb, w, kb.input(0), arg, kb.input(0), kb.output(), _dt(step), "max")


@webgpu_kernel("avg_pooling_4d_gradient")
def _avg_grad(step, kb):
    w = _window(step)
    record_gradient(kb, w, kb.input(0), kb.input(0), kb.input(0), kb.output(), _dt(step), "avg",
                    include_pad=step.attrs["descriptor"].include_zero_pad_to_average)


@webgpu_kernel("l2_norm_pooling_4d_gradient")
def _l2_grad(step, kb):
    w = _window(step)
    norms = _windows_scratch(kb, w)
    record_forward(kb, w, kb.input(1), norms, _dt(step), "l2f")
    record_gradient(kb, w, kb.input(0), norms, kb.input(1), kb.output(), _dt(step), "l2")


@webgpu_kernel("max_pooling_2d_gradient_with_indices", "max_pooling_4d_gradient_with_indices")
def _grad_indices(step, kb):
    w = _window(step)
    taps = _windows_scratch(kb, w)
    record_index_taps(kb, w, kb.input(1), taps, step.attrs["descriptor"].return_indices_mode)
    record_gradient(kb, w, kb.input(0), taps, kb.input(0), kb.output(), _dt(step), "max")
