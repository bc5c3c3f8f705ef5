"""What the field's own drivers (pgbench, sysbench) share when iolab runs them on a layout.

A driver is a benchmark program of the user's choice: iolab hands it its arguments unchanged,
except the connection, which iolab owns (the engine's private socket, its user and database),
keeps the scripts it runs with the run (their text and SHA-256), starts it tied to iolab's life
(:mod:`iolab.system.launch`: it dies with iolab, even by SIGKILL), records the probes underneath
while it runs, and turns its per-interval progress lines into probe series on the probes' time
axis. Each driver's package parses its own output (:mod:`iolab.workloads.pgbench`,
:mod:`iolab.workloads.sysbench`).
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from iolab.engines.interface import Engine, Placement
from iolab.errors import BadInput, MissingTool, RunFailed
from iolab.events import EventSink
from iolab.input_files import read_text
from iolab.metrics import C, L, Metric, R, T, declare
from iolab.probes.data import Series
from iolab.probes.devices import DeviceProbe
from iolab.probes.host import HostProbe
from iolab.probes.interface import Kind, Probe, SeriesKey
from iolab.probes.recorder import Recorder
from iolab.probes.standard import engine_probes, placement_roles
from iolab.process import Completed, run, tail
from iolab.system import launch
from iolab.workloads.interface import Section, duration_check

TOOL_LINES = 8  # the tool's own last lines in a failed run's error
NO_INIT = (
    "the engine iolab provisions is empty, so its initialisation is what the run needs: give "
    "--no-init (a file's init = false) only with --dsn, a server of yours that holds the data"
)

# The numbers both drivers record (each driver's metrics.py adds its own).
METRICS: tuple[Metric, ...] = (
    declare("tps", "tx/s", R, False, "transactions per second, as the tool printed it"),
    declare("latency_avg_ms", "ms", L, True, "average transaction latency, as the tool printed it"),
    declare("failed", "tx", C, True, "transactions that failed"),
    declare("init_seconds", "s", T, True, "time of pgbench -i / sysbench prepare"),
)


def _whole_seconds(value: float | None) -> float | None:
    """The drivers take whole seconds (pgbench -T, sysbench --time)."""
    if value is not None and value != int(value):
        raise ValueError('give whole seconds, e.g. 30 or "5min"')
    return value


def _duration(value: str | float | None) -> float | None:
    return None if value is None else duration_check(0.0, strict=True)(value)


class DriverWorkload(Section):
    """What pgbench's and sysbench's options share: the keys people vary, as named matrix keys,
    the rest of the tool's arguments as given (``args``), and ``init = false`` for no
    initialisation (the database already holds what the run needs)."""

    threads: int | None = Field(default=None, ge=1)
    duration: Annotated[
        float | None, BeforeValidator(_duration), AfterValidator(_whole_seconds)
    ] = None
    # the run's offered load, transactions/s, as the tool takes it (a rate in ``args`` too)
    rate: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    args: list[str] = Field(default_factory=list)
    init: bool = True
    pg_bin: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _offered_rate(cls, data: Any) -> Any:
        """``rate`` is the rate the tool runs at, one given among ``args`` included (after the
        named keys on its command line): stored with the run's parameters as populate's and
        tpcc's ``rate`` are, it is the offered load the diagnosis weighs."""
        if not isinstance(data, dict):
            return data
        args, rate = data.get("args"), data.get("rate")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            return data  # the fields' own validation says what is wrong
        if isinstance(rate, bool) or not (rate is None or isinstance(rate, int | float)):
            return data
        return {**data, "rate": cls.offered_rate(rate, args)}

    @classmethod
    def offered_rate(cls, rate: float | None, args: Sequence[str]) -> float | None:
        """The rate the tool takes from the named ``rate`` and then ``args``: the named one
        unless ``args`` give one the tool reads (each driver knows its own)."""
        return rate


@dataclass(frozen=True)
class Script:
    """A script file a driver runs, as it was when the run started."""

    given: str  # as on the tool's command line: ``app.sql@5``
    path: Path  # absolute
    sha256: str
    text: str

    def stored(self) -> dict[str, str]:
        """What the run's summary keeps of it (the text goes to the run's logs)."""
        return {"given": self.given, "path": str(self.path), "sha256": self.sha256}

    @property
    def log_name(self) -> str:
        return f"script {self.path.name}"


def read_script(flag: str, given: str, path: str, cwd: Path) -> Script:
    """The script ``path`` (relative to ``cwd``, where the tool runs), read once: a missing,
    unreadable or oversized file is refused naming ``flag`` and what was given."""
    full = Path(path) if Path(path).is_absolute() else cwd / path
    text = read_text(full, flag, "script file")
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Script(given, full.absolute(), digest, text)


