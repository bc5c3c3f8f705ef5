"""iolab's nbdkit plugin: a device model over a backing file (run by nbdkit's python plugin).

    nbdkit -U SOCKET python .../nbdkit_plugin.py file=BACKING params=PARAMS.json

``params`` is the JSON of a checked model table (:func:`iolab.testbed.models.check`). Each
request is charged by the model under one lock (the model's queues are shared), then read or
written on the backing file, then held until the time the model gave: the lock is not held
while sleeping, so requests overlap as nbdkit's parallel thread model lets them (queue depth
is real). Flushes cost what the model says and do not sync the backing file: it is scratch
space, and the emulated device's durability is the model's, not the machine's.

This file runs in nbdkit's interpreter (the system's python3), not in iolab's environment: it
imports only the standard library and the models module, loaded from the file beside it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import json
import os
import select
import sys
import threading
import time
from pathlib import Path
from typing import Any

import nbdkit  # type: ignore[import-not-found]  # provided by nbdkit's python plugin

API_VERSION = 2

_spec = importlib.util.spec_from_file_location(
    "iolab_device_models", Path(__file__).with_name("__init__.py")
)
assert _spec is not None
assert _spec.loader is not None
models = importlib.util.module_from_spec(_spec)
sys.modules["iolab_device_models"] = models
_spec.loader.exec_module(models)

_config: dict[str, str] = {}
_lock = threading.Lock()
_state: dict[str, Any] = {}  # "model": the device model, made in config_complete


def config(key: str, value: str) -> None:
    if key not in ("file", "params"):
        raise RuntimeError(f"unknown parameter {key}; give file=BACKING params=PARAMS.json")
    _config[key] = value


PR_SET_TIMERSLACK = 29


def _exact_sleeps() -> None:
    """Timer slack of 1 ns for this thread and the worker threads nbdkit starts from it (the
    kernel's default lets a sleep overrun by 50 us, a tenth of a fast SSD's latency)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(1), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def config_complete() -> None:
    if set(_config) != {"file", "params"}:
        raise RuntimeError("give file=BACKING params=PARAMS.json")
    _exact_sleeps()
    params = json.loads(Path(_config["params"]).read_text())
    _state["model"] = models.build(params, os.stat(_config["file"]).st_size)


def thread_model() -> int:
    return int(nbdkit.THREAD_MODEL_PARALLEL)


def open(readonly: bool) -> int:  # nbdkit's name for it
    return os.open(_config["file"], os.O_RDONLY if readonly else os.O_RDWR)


def close(h: int) -> None:
    os.close(h)


def get_size(h: int) -> int:
    return os.fstat(h).st_size


def can_multi_conn(h: int) -> bool:
    return True


def can_flush(h: int) -> bool:
    return True


def can_trim(h: int) -> bool:
    return True


def _charge(op: str, offset: int, length: int) -> float:
    with _lock:
        return float(_state["model"].submit(op, offset, length, time.monotonic()))


LATE_MAX = 0.0005  # the most a sleep is shortened by (what the scheduler was seen to add)
_late = [0.0]  # how late a sleep wakes (seconds): the late end of the last sleeps' lateness


def _hold(until: float) -> None:
    """Hold the request until ``until``, never less. A loaded machine wakes a sleeping thread
    tens of microseconds late, so the sleep asks to wake early by how late the last sleeps
    woke, and the rest of the time is waited on the CPU (letting the other threads have the
    GIL; yielding the CPU would wake as late as a sleep): the request ends on the model's time,
    not after it, and never before it. A request that finds no time left to sleep (the
    estimate is larger than what is left, as after a burst whose sleeps overran by the cap)
    lowers the estimate, so that the next sleeps measure again how late they wake."""
    target = until - _late[0]
    wait = target - time.monotonic()
    if wait > 0:
        time.sleep(wait)
        late = time.monotonic() - target
        # up fast, down slowly: the estimate follows the late end of how late sleeps wake
        # (about the 90th percentile), so that most sleeps wake before ``until`` and the
        # rest is waited exactly; a median one would let half the requests end late
        gain = 4 if late > _late[0] else 32
        _late[0] = min(LATE_MAX, max(0.0, _late[0] + (late - _late[0]) / gain))
    elif time.monotonic() < until:
        _late[0] -= _late[0] / 16
    while time.monotonic() < until:
        select.select([], [], [], 0)  # lets the other threads have the GIL, keeps the CPU


def pread(h: int, buf: bytearray, offset: int, flags: int) -> None:
    until = _charge("read", offset, len(buf))
    got = os.preadv(h, [buf], offset)
    if got < len(buf):
        buf[got:] = bytes(len(buf) - got)
    _hold(until)


def pwrite(h: int, buf: bytes, offset: int, flags: int) -> None:
    until = _charge("write", offset, len(buf))
    os.pwrite(h, buf, offset)
    if flags & nbdkit.FLAG_FUA:
        until = max(until, _charge("flush", 0, 0))
    _hold(until)


def flush(h: int, flags: int) -> None:
    _hold(_charge("flush", 0, 0))


def trim(h: int, count: int, offset: int, flags: int) -> None:
    _hold(_charge("trim", offset, count))


def zero(h: int, count: int, offset: int, flags: int) -> None:
    until = _charge("write", offset, count)
    chunk = bytes(min(count, 1 << 20))
    done = 0
    while done < count:
        done += os.pwrite(h, chunk[: count - done], offset + done)
    _hold(until)
