"""Bringing emulated devices up and down, and saying what is up.

``up`` makes, for each device: a preallocated file ``.iolab-testbed-NAME-XXXXXXXX.img`` in its
backing directory, a loop device on it (direct I/O), a filesystem, a mount on
``STATE_DIR/mnt/NAME``, and its limits in the testbed's cgroup. Each step is written to the state
file before it is taken, so ``down`` finds everything, also after a crash.

``down`` trusts the state file for where to look, never for what to remove: it removes only what
carries iolab's mark. A backing file is deleted (and a loop device on it detached) only when it
has iolab's name for the device's loop file, in the device's backing_dir, with the recorded inode
and the non-empty random token of its ``user.iolab.testbed`` attribute; a mount is unmounted and
its mount point removed only at iolab's own ``STATE_DIR/mnt/NAME`` and when it is the mount of
such a loop device; a cgroup is removed only under the testbed's own name at the top of the
machine's block I/O hierarchy. Anything else the state names is left in place and named in a
warning, and the record is forgotten.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iolab.errors import BadInput, IolabError, MissingTool, RunFailed, Unavailable
from iolab.events import EventSink, Phase, Warning, discard
from iolab.ownership import boot_id, can_write
from iolab.process import require
from iolab.testbed import cgroups, filesystems, loops, models, nbd
from iolab.testbed.spec import DeviceSpec, Limits
from iolab.testbed.state import (
    MOUNTS,
    CgroupRecord,
    DeviceRecord,
    State,
    ensure_mounts,
    is_default_dir,
    load,
    locked,
    remove_dirs,
    save,
    state_dir,
)
from iolab.units import format_bytes

WHAT = "the testbed"
DETACH_WAIT = 10.0  # seconds to wait for a detached loop device that is still open to go
GROUP = "iolab-testbed"
NO_MARK = (
    f"its filesystem takes no extended attributes, and iolab marks its loop files with one "
    f"({loops.MARK}) so that `iolab testbed down` never removes a file it did not make; choose "
    "a directory on ext4, xfs or btrfs"
)


@dataclass(frozen=True)
class DeviceStatus:
    """One device of the testbed as it is now.

    ``problem`` is None for a device that is up (loop attached to iolab's file, mounted); else it
    says what is wrong (``iolab testbed down`` cleans such a device, ``up`` remakes it).
    ``limits`` are what the kernel holds for the device in the testbed's cgroup.
    """

    name: str
    mount_point: Path
    loop: str | None
    dev: tuple[int, int] | None
    backing_file: Path
    size: int
    filesystem: str
    mount_options: tuple[str, ...]
    direct_io: bool | None
    rotational: bool | None
    limits: Limits
    spec: DeviceSpec
    problem: str | None = None
    fault_switch: Path | None = None  # a device with a fault: the file whose presence fails I/O

    @property
    def model(self) -> str | None:
        """The device model in a line (``hdd 7200 rpm ...``), None for a plain loop device."""
        params = self.spec.model_params
        return None if params is None else models.describe(params)

    @property
    def fault(self) -> str | None:
        """The device's fault in a line, and whether it fails requests now; None for none."""
        fault = self.spec.fault_params
        if fault is None or self.fault_switch is None:
            return None
        return _fault_line({**fault, "on": self.fault_switch.exists()}, self.fault_switch)

    @property
    def up(self) -> bool:
        return self.problem is None

    @property
    def majmin(self) -> str | None:
        return f"{self.dev[0]}:{self.dev[1]}" if self.dev else None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": "up" if self.up else "broken",
            "problem": self.problem,
            "mount_point": str(self.mount_point),
            "loop": self.loop,
            "maj_min": self.majmin,
            "backing_file": str(self.backing_file),
            "size_bytes": self.size,
            "filesystem": self.filesystem,
            "mount_options": list(self.mount_options),
            "direct_io": self.direct_io,
            "rotational": self.rotational,
            "limits": self.limits.as_json(),
            "limits_text": self.limits.describe(),
            "model": self.spec.model_params,
            "model_text": self.model,
            "fault": self.spec.fault_params,
            "fault_failing_now": self.fault_switch.exists() if self.fault_switch else None,
            "fault_text": self.fault,
        }


