"""The arguments of ``iolab pgbench -- ...``: passed to pgbench unchanged, except what iolab owns.

iolab owns the connection (host, port, user, database: the engine's private socket), where the
per-transaction log goes (``-l`` is always on, under iolab's own prefix) and the progress report's
clock (``-P`` is on, 1 s unless given; no ``--progress-timestamp``). Initialisation belongs to
``--init-args``, the measured run to the arguments after ``--``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import BadInput
from iolab.workloads.drivers import Parsed, Script, parse_options, read_script, refuse_owned

RUN_FLAG = "pgbench arguments"  # how a refusal names the arguments after ``--``
INIT_FLAG = "--init-args"

SHORT_VALUES = "bcDfFIjLMPRstThpUd"
LONG_VALUES = (
    "--builtin",
    "--client",
    "--define",
    "--file",
    "--jobs",
    "--latency-limit",
    "--protocol",
    "--progress",
    "--rate",
    "--scale",
    "--transactions",
    "--time",
    "--aggregate-interval",
    "--log-prefix",
    "--max-tries",
    "--random-seed",
    "--sampling-rate",
    "--show-script",
    "--host",
    "--port",
    "--username",
    "--dbname",
    "--init-steps",
    "--fillfactor",
    "--index-tablespace",
    "--partition-method",
    "--partitions",
    "--tablespace",
)

CONNECTION = (
    "iolab connects pgbench to the engine's private socket; give no host, port, user or database"
)
OWNED = {
    "-h": CONNECTION,
    "--host": CONNECTION,
    "-p": CONNECTION,
    "--port": CONNECTION,
    "-U": CONNECTION,
    "--username": CONNECTION,
    "-d": CONNECTION,
    "--dbname": CONNECTION,
    "--log-prefix": "iolab keeps the -l transaction log itself; leave out --log-prefix",
    "--aggregate-interval": "iolab reads each transaction's line of the -l log; leave it out",
    "--progress-timestamp": "iolab puts the progress on the run's time axis; leave it out",
    "--show-script": "it runs nothing; give a run's arguments",
    "-V": "it runs nothing; give a run's arguments",
    "--version": "it runs nothing; give a run's arguments",
    "-?": "it runs nothing; give a run's arguments",
    "--help": "it runs nothing; give a run's arguments",
}
RUN_OWNED = OWNED | {
    "-i": "give the initialisation in --init-args, e.g. --init-args '-i -s 10'",
    "--initialize": "give the initialisation in --init-args, e.g. --init-args '-i -s 10'",
}
_WEIGHT = re.compile(r"^(?P<path>.+?)(?:@(?P<weight>\d+))?$")
DEFAULT_INIT = ("-i",)


@dataclass(frozen=True)
class PgbenchArgs:
    """A pgbench run's arguments, checked: the init's and the run's words as given, and the
    scripts the run reads (each ``-f``)."""

    init: tuple[str, ...]
    run: tuple[str, ...]
    scripts: tuple[Script, ...]
    progress_s: float  # the progress report's interval

    @property
    def run_options(self) -> Parsed:
        return parse(self.run)


def parse(argv: Sequence[str]) -> Parsed:
    return parse_options(argv, SHORT_VALUES, LONG_VALUES)


def split_init(text: str) -> tuple[str, ...]:
    """``--init-args`` as words (shell quoting), with ``-i`` added when it is not there."""
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise BadInput(INIT_FLAG, text, f"give pgbench's init arguments ({exc})") from None
    parsed = parse(words)
    return words if parsed.has("-i", "--initialize") else ("-i", *words)


def check(init: Sequence[str], run: Sequence[str], cwd: Path) -> PgbenchArgs:
    """Refuse what iolab owns, and scripts that cannot be read; read the scripts."""
    init_parsed = parse(init)
    refuse_owned(INIT_FLAG, init_parsed, OWNED)
    if init_parsed.positional:
        raise BadInput(INIT_FLAG, init_parsed.positional[-1], CONNECTION)
    run_parsed = parse(run)
    refuse_owned(RUN_FLAG, run_parsed, RUN_OWNED)
    if run_parsed.positional:
        raise BadInput(RUN_FLAG, run_parsed.positional[-1], CONNECTION)
    scripts = []
    for given in run_parsed.values("-f", "--file"):
        m = _WEIGHT.match(given)
        path = m.group("path") if m else given
        scripts.append(read_script(RUN_FLAG + " -f", given, path, cwd))
    progress = run_parsed.values("-P", "--progress")
    seconds = 1.0
    if progress:
        given = progress[-1]
        seconds = float(given) if given.isdigit() else 0.0
        if seconds < 1:
            raise BadInput(RUN_FLAG + " -P", given, "give whole seconds, e.g. -P 1")
    return PgbenchArgs(tuple(init), tuple(run), tuple(scripts), seconds)
