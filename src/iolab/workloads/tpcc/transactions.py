"""The five transactions: their inputs as the specification draws them (clauses 2.4.1 to 2.8.1),
and their client-side SQL (``--mode client``), one statement at a time as the spec lists the
steps. The same steps run as server-side routines in ``--mode server`` (postgres.py,
mariadb.py).

Every client-side transaction takes a :class:`Sql` (the engine's placeholder and row-locking
clause) and a cursor inside an open transaction; the driver begins, commits, rolls back and
retries. A New-Order with the unused item number raises :class:`UserRollback`: the driver rolls
it back and counts it as the spec's rollback, not as an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from iolab.workloads.tpcc import spec
from iolab.workloads.tpcc.spec import Random


class UserRollback(Exception):
    """A New-Order with an unused item: rolled back as the specification requires."""


@dataclass(frozen=True)
class NewOrder:
    w_id: int
    d_id: int
    c_id: int
    items: tuple[tuple[int, int, int], ...]  # (ol_i_id, ol_supply_w_id, ol_quantity)

    @property
    def all_local(self) -> int:
        return int(all(s == self.w_id for _, s, _ in self.items))


@dataclass(frozen=True)
class Payment:
    w_id: int
    d_id: int
    c_w_id: int
    c_d_id: int
    c_id: int | None  # by number, or
    c_last: str | None  # by last name
    amount: Decimal


@dataclass(frozen=True)
class OrderStatus:
    w_id: int
    d_id: int
    c_id: int | None
    c_last: str | None


@dataclass(frozen=True)
class Delivery:
    w_id: int
    carrier_id: int


@dataclass(frozen=True)
class StockLevel:
    w_id: int
    d_id: int
    threshold: int


Input = NewOrder | Payment | OrderStatus | Delivery | StockLevel
WRITES = frozenset({"new_order", "payment", "delivery"})


def draw(kind: str, r: Random, w_id: int, warehouses: int) -> Input:
    """The inputs of one transaction of ``kind`` at home warehouse ``w_id``."""
    if kind == "new_order":
        count = r.uniform(5, 15)
        rollback = r.uniform(1, 100) == 1
        items = []
        for n in range(count):
            item = spec.UNUSED_ITEM if rollback and n == count - 1 else r.item_id()
            remote = warehouses > 1 and r.uniform(1, 100) == 1
            supply = r.other_warehouse(w_id, warehouses) if remote else w_id
            items.append((item, supply, r.uniform(1, 10)))
        return NewOrder(w_id, r.uniform(1, spec.DISTRICTS), r.customer_id(), tuple(items))
    if kind == "payment":
        d_id = r.uniform(1, spec.DISTRICTS)
        if warehouses == 1 or r.uniform(1, 100) <= 85:
            c_w_id, c_d_id = w_id, d_id
        else:
            c_w_id, c_d_id = r.other_warehouse(w_id, warehouses), r.uniform(1, spec.DISTRICTS)
        by_name = r.uniform(1, 100) <= 60
        amount = Decimal(r.money(100, 500_000))
        c_id, c_last = (None, r.customer_last()) if by_name else (r.customer_id(), None)
        return Payment(w_id, d_id, c_w_id, c_d_id, c_id, c_last, amount)
    if kind == "order_status":
        d_id = r.uniform(1, spec.DISTRICTS)
        if r.uniform(1, 100) <= 60:
            return OrderStatus(w_id, d_id, None, r.customer_last())
        return OrderStatus(w_id, d_id, r.customer_id(), None)
    if kind == "delivery":
        return Delivery(w_id, r.uniform(1, 10))
    if kind == "stock_level":
        return StockLevel(w_id, r.uniform(1, spec.DISTRICTS), r.uniform(10, 20))
    raise ValueError(kind)


class Sql(Protocol):
    """What client-side SQL needs of an engine."""

    def q(self, sql: str) -> str:
        """``sql`` with its ``%s`` placeholders in the driver's style."""
        ...

    @property
    def for_update(self) -> str:
        """The row-locking clause of a SELECT (empty where the transaction locks the file)."""
        ...

    def arg(self, value: Any) -> Any:
        """A parameter as the driver takes it (SQLite takes no Decimal)."""
        ...