@dataclass(frozen=True)
class Option:
    """One option as the user gave it: ``name``, the tool's own name for it (``--client``, for
    ``-c4`` as for ``--cl=4``), its value (None for a flag) and the words it took on the
    command line, as typed."""

    name: str
    value: str | None
    words: tuple[str, ...]

    @property
    def typed(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Parsed:
    options: tuple[Option, ...]
    positional: tuple[str, ...]
    ended: bool = False  # a ``--`` ended the options

    def values(self, *names: str) -> list[str]:
        """The values given to any of ``names``, in order."""
        return [o.value for o in self.options if o.name in names and o.value is not None]

    def has(self, *names: str) -> bool:
        return any(o.name in names for o in self.options)


@dataclass(frozen=True)
class Getopt:
    """A tool's options as glibc's ``getopt_long`` reads them: each by its long name, with its
    short letter (if any) and whether it takes a value. ``tool`` names the tool in refusals."""

    tool: str
    options: tuple[tuple[str, str | None, bool], ...]  # (long name, short letter, takes a value)

    def long(self, flag: str, word: str, name: str) -> tuple[str, bool]:
        """The option a long ``--name`` stands for, as getopt_long takes it: its exact name, or
        the one option the name begins (an abbreviation); several is ambiguous, none unknown."""
        exact = [(n, v) for n, _, v in self.options if n == name]
        if exact:
            return "--" + exact[0][0], exact[0][1]
        found = [(n, v) for n, _, v in self.options if name and n.startswith(name)]
        if len(found) == 1:
            return "--" + found[0][0], found[0][1]
        if found:
            names = ", ".join("--" + n for n, _ in found)
            raise BadInput(flag, word, f"{self.tool} reads it as any of {names}; give one in full")
        raise BadInput(flag, word, f"{self.tool} has no such option")

    def short(self, flag: str, word: str, letter: str) -> tuple[str, bool]:
        for n, s, v in self.options:
            if s == letter:
                return "--" + n, v
        raise BadInput(flag, word, f"{self.tool} has no option -{letter}")

    def parse(self, flag: str, argv: Sequence[str]) -> Parsed:
        """Split ``argv`` as the tool's getopt_long does: short options alone or clustered
        (``-nS``), a short option's value in the same word or the next (``-c4``, ``-c 4``), long
        options in full or abbreviated (``--cl=4``, ``--client 4``); a value is the next word
        whatever it looks like; words that are no option are positional wherever they are, and
        ``--`` ends the options. An option the tool would refuse is refused here (BadInput on
        ``flag``): unknown, ambiguous, missing its value or given one it does not take."""
        options: list[Option] = []
        positional: list[str] = []
        i = 0
        while i < len(argv):
            word = argv[i]
            i += 1
            if word == "--":
                return Parsed(tuple(options), (*positional, *argv[i:]), ended=True)
            if word.startswith("--"):
                given, eq, value = word[2:].partition("=")
                name, takes = self.long(flag, word, given)
                if not takes:
                    if eq:
                        raise BadInput(flag, word, f"{name} takes no value")
                    options.append(Option(name, None, (word,)))
                elif eq:
                    options.append(Option(name, value, (word,)))
                elif i < len(argv):
                    options.append(Option(name, argv[i], (word, argv[i])))
                    i += 1
                else:
                    raise BadInput(flag, word, f"{name} needs a value")
                continue
            if not word.startswith("-") or word == "-":
                positional.append(word)
                continue
            for j in range(1, len(word)):
                name, takes = self.short(flag, word, word[j])
                if not takes:
                    options.append(Option(name, None, (word,)))
                    continue
                rest = word[j + 1 :]
                if rest:
                    options.append(Option(name, rest, (word,)))
                elif i < len(argv):
                    options.append(Option(name, argv[i], (word, argv[i])))
                    i += 1
                else:
                    raise BadInput(flag, word, f"-{word[j]} ({name}) needs a value")
                break
        return Parsed(tuple(options), tuple(positional))


def refuse_owned(flag: str, parsed: Parsed, owned: Mapping[str, str]) -> None:
    """Refuse an option iolab sets itself (``owned``: the tool's name for it -> what iolab
    does instead), with one line naming the option as typed."""
    for option in parsed.options:
        why = owned.get(option.name)
        if why is not None:
            raise BadInput(flag, option.typed, why)


def tool_path(program: str, package: str) -> str:
    """A driver on PATH, or MissingTool naming the Debian package that has it."""
    found = shutil.which(program)
    if found is None:
        raise MissingTool(program, f"apt-get install {package}")
    return found


class ToolFailed(RunFailed):
    """A driver exited non-zero: its own last lines in the message, all it printed in
    ``output`` (kept with the failed run)."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


def run_tool(
    argv: Sequence[str | Path], *, cwd: Path, env: Mapping[str, str], what: str
) -> Completed:
    """Run a driver to its end, tied to iolab's life (it gets SIGKILL when iolab dies; SIGINT,
    then SIGKILL, when iolab is interrupted). A non-zero exit fails the run with the tool's own
    last lines."""
    args = launch.command(argv, death_signal="KILL")
    done = run(args, check=False, cwd=cwd, env=env, stop_signal=signal.SIGINT)
    if done.returncode != 0:  # its errors are on stderr, its report (if any) on stdout
        said = tail(done.stderr if done.stderr.strip() else done.stdout, TOOL_LINES)
        message = f"{what} failed (exit {done.returncode}): {said}"
        raise ToolFailed(message, done.stdout + done.stderr)
    return done


def tool_env(**extra: str) -> dict[str, str]:
    """A small, predictable environment for a driver: no PG* or MYSQL_* variables of the
    caller's (iolab gives the connection on the command line), and the C locale so that its
    numbers are printed as parsed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
    if "TZ" in os.environ:
        env["TZ"] = os.environ["TZ"]
    return env | extra


