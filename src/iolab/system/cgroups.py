"""The cgroup that holds the engine under test to its caps (``--memory``, ``--cpus``).

Two kernels' interfaces behind one group: cgroup v1, one directory per hierarchy (``memory``:
``memory.limit_in_bytes``; ``cpu``: ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, and
``cpuacct`` where it is mounted apart, for the CPU time used), and cgroup v2, one directory
(``memory.max``, ``cpu.max``). A controller is taken from v1 where v1 has it (a hybrid machine
binds each controller to one hierarchy only).

**Per run, iolab's own.** A group is made for one run at the top of each hierarchy, named
``.iolab-cgroup-<pid>-<boot>-<token>`` (:mod:`iolab.ownership`), and removed after the run.
While it exists it is the *active* group: every server iolab starts meanwhile joins it before it
runs its first instruction (the launcher writes itself into ``cgroup.procs``, see
:mod:`iolab.system.launch`), so the postmaster's backends and mariadbd's threads are born inside.
iolab killed (SIGKILL) leaves the group behind, empty once its servers died with it (they are
tied to iolab by a parent-death signal): the next run removes every such group whose process is
gone and that is its own user's (:func:`reap`), before it makes its own.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import RunFailed
from iolab.ownership import is_orphan, made_by, orphans, owned_name

KIND = "cgroup"  # the ownership kind of the groups' names
CPU_PERIOD_US = 100_000  # the quota's period: the kernel's default, 100 ms
# the least quota the kernel takes (v1 cpu.cfs_quota_us, v2 cpu.max: 1 ms per period), so the
# fewest CPUs a cap holds: 0.01 in a 100 ms period (less is refused, not raised to it)
MIN_QUOTA_US = 1000
MIN_CPUS = MIN_QUOTA_US / CPU_PERIOD_US
# the CPU weight of one busy process outside any group (v1 cpu.shares; v2 cpu.weight), the
# most the kernel takes
SHARES_ONE, SHARES_MAX = 1024, 262_144
WEIGHT_ONE, WEIGHT_MAX = 100, 10_000


@dataclass(frozen=True)
class Hierarchy:
    """A mounted hierarchy with a controller: ``version`` v1 or v2, where it is mounted."""

    version: str
    mount_point: Path
    controllers: tuple[str, ...] = ()  # v1: the controllers mounted together there


def _cgroup_mounts(text: str) -> list[tuple[str, Path, str]]:
    """(fstype, mount point, super options) of every cgroup mount in a mountinfo text."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if not sep or len(fields) < 5 or len(rest) < 3 or not rest[0].startswith("cgroup"):
            continue
        out.append((rest[0], Path(fields[4]), rest[2]))
    return out


def find(controller: str, mountinfo: str | None = None) -> Hierarchy | None:
    """The hierarchy that has ``controller`` (memory, cpu, cpuacct), or None."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    mounts = _cgroup_mounts(mountinfo)
    for fstype, point, opts in mounts:
        if fstype == "cgroup" and controller in opts.split(","):
            return Hierarchy("v1", point, tuple(opts.split(",")))
    if controller == "cpuacct":
        return None  # v2 counts CPU time in cpu.stat
    for fstype, point, _opts in mounts:
        if fstype == "cgroup2":
            try:
                controllers = (point / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if controller in controllers:
                return Hierarchy("v2", point)
    return None


def missing(memory: bool, cpus: bool) -> str | None:
    """Why caps cannot be held on this machine (a controller missing, not root), or None."""
    wanted = [c for c, on in (("memory", memory), ("cpu", cpus)) if on]
    for controller in wanted:
        if find(controller) is None:
            return (
                f"this machine has no {controller} cgroup controller (neither cgroup v1 nor v2 "
                "offers it; a container may hide it); leave the cap out"
            )
    if wanted and os.geteuid() != 0:
        return "capped runs need root (iolab makes a cgroup of its own for the run)"
    return None


@dataclass(frozen=True)
class Group:
    """One run's cgroup: its directory in each hierarchy it spans."""

    memory: Path | None  # where memory.* is (None: no memory cap)
    cpu: Path | None  # where cpu.* is (None: no CPU cap)
    cpuacct: Path | None  # where the CPU time used is counted (v1's cpuacct; v2: cpu)

    @property
    def paths(self) -> list[Path]:
        """Every directory of the group, each once."""
        out: list[Path] = []
        for path in (self.memory, self.cpu, self.cpuacct):
            if path is not None and path not in out:
                out.append(path)
        return out


