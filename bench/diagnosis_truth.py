"""Is iolab's "limited by" verdict right? Induce each limit with iolab's own means and check.

For each engine (PostgreSQL, MariaDB) the benchmark brings up a testbed of its own (a state
directory in a temporary directory: nothing of another testbed is touched) and runs
``iolab populate`` (``iolab tpch`` for the reads) on it, each case ``--repeat`` times, into a
results database of its own:

- ``wal-device``: the WAL / redo log on a device throttled to 100 write IOPS;
- ``data-device``: the data on a device throttled to 4 MB/s of writes, written directly by the
  server (PostgreSQL ``debug_io_direct=data``, InnoDB ``O_DIRECT``), a small buffer pool, a
  checkpoint requested every 2 s;
- ``data-device (reads)``: a warm TPC-H Q6 at SF 0.1 (a scan of lineitem, about 100 MB) with
  the data on a device throttled to 20 MB/s of reads and the engine's memory smaller than the
  table (PostgreSQL: ``--memory 96MiB``, ``shared_buffers=16MB``; MariaDB: a 16 MB buffer pool
  read past the page cache, ``O_DIRECT``, under ``--memory 512MiB``, since its install step
  does not start under less);
- ``temp-device (spill)``, PostgreSQL only: TPC-H Q1 at SF 0.1 grouped by an on-disk sort in
  64 kB of work memory, temp on a device throttled to 5 MB/s of reads, under ``--memory 72MiB``
  so that the sort's runs are read back from the device (see :func:`temp_case` for MariaDB);
- ``cpu``: ``--cpus 0.25`` on uncapped devices, 4 connections, commits not waiting for the log;
- ``rate``: an open-loop ``--rate`` of 40 rows/s, far below what the engine does;
- ``contention``: 32 sessions inserting one increasing key into one table, each statement
  inside the engine (``--mode server``, 10 rows per transaction, commits not waiting for the
  log's sync, so neither the client nor the log stands in the way);
- ``uncapped``: the same load as ``wal-device`` on uncapped devices: any verdict but a device's
  capacity counts as right (the honest answer may be ``wal-latency``, the sessions waiting on
  each commit's flush of a device with time to spare, or ``cpu``, ``client`` or ``none``).

Then it reads every run's verdict back through :func:`iolab.report.why.run_diagnosis` (what
``iolab results show`` prints) and prints a confusion table per engine: induced x verdict.
Bar: at least 9 of every 10 induced limits named right, and no uncapped load given a device's
capacity as its limit (its latency, ``wal-latency``, is right). Exits 0 whatever
the verdict (1 when it could not run).

With ``--check N`` each run's verdict is then checked as ``iolab why RUN --check --runs N``
checks it (:mod:`iolab.runner.whycheck`: the cell again, N times as it was and N times with
the named limit relieved), and each ``wal-device`` run also gets a wrong verdict planted on
purpose, ``data-device``, checked the same way (not kept with the run). Bar (issue 46): each
right verdict confirmed (relieving it raises the rate by at least 1.3x), each planted one
refuted (relieving the data changes the rate by less than 10 %), "unknown" at most 1 in 10.

    .venv/bin/python bench/diagnosis_truth.py [--engines postgres,mariadb] [--repeat 2]
        [--check 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from iolab.analysis import diagnosis as dx
from iolab.analysis import whycheck as wc
from iolab.errors import IolabError
from iolab.events import discard
from iolab.report.why import run_diagnosis
from iolab.runner import whycheck
from iolab.runner.experiment import default_resolve
from iolab.store import open_store

DEVICES = """
[devices.truthwal]
size = "256MiB"
write_iops = 100

[devices.truthdata]
size = "512MiB"
write_mbps = 4

[devices.truthread]
size = "1GiB"
read_mbps = 20

[devices.truthtemp]
size = "512MiB"
read_mbps = 5

