"""Putting a run under the testbed's limits.

The limits live in one cgroup (see :mod:`iolab.testbed.cgroups`). :func:`throttled` moves the
current iolab process into it for the duration of a run and back out at the end; every process
it starts meanwhile (database servers, fio) is born inside and stays there until it exits. The
single commands and the experiment runner enter it through :func:`throttle_for` whenever a path
of the run is on a testbed device with limits.

What the limits hold back depends on the kernel's interface. cgroup v1 (``blkio``) throttles the
I/O a process submits itself: direct I/O, reads, and the writeback that fsync/fdatasync/O_SYNC
start in the process's own context. Buffered writes that the kernel's flusher threads write back
later are not attributed to the cgroup and pass unthrottled. So under v1 a commit (write + fsync)
pays the emulated device's latency, fio with O_DIRECT (iolab disk's default) sees the limits
exactly, and a workload that leaves dirty pages for background writeback sees them only partly.
cgroup v2 with the ``io`` and ``memory`` controllers attributes writeback to the cgroup too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from iolab.errors import RunFailed
from iolab.events import EventSink, Phase, discard
from iolab.testbed import cgroups
from iolab.testbed.paths import device_of
from iolab.testbed.state import load


@contextmanager
def throttled(events: EventSink = discard) -> Iterator[None]:
    """Run the block inside the testbed's cgroup (a no-op when there is none, or when this
    process is inside already)."""
    group = load().cgroup
    if group is None:
        yield
        return
    hierarchy = cgroups.hierarchy_of(group)
    here = cgroups.current(hierarchy)
    if here == group.path:
        yield
        return
    if not group.path.is_dir():
        raise RunFailed(
            f"the testbed's cgroup {group.path} is gone (the machine rebooted?); run "
            "`iolab testbed up` again"
        )
    events(Phase(f"entering the testbed's I/O limits ({group.path})"))
    pid = os.getpid()
    cgroups.move(pid, group.path)
    try:
        yield
    finally:
        cgroups.move(pid, here)


def throttle_for(
    paths: Iterable[Path], events: EventSink = discard
) -> AbstractContextManager[None]:
    """:func:`throttled` if one of ``paths`` is on a testbed device with limits, else nothing."""
    for path in paths:
        device = device_of(path)
        if device is not None and device.limits.any:
            return throttled(events)
    return nullcontext()
