"""Storing what the probes recorded, compactly enough for runs of many hours.

A series' values are packed as little-endian float32 (7 significant digits: more than any
counter rate needs), byte-shuffled (all first bytes, then all second bytes, ...: the exponent
and high mantissa bytes of neighbouring samples repeat, and zlib finds them) and compressed with
zlib. A 10-hour run sampled every second is 36,000 values per series: at most 144 kB raw, less
packed. Whole-run figures (totals, means, peaks) sit in their own columns, so tables and
listings never unpack values; only a timeline does.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import zlib
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import asdict

from iolab.probes.data import ProbeData, Series
from iolab.probes.interface import Checkpoint, Kind, RoleDevice, SeriesKey, WaitStat
from iolab.results import RunId

ENCODING = "f32-shuffle-zlib"
WIDTH = 4


def pack(values: Sequence[float]) -> bytes:
    raw = array("f", values)
    if sys.byteorder != "little":
        raw.byteswap()
    data = raw.tobytes()
    shuffled = b"".join(data[i::WIDTH] for i in range(WIDTH))
    return zlib.compress(shuffled, 6)


def unpack(blob: bytes, n: int) -> tuple[float, ...]:
    shuffled = zlib.decompress(blob)
    if len(shuffled) != n * WIDTH:
        raise ValueError(f"packed series holds {len(shuffled)} bytes, expected {n * WIDTH}")
    planes = [shuffled[i * n : (i + 1) * n] for i in range(WIDTH)]
    data = bytearray(n * WIDTH)
    for i, plane in enumerate(planes):
        data[i::WIDTH] = plane
    values = array("f")
    values.frombytes(bytes(data))
    if sys.byteorder != "little":
        values.byteswap()
    return tuple(values)


def save(
    conn: sqlite3.Connection, run: RunId, data: ProbeData | None, logs: Mapping[str, str]
) -> None:
    """Insert a run's probe data and logs (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO run_logs (run_id, name, text) VALUES (?, ?, ?)",
        [(run, name, text) for name, text in logs.items()],
    )
    if data is None:
        return
    conn.execute(
        "INSERT INTO probe_runs (run_id, interval, wait_interval, duration, roles, notes)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (
            run,
            data.interval,
            data.wait_interval,
            data.duration,
            json.dumps([asdict(r) for r in data.roles]),
            json.dumps(list(data.notes)),
        ),
    )
    conn.executemany(
        "INSERT INTO series (run_id, id, probe, name, subject, role, unit, kind, t0, interval,"
        " end_s, n, total_num, total_den, peak, encoding, data)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run,
                i,
                s.key.probe,
                s.key.name,
                s.key.subject,
                s.key.role,
                s.key.unit,
                s.key.kind.value,
                s.t0,
                s.interval,
                s.end_s,
                len(s.values),
                s.total_num,
                s.total_den,
                s.peak,
                ENCODING,
                pack(s.values),
            )
            for i, s in enumerate(data.series)
        ],
    )
    conn.executemany(
        "INSERT INTO waits (run_id, source, class, event, samples, share, est_seconds)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (run, w.source, w.wait_class, w.event, w.samples, w.share, w.est_seconds)
            for w in data.waits
        ],
    )
    conn.executemany(
        "INSERT INTO checkpoints (run_id, seq, start_s, end_s, pages, kind, detail)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (run, i, c.start_s, c.end_s, c.pages, c.kind, c.detail)
            for i, c in enumerate(data.checkpoints)
        ],
    )


def load(
    conn: sqlite3.Connection,
    run: int,
    *,
    values: bool = True,
    names: Sequence[tuple[str, str]] | None = None,
) -> ProbeData | None:
    """A run's probe data, or None if it has none. Without ``values`` the series come without
    their samples (never unpacked); ``names`` limits them to these (probe, name) pairs, and
    the others are not even read (a report draws a dozen of a run's 50 or more series)."""
    row = conn.execute(
        "SELECT interval, wait_interval, duration, roles, notes FROM probe_runs WHERE run_id = ?",
        (run,),
    ).fetchone()
    if row is None:
        return None
    interval, wait_interval, duration, roles, notes = row
    column = "data" if values else "NULL"
    where = "run_id = ?"
    args: list[object] = [run]
    if names is not None:
        pairs = ", ".join("(?, ?)" for _ in names) or "(NULL, NULL)"
        where += f" AND (probe, name) IN (VALUES {pairs})"
        args += [part for pair in names for part in pair]
    series = []
    for r in conn.execute(
        "SELECT probe, name, subject, role, unit, kind, t0, interval, end_s, n, total_num,"
        f" total_den, peak, encoding, {column} FROM series WHERE {where} ORDER BY id",
        args,
    ):
        if r[14] is not None and r[13] != ENCODING:
            raise ValueError(f"series encoded as {r[13]!r}, this iolab reads {ENCODING!r}")
        series.append(
            Series(
                key=SeriesKey(r[0], r[1], r[4], Kind(r[5]), subject=r[2], role=r[3]),
                t0=r[6],
                interval=r[7],
                end_s=r[8],
                n=r[9],
                total_num=r[10],
                total_den=r[11],
                peak=r[12],
                values=unpack(r[14], r[9]) if r[14] is not None else (),
            )
        )
    waits = [
        WaitStat(*w)
        for w in conn.execute(
            "SELECT source, class, event, samples, share, est_seconds FROM waits"
            " WHERE run_id = ? ORDER BY est_seconds DESC, samples DESC",
            (run,),
        )
    ]
    checkpoints = [
        Checkpoint(*c)
        for c in conn.execute(
            "SELECT start_s, end_s, pages, kind, detail FROM checkpoints"
            " WHERE run_id = ? ORDER BY seq",
            (run,),
        )
    ]
    warmup = conn.execute(
        "SELECT warmup_s + probe_offset FROM latency_runs WHERE run_id = ?", (run,)
    ).fetchone()
    return ProbeData(
        warmup_end_s=warmup[0] if warmup is not None else None,
        interval=interval,
        wait_interval=wait_interval,
        duration=duration,
        series=tuple(series),
        waits=tuple(waits),
        checkpoints=tuple(checkpoints),
        roles=tuple(RoleDevice(**r) for r in json.loads(roles)),
        notes=tuple(json.loads(notes)),
    )


def logs(conn: sqlite3.Connection, run: int) -> dict[str, str]:
    return dict(
        conn.execute("SELECT name, text FROM run_logs WHERE run_id = ? ORDER BY name", (run,))
    )
