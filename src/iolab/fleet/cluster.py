"""The fleet's Ray cluster: thin wrappers over ``ray start``, its stop, and its hosts.

iolab's Ray keeps its sessions in a directory of its own (:func:`ray_dir`, not Ray's
``/tmp/ray``), inside a directory private to the user that runs the fleet (:func:`fleet_dir`,
``iolab-ray-UID``, mode 700, its owner and mode checked before every use): another user of the
machine can neither read the sessions nor write the address ``auto`` reads. ``iolab fleet
stop`` stops the Ray programs that name that directory (in their command line, their open
files or :data:`MARK_ENV`; orphans included) and their children, and leaves any other Ray on
the machine running.

Every host of the fleet is a Ray node carrying the custom resource ``iolab-host:NAME`` = 1:
a run takes the whole of it, so a host runs one run at a time. The cluster uses Ray's token
authentication (``RAY_AUTH_MODE=token``): ``iolab fleet start`` makes a token file (mode 600)
that every host and the driver read; copy it to the same path on each host (or point
``IOLAB_FLEET_TOKEN`` at it). It is used only as the user's own (:func:`token_file`). No
dashboard is started. One head per user and machine; one join of a name at a time.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from iolab.errors import BadInput, IolabError, MissingTool, Unavailable
from iolab.fleet import names
from iolab.process import run as run_program
from iolab.system import processes, sockets
from iolab.system.trust import distrust

RESOURCE_PREFIX = "iolab-host:"
DEFAULT_PORT = 6379
INSTALL_HINT = "install the fleet extra: pip install 'iolab[fleet]'"
TOKEN_ENV = "IOLAB_FLEET_TOKEN"  # path of the fleet's token file, if not the default
PROBE_SECONDS = 30.0  # how long status waits for a host to answer
MARK_ENV = "IOLAB_FLEET_RAY_DIR"  # in every Ray process iolab starts: its Ray directory
STOP_GRACE = 2.0  # seconds between SIGTERM and SIGKILL in `fleet stop`
CONNECT_SECONDS = 5.0  # how long a TCP connection to the head's GCS may take
GCS_SECONDS = 8.0  # how long the head's GCS may take to answer, once connected
SHUTDOWN_SECONDS = 5.0  # how long the driver's disconnection from the fleet may take


class FleetRefused(IolabError):
    """A host of the fleet cannot take the experiment (version, tools): names the host."""

    exit_code = 2


class UnsafeDirectory(IolabError):
    """The fleet's directory (or the one it is in) could be written by another user: iolab
    neither uses it nor reads anything from it."""

    exit_code = 2


def ray_module() -> ModuleType:
    """Ray, imported on first use; without the extra, a MissingTool error saying how."""
    try:
        import ray
    except ImportError:
        raise MissingTool("ray (the fleet extra)", INSTALL_HINT) from None
    module: ModuleType = ray  # typed either way: with Ray's own types or, without the extra, Any
    return module


def require_ray() -> None:
    """Refuse at once, saying how to install it, when Ray is not installed (without importing
    it: Ray reads its authentication settings from the environment when imported)."""
    import importlib.util

    if "ray" in sys.modules:
        if sys.modules["ray"] is None:  # a test's way of hiding an installed package
            raise MissingTool("ray (the fleet extra)", INSTALL_HINT)
        return
    if importlib.util.find_spec("ray") is None:
        raise MissingTool("ray (the fleet extra)", INSTALL_HINT)


def _ray_program() -> str:
    require_ray()
    beside = Path(sys.executable).parent / "ray"  # the one of this environment
    found = str(beside) if beside.exists() else shutil.which("ray")
    if found is None:
        raise MissingTool("ray (the fleet extra)", INSTALL_HINT)
    return found


def token_path() -> Path:
    custom = os.environ.get(TOKEN_ENV)
    if custom:
        return Path(custom).expanduser().absolute()
    return Path.home() / ".config" / "iolab" / "fleet-token"


class UntrustedToken(IolabError):
    """The fleet's token file could have been written, or swapped, by another user: iolab
    neither reads it nor hands it to Ray."""

    exit_code = 2


def _untrusted(path: Path, why: str) -> UntrustedToken:
    return UntrustedToken(
        f"the fleet's token file {path} {why}: iolab does not use it (whoever wrote it could "
        "join the fleet and run tasks as this user); use a file of your own, mode 600, in a "
        "directory only you (or root) can write, as `iolab fleet start` makes it, or point "
        f"{TOKEN_ENV} at one"
    )


def _check_token_dir(path: Path) -> None:
    """Refuse a token file (its directory's links resolved) that another user could write or
    swap: its directory must be owned by this user or root and not writable by group or others,
    and every directory above it owned by this user or root, and sticky if others may write it."""
    uid = os.geteuid()
    st = os.lstat(path.parent)
    why = distrust(st)
    if why is None and not stat.S_ISDIR(st.st_mode):
        why = "is not a directory"
    if why is not None:
        raise _untrusted(path, f"is in {path.parent}, which {why}")
    for above in path.parent.parents:
        st = os.lstat(above)
        if st.st_uid not in (0, uid):
            raise _untrusted(path, f"is under {above}, which is owned by uid {st.st_uid}")
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            mode = stat.S_IMODE(st.st_mode)
            raise _untrusted(path, f"is under {above}, which others can write (mode {mode:04o})")


def _check_token(path: Path, fd: int) -> None:
    """Refuse the token file open at ``fd`` (the file checked is the file read) unless it is a
    regular file of this user's, mode 600 or 400, not empty."""
    st = os.fstat(fd)
    uid = os.geteuid()
    if not stat.S_ISREG(st.st_mode):
        raise _untrusted(path, "is not a regular file")
    if st.st_uid != uid:
        raise _untrusted(path, f"is owned by uid {st.st_uid}, not by this user (uid {uid})")
    mode = stat.S_IMODE(st.st_mode)
    if mode not in (0o600, 0o400):
        raise _untrusted(path, f"has mode {mode:04o}, not 0600 (or 0400)")
    if not os.read(fd, 4096).strip():
        raise _untrusted(path, "is empty")


def token_file(create: bool = False) -> Path:
    """The fleet's token file (:func:`token_path`, its directory's links resolved), checked on
    every use: refused (:class:`UntrustedToken`, one line naming the file and what is wrong)
    unless it is this user's own regular file, mode 600 or 400, not a symbolic link (opened
    with ``O_NOFOLLOW``, the open file checked), in a directory no other user can write or swap
    (:func:`_check_token_dir`). Made when ``create`` and missing: mode 600, in a checked
    directory, never through a link nor over a file. Ray then reads it by that path, where no
    other user can change what is there."""
    given = token_path()
    if create:
        given.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    elif not given.parent.is_dir():
        raise _missing_token(given)
    path = Path(os.path.realpath(given.parent)) / given.name
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO does not block the open
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | flags)
            break
        except FileNotFoundError:
            if not create:
                raise _missing_token(given) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _untrusted(path, "is a symbolic link") from None
            raise _untrusted(path, f"cannot be read ({exc.strerror or exc})") from None
        _check_token_dir(path)  # before anything is written there
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, 0o600)
        except FileExistsError:  # made meanwhile (another start): read and checked as any
            continue
        with os.fdopen(fd, "w") as f:
            os.fchmod(fd, 0o600)  # whatever the umask
            f.write(secrets.token_hex(32))
    try:
        _check_token(path, fd)
    finally:
        os.close(fd)
    _check_token_dir(path)
    return path


