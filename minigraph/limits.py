"""Size limits: a declared shape beyond them is a mistake, refused with a clear error."""
from __future__ import annotations

import os
from typing import Optional

MAX_ELEMENTS = 1 << 34  # 16 Gi elements: anything larger is a declared-shape mistake


def physical_memory() -> int:
    """Bytes of RAM; one tensor larger than that can never be allocated (0: unknown, no limit)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return 0


MAX_BYTES = physical_memory()

# The most bytes the arrays of a loaded graph file may declare in total (its constants and
# variables), checked before any of them is read: None means MAX_BYTES (or 1 TiB where the
# memory size is unknown). Set it lower to load files from elsewhere within a smaller budget.
MAX_LOAD_BYTES: Optional[int] = None


# The largest value mg.from_onnx computes while it reads a model (ConstantOfShape, Expand, the
# arithmetic of constants): a larger one is built as an op (a filled constant, a broadcast), which
# the limits above size when a run needs it, so a small file cannot make the import allocate much.
MAX_FOLD_BYTES = 1 << 26  # 64 MiB

# The largest result the compiler's constant folding computes at compile time (and keeps in the
# plan); a larger op of constants runs as an ordinary step.
MAX_CONSTANT_FOLD_BYTES = 1 << 20  # 1 MiB


def load_budget() -> int:
    """The byte budget of ``mg.load``: ``MAX_LOAD_BYTES``, else ``MAX_BYTES``, else 1 TiB."""
    return MAX_LOAD_BYTES if MAX_LOAD_BYTES is not None else (MAX_BYTES or 1 << 40)

# The highest rank of a tensor: a placeholder, constant, variable or op output of a higher rank
# is refused where it is built, and a graph file or checkpoint that declares one where it is read.
MAX_RANK = 64