[devices.truthfree]
size = "1GiB"
"""
DEVICE_LIMITS = {dx.WAL, dx.DATA, dx.TEMP}  # a device's capacity (its latency is not among them)


@dataclass(frozen=True)
class Case:
    induced: str  # the limit it induces, or "uncapped"
    args: tuple[str, ...]
    command: str = "populate"  # the iolab workload that induces it
    what: str = ""  # told apart from another case of the same limit (``reads``)

    @property
    def name(self) -> str:
        return f"{self.induced} ({self.what})" if self.what else self.induced


def cases(engine: str) -> list[Case]:
    # data file I/O the server does itself, so that cgroup v1's throttle holds it (buffered
    # writes reach the device by the kernel's flusher threads, which no cgroup limits), and a
    # buffer pool so small that sessions must wait for pages to be written to get one
    small_pool = (
        ("--set", "shared_buffers=16MB", "--set", "debug_io_direct=data")
        if engine == "postgres"
        else ("--set", "innodb_buffer_pool_size=8M", "--set", "innodb_flush_method=O_DIRECT")
    )
    # a warm scan of lineitem (SF 0.1, about 100 MB) larger than what the engine may keep:
    # PostgreSQL's buffers and its page cache held to 96 MiB by --memory; MariaDB's install
    # step does not start under a cap that small (it bootstraps with the default buffer pool),
    # so its pool is small and InnoDB reads past the page cache (O_DIRECT) under a 512 MiB cap
    scan_caps = (
        ("--memory", "96MiB", "--set", "shared_buffers=16MB")
        if engine == "postgres"
        else (
            *("--memory", "512MiB", "--set", "innodb_buffer_pool_size=16M"),
            *("--set", "innodb_flush_method=O_DIRECT"),
        )
    )
    no_log_wait = (
        "synchronous_commit=off" if engine == "postgres" else "innodb_flush_log_at_trx_commit=0"
    )
    return [
        Case(
            dx.WAL,
            (
                "--wal-dir",
                "device:truthwal",
                "--data-dir",
                "device:truthfree",
                "--rows",
                "1500",
                "--connections",
                "8",
            ),
        ),
        Case(
            dx.DATA,
            (
                "--data-dir",
                "device:truthdata",
                "--wal-dir",
                "device:truthfree",
                "--rows",
                "4000",
                "--connections",
                "8",
                "--commit-every",
                "100",
                "--checkpoint-every",
                "2s",
                *small_pool,
            ),
        ),
        Case(
            dx.DATA,
            (
                "--sf",
                "0.1",
                "--queries",
                "6",
                "--warm",
                "--data-dir",
                "device:truthread",
                "--wal-dir",
                "device:truthfree",
                *scan_caps,
            ),
            command="tpch",
            what="reads",
        ),
        *temp_case(engine),
        Case(
            dx.CPU,
            (
                "--cpus",
                "0.25",
                "--rows",
                "3000",
                "--connections",
                "4",
                "--data-dir",
                "device:truthfree",
                "--set",
                no_log_wait,
            ),
        ),
        Case(dx.RATE, ("--rate", "40", "--rows", "400", "--connections", "4")),
        Case(
            dx.CONTENTION,
            (
                "--mode",
                "server",
                "--connections",
                "32",
                "--commit-every",
                "10",
                "--rows",
                "48000",
                "--set",
                no_log_wait,
            ),
        ),
        Case(
            "uncapped",
            ("--rows", "8000", "--connections", "8", "--data-dir", "device:truthfree"),
        ),
    ]


def temp_case(engine: str) -> list[Case]:
    """TPC-H Q1 at SF 0.1 sorting lineitem's 600,000 rows on disk (grouping by sort, in 64 kB of
    work memory: about 20 MiB of temp files) with temp on a device throttled to 5 MB/s of
    reads, under a memory cap too small to keep the sort's runs in the page cache, so the
    merge reads them back from the device. PostgreSQL only: MariaDB's Q1, Q3 and Q18 with an
    32 kB sort buffer and a 16 kB temporary table size wrote 32 KiB of temp files or none (its
    on-disk temporary tables go through Aria's own page cache), and its file waits do not say
    which file is a temporary one."""
    if engine != "postgres":
        return []
    return [
        Case(
            dx.TEMP,
            (
                *("--sf", "0.1", "--queries", "1"),
                *("--data-dir", "device:truthfree", "--temp-dir", "device:truthtemp"),
                *("--memory", "72MiB", "--set", "shared_buffers=8MB"),
                *("--set", "work_mem=64kB", "--set", "enable_hashagg=off"),
            ),
            command="tpch",
            what="spill",
        )
    ]


def iolab(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


@dataclass(frozen=True)
class Checked:
    """A check of one run's verdict (or of one planted on purpose)."""

    case: str
    limit: str  # the limit checked
    planted: bool
    outcome: str  # confirmed, refuted, unknown
    ratio: float | None
    sentence: str


CHECKS: list[tuple[str, Checked]] = []  # (engine, check), as they are made


def check_run(engine: str, case: str, db: Path, run_id: int, runs: int) -> None:
    """Check the verdict of ``run_id`` (and, on a WAL-bound case, a planted data-device)."""
    with open_store(db, create=False) as store:
        try:
            planned = whycheck.plan(store, run_id)
        except IolabError as exc:
            CHECKS.append((engine, Checked(case, "?", False, wc.UNKNOWN, None, str(exc))))
            print(f"    check: {exc}", flush=True)
            return
        tries = [(planned, False)]
        if case == dx.WAL:
            tries.append((whycheck.planted(planned, dx.DATA), True))
        for p, plant in tries:
            try:
                c = whycheck.check(store, p, runs, discard, resolve=default_resolve, keep=not plant)
            except IolabError as exc:
                found = Checked(case, p.diagnosis.limit, plant, wc.UNKNOWN, None, str(exc))
            else:
                d = c.deciding
                found = Checked(case, c.limit, plant, c.outcome, d.ratio if d else None, c.line)
            CHECKS.append((engine, found))
            what = "planted " if plant else ""
            print(f"    check of {what}{found.limit}: {found.sentence}", flush=True)


def check_table(engine: str) -> str:
    """The checks of one engine: outcomes, right verdicts confirmed at 1.3x, planted ones
    refuted under 10 %."""
    mine = [c for e, c in CHECKS if e == engine]
    if not mine:
        return ""
    count = Counter(c.outcome for c in mine)
    right_ones = [c for c in mine if not c.planted and c.case != "uncapped"]
    strong = [c for c in right_ones if c.outcome == wc.CONFIRMED and (c.ratio or 0) >= 1.3]
    halved = [c for c in right_ones if c.limit == dx.CPU and c.outcome == wc.CONFIRMED]
    plants = [c for c in mine if c.planted]
    refuted = [c for c in plants if c.outcome == wc.REFUTED and abs((c.ratio or 9) - 1) < 0.10]
    return (
        f"checks: {count[wc.CONFIRMED]} confirmed, {count[wc.REFUTED]} refuted, "
        f"{count[wc.UNKNOWN]} unknown of {len(mine)}; right verdicts confirmed (1.3x or more, "
        f"or the CPU's about half): {len(strong) + len(halved)} of {len(right_ones)}; planted "
        f"data-device on a WAL-bound run refuted (under 10 %): {len(refuted)} of {len(plants)}"
    )


def run_engine(
    engine: str,
    repeat: int,
    work: Path,
    env: dict[str, str],
    only: set[str],
    check: int = 0,
) -> list[tuple[str, str]]:
    """(induced, verdict) of every run of every case; with ``check``, each verdict checked."""
    db = work / f"{engine}.db"
    out: list[tuple[str, str]] = []
    for case in cases(engine):
        if only and case.induced not in only and case.name not in only:
            continue
        for i in range(repeat):
            args = [a.replace("{run}", f"{engine}{i}") for a in case.args]
            p = iolab(case.command, "--engine", engine, *args, "--results", str(db), env=env)
            if p.returncode != 0:
                print(f"{engine} {case.name}: iolab failed: {p.stderr.strip()[-300:]}")
                out.append((case.name, "failed"))
                continue
            with open_store(db, create=False) as store:
                run = store.runs(1)[0]
                d = run_diagnosis(store, run)
            verdict = d.limit if d is not None else "no probes"
            out.append((case.name, verdict))
            print(f"{engine} {case.name} #{i + 1}: {d.line if d else verdict}", flush=True)
            for s in d.sentences() if d else []:
                print(f"    {s}", flush=True)
            if check:
                check_run(engine, case.name, db, int(run.id), check)
    return out


def right(name: str, verdict: str) -> bool:
    if name == "uncapped":
        return verdict not in DEVICE_LIMITS and verdict != "failed"
    return name.split(" (", maxsplit=1)[0] == verdict  # data-device (reads): data-device


def table(engine: str, found: list[tuple[str, str]]) -> str:
    verdicts = sorted({v for _, v in found})
    rows = sorted({i for i, _ in found}, key=[c.name for c in cases(engine)].index)
    count = Counter(found)
    width = max(len(v) for v in [*verdicts, *rows, "induced \\ verdict"]) + 2
    lines = [
        f"{engine}",
        "induced \\ verdict".ljust(width) + "".join(v.rjust(width) for v in verdicts),
    ]
    for i in rows:
        lines.append(i.ljust(width) + "".join(str(count[(i, v)]).rjust(width) for v in verdicts))
    ran = [(i, v) for i, v in found if v != "failed"]
    induced = [(i, v) for i, v in ran if i != "uncapped"]
    ok = sum(right(i, v) for i, v in induced)
    free = [(i, v) for i, v in ran if i == "uncapped"]
    failed = len(found) - len(ran)
    lines.append(
        f"induced limits named right: {ok} of {len(induced)}"
        f" ({ok / max(1, len(induced)):.0%}); uncapped given a device capacity limit: "
        f"{sum(v in DEVICE_LIMITS for _, v in free)} of {len(free)}"
        + (f"; {failed} run(s) failed and are not counted" if failed else "")
    )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default="postgres,mariadb")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument(
        "--cases", default="", help='only these induced limits, e.g. cpu,"data-device (reads)"'
    )
    ap.add_argument(
        "--check", type=int, default=0, help="check each verdict with N re-runs a side (0: no)"
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    engines = [e for e in a.engines.split(",") if e]
    only = {c for c in a.cases.split(",") if c}
    with tempfile.TemporaryDirectory(prefix="iolab-truth-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)
        env = dict(os.environ, IOLAB_TESTBED_DIR=str(work / "testbed"))
        # the checks run in this process: their runs must find this testbed (its throttles)
        os.environ["IOLAB_TESTBED_DIR"] = env["IOLAB_TESTBED_DIR"]
        spec = work / "testbed.toml"
        spec.write_text(DEVICES)
        up = iolab("testbed", "up", str(spec), env=env)
        if up.returncode != 0:
            print(f"testbed up failed: {up.stderr.strip()}")
            return 1
        results: dict[str, list[tuple[str, str]]] = {}
        try:
            for engine in engines:
                results[engine] = run_engine(engine, a.repeat, work, env, only, a.check)
        finally:
            iolab("testbed", "down", env=env)
    load = Path("/proc/loadavg").read_text().split()[:3]
    if a.json:
        checks = [{"engine": e, **c.__dict__} for e, c in CHECKS]
        print(json.dumps({"load": load, "runs": results, "checks": checks}, indent=2))
        return 0
    print(f"load {' '.join(load)}")
    for engine, found in results.items():
        print(table(engine, found))
        if a.check:
            print(check_table(engine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
