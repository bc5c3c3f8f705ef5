"""The check of a verdict: the run again with its named limit relieved (docs/diagnosis.md,
"The check").

A verdict says what limited a run; the check tests it as the seeds' authors did: move the
log to a faster device and see whether the run moves. Here are the rules of it, without I/O:
which relief each verdict gets (:func:`reliefs`), and what the figures of the re-runs say
(:func:`judge`): confirmed, refuted or unknown, in one sentence with the ratio and its 95 %
interval. :mod:`iolab.runner.whycheck` runs the re-runs and stores the result.

- a device role (``data``, ``wal``, ``temp``) and a ``*-latency`` verdict: that role's
  directory on a RAM-backed directory; a WAL an engine keeps beside its data (SQLite) moves
  with the data directory;
- ``client``: the compiled driver core where the run ran the Python one and the core runs the
  load, else the workload's server mode (the load's loop inside the engine);
- ``memory``: the run's memory cap lifted;
- ``cpu``: the other direction: the CPU cap halved must cost about half (the rate falls to
  0.4-0.65 of before);
- ``none`` with candidates: each candidate relieved in turn, the one that moved named;
- anything else (contention, an offered rate, ``none`` without a candidate): cannot check,
  which counts as unknown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from iolab.analysis import diagnosis as dx
from iolab.analysis.stats import compare

Outcome = Literal["confirmed", "refuted", "unknown"]
CONFIRMED: Final = "confirmed"
REFUTED: Final = "refuted"
UNKNOWN: Final = "unknown"
MEMORY = "memory"  # a memory cap's verdict (the relief: the cap lifted)

# A relief that moved the run by at least this much (and its interval excludes 1) confirms
# the verdict: the relieved resource held the run.
MOVED = 1.10
# A limit relieved moves the run at least this much (issue 46's bar): an interval wholly
# below it refutes the verdict, the relieved resource was not what held the run.
LIMIT_GAIN = 1.30
# The CPU cap halved: a CPU-bound run falls to about half; confirmed in this range ...
HALVED = (0.40, 0.65)
# ... refuted when the interval lies wholly above its top (halving the CPUs cost little)

# the verdict (or candidate) -> the words of the resource, as the sentences say it
NAMES = {
    dx.WAL: "the WAL device",
    dx.WAL_LATENCY: "the WAL device's latency",
    dx.DATA: "the data device",
    dx.DATA_LATENCY: "the data device's latency",
    dx.TEMP: "the temp device",
    dx.CPU: "the CPU",
    dx.CLIENT: "the client",
    dx.CONTENTION: "contention",
    dx.RATE: "the offered rate",
    MEMORY: "memory",
}
RAM_ROLE = {
    dx.WAL: "wal",
    dx.WAL_LATENCY: "wal",
    dx.DATA: "data",
    dx.DATA_LATENCY: "data",
    dx.TEMP: "temp",
}


@dataclass(frozen=True)
class Relief:
    """How a verdict's limit is relieved in the re-runs: parameters changed (``changes``;
    ``ram``: the roles whose directories go on a RAM-backed directory, filled in when it is
    made), environment variables set (``env``; ``base_env``: pinned for the runs as they
    were, so that they run as the original did), and the words of it."""

    limit: str
    what: str  # "the WAL directory on a RAM-backed directory"
    changes: Mapping[str, Any] = field(default_factory=dict)
    ram: tuple[str, ...] = ()  # "data", "wal", "temp"
    env: Mapping[str, str] = field(default_factory=dict)
    base_env: Mapping[str, str] = field(default_factory=dict)
    halves: bool = False  # the CPU's check: the cap halved must cost about half

    @property
    def name(self) -> str:
        return NAMES.get(self.limit, self.limit)

    def document(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "what": self.what,
            "changes": dict(self.changes),
            "ram": list(self.ram),
            "env": dict(self.env),
            "halves": self.halves,
        }


@dataclass(frozen=True)
class CannotCheck:
    """A verdict iolab cannot relieve, and why; ``rerun``: False when the cause is that the
    run cannot be run again at all (its server was the user's own), which the command
    refuses in one line rather than checks."""

    limit: str
    why: str
    rerun: bool = True

    @property
    def sentence(self) -> str:
        return f"cannot check: {self.why}"

    def document(self) -> dict[str, Any]:
        return {"limit": self.limit, "outcome": UNKNOWN, "why": self.why, "sentence": self.sentence}


@dataclass(frozen=True)
class RunFacts:
    """What the relief of a run depends on, beside its verdict."""

    params: Mapping[str, Any]
    summary: Mapping[str, Any]
    own_wal_dir: bool = True  # the engine can keep its WAL in a directory of its own
    host_cpus: int = 1
    core_built: bool = False  # the compiled driver core is built here
    modes: tuple[str, ...] = ()  # the workload's ``mode`` choices ("client", "server")
    min_cpus: float = 0.01


def relief(limit: str, facts: RunFacts) -> Relief | CannotCheck:
    """The relief of one limit for a run of ``facts``."""
    p = facts.params
    if limit in RAM_ROLE:
        role = RAM_ROLE[limit]
        if p.get("dsn"):
            return CannotCheck(
                limit,
                "its server was yours (--dsn), and moving its "
                f"{'WAL' if role == 'wal' else role} directory needs a layout iolab provisions",
                rerun=False,
            )
        if role == "wal" and not facts.own_wal_dir:
            return Relief(
                limit,
                "the data directory, and the WAL beside it, on a RAM-backed directory",
                ram=("data",),
            )
        if role == "temp" and not p.get("temp_dir"):
            return CannotCheck(limit, "the run had no temp directory of its own to move")
        words = {
            "wal": "the WAL directory",
            "data": "the data directory",
            "temp": "the temp directory",
        }[role]
        return Relief(limit, f"{words} on a RAM-backed directory", ram=(role,))
    if limit == dx.CLIENT:
        core = facts.summary.get("driver_core")
        if (
            core == "python"
            and facts.summary.get("driver_core_reason") == "IOLAB_DRIVER_CORE=python"
            and facts.core_built
        ):
            return Relief(
                limit,
                "the compiled driver core instead of the Python one",
                env={"IOLAB_DRIVER_CORE": "native"},
                base_env={"IOLAB_DRIVER_CORE": "python"},
            )
        pinned = {"IOLAB_DRIVER_CORE": str(core)} if core in ("native", "python") else {}
        if p.get("mode") == "client" and "server" in facts.modes:
            if p.get("duration") is not None or p.get("rate") is not None:
                return CannotCheck(
                    limit,
                    "server mode runs a fixed count of rows, and the run was timed or paced",
                )
            return Relief(
                limit,
                "server mode (the load's loop inside the engine)",
                changes={"mode": "server"},
                base_env=pinned,
            )
        return CannotCheck(
            limit, "the load has no server mode, and no faster driver core iolab can give it"
        )
    if limit == MEMORY:
        if p.get("memory") in (None, "off"):
            return CannotCheck(limit, "the run had no memory cap to lift")
        return Relief(limit, f"the memory cap ({p['memory']}) lifted", changes={"memory": None})
    if limit == dx.CPU:
        if p.get("dsn"):
            return CannotCheck(
                limit,
                "its server was yours (--dsn): iolab caps only a server it starts",
                rerun=False,
            )
        given = p.get("cpus")
        before = float(given) if given not in (None, "off") else float(facts.host_cpus)
        half = round(before / 2, 3)
        if half < facts.min_cpus:
            return CannotCheck(limit, f"half of {before:g} CPUs is below the kernel's least quota")
        was = f"{before:g} CPUs" if given not in (None, "off") else f"the host's {before:g}"
        return Relief(
            limit, f"the CPU cap halved ({was} -> {half:g})", changes={"cpus": half}, halves=True
        )
    if limit == dx.CONTENTION:
        return CannotCheck(
            limit, "locks between the sessions are the load's own; no device or cap relieves them"
        )
    if limit == dx.RATE:
        return CannotCheck(limit, "the run held its offered rate: nothing held it back")
    return CannotCheck(limit, "iolab has no relief for it")


def reliefs(diagnosis: dx.Diagnosis, facts: RunFacts) -> list[Relief | CannotCheck]:
    """What the check of ``diagnosis`` relieves, in turn: its limit; for ``none``, each
    candidate."""
    if diagnosis.limit == dx.NONE:
        if not diagnosis.candidates:
            return [CannotCheck(dx.NONE, "the verdict names no limit and no candidate")]
        return [relief(c.limit, facts) for c in diagnosis.candidates]
    return [relief(diagnosis.limit, facts)]


@dataclass(frozen=True)
class Step:
    """One relief tried: the runs as they were and relieved (ids and headline figures), the
    speed-up (relieved against as it was: above 1, faster; for a figure where lower is
    better, as it was over relieved) with its 95 % interval, and the outcome."""

    relief: Relief
    base_runs: tuple[int, ...]
    relieved_runs: tuple[int, ...]
    base_values: tuple[float, ...]
    relieved_values: tuple[float, ...]
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    outcome: Outcome

    @property
    def limit(self) -> str:
        return self.relief.limit

    @property
    def sentence(self) -> str:
        return sentence(self.relief, self.ratio, self.ci_low, self.ci_high, self.outcome)

    def figures(self, metric: str) -> str:
        """Each re-run's figure: "rows_per_second: as it was run 2 103, run 5 105; relieved
        run 3 8,243, run 4 8,922"."""

        def side(ids: Sequence[int], values: Sequence[float]) -> str:
            return ", ".join(f"run {i} {_figure(v)}" for i, v in zip(ids, values, strict=True))

        return (
            f"{metric}: as it was {side(self.base_runs, self.base_values)}; relieved "
            f"{side(self.relieved_runs, self.relieved_values)}"
        )

    def document(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "relief": self.relief.document(),
            "base_runs": list(self.base_runs),
            "relieved_runs": list(self.relieved_runs),
            "base_values": list(self.base_values),
            "relieved_values": list(self.relieved_values),
            "ratio": _num(self.ratio),
            "ci_low": _num(self.ci_low),
            "ci_high": _num(self.ci_high),
            "outcome": self.outcome,
            "sentence": self.sentence,
        }


def _figure(v: float) -> str:
    """12,110, 189.6, 0.0123: whole above 1,000, four digits below."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _outcome(text: str) -> Outcome:
    return CONFIRMED if text == CONFIRMED else REFUTED if text == REFUTED else UNKNOWN


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, 4)


def speedup(
    base: Sequence[float], relieved: Sequence[float], lower_is_better: bool
) -> tuple[float, float | None, float | None]:
    """The relieved runs against those as they were, as a speed-up (above 1: the relief made
    the run better), with its 95 % interval (of the ratio of geometric means, Welch on the
    logarithms: :func:`iolab.analysis.stats.compare`)."""
    c = compare(base, relieved) if lower_is_better else compare(relieved, base)
    return c.ratio, c.ci_low, c.ci_high


def outcome_of(ratio: float | None, low: float | None, high: float | None, halves: bool) -> Outcome:
    """Confirmed, refuted or unknown, from the speed-up and its interval (None: too few runs).

    A relief: confirmed when the run moved at least :data:`MOVED` and the interval excludes
    1; refuted when the whole interval lies below :data:`LIMIT_GAIN` (what relieving the
    limit would give). The CPU cap halved: confirmed when the rate fell to 0.4-0.65 of
    before; refuted when the whole interval lies above 0.65 (halving it cost little)."""
    if ratio is None or low is None or high is None:
        return UNKNOWN
    if halves:
        if HALVED[0] <= ratio <= HALVED[1]:
            return CONFIRMED
        return REFUTED if low > HALVED[1] else UNKNOWN
    if ratio >= MOVED and low > 1.0:
        return CONFIRMED
    return REFUTED if high < LIMIT_GAIN else UNKNOWN


def judge(
    r: Relief,
    base_runs: Sequence[int],
    relieved_runs: Sequence[int],
    base: Sequence[float],
    relieved: Sequence[float],
    lower_is_better: bool,
) -> Step:
    """One relief's step from the headline figures of its runs."""
    ratio: float | None
    low: float | None
    high: float | None
    if base and relieved and min(*base, *relieved) > 0:
        ratio, low, high = speedup(base, relieved, lower_is_better)
    else:
        ratio = low = high = None
    return Step(
        r,
        tuple(base_runs),
        tuple(relieved_runs),
        tuple(base),
        tuple(relieved),
        ratio,
        low,
        high,
        outcome_of(ratio, low, high, r.halves),
    )


def _x(v: float) -> str:
    """2.4, 1.02, 0.97, 12.3: two decimals, one where the second is a zero."""
    text = f"{v:.2f}" if v < 10 else f"{v:.1f}"
    return text[:-1] if v < 10 and text.endswith("0") else text


def sentence(
    r: Relief, ratio: float | None, low: float | None, high: float | None, outcome: Outcome
) -> str:
    """One sentence: "relieving the WAL device (...) made it 2.4x faster (95 % CI
    2.1-2.8x): confirmed", or "... changed nothing (1.02x, 0.97-1.07x): the WAL device was
    not the limit"."""
    doing = (
        f"halving the CPU cap ({r.what.split('(')[-1].rstrip(')')})"
        if r.halves
        else (f"relieving {r.name} ({r.what})")
    )
    if ratio is None or low is None or high is None:
        return f"{doing}: unknown, too few runs to compare"
    ci = f"{_x(low)}-{_x(high)}x"
    if r.halves:
        if outcome == CONFIRMED:
            return f"{doing} cut it to {_x(ratio)}x (95 % CI {ci}), about half: confirmed"
        if outcome == REFUTED:
            return f"{doing} cut it only to {_x(ratio)}x ({ci}): {r.name} was not the limit"
        verb = "cut" if ratio < 1 else "moved"
        return (
            f"{doing} {verb} it to {_x(ratio)}x (95 % CI {ci}), not about half: unknown (about "
            f"half, {HALVED[0]:g}-{HALVED[1]:g}x, confirms)"
        )
    if outcome == CONFIRMED:
        return f"{doing} made it {_x(ratio)}x faster (95 % CI {ci}): confirmed"
    if outcome == REFUTED:
        if high < 1.0:
            moved = f"made it slower ({_x(ratio)}x, {ci})"
        elif low > 1.0:
            moved = f"changed little ({_x(ratio)}x, {ci})"
        else:
            moved = f"changed nothing ({_x(ratio)}x, {ci})"
        return f"{doing} {moved}: {r.name} was not the limit"
    return (
        f"{doing}: {_x(ratio)}x (95 % CI {ci}): unknown, the runs vary too much to say "
        "(more --runs narrow it)"
    )


@dataclass(frozen=True)
class Check:
    """The check of one run's verdict: each relief tried (or not possible), and the
    outcome: for a named limit its step's; for ``none``, confirmed naming the candidate that
    moved, refuted when every candidate was refuted, else unknown."""

    run: int
    limit: str  # the verdict checked
    steps: tuple[Step | CannotCheck, ...]
    checked_at: str = ""
    experiment_id: int | None = None  # the check's re-runs

    @property
    def moved(self) -> str | None:
        """The limit whose relief moved the run (confirmed), if one did."""
        return next(
            (s.limit for s in self.steps if isinstance(s, Step) and s.outcome == CONFIRMED), None
        )

    @property
    def outcome(self) -> Outcome:
        outcomes = [s.outcome if isinstance(s, Step) else UNKNOWN for s in self.steps]
        if self.moved is not None:
            return CONFIRMED
        if outcomes and all(o == REFUTED for o in outcomes):
            return REFUTED
        return UNKNOWN

    @property
    def deciding(self) -> Step | None:
        """The step whose figures the check's ratio is: the one that moved, else the last."""
        tried = [s for s in self.steps if isinstance(s, Step)]
        return next((s for s in tried if s.outcome == CONFIRMED), tried[-1] if tried else None)

    def sentences(self) -> list[str]:
        """Each step's sentence; for ``none``, the candidates in turn and which one moved."""
        out: list[str] = []
        for i, s in enumerate(self.steps):
            text = s.sentence
            if self.limit == dx.NONE:
                which = "the next candidate" if i else "the first candidate"
                text = f"{which}, {NAMES.get(s.limit, s.limit)}: {text}"
            out.append(text)
        if self.limit == dx.NONE and self.steps:
            if self.moved is not None:
                out.append(f"the check names {self.moved}: relieving it moved the run")
            elif self.outcome == REFUTED:
                out.append("no candidate moved the run when relieved")
        return out

    @property
    def line(self) -> str:
        """One line: what ``results show``, the report's Why and serve print."""
        return "; ".join(self.sentences())

    def document(self) -> dict[str, Any]:
        d = self.deciding
        return {
            "run": self.run,
            "limit": self.limit,
            "outcome": self.outcome,
            "moved": self.moved,
            "ratio": _num(d.ratio) if d else None,
            "ci_low": _num(d.ci_low) if d else None,
            "ci_high": _num(d.ci_high) if d else None,
            "sentence": self.line,
            "checked_at": self.checked_at,
            "experiment_id": self.experiment_id,
            "steps": [s.document() for s in self.steps],
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Check:
        steps: list[Step | CannotCheck] = []
        for s in doc.get("steps", []):
            if "relief" not in s:
                steps.append(CannotCheck(str(s["limit"]), str(s.get("why", ""))))
                continue
            rd = s["relief"]
            r = Relief(
                str(rd["limit"]),
                str(rd["what"]),
                dict(rd.get("changes") or {}),
                tuple(rd.get("ram") or ()),
                dict(rd.get("env") or {}),
                halves=bool(rd.get("halves")),
            )

            def f(x: Any) -> float | None:
                return None if x is None else float(x)

            steps.append(
                Step(
                    r,
                    tuple(int(i) for i in s["base_runs"]),
                    tuple(int(i) for i in s["relieved_runs"]),
                    tuple(float(v) for v in s["base_values"]),
                    tuple(float(v) for v in s["relieved_values"]),
                    f(s["ratio"]),
                    f(s["ci_low"]),
                    f(s["ci_high"]),
                    _outcome(str(s["outcome"])),
                )
            )
        exp = doc.get("experiment_id")
        return cls(
            int(doc["run"]),
            str(doc["limit"]),
            tuple(steps),
            str(doc.get("checked_at", "")),
            None if exp is None else int(exp),
        )
