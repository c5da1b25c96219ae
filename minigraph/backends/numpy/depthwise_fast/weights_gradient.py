"""The depthwise weights gradient as dot products over polyphase frames ("dot_nc", "dot_cn") or
as one flat accumulation with a padding mask ("acc"; stride-1 "same" layers)."""
from __future__ import annotations

from math import prod
from typing import Optional

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ....ops.geometry import ConvGeometry
from .polyphase import axis_phases, fill_slices, phase_groups, progression
from .workers import WGRAD_TASK_WORK, Workspaces, buffer, check_sizes, chunk_blocks, run_blocks, task_chunk, threads_to_use

ALGORITHMS = ("dot_nc", "dot_cn", "acc")


def _acc_ok(geo: ConvGeometry) -> bool:
    """"acc" needs stride 1 and an output plane equal to the input plane ("same" padding)."""
    return geo.strides == (1, 1) and geo.output_size == geo.input_size


def choose_algorithm(geo: ConvGeometry) -> str:
    """The algorithm for a geometry: ``"direct"`` (the kernel's exact loop) or one of ``ALGORITHMS``.

    Tiny problems: the exact loop. Small output planes: the flat accumulation ("acc", stride-1
    "same" only) or channel-major frames whose dots run over all images ("dot_cn"); large
    planes: image-major frames, no transposing copy ("dot_nc"). The thresholds are measured
    (docs/performance.md).
    """
    n, c, m = geo.batch, geo.in_channels, geo.channel_multiplier
    plane = geo.output_size[0] * geo.output_size[1]
    if plane * n * c * m < 4096:
        return "direct"  # tiny: fixed per-call costs dominate, the direct loop is as good
    if _acc_ok(geo) and (plane <= 64 or (plane <= 256 and geo.kernel_size[0] * geo.kernel_size[1] <= 9)):
        return "acc"  # its per-tap accumulators outgrow the cache for many taps on 14x14
    if plane <= 400:
        return "dot_cn"
    return "dot_nc"


