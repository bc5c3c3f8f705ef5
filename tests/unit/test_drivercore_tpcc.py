"""The compiled core's TPC-C inputs equal the Python path's draw for draw: the same seed, the
same transactions and the same inputs, for several seeds, one and three warehouses, a user's
home or all warehouses, the default mix and others (docs/architecture.md, "The driver core")."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import pytest

from iolab.drivercore import native
from iolab.workloads.tpcc import spec
from iolab.workloads.tpcc.driver import INPUTS_AHEAD, DriverOptions, _User
from iolab.workloads.tpcc.spec import Constants
from iolab.workloads.tpcc.transactions import Input

core = native()
pytestmark = pytest.mark.skipif(core is None, reason="the compiled core is not built")

CONSTANTS = Constants(c_last=123, c_id=456, ol_i_id=7890)
DRAWS = 3 * INPUTS_AHEAD + 5  # over three batches and into a fourth


def _plain(value: Any) -> Any:
    """An input as the core gives it: tuples, the amount as its text."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def python_draws(options: DriverOptions, index: int, n: int) -> list[tuple[int, Any]]:
    """The first ``n`` transactions user ``index`` runs on the Python path, in order."""
    user = _User(index, None, None, options, CONSTANTS, None)  # type: ignore[arg-type]
    out: list[tuple[int, Any]] = []
    todo: list[tuple[str, Input]] = []
    while len(out) < n:
        if not todo:
            todo = user._draw(INPUTS_AHEAD)
        kind, tx = todo.pop()
        out.append((spec.TRANSACTIONS.index(kind), _plain(dataclasses.astuple(tx))))
    return out


def core_draws(options: DriverOptions, index: int, n: int) -> list[tuple[int, Any]]:
    assert core is not None
    user = _User(index, None, None, options, CONSTANTS, None)  # type: ignore[arg-type]
    mix = tuple(options.mix.get(k, 0) for k in spec.TRANSACTIONS)
    found: list[tuple[int, Any]] = core.tpcc_draws(
        user.random.rng.getstate(),
        (CONSTANTS.c_last, CONSTANTS.c_id, CONSTANTS.ol_i_id),
        mix,
        user.home,
        options.warehouses,
        options.all_warehouses,
        n,
    )
    return found


@pytest.mark.parametrize("seed", [1, 2, 977])
@pytest.mark.parametrize("warehouses", [1, 3])
@pytest.mark.parametrize("all_warehouses", [False, True])
def test_inputs_equal_the_python_draws(seed: int, warehouses: int, all_warehouses: bool) -> None:
    options = DriverOptions(
        warehouses=warehouses,
        connections=4,
        mode="server",
        all_warehouses=all_warehouses,
        seed=seed,
    )
    for index in (0, 2):  # homes 1 and 3 (of three warehouses)
        expected = python_draws(options, index, DRAWS)
        assert core_draws(options, index, DRAWS) == expected
        kinds = {k for k, _ in expected}
        assert kinds == set(range(len(spec.TRANSACTIONS)))  # every kind was compared


@pytest.mark.parametrize(
    "mix",
    [
        {"new_order": 100},
        {"new_order": 0, "payment": 50, "order_status": 0, "delivery": 25, "stock_level": 25},
        {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4},
    ],
)
def test_a_mix_draws_as_the_python_path(mix: dict[str, int]) -> None:
    options = DriverOptions(warehouses=3, connections=1, mode="server", mix=mix, seed=5)
    expected = python_draws(options, 0, DRAWS)
    assert core_draws(options, 0, DRAWS) == expected
    assert {spec.TRANSACTIONS[k] for k, _ in expected} == {k for k, v in mix.items() if v > 0}


def test_the_draws_hold_the_specs_rare_inputs() -> None:
    """Over many draws, the cases that are easy to get wrong are there and equal: the 1 %
    New-Order rollback (the unused item last), remote supply warehouses, remote Payment
    customers, by-name customers."""
    options = DriverOptions(warehouses=3, connections=1, mode="server", seed=11)
    n = 40 * INPUTS_AHEAD
    found = core_draws(options, 1, n)
    assert found == python_draws(options, 1, n)
    orders = [i for k, i in found if k == 0]
    payments = [i for k, i in found if k == 1]
    assert any(items[-1][0] == spec.UNUSED_ITEM for _, _, _, items in orders)
    assert any(s != w for w, _, _, items in orders for _, s, _ in items)
    assert any(p[2] != p[0] for p in payments)  # the customer's warehouse is another
    assert any(p[4] is None and p[5] for p in payments)  # by last name
