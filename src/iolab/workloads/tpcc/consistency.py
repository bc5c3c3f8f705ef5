"""TPC-C's consistency conditions 1 to 4 (clause 3.3.2.1-4), and no order line of an unused
item, checked on the database after a run. Each condition is one query over every warehouse or
district; a condition holds when no row breaks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

CENT = Decimal("0.005")  # money compared to the cent (SQLite keeps it as floating point)


@dataclass(frozen=True)
class Condition:
    name: str
    ok: bool
    detail: str


def _rows(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    try:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]
    finally:
        cur.close()


def _money(value: Any) -> Decimal:
    return Decimal(str(value if value is not None else 0))


def check(conn: Any) -> list[Condition]:
    """The five conditions on ``conn`` (its transaction is ended after)."""
    found: list[Condition] = []

    bad = [
        f"warehouse {w}: w_ytd {ytd} but sum(d_ytd) {total}"
        for w, ytd, total in _rows(
            conn,
            "SELECT w_id, w_ytd, (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id) "
            "FROM warehouse ORDER BY w_id",
        )
        if abs(_money(ytd) - _money(total)) > CENT
    ]
    found.append(_condition("1", "w_ytd = sum(d_ytd) of its districts", bad))

    bad = []
    for w, d, next_o_id, max_o, max_no in _rows(
        conn,
        "SELECT d_w_id, d_id, d_next_o_id, "
        "(SELECT max(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id), "
        "(SELECT max(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id) "
        "FROM district ORDER BY d_w_id, d_id",
    ):
        if max_o != next_o_id - 1 or (max_no is not None and max_no != next_o_id - 1):
            bad.append(
                f"district {d} of warehouse {w}: d_next_o_id - 1 = {next_o_id - 1}, "
                f"max(o_id) = {max_o}, max(no_o_id) = {max_no}"
            )
    found.append(_condition("2", "d_next_o_id - 1 = max(o_id) = max(no_o_id)", bad))

    bad = [
        f"district {d} of warehouse {w}: max - min + 1 = {span} but {n} rows"
        for w, d, span, n in _rows(
            conn,
            "SELECT no_w_id, no_d_id, max(no_o_id) - min(no_o_id) + 1, count(*) FROM new_order "
            "GROUP BY no_w_id, no_d_id ORDER BY no_w_id, no_d_id",
        )
        if span != n
    ]
    found.append(_condition("3", "max(no_o_id) - min(no_o_id) + 1 = new_order rows", bad))

    lines = {
        (w, d): n
        for w, d, n in _rows(
            conn, "SELECT ol_w_id, ol_d_id, count(*) FROM order_line GROUP BY ol_w_id, ol_d_id"
        )
    }
    bad = [
        f"district {d} of warehouse {w}: sum(o_ol_cnt) = {total} but {lines.get((w, d), 0)} "
        "order lines"
        for w, d, total in _rows(
            conn, "SELECT o_w_id, o_d_id, sum(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id"
        )
        if int(total) != lines.get((w, d), 0)
    ]
    found.append(_condition("4", "sum(o_ol_cnt) = order_line rows", bad))

    ((unused,),) = _rows(
        conn,
        "SELECT count(*) FROM order_line WHERE NOT EXISTS "
        "(SELECT 1 FROM item WHERE i_id = ol_i_id)",
    )
    found.append(
        _condition(
            "unused_item",
            "no order line of an unused item",
            [f"{unused} order lines of an item that does not exist"] if unused else [],
        )
    )
    conn.rollback()
    return found


def _condition(number: str, what: str, bad: list[str]) -> Condition:
    name = f"condition {number}" if number.isdigit() else number
    if not bad:
        return Condition(name, True, what)
    more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
    return Condition(name, False, f"{what} fails: {'; '.join(bad[:3])}{more}")
