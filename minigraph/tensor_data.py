"""TensorData: a feed value held on a backend's device (MPSGraphTensorData).

A run uploads its feed arrays from the host every time; a ``TensorData`` is copied onto its
backend's device once and fed to any number of runs and executables, which read it there (on
webgpu: a device-to-device copy into the plan's feed buffer). No run writes it. A backend holds
it through its optional ``tensor_data(array, dtype)`` hook (the webgpu backend: one device
buffer); a backend without the hook holds a read-only host copy. A TensorData fed to a run of
another backend is read on the host (``numpy()``, once) and fed as that array.
"""
from __future__ import annotations

import threading
from typing import Any, Optional

import numpy as np

from .backends import get_backend
from .coerce import as_ndarray, cast_hint, frozen_array, is_array
from .errors import DTypeError, ExecutionError, FeedDTypeError, MiniGraphError
from .types import FOUR_BIT, DataType, as_dtype, check_four_bit


class TensorData:
    """A value held on a backend's device, fed to runs without an upload (MPSGraphTensorData).

    ``mg.TensorData(x, backend="webgpu")`` copies ``x`` onto the device once; ``exe.run``,
    ``g.run``, ``g.run_async`` and ``exe.profile`` take it wherever they take a feed array,
    checked against the placeholder as an array is. The value never changes: runs only read it.

    Args:
        value: An ndarray or anything ``np.asarray`` reads (an array keeps its dtype, as a feed
            does), or Python numbers and nested lists (they take ``dtype``: float32 for floats
            and int32 for ints by default, as ``g.constant``).
        backend: The backend whose device holds it, a name from ``mg.available_backends()``.
        dtype: The dtype to hold; an array must already have it (no silent casts), but for
            ``mg.int4`` / ``mg.uint4``, which an int8 / uint8 array holds in range.

    Raises:
        DTypeError: a value that cannot be held as given (a non-numeric array, a masked array
            with masked elements, an array of another ``dtype``, a number that does not fit).
        UnsupportedDTypeError: the backend's device cannot hold the dtype (webgpu: float64, int64).
        BackendUnavailableError: ``backend`` is unknown or does not work here.
    """

    def __init__(self, value: Any, backend: str = "numpy", *, dtype: Any = None):
        be = get_backend(backend)
        arr, dt = _host_value(value, dtype)
        hook = getattr(be, "tensor_data", None)
        if hook is None:
            held: Any = arr
        else:
            try:
                held = hook(arr, dt)
            except MiniGraphError:
                raise
            except Exception as e:  # a backend's failure still names what was asked
                raise ExecutionError(f"TensorData: backend {backend!r} could not hold {dt.name}{list(arr.shape)}: "
                                     f"{type(e).__name__}: {e}") from e
        self._backend = be
        self._backend_name = backend
        self._held = held
        self._shape = tuple(arr.shape)
        self._dtype = dt
        self._nbytes = int(arr.nbytes)
        self._host: Optional[np.ndarray] = arr if hook is None else None
        self._lock = threading.Lock()
        # whether an int8 / uint8 value also fits int4 / uint4 (a 4-bit placeholder takes it then)
        self._fits = {name: bool(np.all((arr >= lo) & (arr <= hi))) for name, (lo, hi) in FOUR_BIT.items()
                      if arr.dtype == as_dtype(name).np_dtype}

    @property
    def shape(self) -> tuple:
        """The value's shape."""
        return self._shape

    @property
    def dtype(self) -> DataType:
        """The value's minigraph dtype (MPSGraphTensorData's ``dataType``)."""
        return self._dtype

    @property
    def backend(self) -> str:
        """The name of the backend whose device holds the value."""
        return self._backend_name

    @property
    def nbytes(self) -> int:
        """The value's bytes as a NumPy array holds them (elements times the item size)."""
        return self._nbytes

    def numpy(self) -> np.ndarray:
        """The value as a read-only host array: read back from the device the first time, then kept.

        Returns:
            A read-only ndarray of ``shape`` and ``dtype`` (int8 / uint8 for int4 / uint4).
        """
        with self._lock:
            host = self._host
            if host is None:
                host = np.asarray(self._held)
                if host.flags.writeable:  # a hook's array may be memory the backend writes: a copy of our own
                    host = host.copy()
                    host.setflags(write=False)
                self._host = host
            return host

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def feed_value(self, backend: Any) -> Any:
        """What a run on ``backend`` (a backend object) is fed: the held value for its own backend,
        the host array for any other.

        Args:
            backend: The backend object of the executable that runs.
        """
        return self._held if backend is self._backend else self.numpy()

    def checked_for(self, t: Any) -> "TensorData":
        """Itself, if its values fit placeholder ``t``'s 4-bit dtype where it has one (as an array's
        are checked); its shape and dtype are checked with the plan's.

        Args:
            t: The placeholder tensor it is fed to.

        Raises:
            FeedDTypeError: an int8 / uint8 value outside the range of ``t``'s int4 / uint4.
        """
        want = t.dtype
        if want.name in FOUR_BIT and self._dtype.name not in FOUR_BIT and self._dtype.np_dtype == want.np_dtype \
                and not self._fits[want.name]:
            lo, hi = FOUR_BIT[want.name]
            raise FeedDTypeError(f"feed for placeholder {t.name!r}: a TensorData {self._dtype.name}{list(self._shape)} "
                                 f"with values outside {lo}..{hi}, which {want.name} holds")
        return self

    def __repr__(self) -> str:
        return f"<TensorData {self._dtype.name}{list(self._shape)} on {self._backend_name!r}>"


def _host_value(value: Any, dtype: Any) -> tuple:
    """(a read-only native-order copy of ``value``, its minigraph dtype), checked."""
    if isinstance(value, TensorData):
        value = value.numpy()
    want = None if dtype is None else as_dtype(dtype)
    try:
        if want is not None and (is_array(value) or isinstance(value, np.generic)):
            got = (np.asarray(value) if isinstance(value, np.generic) else as_ndarray(value)).dtype
            if got != want.np_dtype:
                raise DTypeError(f"an array of {got} for dtype {want.name}{cast_hint(got, want)}")
        arr = frozen_array(value, None if want is None else want.np_dtype)
        dt = want if want is not None else as_dtype(arr.dtype)
        if dt.name in FOUR_BIT:
            check_four_bit(arr, dt, "the value")
    except DTypeError as e:
        raise type(e)(f"TensorData: {e}") from None
    return arr, dt
