"""Turning user values (numbers, lists, arrays) into arrays: constants, variables and feeds.

Two kinds of value, one rule each:

- Python numbers, nested lists and NumPy scalars *take* a dtype (the one asked for, or a
  default), and the conversion must be exact: 300 as int8, 0.5 as int32, 2 as bool or 70000 as
  float16 (inf) is refused, whether it came as ``300`` or ``np.int64(300)``.
- Arrays (NumPy arrays and array-likes: torch tensors, memoryviews, anything ``np.asarray``
  reads through ``__array__`` or the buffer protocol) *keep* their own dtype: a feed must match
  its placeholder, and a constant or variable is a copy (``dtype=`` given to ``g.constant`` is an
  explicit cast). Subclasses are dropped (an ``np.matrix`` is its data); a masked array with
  masked elements is refused, since every backend would read the values under the mask.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .errors import DTypeError, FeedDTypeError, FeedError
from .ir import Tensor
from .types import FOUR_BIT, as_dtype, check_four_bit

KNOWN_DTYPES = {np.dtype(n) for n in ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                "uint8", "uint16", "uint32", "uint64", "bool")}
_PYTHON_VALUES = (bool, int, float, complex, str, bytes, list, tuple, range)


def is_array(value: Any) -> bool:
    """Whether ``value`` keeps its own dtype: an ndarray or an array-like, not a number or a list."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, (np.generic, *_PYTHON_VALUES)) or value is None:
        return False
    return True  # torch tensors, memoryviews, array interfaces: read as np.asarray reads them


def plain_array(value: Any, what: str) -> Any:
    """``value`` without an ndarray subclass (a view, nothing copied); other values unchanged.

    A masked array with masked elements is refused: a backend would compute with the hidden values.
    """
    if not isinstance(value, np.ndarray) or type(value) is np.ndarray:
        return value
    if isinstance(value, np.ma.MaskedArray):
        if np.ma.count_masked(value):
            raise DTypeError(f"{what}: a masked array with {np.ma.count_masked(value)} masked element(s); "
                             "minigraph has no masks: give value.filled(fill_value), or a plain array")
        return np.ma.getdata(value)
    return value.view(np.ndarray)


def as_ndarray(value: Any) -> np.ndarray:
    """An array-like (a torch tensor, a memoryview) read as NumPy reads it, subclass dropped; a
    value NumPy cannot read (a tensor on a GPU, one that requires grad) is a DTypeError."""
    try:
        arr = np.asarray(value)  # no copy= keyword: a torch tensor's __array__ does not take one
    except Exception as e:
        raise DTypeError(f"a {type(value).__name__} cannot be read as an array: {type(e).__name__}: {e}") from None
    return plain_array(arr, type(value).__name__)


def frozen_array(value: Any, dtype: Any) -> np.ndarray:
    """A read-only native-order copy of ``value`` (the value of a constant or a variable).

    Without ``dtype``, Python floats give float32 and ints int32, as in MPSGraph; NumPy scalars,
    arrays and array-likes keep their dtype. None, strings and conversions of Python numbers or
    NumPy scalars that are not exact (see the module docstring) are refused.
    """
    value = plain_array(value, type(value).__name__)
    npd = None if dtype is None else as_dtype(dtype).np_dtype  # an unknown dtype keeps its own error
    if npd is not None:
        non_numbers(value)  # np.array(None, float32) is NaN and np.array("2", float32) is 2.0: refuse
    elif not is_array(value) and not isinstance(value, np.generic):
        npd = _python_default(value)
    if is_array(value) and not isinstance(value, np.ndarray):
        value = as_ndarray(value)
    try:
        with np.errstate(all="ignore"):  # what a cast changed is checked below, not warned about
            arr = np.array(value, dtype=npd, copy=True)
    except OverflowError as e:  # 300 as int8
        raise (does_not_fit(value, npd) if npd is not None else DTypeError(
            f"cannot make an array from {type(value).__name__} {value!r:.80}: {e}")) from None
    except (TypeError, ValueError) as e:
        what = repr(dtype) if dtype is not None else npd.name if npd is not None else "numbers"
        raise DTypeError(f"cannot make an array of {what} from {type(value).__name__} {value!r:.80}: {e}") from None
    as_dtype(arr.dtype)  # rejects object/str/complex arrays with a clear error
    if not is_array(value):
        inexact_conversion(value, arr)
    if not arr.dtype.isnative:  # keep values in native byte order, so results are too
        arr = arr.astype(arr.dtype.newbyteorder("="))
    arr.setflags(write=False)
    return arr