@dataclass(frozen=True)
class Testbed:
    """The devices that are up after ``up``, and the cgroup holding their limits."""

    devices: tuple[DeviceStatus, ...]
    cgroup: Path | None
    state_dir: Path

    def mount_point(self, name: str) -> Path:
        for d in self.devices:
            if d.name == name:
                return d.mount_point
        raise KeyError(name)


def group_name(directory: Path) -> str:
    """``iolab-testbed`` for iolab's own state directory; a suffix per other directory, so that
    a test's testbed never shares a cgroup with the machine's."""
    if is_default_dir():
        return GROUP
    return f"{GROUP}-{hashlib.sha256(str(directory).encode()).hexdigest()[:8]}"


def check_supported(specs: Sequence[DeviceSpec]) -> None:
    """Refuse, before anything is made, what this machine cannot do."""
    if os.geteuid() != 0:
        raise Unavailable(
            WHAT, "it needs root (loop devices, mkfs and mount are privileged); run iolab as root"
        )
    if not Path("/dev/loop-control").exists():
        raise Unavailable(
            WHAT,
            "the kernel offers no loop devices (/dev/loop-control is missing); load the loop "
            "module with `modprobe loop` (a container needs the host's /dev/loop-control)",
        )
    require("losetup", loops.HOW)
    for spec in specs:
        filesystems.check_tools(spec)
    if any(s.model is not None for s in specs):
        nbd.check_supported()
    if any(s.limits.any for s in specs):
        cgroups.require_hierarchy()


def unavailable_reason(limits: bool = True) -> str | None:
    """Why the testbed cannot run here (with limits, if ``limits``), or None when it can."""
    probe = DeviceSpec("probe", 64 * 1024 * 1024, write_iops=1 if limits else None)
    try:
        check_supported([probe])
    except (Unavailable, MissingTool) as exc:
        return str(exc)
    return None


def _check_space(specs: Sequence[DeviceSpec], state: State) -> None:
    """Each backing directory must exist, take files, and hold the new devices' files."""
    need: dict[int, int] = {}
    for spec in specs:
        at = f"devices.{spec.name}.backing_dir"
        d = spec.backing_dir
        if not d.is_dir():
            raise BadInput(at, str(d), "give an existing directory for the loop file")
        reason = can_write(d)
        if reason is not None:
            raise BadInput(at, str(d), f"give a directory you can write to ({reason})")
        if not loops.takes_mark(d):
            raise BadInput(at, str(d), NO_MARK)
        if spec.name in state.devices:
            continue
        dev = os.stat(d).st_dev
        need[dev] = need.get(dev, 0) + spec.size
        st = os.statvfs(d)
        free = st.f_bavail * st.f_frsize
        if need[dev] > free:
            raise BadInput(
                f"devices.{spec.name}.size",
                format_bytes(spec.size),
                f"{d} has {format_bytes(free)} free for the loop files of this testbed "
                f"({format_bytes(need[dev])} asked); choose smaller devices or another backing_dir",
            )


_BACKING_NAME = re.compile(r"^\.iolab-testbed-(?P<name>.+)-[0-9a-f]{8}\.img$")


def _unmarked(rec: DeviceRecord) -> str | None:
    """Why the record does not name a loop file of iolab's (None: it does), from the record
    alone: iolab's name for the device's file, in its backing_dir, and a token (recorded
    before the file was made; the inode follows right after it was made)."""
    path = rec.backing_file
    m = _BACKING_NAME.match(path.name)
    if m is None or m.group("name") != rec.spec.name:
        return f"its name is not the one iolab gives device {rec.spec.name}'s loop file"
    if path.parent != rec.spec.backing_dir.resolve():
        return f"it is not in the device's backing_dir {rec.spec.backing_dir}"
    if not rec.token:
        return "the state records no mark of iolab's for it"
    return None