def _missing_token(path: Path) -> IolabError:
    how = "copy the fleet's token file from the head host (made by `iolab fleet start`)"
    custom = os.environ.get(TOKEN_ENV)
    if custom:
        return BadInput(TOKEN_ENV, custom, f"there is no such file; {how} there")
    return Unavailable(
        "the fleet's token file",
        f"{path} does not exist; {how} to {path}, or point {TOKEN_ENV} at it",
    )


def _token_env(create: bool) -> dict[str, str]:
    """The environment for Ray with token authentication on, reading the fleet's token file
    (checked: :func:`token_file`)."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file(create))}


def _resource(name: str) -> str:
    return json.dumps({RESOURCE_PREFIX + names.host_name(name, "--name"): 1})


def fleet_dir() -> Path:
    """This user's private directory for iolab's Ray: ``iolab-ray-UID`` in ``$RAY_TMPDIR`` (or
    ``/tmp``). Made mode 700; see :func:`checked_fleet_dir`."""
    return Path(os.environ.get("RAY_TMPDIR") or "/tmp") / f"iolab-ray-{os.geteuid()}"


def ray_dir() -> Path:
    """Where iolab's Ray nodes keep their sessions (Ray's ``--temp-dir``, which Ray makes mode
    777): inside :func:`fleet_dir`, whose mode 700 keeps every other user out of it."""
    return fleet_dir() / "ray"


def checked_fleet_dir(create: bool = False) -> Path | None:
    """:func:`fleet_dir` once it is safe to use: a directory (not a symbolic link) owned by this
    user, mode 700, in a directory that no other user can swap it in (owned by this user or
    root, and sticky if everyone may write there). Made when ``create``; None when it does not
    exist. Anything else is refused (:class:`UnsafeDirectory`), naming the path and why."""
    uid = os.geteuid()
    path = fleet_dir()
    base = path.parent
    try:
        held = os.stat(base)
    except FileNotFoundError:
        if create:
            raise UnsafeDirectory(f"{base} (RAY_TMPDIR) does not exist: make it first") from None
        return None
    link = os.lstat(base)
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (0, uid):
        _unsafe(base, f"is a symbolic link of uid {link.st_uid}, not of this user (uid {uid})")
    if held.st_uid not in (0, uid):
        _unsafe(base, f"is owned by uid {held.st_uid}, not by this user (uid {uid}) or root")
    if held.st_mode & 0o002 and not held.st_mode & stat.S_ISVTX:
        _unsafe(base, "is writable by every user and not sticky (mode 1777 would be)")
    if create:
        with suppress(FileExistsError):
            os.mkdir(path, 0o700)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        _unsafe(path, "is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        _unsafe(path, "is not a directory")
    if st.st_uid != uid:
        _unsafe(path, f"is owned by uid {st.st_uid}, not by this user (uid {uid})")
    if st.st_mode & 0o077:
        _unsafe(path, f"has mode {stat.S_IMODE(st.st_mode):04o}, not 0700")
    return path


def _unsafe(path: Path, why: str) -> None:
    raise UnsafeDirectory(
        f"the fleet's directory {path} {why}: iolab does not use it (another user could read "
        "or replace what Ray keeps there); remove it, or set RAY_TMPDIR to a directory of yours"
    )


def _ray_start(args: Sequence[str], create_token: bool) -> str:
    checked_fleet_dir(create=True)
    env = {
        **os.environ,
        **_token_env(create_token),
        "RAY_USAGE_STATS_ENABLED": "0",
        MARK_ENV: str(ray_dir()),
    }
    done = run_program(
        [_ray_program(), "start", *args, f"--temp-dir={ray_dir()}", "--disable-usage-stats"],
        env=env,
        check=False,
        timeout=180,
    )
    if done.returncode != 0:
        raise _start_failed(done.stderr or done.stdout)
    return done.stdout


def _start_failed(said: str) -> IolabError:
    """``ray start``'s failure as one line: the known ones said in iolab's words, any other
    as the last thing Ray said (its exception's message, without the traceback)."""
    if "InvalidAuthToken" in said or "AuthenticationError" in said:
        return _wrong_token("the fleet's head")
    found = re.search(r"but is already running at (\S+?)\.? ", said)
    if found:
        return IolabError(
            f"a fleet's head already runs here at {found.group(1)}: stop it with "
            "`iolab fleet stop`, or give another --port"
        )
    lines = [ln.strip() for ln in said.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.match(r"[\w.]+(Error|Exception): ", ln)]
    last = (errors or lines or ["(it said nothing)"])[-1]
    last = re.sub(r"^[\w.]+(Error|Exception): ", "", last)
    return IolabError(f"ray start failed: {last.split('. ')[0].removesuffix('.')}")


def _wrong_token(who: str) -> BadInput:
    path = token_path()
    return BadInput(
        TOKEN_ENV,
        str(path),
        f"{who} refused this token: copy the head's token file (made by `iolab fleet start`) "
        f"to {path}, or point {TOKEN_ENV} at it",
    )


class Busy(IolabError):
    """Another iolab process does the same thing here now (starts the fleet's head, joins a host
    of that name): names it."""

    exit_code = 2


@contextmanager
def _holding(lock: str, busy: Callable[[int | None], IolabError]) -> Iterator[None]:
    """Hold the lock file ``lock`` in this user's private :func:`fleet_dir` (made mode 600, never
    through a link; an exclusive ``flock`` that the kernel gives back when its process ends,
    however it ends) for the block; when another process holds it, ``busy(its pid)`` is raised
    at once (the pid None when it has not said it yet)."""
    base = checked_fleet_dir(create=True)
    assert base is not None
    path = base / lock
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise IolabError(f"cannot open the fleet's lock {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise IolabError(f"the fleet's lock {path} is not a file of this user's: remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            said = os.pread(fd, 32, 0).decode(errors="replace").strip()
            raise busy(int(said) if said.isdigit() else None) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _pid(pid: int | None) -> str:
    return f" (pid {pid})" if pid is not None else ""


def running_head() -> tuple[str | None, int] | None:
    """The fleet's head that runs on this machine for this user, if one does: its address (from
    :func:`local_address`; None when Ray has not written it) and its GCS's pid. Found by its
    process, which lives whether or not it answers."""
    gcs = [
        p.pid
        for p in processes.listing()
        if p.state not in ("Z", "X") and p.argv and p.argv[0].endswith("/gcs_server") and _ours(p)
    ]
    if not gcs:
        return None
    return local_address(), gcs[0]


def start(*, port: int = DEFAULT_PORT, name: str | None = None, node_ip: str | None = None) -> str:
    """Start the head of a fleet here (a host of it too when ``name`` is given); returns the
    address the hosts join. Refused while this user's fleet head already runs here (another
    would take over the address ``auto`` reads, hiding the first fleet), and while another
    ``iolab fleet start`` is at it."""
    names.port(port, "--port")
    if node_ip is not None:
        node_ip = names.node_ip(node_ip, "--node-ip-address")
    args = ["--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false"]
    if name is not None:
        args.append(f"--resources={_resource(name)}")
    if node_ip is not None:
        args.append(f"--node-ip-address={node_ip}")
    require_ray()
    token_file(create=True)

    def busy(pid: int | None) -> IolabError:
        return Busy(f"another `iolab fleet start`{_pid(pid)} is starting a fleet's head here now")

    with _holding("start.lock", busy):
        head = running_head()
        if head is not None:
            address, gcs = head
            raise Busy(
                f"a fleet's head already runs here at {address or '(an address not yet known)'} "
                f"(its GCS is pid {gcs}; `auto` means it): stop it with `iolab fleet stop` "
                "before starting another"
            )
        names.port_free(node_ip, port, "--port")
        said = _ray_start(args, create_token=True)
    found = re.search(r"--address='([^']+)'", said)  # Ray says how the hosts reach the head
    return found.group(1) if found else f"{node_ip or '127.0.0.1'}:{port}"


def join(head: str, name: str, *, node_ip: str | None = None) -> None:
    """Join this machine to the fleet at ``head`` as host ``name``: refused at once when the
    head does not answer, refuses the token, has a host of that name already, or another
    process here is joining a host of that name."""
    names.address(head, "HEAD", auto=False)
    args = [f"--address={head}", f"--resources={_resource(name)}", "--num-cpus=1"]
    if node_ip is not None:
        node_ip = names.node_ip(node_ip, "--node-ip-address")
        args.append(f"--node-ip-address={node_ip}")
    require_ray()
    env = _token_env(create=False)

    def busy(pid: int | None) -> IolabError:
        return BadInput(
            "--name",
            name,
            f"{name} is being joined by another process{_pid(pid)}: wait for it to end, then "
            f"`iolab fleet status --address {head}` says whether {name} joined",
        )

    with _holding(f"join-{name}.lock", busy):  # the name checked and joined by one at a time
        os.environ.update(env)  # read when Ray is imported
        for node in head_nodes(head, "HEAD"):
            if node.name == name and node.alive:
                raise BadInput(
                    "--name",
                    name,
                    f"host {name} is already in the fleet, on the node at {node.address}: give "
                    f"another name, or run `iolab fleet stop` on {node.address} first",
                )
        _ray_start(args, create_token=False)


def _ours(p: processes.Process) -> bool:
    """A Ray program (of Ray's package, or renamed ``ray::...``) of iolab's Ray sessions here:
    one of its arguments or of its open files (its logs: an orphan that Ray renamed
    ``ray::DashboardAgent`` keeps its ``.out``/``.err`` open) is :func:`ray_dir` or a path in it
    (a path component, never a part of a name), or it carries :data:`MARK_ENV` naming exactly
    that directory. A program of another kind that names it (``tail`` of a log) is not Ray's."""
    if not p.argv or not (
        p.argv[0].startswith("ray::") or any(a.startswith(_ray_package()) for a in p.argv[:3])
    ):
        return False
    here = ray_dir()

    def inside(value: str) -> bool:
        return value.startswith("/") and (Path(value) == here or here in Path(value).parents)

    if any(inside(a.split("=", 1)[1] if a.startswith("-") and "=" in a else a) for a in p.argv):
        return True
    if any(inside(path) for path in processes.open_files(p.pid)):
        return True
    return processes.environ(p.pid).get(MARK_ENV) == str(here)


@cache
def _ray_package() -> tuple[str, ...]:
    """The directory of Ray's package, as found and with its links resolved, whose programs
    (gcs_server, raylet, its Python scripts) the fleet's nodes run; found without importing
    Ray."""
    import importlib.util

    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        raise MissingTool("ray (the fleet extra)", INSTALL_HINT)
    found = Path(next(iter(spec.submodule_search_locations)))
    return tuple({f"{found}/", f"{found.resolve()}/"})


def stop() -> int:
    """Stop the fleet's Ray processes on this machine: those of iolab's Ray sessions here
    (:func:`_ours`) and every process under them (Ray's agents and workers), SIGTERM then,
    after :data:`STOP_GRACE` seconds, SIGKILL; again until none is left (a raylet may start a
    worker meanwhile), and only then it returns. Another Ray's are left alone, and so is this
    process's own line of parents. Returns how many processes were stopped."""
    require_ray()
    checked_fleet_dir()
    stopped: set[int] = set()
    for _ in range(5):
        procs = processes.listing()
        mine = processes.ancestors(os.getpid(), procs)
        found = [
            pid
            for pid in processes.with_children(processes.matching(_ours, procs), procs)
            if pid not in mine and processes.alive(pid)
        ]
        if not found:
            break
        processes.stop(found, grace=STOP_GRACE)
        stopped.update(found)
    return len(stopped)


def exposed_ports() -> list[int]:
    """The ports the fleet's Ray processes here listen on every interface (``0.0.0.0``, ``::``),
    not only on the node's address: with Ray 2.60, its GCS, raylet (node and object manager)
    and workers whenever the node's address is not 127.0.0.1."""
    procs = processes.listing()
    ours = processes.with_children(processes.matching(_ours, procs), procs)
    return sorted({s.port for s in sockets.listening(ours) if s.every_interface})


def local_address() -> str | None:
    """The address of the fleet started on this machine by this user, from the session Ray
    keeps in :func:`ray_dir` (read only from this user's private directory, never through a
    symbolic link), or None."""
    if checked_fleet_dir() is None:
        return None
    try:
        fd = os.open(ray_dir() / "ray_current_cluster", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as f:
        st = os.fstat(f.fileno())
        if st.st_uid != os.geteuid() or not stat.S_ISREG(st.st_mode):
            return None
        text = f.read().strip()
    return text or None


@contextmanager
def connected(address: str, field: str = "--fleet") -> Iterator[ModuleType]:
    """This process as a Ray driver of the fleet at ``address`` (``auto``, HOST:PORT or a
    ``ray://`` address; ``field`` names where it was given), disconnected on the way out. A
    HOST:PORT where no fleet's head answers is refused within CONNECT_SECONDS + GCS_SECONDS."""
    names.address(address, field)
    require_ray()
    os.environ.update(_token_env(create=False))  # read when Ray is imported
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    given = address
    if address == "auto":  # the fleet started here, never Ray's own lookup (in /tmp/ray)
        found = local_address()
        if found is None:
            raise BadInput(
                field,
                address,
                f"no fleet of this user runs on this machine (none in {ray_dir()}): "
                "start one with `iolab fleet start`, or give the head's HOST:PORT",
            )
        address = found
    if names.split(address) is not None:  # HOST:PORT: does a fleet's head answer there?
        head_nodes(address, field, given)
    ray = ray_module()
    _errors_to_stderr()
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    except ConnectionError as exc:
        raise BadInput(field, given, f"give the address of a running fleet ({exc})") from None
    try:
        yield ray
    finally:
        _disconnect(ray)


_stuck: list[bool] = []  # a disconnection that did not end: see stuck()


def stuck() -> bool:
    """Whether this process, a driver of a fleet whose head stopped answering, could not
    disconnect from it: it cannot end as a process does either (Ray's core worker waits on the
    GCS, then crashes, while the interpreter exits), and the command ends it at once."""
    return bool(_stuck)


def _disconnect(ray: ModuleType) -> None:
    """``ray.shutdown()`` within SHUTDOWN_SECONDS: it waits without a limit on a head that does
    not answer (a frozen GCS), as would Ray's own shutdown when the process exits, which is then
    dropped (see :func:`stuck`)."""
    import atexit

    try:
        _within(ray.shutdown, SHUTDOWN_SECONDS)
    except TimeoutError:
        from ray._private import worker

        atexit.unregister(worker.shutdown)
        _stuck.append(True)


def _errors_to_stderr() -> None:
    """Ray's driver prints the errors the cluster reports (a node that died) on stdout, which
    is where ``--json`` goes: send them to stderr, with the warnings. (Ray has no option for
    it; without this internal hook the messages stay on stdout, nothing else changes.)"""
    from ray._private import worker

    original = getattr(worker, "print_to_stdstream", None)
    if original is None or getattr(original, "iolab_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr.iolab_stderr = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


@dataclass(frozen=True)
class Node:
    name: str
    node_id: str
    address: str
    alive: bool


def reachable(address: str, seconds: float = CONNECT_SECONDS) -> str | None:
    """Why nothing accepts a TCP connection at HOST:PORT within ``seconds`` (None: something
    does). A plain connect, which Ctrl-C interrupts, before Ray is asked."""
    where = names.split(address)
    if where is None:
        return "not HOST:PORT"
    host, port = where
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=seconds):
            return None
    except TimeoutError:
        return f"no answer within {seconds:g} s"
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()


def _within(call: Callable[[], Any], seconds: float) -> Any:
    """What ``call()`` returns (or raises) within ``seconds``, else TimeoutError. It runs in a
    thread of its own, which this process does not wait for beyond that: a call into Ray that
    never returns (a GCS frozen mid-answer) cannot hold it; Ctrl-C interrupts the wait."""
    done: list[Any] = []
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            done.append(call())
        except BaseException as exc:
            failed.append(exc)

    asking = threading.Thread(target=ask, name="iolab-fleet-head", daemon=True)
    asking.start()
    asking.join(seconds)
    if failed:
        raise failed[0]
    if not done:
        raise TimeoutError(f"no answer within {seconds:g} s")
    return done[0]


def head_silent(address: str, seconds: float) -> str | None:
    """Why the head of the fleet this process drives (connected) does not answer, said as the
    end of a sentence whose subject is the head: "is gone (...)" when nothing accepts a
    connection at its HOST:PORT, "does not answer (...)" when its GCS does not answer a request
    within ``seconds`` (a frozen or hung head still accepts connections: its kernel does). None:
    it answered."""
    why = reachable(address, seconds)
    if why is not None:
        return f"is gone ({why})"
    from ray._private import worker

    client = getattr(worker.global_worker, "gcs_client", None)
    if client is None:  # a ray:// client: its server answers for the head
        return None
    try:
        _within(lambda: client.get_all_node_info(timeout=seconds), seconds + 1)
    except Exception as exc:
        if isinstance(exc, TimeoutError) or "Deadline" in str(exc):
            return f"does not answer (its GCS said nothing within {seconds:g} s)"
        return f"does not answer ({str(exc).strip().splitlines()[0]})"
    return None


def head_nodes(address: str, field: str, given: str | None = None) -> list[Node]:
    """The hosts of the fleet whose head's GCS is at HOST:PORT ``address``, from its node table
    (a host that left keeps its resources there), asked without joining the fleet. Refused, one
    line naming the address, when nothing answers within CONNECT_SECONDS, no fleet's head
    within GCS_SECONDS more, or it refuses the token. ``given``: what the user wrote (``auto``)."""
    require_ray()
    given = given or address
    here = "" if given == address else f" (the fleet started on this machine, at {address})"
    why = reachable(address)
    if why is not None:
        raise BadInput(
            field,
            given,
            f"no fleet's head answers{here} ({why}): start one with `iolab fleet start`, or "
            "give the address of a running fleet",
        )
    from ray._raylet import GcsClient  # type: ignore[attr-defined]

    try:  # a new client waits 30 s or more for an address that is not a GCS, or a frozen one
        infos = _within(
            lambda: GcsClient(address=address).get_all_node_info(timeout=GCS_SECONDS),
            GCS_SECONDS,
        )
    except Exception as exc:
        if type(exc).__name__ == "AuthenticationError":
            raise _wrong_token(f"the fleet's head at {address}") from None
        said = "" if isinstance(exc, TimeoutError) else str(exc).strip().splitlines()[0]
        raise BadInput(
            field,
            given,
            f"no fleet's head answers{here} within {GCS_SECONDS:g} s"
            + (f" ({said})" if said else "")
            + " (something accepts connections there: a head that is stopped or hangs, or "
            "another program): give the head's address that `iolab fleet start` printed",
        ) from None
    return _hosts(infos.values())


def _hosts(infos: Any) -> list[Node]:
    """The hosts among the GCS's node records, by name (a host that left and joined again:
    its live node)."""
    out: dict[str, Node] = {}
    for info in infos:
        alive = info.state == 0  # GcsNodeInfo.ALIVE
        for key in info.resources_total:
            if key.startswith(RESOURCE_PREFIX):
                name = key.removeprefix(RESOURCE_PREFIX)
                node = Node(name, info.node_id.hex(), info.node_manager_address, alive)
                if name not in out or node.alive:
                    out[name] = node
    return [out[k] for k in sorted(out)]


def nodes(ray: ModuleType) -> list[Node]:
    """The fleet's hosts, those that left too, by name: the GCS's node table (``ray.nodes()``
    drops the resources of a node that died, and with them its name)."""
    from ray._private import worker

    client = getattr(worker.global_worker, "gcs_client", None)
    if client is None:  # a ray:// client: Ray's own view, without the hosts that left
        return _hosts(_Info(n) for n in ray.nodes())
    return _hosts(client.get_all_node_info(timeout=GCS_SECONDS).values())


def stopped(ray: ModuleType, node_id: str, seconds: float = 3.0) -> bool:
    """Whether the node was stopped (SIGTERM: ``iolab fleet stop`` there) rather than lost: the
    reason its GCS record gives, once the record says it died (waited for up to ``seconds``; a
    node killed outright is only declared dead after its health checks fail)."""
    import time

    from ray._private import worker

    client = getattr(worker.global_worker, "gcs_client", None)
    deadline = time.monotonic() + seconds
    while client is not None:
        try:
            infos = client.get_all_node_info(timeout=seconds).values()
        except Exception:
            return False
        for info in infos:
            if info.node_id.hex() == node_id and info.state != 0:  # not ALIVE
                return bool(info.death_info.reason == 1)  # EXPECTED_TERMINATION
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return False


class _Info:
    """A node of ``ray.nodes()`` read as the GCS's node record :func:`_hosts` reads."""

    def __init__(self, n: dict[str, Any]) -> None:
        self.state = 0 if n["Alive"] else 1
        self.resources_total = n.get("Resources", {})
        self.node_id = bytes.fromhex(n["NodeID"])
        self.node_manager_address = n["NodeManagerAddress"]


def on_node(ray: ModuleType, node_id: str) -> dict[str, Any]:
    """Ray task options that place a task on that node only, taking no CPU."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return {
        "num_cpus": 0,
        "max_retries": 0,
        "scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False),
    }


def describe_host(dirs: Sequence[str] = ()) -> dict[str, Any]:
    """What a host says of itself (run there): versions, tools, free space of directories."""
    import platform

    from iolab import __version__

    free: dict[str, int | None] = {}
    for d in dirs:
        try:
            free[d] = shutil.disk_usage(d).free
        except OSError:
            free[d] = None
    ray = ray_module()
    return {
        "hostname": platform.node(),
        "iolab": __version__,
        "ray": str(ray.__version__),
        "python": platform.python_version(),
        "tools": {t: shutil.which(t) for t in ("fio",)},
        "free": free,
    }


@dataclass
class HostStatus:
    name: str
    address: str
    alive: bool
    busy: bool
    hostname: str | None = None
    iolab: str | None = None
    ray: str | None = None
    python: str | None = None
    tools: dict[str, str | None] = field(default_factory=dict)
    free: dict[str, int | None] = field(default_factory=dict)
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def status(address: str, dirs: Sequence[str] = ()) -> list[HostStatus]:
    """Every host of the fleet: alive, busy (running a run) or idle, and what it says of
    itself (asked by a small task placed on it, which needs no free resource)."""
    with connected(address, "--address") as ray:
        free = ray.available_resources()
        found = nodes(ray)
        out = []
        asked = {}
        probe = ray.remote(describe_host)
        for node in found:
            busy = node.alive and free.get(RESOURCE_PREFIX + node.name, 0) < 1
            out.append(HostStatus(node.name, node.address, node.alive, busy))
            if node.alive:
                asked[node.name] = probe.options(**on_node(ray, node.node_id)).remote(list(dirs))
        for host in out:
            ref = asked.get(host.name)
            if ref is None:
                continue
            ready, _ = ray.wait([ref], timeout=PROBE_SECONDS)
            if not ready:
                host.error = f"did not answer within {PROBE_SECONDS:g} s"
                continue
            try:
                said = ray.get(ref)
            except Exception as exc:
                host.error = str(exc).splitlines()[0]
                continue
            for key, value in said.items():
                setattr(host, key, value)
        return out
