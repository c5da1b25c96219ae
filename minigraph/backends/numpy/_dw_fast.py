"""Fast NumPy algorithms for the depthwise 2D weights gradient (and forward / data gradient).

Everything here works on canonical, layout-free arrays: ``x`` as ``[N, C, H, W]``, ``dy`` as
``[N, C, M, OH, OW]`` (output channel ``o = c*M + m``), weights and their gradient as
``[C, M, kH, kW]``; padding ``(top, bottom, left, right)`` is already resolved. Any strides
are accepted (views of NHWC arrays too): the first pass copies what it needs.

Why it is fast (MobileNet-style layers, 2-core CPU):

* ``"dot"``: the weights gradient is a short correlation (kH*kW taps) of two long signals.
  Zero-padded, *polyphase* frames of x (one copy; strides become unit strides) and a frame of
  dy with the same row pitch turn every tap into one contiguous dot product per channel
  ``dW[c, t] = <dyF[c], xF[c, off_t:]>``, which ``np.matmul`` hands to BLAS ``sdot``
  (AVX-512) one (channel, tap) after another: x stays in cache across the taps of a plane, so
  it is read from memory once, not kH*kW times. ``"dot_cn"`` orders the frames channel-major
  so each dot runs over all N images at once (fewer, longer BLAS calls: wins on small planes);
  ``"dot_nc"`` keeps x's order (no transposing copy: wins on large planes).
* ``"acc"``: for stride-1 "same" geometry, x is used as one flat signal (no padding copy);
  ``acc[t, c*P + q] = sum_n dy[n, c, q] * x[n, c, q + off_t]`` is a single ``np.einsum`` over
  long contiguous vectors, and the padding is applied afterwards as a per-tap mask (a BLAS
  ``matmul``), since the mask depends on the position only, not on the image.
* channel blocks run on a thread pool (NumPy and BLAS release the GIL).

Frames and masks are built per geometry, once, in a ``WeightsGradientPlan`` (the NumPy
kernel factory makes one per compiled step); their zero borders are written once and reused,
so a call only copies the interior. A plan's workspaces come from a small pool, so
concurrent calls never share one.

The flat tricks multiply some x values that the formula never reads (outside the valid
window) by a zero of dy, or add them in and mask them out afterwards. That is exact for
finite inputs; if the result is not finite, it is recomputed with the direct algorithm, so an
inf/NaN in an unread position cannot leak in.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import numpy as np
from numpy.lib.stride_tricks import as_strided

ALGORITHMS = ("auto", "direct", "dot_nc", "dot_cn", "acc")


# ----------------------------------------------------------------------------- geometry
@dataclass(frozen=True)
class Geometry:
    """All sizes of one depthwise convolution (canonical NCHW / [C, M, kH, kW] terms)."""

    n: int
    c: int
    m: int
    h: int
    w: int
    kh: int
    kw: int
    sh: int = 1
    sw: int = 1
    dh: int = 1
    dw: int = 1
    pt: int = 0
    pb: int = 0
    pl: int = 0
    pr: int = 0

    @property
    def oh(self) -> int:
        return (self.h + self.pt + self.pb - (self.kh - 1) * self.dh - 1) // self.sh + 1

    @property
    def ow(self) -> int:
        return (self.w + self.pl + self.pr - (self.kw - 1) * self.dw - 1) // self.sw + 1

    def check(self) -> "Geometry":
        for f in ("n", "c", "m", "h", "w", "kh", "kw", "sh", "sw", "dh", "dw"):
            if getattr(self, f) < 1:
                raise ValueError(f"depthwise geometry: {f}={getattr(self, f)} must be >= 1")
        for f in ("pt", "pb", "pl", "pr"):
            if getattr(self, f) < 0:
                raise ValueError(f"depthwise geometry: {f}={getattr(self, f)} must be >= 0")
        if self.oh < 1 or self.ow < 1:
            raise ValueError(f"depthwise geometry {self}: empty output ({self.oh}x{self.ow})")
        return self


def from_op_geometry(geo) -> Geometry:
    """A Geometry from ``minigraph.ops.depthwise.DepthwiseGeometry`` (names differ: dy/dx there
    are the dilations)."""
    return Geometry(geo.n, geo.c, geo.m, geo.h, geo.w, geo.kh, geo.kw, geo.sy, geo.sx, geo.dy, geo.dx,
                    geo.pad_top, geo.pad_bottom, geo.pad_left, geo.pad_right)


def _valid(out: int, size: int, s: int, d: int, p: int, k: int):
    """Output range [lo, hi) of tap ``k`` whose input index ``o*s + k*d - p`` is inside, and
    the matching input slice; None when the tap reads only padding."""
    off = k * d - p
    lo = max(0, -(off // s))
    hi = min(out, (size - 1 - off) // s + 1)
    if hi <= lo:
        return None
    start = lo * s + off
    return slice(lo, hi), slice(start, start + (hi - lo - 1) * s + 1, s)


# ----------------------------------------------------------------------------- threads
_POOL: Optional[ThreadPoolExecutor] = None
_POOL_LOCK = threading.Lock()


def cpu_count() -> int:
    """Threads to use: ``MINIGRAPH_NUM_THREADS`` if set, else the CPUs this process may run on."""
    env = os.environ.get("MINIGRAPH_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=cpu_count(), thread_name_prefix="minigraph-dw")
        return _POOL


def _parallel(fn, blocks, threads: int) -> None:
    """Run ``fn(c0, c1)`` over channel blocks, on ``threads`` threads (1: inline)."""
    if threads <= 1 or len(blocks) <= 1 or threading.current_thread().name.startswith("minigraph-dw"):
        for b in blocks:
            fn(*b)
        return
    futs = [_pool().submit(fn, *b) for b in blocks[1:]]
    try:
        fn(*blocks[0])
    finally:  # never return (or raise) while a worker still writes into the workspace
        errors = [f.exception() for f in futs]
    for e in errors:
        if e is not None:
            raise e


def _blocks(c: int, parts: int):
    parts = max(1, min(parts, c))
    edges = [round(i * c / parts) for i in range(parts + 1)]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


# ----------------------------------------------------------------------------- workspaces
class _Pool:
    """Workspaces (dicts of named zero-initialised buffers) that survive between calls.

    A frame's zero border is written once, when the buffer is made; later calls overwrite the
    interior only. acquire/release keep concurrent callers on separate workspaces.
    """

    def __init__(self, keep: int = 2):
        self._free: list = []
        self._lock = threading.Lock()
        self._keep = keep

    def acquire(self) -> dict:
        with self._lock:
            return self._free.pop() if self._free else {}

    def release(self, ws: dict) -> None:
        with self._lock:
            if len(self._free) < self._keep:
                self._free.append(ws)


def _buf(ws: dict, key: str, size: int, dtype) -> np.ndarray:
    a = ws.get(key)
    if a is None or a.size != size or a.dtype != dtype:
        a = np.zeros(size, dtype)
        ws[key] = a
    return a


# ----------------------------------------------------------------------------- phase frames
def _axis_phases(k: int, s: int, d: int):
    """For each tap: (phase, shift) with ``k*d = s*shift + phase`` (padded coordinates)."""
    return [((i * d) % s, (i * d) // s) for i in range(k)]


def _groups(phases):
    """Taps grouped by phase, each group an arithmetic progression in (tap, shift)."""
    out = {}
    for i, (a, u) in enumerate(phases):
        out.setdefault(a, []).append((i, u))
    groups = []
    for a, members in sorted(out.items()):
        taps = [i for i, _ in members]
        shifts = [u for _, u in members]
        step = shifts[1] - shifts[0] if len(shifts) > 1 else 0
        assert all(shifts[t] == shifts[0] + t * step for t in range(len(shifts)))
        groups.append((a, taps, shifts[0], step))
    return groups


def _prog(taps) -> slice:
    """The slice of an arithmetic progression of tap indices."""
    step = taps[1] - taps[0] if len(taps) > 1 else 1
    return slice(taps[0], taps[-1] + 1, step)


def _fill_slices(size: int, pad: int, s: int, a: int, rows: int):
    """Frame rows r < rows whose padded coordinate ``a + r*s`` is a real input index, and
    the matching input slice (or None)."""
    # input index = a + r*s - pad in [0, size)
    r0 = max(0, -((a - pad) // s))
    r1 = min(rows, (size - 1 - a + pad) // s + 1)
    if r1 <= r0:
        return None
    h0 = a + r0 * s - pad
    return slice(r0, r1), slice(h0, h0 + (r1 - r0 - 1) * s + 1, s)


# ----------------------------------------------------------------------------- the plan
class WeightsGradientPlan:
    """``plan(dy, x) -> dW`` for one geometry and dtype; reuses its frames between calls.

    ``dy``: ``[N, C, M, OH, OW]``, ``x``: ``[N, C, H, W]`` (any strides); returns a new
    C-contiguous ``[C, M, kH, kW]`` array of ``dtype``.
    """

    def __init__(self, geo: Geometry, dtype=np.float32, algorithm: str = "auto",
                 threads: Optional[int] = None):
        self.geo = geo.check()
        self.dtype = np.dtype(dtype)
        # float16 is accumulated in float32 (as the direct kernel does), rounded once
        self.cdtype = np.dtype(np.float32) if self.dtype == np.float16 else self.dtype
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm {algorithm!r}: expected one of {ALGORITHMS}")
        self.threads = cpu_count() if threads is None else max(1, int(threads))
        self.algorithm = choose_algorithm(geo) if algorithm == "auto" else algorithm
        if self.algorithm == "acc" and not _acc_ok(geo):
            self.algorithm = "dot_cn"
        self._pool = _Pool()
        g = geo
        self.oh, self.ow = g.oh, g.ow
        if self.algorithm in ("dot_nc", "dot_cn"):
            self._setup_dot()
        elif self.algorithm == "acc":
            self._setup_acc()

    # -------------------------------------------------------------- public
    def __call__(self, dy: np.ndarray, x: np.ndarray) -> np.ndarray:
        g = self.geo
        if dy.shape != (g.n, g.c, g.m, self.oh, self.ow) or x.shape != (g.n, g.c, g.h, g.w):
            raise ValueError(f"weights gradient plan for {g}: got dy {dy.shape}, x {x.shape}")
        if self.algorithm == "direct":
            out = direct_weights_gradient(dy, x, g, self.cdtype)
        else:
            ws = self._pool.acquire()
            try:
                with np.errstate(invalid="ignore", over="ignore"):  # checked just below
                    out = self._run(ws, dy, x)
            finally:
                self._pool.release(ws)
            if not np.isfinite(out).all():  # an inf/NaN where the formula never reads: be exact
                out = direct_weights_gradient(dy, x, g, self.cdtype)
        return out.astype(self.dtype, copy=False)

    def _run(self, ws, dy, x):
        out = np.empty((self.geo.c, self.geo.m, self.geo.kh, self.geo.kw), self.cdtype)
        if self.algorithm == "acc":
            self._run_acc(ws, dy, x, out)
        else:
            self._run_dot(ws, dy, x, out)
        return out

    # -------------------------------------------------------------- dot (polyphase frames)
    def _setup_dot(self):
        """Frames: rows zero-padded (so vertical taps never leave an image), columns *not*
        padded (so the copies move whole image planes); a tap that leaves a row on the left or
        right reads the neighbouring row instead, and that term is subtracted afterwards
        (the "wrap" columns, at most ``kW`` thin strips)."""
        g = self.geo
        # rows, padded coordinates: tap i reads frame row oh + u of phase a
        ph = _axis_phases(g.kh, g.sh, g.dh)
        self.rgroups = _groups(ph)
        umax = max(u for _, u in ph)
        self.hs = self.oh + umax
        self.rfill = [_fill_slices(g.h, g.pt, g.sh, a, self.hs) for a, *_ in self.rgroups]
        # columns, unpadded coordinates: tap j reads frame column ow + e of phase beta
        cph = [((j * g.dw - g.pl) % g.sw, (j * g.dw - g.pl) // g.sw) for j in range(g.kw)]
        self.cgroups = _groups(cph)
        self.wf = max(-(-g.w // g.sw), self.ow)  # row pitch of both frames
        self.cfill = []
        for beta, *_ in self.cgroups:
            nb = -(-(g.w - beta) // g.sw) if beta < g.w else 0
            self.cfill.append((slice(0, nb), slice(beta, beta + (nb - 1) * g.sw + 1, g.sw)) if nb > 0 else None)
        es = [e for _, e in cph]
        self.margin_lo = max(0, -min(es))
        self.margin_hi = max(0, max(es)) + 1
        # wrap columns of each tap j: frame column ow + e outside [0, wf)
        self.wraps = []  # (group index, j, ow)
        for gi, (beta, jtaps, e0, de) in enumerate(self.cgroups):
            for t, j in enumerate(jtaps):
                e = e0 + t * de
                for ow in list(range(0, min(self.ow, -e))) + list(range(max(0, self.wf - e), self.ow)):
                    self.wraps.append((gi, j, e, ow))
        self.plane = self.hs * self.wf
        self.nphase = len(self.rgroups) * len(self.cgroups)
        cn = self.algorithm == "dot_cn"
        self.dy_direct = (not cn) and self.wf == self.ow
        self.dot_len = ((g.n - 1) * self.plane if cn else 0) + self.oh * self.wf

    def _x_frames(self, ws):
        """The x frame buffer (borders zero once, interiors filled per channel chunk)."""
        g = self.geo
        cn = self.algorithm == "dot_cn"
        body = self.nphase * g.n * g.c * self.plane
        buf = _buf(ws, "x", self.margin_lo + body + self.margin_hi, self.cdtype)
        shape = (len(self.rgroups), len(self.cgroups)) + ((g.c, g.n) if cn else (g.n, g.c)) + (self.hs, self.wf)
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
        """(frame, filled): the dy frame, and whether it still needs ``_fill_dy`` per chunk."""
        g = self.geo
        if self.algorithm == "dot_cn":
            fr = _buf(ws, "dy", g.c * g.m * g.n * self.plane, self.cdtype).reshape(
                g.c, g.m, g.n, self.hs, self.wf)
            return fr, False
        if self.dy_direct and dy.flags.c_contiguous and dy.dtype == self.cdtype:
            return dy.reshape(g.n, g.c, g.m, self.oh, self.ow), True
        fr = _buf(ws, "dy", g.n * g.c * g.m * self.oh * self.wf, self.cdtype).reshape(
            g.n, g.c, g.m, self.oh, self.wf)
        return fr, False

    def _fill_dy(self, fr, dy, c0, c1):
        if self.algorithm == "dot_cn":
            fr[c0:c1, :, :, : self.oh, : self.ow] = dy[:, c0:c1].transpose(1, 2, 0, 3, 4)
        else:
            fr[:, c0:c1, :, :, : self.ow] = dy[:, c0:c1]

    def _dot_views(self, ws, xb) -> dict:
        """Strided views of the x frames over *all* channels, made once per workspace
        (``as_strided`` costs ~10 µs; a chunk then takes a slice)."""
        cached = ws.get("views")
        if cached is not None and cached[0] is xb:
            return cached[1]
        g = self.geo
        cn = self.algorithm == "dot_cn"
        it = xb.itemsize
        L, wf, plane = self.dot_len, self.wf, self.plane
        nca = len(self.cgroups)
        rows = L // wf
        views = {}
        for ai, (a, itaps, u0, du) in enumerate(self.rgroups):
            for bi, (beta, jtaps, e0, de) in enumerate(self.cgroups):
                base = self.margin_lo + (ai * nca + bi) * g.n * g.c * plane + u0 * wf + e0
                if cn:
                    views[ai, bi] = as_strided(xb[base:], shape=(g.c, 1, len(itaps), len(jtaps), 1, L),
                                               strides=(g.n * plane * it, 0, du * wf * it, de * it, 0, it),
                                               writeable=False)
                else:
                    views[ai, bi] = as_strided(xb[base:], shape=(g.n, g.c, 1, len(itaps), len(jtaps), 1, L),
                                               strides=(g.c * plane * it, plane * it, 0, du * wf * it, de * it,
                                                        0, it), writeable=False)
        for wi, (gi, j, e, ow) in enumerate(self.wraps):
            for ai, (a, itaps, u0, du) in enumerate(self.rgroups):
                base = self.margin_lo + (ai * nca + gi) * g.n * g.c * plane + u0 * wf + e + ow
                if cn:
                    views["w", wi, ai] = as_strided(xb[base:], shape=(g.c, len(itaps), rows),
                                                    strides=(g.n * plane * it, du * wf * it, wf * it),
                                                    writeable=False)
                else:
                    views["w", wi, ai] = as_strided(xb[base:], shape=(g.n, g.c, len(itaps), rows),
                                                    strides=(g.c * plane * it, plane * it, du * wf * it, wf * it),
                                                    writeable=False)
        ws["views"] = (xb, views)
        return views

    def _run_dot(self, ws, dy, x, out):
        g = self.geo
        cn = self.algorithm == "dot_cn"
        xb, xfr = self._x_frames(ws)
        dyfr, dy_ready = self._dy_frame(ws, dy)
        dyf = dyfr.reshape(g.c, g.m, g.n * self.plane) if cn else dyfr.reshape(g.n, g.c, g.m, -1)
        it = xb.itemsize
        L, wf = self.dot_len, self.wf
        rows = L // wf  # dy-frame rows the dots run over
        # channels per chunk: its frames (x phases + dy) stay in L2 from the copy to the last dot
        chunk = max(1, (1 << 19) // (it * g.n * self.plane * (self.nphase + g.m)))

        def fill(c0, c1):
            self._fill_x(xfr, x, c0, c1)
            if not dy_ready:
                self._fill_dy(dyfr, dy, c0, c1)

        blocks = _blocks(g.c, self.threads)
        # A chunk's first and last dots may read (and, for wrapped columns, subtract) a few
        # values of the neighbouring channels' frames. Inside a block the order makes both
        # reads see the same values; across blocks another thread would be filling them, so
        # the chunks on each side of a block boundary are filled before the threads start.
        prefilled = set()
        if self.threads > 1 and len(blocks) > 1:
            for b0, b1 in blocks:
                edges = {b0, b0 + ((b1 - b0 - 1) // chunk) * chunk}
                for a0 in edges:
                    fill(a0, min(b1, a0 + chunk))
                    prefilled.add(a0)

        views = self._dot_views(ws, xb)

        def part(c0, c1):
            if c0 not in prefilled:
                fill(c0, c1)
            for ai, (a, itaps, u0, du) in enumerate(self.rgroups):
                for bi, (beta, jtaps, e0, de) in enumerate(self.cgroups):
                    v = views[ai, bi]
                    if cn:
                        r = np.matmul(v[c0:c1], dyf[c0:c1, :, None, None, :L, None])[..., 0, 0]  # [cb, M, ni, nj]
                    else:
                        r = np.matmul(v[:, c0:c1], dyf[:, c0:c1, :, None, None, :L, None])[..., 0, 0].sum(axis=0)
                    out[c0:c1, :, _prog(itaps), _prog(jtaps)] = r
            # subtract what the dots read across a row end (a wrapped column is padding: 0)
            for wi, (gi, j, e, ow) in enumerate(self.wraps):
                for ai, (a, itaps, u0, du) in enumerate(self.rgroups):
                    xv = views["w", wi, ai]
                    if cn:
                        dv = dyf[c0:c1, :, ow: ow + (rows - 1) * wf + 1: wf]
                        out[c0:c1, :, _prog(itaps), j] -= np.einsum("cmr,cir->cmi", dv, xv[c0:c1])
                    else:
                        dv = dyf[:, c0:c1, :, ow: ow + (rows - 1) * wf + 1: wf]
                        out[c0:c1, :, _prog(itaps), j] -= np.einsum("ncmr,ncir->cmi", dv, xv[:, c0:c1])

        def block(c0, c1):
            for a0 in range(c0, c1, chunk):
                part(a0, min(c1, a0 + chunk))

        _parallel(block, blocks, self.threads)

    # -------------------------------------------------------------- acc (flat x, masks)
    def _setup_acc(self):
        g = self.geo
        # stride 1, dy plane == x plane (OH == H, OW == W): flat offsets are constant per tap
        self.P = g.h * g.w
        offs = [(i * g.dh - g.pt) * g.w + (j * g.dw - g.pl) for i in range(g.kh) for j in range(g.kw)]
        self.margin_lo = max(0, -min(offs))
        self.margin_hi = max(0, max(offs))
        mask = np.zeros((g.kh, g.kw, self.P, 1), self.cdtype)
        oh = np.arange(g.h)[:, None]
        ow = np.arange(g.w)[None, :]
        for i in range(g.kh):
            for j in range(g.kw):
                ih, iw = oh + i * g.dh - g.pt, ow + j * g.dw - g.pl
                mask[i, j, :, 0] = ((ih >= 0) & (ih < g.h) & (iw >= 0) & (iw < g.w)).reshape(-1)
        self.mask = mask
        # channels per chunk: acc (kh*kw rows) + x + dy chunks stay in L2
        self.chunk_elems = 1 << 15

    def _run_acc(self, ws, dy, x, out):
        g = self.geo
        P, CP = self.P, g.c * self.P
        lo, hi = self.margin_lo, self.margin_hi
        xb = _buf(ws, "x", g.n * CP + lo + hi, self.cdtype)
        xb[lo: lo + g.n * CP].reshape(g.n, g.c, g.h, g.w)[...] = x
        if g.m == 1 and dy.flags.c_contiguous and dy.dtype == self.cdtype:
            dyf = dy.reshape(g.n, 1, CP)
        else:
            dyf = _buf(ws, "dy", g.n * g.m * CP, self.cdtype).reshape(g.n, g.m, g.c, g.h, g.w)
            dyf[...] = dy.transpose(0, 2, 1, 3, 4)
            dyf = dyf.reshape(g.n, g.m, CP)
        it = xb.itemsize
        T = g.kh * g.kw
        cb_max = max(1, self.chunk_elems // (T * P))

        cached = ws.get("view")
        if cached is None or cached[0] is not xb:  # one view over all channels, sliced per chunk
            base = lo - g.pt * g.w - g.pl  # offset of tap (0, 0) for q = 0
            cached = ws["view"] = (xb, as_strided(xb[base:], shape=(g.n, g.kh, g.kw, CP),
                                                  strides=(CP * it, g.dh * g.w * it, g.dw * it, it),
                                                  writeable=False))
        vall = cached[1]

        def block(c0, c1):
            acc = np.empty((g.kh, g.kw, min(cb_max, c1 - c0) * P), self.cdtype)
            for a0 in range(c0, c1, cb_max):
                a1 = min(c1, a0 + cb_max)
                Lc = (a1 - a0) * P
                v = vall[..., a0 * P: a0 * P + Lc]
                a = acc[:, :, :Lc]
                for mm in range(g.m):
                    np.einsum("nijq,nq->ijq", v, dyf[:, mm, a0 * P: a0 * P + Lc], out=a)
                    r = np.matmul(a.reshape(g.kh, g.kw, a1 - a0, P), self.mask)  # [kh, kw, cb, 1]
                    out[a0:a1, mm] = r[..., 0].transpose(2, 0, 1)

        _parallel(block, _blocks(g.c, self.threads), self.threads)


def _acc_ok(g: Geometry) -> bool:
    """"acc" needs stride 1 and an output plane equal to the input plane ("same" padding)."""
    return g.sh == 1 and g.sw == 1 and g.oh == g.h and g.ow == g.w


def choose_algorithm(g: Geometry) -> str:
    """Pick per shape (measured on the MobileNet layers, 2-core AMD EPYC; docs/performance.md).

    Small output planes: per-(image, channel) BLAS calls would be too short, so either the
    flat accumulation ("acc", stride 1 "same" only) or channel-major frames whose dots run
    over all images ("dot_cn"); large planes: image-major frames, no transposing copy
    ("dot_nc").
    """
    plane = g.oh * g.ow
    if plane * g.n * g.c * g.m < 4096:
        return "direct"  # tiny: fixed per-call costs dominate, the direct loop is as good
    if _acc_ok(g) and (plane <= 64 or (plane <= 256 and g.kh * g.kw <= 9)):
        return "acc"  # its per-tap accumulators outgrow the cache for many taps on 14x14
    if plane <= 400:
        return "dot_cn"
    return "dot_nc"


# ----------------------------------------------------------------------------- direct (exact)
def direct_weights_gradient(dy: np.ndarray, x: np.ndarray, g: Geometry, cdtype=np.float32) -> np.ndarray:
    """One ``einsum`` per tap over the valid window: exact for any input (no flat tricks)."""
    out = np.zeros((g.c, g.m, g.kh, g.kw), cdtype)
    dy = dy.astype(cdtype, copy=False)
    x = x.astype(cdtype, copy=False)
    for i in range(g.kh):
        vh = _valid(g.oh, g.h, g.sh, g.dh, g.pt, i)
        if vh is None:
            continue
        for j in range(g.kw):
            vw = _valid(g.ow, g.w, g.sw, g.dw, g.pl, j)
            if vw is None:
                continue
            out[:, :, i, j] = np.einsum("ncmhw,nchw->cm", dy[:, :, :, vh[0], vw[0]], x[:, :, vh[1], vw[1]])
    return out


# ----------------------------------------------------------------------------- forward and data gradient
def _same_ok(g: Geometry) -> bool:
    """"Same"-like geometry for the flat forward / data gradient: ``OH == ceil(H / sY)`` and
    ``OW == ceil(W / sX)``, so every polyphase plane of x has the output plane's shape."""
    return g.oh == -(-g.h // g.sh) and g.ow == -(-g.w // g.sw)


class _SameAccPlan:
    """Flat forward / data gradient for "same"-like geometry, any stride and dilation.

    x is split into its ``sY x sX`` polyphase planes (stride 1: x itself), each of the output
    plane's shape ``OH x OW``. Tap ``(i, j)`` then reads phase ``(a_i, b_j)`` at the constant
    flat offset ``u_i * OW + v_j`` (``i*dY - pT = sY*u_i + a_i``), so in the flattened
    ``(channel, position)`` vector every tap is one shifted copy, and ``np.einsum`` runs over long
    contiguous vectors for a chunk of channels at a time. The padding is a per-tap mask folded
    into the per-channel weights (``coef * mask``, built per chunk, reused for all images).
    The data gradient is the transpose: dy is the flat source, and each polyphase plane of dx
    gathers the taps of its phase at offsets ``-(u_i * OW + v_j)``; the planes are then
    interleaved into dx. Values read across a row or plane end are multiplied by a zero of the
    mask; a non-finite result makes the plan return None so the caller runs its exact kernel.
    """

    def __init__(self, geo: Geometry, dtype, sign: int, threads: Optional[int]):
        self.geo = g = geo.check()
        if not _same_ok(geo):
            raise ValueError(f"{geo}: the flat algorithm needs a 'same' output plane (OH = ceil(H/sY), "
                             f"OW = ceil(W/sX))")
        self.dtype = np.dtype(dtype)
        self.cdtype = np.dtype(np.float32) if self.dtype == np.float16 else self.dtype
        self.threads = cpu_count() if threads is None else max(1, int(threads))
        self.sign = sign
        self.P = P = g.oh * g.ow
        rows = [divmod(i * g.dh - g.pt, g.sh) for i in range(g.kh)]  # (u, a)
        cols = [divmod(j * g.dw - g.pl, g.sw) for j in range(g.kw)]  # (v, b)
        self.rgroups = _groups([(a, u) for u, a in rows])
        self.cols = cols
        self.nph = g.sh * g.sw
        # mask[i, j, q] on the output plane: forward, the x read is inside x; data gradient,
        # the dy read (r - u, s - v) is inside dy
        oh = np.arange(g.oh)[:, None]
        ow = np.arange(g.ow)[None, :]
        self.mask = np.zeros((g.kh, g.kw, P), self.cdtype)
        offs = []
        for i, (u, a) in enumerate(rows):
            for j, (v, b) in enumerate(cols):
                if sign > 0:
                    ok = (oh * g.sh + i * g.dh - g.pt >= 0) & (oh * g.sh + i * g.dh - g.pt < g.h) & \
                         (ow * g.sw + j * g.dw - g.pl >= 0) & (ow * g.sw + j * g.dw - g.pl < g.w)
                    offs.append((a * g.sw + b) * g.n * g.c * P + u * g.ow + v)
                else:
                    ok = (oh - u >= 0) & (oh - u < g.oh) & (ow - v >= 0) & (ow - v < g.ow)
                    offs.append(-(u * g.ow + v))
                self.mask[i, j] = ok.reshape(-1)
        # margins: reads before the first plane / past the last one (times a zero of the mask)
        shifts = [u * g.ow + v for u, _ in rows for v, _ in cols]
        self.lo = max(0, -min(offs)) + 1
        self.hi = max(0, max(shifts) if sign > 0 else -min(shifts)) + 1
        self.chunk = max(1, (1 << 14) // P)  # channels per chunk: ~16K positions
        self._pool = _Pool()

    def _fill_src(self, buf, src):
        """Copy the source into the flat buffer: forward, x's polyphase planes; data gradient, dy."""
        g, P = self.geo, self.P
        if self.sign < 0:  # src: dy as [N, M, C, OH, OW]
            buf[self.lo: self.lo + src.size].reshape(src.shape)[...] = src
            return
        body = buf[self.lo: self.lo + self.nph * g.n * g.c * P].reshape(g.sh, g.sw, g.n, g.c, g.oh, g.ow)
        for a in range(g.sh):
            for b in range(g.sw):
                ha, wb = -(-(g.h - a) // g.sh), -(-(g.w - b) // g.sw)
                if ha > 0 and wb > 0:  # the rest of the plane stays zero (and is masked anyway)
                    body[a, b, :, :, :ha, :wb] = src[:, :, a::g.sh, b::g.sw]

    def _views(self, ws, buf):
        """Strided views over all channels, one per (source plane, tap column, row group)."""
        cached = ws.get("views")
        if cached is not None and cached[0] is buf:
            return cached[1]
        g, P, it = self.geo, self.P, buf.itemsize
        nsrc = g.m if self.sign < 0 else 1
        views = {}
        for s_idx in range(nsrc):
            for j, (v, b) in enumerate(self.cols):
                for gi, (a, itaps, u0, du) in enumerate(self.rgroups):
                    if self.sign > 0:
                        base = self.lo + (a * g.sw + b) * g.n * g.c * P + u0 * g.ow + v
                        nstride, istride = g.c * P, du * g.ow
                    else:
                        base = self.lo + s_idx * g.c * P - (u0 * g.ow + v)
                        nstride, istride = nsrc * g.c * P, -du * g.ow
                    views[s_idx, j, gi] = as_strided(buf[base:], shape=(g.n, len(itaps), g.c * P),
                                                     strides=(nstride * it, istride * it, it), writeable=False)
        ws["views"] = (buf, views)
        return views

    def _apply(self, src: np.ndarray, coef: np.ndarray, outs) -> None:
        """``outs[k]``: forward, ``[y]`` with y ``[N, C, M, P]``; data gradient, one ``[N, C, P]``
        per output phase ``k = b_j * ... `` (see ``_phase_out``), summed over m and the taps."""
        g, P, C = self.geo, self.P, self.geo.c
        fwd = self.sign > 0
        ws = self._pool.acquire()
        try:
            size = (self.nph if fwd else g.m) * g.n * C * P
            buf = _buf(ws, "src", self.lo + size + self.hi, self.cdtype)
            self._fill_src(buf, src)
            views = self._views(ws, buf)

            def block(c0, c1):
                tmp = np.empty((g.n, min(self.chunk, c1 - c0) * P), self.cdtype)
                for a0 in range(c0, c1, self.chunk):
                    a1 = min(c1, a0 + self.chunk)
                    cb, L = a1 - a0, (a1 - a0) * P
                    t = tmp[:, :L]
                    started = set()
                    for m in range(g.m):
                        # coef * mask for this chunk: [kh, kw, cb, P]
                        wm = coef[a0:a1, m].transpose(1, 2, 0)[:, :, :, None] * self.mask[:, :, None, :]
                        if fwd:
                            started = set()  # each m is its own output
                        for j, (v, b) in enumerate(self.cols):
                            for gi, (a, itaps, u0, du) in enumerate(self.rgroups):
                                # one einsum per tap column and row phase: a (tap, position)
                                # stride tie would make einsum loop over the taps innermost
                                v_all = views[0 if fwd else m, j, gi]
                                w_g = wm[_prog(itaps), j]  # [ni, cb, P]
                                if fwd:
                                    key, o = 0, outs[0][:, a0:a1, m]  # [N, cb, P]
                                else:
                                    key = a * g.sw + b
                                    o = outs[key][:, a0:a1]  # [N, cb, P]
                                if fwd and g.m > 1:  # output channels interleave: no flat axis
                                    vv = v_all.reshape(g.n, len(itaps), C, P)[:, :, a0:a1]
                                    spec, tv = "nicq,icq->ncq", t.reshape(g.n, cb, P)
                                else:
                                    vv, o = v_all[:, :, a0 * P: a1 * P], o.reshape(g.n, L)
                                    w_g, spec, tv = w_g.reshape(len(itaps), L), "niq,iq->nq", t
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
                _parallel(block, _blocks(g.c, self.threads), self.threads)
        finally:
            self._pool.release(ws)


class ForwardPlan(_SameAccPlan):
    """``plan(x [N, C, H, W], w [C, M, kh, kw]) -> y [N, C, M, OH, OW]`` ("same"-like geometry,
    any stride and dilation), or None when the result is not finite (the caller then runs its
    exact kernel)."""

    def __init__(self, geo: Geometry, dtype=np.float32, threads: Optional[int] = None):
        super().__init__(geo, dtype, +1, threads)

    def __call__(self, x: np.ndarray, w: np.ndarray) -> Optional[np.ndarray]:
        g = self.geo
        y = np.empty((g.n, g.c, g.m, self.P), self.cdtype)
        self._apply(x, w.astype(self.cdtype, copy=False), [y])
        with np.errstate(invalid="ignore", over="ignore"):  # a NaN/Inf sum only selects the exact path
            finite = np.isfinite(np.add.reduce(y, axis=None))
        if not finite:
            return None
        return y.reshape(g.n, g.c, g.m, g.oh, g.ow).astype(self.dtype, copy=False)


class DataGradientPlan(_SameAccPlan):
    """``plan(dy [N, C, M, OH, OW], w [C, M, kh, kw]) -> dx [N, C, H, W]`` ("same"-like
    geometry, any stride and dilation), or None when the result is not finite."""

    def __init__(self, geo: Geometry, dtype=np.float32, threads: Optional[int] = None):
        super().__init__(geo, dtype, -1, threads)

    def __call__(self, dy: np.ndarray, w: np.ndarray) -> Optional[np.ndarray]:
        g = self.geo
        if self.nph == 1:
            dx = np.empty((g.n, g.c, self.P), self.cdtype)
            self._apply(dy.transpose(0, 2, 1, 3, 4), w.astype(self.cdtype, copy=False), [dx])
            dx = dx.reshape(g.n, g.c, g.h, g.w)
        else:  # one plane per phase, then interleaved into dx
            planes = [np.empty((g.n, g.c, self.P), self.cdtype) for _ in range(self.nph)]
            self._apply(dy.transpose(0, 2, 1, 3, 4), w.astype(self.cdtype, copy=False), planes)
            dx = np.empty((g.n, g.c, g.h, g.w), self.cdtype)
            for a in range(g.sh):
                for b in range(g.sw):
                    ha, wb = -(-(g.h - a) // g.sh), -(-(g.w - b) // g.sw)
                    if ha > 0 and wb > 0:
                        dx[:, :, a::g.sh, b::g.sw] = planes[a * g.sw + b].reshape(g.n, g.c, g.oh, g.ow)[:, :, :ha, :wb]
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(np.add.reduce(dx, axis=None))
        if not finite:
            return None
        return dx.astype(self.dtype, copy=False)


# ----------------------------------------------------------------------------- functional API
@lru_cache(maxsize=8)
def _cached_plan(geo: Geometry, dtype: str, algorithm: str, threads: Optional[int]) -> WeightsGradientPlan:
    return WeightsGradientPlan(geo, np.dtype(dtype), algorithm, threads)


def weights_gradient(dy: np.ndarray, x: np.ndarray, kernel: tuple, strides=(1, 1), dilations=(1, 1),
                     padding=(0, 0, 0, 0), algorithm: str = "auto", threads: Optional[int] = None) -> np.ndarray:
    """``dW[c, m, i, j] = sum_{n,oh,ow} dy[n, c, m, oh, ow] * x[n, c, oh*sh + i*dh - pt, ow*sw + j*dw - pl]``.

    ``dy`` is ``[N, C, M, OH, OW]`` (or ``[N, C*M, OH, OW]`` with M = 1... any M: it is split
    by ``x``'s C); ``x`` is ``[N, C, H, W]``; returns ``[C, M, kH, kW]``. Plans (frames) are
    cached for the last few geometries.
    """
    n, c, h, w = x.shape
    if dy.ndim == 4:
        dy = dy.reshape(dy.shape[0], c, dy.shape[1] // c, dy.shape[2], dy.shape[3])
    m = dy.shape[2]
    pt, pb, pl, pr = padding
    geo = Geometry(n, c, m, h, w, kernel[0], kernel[1], strides[0], strides[1], dilations[0], dilations[1],
                   pt, pb, pl, pr)
    dtype = np.result_type(dy.dtype, x.dtype)
    plan = _cached_plan(geo, dtype.str, algorithm, threads)
    return plan(dy, x)
