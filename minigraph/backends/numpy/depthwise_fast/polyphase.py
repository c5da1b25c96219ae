"""Polyphase bookkeeping: which phase and shift each kernel tap reads with a stride."""
from __future__ import annotations


def axis_phases(k: int, stride: int, dilation: int) -> list:
    """For each tap: (phase, shift) with ``tap*dilation = stride*shift + phase`` (padded coordinates)."""
    return [((i * dilation) % stride, (i * dilation) // stride) for i in range(k)]


def phase_groups(phases) -> list:
    """Taps grouped by phase, each group an arithmetic progression in (tap, shift):
    ``[(phase, taps, first shift, shift step)]``."""
    out: dict = {}
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


def progression(taps) -> slice:
    """The slice of an arithmetic progression of tap indices."""
    step = taps[1] - taps[0] if len(taps) > 1 else 1
    return slice(taps[0], taps[-1] + 1, step)


def fill_slices(size: int, pad: int, stride: int, a: int, rows: int):
    """Frame rows r < rows whose padded coordinate ``a + r*stride`` is a real input index, and
    the matching input slice (or None)."""
    # input index = a + r*stride - pad in [0, size)
    r0 = max(0, -((a - pad) // stride))
    r1 = min(rows, (size - 1 - a + pad) // stride + 1)
    if r1 <= r0:
        return None
    h0 = a + r0 * stride - pad
    return slice(r0, r1), slice(h0, h0 + (r1 - r0 - 1) * stride + 1, stride)
