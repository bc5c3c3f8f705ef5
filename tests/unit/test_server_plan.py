"""How PostgreSQL's server mode splits a loader's rows into the procedure's arguments."""

from __future__ import annotations

import pytest

from iolab.errors import BadInput
from iolab.workloads.populate.postgres import CHECK_ROWS, ServerPlan, server_plan


def commits(count: int, batch: int, commit_every: int) -> list[int]:
    """Rows per commit as the client loop commits: after the statement reaching commit_every."""
    out: list[int] = []
    done = pending = 0
    while done < count:
        k = min(batch, count - done)
        done += k
        pending += k
        if pending >= commit_every or done == count:
            out.append(pending)
            pending = 0
    return out


def planned_commits(plan: ServerPlan) -> list[int]:
    whole = [plan.statements * plan.batch] * plan.transactions
    return whole + ([plan.rest] if plan.rest else [])


@pytest.mark.parametrize(
    ("count", "commit_every", "batch"),
    [(190, 1, 1), (190, 10, 3), (170, 14, 7), (140, 40, 40), (7, 100, 1), (0, 1, 1), (5, 3, 8)],
)
def test_commits_fall_where_the_client_loop_puts_them(
    count: int, commit_every: int, batch: int
) -> None:
    plan = server_plan(count, commit_every, batch, 0.5)
    assert planned_commits(plan) == commits(count, batch, commit_every)
    assert plan.transactions * plan.statements * plan.batch + plan.rest == count


def test_the_seed_case_looks_at_the_clock_every_check_rows_rows() -> None:
    assert server_plan(3000, 1, 1, 0.5) == ServerPlan(3000, 1, 1, 0, CHECK_ROWS)
    assert server_plan(3000, 10, 3, 0.5) == ServerPlan(250, 4, 3, 0, CHECK_ROWS // 12)
    assert server_plan(3000, 1000, 1000, 0.5).group_size == 1  # a transaction above CHECK_ROWS
    assert server_plan(3000, 1, 1, 0).group_size == 1  # interval 0: a report after every commit


@pytest.mark.parametrize(("count", "commit_every", "batch"), [(10, 0, 1), (10, 1, 0), (-1, 1, 1)])
def test_bad_numbers_are_bad_input(count: int, commit_every: int, batch: int) -> None:
    with pytest.raises(BadInput, match="commit_every and batch of 1 or more"):
        server_plan(count, commit_every, batch, 0.5)
