"""Philox 4x32-10, the counter-based generator of the random ops, in vectorised NumPy.

Random123's Philox4x32-10 (Salmon et al., SC'11): ten rounds of 32x32 -> 64-bit multiplies
on a 128-bit counter under a 64-bit key. The webgpu backend has the same function in WGSL
(``backends/webgpu/kernels/philox.wgsl``); both map a seed to the same bits.

The stream of a random op (docs/random.md):

- key = the op's 64-bit seed ``(k0, k1) = (seed & 0xffffffff, seed >> 32)``;
- counter = ``(block, attempt, draw_lo, draw_hi)``: element ``i`` of the result takes word
  ``i % 4`` of block ``i // 4``; ``draw`` is how many times the executable ran before (it
  advances once per successful run); ``attempt`` is 0, or the attempt number of a truncated
  normal's Box-Muller rejection;
- a uniform float in [0, 1) is the word's top 24 bits times 2^-24, exact in float32.

The ops taking a state tensor use a 128-bit counter of their own instead (``random_words(...,
counter=)``, ``state_words`` / ``read_state``).

``drawing(n)`` sets the draw number a run's random kernels read (``current_draw()``).
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from typing import Iterator

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57  # round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # key schedule increments (golden ratio, sqrt(3) - 1)
ROUNDS = 10
MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1


def philox4x32(counter, key, rounds: int = ROUNDS) -> np.ndarray:
    """Philox4x32-R of counters ``counter`` (``[4, ...]`` uint32) under ``key`` (two uint32s or
    ``[2, ...]`` arrays); returns ``[4, ...]`` uint32."""
    c = [np.asarray(x, dtype=np.uint64) for x in counter]
    k0 = np.asarray(key[0], dtype=np.uint64)
    k1 = np.asarray(key[1], dtype=np.uint64)
    m = np.uint64(MASK32)
    s = np.uint64(32)
    for r in range(rounds):
        if r:
            k0 = (k0 + np.uint64(W0)) & m
            k1 = (k1 + np.uint64(W1)) & m
        p0 = np.uint64(M0) * c[0]
        p1 = np.uint64(M1) * c[2]
        c = [(p1 >> s) ^ c[1] ^ k0, p1 & m, (p0 >> s) ^ c[3] ^ k1, p0 & m]
    return np.stack([np.broadcast_to(x, np.broadcast(*c).shape) for x in c]).astype(np.uint32)


def split_key(seed: int) -> tuple[int, int]:
    """(k0, k1) of a 64-bit seed."""
    return seed & MASK32, (seed >> 32) & MASK32


MASK128 = (1 << 128) - 1


def random_words(n: int, seed: int, draw: int = 0, attempt: int = 0, *, counter: "int | None" = None) -> np.ndarray:
    """The ``n`` uint32 words of one op's draw: word ``i`` is lane ``i % 4`` of block ``i // 4``.

    Block ``j`` is Philox of the 128-bit counter ``base + j + attempt * 2^32`` (words low first),
    where ``base`` is ``draw * 2^64`` (the seeded ops: counter ``(j, attempt, draw_lo, draw_hi)``)
    or the given ``counter`` (the ops that take a state tensor), with carries, modulo 2^128.
    """
    base = ((draw & MASK64) << 64 if counter is None else counter) + ((attempt & MASK32) << 32)
    base &= MASK128
    blocks = -(-n // 4)
    b = np.arange(blocks, dtype=np.uint64)
    low = b + np.uint64(base & MASK64)  # wraps modulo 2^64
    high = (low < b).astype(np.uint64) + np.uint64(base >> 64)  # the carry
    m, s = np.uint64(MASK32), np.uint64(32)
    ctr = [low & m, low >> s, high & m, high >> s]
    out = philox4x32(ctr, split_key(seed))
    return out.T.reshape(-1)[:n]


def state_words(counter: int, key: int) -> np.ndarray:
    """A Philox state tensor's seven int32 words: 1, the 128-bit counter low word first, the key
    low word first (the layout of PyTorch's MPS generator; docs/random.md)."""
    c, k = counter & MASK128, key & MASK64
    words = [1] + [(c >> (32 * i)) & MASK32 for i in range(4)] + [k & MASK32, k >> 32]
    return np.array(words, np.uint32).view(np.int32)


def read_state(state: np.ndarray) -> tuple[int, int]:
    """(counter, key) of a state tensor's seven words (word 0 is not read)."""
    w = [int(x) for x in np.asarray(state).astype(np.int64) & MASK32]
    return w[1] | w[2] << 32 | w[3] << 64 | w[4] << 96, w[5] | w[6] << 32


def uniform01(words: np.ndarray) -> np.ndarray:
    """float32 in [0, 1): the top 24 bits times 2^-24 (exact)."""
    return (words >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)


def open_unit(words: np.ndarray) -> np.ndarray:
    """float32 in (-1, 1), symmetric, never +-1: ``(2 k + 1 - 2^23) / 2^23`` with ``k`` the top 23
    bits (exact; the input of the inverse error function)."""
    k = (words >> np.uint32(9)).astype(np.int64)
    return (2 * k + 1 - (1 << 23)).astype(np.float32) * np.float32(2.0 ** -23)


def mulhi(a: np.ndarray, b: int) -> np.ndarray:
    """The high 32 bits of ``a * b`` (uint32 words times a uint32): an integer in [0, b)."""
    return ((a.astype(np.uint64) * np.uint64(b)) >> np.uint64(32)).astype(np.uint32)


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision.
ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erfinv_f32(x: np.ndarray) -> np.ndarray:
    """erfinv in float32 by Giles' polynomials (the formula the WGSL kernel uses)."""
    f = np.float32
    x = x.astype(np.float32)
    w = -log_f32((f(1) - x) * (f(1) + x))
    wc = w - f(2.5)
    pc = np.full_like(x, f(ERFINV_CENTRAL[0]))
    for c in ERFINV_CENTRAL[1:]:
        pc = f(c) + pc * wc
    wt = np.sqrt(w) - f(3.0)
    pt = np.full_like(x, f(ERFINV_TAIL[0]))
    for c in ERFINV_TAIL[1:]:
        pt = f(c) + pt * wt
    return np.where(w < f(5.0), pc, pt) * x


LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
            -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)