def driver_recorder(
    engine: Engine, placement: Placement, interval: float | None, events: EventSink
) -> Recorder | None:
    """The probes under a driver's measured run: its devices by role, the host and the engine's
    counters, checkpoints and waits (all sessions: the driver's are not iolab's connections);
    None when probes are off."""
    if interval is None:
        return None
    probes: list[Probe] = [
        DeviceProbe(placement_roles(placement)),
        HostProbe(),
        *engine_probes(engine, placement, None),
    ]
    return Recorder(probes, interval=interval, events=events)


@dataclass(frozen=True)
class Progress:
    """One progress line of a driver: the interval ending ``t`` seconds after the tool's start,
    its length, and its numbers by name (``tps``, ``latency_ms``, ...)."""

    t: float
    seconds: float
    values: Mapping[str, float]


@dataclass(frozen=True)
class Quantity:
    """How a progress number becomes a series: its unit, and whether it is a rate (summed over
    the run: transactions) or a mean weighted by the interval's transactions (latency)."""

    name: str
    unit: str
    rate: bool


def progress_series(
    probe: str,
    lines: Sequence[Progress],
    quantities: Sequence[Quantity],
    offset: float,
    weight: str = "tps",
) -> list[Series]:
    """The progress lines as series on the probes' time axis (``offset``: when the tool
    started, seconds after the recorder's t0). A rate's total is the sum of value x interval
    (transactions); a mean is weighted by each interval's ``weight`` x interval."""
    if not lines:
        return []
    step = lines[0].seconds
    out: list[Series] = []
    for q in quantities:
        values = [float(p.values.get(q.name, math.nan)) for p in lines]
        finite = [(v, p) for v, p in zip(values, lines, strict=True) if not math.isnan(v)]
        if not finite:
            continue
        if q.rate:
            num = sum(v * p.seconds for v, p in finite)
            den = sum(p.seconds for _, p in finite)
            kind = Kind.RATE
        else:
            weights = [p.values.get(weight, 0.0) * p.seconds for _, p in finite]
            num = sum(v * w for (v, _), w in zip(finite, weights, strict=True))
            den = sum(weights)
            kind = Kind.RATIO
        out.append(
            Series(
                key=SeriesKey(probe, q.name, q.unit, kind),
                t0=offset + lines[0].t,
                interval=step,
                end_s=offset + lines[-1].t,
                n=len(values),
                total_num=num,
                total_den=den,
                peak=max(v for v, _ in finite),
                values=values,
            )
        )
    return out


class Disagree(RunFailed):
    """What iolab read of a tool's run (its log, histogram or progress lines) is not what the
    tool itself reported: none of it is stored as the run's numbers."""


def agree(tool: str, source: str, what: str, ours: float, theirs: float, slack: float) -> None:
    """Fail the run (:class:`Disagree`) when ``ours``, read from the tool's ``source``, differs
    from ``theirs``, its own final report, by more than ``slack``."""
    if not abs(ours - theirs) <= slack:
        raise Disagree(
            f"{tool}: {what} {ours:,.6g} in its {source}, {theirs:,.6g} in its report; iolab "
            "stores no numbers it cannot match with the tool's own (did an argument change "
            "what it logs or prints?)"
        )


def agree_progress(
    tool: str, lines: Sequence[Progress], rate: str, total: float, digits: int
) -> None:
    """The progress lines' count of ``rate`` (transactions: value x interval, each value
    printed to ``digits`` decimals) is at most the tool's ``total``, within the printing's
    rounding and 5 % for the intervals' clock (the rest of the run is added by
    :func:`with_tail`)."""
    if not lines:
        return
    done = sum(p.values.get(rate, 0.0) * p.seconds for p in lines)
    rounding = sum(p.seconds for p in lines) * 0.5 * 10.0**-digits
    if done > total:
        agree(tool, "progress lines", "transactions", done, total, 0.05 * total + rounding + 1)


def with_tail(lines: Sequence[Progress], rate: str, total: float, end: float) -> list[Progress]:
    """The progress lines and, where the tool ended between two of them (its last interval is
    never reported), one shorter last interval holding the rest of the tool's own ``total`` of
    ``rate`` (transactions) up to ``end`` (seconds after the tool's start): so the series adds
    up to the tool's count. Nothing is added for less than a hundredth of a second."""
    out = list(lines)
    last = out[-1].t if out else 0.0
    seconds = end - last
    if seconds < 0.01:
        return out
    done = sum(p.values.get(rate, 0.0) * p.seconds for p in out)
    out.append(Progress(end, seconds, {rate: max(0.0, total - done) / seconds}))
    return out
