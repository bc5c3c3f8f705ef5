"""PostgreSQL's side of TPC-C.

Tables: one per tablespace round-robin (the layout's data files), each table's key and index in
its tablespace. Load: the CSV files cut into chunks, ``loaders`` connections each sending chunks
with ``COPY ... FROM STDIN (FORMAT csv)`` (an empty field is NULL); then, in parallel, primary
keys and the two indexes, ``VACUUM (ANALYZE)`` of every table, and a ``CHECKPOINT``.

``--mode server``: five PL/pgSQL functions (``tpcc_new_order`` ...), each call one transaction
in autocommit. A New-Order with the unused item raises ``P0001`` with ``tpcc:`` in its message.
Retried: ``40001`` (serialization failure) and ``40P01`` (deadlock).

Counter: ``xact_commit + xact_rollback`` of ``pg_stat_database`` for the benchmark database
only. A backend sends its counts to the shared statistics when it goes idle, at most once a
second, so at each edge of the measured window every user's connection runs
``pg_stat_force_next_flush()`` (itself one transaction, which is subtracted).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from psycopg import errors, pq

from iolab.drivercore import Target
from iolab.engines.external import Objects
from iolab.engines.interface import Engine
from iolab.engines.rights import may_checkpoint
from iolab.workloads.parallel import Chunk, run_parallel
from iolab.workloads.tpcc import spec
from iolab.workloads.tpcc.dialect import Connect, Progress, chunks, distribute
from iolab.workloads.tpcc.modes import CLIENT, SERVER
from iolab.workloads.tpcc.transactions import (
    Delivery,
    Input,
    NewOrder,
    OrderStatus,
    Payment,
)

TITLE = "PostgreSQL"
ROUTINE_NAMES = (
    "tpcc_new_order",
    "tpcc_customer_by_name",
    "tpcc_payment",
    "tpcc_order_status",
    "tpcc_delivery",
    "tpcc_stock_level",
)
# what the workload creates in a server's database (--dsn): refused when there, dropped after
OBJECTS = Objects(tables=spec.TABLES, functions=ROUTINE_NAMES)
RETRY_STATES = frozenset({"40001", "40P01"})

_DIST = " ".join(f"WHEN {d} THEN s_dist_{d:02d}" for d in range(1, 11))

ROUTINES = (
    f"""
CREATE FUNCTION tpcc_new_order(p_w_id int, p_d_id int, p_c_id int, p_items int[],
                               p_supply int[], p_qty int[]) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
  v_discount numeric; v_last varchar; v_credit char(2); v_w_tax numeric; v_d_tax numeric;
  v_o_id int; v_price numeric; v_name varchar; v_data varchar; v_dist char(24);
  v_all_local int := 1; v_total numeric := 0; v_amount numeric;
  n int := array_length(p_items, 1);
BEGIN
  SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_last, v_credit, v_w_tax
    FROM customer, warehouse
   WHERE w_id = p_w_id AND c_w_id = w_id AND c_d_id = p_d_id AND c_id = p_c_id;
  UPDATE district SET d_next_o_id = d_next_o_id + 1
   WHERE d_w_id = p_w_id AND d_id = p_d_id
  RETURNING d_next_o_id - 1, d_tax INTO v_o_id, v_d_tax;
  FOR i IN 1..n LOOP
    IF p_supply[i] <> p_w_id THEN v_all_local := 0; END IF;
  END LOOP;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
                      o_all_local)
  VALUES (v_o_id, p_d_id, p_w_id, p_c_id, now(), NULL, n, v_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
  FOR i IN 1..n LOOP
    SELECT i_price, i_name, i_data INTO v_price, v_name, v_data FROM item WHERE i_id = p_items[i];
    IF NOT FOUND THEN
      RAISE EXCEPTION 'tpcc: item number % is not valid', p_items[i];
    END IF;
    UPDATE stock
       SET s_quantity = CASE WHEN s_quantity >= p_qty[i] + 10 THEN s_quantity - p_qty[i]
                             ELSE s_quantity - p_qty[i] + 91 END,
           s_ytd = s_ytd + p_qty[i], s_order_cnt = s_order_cnt + 1,
           s_remote_cnt = s_remote_cnt + CASE WHEN p_supply[i] <> p_w_id THEN 1 ELSE 0 END
     WHERE s_i_id = p_items[i] AND s_w_id = p_supply[i]
    RETURNING CASE p_d_id {_DIST} END INTO v_dist;
    v_amount := p_qty[i] * v_price;
    v_total := v_total + v_amount;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                            ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
    VALUES (v_o_id, p_d_id, p_w_id, i, p_items[i], p_supply[i], NULL, p_qty[i], v_amount,
            v_dist);
  END LOOP;
  RETURN v_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax);