def _python_default(value: Any) -> Optional[np.dtype]:
    """float32 for Python floats and int32 for ints (nested lists too), as in MPSGraph; None keeps NumPy's."""
    non_numbers(value)
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        return None  # the conversion itself reports it
    return {"f": np.dtype(np.float32), "i": np.dtype(np.int32), "c": np.dtype(np.complex64)}.get(raw.dtype.kind) \
        if raw.dtype in (np.float64, np.int64, np.complex128) else None


def exact_array(value: Any, dtype: Any) -> np.ndarray:
    """``value`` as an array of ``dtype``, refused unless the conversion is exact, whatever the
    value is (a number, a NumPy scalar, an array): an operand takes the other operand's dtype
    this way, which the user did not ask for, so it must not change the value."""
    npd = as_dtype(dtype).np_dtype
    non_numbers(value)
    try:
        with np.errstate(all="ignore"):
            arr = np.asarray(plain_array(value, type(value).__name__), dtype=npd)
    except OverflowError:
        raise does_not_fit(value, npd) from None
    except (TypeError, ValueError) as e:
        raise DTypeError(f"cannot make an array of {as_dtype(dtype).name} from {type(value).__name__} "
                         f"{value!r:.80}: {e}") from None
    inexact_conversion(value, arr)
    return arr


def non_numbers(value: Any) -> None:
    """Refuse Python values holding None, strings or other non-numbers before a dtype'd conversion
    (NumPy would turn None into NaN and "2" into 2.0 silently). NumPy arrays are left alone."""
    if isinstance(value, (np.ndarray, np.generic)):
        return
    try:
        raw = np.asarray(value)
    except Exception:  # ragged and the like: the conversion itself reports it
        return
    if raw.dtype.kind in "USV" or (raw.dtype.kind == "O" and not all(
            isinstance(e, (int, float, bool, np.number, np.bool_)) for e in raw.ravel())):
        raise DTypeError(f"{type(value).__name__} {value!r:.60} holds non-numbers (None, strings or "
                         f"objects); give numbers or a numeric array")


def inexact_conversion(value: Any, arr: np.ndarray) -> None:
    """Refuse a conversion of ``value`` into ``arr`` that changed a value: to an integer or bool
    dtype it must be exact (``x + 0.5`` on an int32 tensor would add 0, ``np.int64(300)`` as int8
    would be 44, 2 as bool would be True); to a float dtype a finite value must stay finite
    (70000 as float16 would be inf). Rounding to the nearest float is a conversion, not a change."""
    try:
        raw = np.asarray(value)
        if raw.dtype.kind == "O":
            raw = raw.astype(np.float64)
    except (TypeError, ValueError, OverflowError):
        raw = None  # a Python int beyond float64: only a float target can take it, as inf
    if arr.dtype.kind in "iub":
        if raw is not None and raw.dtype.kind in "fciub" and not np.array_equal(arr, raw):
            raise does_not_fit(value, arr.dtype, arr)
    elif arr.dtype.kind == "f":
        finite = np.ones(arr.shape, bool) if raw is None else (
            np.isfinite(raw) if raw.dtype.kind in "fiub" else np.zeros(arr.shape, bool))
        if np.any(finite & np.isinf(arr)):
            raise does_not_fit(value, arr.dtype, arr)