def _foreign_mount_point(rec: DeviceRecord, directory: Path) -> str | None:
    """Why the record's mount point is not iolab's own (None: it is ``mnt/NAME``)."""
    own = directory / MOUNTS / rec.spec.name
    if rec.mount_point != own:
        return f"it is not iolab's mount point for device {rec.spec.name} ({own})"
    return None


def _foreign_group(group: CgroupRecord, directory: Path) -> str | None:
    """Why the recorded cgroup is not the testbed's own (None: it is)."""
    hierarchy = cgroups.find_hierarchy()
    if hierarchy is None or hierarchy.version != group.version:
        return f"it is not in the machine's {group.version} block I/O cgroup hierarchy"
    own = cgroups.group_path(hierarchy, group_name(directory))
    if group.path != own:
        return f"it is not the testbed's cgroup ({own})"
    return None


def check_space(specs: Sequence[DeviceSpec]) -> None:
    """What :func:`up` refuses of the backing directories, without making anything (for
    ``iolab plan``): each must exist, take files and have room for the devices not up yet."""
    _check_space(specs, load())


def _loop_devs(
    rec: DeviceRecord, directory: Path, attached: list[loops.Loop] | None = None
) -> list[loops.Loop]:
    """The loop devices on the record's file, if the record names a file of iolab's (for a
    model device: on the FUSE file of the device in iolab's state directory)."""
    if rec.spec.model is not None:
        disk = str(nbd.fuse_file(directory, rec.spec.name))
        return [lp for lp in (loops.attached() if attached is None else attached)
                if lp.backing_file == disk]  # fmt: skip
    if _unmarked(rec) is not None:
        return []
    return loops.backed_by(rec.backing_file, rec.backing_id, rec.token, attached)


def _problem(rec: DeviceRecord, attached: list[loops.Loop], directory: Path) -> str | None:
    if not rec.mounted:
        return "half made (the iolab that made it stopped before it was mounted)"
    if rec.spec.model is not None:
        stack = nbd.problem(directory, rec.spec.name)
        if stack is not None:
            return stack
    if not attached:
        return "its loop device is gone (the machine rebooted?)"
    mount = filesystems.mounted_at(rec.mount_point)
    if mount is None or mount.dev not in {lp.dev for lp in attached}:
        return f"not mounted on {rec.mount_point}"
    return None


def _device_status(
    rec: DeviceRecord, group: CgroupRecord | None, every: list[loops.Loop], directory: Path
) -> DeviceStatus:
    attached = _loop_devs(rec, directory, every)
    problem = _problem(rec, attached, directory)
    dev = attached[0].dev if attached else rec.dev
    limits = Limits()
    if group is not None and dev is not None and group.path.is_dir():
        limits = cgroups.limits_of(group, dev)
    return DeviceStatus(
        name=rec.spec.name,
        mount_point=rec.mount_point,
        loop=attached[0].path if attached else rec.loop,
        dev=dev,
        backing_file=rec.backing_file,
        size=rec.spec.size,
        filesystem=rec.spec.filesystem,
        mount_options=rec.spec.mount_options,
        direct_io=attached[0].direct_io if attached else rec.direct_io,
        rotational=loops.rotational(attached[0].name) if attached else None,
        limits=limits,
        spec=rec.spec,
        problem=problem,
        fault_switch=nbd.fault_file(directory, rec.spec.name) if rec.spec.fault else None,
    )


def status(directory: Path | None = None) -> list[DeviceStatus]:
    """Every device the state file names, as it is now (up, or broken with the reason)."""
    directory = directory or state_dir()
    st = load(directory)
    if not st.devices:
        return []
    every = loops.attached()
    return [_device_status(rec, st.cgroup, every, directory) for rec in st.devices.values()]