class WeightsGradientPlan:
    """``plan(dy, x) -> dW`` for one geometry, dtype and algorithm; reuses its frames between calls.

    ``dy``: ``[N, C, M, OH, OW]``, ``x``: ``[N, C, H, W]`` (any strides); returns a new
    C-contiguous ``[C, M, kH, kW]`` array of ``dtype``, or None when it is not finite (the flat
    tricks multiply values the formula never reads by zero: an inf there would leak in as NaN).
    """

    def __init__(self, geo: ConvGeometry, dtype, algorithm: str, threads: Optional[int] = None):
        check_sizes(geo)
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm {algorithm!r}: expected one of {ALGORITHMS}")
        self.geo = geo
        self.dtype = np.dtype(dtype)
        # float16 is accumulated in float32 (as the exact loop does), rounded once
        self.cdtype = np.dtype(np.float32) if self.dtype == np.float16 else self.dtype
        self.threads = threads  # None: get_num_threads() at each call
        self.algorithm = "dot_cn" if algorithm == "acc" and not _acc_ok(geo) else algorithm
        self._workspaces = Workspaces()
        if self.algorithm == "acc":
            self._setup_acc()
        else:
            self._setup_dot()

    def _tasks(self, threads: int) -> int:
        """Tasks worth running: each with ``WGRAD_TASK_WORK`` multiply-adds at least."""
        geo = self.geo
        work = geo.batch * geo.in_channels * geo.channel_multiplier * prod(geo.output_size) * prod(geo.kernel_size)
        return min(threads, max(1, work // WGRAD_TASK_WORK))

    # -------------------------------------------------------------- public
    def __call__(self, dy: np.ndarray, x: np.ndarray) -> Optional[np.ndarray]:
        geo = self.geo
        n, c, m = geo.batch, geo.in_channels, geo.channel_multiplier
        if dy.shape != (n, c, m) + geo.output_size or x.shape != (n, c) + geo.input_size:
            raise ValueError(f"weights gradient plan for {geo}: got dy {dy.shape}, x {x.shape}")
        ws = self._workspaces.acquire()
        try:
            with np.errstate(invalid="ignore", over="ignore"):  # checked just below
                out = np.empty((c, m) + geo.kernel_size, self.cdtype)
                if self.algorithm == "acc":
                    self._run_acc(ws, dy, x, out)
                else:
                    self._run_dot(ws, dy, x, out)
        finally:
            self._workspaces.release(ws)
        if not np.isfinite(out).all():  # an inf/NaN where the formula never reads
            return None
        return out.astype(self.dtype, copy=False)

    # -------------------------------------------------------------- dot (polyphase frames)
    def _setup_dot(self):
        """Frames: rows zero-padded (so vertical taps never leave an image), columns *not*
        padded (so the copies move whole image planes); a tap that leaves a row on the left or
        right reads the neighbouring row instead, and that term is subtracted afterwards
        (the "wrap" columns, at most ``kW`` thin strips)."""
        geo = self.geo
        (h, w), (kh, kw), (oh, ow) = geo.input_size, geo.kernel_size, geo.output_size
        (stride_h, stride_w), (dilation_h, dilation_w) = geo.strides, geo.dilations
        top, left = geo.padding_before
        # rows, padded coordinates: tap i reads frame row oh + u of phase a
        phases = axis_phases(kh, stride_h, dilation_h)
        self.rgroups = phase_groups(phases)
        self.hs = oh + max(u for _, u in phases)
        self.rfill = [fill_slices(h, top, stride_h, a, self.hs) for a, *_ in self.rgroups]
        # columns, unpadded coordinates: tap j reads frame column ow + e of phase beta
        cph = [((j * dilation_w - left) % stride_w, (j * dilation_w - left) // stride_w) for j in range(kw)]
        self.cgroups = phase_groups(cph)
        self.wf = max(-(-w // stride_w), ow)  # row pitch of both frames
        self.cfill = []
        for beta, *_ in self.cgroups:
            nb = -(-(w - beta) // stride_w) if beta < w else 0
            self.cfill.append((slice(0, nb), slice(beta, beta + (nb - 1) * stride_w + 1, stride_w)) if nb > 0 else None)
        es = [e for _, e in cph]
        self.margin_lo = max(0, -min(es))
        self.margin_hi = max(0, max(es)) + 1
        # wrap columns of each tap j: frame column ow + e outside [0, wf)
        self.wraps = []  # (group index, j, e, ow)
        for gi, (beta, jtaps, e0, de) in enumerate(self.cgroups):
            for t, j in enumerate(jtaps):
                e = e0 + t * de
                for col in list(range(0, min(ow, -e))) + list(range(max(0, self.wf - e), ow)):
                    self.wraps.append((gi, j, e, col))
        self.plane = self.hs * self.wf
        self.nphase = len(self.rgroups) * len(self.cgroups)
        cn = self.algorithm == "dot_cn"
        self.dy_direct = (not cn) and self.wf == ow
        self.dot_len = ((geo.batch - 1) * self.plane if cn else 0) + oh * self.wf

    def _x_frames(self, ws):
        """The x frame buffer (borders zero once, interiors filled per channel chunk)."""
        n, c = self.geo.batch, self.geo.in_channels
        cn = self.algorithm == "dot_cn"
        body = self.nphase * n * c * self.plane
        buf = buffer(ws, "x", self.margin_lo + body + self.margin_hi, self.cdtype)
        shape = (len(self.rgroups), len(self.cgroups)) + ((c, n) if cn else (n, c)) + (self.hs, self.wf)
        return buf, buf[self.margin_lo: self.margin_lo + body].reshape(shape)

    def _fill_x(self, fr, x, c0, c1):
        cn = self.algorithm == "dot_cn"
        for ai, rf in enumerate(self.rfill):
            for bi, cf in enumerate(self.cfill):
                if rf is not None and cf is not None:
                    if cn:
                        fr[ai, bi, c0:c1, :, rf[0], cf[0]] = x[:, c0:c1, rf[1], cf[1]].transpose(1, 0, 2, 3)
                    else:
                        fr[ai, bi, :, c0:c1, rf[0], cf[0]] = x[:, c0:c1, rf[1], cf[1]]

    def _dy_frame(self, ws, dy):
        """(frame, filled): the dy frame, and whether it needs no ``_fill_dy`` per chunk."""
        geo = self.geo
        n, c, m, (oh, ow) = geo.batch, geo.in_channels, geo.channel_multiplier, geo.output_size
        if self.algorithm == "dot_cn":
            fr = buffer(ws, "dy", c * m * n * self.plane, self.cdtype).reshape(c, m, n, self.hs, self.wf)
            return fr, False
        if self.dy_direct and dy.flags.c_contiguous and dy.dtype == self.cdtype:
            return dy.reshape(n, c, m, oh, ow), True
        fr = buffer(ws, "dy", n * c * m * oh * self.wf, self.cdtype).reshape(n, c, m, oh, self.wf)
        return fr, False

    def _fill_dy(self, fr, dy, c0, c1):
        oh, ow = self.geo.output_size
        if self.algorithm == "dot_cn":
            fr[c0:c1, :, :, :oh, :ow] = dy[:, c0:c1].transpose(1, 2, 0, 3, 4)
        else:
            fr[:, c0:c1, :, :, :ow] = dy[:, c0:c1]

    def _dot_views(self, ws, xb) -> dict:
        """Strided views of the x frames over *all* channels, made once per workspace
        (``as_strided`` costs ~10 µs; a chunk then takes a slice)."""
        cached = ws.get("views")
        if cached is not None and cached[0] is xb:
            return cached[1]
        n, c = self.geo.batch, self.geo.in_channels
        cn = self.algorithm == "dot_cn"
        it = xb.itemsize
        length, wf, plane = self.dot_len, self.wf, self.plane
        nca = len(self.cgroups)
        rows = length // wf
        views: dict = {}
        for ai, (a, itaps, u0, du) in enumerate(self.rgroups):
            for bi, (beta, jtaps, e0, de) in enumerate(self.cgroups):
                base = self.margin_lo + (ai * nca + bi) * n * c * plane + u0 * wf + e0
                if cn:
                    views[ai, bi] = as_strided(xb[base:], shape=(c, 1, len(itaps), len(jtaps), 1, length),
                                               strides=(n * plane * it, 0, du * wf * it, de * it, 0, it),
                                               writeable=False)
                else:
                    views[ai, bi] = as_strided(xb[base:], shape=(n, c, 1, len(itaps), len(jtaps), 1, length),
                                               strides=(c * plane * it, plane * it, 0, du * wf * it, de * it,
                                                        0, it), writeable=False)
        for wi, (gi, j, e, col) in enumerate(self.wraps):
            for ai, (a, itaps, u0, du) in enumerate(self.rgroups):
                base = self.margin_lo + (ai * nca + gi) * n * c * plane + u0 * wf + e + col
                if cn:
                    views["w", wi, ai] = as_strided(xb[base:], shape=(c, len(itaps), rows),
                                                    strides=(n * plane * it, du * wf * it, wf * it),
                                                    writeable=False)
                else:
                    views["w", wi, ai] = as_strided(xb[base:], shape=(n, c, len(itaps), rows),
                                                    strides=(c * plane * it, plane * it, du * wf * it, wf * it),
                                                    writeable=False)
        ws["views"] = (xb, views)
        return views

    def _run_dot(self, ws, dy, x, out):
        geo = self.geo
        n, c, m = geo.batch, geo.in_channels, geo.channel_multiplier
        cn = self.algorithm == "dot_cn"
        xb, xfr = self._x_frames(ws)
        dyfr, dy_ready = self._dy_frame(ws, dy)
        dyf = dyfr.reshape(c, m, n * self.plane) if cn else dyfr.reshape(n, c, m, -1)
        # channels per chunk: its frames (x phases + dy) stay in L2 from the copy to the last dot
        chunk = task_chunk(c, (1 << 19) // (xb.itemsize * n * self.plane * (self.nphase + m)))

        def fill(c0, c1):
            self._fill_x(xfr, x, c0, c1)
            if not dy_ready:
                self._fill_dy(dyfr, dy, c0, c1)

        threads = threads_to_use(self.threads)
        blocks = chunk_blocks(c, chunk, self._tasks(threads))
        # A chunk's first and last dots may read (and, for wrapped columns, subtract) a few
        # values of the neighbouring channels' frames. Those must hold this call's values, or the
        # rounding would depend on what a frame held before (the previous call, or zeros) and on
        # the order of the blocks: inside a block each chunk fills the next one before its dots;
        # across blocks another thread would be filling them, so the chunks on each side of a
        # block boundary are filled before the threads start.
        prefilled = set()
        if len(blocks) > 1:
            for b0, b1 in blocks:
                for a0 in {b0, b0 + ((b1 - b0 - 1) // chunk) * chunk}:
                    fill(a0, min(b1, a0 + chunk))
                    prefilled.add(a0)
        views = self._dot_views(ws, xb)

        def block(c0, c1):
            if c0 not in prefilled:
                fill(c0, min(c1, c0 + chunk))
            for a0 in range(c0, c1, chunk):
                nxt = a0 + chunk
                if nxt < c1 and nxt not in prefilled:
                    fill(nxt, min(c1, nxt + chunk))
                self._dot_chunk(views, dyf, out, a0, min(c1, a0 + chunk))

        run_blocks(block, blocks, threads)

    def _dot_chunk(self, views, dyf, out, c0, c1):
        """The dots of channels ``c0:c1`` (their frames filled), then the wrapped-column terms."""
        cn = self.algorithm == "dot_cn"
        length, wf = self.dot_len, self.wf
        rows = length // wf  # dy-frame rows the dots run over
        for ai, (a, itaps, u0, du) in enumerate(self.rgroups):
            for bi, (beta, jtaps, e0, de) in enumerate(self.cgroups):
                v = views[ai, bi]
                if cn:
                    r = np.matmul(v[c0:c1], dyf[c0:c1, :, None, None, :length, None])[..., 0, 0]  # [cb, M, ni, nj]
                else:
                    r = np.matmul(v[:, c0:c1], dyf[:, c0:c1, :, None, None, :length, None])[..., 0, 0].sum(axis=0)
                out[c0:c1, :, progression(itaps), progression(jtaps)] = r
        # subtract what the dots read across a row end (a wrapped column is padding: 0)
        for wi, (gi, j, e, col) in enumerate(self.wraps):
            for ai, (a, itaps, u0, du) in enumerate(self.rgroups):
                xv = views["w", wi, ai]
                if cn:
                    dv = dyf[c0:c1, :, col: col + (rows - 1) * wf + 1: wf]
                    out[c0:c1, :, progression(itaps), j] -= np.einsum("cmr,cir->cmi", dv, xv[c0:c1])
                else:
                    dv = dyf[:, c0:c1, :, col: col + (rows - 1) * wf + 1: wf]
                    out[c0:c1, :, progression(itaps), j] -= np.einsum("ncmr,ncir->cmi", dv, xv[:, c0:c1])

    # -------------------------------------------------------------- acc (flat x, masks)
    def _setup_acc(self):
        geo = self.geo
        (h, w), (kh, kw), (dilation_h, dilation_w) = geo.input_size, geo.kernel_size, geo.dilations
        top, left = geo.padding_before
        # stride 1, dy plane == x plane (OH == H, OW == W): flat offsets are constant per tap
        self.positions = h * w
        offs = [(i * dilation_h - top) * w + (j * dilation_w - left) for i in range(kh) for j in range(kw)]
        self.margin_lo = max(0, -min(offs))
        self.margin_hi = max(0, max(offs))
        mask = np.zeros((kh, kw, self.positions, 1), self.cdtype)
        rows = np.arange(h)[:, None]
        cols = np.arange(w)[None, :]
        for i in range(kh):
            for j in range(kw):
                ih, iw = rows + i * dilation_h - top, cols + j * dilation_w - left
                mask[i, j, :, 0] = ((ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)).reshape(-1)
        self.mask = mask
        # channels per chunk: acc (kh*kw rows) + x + dy chunks stay in L2
        self.chunk_elems = 1 << 15

    def _run_acc(self, ws, dy, x, out):
        geo = self.geo
        n, c, m = geo.batch, geo.in_channels, geo.channel_multiplier
        (h, w), (kh, kw), (dilation_h, dilation_w) = geo.input_size, geo.kernel_size, geo.dilations
        top, left = geo.padding_before
        P, CP = self.positions, c * self.positions
        lo, hi = self.margin_lo, self.margin_hi
        xb = buffer(ws, "x", n * CP + lo + hi, self.cdtype)
        xb[lo: lo + n * CP].reshape(n, c, h, w)[...] = x
        if m == 1 and dy.flags.c_contiguous and dy.dtype == self.cdtype:
            dyf = dy.reshape(n, 1, CP)
        else:
            dyf = buffer(ws, "dy", n * m * CP, self.cdtype).reshape(n, m, c, h, w)
            dyf[...] = dy.transpose(0, 2, 1, 3, 4)
            dyf = dyf.reshape(n, m, CP)
        it = xb.itemsize
        cb_max = task_chunk(c, self.chunk_elems // (kh * kw * P))

        cached = ws.get("view")
        if cached is None or cached[0] is not xb:  # one view over all channels, sliced per chunk
            base = lo - top * w - left  # offset of tap (0, 0) for q = 0
            cached = ws["view"] = (xb, as_strided(xb[base:], shape=(n, kh, kw, CP),
                                                  strides=(CP * it, dilation_h * w * it, dilation_w * it, it),
                                                  writeable=False))
        vall = cached[1]

        def block(c0, c1):
            acc = np.empty((kh, kw, min(cb_max, c1 - c0) * P), self.cdtype)
            for a0 in range(c0, c1, cb_max):
                a1 = min(c1, a0 + cb_max)
                span = (a1 - a0) * P
                v = vall[..., a0 * P: a0 * P + span]
                a = acc[:, :, :span]
                for mm in range(m):
                    np.einsum("nijq,nq->ijq", v, dyf[:, mm, a0 * P: a0 * P + span], out=a)
                    r = np.matmul(a.reshape(kh, kw, a1 - a0, P), self.mask)  # [kh, kw, cb, 1]
                    out[a0:a1, mm] = r[..., 0].transpose(2, 0, 1)

        threads = threads_to_use(self.threads)
        run_blocks(block, chunk_blocks(c, cb_max, self._tasks(threads)), threads)