_ACTIVE: dict[str, Group] = {}  # "run": the group of the run in progress


def active() -> Group | None:
    """The group of the run in progress, which the servers started now join (None: no caps)."""
    return _ACTIVE.get("run")


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text + "\n")
    except OSError as exc:
        raise RunFailed(f"the kernel refused {text!r} in {path}: {exc.strerror}") from None


def _enable_v2(hierarchy: Hierarchy, controller: str) -> None:
    control = hierarchy.mount_point / "cgroup.subtree_control"
    if controller not in control.read_text().split():
        _write(control, f"+{controller}")


def make(memory: int | None, cpus: float | None, processes: int = 1) -> Group:
    """A fresh group holding ``memory`` bytes (page cache included) and ``cpus`` CPUs' time;
    removes the groups killed runs left first (:func:`reap`).

    With ``cpus``, the group weighs as ``processes`` busy processes in the CPU scheduler
    (``cpu.shares`` 1024 each, ``cpu.weight`` 100 each): a group is one entity there, and at
    the default weight all the server's busy processes inside it together get the share of
    one process outside it on a busy host (docs/caps.md). The quota still bounds its time."""
    reap()
    name = owned_name(KIND)
    made: list[Path] = []

    def directory(controller: str) -> tuple[Path, bool]:
        hierarchy = find(controller)
        if hierarchy is None:
            raise RunFailed(f"the {controller} cgroup controller is gone")
        if hierarchy.version == "v2":
            _enable_v2(hierarchy, controller)
        path = hierarchy.mount_point / name
        if path not in made:
            path.mkdir()
            made.append(path)
        return path, hierarchy.version == "v2"

    try:
        mem_dir = cpu_dir = acct_dir = None
        v2 = False
        if memory is not None:
            mem_dir, v2 = directory("memory")
            limit = "memory.max" if v2 else "memory.limit_in_bytes"
            _write(mem_dir / limit, str(memory))
        if cpus is not None:
            cpu_dir, v2 = directory("cpu")
            quota = max(MIN_QUOTA_US, round(cpus * CPU_PERIOD_US))
            n = max(1, processes)
            if v2:
                _write(cpu_dir / "cpu.max", f"{quota} {CPU_PERIOD_US}")
                _write(cpu_dir / "cpu.weight", str(min(WEIGHT_MAX, WEIGHT_ONE * n)))
            else:
                _write(cpu_dir / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(cpu_dir / "cpu.cfs_quota_us", str(quota))
                _write(cpu_dir / "cpu.shares", str(min(SHARES_MAX, SHARES_ONE * n)))
                acct_dir = directory("cpuacct")[0] if find("cpuacct") is not None else None
    except BaseException:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return Group(mem_dir, cpu_dir, acct_dir or cpu_dir)


def members(path: Path) -> list[int]:
    """The processes in the group's directory now."""
    try:
        text = (path / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split() if p.isdigit()]


def remove(group: Group, timeout: float = 10.0) -> list[Path]:
    """Remove the group's directories; a process left in it (a server that would not stop) is
    killed first: it is iolab's own, started into this group. Returns what could not go."""
    return [path for path in group.paths if not _remove_dir(path, timeout)]


def _remove_dir(path: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
        for pid in members(path):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def reap() -> list[Path]:
    """Remove the groups of iolab runs whose process is gone (killed before it could remove
    them), in every hierarchy; returns what was removed. Only groups of this user's are iolab's
    (:func:`iolab.ownership.orphans`): one another user made with iolab's name (where a hierarchy
    is delegated to them) is neither emptied nor removed. Nothing else is touched."""
    removed: list[Path] = []
    points = {h.mount_point for c in ("memory", "cpu", "cpuacct") if (h := find(c)) is not None}
    for point in sorted(points):
        for entry, st in orphans(point, KIND):
            if stat.S_ISDIR(st.st_mode) and _remove_dir(entry, 5.0):
                removed.append(entry)
    return removed


@dataclass(frozen=True)
class Killed:
    """What the kernel's OOM killer did in the group a run's process left: the group's memory
    cap (bytes; None when not known), how many processes it ended, and whether one was the
    run's own process (None: not known)."""

    cap: int | None
    kills: int
    itself: bool | None


def killed_at_cap(pid: int) -> Killed | None:
    """The OOM kills in the group that process ``pid`` of this boot made and left behind (it is
    gone): read from the group while it is there (:func:`oom_kills`), else from the kernel's
    log (its ``oom-kill:`` records name the group, the process killed and the group's limit;
    root only); None when neither tells of any. A run of an embedded engine has iolab's own
    process in its group: at the cap the killer ends iolab itself, which can say nothing, so
    the next command reads it here (another command may have removed the group, :func:`reap`)."""
    hierarchy = find("memory")
    if hierarchy is None:
        return None
    logged = _logged_kills(pid)
    with contextlib.suppress(OSError):
        for entry in hierarchy.mount_point.iterdir():
            if made_by(entry, KIND) == pid and is_orphan(entry, KIND):
                group = Group(entry, None, None)
                kills = oom_kills(group)
                if kills:
                    itself = logged.itself if logged is not None else None
                    return Killed(limits(group)[0], kills, itself)
    return logged


_LIMIT = re.compile(r"memory: usage \d+kB, limit (\d+)kB")
_KILL = re.compile(r"oom-kill:.*oom_memcg=/(\.iolab-cgroup-[^,/]+),.*,pid=(\d+),")


def _logged_kills(pid: int) -> Killed | None:
    """The OOM kills the kernel's log records in a group ``pid`` made (see killed_at_cap)."""
    cap: int | None = None
    limit: int | None = None
    kills, itself = 0, False
    for line in _kernel_log():
        found = _LIMIT.search(line)
        if found is not None:
            limit = int(found.group(1)) * 1024
            continue
        killed = _KILL.search(line)
        if killed is not None and made_by(Path(killed.group(1)), KIND) == pid:
            kills += 1
            itself = itself or int(killed.group(2)) == pid
            cap = limit if limit is not None else cap
    return Killed(cap, kills, itself) if kills else None


def _kernel_log() -> list[str]:
    """The kernel's log as it holds it now (``/dev/kmsg``, one record a read; root only, as
    the machine's dmesg_restrict says), or nothing."""
    lines: list[str] = []
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return lines
    try:
        while True:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break  # read to the end
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue  # records overwritten while reading: go on from the next
                break
            if not record:
                break
            lines.append(record.decode(errors="replace").partition(";")[2])
    finally:
        os.close(fd)
    return lines


def left() -> list[Path]:
    """Every iolab group there is now, of any process (for tests and `iolab` checks)."""
    out: list[Path] = []
    points = {h.mount_point for c in ("memory", "cpu", "cpuacct") if (h := find(c)) is not None}
    for point in sorted(points):
        with contextlib.suppress(OSError):
            out += [e for e in point.iterdir() if e.name.startswith(f".iolab-{KIND}-")]
    return out


@contextlib.contextmanager
def held(memory: int | None, cpus: float | None, processes: int = 1) -> Iterator[Group]:
    """A group for the block: the active one (servers started in it join it), removed after."""
    group = make(memory, cpus, processes)
    _ACTIVE["run"] = group
    try:
        yield group
    finally:  # also on Ctrl-C and failures: the servers have stopped by now
        _ACTIVE.pop("run", None)
        remaining = remove(group)
    if remaining:  # (a run that ended in an error keeps its own error)
        raise RunFailed(
            f"cannot remove the run's cgroup {remaining[0]}; a command started after this "
            "one has ended removes it"
        )


def current(hierarchy: Hierarchy, pid: int | str = "self") -> Path:
    """The directory of the cgroup ``pid`` is in, in ``hierarchy``."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        v1 = hierarchy.version == "v1" and set(controllers.split(",")) & set(hierarchy.controllers)
        v2 = hierarchy.version == "v2" and number == "0" and controllers == ""
        if v1 or v2:
            return hierarchy.mount_point / path.lstrip("/")
    return hierarchy.mount_point


def _hierarchy_of(path: Path) -> Hierarchy:
    for controller in ("memory", "cpu", "cpuacct"):
        found = find(controller)
        if found is not None and found.mount_point == path.parent:
            return found
    raise RunFailed(f"{path} is in no cgroup hierarchy iolab knows")


def join(pid: int, path: Path) -> None:
    """Move process ``pid`` (all its threads) into the group directory ``path``."""
    _write(path / "cgroup.procs", str(pid))


@contextlib.contextmanager
def entered(group: Group) -> Iterator[None]:
    """This process inside the group for the block (an embedded engine runs in iolab), and back
    where it was after it."""
    pid = os.getpid()
    back = [(path, current(_hierarchy_of(path))) for path in group.paths]
    for path, _here in back:
        join(pid, path)
    try:
        yield
    finally:
        for _path, here in back:
            with contextlib.suppress(RunFailed):
                join(pid, here)


@dataclass(frozen=True)
class Usage:
    """The group's counters now: bytes of memory (all, page cache), major faults (cumulative),
    CPU time used, throttled periods and time (cumulative; seconds)."""

    memory_bytes: float | None
    cache_bytes: float | None
    major_faults: float | None
    cpu_seconds: float | None
    periods: float | None
    throttled: float | None
    throttled_seconds: float | None


def _keyed(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[key] = int(value)
    return out


def _number(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def usage(group: Group) -> Usage:
    mem = cache = faults = cpu = periods = throttled = throttled_s = None
    if group.memory is not None:
        v2 = (group.memory / "memory.max").exists()
        stat = _keyed(group.memory / "memory.stat")
        mem = _number(group.memory / ("memory.current" if v2 else "memory.usage_in_bytes"))
        cache = stat.get("file" if v2 else "total_cache", stat.get("cache"))
        faults = stat.get("pgmajfault" if v2 else "total_pgmajfault", stat.get("pgmajfault"))
    if group.cpu is not None:
        v2 = (group.cpu / "cpu.max").exists()
        stat = _keyed(group.cpu / "cpu.stat")
        periods, throttled = stat.get("nr_periods"), stat.get("nr_throttled")
        if v2:
            us = stat.get("throttled_usec")
            throttled_s = None if us is None else us / 1e6
            used = stat.get("usage_usec")
            cpu = None if used is None else used / 1e6
        else:
            ns = stat.get("throttled_time")
            throttled_s = None if ns is None else ns / 1e9
            acct = group.cpuacct or group.cpu
            used_ns = _number(acct / "cpuacct.usage")
            cpu = None if used_ns is None else used_ns / 1e9
    return Usage(
        None if mem is None else float(mem),
        None if cache is None else float(cache),
        None if faults is None else float(faults),
        cpu,
        None if periods is None else float(periods),
        None if throttled is None else float(throttled),
        throttled_s,
    )


def oom_kills(group: Group) -> int:
    """Processes of the group the kernel's OOM killer ended at its memory cap (v1's
    ``memory.oom_control``, v2's ``memory.events``; 0 without a memory cap)."""
    if group.memory is None:
        return 0
    v2 = (group.memory / "memory.max").exists()
    found = _keyed(group.memory / ("memory.events" if v2 else "memory.oom_control"))
    return found.get("oom_kill", 0)


def limits(group: Group) -> tuple[int | None, float | None]:
    """The caps the kernel holds for the group: bytes of memory, CPUs (None: no cap)."""
    memory: int | None = None
    cpus: float | None = None
    if group.memory is not None:
        v2 = (group.memory / "memory.max").exists()
        memory = _number(group.memory / ("memory.max" if v2 else "memory.limit_in_bytes"))
    if group.cpu is not None:
        if (group.cpu / "cpu.max").exists():
            words = (group.cpu / "cpu.max").read_text().split()
            if len(words) == 2 and words[0].isdigit():
                cpus = int(words[0]) / int(words[1])
        else:
            quota = _number(group.cpu / "cpu.cfs_quota_us")
            period = _number(group.cpu / "cpu.cfs_period_us")
            if quota is not None and period and quota > 0:
                cpus = quota / period
    return memory, cpus
