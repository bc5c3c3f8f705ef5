"""MariaDB's (InnoDB's) side of TPC-C.

Tables: InnoDB with their primary keys from the start (an InnoDB table is a B-tree on its key;
the CSV files are in key order), text in ``latin1`` with its binary collation, each table's
tablespace file in one of the layout's data directories round-robin (``DATA DIRECTORY``).
Load: one ``LOAD DATA LOCAL INFILE`` per table, ``loaders`` tables at a time (an empty field
of a nullable column is read as NULL); then the two indexes, ``ANALYZE TABLE`` and every dirty
page written.

``--mode server``: five SQL/PSM procedures (``tpcc_new_order`` ...) that end with their own
``COMMIT``, as HammerDB's do: a transaction is one ``CALL``, one round trip, and its locks are
not held while the client reads the result and sends a ``COMMIT`` (measured on two cores, 4
users: 19 % more NOPM than a ``CALL`` and a ``COMMIT``; bench/README.md). The items of a
New-Order go as comma-separated lists. The unused item is refused by ``SIGNAL SQLSTATE '45000'``
with ``tpcc:`` in its message before the ``COMMIT``: the driver rolls the transaction back.
Retried: 1213 (deadlock) and 1205 (lock wait timeout).

Counter: the transactions the users' sessions ended (committed or rolled back), from
performance_schema's transaction summary per thread, so that other clients of a server of the
user's do not count; iolab's servers turn on its ``transaction`` instrument. A ``COMMIT`` inside
a procedure is no ``statement/sql/commit`` there, so statements cannot be counted instead.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from iolab.drivercore import Target
from iolab.engines import catalog
from iolab.engines.external import Objects
from iolab.engines.innodb import checkpoint, sql_string
from iolab.engines.interface import Engine
from iolab.workloads.parallel import run_parallel
from iolab.workloads.tpcc import spec
from iolab.workloads.tpcc.dialect import Connect, Progress, distribute
from iolab.workloads.tpcc.modes import CLIENT, SERVER
from iolab.workloads.tpcc.transactions import (
    Delivery,
    Input,
    NewOrder,
    OrderStatus,
    Payment,
    StockLevel,
)

TITLE = "MariaDB"
# what the workload creates in a server's database (--dsn): refused when there, dropped after
OBJECTS = Objects(
    tables=spec.TABLES,
    procedures=(
        "tpcc_new_order",
        "tpcc_payment",
        "tpcc_order_status",
        "tpcc_delivery",
        "tpcc_stock_level",
    ),
    functions=("tpcc_customer_by_name",),
    privileges=("UPDATE", "DELETE", "ALTER", "INDEX"),  # the transactions; keys after the load
)
RETRY_CODES = frozenset({1213, 1205})
ER_SIGNAL_EXCEPTION = 1644
ER_TABLEACCESS_DENIED = 1142  # a server's user without SELECT on performance_schema

_DIST = " ".join(f"WHEN {d} THEN s_dist_{d:02d}" for d in range(1, 11))


def _nth(var: str) -> str:
    return f"CAST(SUBSTRING_INDEX(SUBSTRING_INDEX({var}, ',', v_i), ',', -1) AS SIGNED)"


ROUTINES = (
    f"""
CREATE PROCEDURE tpcc_new_order(p_w_id INT, p_d_id INT, p_c_id INT, p_n INT,
  p_items VARCHAR(255), p_supply VARCHAR(255), p_qty VARCHAR(255), p_all_local INT)
