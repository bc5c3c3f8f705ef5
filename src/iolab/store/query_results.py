"""Per-query results (table ``query_results``, migrations 0003 and 0004): written with the run,
read back."""

from __future__ import annotations

import json
import sqlite3

from iolab.results import QueryResult, RunId


def insert(conn: sqlite3.Connection, run: RunId, results: list[QueryResult]) -> None:
    """Add ``results`` of ``run``; the caller's transaction makes them part of the run."""
    conn.executemany(
        "INSERT INTO query_results (run_id, query, seconds, rows, answer_ok, error, io, start_s)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run,
                q.query,
                q.seconds,
                q.rows,
                None if q.answer_ok is None else int(q.answer_ok),
                q.error,
                None if q.io is None else json.dumps(q.io, sort_keys=True),
                q.start_s,
            )
            for q in results
        ],
    )


def read(conn: sqlite3.Connection, run: RunId) -> list[QueryResult]:
    rows = conn.execute(
        "SELECT query, seconds, rows, answer_ok, error, io, start_s FROM query_results"
        " WHERE run_id = ? ORDER BY query",
        (run,),
    )
    return [
        QueryResult(
            int(q),
            s,
            r,
            None if ok is None else bool(ok),
            e,
            None if io is None else json.loads(io),
            start,
        )
        for q, s, r, ok, e, io, start in rows
    ]
