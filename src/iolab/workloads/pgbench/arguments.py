"""The arguments of ``iolab pgbench -- ...``: passed to pgbench unchanged, except what iolab owns.

iolab owns the connection (host, port, user, database: the engine's private socket), the
per-transaction log (``-l`` is always on, every transaction under iolab's own prefix: no
``--log-prefix``, ``--aggregate-interval`` or ``--sampling-rate``) and the progress report's
clock (``-P`` is on, 1 s unless given; no ``--progress-timestamp``). Initialisation belongs to
``--init-args``, the measured run to the arguments after ``--``. The arguments are read as
pgbench reads them (:class:`iolab.workloads.drivers.Getopt`): ``--ho=/tmp`` is ``--host``.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import BadInput
from iolab.workloads.drivers import Getopt, Parsed, Script, read_script, refuse_owned

RUN_FLAG = "pgbench arguments"  # how a refusal names the arguments after ``--``
INIT_FLAG = "--init-args"

# pgbench's options as its getopt_long reads them (PostgreSQL 18's pgbench.c): long name, short
# letter, whether it takes a value. An abbreviation is read as the one option it begins, so it is
# refused like the option it stands for; one pgbench does not know is refused too (it would be
# an abbreviation of nothing, or of an option a later pgbench adds).
OPTIONS = Getopt(
    "pgbench",
    (
        ("builtin", "b", True),
        ("client", "c", True),
        ("connect", "C", False),
        ("dbname", "d", True),
        ("define", "D", True),
        ("file", "f", True),
        ("fillfactor", "F", True),
        ("host", "h", True),
        ("initialize", "i", False),
        ("init-steps", "I", True),
        ("jobs", "j", True),
        ("log", "l", False),
        ("latency-limit", "L", True),
        ("no-vacuum", "n", False),
        ("port", "p", True),
        ("progress", "P", True),
        ("protocol", "M", True),
        ("quiet", "q", False),
        ("report-per-command", "r", False),
        ("rate", "R", True),
        ("scale", "s", True),
        ("select-only", "S", False),
        ("skip-some-updates", "N", False),
        ("time", "T", True),
        ("transactions", "t", True),
        ("username", "U", True),
        ("vacuum-all", "v", False),
        ("unlogged-tables", None, False),
        ("tablespace", None, True),
        ("index-tablespace", None, True),
        ("sampling-rate", None, True),
        ("aggregate-interval", None, True),
        ("progress-timestamp", None, False),
        ("log-prefix", None, True),
        ("foreign-keys", None, False),
        ("random-seed", None, True),
        ("show-script", None, True),
        ("partitions", None, True),
        ("partition-method", None, True),
        ("failures-detailed", None, False),
        ("max-tries", None, True),
        ("verbose-errors", None, False),
        ("exit-on-abort", None, False),
        ("debug", None, False),
    ),
)

CONNECTION = (
    "iolab connects pgbench to the engine's private socket; give no host, port, user or database"
)
ENDED = "iolab gives pgbench its connection after these arguments; leave out --"
LOG = "iolab reads every transaction's line of the -l log it keeps itself"
OWNED = {
    "--host": CONNECTION,
    "--port": CONNECTION,
    "--username": CONNECTION,
    "--dbname": CONNECTION,
    "--log-prefix": LOG + "; leave out --log-prefix",
    "--aggregate-interval": LOG + "; leave out --aggregate-interval",
    "--sampling-rate": LOG + "; leave out --sampling-rate",
    "--progress-timestamp": "iolab puts the progress on the run's time axis; leave it out",
    "--show-script": "it runs nothing; give a run's arguments",
}
RUN_OWNED = OWNED | {
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


def parse(argv: Sequence[str], flag: str = RUN_FLAG) -> Parsed:
    """pgbench's arguments as pgbench reads them (BadInput on ``flag`` where it would not)."""
    return OPTIONS.parse(flag, argv)


def args_rate(argv: Sequence[str]) -> float | None:
    """The rate (-R, transactions per second) pgbench takes from ``argv`` (the last given),
    None when it gives none it can take (:func:`check` refuses a bad one)."""
    try:
        given = parse(argv).values("--rate")
    except BadInput:
        return None
    return rate_of(given[-1]) if given else None


def rate_of(text: str) -> float | None:
    """A rate as given, if it is a finite number of transactions per second above 0."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def split_init(text: str) -> tuple[str, ...]:
    """``--init-args`` as words (shell quoting), with ``-i`` added when it is not there."""
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise BadInput(INIT_FLAG, text, f"give pgbench's init arguments ({exc})") from None
    parsed = parse(words, INIT_FLAG)
    return words if parsed.has("--initialize") else ("-i", *words)


def check(init: Sequence[str], run: Sequence[str], cwd: Path) -> PgbenchArgs:
    """Refuse what iolab owns, and scripts that cannot be read; read the scripts."""
    init_parsed = parse(init, INIT_FLAG)
    refuse_owned(INIT_FLAG, init_parsed, OWNED)
    if init_parsed.ended:
        raise BadInput(INIT_FLAG, "--", ENDED)
    if init_parsed.positional:
        raise BadInput(INIT_FLAG, init_parsed.positional[-1], CONNECTION)
    run_parsed = parse(run)
    refuse_owned(RUN_FLAG, run_parsed, RUN_OWNED)
    if run_parsed.ended:
        raise BadInput(RUN_FLAG, "--", ENDED)
    if run_parsed.positional:
        raise BadInput(RUN_FLAG, run_parsed.positional[-1], CONNECTION)
    scripts = []
    if "list" in run_parsed.values("--builtin"):
        raise BadInput(RUN_FLAG + " -b", "list", "it lists pgbench's scripts and runs nothing")
    for given in run_parsed.values("--file"):
        m = _WEIGHT.match(given)
        path = m.group("path") if m else given
        scripts.append(read_script(RUN_FLAG + " -f", given, path, cwd))
    for given in run_parsed.values("--rate"):
        if rate_of(given) is None:
            raise BadInput(RUN_FLAG + " -R", given, "give transactions per second, e.g. -R 20")
    progress = run_parsed.values("--progress")
    seconds = 1.0
    if progress:
        given = progress[-1]
        seconds = float(given) if given.isdigit() else 0.0
        if seconds < 1:
            raise BadInput(RUN_FLAG + " -P", given, "give whole seconds, e.g. -P 1")
    return PgbenchArgs(tuple(init), tuple(run), tuple(scripts), seconds)