def _ensure_group(state: State, directory: Path) -> State:
    """The testbed's cgroup, recorded before it is made."""
    hierarchy = cgroups.require_hierarchy()
    if state.cgroup is not None:
        foreign = _foreign_group(state.cgroup, directory)
        if foreign is not None:
            raise RunFailed(
                f"the testbed's state names the cgroup {state.cgroup.path}, but {foreign}; "
                "run `iolab testbed down` first"
            )
    if state.cgroup is None:
        path = cgroups.group_path(hierarchy, group_name(directory))
        if path.exists():
            raise RunFailed(
                f"the cgroup {path} exists but the testbed's state does not record it; if it "
                f"is a leftover of iolab, remove it with `rmdir {path}`"
            )
        state = replace(state, cgroup=CgroupRecord(hierarchy.version, path))
        save(directory, state)
    assert state.cgroup is not None
    cgroups.make(hierarchy, state.cgroup.path)
    return state


def _apply_limits(state: State, directory: Path, rec: DeviceRecord) -> State:
    limits = rec.spec.limits
    assert rec.dev is not None
    if limits.any:
        state = _ensure_group(state, directory)
    group = state.cgroup
    if (
        group is not None
        and _foreign_group(group, directory) is None
        and (limits.any or group.path.is_dir())
    ):
        cgroups.set_limits(group, rec.dev, limits)
    return state


