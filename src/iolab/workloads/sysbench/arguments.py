"""The arguments of ``iolab sysbench -- SCRIPT ...``: passed to sysbench unchanged, except what
iolab owns.

iolab owns the database driver and its connection (``--db-driver``, ``--mysql-*`` and
``--pgsql-*`` host, port, socket, user, password and database: the engine's private socket;
``--mysql-dry-run``, which connects nowhere), the script and the command (``--test``, ``prepare``,
then ``run``), what is read from elsewhere (``--config-file``) and the report it reads: the
latency histogram (``--histogram`` is on), one final report (no ``--report-checkpoints``, a
``--verbosity`` that prints it). ``--report-interval`` is 1 s unless given.

The options are read as sysbench 1.0 reads them: ``--name=value`` or ``--name`` (empty), where
``-`` and ``_`` are the same letter in a name (``--mysql_socket`` is ``--mysql-socket``), names
in full and case as they are; the first word that is no option is the script, the next the
command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import BadInput
from iolab.workloads.drivers import Option, Parsed, Script, read_script, refuse_owned

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
REPORT = "iolab reads sysbench's one final report"
OWNED = {
    "--db-driver": CONNECTION,
    **dict.fromkeys(_CONNECTION_OPTIONS, CONNECTION),
    "--mysql-dry-run": "it runs nothing on the engine; leave it out",
    "--histogram": "iolab turns sysbench's latency histogram on itself; leave it out",
    "--report-checkpoints": REPORT + ", of the whole run; leave out --report-checkpoints",
    "--config-file": "iolab passes sysbench's options on its command line only; give them here",
    "--test": "give the script first, e.g. -- oltp_read_write --tables=4",
    "--help": "it runs nothing; give a run's arguments",
    "--version": "it runs nothing; give a run's arguments",
}
REPORT_VERBOSITY = 3  # sysbench prints its report from this --verbosity on
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
    """sysbench's options as sysbench reads them: every word that begins ``--`` is an option,
    named with ``_`` read as ``-`` (its value after the first ``=``, None without one); the
    other words are positional."""
    options: list[Option] = []
    positional: list[str] = []
    for word in argv:
        if not word.startswith("--"):
            positional.append(word)
            continue
        name, eq, value = word[2:].partition("=")
        options.append(Option("--" + name.replace("_", "-"), value if eq else None, (word,)))
    return Parsed(tuple(options), tuple(positional))


def args_rate(argv: Sequence[str]) -> float | None:
    """The rate (transactions per second) sysbench takes from ``argv``: its deprecated
    ``--tx-rate`` when not 0, else the last ``--rate``, 0 for unlimited; None when they give
    none it can take."""
    parsed = parse(argv)
    tx = parsed.values("--tx-rate")
    if tx and tx[-1].isdigit() and int(tx[-1]) > 0:
        return float(tx[-1])
    given = parsed.values("--rate")
    return float(given[-1]) if given and given[-1].isdigit() else None


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
        if option.name == "--":
            raise BadInput(FLAG, option.typed, "give options as --name=value")
    for option in parsed.options:  # no value is 0 to sysbench
        level = option.value or "0"
        if option.name == "--verbosity" and not (
            level.isdigit() and int(level) >= REPORT_VERBOSITY
        ):
            why = f"{REPORT}, printed from --verbosity={REPORT_VERBOSITY} on"
            raise BadInput(FLAG, option.typed, why)
    own = given in builtins() and "/" not in given
    path = str(SCRIPT_DIR / f"{given}.lua") if own else given
    if not own and "/" not in given and not given.endswith(".lua"):
        allowed = ", ".join(builtins()) or "(sysbench's scripts are not installed)"
        raise BadInput(SCRIPT_FLAG, given, f"give a Lua file or one of sysbench's: {allowed}")
    script = read_script(SCRIPT_FLAG, given, path, cwd)
    interval = [o.value or "" for o in parsed.options if o.name == "--report-interval"]
    seconds = 1.0
    if interval:
        seconds = float(interval[-1]) if interval[-1].isdigit() else 0.0
        if seconds < 1:
            raise BadInput(FLAG + " --report-interval", interval[-1], "give whole seconds, e.g. 1")
    return SysbenchArgs(script, rest, own, seconds)