END $$""",
    """
CREATE FUNCTION tpcc_customer_by_name(p_w_id int, p_d_id int, p_last varchar) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v_n int; v_c_id int;
BEGIN
  SELECT count(*) INTO v_n FROM customer
   WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_last;
  SELECT c_id INTO v_c_id FROM customer
   WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_last
   ORDER BY c_first OFFSET (v_n + 1) / 2 - 1 LIMIT 1;
  RETURN v_c_id;
END $$""",
    """
CREATE FUNCTION tpcc_payment(p_w_id int, p_d_id int, p_c_w_id int, p_c_d_id int, p_c_id int,
                             p_c_last varchar, p_amount numeric) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v_w_name varchar; v_d_name varchar; v_c_id int := p_c_id;
BEGIN
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w_id
  RETURNING w_name INTO v_w_name;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w_id AND d_id = p_d_id
  RETURNING d_name INTO v_d_name;
  IF p_c_last IS NOT NULL THEN
    v_c_id := tpcc_customer_by_name(p_c_w_id, p_c_d_id, p_c_last);
  END IF;
  UPDATE customer
     SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
         c_payment_cnt = c_payment_cnt + 1,
         c_data = CASE WHEN c_credit = 'BC'
                       THEN left(v_c_id || ' ' || p_c_d_id || ' ' || p_c_w_id || ' ' || p_d_id
                                 || ' ' || p_w_id || ' ' || p_amount || '|' || c_data, 500)
                       ELSE c_data END
   WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, now(), p_amount,
          v_w_name || '    ' || v_d_name);
  RETURN v_c_id;
END $$""",
    """
CREATE FUNCTION tpcc_order_status(p_w_id int, p_d_id int, p_c_id int, p_c_last varchar)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE v_c_id int := p_c_id; v_balance numeric; v_first varchar; v_middle char(2);
        v_last varchar; v_o_id int; v_entry timestamp; v_carrier int; v_lines int;
BEGIN
  IF p_c_last IS NOT NULL THEN
    v_c_id := tpcc_customer_by_name(p_w_id, p_d_id, p_c_last);
  END IF;
  SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last
    FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o_id, v_entry, v_carrier FROM orders
   WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id ORDER BY o_id DESC LIMIT 1;
  SELECT count(*) INTO v_lines FROM (
    SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
     WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id) AS ol;
  RETURN v_lines;
END $$""",
    """
