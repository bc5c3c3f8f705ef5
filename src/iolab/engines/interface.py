"""The Engine protocol: provision a fresh instance on a layout, run it, and remove what it made.

Lifecycle: ``provision()`` creates the instance's files on the layout (nothing runs yet),
``start()`` starts it (a server on a private unix socket only; nothing for embedded engines),
``connect()`` hands out DB-API connections, ``stop()`` stops it and ``destroy()`` removes exactly
what ``provision()`` created. Use :func:`running` to get all of that with guaranteed clean-up.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from iolab.drivercore import Target
from iolab.engines.connection import Connection
from iolab.errors import BadInput, IolabError, RunFailed
from iolab.ownership import can_write, owned_name, reap, remove
from iolab.process import tail


@dataclass(frozen=True)
class Layout:
    """Where an engine's files go.

    ``data_dirs``: one or more directories for data files; ``files``: how many data files (or
    tablespaces, partitions, attached databases) to spread round-robin over ``data_dirs``;
    ``wal_dir``: where the WAL / redo log goes (None: the engine's default, beside the data);
    ``temp_dir``: where temporary files go (None: default); ``settings``: engine settings by name.
    Directories are made absolute (from the current directory) when the layout is made: engines
    hand them to servers that run elsewhere (initdb refuses a relative ``--waldir``).
    """

    data_dirs: tuple[Path, ...]
    files: int = 1
    wal_dir: Path | None = None
    temp_dir: Path | None = None
    settings: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dirs", tuple(Path(d).absolute() for d in self.data_dirs))
        for name in ("wal_dir", "temp_dir"):
            path = getattr(self, name)
            if path is not None:
                object.__setattr__(self, name, Path(path).absolute())

    def named_dirs(self) -> list[tuple[str, Path]]:
        """Every directory of the layout with the option that names it, for messages."""
        named = [("--data-dir", d) for d in self.data_dirs]
        if self.wal_dir is not None:
            named.append(("--wal-dir", self.wal_dir))
        if self.temp_dir is not None:
            named.append(("--temp-dir", self.temp_dir))
        return named

    def roles(self) -> dict[str, Path]:
        """Role -> directory (``data0``, ``data1``, ..., ``wal``, ``temp``): what a run's
        environment snapshot describes."""
        roles = {f"data{i}": d for i, d in enumerate(self.data_dirs)}
        if self.wal_dir is not None:
            roles["wal"] = self.wal_dir
        if self.temp_dir is not None:
            roles["temp"] = self.temp_dir
        return roles

    def data_dir_for(self, index: int) -> Path:
        """The data directory of data file ``index`` (0-based), round-robin."""
        return self.data_dirs[index % len(self.data_dirs)]


@dataclass(frozen=True)
class Placement:
    """What an engine placed where, by role. Every path here was created by the engine."""

    data: tuple[Path, ...]  # one per data file / tablespace / partition / attached database
    wal: Path | None
    temp: Path | None
    log: Path | None  # the server log, kept with the run
    created: tuple[Path, ...]  # every top-level path provision() created, removed by destroy()


class Engine(Protocol):
    name: ClassVar[str]
    title: ClassVar[str]  # its name in messages: "PostgreSQL"

    @property
    def layout(self) -> Layout: ...

    def provision(self) -> Placement:
        """Create a fresh instance on the layout. Refuses directories holding foreign files."""
        ...

    def start(self) -> None:
        """Start the server (unix socket in a private directory only) and wait until it accepts."""
        ...

    def connect(self) -> Connection:
        """A new DB-API 2 connection to the instance's benchmark database."""
        ...

    def load_connect(self) -> Connection:
        """A connection for a bulk load: on MariaDB one that may send the client's files
        (``LOAD DATA LOCAL INFILE``); elsewhere the same as :meth:`connect`."""
        ...

    def core_target(self) -> Target | None:
        """The server as the compiled driver core reaches it (its client library, connection
        parameters and error wording: drivercore.Target); None for an engine it does not
        drive (the embedded ones)."""
        ...

    def spaces(self) -> list[str]:
        """Where a workload's tables go, one per data file of the layout, in the engine's own
        terms: PostgreSQL tablespaces, MariaDB data directories, SQLite schemas, DuckDB
        catalogs (a server iolab does not manage: its database's own, or none)."""
        ...

    def version(self) -> str: ...

    def effective_settings(self) -> dict[str, str]:
        """The settings in force, as the engine reports them (not just what was asked)."""
        ...

    def stop(self) -> None:
        """Stop the server if it runs; safe to call twice."""
        ...

    def died(self) -> str | None:
        """How its server ended when iolab did not stop it ("signal 9"); None while it runs,
        after a stop, and for an embedded engine."""
        ...

    def destroy(self) -> None:
        """Remove what provision() created, nothing else; safe to call twice."""
        ...


class Provisioned(ABC):
    """The bookkeeping every engine shares: the guard against provisioning one engine twice, and
    :meth:`destroy`, which removes exactly what ``provision()`` recorded in ``_created``."""

    title: ClassVar[str]  # the engine's name in messages: "PostgreSQL"

    def __init__(self) -> None:
        self._created: list[Path] = []  # every top-level path provision() made, in order
        self._placement: Placement | None = None

    def _begin_provision(self) -> None:
        if self._placement is not None or self._created:
            raise IolabError(f"this {self.title} engine is already provisioned; use a new one")

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def connect(self) -> Connection: ...

    def load_connect(self) -> Connection:
        return self.connect()

    def _halt(self) -> None:
        """Stop for good, at once: what :meth:`destroy` removes next needs no clean shutdown (a
        server overrides it; :meth:`stop` for an engine without one)."""
        self.stop()

    def destroy(self) -> None:
        """Halt, then remove exactly what provision() created; safe to call twice."""
        self._halt()
        self._created = remove(self._created)
        if self._created:
            left = ", ".join(str(p) for p in self._created)
            raise IolabError(f"could not remove what {self.title} left: {left}; remove it by hand")


@dataclass(frozen=True)
class FilePlan:
    """Where an embedded engine's files go: one owned directory per data dir used, the
    database files in them round-robin, and an owned temp directory (nothing created yet)."""

    homes: tuple[Path, ...]
    files: tuple[Path, ...]
    temp: Path | None


def plan_files(
    layout: Layout, kind_data: str, kind_temp: str, file_name: Callable[[int], str]
) -> FilePlan:
    """Reap what killed runs of these kinds left in the layout's dirs, then name the new files."""
    user_dirs = [*layout.data_dirs, layout.temp_dir]
    for directory in dict.fromkeys(d for d in user_dirs if d is not None):
        for kind in (kind_data, kind_temp):
            reap(directory, kind)
    homes: dict[Path, Path] = {}
    for i in range(layout.files):
        data_dir = layout.data_dir_for(i)
        if data_dir not in homes:
            homes[data_dir] = data_dir / owned_name(kind_data)
    temp = None if layout.temp_dir is None else layout.temp_dir / owned_name(kind_temp)
    files = tuple(homes[layout.data_dir_for(i)] / file_name(i) for i in range(layout.files))
    return FilePlan(tuple(homes.values()), files, temp)


def check_dirs(named: list[tuple[str, Path]]) -> None:
    """Each directory must exist, be a directory, and really take a new file."""
    for field_name, directory in named:
        if not directory.exists():
            raise BadInput(field_name, str(directory), "give an existing directory")
        if not directory.is_dir():
            raise BadInput(field_name, str(directory), "give a directory, not a file")
        reason = can_write(directory)
        if reason is not None:
            raise BadInput(
                field_name, str(directory), f"give a directory you can write to ({reason})"
            )


_SEVERITIES = ("PANIC", "FATAL", "ERROR")  # the worst first: a PANIC is the cause of what follows


def first_error(text: str) -> str | None:
    """A server log's first line of its worst severity (PostgreSQL's ``PANIC:``, ``FATAL:``,
    ``ERROR:``; MariaDB's ``[ERROR]``), or None: the cause, where the log's end shows what
    followed (a crash recovery that failed too)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for severity in _SEVERITIES:
        marks = (f"{severity}:", f"[{severity}]")
        found = next((ln for ln in lines if any(m in ln for m in marks)), None)
        if found is not None:
            return found
    return None


def _stopped_during(server: str, how: str, log: Path | None, what: str) -> str:
    """The one-line reason of a run whose server died: how, the log's first error, and the
    end of its log."""
    try:
        text = log.read_text(errors="replace") if log is not None else ""
    except OSError:
        text = ""
    end = tail(text, 5)
    first = first_error(text)
    shown = end if first is None or first in end else f"{first} | ... | {tail(text, 4)}"
    return f"the {server} server stopped during {what} ({how}); its log: {shown}"


@contextmanager
def running(engine: Engine, what: str | Callable[[], str] = "the run") -> Iterator[Placement]:
    """Provision and start an engine; stop and destroy it however the block ends.

    An error inside the block while the server died under it (a crash, the OOM killer, a
    SIGKILL) becomes one line: how the server ended during ``what`` (or what ``what()`` says
    then: the step the run was in), its log's first error and the end of its log.
    What cannot be removed after such an error (a device that fails its writes) is said after
    it, not instead of it.
    """
    failure: IolabError | None = None
    try:
        placement = engine.provision()
        engine.start()
        try:
            yield placement
        except Exception:
            how = engine.died()
            if how is None:
                raise
            step = what() if callable(what) else what
            raise RunFailed(_stopped_during(engine.title, how, placement.log, step)) from None
    except IolabError as exc:
        failure = None if isinstance(exc, BadInput) else exc
        raise
    finally:
        try:
            engine.destroy()  # a server is halted, not shut down cleanly: its files go next
        except IolabError as left:
            if failure is None:
                raise
            raise RunFailed(f"{failure}; then {left}") from failure


IGNORED_ENTRIES = frozenset({"lost+found", ".gitkeep"})  # a fresh filesystem; a kept empty dir


def check_layout(layout: Layout) -> None:
    """Each directory of the layout must exist, be writable and hold nothing but iolab's own
    entries, so that a run never mixes with (or measures around) someone else's files."""
    named = layout.named_dirs()
    check_dirs(named)
    for field_name, path in named:
        foreign = sorted(
            p.name
            for p in path.iterdir()
            if p.name not in IGNORED_ENTRIES and not p.name.startswith(".iolab-")
        )
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise BadInput(
                field_name,
                str(path),
                f"give an empty directory; it holds files iolab did not create ({shown})",
            )
