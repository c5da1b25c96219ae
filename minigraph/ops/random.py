"""Random ops (MPSGraph's RandomOps): ``random_tensor``, ``random_uniform_tensor``, ``dropout`` and
the state-tensor forms (``random_philox_state_tensor``, ``random_tensor_with_state``,
``random_uniform_tensor_with_state``), which draw from an int32 [7] tensor holding Philox's
counter and key and return the state after the draw instead of using the draw counter below.

Every op draws from Philox4x32-10 (minigraph/philox.py) keyed by its ``seed``; the graph's
draw counter (``RandomStream``) advances once per successful run of any of its executables, so
each run is a fresh draw, an executable compiled again (after ``g.run``'s cache dropped it)
continues the stream, and equal seeds give equal draws on both backends (docs/random.md). An op built with ``seed=None`` takes a seed
derived from the graph's ``random_seed`` and its own index, so a program that sets
``g.random_seed`` is reproducible; without one it takes a fresh random seed (as MPSGraph's
seedless ops "use a random seed value").

``dropout`` keeps an element when its uniform draw is at least ``rate`` and scales it by
``1 / (1 - rate)``; dropped elements are exactly 0 (NaN and inf too). Its gradient is ``dropout``
of the incoming gradient with the same seed: in the same run it draws the same mask.
"""
from __future__ import annotations

import math
import secrets
import threading
from typing import Any, Optional

from ..descriptors import RandomDistribution, RandomNormalSamplingMethod, RandomOpDescriptor, frozen_copy
from ..errors import DescriptorError, DTypeError, ShapeError
from ..ir import Tensor
from ..philox import MASK64, derived_seed
from ..types import ShapedType, as_shape
from .registry import defop, gradient


class RandomStream:
    """A graph's position in its random stream: how many runs with random ops succeeded so far,
    whichever executable of the graph ran them (the draw number of the next such run).

    Not in MPSGraph (its random state is a tensor the app threads through, or hidden).
    """

    __slots__ = ("draws", "lock")

    def __init__(self) -> None:
        self.draws = 0
        self.lock = threading.Lock()  # one draw number per run, across the graph's executables

    def __repr__(self) -> str:
        return f"RandomStream(draws={self.draws})"


_STREAM_LOCK = threading.Lock()


def random_stream(g: Any) -> RandomStream:
    """The graph's ``RandomStream`` (``Graph`` makes it; any other graph gets one on first use)."""
    stream = getattr(g, "random_stream", None)
    if isinstance(stream, RandomStream):
        return stream
    with _STREAM_LOCK:
        stream = getattr(g, "random_stream", None)
        if not isinstance(stream, RandomStream):
            stream = g.random_stream = RandomStream()
    return stream


def _infer_random(in_types, attrs):
    d = attrs["descriptor"]
    return [ShapedType(attrs["shape"], d.dtype)]


def _infer_dropout(in_types, attrs):
    x = in_types[0]
    if x.dtype.name not in ("float32", "float16", "float64"):
        raise DTypeError(f"tensor must be a float tensor (float32, float16; float64 on numpy), got {x.dtype.name}")
    return [x]


def _static_shape(shape: Any, label: str) -> tuple:
    if isinstance(shape, Tensor):
        raise ShapeError(f"{label}: shape must be a list of ints, got the tensor {shape.name!r} (MPSGraph's "
                         "shape-tensor form, withShapeTensor:, is not supported; give its values)")
    dims = as_shape(shape, f"{label}: shape")
    if -1 in dims:
        raise ShapeError(f"{label}: shape {list(dims)} must be static (a random op's shape is its "
                         "result's shape; -1 is not allowed)")
    return dims


def resolve_seed(g, seed: Any, label: str) -> int:
    """The op's 64-bit seed: the one given, or one derived from the graph's seed and the op's index."""
    if seed is None:
        graph_seed = getattr(g, "random_seed", None)
        if graph_seed is None:
            return secrets.randbits(64)
        return derived_seed(check_seed(graph_seed, "random_seed"), len(g.operations))
    return check_seed(seed, f"{label}: seed")


