"""Runs of an experiment placed on the hosts of a fleet: the runner's one-cell path, on Ray.

The driver (``iolab run --fleet``) claims each run in its results database as it always does,
then :class:`FleetExecutor` sends it to a host as a Ray task that takes the host's resource
``iolab-host:NAME`` (1 per host: one run at a time per host) and calls
:func:`iolab.runner.executors.execute_cell` there, the same function a local run calls. What
comes back (summary, series, waits, checkpoints, logs, histograms, environment) is committed
by the driver. A host whose node (or worker) dies during a run leaves that run failed with
"host NAME left the fleet during run N"; it takes no more runs of this invocation, so its other
cells are skipped (running the file again resumes them, on the host if it came back). Before
any run, every host is asked whether it can take the experiment (the same iolab version as the
driver, and the experiment's checks passing there: engine binaries, fio, directories); a host
that cannot is refused, named with what is missing. A file's ``[devices]`` are brought up on
every host before the runs, and taken down after them by the host that brought them up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import cycle
from pathlib import Path
from types import ModuleType
from typing import Any

from iolab.config.experiment import HOST_KEY, Cell, Experiment, IsolationSection
from iolab.errors import BadInput, IolabError, MissingTool
from iolab.events import Event, EventSink, Phase, Warning
from iolab.fleet import cluster
from iolab.fleet.cluster import FleetRefused, Node
from iolab.redaction import redact
from iolab.results import RunOutcome, RunStatus
from iolab.runner.executors import Executor, Task, execute_cell
from iolab.runner.single import Executed
from iolab.store import Store

HEAD_CHECK_SECONDS = 2.0  # while runs are in flight, the head's GCS is checked this often
HEAD_ANSWER_SECONDS = 4.0  # how long the head's GCS may take to answer a check
HEAD_MISSES = 3  # checks in a row that the head fails (nothing listening, or no answer): gone


class HostStopped(Exception):
    """The host's worker was told to exit during a run (``iolab fleet stop`` there, SIGTERM):
    raised on the host so that the driver says so."""


class HeadGone(IolabError):
    """The fleet's head stopped answering while runs were in flight."""


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def run_on_host(
    host: str,
    kind_name: str,
    params: Mapping[str, Any],
    isolation: Mapping[str, Any],
    timeout: float | None,
    measured: bool,
) -> Executed:
    """One run of a cell on this host (a Ray task there): what a local run does, returned to
    the driver. Nothing raises out of here: a run the host could not even prepare comes back
    failed, saying why."""
    from iolab.runner.experiment import default_resolve
    from iolab.workloads.registry import WORKLOADS

    warnings: list[str] = []

    def events(event: Event) -> None:  # the driver shows what the run warned of
        if isinstance(event, Warning):
            warnings.append(event.text)

    try:
        executed = execute_cell(
            WORKLOADS[kind_name],
            params,
            default_resolve,
            events,
            IsolationSection.model_validate(isolation),
            timeout,
            measured=measured,
        )
    except SystemExit:  # the host's Ray worker is stopping (SIGTERM): the host leaves
        raise HostStopped(host) from None
    except BaseException as exc:  # the kind's prepare refused: nothing of the run ran
        reason = str(exc) if isinstance(exc, IolabError) else f"internal error: {exc!r}"
        outcome = RunOutcome(RunStatus.FAILED, error=redact(f"on host {host}: {reason}"))
        executed = Executed(outcome, None, _now(), _now(), fatal=isinstance(exc, BadInput))
    if executed.environment is not None:
        executed.environment["fleet_host"] = host  # the environment names its host
    executed.warnings = [f"host {host}: {w}" for w in warnings]
    return executed.portable()


