"""Where the user's code called into minigraph: the first stack frame outside the package.

Errors name that ``file:line``, and deprecation warnings point at it.
"""
from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Optional

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def user_frame() -> tuple[int, Optional[FrameType]]:
    """(how many frames up from the caller, the frame) of the first frame outside the package."""
    depth, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PKG_DIR):
        depth, frame = depth + 1, frame.f_back  # type: ignore[assignment]
    return depth, frame


def user_location() -> str:
    """``file:line`` where the user's code called into minigraph (where the user built the op)."""
    frame = user_frame()[1]
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "<unknown>"
