"""The depthwise forward op and its data gradient as flat einsums, for "same"-like geometry."""
from __future__ import annotations

from typing import Optional

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ....ops.geometry import ConvGeometry
from .polyphase import phase_groups, progression
from .workers import FAST_TASK_WORK, Workspaces, buffer, channel_blocks, check_sizes, run_blocks, threads_to_use


def is_same_like(geo: ConvGeometry) -> bool:
    """"Same"-like geometry: ``OH == ceil(H / sY)`` and ``OW == ceil(W / sX)``, so every
    polyphase plane of x has the output plane's shape."""
    return all(o == -(-n // s) for o, n, s in zip(geo.output_size, geo.input_size, geo.strides))


class _SameAccPlan:
    """Flat forward / data gradient for "same"-like geometry, any stride and dilation.

    x is split into its ``sY x sX`` polyphase planes (stride 1: x itself), each of the output
    plane's shape ``OH x OW``. Tap ``(i, j)`` then reads phase ``(a_i, b_j)`` at the constant
    flat offset ``u_i * OW + v_j`` (``i*dilation - pT = sY*u_i + a_i``), so in the flattened
    ``(channel, position)`` vector every tap is one shifted copy, and ``np.einsum`` runs over long
    contiguous vectors for a chunk of channels at a time. The padding is a per-tap mask folded
    into the per-channel weights (``coef * mask``, built per chunk, reused for all images).
    The data gradient is the transpose: dy is the flat source, and each polyphase plane of dx
    gathers the taps of its phase at offsets ``-(u_i * OW + v_j)``; the planes are then
    interleaved into dx. Values read across a row or plane end are multiplied by a zero of the
    mask; a non-finite result makes the plan return None so the caller runs its exact kernel.
    """

    def __init__(self, geo: ConvGeometry, dtype, sign: int, threads: Optional[int]):
        check_sizes(geo)
        if not is_same_like(geo):
            raise ValueError(f"{geo}: the flat algorithm needs a 'same' output plane (OH = ceil(H/sY), "
                             f"OW = ceil(W/sX))")
        self.geo = geo
        self.dtype = np.dtype(dtype)
        self.cdtype = np.dtype(np.float32) if self.dtype == np.float16 else self.dtype
        self.threads = threads  # None: get_num_threads() at each call
        self.sign = sign
        (h, w), (kh, kw), (oh, ow) = geo.input_size, geo.kernel_size, geo.output_size
        (stride_h, stride_w), (dilation_h, dilation_w) = geo.strides, geo.dilations
        top, left = geo.padding_before
        self.P = P = oh * ow
        rows = [divmod(i * dilation_h - top, stride_h) for i in range(kh)]  # (u, a)
        cols = [divmod(j * dilation_w - left, stride_w) for j in range(kw)]  # (v, b)
        self.rgroups = phase_groups([(a, u) for u, a in rows])
        self.cols = cols
        self.nph = stride_h * stride_w
        # mask[i, j, q] on the output plane: forward, the x read is inside x; data gradient,
        # the dy read (r - u, s - v) is inside dy
        out_rows = np.arange(oh)[:, None]
        out_cols = np.arange(ow)[None, :]
        self.mask = np.zeros((kh, kw, P), self.cdtype)
        offs = []
        for i, (u, a) in enumerate(rows):
            for j, (v, b) in enumerate(cols):
                if sign > 0:
                    ih = out_rows * stride_h + i * dilation_h - top
                    iw = out_cols * stride_w + j * dilation_w - left
                    ok = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)
                    offs.append((a * stride_w + b) * geo.batch * geo.in_channels * P + u * ow + v)
                else:
                    ok = (out_rows - u >= 0) & (out_rows - u < oh) & (out_cols - v >= 0) & (out_cols - v < ow)
                    offs.append(-(u * ow + v))
                self.mask[i, j] = ok.reshape(-1)
        # margins: reads before the first plane / past the last one (times a zero of the mask)
        shifts = [u * ow + v for u, _ in rows for v, _ in cols]
        self.lo = max(0, -min(offs)) + 1
        self.hi = max(0, max(shifts) if sign > 0 else -min(shifts)) + 1
        self.chunk = max(1, (1 << 14) // P)  # channels per chunk: ~16K positions
        self._workspaces = Workspaces()

    def _fill_src(self, buf, src, threads: int):
        """Copy the source into the flat buffer: forward, x's polyphase planes; data gradient, dy
        (by blocks of images on the thread pool: a copy of the whole source)."""
        geo, P = self.geo, self.P
        parts = channel_blocks(geo.batch, min(threads, max(1, src.size // (1 << 18))))
        if self.sign < 0:  # src: dy as [N, M, C, OH, OW]
            dst = buf[self.lo: self.lo + src.size].reshape(src.shape)
            run_blocks(lambda n0, n1: dst[n0:n1].__setitem__(Ellipsis, src[n0:n1]), parts, threads)
            return
        (h, w), (stride_h, stride_w) = geo.input_size, geo.strides
        body = buf[self.lo: self.lo + self.nph * geo.batch * geo.in_channels * P].reshape(
            (stride_h, stride_w, geo.batch, geo.in_channels) + geo.output_size)

        def fill(n0, n1):
            for a in range(stride_h):
                for b in range(stride_w):
                    ha, wb = -(-(h - a) // stride_h), -(-(w - b) // stride_w)
                    if ha > 0 and wb > 0:  # the rest of the plane stays zero (and is masked anyway)
                        body[a, b, n0:n1, :, :ha, :wb] = src[n0:n1, :, a::stride_h, b::stride_w]

        run_blocks(fill, parts, threads)

    def _views(self, ws, buf):
        """Strided views over all channels, one per (source plane, tap column, row group)."""
        cached = ws.get("views")
        if cached is not None and cached[0] is buf:
            return cached[1]
        geo, P, it = self.geo, self.P, buf.itemsize
        n, c, m, ow, stride_w = geo.batch, geo.in_channels, geo.channel_multiplier, geo.output_size[1], geo.strides[1]
        nsrc = m if self.sign < 0 else 1
        views = {}
        for s_idx in range(nsrc):
            for j, (v, b) in enumerate(self.cols):
                for gi, (a, itaps, u0, du) in enumerate(self.rgroups):
                    if self.sign > 0:
                        base = self.lo + (a * stride_w + b) * n * c * P + u0 * ow + v
                        nstride, istride = c * P, du * ow
                    else:
                        base = self.lo + s_idx * c * P - (u0 * ow + v)
                        nstride, istride = nsrc * c * P, -du * ow
                    views[s_idx, j, gi] = as_strided(buf[base:], shape=(n, len(itaps), c * P),
                                                     strides=(nstride * it, istride * it, it), writeable=False)
        ws["views"] = (buf, views)
        return views

    def _apply(self, src: np.ndarray, coef: np.ndarray, outs) -> None:
        """``outs[k]``: forward, ``[y]`` with y ``[N, C, M, P]``; data gradient, one ``[N, C, P]``
        per output phase ``k = a * sX + b``, summed over m and the taps."""
        geo, P, C = self.geo, self.P, self.geo.in_channels
        n, m, stride_w = geo.batch, geo.channel_multiplier, geo.strides[1]
        fwd = self.sign > 0
        ws = self._workspaces.acquire()
        try:
            size = (self.nph if fwd else m) * n * C * P
            buf = buffer(ws, "src", self.lo + size + self.hi, self.cdtype)
            threads = threads_to_use(self.threads)
            self._fill_src(buf, src, threads)
            views = self._views(ws, buf)

            def block(c0, c1):
                tmp = np.empty((n, min(self.chunk, c1 - c0) * P), self.cdtype)
                for a0 in range(c0, c1, self.chunk):
                    a1 = min(c1, a0 + self.chunk)
                    cb, span = a1 - a0, (a1 - a0) * P
                    t = tmp[:, :span]
                    started = set()
                    for mm in range(m):
                        # coef * mask for this chunk: [kh, kw, cb, P]
                        wm = coef[a0:a1, mm].transpose(1, 2, 0)[:, :, :, None] * self.mask[:, :, None, :]
                        if fwd:
                            started = set()  # each m is its own output
                        for j, (v, b) in enumerate(self.cols):
                            for gi, (a, itaps, u0, du) in enumerate(self.rgroups):
                                # one einsum per tap column and row phase: a (tap, position)
                                # stride tie would make einsum loop over the taps innermost
                                v_all = views[0 if fwd else mm, j, gi]
                                w_g = wm[progression(itaps), j]  # [ni, cb, P]
                                if fwd:
                                    key, o = 0, outs[0][:, a0:a1, mm]  # [N, cb, P]
                                else:
                                    key = a * stride_w + b
                                    o = outs[key][:, a0:a1]  # [N, cb, P]
                                if fwd and m > 1:  # output channels interleave: no flat axis
                                    vv = v_all.reshape(n, len(itaps), C, P)[:, :, a0:a1]
                                    spec, tv = "nicq,icq->ncq", t.reshape(n, cb, P)
                                else:
                                    vv, o = v_all[:, :, a0 * P: a1 * P], o.reshape(n, span)
                                    w_g, spec, tv = w_g.reshape(len(itaps), span), "niq,iq->nq", t
                                if key not in started:
                                    np.einsum(spec, vv, w_g, out=o)
                                    started.add(key)
                                else:
                                    np.einsum(spec, vv, w_g, out=tv)
                                    o += tv
                    if not fwd:  # phases no tap reaches are zero
                        for key, o in enumerate(outs):
                            if key not in started and o is not None:
                                o[:, a0:a1] = 0

            with np.errstate(invalid="ignore", over="ignore"):
                # a task needs FAST_TASK_WORK multiply-adds: more, smaller tasks only contend
                tasks = min(threads, max(1, n * m * C * P * len(self.mask) * len(self.cols) // FAST_TASK_WORK))
                run_blocks(block, channel_blocks(C, tasks), threads)
        finally:
            self._workspaces.release(ws)


class ForwardPlan(_SameAccPlan):
    """``plan(x [N, C, H, W], w [C, M, kh, kw]) -> y [N, C, M, OH, OW]`` ("same"-like geometry,
    any stride and dilation), or None when the result is not finite (the caller then runs its
    exact kernel)."""

    def __init__(self, geo: ConvGeometry, dtype=np.float32, threads: Optional[int] = None):
        super().__init__(geo, dtype, +1, threads)

    def __call__(self, x: np.ndarray, w: np.ndarray) -> Optional[np.ndarray]:
        geo = self.geo
        y = np.empty((geo.batch, geo.in_channels, geo.channel_multiplier, self.P), self.cdtype)
        self._apply(x, w.astype(self.cdtype, copy=False), [y])
        with np.errstate(invalid="ignore", over="ignore"):  # a NaN/Inf sum only selects the exact path
            finite = np.isfinite(np.add.reduce(y, axis=None))
        if not finite:
            return None
        return y.reshape((geo.batch, geo.in_channels, geo.channel_multiplier) + geo.output_size).astype(
            self.dtype, copy=False)


class DataGradientPlan(_SameAccPlan):
    """``plan(dy [N, C, M, OH, OW], w [C, M, kh, kw]) -> dx [N, C, H, W]`` ("same"-like
    geometry, any stride and dilation), or None when the result is not finite."""

    def __init__(self, geo: ConvGeometry, dtype=np.float32, threads: Optional[int] = None):
        super().__init__(geo, dtype, -1, threads)

    def __call__(self, dy: np.ndarray, w: np.ndarray) -> Optional[np.ndarray]:
        geo = self.geo
        n, c = geo.batch, geo.in_channels
        (h, width), (stride_h, stride_w) = geo.input_size, geo.strides
        if self.nph == 1:
            dx = np.empty((n, c, self.P), self.cdtype)
            self._apply(dy.transpose(0, 2, 1, 3, 4), w.astype(self.cdtype, copy=False), [dx])
            dx = dx.reshape(n, c, h, width)
        else:  # one plane per phase, then interleaved into dx
            planes = [np.empty((n, c, self.P), self.cdtype) for _ in range(self.nph)]
            self._apply(dy.transpose(0, 2, 1, 3, 4), w.astype(self.cdtype, copy=False), planes)
            dx = np.empty((n, c, h, width), self.cdtype)

            def interleave(n0, n1):  # by blocks of images on the thread pool
                for a in range(stride_h):
                    for b in range(stride_w):
                        ha, wb = -(-(h - a) // stride_h), -(-(width - b) // stride_w)
                        if ha > 0 and wb > 0:
                            plane = planes[a * stride_w + b].reshape((n, c) + geo.output_size)
                            dx[n0:n1, :, a::stride_h, b::stride_w] = plane[n0:n1, :, :ha, :wb]

            threads = threads_to_use(self.threads)
            run_blocks(interleave, channel_blocks(n, min(threads, max(1, dx.size // (1 << 18)))), threads)
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(np.add.reduce(dx, axis=None))
        if not finite:
            return None
        return dx.astype(self.dtype, copy=False)
