"""Runs that overlapped: two runs on one host at the same time, each measuring the other too.

iolab's runs on one host take turns (:mod:`iolab.runner.hostlock`), but the results database
can still hold runs that overlapped: made by an iolab from before the lock, by a fleet host and
a driver of its own on one machine, under another user, or against one server from two machines
(``--dsn``). They are found from what is stored: each run's start and end (whole seconds: two
runs that touch within one second are not counted) and where it ran: its environment's host
name, or for a ``--dsn`` run on another machine's server, that server's address. Only runs that
started (their environment recorded) and whose end is known count: a run a dead process left is
marked aborted later, at an end that is not its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from iolab.results import ExperimentId, RunId
from iolab.store.database import GONE, Store

LOCAL = ("", "localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Overlap:
    """Run ``run`` (of the experiment asked about) ran at the same time as run ``other`` (of
    experiment ``other_experiment``) on ``host``, from ``start`` to ``end`` (UTC)."""

    run: RunId
    other: RunId
    other_experiment: str
    host: str
    start: str
    end: str


@dataclass(frozen=True)
class _Span:
    run: RunId
    experiment: ExperimentId
    name: str
    start: str
    end: str
    host: str


def _host(hostname: str | None, dsn: str | None) -> str:
    """Where a run ran: its server's address for a ``--dsn`` run on another machine, else the
    machine's host name."""
    if dsn:
        try:
            parts = urlsplit(dsn)
            name, port = parts.hostname or "", parts.port
        except ValueError:
            name, port = "", None
        if name not in LOCAL and not name.startswith("/"):
            return f"{name}:{port}" if port else name
    return hostname or "?"


_SPANS = (
    "SELECT r.id, r.experiment_id, e.name, r.started_at, r.ended_at,"
    " json_extract(env.data, '$.hostname'), json_extract(c.params, '$.dsn')"
    " FROM runs r JOIN experiments e ON e.id = r.experiment_id"
    " JOIN cells c ON c.experiment_id = r.experiment_id AND c.id = r.cell_id"
    " JOIN environments env ON env.id = r.env_id"
    " WHERE r.started_at IS NOT NULL AND r.ended_at IS NOT NULL"
    " AND r.ended_at > r.started_at AND (r.error IS NULL OR substr(r.error, 1, ?) != ?)"
)


def overlaps(store: Store, experiment: ExperimentId) -> list[Overlap]:
    """Every pair of a run of ``experiment`` and another run of the results database that ran
    on one host at the same time, by run id."""
    window = store.conn.execute(
        "SELECT MIN(started_at), MAX(ended_at) FROM runs WHERE experiment_id = ?", (experiment,)
    ).fetchone()
    if window is None or window[0] is None or window[1] is None:
        return []
    rows = store.conn.execute(
        _SPANS + " AND r.started_at < ? AND r.ended_at > ?",
        (len(GONE), GONE, window[1], window[0]),
    ).fetchall()
    spans = sorted(
        (
            _Span(RunId(int(i)), ExperimentId(int(x)), str(n), str(s), str(e), _host(h, d))
            for i, x, n, s, e, h, d in rows
        ),
        key=lambda sp: (sp.start, sp.run),
    )
    found: list[Overlap] = []
    active: list[_Span] = []
    for span in spans:
        active = [a for a in active if a.end > span.start]  # strictly: touching is not sharing
        for a in active:
            if a.host != span.host:
                continue
            start, end = span.start, min(a.end, span.end)
            for mine, other in ((a, span), (span, a)):
                if mine.experiment == experiment:
                    found.append(Overlap(mine.run, other.run, other.name, a.host, start, end))
        active.append(span)
    return sorted(found, key=lambda o: (o.run, o.other))
