"""Emulated devices: loop files with a filesystem, mounted under iolab's own directory, with
IOPS and bandwidth limits through the block I/O cgroup controller. See docs/testbed.md.

What the rest of iolab calls:

- :func:`parse_devices` (the ``[devices]`` table of a testbed or experiment file),
  :func:`load_file`;
- :func:`up`, :func:`down`, :func:`status` (-> :class:`DeviceStatus`);
- :func:`resolve_path` for ``device:NAME[/sub]`` paths given by the user;
- :func:`throttle_for` / :func:`throttled` around a run;
- :func:`device_of`, :func:`device_on`, :func:`block_names` to name devices in records;
- :func:`error_marks`, :func:`errors_note`: which model devices failed requests during a run.
"""

from iolab.testbed.lifecycle import (
    DeviceStatus,
    Testbed,
    check_space,
    down,
    status,
    unavailable_reason,
    up,
)
from iolab.testbed.paths import (
    PREFIX,
    block_names,
    device_of,
    device_on,
    error_marks,
    errors_note,
    resolve_path,
)
from iolab.testbed.spec import DeviceSpec, Limits, load_file, parse_devices
from iolab.testbed.state import state_dir
from iolab.testbed.throttle import throttle_for, throttled

__all__ = [
    "PREFIX",
    "DeviceSpec",
    "DeviceStatus",
    "Limits",
    "Testbed",
    "block_names",
    "check_space",
    "device_of",
    "device_on",
    "down",
    "error_marks",
    "errors_note",
    "load_file",
    "parse_devices",
    "resolve_path",
    "state_dir",
    "status",
    "throttle_for",
    "throttled",
    "unavailable_reason",
    "up",
]