def check_host(kind_name: str, cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Whether this host can take these cells (a Ray task there): its iolab version and what
    the experiment's checks say here (engine binaries and settings, fio, directories)."""
    from iolab import __version__
    from iolab.workloads.interface import Checked
    from iolab.workloads.registry import WORKLOADS

    problems: list[str] = []
    workload = WORKLOADS[kind_name]
    if workload.check_tools is not None:
        try:
            workload.check_tools()
        except MissingTool as exc:
            problems.append(str(exc))
    checked = Checked()
    for params in cells:
        try:
            workload.check(params, checked)
        except IolabError as exc:
            if str(exc) not in problems:
                problems.append(str(exc))
    return {"iolab": __version__, "problems": problems}


def host_devices_up(table: dict[str, dict[str, Any]]) -> list[str]:
    """Bring the file's ``[devices]`` up on this host (a Ray task there), as a local run does;
    the names this brought up."""
    from iolab.runner.experiment import devices_up

    return devices_up(table, lambda _event: None)


def host_devices_down(names: list[str]) -> None:
    """Take down on this host the devices :func:`host_devices_up` brought up there."""
    from iolab.runner.experiment import devices_down

    devices_down(names, lambda _event: None)


class FleetExecutor:
    """Runs on the fleet's hosts, one at a time per host, many hosts at once."""

    def __init__(
        self, ray: ModuleType, experiment: Experiment, hosts: Sequence[Node], events: EventSink
    ) -> None:
        self.ray = ray
        self.experiment = experiment
        self.events = events
        self.hosts = {h.name: h for h in hosts}
        self.gone: set[str] = set()
        self.running: dict[Any, Task] = {}  # Ray object ref -> the task it runs
        self.made: dict[str, list[str]] = {}  # host -> testbed devices brought up there
        self._turn = cycle(sorted(self.hosts))
        self._remote = ray.remote(run_on_host)
        spec = experiment.spec
        self._isolation = spec.isolation.model_dump()
        self._timeout = spec.experiment.timeout_seconds()
        self.head = str(ray.get_runtime_context().gcs_address)
        self.head_gone = False

    def _host_of(self, cell: Cell) -> str | None:
        value = cell.values.get(HOST_KEY)
        return None if value is None else str(value)

    def _busy_hosts(self) -> set[str]:
        return {t.host for t in self.running.values() if t.host is not None}

    def _free(self) -> list[str]:
        busy = self._busy_hosts()
        return [h for h in self.hosts if h not in busy and h not in self.gone]

    @property
    def busy(self) -> bool:
        return bool(self.running)

    @property
    def width(self) -> int:
        return max(1, len(set(self.hosts) - self.gone))

    def ready(self, cell: Cell) -> bool:
        host = self._host_of(cell)
        free = self._free()
        return host in free if host is not None else bool(free)

    def unreachable(self, cell: Cell) -> str | None:
        host = self._host_of(cell)
        if host is not None and host in self.gone:
            return f"host {host} left the fleet"
        if host is None and len(self.gone) == len(self.hosts):
            return "every host left the fleet"
        return None

    def submit(self, task: Task) -> Task:
        host = self._host_of(task.cell)
        if host is None:
            free = set(self._free())
            host = next(h for h in self._turn if h in free)
        placed = task.on(host)
        what = f"run {task.repetition} of {task.cell.label}" if task.measured else "warm-up run"
        self.events(Phase(f"{what} sent to host {host}"))
        ref = self._remote.options(**self._on(host)).remote(
            host,
            task.cell.kind,
            task.cell.run_params,
            self._isolation,
            self._timeout,
            task.measured,
        )
        self.running[ref] = placed
        return placed

    def wait(self) -> list[tuple[Task, Executed]]:
        misses = 0
        while True:
            ready, _ = self.ray.wait(list(self.running), num_returns=1, timeout=HEAD_CHECK_SECONDS)
            if ready:
                break
            # Ray's driver would exit (1, silently) a minute after the head's GCS went away, and
            # wait for ever on a frozen one (which still accepts connections): the GCS must
            # answer a request
            why = cluster.head_silent(self.head, HEAD_ANSWER_SECONDS)
            misses = misses + 1 if why is not None else 0
            if misses >= HEAD_MISSES:
                self.head_gone = True
                raise HeadGone(
                    f"the fleet's head at {self.head} {why}: the runs in flight are recorded "
                    "aborted; start the fleet again, and run the file again to resume"
                )
        out = []
        for ref in ready:
            task = self.running.pop(ref)
            out.append((task, self._result(ref, task)))
        return out

    def _result(self, ref: Any, task: Task) -> Executed:
        from ray.exceptions import RayError, RayTaskError

        try:
            executed: Executed = self.ray.get(ref)
            return executed
        except RayTaskError as exc:
            if isinstance(getattr(exc, "cause", None), HostStopped):
                error = f"host {task.host} left the fleet (stopped) during run {task.repetition}"
                self.gone.add(str(task.host))
            else:
                error = f"on host {task.host}: {str(exc).strip().splitlines()[-1]}"
        except RayError:  # its node or worker died: the host takes no more runs this time
            host = str(task.host)
            how = " (stopped)" if cluster.stopped(self.ray, self.hosts[host].node_id) else ""
            error = f"host {host} left the fleet{how} during run {task.repetition}"
            self.gone.add(host)
        now = _now()
        return Executed(RunOutcome(RunStatus.FAILED, error=error), None, now, now)

    def devices_up(self) -> None:
        """The file's ``[devices]`` on every host, one host after another (hosts that share a
        machine share its testbed); each host takes down what it brought up at :meth:`close`."""
        table = self.experiment.spec.devices
        if not table:
            return
        remote = self.ray.remote(host_devices_up)
        for name in self.hosts:
            self.events(Phase(f"bringing up testbed devices on host {name}"))
            ref = remote.options(**self._on(name)).remote(table)
            self.made[name] = self._get(ref, name)

    def _on(self, host: str) -> dict[str, Any]:
        return {"resources": {cluster.RESOURCE_PREFIX + host: 1}, "num_cpus": 0, "max_retries": 0}

    def _get(self, ref: Any, host: str) -> Any:
        from ray.exceptions import RayError, RayTaskError

        try:
            return self.ray.get(ref)
        except RayTaskError as exc:
            raise IolabError(f"host {host}: {str(exc).strip().splitlines()[-1]}") from None
        except RayError as exc:
            raise IolabError(f"host {host} left the fleet ({type(exc).__name__})") from None

    def close(self) -> list[Task]:
        stopped = list(self.running.values())
        if self.head_gone:  # nothing can be asked of the fleet any more: its hosts' runs stop
            self.running.clear()  # with their workers, which outlive no head for long
            self.made.clear()
            return stopped
        for ref in self.running:
            self.ray.cancel(ref, force=True)
        self.running.clear()
        remote = self.ray.remote(host_devices_down)
        for name, made in self.made.items():
            if made and name not in self.gone:
                self.events(Phase(f"taking down testbed devices on host {name}"))
                try:
                    self._get(remote.options(**self._on(name)).remote(made), name)
                except IolabError as exc:
                    self.events(Warning(f"testbed devices left up: {exc}"))
        self.made.clear()
        return stopped


def hosts_for(experiment: Experiment, found: Sequence[Node], listed: Sequence[str]) -> list[Node]:
    """The hosts the experiment's runs go to: those its matrix names (``host``), else those
    ``[fleet] hosts`` lists, else every host of the fleet; each must be in the fleet."""
    alive = {n.name: n for n in found if n.alive}
    matrix = experiment.spec.matrix.get(HOST_KEY)
    wanted, where = (
        ([str(h) for h in matrix], "matrix.host")
        if matrix is not None
        else (list(listed), "fleet.hosts")
    )
    if not wanted:
        if not alive:
            raise BadInput(
                "--fleet", "no hosts", "join hosts first: iolab fleet join HEAD --name N"
            )
        return list(alive.values())
    for name in wanted:
        if name not in alive:
            raise BadInput(
                where,
                name,
                "name a host of the fleet: " + (", ".join(alive) or "(no host has joined)"),
            )
    return [alive[name] for name in dict.fromkeys(wanted)]


def preflight(ray: ModuleType, experiment: Experiment, hosts: Sequence[Node]) -> None:
    """Refuse, before any run, a host that cannot take the experiment: names the host and what
    is missing there."""
    from iolab import __version__

    remote = ray.remote(check_host)
    asked = {}
    for node in hosts:
        cells = [
            c.run_params for c in experiment.cells if c.values.get(HOST_KEY) in (None, node.name)
        ]
        asked[node.name] = remote.options(**cluster.on_node(ray, node.node_id)).remote(
            experiment.kind, cells
        )
    from ray.exceptions import GetTimeoutError, RayError

    for name, ref in asked.items():
        try:
            said = ray.get(ref, timeout=cluster.PROBE_SECONDS * 4)
        except GetTimeoutError:
            raise FleetRefused(f"fleet host {name} did not answer its check") from None
        except RayError as exc:
            raise FleetRefused(
                f"fleet host {name} could not be checked: {str(exc).strip().splitlines()[-1]}"
            ) from None
        missing = list(said["problems"])
        if said["iolab"] != __version__:
            missing.insert(0, f"iolab {said['iolab']} there, {__version__} here")
        if missing:
            raise FleetRefused(
                f"fleet host {name} cannot run this experiment: " + "; ".join(missing)
            )


def factory(
    ray: ModuleType, listed: Sequence[str]
) -> Callable[[Experiment, Store, EventSink, Callable[[str], Path]], Executor]:
    """The runner's executor factory for a connected fleet (see :func:`iolab.runner.
    experiment.run`): hosts chosen and checked before any run is claimed."""

    def make(
        experiment: Experiment, _store: Store, events: EventSink, _resolve: Callable[[str], Path]
    ) -> Executor:
        hosts = hosts_for(experiment, cluster.nodes(ray), listed)
        events(Phase(f"fleet: checking hosts {', '.join(h.name for h in hosts)}"))
        preflight(ray, experiment, hosts)
        placed = FleetExecutor(ray, experiment, hosts, events)
        try:
            placed.devices_up()
        except BaseException:
            placed.close()
            raise
        return placed

    return make
