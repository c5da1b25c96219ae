"""Size limits: a declared shape beyond them is a mistake, refused with a clear error."""
from __future__ import annotations

import os

MAX_ELEMENTS = 1 << 34  # 16 Gi elements: anything larger is a declared-shape mistake


def physical_memory() -> int:
    """Bytes of RAM; one tensor larger than that can never be allocated (0: unknown, no limit)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return 0


MAX_BYTES = physical_memory()
