"""Long loops: the one way a webgpu kernel writes a loop whose trip count grows with the data.

Mesa's llvmpipe (lavapipe) stops a shader invocation's loops after 65,535 iterations in all
(every level of a nest counts), silently: a loop over the elements of a long axis just ends
early and the kernel returns a wrong result. So no invocation may run more than ``LOOP_MAX``
iterations. A loop over ``trips`` iterations that can be longer is written as *passes that
continue in place* (``long_loop``):

- the loop is cut into passes of at most ``LOOP_MAX // (1 + inner)`` iterations (``inner``: the
  iterations the loop's body runs in loops of its own), each a dispatch of the same pipeline
  whose last two parameters are the pass's range ``[j0, j1)``;
- between passes every invocation keeps the loop's running state (a sum, a best value and its
  index) in a scratch buffer of its own words (``state``), in the compute type, so float16
  rounds once: a pass reads it when ``j0 > 0`` and writes it back unless ``j1 == trips``, when
  it writes the result instead.

The iterations run in the order of the single loop they replace, so the result has the same
bits. The other multi-pass shape, chunk-then-combine (partial results per chunk reduced by
``reduction.reduce_dispatch``), is for reductions that also want the parallelism.
``tests/test_webgpu_long_loops.py`` runs every registered kernel whose work per invocation grows
with an input size past 65,536 iterations, against the numpy backend.
"""
from __future__ import annotations

from typing import Callable

LOOP_MAX = 32768  # loop iterations one invocation may run in all (llvmpipe stops them after 65,535)


def nested_iterations(*trips: int) -> int:
    """Loop iterations of nested loops of these trip counts, outermost first (every level counts)."""
    total, outer = 0, 1
    for t in trips:
        outer *= t
        total += outer
    return total


def passes(trips: int, inner: int = 0) -> list[tuple[int, int]]:
    """The ``[j0, j1)`` of each pass over a loop of ``trips`` iterations whose body runs ``inner``
    iterations of loops of its own (at least one pass, so an empty loop still writes its result)."""
    per = max(1, LOOP_MAX // (1 + inner))
    return [(j0, min(trips, j0 + per)) for j0 in range(0, max(trips, 1), per)]


def long_loop(kb, trips: int, invocations: int, words: int, record: Callable, inner: int = 0) -> int:
    """Record a kernel whose every invocation loops over ``trips`` iterations, as passes.

    ``record(j0, j1, state)`` records one pass's dispatch (its params end with ``j0, j1``);
    ``state`` is the scratch buffer of ``words`` 32-bit words per invocation (a 4-byte dummy when
    one pass suffices), bound read-write. Returns the number of passes.
    """
    ranges = passes(trips, inner)
    state = kb.scratch(4 * words * invocations if len(ranges) > 1 else 4)
    for j0, j1 in ranges:
        record(j0, j1, state)
    return len(ranges)
