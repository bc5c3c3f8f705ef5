"""TPC-C's random inputs and initial data as the specification draws them, and the run's
verdict on its numbers."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from iolab.events import Collect
from iolab.workloads.tpcc import data, spec
from iolab.workloads.tpcc.dialect import chunks
from iolab.workloads.tpcc.spec import Constants, Random, RunRandom
from iolab.workloads.tpcc.steps import verdict
from iolab.workloads.tpcc.transactions import NewOrder, OrderStatus, Payment, draw


def test_last_names_are_three_syllables_of_a_number() -> None:
    assert spec.last_name(0) == "BARBARBAR"
    assert spec.last_name(371) == "PRICALLYOUGHT"
    assert spec.last_name(999) == "EINGEINGEING"
    assert len({spec.last_name(n) for n in range(1000)}) == 1000


def test_the_runs_last_name_constant_keeps_the_specs_distance_from_the_loads() -> None:
    for seed in range(200):
        load = Constants.for_load(random.Random(seed))
        run = load.for_run(random.Random(seed + 1))
        delta = abs(run.c_last - load.c_last)
        assert 65 <= delta <= 119 and delta not in (96, 112)


def test_nurand_stays_in_its_range_and_is_skewed() -> None:
    r = Random(7, Constants(100, 200, 300))
    ids = [r.customer_id() for _ in range(20_000)]
    assert min(ids) >= 1 and max(ids) <= spec.CUSTOMERS
    top = Counter(ids).most_common(1)[0][1]
    assert top > 3 * 20_000 / spec.CUSTOMERS  # non-uniform: some customers far more often
    items = [r.item_id() for _ in range(20_000)]
    assert min(items) >= 1 and max(items) <= spec.ITEMS


def test_inputs_follow_the_spec_shares() -> None:
    r = Random(11, Constants(100, 200, 300))
    orders = [draw("new_order", r, 1, 4) for _ in range(20_000)]
    assert all(isinstance(o, NewOrder) and 5 <= len(o.items) <= 15 for o in orders)
    rolled = [o for o in orders if isinstance(o, NewOrder) and o.items[-1][0] == spec.UNUSED_ITEM]
    assert 150 <= len(rolled) <= 250  # 1 %
    assert all(
        i != spec.UNUSED_ITEM for o in orders if isinstance(o, NewOrder) for i, _, _ in o.items[:-1]
    )
    remote = sum(1 for o in orders if isinstance(o, NewOrder) and not o.all_local)
    assert 0 < remote < 0.2 * len(orders)  # 1 % of lines come from another warehouse
    payments = [draw("payment", r, 2, 4) for _ in range(10_000)]
    by_name = sum(1 for p in payments if isinstance(p, Payment) and p.c_last is not None)
    assert 5_600 <= by_name <= 6_400  # 60 %
    away = sum(1 for p in payments if isinstance(p, Payment) and p.c_w_id != 2)
    assert 1_200 <= away <= 1_800  # 15 % pay at another warehouse
    assert all(isinstance(p, Payment) and 1 <= p.amount <= 5000 for p in payments)
    statuses = [draw("order_status", r, 1, 1) for _ in range(1_000)]
    assert all(
        isinstance(s, OrderStatus) and (s.c_id is None) != (s.c_last is None) for s in statuses
    )
    # one warehouse: nothing remote
    single = [draw("new_order", r, 1, 1) for _ in range(2_000)]
    assert all(isinstance(o, NewOrder) and o.all_local for o in single)


def test_initial_orders_agree_with_their_lines_and_customers() -> None:
    c = Constants(1, 2, 3)
    orders = [line.split(",") for line in data._orders(Random("x", c), 3)]
    assert len(orders) == spec.DISTRICTS * spec.ORDERS
    first = [o for o in orders if o[1] == "1"]
    assert sorted(int(o[3]) for o in first) == list(range(1, spec.CUSTOMERS + 1))
    carriers = [o[5] for o in first]
    assert all(carriers[i] != "" for i in range(2100)) and all(v == "" for v in carriers[2100:])
    _, counts, _ = data._shape(3, 1)
    assert [int(o[6]) for o in first] == counts
    # the same seed draws the same data
    again = [line.split(",") for line in data._orders(Random("x", c), 3)]
    assert again == orders


def test_districts_start_where_their_orders_end() -> None:
    rows = [line.split(",") for line in data._districts(Random("d", Constants(1, 2, 3)), 2)]
    assert [r[0] for r in rows] == [str(d) for d in range(1, 11)]
    assert {r[-1] for r in rows} == {"3001"} and {r[-2] for r in rows} == {"30000.00"}


def test_chunks_cut_at_line_ends(tmp_path: Path) -> None:
    for table in spec.TABLES:
        (tmp_path / f"{table}.csv").write_text("".join(f"{i},abc\n" for i in range(1000)))
    found = chunks(tmp_path, size=100)
    for table in spec.TABLES:
        parts = [c for c in found if c.table == table]
        text = b"".join(b"".join(c.blocks()) for c in parts)
        assert text == (tmp_path / f"{table}.csv").read_bytes()
        assert all(b"".join(c.blocks()).endswith(b"\n") for c in parts)


def _tiny_data(directory: Path, text: str, fmt: int = data.FORMAT) -> dict[str, object]:
    """A stand-in for the generated tables (one line each) and its manifest's content."""
    directory.mkdir(exist_ok=True)
    for table in spec.TABLES:
        (directory / f"{table}.csv").write_text(text)
    doc: dict[str, object] = {"format": fmt, "seed": data.SEED, "warehouses": 1}
    doc["constants"] = {"c_last": 1, "c_id": 2, "ol_i_id": 3}
    doc["bytes"] = {t: len(text) for t in spec.TABLES}
    doc["sha256"] = {t: hashlib.sha256(text.encode()).hexdigest() for t in spec.TABLES}
    return doc