def _allocate(
    path: Path,
    size: int,
    token: str,
    events: EventSink,
    created: Callable[[tuple[int, int]], None],
) -> None:
    """Create the backing file (it must not exist), mark it with ``token`` (recorded before),
    tell ``created`` its (st_dev, st_ino), then preallocate it (the slow part)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        st = os.fstat(fd)
        if not loops.mark(fd, token):
            if os.stat(path).st_ino == st.st_ino:
                path.unlink()  # created empty a moment ago, under a fresh random name
            raise BadInput("backing_dir", str(path.parent), NO_MARK)
        created((st.st_dev, st.st_ino))
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise RunFailed(f"no space for {format_bytes(size)} in {path.parent}") from None
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            os.ftruncate(fd, size)
            events(
                Warning(
                    f"{path.parent} cannot preallocate; the loop file is sparse and allocates "
                    "while the device is written, which slows first writes"
                )
            )
    finally:
        os.close(fd)


def _bring_up(spec: DeviceSpec, state: State, directory: Path, events: EventSink) -> State:
    name = spec.name
    rec = DeviceRecord(
        spec=spec,
        backing_file=spec.backing_dir.resolve()
        / f".iolab-testbed-{name}-{secrets.token_hex(4)}.img",
        mount_point=directory / MOUNTS / name,
        token=secrets.token_hex(8),  # the file's mark, recorded before the file exists
        created_by=os.getpid(),
        boot_id=boot_id(),
    )
    state = state.with_device(rec)
    save(directory, state)  # intent first: a crash from here on leaves a record of what was made

    def created(backing_id: tuple[int, int]) -> None:
        nonlocal rec, state
        rec = replace(rec, backing_id=backing_id)
        state = state.with_device(rec)
        save(directory, state)

    try:
        events(Phase(f"{name}: allocating {format_bytes(spec.size)} in {rec.backing_file}"))
        # the id is recorded right after creation, before the slow part
        _allocate(rec.backing_file, spec.size, rec.token, events, created)
        target = rec.backing_file
        params = spec.model_params
        if params is not None:
            events(Phase(f"{name}: serving it through nbdkit as {models.describe(params)}"))
            target = nbd.start(directory, name, rec.backing_file, params, spec.fault_params)
        events(Phase(f"{name}: attaching a loop device"))
        try:
            loop = loops.attach(target, spec.direct_io)
        except RunFailed as exc:
            if "denied" in str(exc) or "not permitted" in str(exc):
                raise Unavailable(WHAT, f"the kernel refused a loop device: {exc}") from None
            raise
        rec = replace(rec, loop=loop.path, dev=loop.dev, direct_io=loop.direct_io)
        state = state.with_device(rec)
        save(directory, state)
        if spec.effective_rotational is not None:
            loops.set_rotational(loop, spec.effective_rotational)
        if spec.direct_io and not loop.direct_io:
            events(
                Warning(
                    f"{name}: the loop device cannot use direct I/O on {spec.backing_dir} "
                    "(its filesystem refuses O_DIRECT); its data is cached twice"
                )
            )
        events(Phase(f"{name}: mkfs.{spec.filesystem} {loop.path}"))
        filesystems.make(spec, loop.path)
        rec = replace(rec, formatted=True)
        state = state.with_device(rec)
        save(directory, state)
        ensure_mounts(directory)
        rec.mount_point.mkdir(mode=0o755, exist_ok=True)
        if filesystems.mounted_at(rec.mount_point) is not None or any(rec.mount_point.iterdir()):
            raise RunFailed(f"{rec.mount_point} is in use; run `iolab testbed down` first")
        events(Phase(f"{name}: mounting on {rec.mount_point}"))
        filesystems.mount(spec, loop.path, rec.mount_point)
        rec = replace(rec, mounted=True)
        state = state.with_device(rec)
        save(directory, state)
        fault = spec.fault_params
        if fault is not None:
            switch = nbd.fault_file(directory, name)
            if fault["on"]:
                switch.touch(mode=0o600)
            events(Phase(f"{name}: {_fault_line(fault, switch)}"))
        return _apply_limits(state, directory, rec)
    except BaseException:
        try:
            state = _take_down(state.devices[name], state, directory, discard)
        except IolabError as cleanup:
            events(Warning(f"{name}: could not undo everything ({cleanup}); `iolab testbed down`"))
        save(directory, state)
        if state.empty:
            remove_dirs(directory)
        raise


def _fault_line(fault: dict[str, Any], switch: Path) -> str:
    what = {"any": "requests", "write": "writes", "read": "reads", "trim": "trims"}[fault["op"]]
    share = "all" if fault["rate"] >= 1 else f"{fault['rate']:.0%} of the"
    if fault["on"]:
        return f"fault on: {share} {what} fail with {fault['error']} (remove {switch} to stop it)"
    return f"fault armed: {share} {what} fail with {fault['error']} once {switch} exists"


def _take_down(rec: DeviceRecord, state: State, directory: Path, events: EventSink) -> State:
    """Remove what the record names and carries iolab's mark (see the module docstring), leave
    the rest in place with a warning; returns the state without the device. Raises (keeping
    the record) when something of iolab's cannot be removed."""
    name = rec.spec.name
    unmarked = _unmarked(rec)
    foreign_mount_point = _foreign_mount_point(rec, directory)
    attached = _loop_devs(rec, directory)
    devs = {lp.dev for lp in attached}
    if state.cgroup is not None and _foreign_group(state.cgroup, directory) is None:
        for dev in devs | ({rec.dev} if rec.dev else set()):
            cgroups.clear_limits(state.cgroup, dev)
    left: list[tuple[Path, str]] = []
    mount = None if foreign_mount_point else filesystems.mounted_at(rec.mount_point)
    if mount is not None:
        if mount.dev not in devs:
            raise RunFailed(
                f"{rec.mount_point} holds a mount iolab did not make ({mount.source}); "
                "leaving it and the device alone"
            )
        events(Phase(f"{name}: unmounting {rec.mount_point}"))
        try:
            filesystems.unmount(rec.mount_point)
        except RunFailed as exc:
            raise RunFailed(
                f"cannot unmount {rec.mount_point} ({exc}); a process may still use it "
                f"(`fuser -vm {rec.mount_point}`)"
            ) from None
    for lp in attached:
        events(Phase(f"{name}: detaching {lp.path}"))
        loops.detach(lp)
    if attached and not loops.gone(attached, DETACH_WAIT):
        # the kernel detaches a loop device still open (by a mkfs the crashed run started)
        # once it is closed
        events(Warning(f"{name}: a process still has the loop device open; it goes when closed"))
    if rec.spec.model is not None:
        events(Phase(f"{name}: stopping nbdfuse and nbdkit"))
        nbd.stop(directory, name)
    if os.path.lexists(rec.backing_file):
        why = unmarked
        if why is None and not loops.is_ours(rec.backing_file, rec.backing_id, rec.token):
            why = "it is not the file iolab made (another inode, or no iolab mark on it)"
        if why is None:
            rec.backing_file.unlink()
        else:
            left.append((rec.backing_file, why))
    if foreign_mount_point is not None:
        if os.path.lexists(rec.mount_point):
            left.append((rec.mount_point, foreign_mount_point))
    else:
        try:
            rec.mount_point.rmdir()  # empty once unmounted; rmdir never removes content
        except FileNotFoundError:
            pass
        except OSError as exc:
            events(Warning(f"cannot remove {rec.mount_point}: {exc.strerror}"))
    for path, why in left:
        events(Warning(f"{name}: left {path} in place: {why}"))
    return state.without_device(name)