def does_not_fit(value: Any, dt: np.dtype, became: Optional[np.ndarray] = None) -> DTypeError:
    """The error for a number (or list) that ``dt`` cannot hold: what it holds, and what the value would become."""
    exactly = " exactly"
    if dt.kind == "b":
        holds = "bool holds only False and True, 0 and 1"
    elif dt.kind in "iu":
        holds = f"{dt.name} holds the whole numbers {np.iinfo(dt).min} to {np.iinfo(dt).max}"
    else:
        holds, exactly = f"the largest finite {dt.name} is {np.finfo(dt).max}", ""
    then = "" if became is None else f"; it would become {became.tolist()!r:.40}"
    return DTypeError(f"{value!r:.60} does not fit {dt.name}{exactly} ({holds}){then}: give a value "
                      "the dtype holds, or cast explicitly")


def cast_hint(got: Any, want: Any) -> str:
    """The fix for a feed of the wrong dtype, for its message: ``np.random.rand`` gives float64,
    and a float32 placeholder takes only float32 (no silent casts)."""
    if getattr(want, "name", None) == "complex32":
        return ("; NumPy has no complex32: feed a complex64 placeholder and convert it in the graph with "
                "g.cast(x, mg.complex32)")
    try:
        got, want = np.dtype(getattr(got, "np_dtype", got)), np.dtype(getattr(want, "np_dtype", want))
    except TypeError:
        return ""
    if got == want or got.kind not in "fiub" or want.kind not in "fiub":
        return ""
    why = " (NumPy makes float64 by default; minigraph does not cast feeds silently)" if got == np.float64 else ""
    return f"; convert it with .astype(np.{want.name}){why}"


def coerce_feed(t: Any, v: Any) -> np.ndarray:
    """An ndarray for a feed value (``_coerce_feed``); an int4 / uint4 placeholder takes int8 / uint8
    values in its range."""
    arr = _coerce_feed(t, v)
    dt = t.dtype if isinstance(t, Tensor) else None
    if dt is not None and dt.name in FOUR_BIT and arr.dtype == dt.np_dtype:
        try:
            check_four_bit(arr, dt, f"feed for placeholder {t.name!r}")
        except DTypeError as e:
            raise FeedDTypeError(str(e)) from None
    return arr


def _coerce_feed(t: Any, v: Any) -> np.ndarray:
    """An ndarray for a feed value; lists and scalars take the placeholder's dtype.

    An ndarray or array-like keeps its own dtype (and must match the placeholder): no silent
    casts. One of non-native byte order is converted to native order (a copy: the same values,
    the feed intact). NumPy scalars keep their dtype too.
    """
    name = t.name if isinstance(t, Tensor) else repr(t)
    if v is None:  # np.asarray(None, float32) would be NaN
        raise FeedError(f"feed for {name}: got None; give an array or a number")
    if isinstance(v, np.generic):
        return np.asarray(v)
    if is_array(v):
        try:
            arr = plain_array(v, f"feed for {name!r}") if isinstance(v, np.ndarray) else as_ndarray(v)
        except DTypeError as e:
            raise FeedError(e.args[0] if isinstance(v, np.ndarray) else f"feed for {name!r}: {e}") from None
        if not arr.dtype.isnative and arr.dtype.newbyteorder("=") in KNOWN_DTYPES:
            return arr.astype(arr.dtype.newbyteorder("="))
        if arr.dtype not in KNOWN_DTYPES and not isinstance(v, np.ndarray):
            raise FeedError(f"feed for {name!r}: a {type(v).__name__} of dtype {arr.dtype} cannot be fed; "
                            "give numbers or a numeric array")
        return arr
    dtype = t.dtype.np_dtype if isinstance(t, Tensor) else None
    try:
        non_numbers(v)  # [None, 1.0] would become [nan, 1.0]
        with np.errstate(all="ignore"):
            arr = np.asarray(v, dtype=dtype)
    except DTypeError as e:
        raise FeedError(f"feed for {name!r}: {e}") from None
    except (TypeError, ValueError, OverflowError) as e:
        raise FeedError(f"feed for {name!r}: cannot be turned into an array of "
                        f"{t.dtype.name if isinstance(t, Tensor) else 'numbers'}: {e}") from None
    if dtype is not None:
        try:
            inexact_conversion(v, arr)  # [1.5] fed to an int32 placeholder is a mistake, not [1]
        except DTypeError as e:
            raise FeedError(f"feed for {name!r}: {e}") from None
    return arr
