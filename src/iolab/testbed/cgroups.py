"""The block I/O cgroup that holds the testbed's limits.

Two kernels' interfaces: cgroup v1's ``blkio`` controller (``blkio.throttle.read_iops_device``
and friends, one file per limit) and cgroup v2's ``io`` controller (one ``io.max`` line per
device). iolab uses whichever hierarchy has the controller (on a hybrid machine, the v1 ``blkio``
hierarchy). One cgroup holds every device's limits; a process inside it is throttled on each
device, a process outside it is not.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import RunFailed, Unavailable
from iolab.testbed.spec import Limits
from iolab.testbed.state import CgroupRecord

V1_FILES = {
    "read_iops": "blkio.throttle.read_iops_device",
    "write_iops": "blkio.throttle.write_iops_device",
    "read_bps": "blkio.throttle.read_bps_device",
    "write_bps": "blkio.throttle.write_bps_device",
}
V2_KEYS = {"read_iops": "riops", "write_iops": "wiops", "read_bps": "rbps", "write_bps": "wbps"}
WHAT = "throttling (the blkio or io cgroup controller)"


@dataclass(frozen=True)
class Hierarchy:
    """A mounted cgroup hierarchy with a block I/O controller.

    ``mount_point`` is where it is mounted, ``root`` which of its cgroups is mounted there
    (``/`` on a host; a container may see a sub-tree).
    """

    version: str  # v1 | v2
    mount_point: Path
    root: str


def _cgroup_mounts(text: str) -> list[tuple[str, Path, str, str]]:
    """(fstype, mount point, root, super options) of every cgroup mount in a mountinfo text."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if not sep or len(fields) < 5 or len(rest) < 3 or not rest[0].startswith("cgroup"):
            continue
        out.append((rest[0], Path(fields[4]), fields[3], rest[2]))
    return out


def find_hierarchy(mountinfo: str | None = None) -> Hierarchy | None:
    """The hierarchy to put limits in, or None when the machine has no block I/O controller."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    for fstype, point, root, opts in _cgroup_mounts(mountinfo):
        if fstype == "cgroup" and "blkio" in opts.split(","):
            return Hierarchy("v1", point, root)
    for fstype, point, root, _opts in _cgroup_mounts(mountinfo):
        if fstype == "cgroup2":
            try:
                controllers = (point / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if "io" in controllers:
                return Hierarchy("v2", point, root)
    return None


def require_hierarchy() -> Hierarchy:
    found = find_hierarchy()
    if found is None:
        raise Unavailable(
            WHAT,
            "no cgroup hierarchy has the blkio (v1) or io (v2) controller; limits need one "
            "(a container may hide it: run on the host, or leave the limits out)",
        )
    return found


def group_path(hierarchy: Hierarchy, name: str) -> Path:
    return hierarchy.mount_point / name


def make(hierarchy: Hierarchy, path: Path) -> None:
    """Create the cgroup directory ``path`` at the top of the hierarchy (v2: enable io first)."""
    if hierarchy.version == "v2":
        control = hierarchy.mount_point / "cgroup.subtree_control"
        try:
            if "io" not in control.read_text().split():
                control.write_text("+io")
        except OSError as exc:
            raise Unavailable(
                WHAT, f"cannot enable the io controller in {control}: {exc.strerror}"
            ) from None
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        raise Unavailable(WHAT, f"cannot create the cgroup {path}: {exc.strerror}") from None


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text + "\n")
    except OSError as exc:
        raise RunFailed(f"the kernel refused {text!r} in {path}: {exc.strerror}") from None


def set_limits(group: CgroupRecord, dev: tuple[int, int], limits: Limits) -> None:
    """Put this device's limits into the group (a None limit removes that throttle)."""
    values = limits.as_json()
    majmin = f"{dev[0]}:{dev[1]}"
    if group.version == "v1":
        for key, file in V1_FILES.items():
            value = values[key]
            current = _read_limits_v1(group.path / file).get(majmin)
            if value is None and current is None:
                continue  # writing 0 for a device without a limit is an error on some kernels
            _write(group.path / file, f"{majmin} {value or 0}")
    else:
        words = [f"{V2_KEYS[k]}={'max' if v is None else v}" for k, v in values.items()]
        _write(group.path / "io.max", f"{majmin} {' '.join(words)}")