def up(specs: Sequence[DeviceSpec], events: EventSink = discard) -> Testbed:
    """Bring the devices up; those already up with the same spec are kept as they are (new
    limits are applied in place). Devices not named are left alone."""
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise BadInput(f"devices.{dupes[0]}", dupes[0], "name each device once")
    check_supported(specs)
    directory = state_dir()
    with locked(directory):
        state = load(directory)
        _check_space(specs, state)
        for spec in specs:
            rec = state.devices.get(spec.name)
            if rec is not None:
                problem = _problem(rec, _loop_devs(rec, directory), directory)
                if problem is None and rec.spec.layout_key() == spec.layout_key():
                    if rec.spec.limits != spec.limits:
                        events(Phase(f"{spec.name}: limits now {spec.limits.describe()}"))
                        rec = replace(rec, spec=spec)
                        state = state.with_device(rec)
                        save(directory, state)
                        state = _apply_limits(state, directory, rec)
                    else:
                        events(Phase(f"{spec.name}: up already"))
                    continue
                if problem is None:
                    changed = sorted(
                        k for k, v in spec.layout_key().items() if rec.spec.layout_key()[k] != v
                    )
                    raise BadInput(
                        f"devices.{spec.name}",
                        spec.name,
                        f"it is up with another {', '.join(changed)}; take it down first "
                        f"(`iolab testbed down {spec.name}`)",
                    )
                events(Warning(f"{spec.name}: {problem}; removing it and making it afresh"))
                state = _take_down(rec, state, directory, events)
                save(directory, state)
            state = _bring_up(spec, state, directory, events)
    devices = tuple(d for d in status(directory) if d.name in names)
    return Testbed(devices, state.cgroup.path if state.cgroup else None, directory)


def down(events: EventSink = discard, names: Sequence[str] | None = None) -> list[str]:
    """Take down the named devices (all when None) and, after the last, the cgroup and the
    state; returns the names taken down. Works on what a crashed run left as well."""
    directory = state_dir()
    if not directory.is_dir():
        return []
    with locked(directory):
        state = load(directory)
        if state.empty:
            remove_dirs(directory)  # what a run killed before its first record left: mnt/
            return []
        wanted = list(state.devices) if names is None else list(names)
        for n in wanted:
            if n not in state.devices:
                known = ", ".join(state.devices) or "none"
                raise BadInput("NAME", n, f"devices of the testbed: {known}")
        group_ours = state.cgroup is not None and _foreign_group(state.cgroup, directory) is None
        if state.cgroup is not None and group_ours and len(wanted) == len(state.devices):
            busy = cgroups.members(state.cgroup)
            if busy:
                raise RunFailed(
                    f"processes {', '.join(map(str, busy))} run throttled in the testbed's "
                    f"cgroup {state.cgroup.path} (a run in progress?); let them finish first"
                )
        done = []
        for n in wanted:
            state = _take_down(state.devices[n], state, directory, events)
            save(directory, state)
            done.append(n)
        if not state.devices and state.cgroup is not None:
            if group_ours:
                events(Phase(f"removing the cgroup {state.cgroup.path}"))
                cgroups.remove(state.cgroup)
            else:
                events(
                    Warning(
                        f"left {state.cgroup.path} in place: "
                        f"{_foreign_group(state.cgroup, directory)}"
                    )
                )
            state = replace(state, cgroup=None)
            save(directory, state)
        if state.empty:
            remove_dirs(directory)
    return done
