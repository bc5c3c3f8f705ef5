"""Per-query times of query workloads (TPC-H) across an experiment's cells."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class QueryTimes:
    """One cell: each query's median seconds over the cell's done runs (None: never finished)."""

    cell: str
    seconds: Mapping[int, float | None]
    runs: int


def query_times(cells: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[QueryTimes]:
    """From (cell label, summaries of its done runs), each summary with its ``queries`` list
    (query, seconds, error); cells whose runs have no queries are left out, and so is a
    ``queries`` that is not such a list (sysbench's count of its statements: issue 45's
    presentation by name, until the report asks each workload for its tables)."""
    out = []
    for label, summaries in cells:
        times: dict[int, list[float]] = {}
        seen: set[int] = set()
        for s in summaries:
            queries = s.get("queries")
            for q in queries if isinstance(queries, list) else ():
                number = int(q["query"])
                seen.add(number)
                if q.get("seconds") is not None and not q.get("error"):
                    times.setdefault(number, []).append(float(q["seconds"]))
        if seen:
            medians = {n: statistics.median(times[n]) if n in times else None for n in sorted(seen)}
            out.append(QueryTimes(label, medians, len(summaries)))
    return out


def fastest(times: Sequence[QueryTimes], query: int) -> str | None:
    """The cell with the lowest median for ``query`` (None when no cell finished it)."""
    finished = [(t.seconds[query], t.cell) for t in times if t.seconds.get(query) is not None]
    return min(finished)[1] if finished else None
