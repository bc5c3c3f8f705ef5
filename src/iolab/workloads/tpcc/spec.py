"""TPC-C's constants, random distributions and schema (TPC-C specification 5.11).

Random numbers follow clause 2.1.6 and 4.3.2: uniform integers, NURand(A, x, y) with a constant
C per A chosen once per run, a-strings (random alphanumerics) and n-strings (random digits), and
customer last names built from three syllables of a number 0..999 (clause 4.3.2.3). The run's C
for last names differs from the load's as clause 2.1.6.1 requires (65 <= |C_run - C_load| <=
119, and neither 96 nor 112).

Tables and columns are named as the specification names them, so a user's own SQL reads them.
Types are generic SQL every engine takes: money and rates ``DECIMAL``, times ``TIMESTAMP``.
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping
from dataclasses import dataclass

ITEMS = 100_000
DISTRICTS = 10  # per warehouse
CUSTOMERS = 3_000  # per district
ORDERS = 3_000  # per district, at load
NEW_ORDERS_FROM = 2_101  # orders 2101..3000 of each district are undelivered at load
STOCK = ITEMS  # per warehouse
UNUSED_ITEM = ITEMS + 1  # the item number of a New-Order that must roll back
USERS_PER_WAREHOUSE = 10  # the spec's terminals per warehouse

SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")
ALNUM = string.ascii_letters + string.digits
LOAD_TIME = "2026-01-01 00:00:00"  # the entry dates of the initial database (deterministic)

# the five transactions, in the order the spec defines them, and the minimum mix
TRANSACTIONS = ("new_order", "payment", "order_status", "delivery", "stock_level")
DEFAULT_MIX: Mapping[str, int] = {
    "new_order": 45,
    "payment": 43,
    "order_status": 4,
    "delivery": 4,
    "stock_level": 4,
}
# clause 5.2.5.7: keying time and mean think time in seconds (--think)
KEYING_SECONDS: Mapping[str, float] = {
    "new_order": 18.0,
    "payment": 3.0,
    "order_status": 2.0,
    "delivery": 2.0,
    "stock_level": 2.0,
}
THINK_MEAN_SECONDS: Mapping[str, float] = {
    "new_order": 12.0,
    "payment": 12.0,
    "order_status": 10.0,
    "delivery": 5.0,
    "stock_level": 5.0,
}


def last_name(number: int) -> str:
    """The customer last name of ``number`` (0..999): three syllables, one per digit."""
    return SYLLABLES[number // 100] + SYLLABLES[number // 10 % 10] + SYLLABLES[number % 10]


@dataclass(frozen=True)
class Constants:
    """NURand's C for each A: customer last names (255), customer ids (1023), items (8191)."""

    c_last: int
    c_id: int
    ol_i_id: int

    @classmethod
    def for_load(cls, rng: random.Random) -> Constants:
        return cls(rng.randint(0, 255), rng.randint(0, 1023), rng.randint(0, 8191))

    def for_run(self, rng: random.Random) -> Constants:
        """The run's constants: C for last names 65..119 away from the load's, not 96 or 112."""
        while True:
            c = rng.randint(0, 255)
            delta = abs(c - self.c_last)
            if 65 <= delta <= 119 and delta not in (96, 112):
                return Constants(c, rng.randint(0, 1023), rng.randint(0, 8191))


