"""The fleet's Ray cluster: thin wrappers over ``ray start``, its stop, and its hosts.

iolab's Ray keeps its sessions in a directory of its own (:func:`ray_dir`, not Ray's
``/tmp/ray``): ``iolab fleet stop`` stops the processes started with it and their children, and
leaves any other Ray on the machine running; ``auto`` finds the cluster started here from it.

Every host of the fleet is a Ray node carrying the custom resource ``iolab-host:NAME`` = 1:
a run takes the whole of it, so a host runs one run at a time. The cluster uses Ray's token
authentication (``RAY_AUTH_MODE=token``): ``iolab fleet start`` makes a token file (mode 600)
that every host and the driver read; copy it to the same path on each host (or point
``IOLAB_FLEET_TOKEN`` at it). No dashboard is started.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from iolab.errors import BadInput, IolabError, MissingTool
from iolab.fleet import names
from iolab.process import run as run_program
from iolab.system import processes

RESOURCE_PREFIX = "iolab-host:"
DEFAULT_PORT = 6379
INSTALL_HINT = "install the fleet extra: pip install 'iolab[fleet]'"
TOKEN_ENV = "IOLAB_FLEET_TOKEN"  # path of the fleet's token file, if not the default
PROBE_SECONDS = 30.0  # how long status waits for a host to answer
CONNECT_SECONDS = 5.0  # how long a TCP connection to the head's GCS may take
GCS_SECONDS = 8.0  # how long the head's GCS may take to answer, once connected


class FleetRefused(IolabError):
    """A host of the fleet cannot take the experiment (version, tools): names the host."""

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
        return Path(custom).expanduser()
    return Path.home() / ".config" / "iolab" / "fleet-token"


def _token_env(create: bool) -> dict[str, str]:
    """The environment for Ray with token authentication on, reading the fleet's token."""
    path = token_path()
    if not path.exists():
        if not create:
            raise BadInput(
                TOKEN_ENV,
                str(path),
                "copy the fleet's token file from the head host (made by `iolab fleet start`) "
                f"to {path}, or point {TOKEN_ENV} at it",
            )
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}


def _resource(name: str) -> str:
    return json.dumps({RESOURCE_PREFIX + names.host_name(name, "--name"): 1})


def ray_dir() -> Path:
    """Where iolab's Ray nodes keep their sessions (Ray's ``--temp-dir``): beside Ray's own
    ``/tmp/ray`` (under ``$RAY_TMPDIR`` when set), so that they are told apart from it."""
    return Path(os.environ.get("RAY_TMPDIR") or "/tmp") / "iolab-ray"


def _ray_start(args: Sequence[str], create_token: bool) -> str:
    env = {**os.environ, **_token_env(create_token), "RAY_USAGE_STATS_ENABLED": "0"}
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


def start(*, port: int = DEFAULT_PORT, name: str | None = None, node_ip: str | None = None) -> str:
    """Start the head of a fleet here (a host of it too when ``name`` is given); returns the
    address the hosts join."""
    names.port(port, "--port")
    if node_ip is not None:
        node_ip = names.node_ip(node_ip, "--node-ip-address")
    args = ["--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false"]
    if name is not None:
        args.append(f"--resources={_resource(name)}")
    if node_ip is not None:
        args.append(f"--node-ip-address={node_ip}")
    require_ray()
    names.port_free(node_ip, port, "--port")
    said = _ray_start(args, create_token=True)
    found = re.search(r"--address='([^']+)'", said)  # Ray says how the hosts reach the head
    return found.group(1) if found else f"{node_ip or '127.0.0.1'}:{port}"


def join(head: str, name: str, *, node_ip: str | None = None) -> None:
    """Join this machine to the fleet at ``head`` as host ``name``: refused at once when the
    head does not answer, refuses the token, or has a host of that name already."""
    names.address(head, "HEAD", auto=False)
    args = [f"--address={head}", f"--resources={_resource(name)}", "--num-cpus=1"]
    if node_ip is not None:
        node_ip = names.node_ip(node_ip, "--node-ip-address")
        args.append(f"--node-ip-address={node_ip}")
    require_ray()
    os.environ.update(_token_env(create=False))  # read when Ray is imported
    for node in head_nodes(head, "HEAD"):
        if node.name == name and node.alive:
            raise BadInput(
                "--name",
                name,
                f"host {name} is already in the fleet, on the node at {node.address}: give "
                f"another name, or run `iolab fleet stop` on {node.address} first",
            )
    _ray_start(args, create_token=False)


def stop() -> int:
    """Stop the fleet's Ray processes on this machine: Ray's programs whose command line names
    :func:`ray_dir` and every process under them (Ray's agents and workers). Another Ray's are
    left alone, and so is this process's own line of parents. Returns how many processes were
    stopped."""
    require_ray()
    here = str(ray_dir()) + "/"

    def ours(p: processes.Process) -> bool:  # a program of Ray's package, in iolab's sessions
        return any("/ray/" in a for a in p.argv[:3]) and any(here in a for a in p.argv)

    procs = processes.listing()
    mine = processes.ancestors(os.getpid(), procs)
    pids = [
        pid
        for pid in processes.with_children(processes.matching(ours, procs), procs)
        if pid not in mine
    ]
    processes.stop(pids)
    return len(pids)


def local_address() -> str | None:
    """The address of the fleet started on this machine, from the session Ray keeps in
    :func:`ray_dir`, or None."""
    found = ray_dir() / "ray_current_cluster"
    try:
        text = found.read_text().strip()
    except OSError:
        return None
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
    if address == "auto":  # the fleet started here, not whichever Ray Ray's own lookup finds
        address = local_address() or address
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
        ray.shutdown()


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
    found: list[Any] = []
    failed: list[BaseException] = []
    from ray._raylet import GcsClient  # type: ignore[attr-defined]

    def ask() -> None:  # Ray's client waits 40 s for an address that is not a GCS
        try:
            found.append(GcsClient(address=address).get_all_node_info(timeout=GCS_SECONDS))
        except BaseException as exc:
            failed.append(exc)

    asking = threading.Thread(target=ask, name="iolab-fleet-head", daemon=True)
    asking.start()
    asking.join(GCS_SECONDS)  # Ctrl-C interrupts the wait; the thread dies with the process
    if failed and type(failed[0]).__name__ == "AuthenticationError":
        raise _wrong_token(f"the fleet's head at {address}")
    if not found:
        said = str(failed[0]).strip().splitlines()[0] if failed else None
        raise BadInput(
            field,
            given,
            f"something answers{here} but no fleet's head did within {GCS_SECONDS:g} s"
            + (f" ({said})" if said else "")
            + ": give the head's address that `iolab fleet start` printed",
        )
    return _hosts(found[0].values())


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
