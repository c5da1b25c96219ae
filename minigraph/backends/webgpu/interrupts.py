"""Ctrl-C during a GPU run waits for the run's end.

A KeyboardInterrupt raised at an arbitrary point of a run can land inside wgpu-py between native
calls (a buffer half mapped, a submit half made) and wgpu-native then aborts the whole process. So
while a run talks to the device, a first SIGINT is only noted and raised as KeyboardInterrupt when
the run has finished; a second one raises at once (a run that hangs can still be stopped). Only
the main thread receives signals, so elsewhere nothing changes.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN or SIG_DFL: Python raises nothing on SIGINT anyway
        yield
        return
    noted: list = []

    def note(signum: int, frame: Any) -> None:
        if noted:
            raise KeyboardInterrupt
        noted.append(signum)

    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if noted:
        raise KeyboardInterrupt