CREATE FUNCTION tpcc_delivery(p_w_id int, p_carrier_id int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v_o_id int; v_c_id int; v_amount numeric; v_skipped int := 0;
BEGIN
  FOR v_d IN 1..10 LOOP
    SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d
     ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF NOT FOUND THEN
      v_skipped := v_skipped + 1;
      CONTINUE;
    END IF;
    DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d AND no_o_id = v_o_id;
    UPDATE orders SET o_carrier_id = p_carrier_id
     WHERE o_w_id = p_w_id AND o_d_id = v_d AND o_id = v_o_id RETURNING o_c_id INTO v_c_id;
    UPDATE order_line SET ol_delivery_d = now()
     WHERE ol_w_id = p_w_id AND ol_d_id = v_d AND ol_o_id = v_o_id;
    SELECT sum(ol_amount) INTO v_amount FROM order_line
     WHERE ol_w_id = p_w_id AND ol_d_id = v_d AND ol_o_id = v_o_id;
    UPDATE customer SET c_balance = c_balance + v_amount, c_delivery_cnt = c_delivery_cnt + 1
     WHERE c_w_id = p_w_id AND c_d_id = v_d AND c_id = v_c_id;
  END LOOP;
  RETURN v_skipped;
END $$""",
    """
CREATE FUNCTION tpcc_stock_level(p_w_id int, p_d_id int, p_threshold int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE v_next int; v_low int;
BEGIN
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
  SELECT count(DISTINCT s_i_id) INTO v_low FROM order_line, stock
   WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id < v_next AND ol_o_id >= v_next - 20
     AND s_w_id = p_w_id AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  RETURN v_low;
END $$""",
)


# --mode server: one prepared statement per routine on each user's connection
NEW_ORDER, PAYMENT, ORDER_STATUS, DELIVERY, STOCK_LEVEL = (
    b"tpcc_new_order",
    b"tpcc_payment",
    b"tpcc_order_status",
    b"tpcc_delivery",
    b"tpcc_stock_level",
)
CALLS: dict[bytes, bytes] = {
    NEW_ORDER: b"SELECT tpcc_new_order($1::int, $2::int, $3::int, $4::int[], $5::int[], $6::int[])",
    PAYMENT: b"SELECT tpcc_payment($1::int, $2::int, $3::int, $4::int, $5::int, $6::varchar, "
    b"$7::numeric)",
    ORDER_STATUS: b"SELECT tpcc_order_status($1::int, $2::int, $3::int, $4::varchar)",
    DELIVERY: b"SELECT tpcc_delivery($1::int, $2::int)",
    STOCK_LEVEL: b"SELECT tpcc_stock_level($1::int, $2::int, $3::int)",
}
_OK = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)


def _int_array(values: tuple[int, ...]) -> bytes:
    """An ``int[]`` in PostgreSQL's text form: ``{1,2,3}``."""
    return b"{%s}" % b",".join(b"%d" % v for v in values)


def _check(conn: Any, result: Any) -> None:
    """Raise the server's error of a libpq call as psycopg raises it (its SQLSTATE kept); on a
    connection the call found lost, :func:`lost_reason` of the connection's message."""
    if result.status not in _OK:
        if conn.pgconn.status == pq.ConnStatus.BAD:
            said = conn.pgconn.error_message.decode(conn.info.encoding, "replace")
            raise errors.OperationalError(lost_reason(said))
        raise errors.error_from_result(result, conn.info.encoding)


_SEVERITIES = ("FATAL:  ", "PANIC:  ", "ERROR:  ")


def lost_reason(message: str) -> str:
    """Why libpq lost a connection: the server's line in its message (``terminating connection
    due to administrator command``) without its severity, else the first line. The result's
    message says only "server closed the connection unexpectedly", and the connection's puts
    that first when its query's write found the server gone before it read the server's
    reason (a race); the compiled core picks the same line (tpcc_pg.c)."""
    lines = message.splitlines()
    for line in lines:
        for severity in _SEVERITIES:
            if line.startswith(severity):
                return line[len(severity) :].rstrip()
    return lines[0].rstrip() if lines else "no error details available"


class PostgresTpcc:
    title = TITLE
    modes: tuple[str, ...] = (SERVER, CLIENT)
    for_update = " FOR UPDATE"

    def __init__(
        self, tablespaces: list[str], loaders: int = 2, core: Target | None = None
    ) -> None:
        self.places: dict[str, str] = distribute(list(spec.TABLES), tablespaces)
        self.loaders = loaders
        self.core = core  # the compiled core runs its server mode on it (driver.py)

    def q(self, sql: str) -> str:
        return sql

    def arg(self, value: Any) -> Any:
        return value

    def create_tables(self, conn: Any) -> None:
        for table in spec.TABLES:
            columns = ", ".join(
                f"{name} {spec.column_type(t)}{'' if t.endswith(' NULL') else ' NOT NULL'}"
                for name, t in spec.COLUMNS[table]
            )
            conn.execute(f"CREATE TABLE {table} ({columns}) TABLESPACE {self.places[table]}")
        conn.commit()

    def load(self, connect: Connect, directory: Path, progress: Progress) -> None:
        def work(conn: Any, chunk: Chunk, stop: threading.Event) -> None:
            progress(send_chunk(conn, chunk, stop))

        run_parallel(TITLE, _autocommit(connect), self.loaders, chunks(directory), work)

    def finish_load(self, connect: Connect) -> None:
        def run(conn: Any, statements: list[str], _stop: threading.Event) -> None:
            for statement in statements:
                conn.execute(statement)

        builds: list[list[str]] = []
        for table in sorted(
            spec.TABLES, key=lambda t: t not in ("stock", "order_line", "customer")
        ):
            space = self.places[table]
            todo = []
            if table in spec.PRIMARY_KEYS:
                todo.append(
                    f"ALTER TABLE {table} ADD PRIMARY KEY ({', '.join(spec.PRIMARY_KEYS[table])}) "
                    f"USING INDEX TABLESPACE {space}"
                )
            if table in spec.INDEXES:
                name, cols = spec.INDEXES[table]
                todo.append(
                    f"CREATE INDEX {name} ON {table} ({', '.join(cols)}) TABLESPACE {space}"
                )
            todo.append(f"VACUUM (ANALYZE) {table}")
            builds.append(todo)
        run_parallel(TITLE, _autocommit(connect), self.loaders, builds, run)
        conn = connect()
        try:
            conn.autocommit = True
            if may_checkpoint(conn):  # a server's user may not: said before the run
                conn.execute("CHECKPOINT")
        finally:
            conn.close()

    def install_routines(self, conn: Any) -> None:
        for routine in ROUTINES:
            conn.execute(routine)
        conn.commit()

    def prepare(self, conn: Any, mode: str) -> None:
        conn.autocommit = mode == SERVER
        conn.prepare_threshold = 0  # every statement prepared once per connection
        if mode == SERVER:
            for name, text in CALLS.items():
                _check(conn, conn.pgconn.prepare(name, text))

    def begin(self, conn: Any, write: bool) -> None:
        pass  # psycopg opens a transaction at the first statement

    def call(self, conn: Any, tx: Input) -> None:
        """One routine call on the connection's prepared statement, its parameters sent as
        text: libpq's ``PQexecPrepared`` (which runs without the GIL), not a psycopg cursor
        (which costs ~60 us more client CPU per call in adaptation and its wait loop)."""
        if isinstance(tx, NewOrder):
            items, supply, qty = zip(*tx.items, strict=True)
            name = NEW_ORDER
            args: list[bytes | None] = [
                b"%d" % tx.w_id,
                b"%d" % tx.d_id,
                b"%d" % tx.c_id,
                _int_array(items),
                _int_array(supply),
                _int_array(qty),
            ]
        elif isinstance(tx, Payment):
            name = PAYMENT
            args = [
                b"%d" % tx.w_id,
                b"%d" % tx.d_id,
                b"%d" % tx.c_w_id,
                b"%d" % tx.c_d_id,
                None if tx.c_id is None else b"%d" % tx.c_id,
                None if tx.c_last is None else tx.c_last.encode(),
                str(tx.amount).encode(),
            ]
        elif isinstance(tx, OrderStatus):
            name = ORDER_STATUS
            args = [
                b"%d" % tx.w_id,
                b"%d" % tx.d_id,
                None if tx.c_id is None else b"%d" % tx.c_id,
                None if tx.c_last is None else tx.c_last.encode(),
            ]
        elif isinstance(tx, Delivery):
            name, args = DELIVERY, [b"%d" % tx.w_id, b"%d" % tx.carrier_id]
        else:
            name = STOCK_LEVEL
            args = [b"%d" % tx.w_id, b"%d" % tx.d_id, b"%d" % tx.threshold]
        _check(conn, conn.pgconn.exec_prepared(name, args))

    def commit(self, conn: Any) -> None:
        conn.commit()

    def rollback(self, conn: Any) -> None:
        conn.rollback()

    def retryable(self, exc: BaseException) -> bool:
        return getattr(exc, "sqlstate", None) in RETRY_STATES

    def user_rollback(self, exc: BaseException) -> bool:
        return getattr(exc, "sqlstate", None) == "P0001" and "tpcc:" in str(exc)

    def counter(self, conn: Any, sessions: Sequence[Any]) -> int | None:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database "
            "WHERE datname = current_database()"
        ).fetchone()
        return int(row[0])

    def flush_counter(self, conn: Any) -> int:
        was = conn.autocommit
        conn.autocommit = True
        try:
            conn.execute("SELECT pg_stat_force_next_flush()")
        except Exception:  # a server's user may not call it: its counts then lag a second
            return 1  # the refused call ended a transaction too
        finally:
            conn.autocommit = was
        return 1


def send_chunk(conn: Any, chunk: Chunk, stop: threading.Event | None = None) -> int:
    """One ``COPY ... FROM STDIN`` of ``chunk`` (an empty field is NULL); the bytes sent."""
    sent = 0
    with conn.cursor() as cur, cur.copy(f"COPY {chunk.table} FROM STDIN (FORMAT csv)") as copy:
        for block in chunk.blocks(stop):
            copy.write(block)
            sent += len(block)
    return sent


def _autocommit(connect: Connect) -> Connect:
    def make() -> Any:
        conn = connect()
        conn.autocommit = True
        return conn

    return make


def dialect(engine: Engine, loaders: int) -> PostgresTpcc:
    """TPC-C's SQL for a running server's tablespaces."""
    return PostgresTpcc(engine.spaces(), loaders, engine.core_target())
