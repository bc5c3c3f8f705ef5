"""The arguments of ``iolab sysbench -- SCRIPT ...``: passed to sysbench unchanged, except what
iolab owns.

iolab owns the database driver and its connection (``--db-driver``, ``--mysql-*`` and
``--pgsql-*`` host, port, socket, user, password and database: the engine's private socket), the
command (``prepare``, then ``run``) and the latency histogram (``--histogram`` is on).
``--report-interval`` is 1 s unless given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import BadInput
from iolab.workloads.drivers import Parsed, Script, parse_options, read_script, refuse_owned

FLAG = "sysbench arguments"
SCRIPT_FLAG = "sysbench SCRIPT"
SCRIPT_DIR = Path("/usr/share/sysbench")  # Debian's sysbench keeps its own scripts here

CONNECTION = (
    "iolab connects sysbench to the engine's private socket; give no driver, host, port, "
    "socket, user, password or database"
)
_CONNECTION_OPTIONS = [
    f"--{driver}-{what}"
    for driver in ("mysql", "pgsql")
    for what in ("host", "port", "socket", "user", "password", "db")
]
OWNED = {
    "--db-driver": CONNECTION,
    **dict.fromkeys(_CONNECTION_OPTIONS, CONNECTION),
    "--histogram": "iolab turns sysbench's latency histogram on itself; leave it out",
    "--help": "it runs nothing; give a run's arguments",
    "--version": "it runs nothing; give a run's arguments",
}
COMMANDS = ("prepare", "run", "cleanup", "help", "prewarm")


@dataclass(frozen=True)
class SysbenchArgs:
    """A sysbench run's arguments, checked: the script as given and read, the options."""

    script: Script
    args: tuple[str, ...]  # after SCRIPT
    builtin: bool  # one of sysbench's own scripts
    report_s: float

    @property
    def name(self) -> str:
        return self.script.given


def builtins() -> list[str]:
    """sysbench's own database scripts (``oltp_read_write``, ...)."""
    if not SCRIPT_DIR.is_dir():
        return []
    return sorted(p.stem for p in SCRIPT_DIR.glob("*.lua") if p.stem != "oltp_common")


def parse(argv: Sequence[str]) -> Parsed:
    return parse_options(argv, "", ())


def check(words: Sequence[str], cwd: Path) -> SysbenchArgs:
    """The script (first word) and its options: refuse what iolab owns, a script that cannot be
    read, and sysbench commands (iolab runs ``prepare``, then ``run``)."""
    if not words or words[0].startswith("-"):
        raise BadInput(
            SCRIPT_FLAG, None, "give the script first, e.g. -- oltp_read_write --tables=4"
        )
    given, rest = words[0], tuple(words[1:])
    parsed = parse(rest)
    refuse_owned(FLAG, parsed, OWNED)
    for before, word in zip(("", *rest), rest, strict=False):
        bare = before.startswith("--") and "=" not in before
        if bare and not word.startswith("-") and word not in COMMANDS:
            raise BadInput(FLAG, f"{before} {word}", f"sysbench takes {before}={word}")
    for word in parsed.positional:
        if word in COMMANDS:
            raise BadInput(FLAG, word, "iolab runs prepare, then run; give neither")
        raise BadInput(FLAG, word, "give options as --name=value")
    for option in parsed.options:
        if not option.name.startswith("--"):
            raise BadInput(FLAG, " ".join(option.words), "give options as --name=value")
    own = given in builtins() and "/" not in given
    path = str(SCRIPT_DIR / f"{given}.lua") if own else given
    if not own and "/" not in given and not given.endswith(".lua"):
        allowed = ", ".join(builtins()) or "(sysbench's scripts are not installed)"
        raise BadInput(SCRIPT_FLAG, given, f"give a Lua file or one of sysbench's: {allowed}")
    script = read_script(SCRIPT_FLAG, given, path, cwd)
    interval = parsed.values("--report-interval")
    seconds = 1.0
    if interval:
        seconds = float(interval[-1]) if interval[-1].isdigit() else 0.0
        if seconds < 1:
            raise BadInput(FLAG + " --report-interval", interval[-1], "give whole seconds, e.g. 1")
    return SysbenchArgs(script, rest, own, seconds)