def log_f32(x: np.ndarray) -> np.ndarray:
    """Natural log of positive normal float32s without a library log (Cephes' logf): an exact
    split ``x = m 2^e``, then a polynomial in ``m - 1``; the WGSL kernel evaluates the same steps."""
    f = np.float32
    m, e = np.frexp(x.astype(np.float32))  # m in [0.5, 1), exact
    small = m < f(0.70710677)
    e = (e - small).astype(np.float32)
    t = np.where(small, m + m, m) - f(1.0)
    z = t * t
    p = np.full_like(t, f(LOG_POLY[0]))
    for c in LOG_POLY[1:]:
        p = p * t + f(c)
    y = p * t * z
    y = y + f(-2.12194440e-4) * e
    y = y - f(0.5) * z
    return (t + y) + f(0.693359375) * e


def cos_2pi_f32(u: np.ndarray) -> np.ndarray:
    """``cos(2 pi u)`` in float32 without a library cosine (whose accuracy differs between
    NumPy and GPU drivers): exact reduction to a quarter turn, then Cephes' sinf/cosf polynomials
    on [-pi/4, pi/4]; the WGSL kernel evaluates the same float32 steps."""
    f = np.float32
    u = u.astype(np.float32)
    r = u - np.round(u)  # [-1/2, 1/2], exact
    q = np.round(r * f(4.0))  # quadrant in {-2, ..., 2}
    a = (r - q * f(0.25)) * f(2 * math.pi)  # [-pi/4, pi/4]
    z = a * a
    c = ((f(2.443315711809948e-05) * z - f(1.388731625493765e-03)) * z + f(4.166664568298827e-02)) * z * z \
        - f(0.5) * z + f(1.0)
    s = ((f(-1.9515295891e-04) * z + f(8.3321608736e-03)) * z - f(1.6666654611e-01)) * z * a + a
    k = q.astype(np.int64) % 4
    return np.select([k == 0, k == 1, k == 2], [c, -s, -c], s)


def normal_cdf2(z: float) -> float:
    """``2 Phi(z) - 1 = erf(z / sqrt 2)``, in float64 (host-side constants of the kernels)."""
    if math.isinf(z):
        return math.copysign(1.0, z)
    return math.erf(z / math.sqrt(2.0))


def splitmix64(x: int) -> int:
    """One SplitMix64 step: a well-mixed 64-bit value (derives op seeds from a graph seed)."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def derived_seed(graph_seed: int, op_index: int) -> int:
    """The seed of an op built without one: a mix of the graph's seed and the op's index."""
    return splitmix64(splitmix64(graph_seed & MASK64) ^ (op_index & MASK64))


_DRAW: contextvars.ContextVar[int] = contextvars.ContextVar("minigraph_random_draw", default=0)


def current_draw() -> int:
    """The draw number of the run in progress (0 outside a run)."""
    return _DRAW.get()


@contextlib.contextmanager
def drawing(draw: int) -> Iterator[None]:
    """Run the block with ``current_draw() == draw``."""
    token = _DRAW.set(int(draw))
    try:
        yield
    finally:
        _DRAW.reset(token)
