"""Turning user values (numbers, lists, arrays) into arrays: constants, variables and feeds."""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import DTypeError, FeedError
from .ir import Tensor
from .types import as_dtype

KNOWN_DTYPES = {np.dtype(n) for n in ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                "uint8", "uint16", "uint32", "uint64", "bool")}


def frozen_array(value: Any, dtype: Any) -> np.ndarray:
    """A read-only native-order copy of ``value`` (the value of a constant or a variable).

    Python floats give float32 and ints int32, as in MPSGraph; None, strings and inexact
    conversions to integer dtypes are refused.
    """
    npd = None if dtype is None else as_dtype(dtype).np_dtype  # an unknown dtype keeps its own error
    if npd is not None:
        non_numbers(value)  # np.array(None, float32) is NaN and np.array("2", float32) is 2.0: refuse
    try:
        arr = np.array(value, dtype=npd, copy=True)
    except (TypeError, ValueError, OverflowError) as e:  # OverflowError: 300 as int8
        raise DTypeError(f"cannot make an array of {dtype!r} from {type(value).__name__} {value!r:.80}: {e}") from None
    if dtype is None:
        if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)  # Python floats default to float32, as in MPSGraph
        elif arr.dtype == np.int64 and not isinstance(value, (np.ndarray, np.generic)):
            arr = arr.astype(np.int32)
    as_dtype(arr.dtype)  # rejects object/str/complex arrays with a clear error
    if dtype is not None and not isinstance(value, np.ndarray):
        inexact_conversion(value, arr)
    if not arr.dtype.isnative:  # keep values in native byte order, so results are too
        arr = arr.astype(arr.dtype.newbyteorder("="))
    arr.setflags(write=False)
    return arr


def non_numbers(value: Any) -> None:
    """Refuse Python values holding None, strings or other non-numbers before a dtype'd conversion
    (NumPy would turn None into NaN and "2" into 2.0 silently). NumPy arrays are left alone."""
    if isinstance(value, (np.ndarray, np.generic)):
        return
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        return  # ragged and the like: the conversion itself reports it
    if raw.dtype.kind in "USV" or (raw.dtype.kind == "O" and not all(
            isinstance(e, (int, float, bool, np.number, np.bool_)) for e in raw.ravel())):
        raise DTypeError(f"{type(value).__name__} {value!r:.60} holds non-numbers (None, strings or "
                         f"objects); give numbers or a numeric array")


def inexact_conversion(value: Any, arr: np.ndarray) -> None:
    """Python numbers and lists must convert exactly to an integer or bool dtype: ``x + 0.5`` on an
    int32 tensor would otherwise add 0 (NumPy arrays are explicit casts and are left alone)."""
    if arr.dtype.kind not in "iub":
        return
    raw = np.asarray(value)
    if raw.dtype.kind in "fc" and not np.array_equal(arr, raw):
        raise DTypeError(f"{value!r:.60} is not exactly a {arr.dtype.name} value (it would become "
                         f"{arr.tolist()!r:.40}); use a whole number, or cast a float tensor explicitly")


def coerce_feed(t: Any, v: Any) -> np.ndarray:
    """An ndarray for a feed value; lists and scalars take the placeholder's dtype.

    An ndarray keeps its own dtype (and must match the placeholder): no silent casts. One of
    non-native byte order is converted to native order (a copy: the same values, the feed intact).
    """
    if v is None:  # np.asarray(None, float32) would be NaN
        raise FeedError(f"feed for {t.name if isinstance(t, Tensor) else t!r}: got None; give an array or a number")
    if isinstance(v, np.ndarray):
        if not v.dtype.isnative and v.dtype.newbyteorder("=") in KNOWN_DTYPES:
            return v.astype(v.dtype.newbyteorder("="))
        return v
    if isinstance(v, np.generic):
        return np.asarray(v)
    dtype = t.dtype.np_dtype if isinstance(t, Tensor) else None
    name = t.name if isinstance(t, Tensor) else repr(t)
    try:
        non_numbers(v)  # [None, 1.0] would become [nan, 1.0]
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
