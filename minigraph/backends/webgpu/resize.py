"""``resize`` and ``resize_gradient`` (semantics: ``ops/resize.py``).

Separable, like the NumPy kernels: the forward is a W pass then an H pass
(``kernels/resize_axis.wgsl``, one thread per result element, two loads), through a float32
scratch tensor; the gradient runs the adjoint passes H then W (``resize_axis_grad.wgsl``, one
thread per dx element gathering the results that read it: no atomics). The taps come from the
integer fraction ``(A * o + B) / DEN`` of ``ops.resize.coefficients``, baked into the WGSL, so
nearest-neighbour ties fall exactly as on the NumPy backend.
"""
from __future__ import annotations

from math import prod

from ...errors import ResourceLimitError
from ...descriptors import ResizeMode
from ...ops.resize import SPATIAL_AXES, coefficients
from .loops import LOOP_MAX
from .registry import webgpu_kernel
from .wgsl import STORAGE, render

_LOOP_MAX = LOOP_MAX  # loop iterations one invocation may run (llvmpipe stops loops after 65,535)


def _common(attrs: dict, n: int, m: int) -> str:
    a, b, den = coefficients(n, m, attrs["center_result"], attrs["align_corners"])
    return render("resize_common", A=a, B=b, DEN=den, N=n,
                  NEAREST="true" if attrs["mode"] == ResizeMode.NEAREST else "false")


def _pass(kb, kernel: str, attrs: dict, shape: tuple, axis: int, n: int, m: int, src, dst, ti: str, to: str,
          label: str) -> tuple:
    """One pass along ``axis`` of a tensor of ``shape`` (whose ``axis`` has size ``n`` for the
    forward's source, ``m`` for its result); returns the shape after the pass."""
    grad = kernel == "resize_axis_grad"
    out_shape = list(shape)
    out_shape[axis] = n if grad else m
    total = prod(out_shape)
    a, b, den = coefficients(n, m, attrs["center_result"], attrs["align_corners"])
    if (a + 2) * (m + 1) + abs(b) + den >= 2 ** 31:  # the shader's coordinates are i32
        raise ResourceLimitError(f"{label}: resizing {n} to {m} along axis {axis} needs coordinates beyond the "
                                 "32-bit integers the kernel computes them in")
    if grad:
        loop = m if a == 0 or n <= 2 else min(m, 2 * den // a + 2)
        if loop > _LOOP_MAX:
            raise ResourceLimitError(f"{label}: one input element takes the gradient of {loop} results along axis "
                                     f"{axis}, more than the {_LOOP_MAX} loop iterations a kernel may run")
    src_text = render(kernel, COMMON=_common(attrs, n, m), TI=ti, TO=to, TOTAL=total,
                      INNER=prod(shape[axis + 1:]), N=n, M=m, A=a, B=b, DEN=den)
    kb.dispatch(src_text, [("ro", src), ("rw", dst)], -(-total // 256))
    return tuple(out_shape)


@webgpu_kernel("resize")
def _resize(step, kb):
    attrs = step.attrs
    h, w = SPATIAL_AXES[attrs["layout"]][1]
    shape = step.in_types[0].shape
    dt = STORAGE[step.out_types[0].dtype.name]
    out_h, out_w = attrs["size"]
    mid_shape = list(shape)
    mid_shape[w] = out_w
    mid = kb.scratch(4 * prod(mid_shape))
    label = step.op.name
    mid_t = _pass(kb, "resize_axis", attrs, shape, w, shape[w], out_w, kb.input(0), mid, dt, "f32", label)
    _pass(kb, "resize_axis", attrs, mid_t, h, shape[h], out_h, mid, kb.output(), "f32", dt, label)


@webgpu_kernel("resize_gradient")
def _resize_gradient(step, kb):
    attrs = step.attrs
    h, w = SPATIAL_AXES[attrs["layout"]][1]
    dy_shape = step.in_types[0].shape
    x_shape = step.out_types[0].shape
    dt = STORAGE[step.out_types[0].dtype.name]
    mid_shape = list(dy_shape)
    mid_shape[h] = x_shape[h]
    mid = kb.scratch(4 * prod(mid_shape))
    label = step.op.name
    mid_t = _pass(kb, "resize_axis_grad", attrs, dy_shape, h, x_shape[h], dy_shape[h], kb.input(0), mid, dt, "f32",
                  label)
    _pass(kb, "resize_axis_grad", attrs, mid_t, w, x_shape[w], dy_shape[w], mid, kb.output(), "f32", dt, label)

