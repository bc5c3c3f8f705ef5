"""The TPC-H workload of seed 004: load the data on the layout under test, then a power run.

1. Data: generated once per scale factor by ``tpchgen-cli`` into the cache (tpch_data.py).
2. Load: a fresh engine on the layout; the engine's TPC-H dialect creates the tables spread
   over the layout's data files, loads the CSV files (PostgreSQL: parallel COPY; MariaDB:
   parallel LOAD DATA), then builds keys, indexes and statistics. Measured: load seconds and
   MB/s of CSV, index seconds, the on-disk size (allocated bytes of the engine's data files)
   and the compression ratio (CSV bytes / on-disk bytes). Row counts must match the generator's.
3. Power run: the queries (1..22 or a subset) in one stream on one connection, each with a
   timeout. Cold (default): the engine is restarted and, when iolab runs as root, the page
   cache dropped (``sync; echo 3 > /proc/sys/vm/drop_caches``) once before the stream. Warm:
   each query runs once untimed right before its timed run.
4. Answers: every result is checked against the reference answers (tpch_answers.py) where the
   scale factor has them (0.01, 0.1, 1). A wrong answer, an error or a timeout fails the run;
   the per-query results are kept with the failed run.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iolab.engines import catalog
from iolab.engines.connection import Connection
from iolab.engines.interface import Engine, Layout, Placement, running
from iolab.errors import BadInput, RunFailed
from iolab.events import EventSink, Measured, Phase, Step, Warning
from iolab.probes.recorder import recording
from iolab.probes.standard import device_deltas, role_devices, tpch_recorder
from iolab.results import QueryResult, RunOutcome
from iolab.system import diskstats
from iolab.units import format_bytes
from iolab.workloads.tpch import answers as tpch_answers
from iolab.workloads.tpch import data as tpch_data
from iolab.workloads.tpch import dialects
from iolab.workloads.tpch.answers import QUERIES, Answer
from iolab.workloads.tpch.dialect import QueryTimeout, TpchDialect, TpchFiles
from iolab.workloads.tpch.postgres import NO_COMPRESSION

DEFAULT_TIMEOUT = 300.0
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
PROGRESS_EVERY = 0.5


def default_loaders() -> int:
    return max(2, os.cpu_count() or 2)


@dataclass(frozen=True)
class TpchOptions:
    """A TPC-H run. ``compression`` None: the engine's default (DuckDB on, PostgreSQL and
    MariaDB off).

    ``reference_sf``: check the answers against another scale factor's reference instead of
    this one's (only to prove that wrong answers are caught).
    """

    engine: str
    layout: Layout
    scale_factor: float = 1.0
    compression: bool | None = None
    cold: bool = True
    timeout: float = DEFAULT_TIMEOUT
    queries: tuple[int, ...] = QUERIES
    loaders: int | None = None
    pg_bin: Path | None = None
    reference_sf: float | None = None
    sample_interval: float | None = 1.0  # seconds between probe samples; None: probes off

    @property
    def compressed(self) -> bool:
        if self.compression is not None:
            return self.compression
        return bool(dialects.ENGINES[self.engine].compression)

    @property
    def loader_count(self) -> int:
        return self.loaders if self.loaders is not None else default_loaders()

    def validate(self) -> None:
        """Refuse what cannot run, before anything is created."""
        kind = catalog.kind(self.engine, among=dialects.NAMES)
        sf = self.scale_factor
        if isinstance(sf, bool) or not isinstance(sf, int | float) or not math.isfinite(sf):
            raise BadInput("--sf", sf, "give a positive scale factor, e.g. 1 or 0.01")
        if sf <= 0:
            raise BadInput("--sf", sf, "give a positive scale factor, e.g. 1 or 0.01")
        if not self.queries:
            raise BadInput("--queries", "", "give query numbers from 1 to 22, e.g. 1,3,6")
        for q in self.queries:
            if q not in QUERIES:
                raise BadInput("--queries", q, "give query numbers from 1 to 22, e.g. 1,3,6")
        if len(set(self.queries)) != len(self.queries):
            raise BadInput("--queries", ",".join(map(str, self.queries)), "name each query once")
        if self.sample_interval is not None and not self.sample_interval >= 0.1:
            raise BadInput("--sample-interval", self.sample_interval, "give 0.1 s or more")
        if not self.timeout > 0:
            raise BadInput("--timeout", self.timeout, "give a positive number of seconds")
        if self.loaders is not None and self.loaders < 1:
            raise BadInput("--loaders", self.loaders, "give 1 or more loader connections")
        if dialects.ENGINES[self.engine].compression is None and self.compression:
            raise BadInput("--compression", "on", NO_COMPRESSION)
        if not kind.takes_pg_bin and self.pg_bin is not None:
            raise BadInput("--pg-bin", str(self.pg_bin), "--pg-bin goes with --engine postgres")
        for name in self.layout.settings:
            if name.strip().lower() == "force_compression":
                raise BadInput("--set", name, "use --compression on|off")

    def params(self) -> dict[str, Any]:
        layout = self.layout
        return {
            "engine": self.engine,
            "data_dirs": [str(d.resolve()) for d in layout.data_dirs],
            "files": layout.files,
            "wal_dir": str(layout.wal_dir.resolve()) if layout.wal_dir else None,
            "temp_dir": str(layout.temp_dir.resolve()) if layout.temp_dir else None,
            "settings": dict(layout.settings),
            "scale_factor": self.scale_factor,
            "compression": self.compressed,
            "cold": self.cold,
            "timeout": self.timeout,
            "queries": list(self.queries),
            "loaders": self.loader_count,
            "pg_bin": str(self.pg_bin) if self.pg_bin else None,
        }


def preflight(options: TpchOptions) -> dict[int, str]:
    """Checks that need no run record: the options, the tpch extension (returns the query
    texts) and, when the data is not cached yet, room to generate it."""
    options.validate()
    check = catalog.kind(options.engine).check_layout
    if check is not None:
        check(options.layout)
    catalog.check(options.engine, options.layout, pg_bin=options.pg_bin)  # settings, by the engine
    texts = tpch_answers.queries()
    for sf in {options.scale_factor, options.reference_sf or options.scale_factor}:
        if tpch_data.cached(sf) is None:
            tpch_data.check_cache()
            tpch_data.check_space(sf)
    return texts


def allocated_bytes(path: Path) -> int:
    """Bytes the filesystem allocated for ``path`` (a file, or a directory and all below it).

    Allocated, not apparent: a page-compressed file with holes counts only what it holds.
    """
    try:
        st = path.lstat()
    except FileNotFoundError:
        return 0
    total = st.st_blocks * 512
    if path.is_dir() and not path.is_symlink():
        for root, dirs, names in os.walk(path):
            for name in [*dirs, *names]:
                try:
                    total += (Path(root) / name).lstat().st_blocks * 512
                except FileNotFoundError:
                    continue
    return total


def drop_caches(events: EventSink) -> bool:
    """Write dirty pages, then drop the page cache (root only); False with a warning if not."""
    os.sync()
    if os.geteuid() != 0:
        events(Warning("not root: the page cache was not dropped, so the cold run may read memory"))
        return False
    try:
        DROP_CACHES.write_text("3\n")
    except OSError as exc:
        events(
            Warning(f"could not drop the page cache ({exc.strerror}): the cold run may read memory")
        )
        return False
    return True


def geometric_mean(values: list[float]) -> float | None:
    usable = [v for v in values if v > 0]
    if not usable:
        return None
    return math.exp(sum(math.log(v) for v in usable) / len(usable))


def run_tpch(options: TpchOptions, outcome: RunOutcome, events: EventSink) -> None:
    """Data, engine on the layout, load, power run, answers; results into ``outcome``."""
    texts = preflight(options)
    files = tpch_data.ensure(options.scale_factor, events)
    reference_files = (
        files if options.reference_sf is None else tpch_data.ensure(options.reference_sf, events)
    )
    reference = tpch_answers.reference(reference_files, events)
    if reference is None:
        events(
            Warning(
                f"no reference answers at SF {tpch_data.sf_label(options.scale_factor)} (the "
                "tpch extension has 0.01, 0.1 and 1): answers are not checked"
            )
        )
    layout = options.layout
    if catalog.kind(options.engine).server and "max_connections" not in layout.settings:
        settings = dict(layout.settings)
        settings["max_connections"] = str(max(100, options.loader_count + 10))
        layout = replace(layout, settings=settings)
    engine = catalog.create(options.engine, layout, pg_bin=options.pg_bin)
    events(Phase(f"provisioning {options.engine}"))
    with running(engine, "the TPC-H run") as placement:
        load_and_query(engine, placement, options, files, texts, reference, outcome, events)


def _dialect(engine: Engine, options: TpchOptions) -> TpchDialect:
    return dialects.dialect(engine, compression=options.compressed, loaders=options.loader_count)


def load(
    engine: Engine, dialect: TpchDialect, files: TpchFiles, events: EventSink
) -> dict[str, float]:
    """Create the tables, load them, build keys and statistics; the timings."""
    conn = engine.connect()
    try:
        dialect.create_tables(conn)
    finally:
        conn.close()
    total = files.total_bytes
    done = 0
    last = 0.0
    t0 = time.perf_counter()

    def progress(n: int) -> None:
        nonlocal done, last
        done += n
        now = time.perf_counter()
        if now - last >= PROGRESS_EVERY or done >= total:
            last = now
            rate = done / (now - t0) if now > t0 else 0.0
            left = (total - done) / rate if rate > 0 else 0.0
            mb, total_mb = round(done / 1e6), max(1, math.ceil(total / 1e6))  # steps of 1 MB
            label = f"loading MB of CSV, {rate / 1e6:,.1f} MB/s"
            events(Step(label, min(total_mb, max(1, mb)), total_mb, left))

    events(Phase(f"loading {format_bytes(total)} of CSV"))
    dialect.load(engine.connect, files, progress)
    load_seconds = time.perf_counter() - t0
    events(Phase("building keys and indexes, gathering statistics"))
    t1 = time.perf_counter()
    dialect.finish_load(engine.connect)
    return {"load_seconds": load_seconds, "index_seconds": time.perf_counter() - t1}


def load_and_query(
    engine: Engine,
    placement: Placement,
    options: TpchOptions,
    files: TpchFiles,
    texts: dict[int, str],
    reference: dict[int, Answer] | None,
    outcome: RunOutcome,
    events: EventSink,
) -> None:
    """The measured part on a running engine: load, check, power run, results."""
    dialect = _dialect(engine, options)
    timings = load(engine, dialect, files, events)
    conn = engine.connect()
    try:
        counts = dialect.row_counts(conn)
    finally:
        conn.close()
    expected = tpch_data.expected_rows(files)
    if counts != expected:
        wrong = [f"{t}: {counts.get(t)} rows, expected {n}" for t, n in expected.items()]
        raise RunFailed("the load lost or added rows: " + "; ".join(wrong))
    data_bytes = files.total_bytes
    per_dir = [(p, allocated_bytes(p)) for p in placement.data]
    on_disk = sum(b for _, b in per_dir)
    summary = outcome.summary
    summary.update(
        {
            "engine": options.engine,
            "engine_version": engine.version(),
            "scale_factor": options.scale_factor,
            "compression": options.compressed,
            "mode": "cold" if options.cold else "warm",
            "timeout_seconds": options.timeout,
            "loaders": options.loader_count
            if dialects.ENGINES[options.engine].parallel_loaders
            else 1,
            "generator": tpch_data.manifest(files).get("generator"),
            "data_bytes": data_bytes,
            "data_rows": expected,
            "load_seconds": timings["load_seconds"],
            "load_mb_per_second": data_bytes / timings["load_seconds"] / 1e6,
            "index_seconds": timings["index_seconds"],
            "on_disk_bytes": on_disk,
            "compression_ratio": data_bytes / on_disk if on_disk else None,
            "placement": {
                "data": [{"path": str(p), "bytes": b} for p, b in per_dir],
                "temp": str(placement.temp) if placement.temp else None,
            },
            "reference": _reference_name(options, reference),
        }
    )
    if options.cold:
        events(Phase(f"restarting {options.engine} and dropping the page cache (cold run)"))
        engine.stop()
        summary["page_cache_dropped"] = drop_caches(events)
        engine.start()
    results = power_run(engine, placement, dialect, options, texts, reference, outcome, events)
    outcome.query_results = results
    done = [r.seconds for r in results if r.seconds is not None and r.error is None]
    summary.update(
        {
            "queries": [_query_json(r) for r in results],
            "total_seconds": sum(done),
            "geomean_seconds": geometric_mean(done),
            "queries_ok": sum(1 for r in results if r.error is None and r.answer_ok is not False),
            "settings": engine.effective_settings(),
        }
    )
    failed = [r for r in results if r.error is not None or r.answer_ok is False]
    if failed:
        shown = "; ".join(f"Q{r.query}: {r.error}" for r in failed[:3])
        more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
        raise RunFailed(f"{len(failed)} of {len(results)} queries failed: {shown}{more}")


def _reference_name(options: TpchOptions, reference: dict[int, Answer] | None) -> str | None:
    if reference is None:
        return None
    sf = options.reference_sf if options.reference_sf is not None else options.scale_factor
    return f"SF {tpch_data.sf_label(sf)}, checked against DuckDB's tpch_answers()"


def _query_json(r: QueryResult) -> dict[str, Any]:
    return {
        "query": r.query,
        "seconds": r.seconds,
        "rows": r.rows,
        "answer_ok": r.answer_ok,
        "error": r.error,
        "io": r.io,
        "start_s": r.start_s,
    }


def power_run(
    engine: Engine,
    placement: Placement,
    dialect: TpchDialect,
    options: TpchOptions,
    texts: dict[int, str],
    reference: dict[int, Answer] | None,
    outcome: RunOutcome,
    events: EventSink,
) -> list[QueryResult]:
    """The queries in one stream on one connection; each result checked, and what each block
    device behind the layout did during each timed query (/proc/diskstats before and after).
    The probes record the whole stream."""
    devices = role_devices(placement)
    conn = engine.connect()
    results: list[QueryResult] = []
    spent = 0.0
    try:
        recorder = tpch_recorder(engine, placement, conn, options.sample_interval, events)
        with recording(recorder, outcome):
            for index, number in enumerate(options.queries, start=1):
                left = (
                    spent / (index - 1) * (len(options.queries) - index + 1) if index > 1 else 0.0
                )
                events(Step(f"query {number}", index, len(options.queries), left))
                sql = dialect.query(number, texts[number])
                if not options.cold:
                    _run_one(dialect, conn, number, sql, options.timeout, None)
                before = diskstats.read()
                start = time.perf_counter() - recorder.t0 if recorder is not None else None
                result = _run_one(dialect, conn, number, sql, options.timeout, reference)
                io = device_deltas(before, diskstats.read(), devices)
                result = replace(result, io=io, start_s=start)
                spent += result.seconds or options.timeout
                results.append(result)
                detail = (
                    f"{result.seconds:.3f} s, {result.rows} rows"
                    if result.error is None
                    else str(result.error)
                )
                events(Measured(f"Q{number}", detail))
    finally:
        conn.close()
    return results


def _run_one(
    dialect: TpchDialect,
    conn: Connection,
    number: int,
    sql: str,
    timeout: float,
    reference: dict[int, Answer] | None,
) -> QueryResult:
    t0 = time.perf_counter()
    try:
        names, rows = dialect.execute(conn, sql, timeout)
    except QueryTimeout as exc:
        return QueryResult(number, None, None, False, f"timed out: {exc}")
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        return QueryResult(number, None, None, False, f"error: {text}")
    seconds = time.perf_counter() - t0
    if reference is None:
        return QueryResult(number, seconds, len(rows), None)
    why = tpch_answers.mismatch(Answer.from_rows(names, rows), reference[number])
    if why is not None:
        return QueryResult(number, seconds, len(rows), False, f"wrong answer: {why}")
    return QueryResult(number, seconds, len(rows), True)