BEGIN
  DECLARE v_discount DECIMAL(4,4); DECLARE v_last VARCHAR(16); DECLARE v_credit CHAR(2);
  DECLARE v_w_tax DECIMAL(4,4); DECLARE v_d_tax DECIMAL(4,4); DECLARE v_o_id INT;
  DECLARE v_price DECIMAL(5,2); DECLARE v_name VARCHAR(24); DECLARE v_data VARCHAR(50);
  DECLARE v_s_qty INT; DECLARE v_dist CHAR(24);
  DECLARE v_i INT DEFAULT 1; DECLARE v_item INT; DECLARE v_sw INT; DECLARE v_q INT;
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  SELECT c_discount, c_last, c_credit, w_tax INTO v_discount, v_last, v_credit, v_w_tax
    FROM customer, warehouse
   WHERE w_id = p_w_id AND c_w_id = w_id AND c_d_id = p_d_id AND c_id = p_c_id;
  SELECT d_next_o_id, d_tax INTO v_o_id, v_d_tax FROM district
   WHERE d_w_id = p_w_id AND d_id = p_d_id FOR UPDATE;
  UPDATE district SET d_next_o_id = v_o_id + 1 WHERE d_w_id = p_w_id AND d_id = p_d_id;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
                      o_all_local)
  VALUES (v_o_id, p_d_id, p_w_id, p_c_id, NOW(), NULL, p_n, p_all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);
  WHILE v_i <= p_n DO
    SET v_item = {_nth("p_items")};
    SET v_sw = {_nth("p_supply")};
    SET v_q = {_nth("p_qty")};
    SET v_price = NULL;
    SELECT i_price, i_name, i_data INTO v_price, v_name, v_data FROM item WHERE i_id = v_item;
    IF v_price IS NULL THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'tpcc: item number is not valid';
    END IF;
    SELECT s_quantity, CASE p_d_id {_DIST} END INTO v_s_qty, v_dist FROM stock
     WHERE s_i_id = v_item AND s_w_id = v_sw FOR UPDATE;
    UPDATE stock
       SET s_quantity = IF(v_s_qty >= v_q + 10, v_s_qty - v_q, v_s_qty - v_q + 91),
           s_ytd = s_ytd + v_q, s_order_cnt = s_order_cnt + 1,
           s_remote_cnt = s_remote_cnt + IF(v_sw <> p_w_id, 1, 0)
     WHERE s_i_id = v_item AND s_w_id = v_sw;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                            ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
    VALUES (v_o_id, p_d_id, p_w_id, v_i, v_item, v_sw, NULL, v_q, v_q * v_price, v_dist);
    SET v_i = v_i + 1;
  END WHILE;
  COMMIT;
END""",
    """
CREATE FUNCTION tpcc_customer_by_name(p_w_id INT, p_d_id INT, p_last VARCHAR(16))
RETURNS INT READS SQL DATA
BEGIN
  DECLARE v_n INT; DECLARE v_off INT; DECLARE v_c_id INT;
  SELECT count(*) INTO v_n FROM customer
   WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_last;
  SET v_off = (v_n + 1) DIV 2 - 1;
  SELECT c_id INTO v_c_id FROM customer
   WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = p_last
   ORDER BY c_first LIMIT v_off, 1;
  RETURN v_c_id;
END""",
    """
CREATE PROCEDURE tpcc_payment(p_w_id INT, p_d_id INT, p_c_w_id INT, p_c_d_id INT, p_c_id INT,
  p_c_last VARCHAR(16), p_amount DECIMAL(6,2))
BEGIN
  DECLARE v_w_name VARCHAR(10); DECLARE v_d_name VARCHAR(10); DECLARE v_c_id INT;
  DECLARE v_credit CHAR(2);
  SET v_c_id = p_c_id;
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w_id;
  SELECT w_name INTO v_w_name FROM warehouse WHERE w_id = p_w_id;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w_id AND d_id = p_d_id;
  SELECT d_name INTO v_d_name FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
  IF p_c_last IS NOT NULL THEN
    SET v_c_id = tpcc_customer_by_name(p_c_w_id, p_c_d_id, p_c_last);
  END IF;
  SELECT c_credit INTO v_credit FROM customer
   WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id FOR UPDATE;
  UPDATE customer
     SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
         c_payment_cnt = c_payment_cnt + 1,
         c_data = IF(v_credit = 'BC',
                     LEFT(CONCAT(v_c_id, ' ', p_c_d_id, ' ', p_c_w_id, ' ', p_d_id, ' ', p_w_id,
                                 ' ', p_amount, '|', c_data), 500),
                     c_data)
   WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, NOW(), p_amount,
          CONCAT(v_w_name, '    ', v_d_name));
  COMMIT;