class Random:
    """The spec's random functions over one ``random.Random``."""

    def __init__(self, seed: int | str, constants: Constants) -> None:
        self.rng = random.Random(seed)
        self.c = constants

    def uniform(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def nurand(self, a: int, low: int, high: int) -> int:
        c = {255: self.c.c_last, 1023: self.c.c_id, 8191: self.c.ol_i_id}[a]
        r = self.rng.randint
        return ((r(0, a) | r(low, high)) + c) % (high - low + 1) + low

    def customer_id(self) -> int:
        return self.nurand(1023, 1, CUSTOMERS)

    def item_id(self) -> int:
        return self.nurand(8191, 1, ITEMS)

    def customer_last(self) -> str:
        return last_name(self.nurand(255, 0, 999))

    def astring(self, low: int, high: int) -> str:
        return "".join(self.rng.choices(ALNUM, k=self.rng.randint(low, high)))

    def nstring(self, length: int) -> str:
        return "".join(self.rng.choices(string.digits, k=length))

    def money(self, low_cents: int, high_cents: int) -> str:
        cents = self.rng.randint(low_cents, high_cents)
        return f"{cents // 100}.{cents % 100:02d}"

    def rate(self, high_ten_thousandths: int) -> str:
        """A rate 0.0000 .. high/10000 with four decimals (taxes, discounts)."""
        v = self.rng.randint(0, high_ten_thousandths)
        return f"0.{v:04d}"

    def data(self, low: int, high: int) -> str:
        """i_data / s_data: an a-string where 10 % hold ``ORIGINAL`` at a random place."""
        text = self.astring(low, high)
        if self.rng.randint(1, 10) == 1:
            at = self.rng.randint(0, len(text) - 8)
            text = text[:at] + "ORIGINAL" + text[at + 8 :]
        return text

    def other_warehouse(self, home: int, warehouses: int) -> int:
        """A warehouse other than ``home`` (``home`` itself when there is one)."""
        if warehouses == 1:
            return home
        w = self.rng.randint(1, warehouses - 1)
        return w if w < home else w + 1


class RunRandom(Random):
    """The run's random inputs: the same distributions, each integer drawn from one
    ``random()`` float (``low + int(random() * n)``, uniform to 2**-53) instead of ``randint``
    (~0.4 us a call in Python): a New-Order's inputs take some 40 draws. The initial data keeps
    :class:`Random`'s stream, so cached data stays what its seed made."""

    def __init__(self, seed: int | str, constants: Constants) -> None:
        super().__init__(seed, constants)
        self._float = self.rng.random
        self._c = {255: constants.c_last, 1023: constants.c_id, 8191: constants.ol_i_id}

    def uniform(self, low: int, high: int) -> int:
        return low + int(self._float() * (high - low + 1))

    def nurand(self, a: int, low: int, high: int) -> int:
        f = self._float
        span = high - low + 1
        return ((int(f() * (a + 1)) | (low + int(f() * span))) + self._c[a]) % span + low

    def other_warehouse(self, home: int, warehouses: int) -> int:
        if warehouses == 1:
            return home
        w = 1 + int(self._float() * (warehouses - 1))
        return w if w < home else w + 1


# --- schema ---------------------------------------------------------------------------------

TABLES = (
    "warehouse",
    "district",
    "customer",
    "history",
    "new_order",
    "orders",
    "order_line",
    "item",
    "stock",
)

_ADDRESS = (
    ("street_1", "VARCHAR(20)"),
    ("street_2", "VARCHAR(20)"),
    ("city", "VARCHAR(20)"),
    ("state", "CHAR(2)"),
    ("zip", "CHAR(9)"),
)


def _address(prefix: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{prefix}_{name}", t) for name, t in _ADDRESS)


COLUMNS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "warehouse": (
        ("w_id", "INTEGER"),
        ("w_name", "VARCHAR(10)"),
        *_address("w"),
        ("w_tax", "DECIMAL(4,4)"),
        ("w_ytd", "DECIMAL(12,2)"),
    ),
    "district": (
        ("d_id", "SMALLINT"),
        ("d_w_id", "INTEGER"),
        ("d_name", "VARCHAR(10)"),
        *_address("d"),
        ("d_tax", "DECIMAL(4,4)"),
        ("d_ytd", "DECIMAL(12,2)"),
        ("d_next_o_id", "INTEGER"),
    ),
    "customer": (
        ("c_id", "INTEGER"),
        ("c_d_id", "SMALLINT"),
        ("c_w_id", "INTEGER"),
        ("c_first", "VARCHAR(16)"),
        ("c_middle", "CHAR(2)"),
        ("c_last", "VARCHAR(16)"),
        *_address("c"),
        ("c_phone", "CHAR(16)"),
        ("c_since", "TIMESTAMP"),
        ("c_credit", "CHAR(2)"),
        ("c_credit_lim", "DECIMAL(12,2)"),
        ("c_discount", "DECIMAL(4,4)"),
        ("c_balance", "DECIMAL(12,2)"),
        ("c_ytd_payment", "DECIMAL(12,2)"),
        ("c_payment_cnt", "INTEGER"),
        ("c_delivery_cnt", "INTEGER"),
        ("c_data", "VARCHAR(500)"),
    ),
    "history": (
        ("h_c_id", "INTEGER"),
        ("h_c_d_id", "SMALLINT"),
        ("h_c_w_id", "INTEGER"),
        ("h_d_id", "SMALLINT"),
        ("h_w_id", "INTEGER"),
        ("h_date", "TIMESTAMP"),
        ("h_amount", "DECIMAL(6,2)"),
        ("h_data", "VARCHAR(24)"),
    ),
    "new_order": (
        ("no_o_id", "INTEGER"),
        ("no_d_id", "SMALLINT"),
        ("no_w_id", "INTEGER"),
    ),
    "orders": (
        ("o_id", "INTEGER"),
        ("o_d_id", "SMALLINT"),
        ("o_w_id", "INTEGER"),
        ("o_c_id", "INTEGER"),
        ("o_entry_d", "TIMESTAMP"),
        ("o_carrier_id", "SMALLINT NULL"),
        ("o_ol_cnt", "SMALLINT"),
        ("o_all_local", "SMALLINT"),
    ),
    "order_line": (
        ("ol_o_id", "INTEGER"),
        ("ol_d_id", "SMALLINT"),
        ("ol_w_id", "INTEGER"),
        ("ol_number", "SMALLINT"),
        ("ol_i_id", "INTEGER"),
        ("ol_supply_w_id", "INTEGER"),
        ("ol_delivery_d", "TIMESTAMP NULL"),
        ("ol_quantity", "SMALLINT"),
        ("ol_amount", "DECIMAL(6,2)"),
        ("ol_dist_info", "CHAR(24)"),
    ),
    "item": (
        ("i_id", "INTEGER"),
        ("i_im_id", "INTEGER"),
        ("i_name", "VARCHAR(24)"),
        ("i_price", "DECIMAL(5,2)"),
        ("i_data", "VARCHAR(50)"),
    ),
    "stock": (
        ("s_i_id", "INTEGER"),
        ("s_w_id", "INTEGER"),
        ("s_quantity", "SMALLINT"),
        *((f"s_dist_{i:02d}", "CHAR(24)") for i in range(1, 11)),
        ("s_ytd", "INTEGER"),
        ("s_order_cnt", "SMALLINT"),
        ("s_remote_cnt", "SMALLINT"),
        ("s_data", "VARCHAR(50)"),
    ),
}

PRIMARY_KEYS: Mapping[str, tuple[str, ...]] = {
    "warehouse": ("w_id",),
    "district": ("d_w_id", "d_id"),
    "customer": ("c_w_id", "c_d_id", "c_id"),
    "new_order": ("no_w_id", "no_d_id", "no_o_id"),
    "orders": ("o_w_id", "o_d_id", "o_id"),
    "order_line": ("ol_w_id", "ol_d_id", "ol_o_id", "ol_number"),
    "item": ("i_id",),
    "stock": ("s_w_id", "s_i_id"),
}  # history has no key in the specification

# the two secondary indexes: customers by last name, orders by customer
INDEXES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "customer": ("customer_last_idx", ("c_w_id", "c_d_id", "c_last", "c_first")),
    "orders": ("orders_customer_idx", ("o_w_id", "o_d_id", "o_c_id", "o_id")),
}


def column_names(table: str) -> list[str]:
    return [name for name, _ in COLUMNS[table]]


def nullable(table: str) -> list[bool]:
    return [t.endswith(" NULL") for _, t in COLUMNS[table]]


def column_type(sql_type: str) -> str:
    """The type without the NULL marker."""
    return sql_type.removesuffix(" NULL")