def run_client(sql: Sql, cur: Any, tx: Input) -> None:
    """One transaction's statements on ``cur`` (its transaction open, not committed)."""
    if isinstance(tx, NewOrder):
        new_order(sql, cur, tx)
    elif isinstance(tx, Payment):
        payment(sql, cur, tx)
    elif isinstance(tx, OrderStatus):
        order_status(sql, cur, tx)
    elif isinstance(tx, Delivery):
        delivery(sql, cur, tx)
    else:
        stock_level(sql, cur, tx)


def _one(sql: Sql, cur: Any, text: str, *args: Any) -> Any:
    cur.execute(sql.q(text), tuple(sql.arg(a) for a in args))
    return cur.fetchone()


def _run(sql: Sql, cur: Any, text: str, *args: Any) -> None:
    cur.execute(sql.q(text), tuple(sql.arg(a) for a in args))


def new_order(sql: Sql, cur: Any, tx: NewOrder) -> Decimal:
    w, d = tx.w_id, tx.d_id
    c_discount, _c_last, _c_credit, w_tax = _one(
        sql,
        cur,
        "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse "
        "WHERE w_id = %s AND c_w_id = w_id AND c_d_id = %s AND c_id = %s",
        w,
        d,
        tx.c_id,
    )
    o_id, d_tax = _one(
        sql,
        cur,
        "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = %s AND d_id = %s" + sql.for_update,
        w,
        d,
    )
    _run(
        sql,
        cur,
        "UPDATE district SET d_next_o_id = %s WHERE d_w_id = %s AND d_id = %s",
        o_id + 1,
        w,
        d,
    )
    _run(
        sql,
        cur,
        "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, "
        "o_all_local) VALUES (%s, %s, %s, %s, CURRENT_TIMESTAMP, NULL, %s, %s)",
        o_id,
        d,
        w,
        tx.c_id,
        len(tx.items),
        tx.all_local,
    )
    _run(
        sql,
        cur,
        "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (%s, %s, %s)",
        o_id,
        d,
        w,
    )
    total = Decimal(0)
    dist = f"s_dist_{d:02d}"
    for number, (i_id, supply, quantity) in enumerate(tx.items, start=1):
        item = _one(sql, cur, "SELECT i_price, i_name, i_data FROM item WHERE i_id = %s", i_id)
        if item is None:
            raise UserRollback(f"item number {i_id} is not valid")
        price = Decimal(str(item[0]))
        s_quantity, dist_info = _one(
            sql,
            cur,
            f"SELECT s_quantity, {dist} FROM stock WHERE s_i_id = %s AND s_w_id = %s"
            + sql.for_update,
            i_id,
            supply,
        )
        left = s_quantity - quantity if s_quantity >= quantity + 10 else s_quantity - quantity + 91
        _run(
            sql,
            cur,
            "UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s, s_order_cnt = s_order_cnt + 1, "
            "s_remote_cnt = s_remote_cnt + %s WHERE s_i_id = %s AND s_w_id = %s",
            left,
            quantity,
            int(supply != w),
            i_id,
            supply,
        )
        amount = price * quantity
        total += amount
        _run(
            sql,
            cur,
            "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, "
            "ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) "
            "VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, %s)",
            o_id,
            d,
            w,
            number,
            i_id,
            supply,
            quantity,
            amount,
            dist_info,
        )
    rates = (1 - Decimal(str(c_discount))) * (1 + Decimal(str(w_tax)) + Decimal(str(d_tax)))
    return total * rates