END""",
    """
CREATE PROCEDURE tpcc_order_status(p_w_id INT, p_d_id INT, p_c_id INT, p_c_last VARCHAR(16))
BEGIN
  DECLARE v_c_id INT; DECLARE v_balance DECIMAL(12,2); DECLARE v_first VARCHAR(16);
  DECLARE v_middle CHAR(2); DECLARE v_last VARCHAR(16); DECLARE v_o_id INT;
  DECLARE v_entry DATETIME; DECLARE v_carrier INT; DECLARE v_lines INT;
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  SET v_c_id = p_c_id;
  IF p_c_last IS NOT NULL THEN
    SET v_c_id = tpcc_customer_by_name(p_w_id, p_d_id, p_c_last);
  END IF;
  SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last
    FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o_id, v_entry, v_carrier FROM orders
   WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id ORDER BY o_id DESC LIMIT 1;
  SELECT count(*) INTO v_lines FROM (
    SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
     WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id) AS ol;
  COMMIT;
END""",
    """
CREATE PROCEDURE tpcc_delivery(p_w_id INT, p_carrier_id INT)
BEGIN
  DECLARE v_d INT DEFAULT 1; DECLARE v_o_id INT; DECLARE v_c_id INT;
  DECLARE v_amount DECIMAL(12,2);
  DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
  WHILE v_d <= 10 DO
    SET v_o_id = NULL;
    SELECT no_o_id INTO v_o_id FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d
     ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF v_o_id IS NOT NULL THEN
      DELETE FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d AND no_o_id = v_o_id;
      SELECT o_c_id INTO v_c_id FROM orders
       WHERE o_w_id = p_w_id AND o_d_id = v_d AND o_id = v_o_id;
      UPDATE orders SET o_carrier_id = p_carrier_id
       WHERE o_w_id = p_w_id AND o_d_id = v_d AND o_id = v_o_id;
      UPDATE order_line SET ol_delivery_d = NOW()
       WHERE ol_w_id = p_w_id AND ol_d_id = v_d AND ol_o_id = v_o_id;
      SELECT sum(ol_amount) INTO v_amount FROM order_line
       WHERE ol_w_id = p_w_id AND ol_d_id = v_d AND ol_o_id = v_o_id;
      UPDATE customer SET c_balance = c_balance + v_amount, c_delivery_cnt = c_delivery_cnt + 1
       WHERE c_w_id = p_w_id AND c_d_id = v_d AND c_id = v_c_id;
    END IF;
    SET v_d = v_d + 1;
  END WHILE;
  COMMIT;
END""",
    """
CREATE PROCEDURE tpcc_stock_level(p_w_id INT, p_d_id INT, p_threshold INT)
BEGIN
  DECLARE v_next INT; DECLARE v_low INT;
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;
  SELECT count(DISTINCT s_i_id) INTO v_low FROM order_line, stock
   WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id < v_next AND ol_o_id >= v_next - 20
     AND s_w_id = p_w_id AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  COMMIT;
