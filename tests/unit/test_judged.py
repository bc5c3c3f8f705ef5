"""What a populate cell is judged by, from what it fixes (its workload.py): its default metric
and the numbers it holds constant by design, which --metric refuses (the whole path through
report, compare, the HTML report and serve: tests/integration/test_report_timed.py)."""

from __future__ import annotations

from typing import Any

import pytest

from iolab.workloads.interface import judged
from iolab.workloads.registry import WORKLOADS

TIMES = {"elapsed_seconds", "first_finished_seconds", "wall_seconds"}
RATES = {"rows_per_second", "rows_per_second_with_warmup", "payload_mb_per_second"}


@pytest.mark.parametrize(
    ("params", "metric", "held"),
    [
        ({"rows": 1000}, "elapsed_seconds", set()),
        ({"duration": 2.0}, "rows_per_second", TIMES),
        ({"duration": "2s"}, "rows_per_second", TIMES),
        ({"duration": 2.0, "rate": 50.0}, "latency.transaction.p99_us", TIMES | RATES),
        ({"rows": 100, "rate": 50.0}, "latency.transaction.p99_us", TIMES | RATES),
        (
            {"duration": 2.0, "rate": 50.0, "commit_every": 10},
            "latency.commit.p99_us",
            TIMES | RATES,
        ),
        (
            {"duration": 2.0, "rate": 50.0, "method": "multirow", "batch": 10, "commit_every": 10},
            "latency.transaction.p99_us",
            TIMES | RATES,
        ),
    ],
)
def test_a_populate_cell_is_judged_by_what_it_measures(
    params: dict[str, Any], metric: str, held: set[str]
) -> None:
    found = WORKLOADS["populate"].judged(params)
    assert found is not None
    assert (found.metric, set(found.held)) == (metric, held)
    assert found.metric not in found.held


def test_cells_of_both_kinds_are_judged_by_a_number_none_holds() -> None:
    """A matrix of a fixed count and a duration: elapsed time is held by the timed cells, so
    the cells are ranked by rows/s."""
    found = judged(WORKLOADS["populate"], [{"rows": 1000}, {"duration": 5.0}])
    assert found is not None and (found.metric, set(found.held)) == ("rows_per_second", TIMES)
    assert found.held["elapsed_seconds"] == "each run lasts its duration, 5 s"


def test_tpch_and_disk_keep_their_metrics() -> None:
    tpch = judged(WORKLOADS["tpch"], [{"scale_factor": 0.01}])
    assert tpch is not None and (tpch.metric, dict(tpch.held)) == ("total_seconds", {})
    assert judged(WORKLOADS["disk"], [{"profile": "default"}]) is None