def check_seed(seed: Any, what: str) -> int:
    """An int in [-2^63, 2^64) (MPSGraph's ``seed: Int``), as its 64-bit pattern."""
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise DescriptorError(f"{what} must be an int, got {seed!r}")
    s = int(seed)
    if not -(1 << 63) <= s <= MASK64:
        raise DescriptorError(f"{what}={s} must fit 64 bits (in [-2**63, 2**64))")
    return s & MASK64


def check_rate(rate: Any, label: str) -> float:
    """A dropout rate in [0, 1]: 0 keeps everything, 1 drops everything."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) and not hasattr(rate, "__float__"):
        raise DescriptorError(f"{label}: rate must be a number in [0, 1], got {rate!r}")
    r = float(rate)
    if not (0.0 <= r <= 1.0):  # NaN fails too
        raise DescriptorError(f"{label}: rate={r} must be in [0, 1] (the probability of dropping an element; "
                              "0 keeps all, 1 drops all)")
    return r


def keep_threshold(rate: float) -> int:
    """An element is kept when the top 24 bits of its word are >= this (``ceil(rate * 2^24)``)."""
    return min(1 << 24, math.ceil(rate * (1 << 24)))


@defop("random_tensor", swift="randomTensor(withShape:descriptor:seed:name:)",
       objc="randomTensorWithShape:descriptor:seed:name:", inputs=(), infer=_infer_random, family="random",
       differentiable=False, attrs=("shape", "descriptor", "seed"))
def random_tensor(g, shape, descriptor: Any, seed: Optional[int] = None, name: Optional[str] = None):
    """Random values of ``shape`` from the descriptor's distribution, a fresh draw on each run
    (MPSGraph ``randomTensor(withShape:descriptor:seed:name:)``; ``seed=None`` is its
    ``randomTensor(withShape:descriptor:name:)``).

    Args:
        shape: The result's shape (static ints).
        descriptor: A ``RandomOpDescriptor`` (copied when the op is built).
        seed: The op's seed (an int); equal seeds give equal draws. None derives one from the
            graph's ``random_seed`` and the op's index.
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        Tensor: values of ``descriptor.dtype`` and ``shape``.

    Raises:
        MiniGraphError: a ShapeError for a dynamic or negative shape, a DescriptorError for a bad
            descriptor or seed; the message names the op.
    """
    label = f"random_tensor op {name or 'random_tensor'!r}"
    if descriptor is None:
        raise DescriptorError(f"{label}: a RandomOpDescriptor is required")
    desc = frozen_copy(descriptor, RandomOpDescriptor, label)
    dims = _static_shape(shape, label)
    return g.add_op("random_tensor", [], {"shape": dims, "descriptor": desc,
                                          "seed": resolve_seed(g, seed, label)}, name).output


@defop("random_uniform_tensor", swift="randomUniformTensor(withShape:seed:name:)",
       objc="randomUniformTensorWithShape:seed:name:", inputs=(), family="random", differentiable=False,
       infer=lambda in_types, attrs: [ShapedType(attrs["shape"], "float32")], attrs=("shape", "seed"))
def random_uniform_tensor(g, shape, seed: Optional[int] = None, name: Optional[str] = None):
    """float32 values uniform in [0, 1), a fresh draw on each run (MPSGraph
    ``randomUniformTensor(withShape:seed:name:)``; ``seed=None`` is ``randomUniformTensor(withShape:name:)``).
    The same bits as ``random_tensor`` with a default UNIFORM float32 descriptor and the same seed.

    Args:
        shape: The result's shape (static ints).
        seed: The op's seed (an int); None derives one from the graph's ``random_seed`` and the op's index.
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        Tensor: float32 values of ``shape`` in [0, 1).

    Raises:
        MiniGraphError: a ShapeError for a dynamic or negative shape, a DescriptorError for a bad seed.
    """
    label = f"random_uniform_tensor op {name or 'random_uniform_tensor'!r}"
    dims = _static_shape(shape, label)
    return g.add_op("random_uniform_tensor", [], {"shape": dims, "seed": resolve_seed(g, seed, label)},
                    name).output


@defop("dropout", swift="dropout(_:rate:name:)", objc="dropoutTensor:rate:name:", inputs=("tensor",),
       infer=_infer_dropout, family="random", attrs=("rate", "seed"))
def dropout(g, tensor, rate: float, seed: Optional[int] = None, name: Optional[str] = None):
    """Zero each element with probability ``rate`` and scale the others by ``1 / (1 - rate)``,
    a fresh mask on each run (MPSGraph ``dropout(_:rate:name:)``). Its gradient uses the same mask.

    Args:
        tensor: A float32 or float16 tensor of this graph (float64 on the numpy backend).
        rate: The probability of dropping an element, in [0, 1]: 0 returns the tensor unchanged,
            1 returns zeros.
        seed: The op's seed (not in MPSGraph); None derives one from the graph's ``random_seed``
            and the op's index.
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        Tensor: the tensor's shape and dtype.

    Raises:
        MiniGraphError: a DescriptorError for a rate outside [0, 1] or a bad seed, a DTypeError for
            a non-float tensor.
    """
    label = f"dropout op {name or 'dropout'!r}"
    r = check_rate(rate, label)
    x = g.as_tensor(tensor, label)
    return g.add_op("dropout", [x], {"rate": r, "seed": resolve_seed(g, seed, label)}, name).output


@gradient("dropout")
def _dropout_gradient(g, op, dy, wanted):
    """The same mask and scale applied to dy: the same seed, shape and run draw the same bits."""
    if not wanted[0]:
        return [None]
    return [g.dropout(dy, op.attrs["rate"], seed=op.attrs["seed"])]


def descriptor_of(op) -> RandomOpDescriptor:
    """The distribution an op draws from (the uniform ops: UNIFORM float32 on [0, 1))."""
    if op.type in ("random_tensor", "random_tensor_with_state"):
        return op.attrs["descriptor"]
    return frozen_copy(RandomOpDescriptor(RandomDistribution.UNIFORM, "float32"), RandomOpDescriptor, op.type)


# ------------------------------------------------------------------------------ state tensors
STATE_SHAPE = (7,)


def blocks_used(d: RandomOpDescriptor, n: int) -> int:
    """How many Philox blocks (4 words each) a draw of ``n`` values takes: two words a value for
    Box-Muller normals, one otherwise (a truncated normal's rejection attempts take counter lane 1,
    inside the same blocks' range)."""
    two = d.sampling_method == RandomNormalSamplingMethod.BOX_MULLER and \
        d.distribution in (RandomDistribution.NORMAL, RandomDistribution.TRUNCATED_NORMAL)
    return -(-(2 * n if two else n) // 4)


def _infer_state(in_types, attrs):
    return [ShapedType(STATE_SHAPE, "int32")]


@defop("random_philox_state_tensor", swift="randomPhiloxStateTensor(withCounterLow:counterHigh:key:name:)",
       objc="randomPhiloxStateTensorWithCounterLow:counterHigh:key:name:", inputs=(), infer=_infer_state,
       family="random", differentiable=False, attrs=("counter_low", "counter_high", "key"))
def random_philox_state_tensor(g, counter_low: int = 0, counter_high: int = 0, key: int = 0,
                               name: Optional[str] = None, seed: Optional[int] = None):
    """A Philox state for the random ops that take one (MPSGraph
    ``randomPhiloxStateTensor(withCounterLow:counterHigh:key:name:)``; ``seed=`` is
    ``randomPhiloxStateTensor(withSeed:name:)``): an int32 tensor of shape [7], ``[1, counter
    (four words, low first), key (two words, low first)]`` (docs/random.md).

    Args:
        counter_low: The low 64 bits of the 128-bit counter (an int, as its 64-bit pattern).
        counter_high: The high 64 bits of the counter.
        key: The 64-bit Philox key.
        name: The op's name (MPSGraph's ``name:``).
        seed: Instead of the three: the key ``seed`` with counter 0, so the first draw from the
            state equals the first run of a seeded op with ``seed=seed``.

    Returns:
        Tensor: the int32 state, shape [7].

    Raises:
        MiniGraphError: a DescriptorError for a value outside 64 bits or ``seed`` given with a
            counter or key; the message names the op.
    """
    label = f"random_philox_state_tensor op {name or 'random_philox_state_tensor'!r}"
    if seed is not None:
        if counter_low or counter_high or key:
            raise DescriptorError(f"{label}: give seed= or counter_low/counter_high/key, not both "
                                  "(seed= sets the key and a zero counter)")
        counter_low, counter_high, key = 0, 0, seed
    attrs = {k: check_seed(v, f"{label}: {k}") for k, v in
             (("counter_low", counter_low), ("counter_high", counter_high), ("key", key))}
    return g.add_op("random_philox_state_tensor", [], attrs, name).output


def _check_state(t, what: str = "state_tensor") -> None:
    if t.dtype.name != "int32" or tuple(t.shape) != STATE_SHAPE:
        raise (DTypeError if t.dtype.name != "int32" else ShapeError)(
            f"{what} must be an int32 tensor of shape [7] (made by g.random_philox_state_tensor, or the "
            f"state returned by a random op), got {t.dtype.name} of shape {list(t.shape)}")


def _infer_random_with_state(in_types, attrs):
    _check_state(in_types[0])
    d = attrs.get("descriptor")
    return [ShapedType(attrs["shape"], d.dtype if d is not None else "float32"), ShapedType(STATE_SHAPE, "int32")]


@defop("random_tensor_with_state", swift="randomTensor(withShape:descriptor:stateTensor:name:)",
       objc="randomTensorWithShape:descriptor:stateTensor:name:", inputs=("state_tensor",),
       infer=_infer_random_with_state, family="random", differentiable=False, attrs=("shape", "descriptor"))
def random_tensor_with_state(g, shape, descriptor: Any, state_tensor, name: Optional[str] = None) -> list:
    """Random values of ``shape`` drawn from ``state_tensor``, and the state after them (MPSGraph
    ``randomTensor(withShape:descriptor:stateTensor:name:)``, which returns both): equal states give
    equal values, on every run; feed the returned state to the next random op to continue the stream.

    Args:
        shape: The result's shape (static ints).
        descriptor: A ``RandomOpDescriptor`` (copied when the op is built).
        state_tensor: An int32 tensor of shape [7] (``g.random_philox_state_tensor``, a state a
            random op returned, or a placeholder fed one).
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        list[Tensor]: ``[values, new_state]``: values of ``descriptor.dtype`` and ``shape``; the
        state with its counter advanced past the Philox blocks the values used.

    Raises:
        MiniGraphError: a ShapeError for a dynamic or negative shape or a state of another shape, a
            DTypeError for a state that is not int32, a DescriptorError for a bad descriptor.
    """
    label = f"random_tensor_with_state op {name or 'random_tensor_with_state'!r}"
    if descriptor is None:
        raise DescriptorError(f"{label}: a RandomOpDescriptor is required")
    desc = frozen_copy(descriptor, RandomOpDescriptor, label)
    dims = _static_shape(shape, label)
    state = g.as_tensor(state_tensor, label)
    return list(g.add_op("random_tensor_with_state", [state], {"shape": dims, "descriptor": desc}, name).outputs)


@defop("random_uniform_tensor_with_state", swift="randomUniformTensor(withShape:stateTensor:name:)",
       objc="randomUniformTensorWithShape:stateTensor:name:", inputs=("state_tensor",),
       infer=_infer_random_with_state, family="random", differentiable=False, attrs=("shape",))
def random_uniform_tensor_with_state(g, shape, state_tensor, name: Optional[str] = None) -> list:
    """float32 values uniform in [0, 1) drawn from ``state_tensor``, and the state after them
    (MPSGraph ``randomUniformTensor(withShape:stateTensor:name:)``): ``random_tensor_with_state``
    with a default UNIFORM float32 descriptor.

    Args:
        shape: The result's shape (static ints).
        state_tensor: An int32 tensor of shape [7].
        name: The op's name (MPSGraph's ``name:``).

    Returns:
        list[Tensor]: ``[values, new_state]``.

    Raises:
        MiniGraphError: a ShapeError for a dynamic or negative shape or a state of another shape, a
            DTypeError for a state that is not int32.
    """
    label = f"random_uniform_tensor_with_state op {name or 'random_uniform_tensor_with_state'!r}"
    dims = _static_shape(shape, label)
    state = g.as_tensor(state_tensor, label)
    return list(g.add_op("random_uniform_tensor_with_state", [state], {"shape": dims}, name).outputs)