END""",
)


def _column_type(sql_type: str) -> str:
    t = spec.column_type(sql_type)
    return f"{t} CHARACTER SET latin1 COLLATE latin1_bin" if "CHAR" in t else t


class MariaDBTpcc:
    title = TITLE
    modes: tuple[str, ...] = (SERVER, CLIENT)
    for_update = " FOR UPDATE"

    def __init__(
        self,
        data_dirs: list[Path],
        loader_connect: Connect,
        loaders: int = 2,
        core: Target | None = None,
    ) -> None:
        self.places: dict[str, Path | None] = (
            distribute(list(spec.TABLES), list(data_dirs))
            if data_dirs
            else dict.fromkeys(spec.TABLES)
        )
        self.loader_connect = loader_connect
        self.loaders = loaders
        self.core = core  # the compiled core runs its server mode on it (driver.py)

    def q(self, sql: str) -> str:
        return sql

    def arg(self, value: Any) -> Any:
        return value

    def create_tables(self, conn: Any) -> None:
        with conn.cursor() as cur:
            for table in spec.TABLES:
                columns = [
                    f"{name} {_column_type(t)}{' NULL' if t.endswith(' NULL') else ' NOT NULL'}"
                    for name, t in spec.COLUMNS[table]
                ]
                if table in spec.PRIMARY_KEYS:
                    columns.append(f"PRIMARY KEY ({', '.join(spec.PRIMARY_KEYS[table])})")
                place = self.places[table]
                where = f" DATA DIRECTORY = {sql_string(str(place))}" if place else ""
                cur.execute(
                    f"CREATE TABLE {table} ({', '.join(columns)}) ENGINE=InnoDB "
                    f"ROW_FORMAT=DYNAMIC STATS_PERSISTENT=1{where}"
                )
        conn.commit()

    def load(self, connect: Connect, directory: Path, progress: Progress) -> None:
        def work(conn: Any, table: str, _stop: threading.Event) -> None:
            path = directory / f"{table}.csv"
            names, sets = [], []
            for (name, _t), null in zip(spec.COLUMNS[table], spec.nullable(table), strict=True):
                if null:
                    names.append(f"@{name}")
                    sets.append(f"{name} = NULLIF(@{name}, '')")
                else:
                    names.append(name)
            set_clause = f" SET {', '.join(sets)}" if sets else ""
            with conn.cursor() as cur:
                cur.execute(
                    f"LOAD DATA LOCAL INFILE {sql_string(str(path))} INTO TABLE {table} "
                    "CHARACTER SET latin1 FIELDS TERMINATED BY ',' ESCAPED BY '' "
                    f"LINES TERMINATED BY '\\n' ({', '.join(names)}){set_clause}"
                )
            progress(path.stat().st_size)

        tables = sorted(spec.TABLES, key=lambda t: -(directory / f"{t}.csv").stat().st_size)
        run_parallel(TITLE, _autocommit(self.loader_connect), self.loaders, tables, work)

    def finish_load(self, connect: Connect) -> None:
        def run(conn: Any, statements: list[str], _stop: threading.Event) -> None:
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
                    cur.fetchall()

        builds = [
            [f"ALTER TABLE {table} ADD INDEX {name} ({', '.join(cols)})"]
            for table, (name, cols) in spec.INDEXES.items()
        ]
        run_parallel(TITLE, _autocommit(connect), self.loaders, builds, run)
        analyze = [[f"ANALYZE TABLE {table}"] for table in spec.TABLES]
        run_parallel(TITLE, _autocommit(connect), self.loaders, analyze, run)
        conn = connect()
        try:
            checkpoint(conn)
        finally:
            conn.close()

    def install_routines(self, conn: Any) -> None:
        with conn.cursor() as cur:
            for routine in ROUTINES:
                cur.execute(routine)
        conn.commit()

    def prepare(self, conn: Any, mode: str) -> None:
        conn.autocommit(False)

    def begin(self, conn: Any, write: bool) -> None:
        pass  # InnoDB opens a transaction at the first statement

    def call(self, conn: Any, tx: Input) -> None:
        """One ``CALL``: the procedure commits (a refusal leaves the transaction open, for
        :meth:`rollback`). The statement is written out here, not by PyMySQL's escaping (about
        10 us of client CPU per call): every input is a number the driver drew (``%d``, a
        Decimal's digits) or a last name of the spec's syllables (:func:`_name`)."""
        if isinstance(tx, NewOrder):
            items, supply, qty = (
                ",".join([f"{v:d}" for v in col]) for col in zip(*tx.items, strict=True)
            )
            sql = (
                f"CALL tpcc_new_order({tx.w_id:d}, {tx.d_id:d}, {tx.c_id:d}, {len(tx.items):d}, "
                f"'{items}', '{supply}', '{qty}', {tx.all_local:d})"
            )
        elif isinstance(tx, Payment):
            sql = (
                f"CALL tpcc_payment({tx.w_id:d}, {tx.d_id:d}, {tx.c_w_id:d}, {tx.c_d_id:d}, "
                f"{_int(tx.c_id)}, {_name(tx.c_last)}, {_decimal(tx.amount)})"
            )
        elif isinstance(tx, OrderStatus):
            sql = (
                f"CALL tpcc_order_status({tx.w_id:d}, {tx.d_id:d}, {_int(tx.c_id)}, "
                f"{_name(tx.c_last)})"
            )
        elif isinstance(tx, Delivery):
            sql = f"CALL tpcc_delivery({tx.w_id:d}, {tx.carrier_id:d})"
        else:
            assert isinstance(tx, StockLevel)
            sql = f"CALL tpcc_stock_level({tx.w_id:d}, {tx.d_id:d}, {tx.threshold:d})"
        with conn.cursor() as cur:
            cur.execute(sql)

    def commit(self, conn: Any) -> None:
        conn.commit()

    def rollback(self, conn: Any) -> None:
        conn.rollback()

    def retryable(self, exc: BaseException) -> bool:
        return bool(exc.args) and exc.args[0] in RETRY_CODES

    def user_rollback(self, exc: BaseException) -> bool:
        return bool(exc.args) and exc.args[0] == ER_SIGNAL_EXCEPTION and "tpcc:" in str(exc)

    def counter(self, conn: Any, sessions: Sequence[Any]) -> int | None:
        """Transactions the users' sessions ended, from performance_schema's transaction
        summary per thread (the server's global ``Com_commit`` would count every client of a
        server of the user's); None with performance_schema or its ``transaction`` instrument
        off, or when the user may not read it (a server of the user's may have either off, and
        its user without SELECT on it: said before the run)."""
        sessions_of = catalog.kind("mariadb").sessions
        ids = sessions_of(sessions) if sessions_of is not None else []
        if not ids:
            return None
        conn.autocommit(True)  # no transaction of this connection's own in the count
        with conn.cursor() as cur:
            try:
                cur.execute(
                    "SELECT count(*) FROM performance_schema.setup_instruments "
                    "WHERE NAME = 'transaction' AND ENABLED = 'YES'"
                )
            except Exception as exc:
                if exc.args and exc.args[0] == ER_TABLEACCESS_DENIED:
                    return None
                raise
            on = cur.fetchone()
            if on is None or not on[0]:
                return None
            cur.execute(
                "SELECT count(DISTINCT t.PROCESSLIST_ID), sum(s.COUNT_STAR) "
                "FROM performance_schema.events_transactions_summary_by_thread_by_event_name s "
                "JOIN performance_schema.threads t USING (THREAD_ID) "
                f"WHERE t.PROCESSLIST_ID IN ({', '.join(['%s'] * len(ids))})",
                ids,
            )
            row = cur.fetchone()
        if row is None or int(row[0] or 0) != len(ids):  # sessions not instrumented
            return None
        return int(row[1] or 0)

    def flush_counter(self, conn: Any) -> int:
        return 0  # performance_schema counts at once


def _int(value: int | None) -> str:
    return "NULL" if value is None else f"{value:d}"


def _decimal(value: Decimal) -> str:
    if not value.is_finite():
        raise ValueError(f"not a finite amount: {value}")
    return f"{value:f}"


def _name(value: str | None) -> str:
    """A last name as an SQL literal: the spec's syllables are upper-case letters only."""
    if value is None:
        return "NULL"
    if not (value.isascii() and value.isalpha()):
        raise ValueError(f"not a last name of the spec's syllables: {value!r}")
    return f"'{value}'"


def _autocommit(connect: Connect) -> Connect:
    def make() -> Any:
        conn = connect()
        conn.autocommit(True)
        return conn

    return make


def dialect(engine: Engine, loaders: int) -> MariaDBTpcc:
    """TPC-C's SQL for a running server's data directories."""
    return MariaDBTpcc(
        [Path(d) for d in engine.spaces()], engine.load_connect, loaders, engine.core_target()
    )