def test_data_another_process_completed_meanwhile_is_kept_an_older_format_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes generating one warehouse count at once (a fleet's hosts on one machine):
    the second to finish kept the first's data, which the first may be loading, and leaves
    nothing of its own; data of an older format is still replaced."""
    target = data.data_dir(1, tmp_path)

    def other_finishes_first(warehouses: int, directory: Path) -> dict[str, object]:
        theirs = _tiny_data(target, "theirs\n")
        (target / data.MANIFEST).write_text(json.dumps(theirs))
        return _tiny_data(directory, "mine\n")

    monkeypatch.setattr(data, "generate", other_finishes_first)
    found = data.ensure(1, Collect(), tmp_path)
    assert found.directory == target
    assert found.path("stock").read_text() == "theirs\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".w1.lock", "w1"]  # its own removed

    (target / data.MANIFEST).write_text(json.dumps(_tiny_data(target, "old\n", fmt=0)))
    monkeypatch.setattr(data, "generate", lambda w, d: _tiny_data(d, "new\n"))
    found = data.ensure(1, Collect(), tmp_path)
    assert found.path("stock").read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".w1.lock", "w1"]


def test_a_process_wanting_data_another_is_generating_waits_and_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one process generates a warehouse count (it holds the cache's lock for it), another
    that wants the same data says it waits, then uses that data instead of generating it a
    second time."""
    made: list[str] = []

    def generate(warehouses: int, directory: Path) -> dict[str, object]:
        made.append(directory.name)
        return _tiny_data(directory, "second\n")

    monkeypatch.setattr(data, "generate", generate)
    said = Collect()
    found: list[data.TpccFiles] = []
    waiting = threading.Event()
    target = data.data_dir(1, tmp_path)
    lock = os.open(tmp_path / ".w1.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the first process, generating
    try:
        thread = threading.Thread(target=lambda: found.append(data.ensure(1, said, tmp_path)))
        thread.start()
        for _ in range(500):  # a guard against hanging, not a timed assertion
            if any("waiting for another iolab process" in str(e) for e in said.events):
                waiting.set()
                break
            time.sleep(0.01)
        (target.parent / "first").mkdir()
        doc = _tiny_data(target.parent / "first", "first\n")
        (target.parent / "first" / data.MANIFEST).write_text(json.dumps(doc))
        (target.parent / "first").rename(target)
    finally:
        os.close(lock)
    thread.join(30)
    assert waiting.is_set() and not thread.is_alive()
    assert made == []  # not generated a second time
    assert found[0].path("stock").read_text() == "first\n"
    assert any("just generated by another iolab process" in str(e) for e in said.events)


def _doc(nopm: float, client: float, orders: float, ok: bool = True) -> dict[str, object]:
    conditions = [{"name": "condition 1", "ok": ok, "detail": "w_ytd = sum(d_ytd) fails: x"}]
    return {
        "nopm": nopm,
        "nopm_client": client,
        "nopm_orders": orders,
        "consistency": {"ok": ok, "conditions": conditions},
    }


def test_verdict_names_the_broken_condition_and_the_disagreeing_counts() -> None:
    assert verdict(_doc(1000, 1000, 995)) is None
    why = verdict(_doc(1000, 980, 1000))
    assert why is not None and "client 980.0" in why and "1%" in why
    why = verdict(_doc(1000, 1000, 1000, ok=False))
    assert why is not None and why.startswith("condition 1: w_ytd")


def test_the_wal_device_example_is_four_cells_of_tpcc() -> None:
    from iolab.config import experiment as config

    exp = config.load(Path(__file__).resolve().parents[2] / "examples" / "oltp-wal-device.toml")
    assert exp.kind == "tpcc"
    assert len(exp.cells) == 4
    assert {c.params.get("wal_dir") is None for c in exp.cells} == {True, False}


def test_the_runs_random_inputs_keep_the_ranges_and_skew() -> None:
    r = RunRandom(7, Constants(100, 200, 300))
    ids = [r.customer_id() for _ in range(20_000)]
    assert min(ids) >= 1 and max(ids) <= spec.CUSTOMERS
    assert max(Counter(ids).values()) > 3 * 20_000 / spec.CUSTOMERS
    assert {r.uniform(5, 15) for _ in range(2_000)} == set(range(5, 16))
    assert {r.other_warehouse(2, 3) for _ in range(500)} == {1, 3}
    items = [r.item_id() for _ in range(20_000)]
    assert min(items) >= 1 and max(items) <= spec.ITEMS


class _Said:
    """A connection that keeps the statements its cursors were given (the SQL text only)."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def cursor(self) -> _Said:
        return self

    def __enter__(self) -> _Said:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute(self, sql: str) -> None:
        self.statements.append(sql)


def test_mariadbs_calls_are_written_out_one_statement_each_with_no_commit_after() -> None:
    from decimal import Decimal

    from iolab.workloads.tpcc.mariadb import MariaDBTpcc

    d = MariaDBTpcc([], lambda: None)
    conn = _Said()
    d.call(conn, NewOrder(1, 2, 3, ((7, 1, 5), (9, 2, 10))))
    d.call(conn, Payment(1, 2, 1, 2, None, "BARPRIESE", Decimal("12.50")))
    d.call(conn, OrderStatus(1, 3, 42, None))
    assert conn.statements == [
        "CALL tpcc_new_order(1, 2, 3, 2, '7,9', '1,2', '5,10', 0)",
        "CALL tpcc_payment(1, 2, 1, 2, NULL, 'BARPRIESE', 12.50)",
        "CALL tpcc_order_status(1, 3, 42, NULL)",
    ]
    with pytest.raises(ValueError, match="syllables"):
        d.call(conn, OrderStatus(1, 3, None, "X'); DROP TABLE orders; --"))
    with pytest.raises(ValueError):
        d.call(conn, OrderStatus(1, 3.5, 42, None))  # type: ignore[arg-type]
    assert len(conn.statements) == 3


def test_the_plan_estimates_a_run_from_what_was_measured_around_it() -> None:
    from iolab.workloads.registry import WORKLOADS

    estimate = WORKLOADS["tpcc"].estimate
    base = {"kind": "tpcc", "warehouses": 4, "warmup": 10.0, "duration": 60.0}  # as expanded
    assert estimate({**base, "engine": "postgres"}) == 2.5 + 1.5 * 4 + 70
    assert estimate({**base, "engine": "mariadb"}) == 2.0 + 4.0 * 4 + 70
    assert estimate({**base, "engine": "sqlite"}) == 1.0 + 3.0 * 4 + 70


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        # libpq's connection message after pg_terminate_backend: the reason first ...
        (
            "FATAL:  terminating connection due to administrator command\n"
            "server closed the connection unexpectedly\n\tThis probably means the server ...\n",
            "terminating connection due to administrator command",
        ),
        # ... or after the failed write's line (a race): the server's line all the same
        (
            "server closed the connection unexpectedly\n\tThis probably means the server ...\n"
            "FATAL:  terminating connection due to administrator command\n",
            "terminating connection due to administrator command",
        ),
        (
            "server closed the connection unexpectedly\n\tThis probably means ...\n",
            "server closed the connection unexpectedly",
        ),
        ("", "no error details available"),
    ],
)
def test_a_lost_postgres_connection_is_said_by_the_servers_line(message: str, reason: str) -> None:
    pytest.importorskip("psycopg", reason="PostgreSQL's dialect needs the engines extra")
    from iolab.workloads.tpcc.postgres import lost_reason

    assert lost_reason(message) == reason