def _customer_by_name(sql: Sql, cur: Any, w: int, d: int, last: str) -> int:
    """The customer at position n/2 rounded up of those named ``last``, by first name."""
    cur.execute(
        sql.q(
            "SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s "
            "ORDER BY c_first"
        ),
        (w, d, last),
    )
    rows = cur.fetchall()
    if not rows:
        raise LookupError(f"no customer named {last} in district {d} of warehouse {w}")
    return int(rows[(len(rows) + 1) // 2 - 1][0])


def payment(sql: Sql, cur: Any, tx: Payment) -> None:
    w, d = tx.w_id, tx.d_id
    _run(sql, cur, "UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s", tx.amount, w)
    (w_name,) = _one(
        sql,
        cur,
        "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse "
        "WHERE w_id = %s",
        w,
    )[:1]
    _run(
        sql,
        cur,
        "UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %s AND d_id = %s",
        tx.amount,
        w,
        d,
    )
    (d_name,) = _one(
        sql,
        cur,
        "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district "
        "WHERE d_w_id = %s AND d_id = %s",
        w,
        d,
    )[:1]
    c_w, c_d = tx.c_w_id, tx.c_d_id
    c_id = tx.c_id if tx.c_id is not None else _customer_by_name(sql, cur, c_w, c_d, str(tx.c_last))
    row = _one(
        sql,
        cur,
        "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, "
        "c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_data FROM customer "
        "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s" + sql.for_update,
        c_w,
        c_d,
        c_id,
    )
    credit, c_data = row[10], row[14]
    if credit == "BC":
        c_data = f"{c_id} {c_d} {c_w} {d} {w} {tx.amount}|{c_data}"[:500]
        _run(
            sql,
            cur,
            "UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, "
            "c_payment_cnt = c_payment_cnt + 1, c_data = %s "
            "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
            tx.amount,
            tx.amount,
            c_data,
            c_w,
            c_d,
            c_id,
        )
    else:
        _run(
            sql,
            cur,
            "UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, "
            "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
            tx.amount,
            tx.amount,
            c_w,
            c_d,
            c_id,
        )
    _run(
        sql,
        cur,
        "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, "
        "h_data) VALUES (%s, %s, %s, %s, %s, CURRENT_TIMESTAMP, %s, %s)",
        c_id,
        c_d,
        c_w,
        d,
        w,
        tx.amount,
        f"{w_name}    {d_name}",
    )


def order_status(sql: Sql, cur: Any, tx: OrderStatus) -> int:
    w, d = tx.w_id, tx.d_id
    c_id = tx.c_id if tx.c_id is not None else _customer_by_name(sql, cur, w, d, str(tx.c_last))
    _one(
        sql,
        cur,
        "SELECT c_balance, c_first, c_middle, c_last FROM customer "
        "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
        w,
        d,
        c_id,
    )
    order = _one(
        sql,
        cur,
        "SELECT o_id, o_entry_d, o_carrier_id FROM orders "
        "WHERE o_w_id = %s AND o_d_id = %s AND o_c_id = %s ORDER BY o_id DESC LIMIT 1",
        w,
        d,
        c_id,
    )
    if order is None:
        return 0
    cur.execute(
        sql.q(
            "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d "
            "FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s"
        ),
        (w, d, order[0]),
    )
    return len(cur.fetchall())


def delivery(sql: Sql, cur: Any, tx: Delivery) -> int:
    """Deliver the oldest new order of each district; the districts that had none."""
    w = tx.w_id
    skipped = 0
    for d in range(1, spec.DISTRICTS + 1):
        row = _one(
            sql,
            cur,
            "SELECT no_o_id FROM new_order WHERE no_w_id = %s AND no_d_id = %s "
            "ORDER BY no_o_id LIMIT 1" + sql.for_update,
            w,
            d,
        )
        if row is None:
            skipped += 1
            continue
        o_id = row[0]
        _run(
            sql,
            cur,
            "DELETE FROM new_order WHERE no_w_id = %s AND no_d_id = %s AND no_o_id = %s",
            w,
            d,
            o_id,
        )
        if cur.rowcount != 1:  # another delivery took it first
            skipped += 1
            continue
        (c_id,) = _one(
            sql,
            cur,
            "SELECT o_c_id FROM orders WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s",
            w,
            d,
            o_id,
        )
        _run(
            sql,
            cur,
            "UPDATE orders SET o_carrier_id = %s WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s",
            tx.carrier_id,
            w,
            d,
            o_id,
        )
        _run(
            sql,
            cur,
            "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP "
            "WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
            w,
            d,
            o_id,
        )
        (amount,) = _one(
            sql,
            cur,
            "SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s "
            "AND ol_o_id = %s",
            w,
            d,
            o_id,
        )
        _run(
            sql,
            cur,
            "UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 "
            "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
            Decimal(str(amount or 0)),
            w,
            d,
            c_id,
        )
    return skipped


def stock_level(sql: Sql, cur: Any, tx: StockLevel) -> int:
    w, d = tx.w_id, tx.d_id
    (next_o_id,) = _one(
        sql, cur, "SELECT d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s", w, d
    )
    (low,) = _one(
        sql,
        cur,
        "SELECT count(DISTINCT s_i_id) FROM order_line, stock "
        "WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id < %s AND ol_o_id >= %s "
        "AND s_w_id = %s AND s_i_id = ol_i_id AND s_quantity < %s",
        w,
        d,
        next_o_id,
        next_o_id - 20,
        w,
        tx.threshold,
    )
    return int(low)
