"""Output size and padding per padding style, per spatial axis (MPSGRAPH.md §3)."""
from __future__ import annotations

from ..descriptors import PaddingStyle
from ..errors import DescriptorError, ShapeError


def effective_kernel(k: int, d: int) -> int:
    """The dilated kernel extent ``(k - 1) * d + 1``."""
    return (k - 1) * d + 1


def resolve_axis(size: int, k: int, s: int, d: int, style: PaddingStyle, before: int, after: int,
                 axis: str = "H", ceil_mode: bool = False) -> tuple[int, int, int]:
    """``(pad_before, pad_after, out_size)`` for one spatial axis.

    EXPLICIT: ``out = floor((size + before + after - K) / s) + 1``; TF_VALID: no padding;
    TF_SAME / ONNX_SAME_LOWER: ``out = ceil(size / s)`` with total padding
    ``max((out - 1) * s + K - size, 0)`` split with the extra element at the end (TF_SAME) or
    at the beginning (ONNX_SAME_LOWER). ``size == -1`` (dynamic) gives ``out == -1``.
    """
    K = effective_kernel(k, d)
    if style == PaddingStyle.EXPLICIT:
        pb, pa = before, after
    elif style == PaddingStyle.TF_VALID:
        pb = pa = 0
    elif style in (PaddingStyle.TF_SAME, PaddingStyle.ONNX_SAME_LOWER):
        if size < 0:
            return 0, 0, -1
        out = -(-size // s)
        total = max((out - 1) * s + K - size, 0)
        small, big = total // 2, total - total // 2
        pb, pa = (small, big) if style == PaddingStyle.TF_SAME else (big, small)
        return pb, pa, out
    else:
        raise DescriptorError(f"padding style {PaddingStyle(style).name} is not supported here")
    if size < 0:
        return pb, pa, -1
    span = size + pb + pa - K
    if span < 0:
        raise ShapeError(f"{axis}: input size {size} with padding ({pb}, {pa}) is smaller than the dilated "
                         f"kernel {K} (kernel {k}, dilation {d}), so the output would be empty")
    out = (span + s - 1) // s + 1 if ceil_mode else span // s + 1
    if ceil_mode and (out - 1) * s >= size + pb:  # the last window must start inside input or left pad
        out -= 1
    return pb, pa, out