def clear_limits(group: CgroupRecord, dev: tuple[int, int]) -> None:
    if group.path.is_dir():
        set_limits(group, dev, Limits())


def _read_limits_v1(path: Path) -> dict[str, int]:
    out = {}
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                out[key] = int(value)
    except OSError:
        pass
    return out


def limits_of(group: CgroupRecord, dev: tuple[int, int]) -> Limits:
    """The limits the kernel holds for ``dev`` in the group: what is in force."""
    majmin = f"{dev[0]}:{dev[1]}"
    got: dict[str, int | None] = dict.fromkeys(V1_FILES)
    if group.version == "v1":
        for key, file in V1_FILES.items():
            got[key] = _read_limits_v1(group.path / file).get(majmin)
    else:
        try:
            lines = (group.path / "io.max").read_text().splitlines()
        except OSError:
            lines = []
        for line in lines:
            words = line.split()
            if words and words[0] == majmin:
                pairs = dict(w.split("=", 1) for w in words[1:] if "=" in w)
                for key, v2 in V2_KEYS.items():
                    text = pairs.get(v2, "max")
                    got[key] = int(text) if text.isdigit() else None
    return Limits(got["read_iops"], got["write_iops"], got["read_bps"], got["write_bps"])


def members(group: CgroupRecord) -> list[int]:
    """The processes in the group now."""
    try:
        text = (group.path / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split() if p.isdigit()]


def remove(group: CgroupRecord) -> None:
    """Remove the (empty) group; it must hold no process."""
    try:
        group.path.rmdir()
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            pids = ", ".join(str(p) for p in members(group)) or "some"
            raise RunFailed(
                f"processes {pids} still run in the testbed's cgroup {group.path} (a run in "
                "progress?); let them finish or stop them, then run `iolab testbed down` again"
            ) from None
        raise RunFailed(f"cannot remove the cgroup {group.path}: {exc.strerror}") from None


def current(hierarchy: Hierarchy, pid: int | str = "self") -> Path:
    """The directory of the cgroup ``pid`` is in, in this hierarchy."""
    text = Path(f"/proc/{pid}/cgroup").read_text()
    wanted: str | None = None
    for line in text.splitlines():
        _id, controllers, path = line.split(":", 2)
        v1 = hierarchy.version == "v1" and "blkio" in controllers.split(",")
        v2 = hierarchy.version == "v2" and controllers == "" and _id == "0"
        if v1 or v2:
            wanted = path
    if wanted is None:
        return hierarchy.mount_point
    root = hierarchy.root.rstrip("/")
    if root and wanted.startswith(root + "/"):
        wanted = wanted[len(root) :]
    elif root and wanted == root:
        wanted = "/"
    return hierarchy.mount_point / wanted.lstrip("/")


def move(pid: int, group: Path) -> None:
    """Move process ``pid`` (with all its threads) into the cgroup directory ``group``."""
    try:
        (group / "cgroup.procs").write_text(f"{pid}\n")
    except OSError as exc:
        raise RunFailed(
            f"cannot move process {pid} into the cgroup {group}: {exc.strerror}"
        ) from None


def hierarchy_of(group: CgroupRecord) -> Hierarchy:
    """The hierarchy a recorded group belongs to (its parent directory is the mount point)."""
    found = require_hierarchy()
    if found.version != group.version or group.path.parent != found.mount_point:
        raise RunFailed(
            f"the testbed's cgroup {group.path} is not in the {found.version} hierarchy at "
            f"{found.mount_point} any more; run `iolab testbed down` and `up` again"
        )
    return found
