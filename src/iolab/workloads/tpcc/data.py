"""TPC-C's initial database (clause 4.3.3.1), generated once per warehouse count into the cache.

The cache is beside TPC-H's: ``$IOLAB_CACHE/tpcc`` (default ``~/.cache/iolab/tpcc``), one
directory per warehouse count (``w1``, ``w4``, ...) holding one CSV file per table (no header;
an empty field is NULL; no field holds a comma or a quote) and ``manifest.json`` (seed, NURand
constants of the load, rows, bytes and SHA-256 per table, the checksums computed as the files
are written). Everything follows from the seed: the same W gives the same bytes. A directory is
generated beside its final name and renamed into place only when complete, so an interrupted
generation never looks like data; of two processes generating the same W at once (a fleet's
hosts on one machine), the first to finish keeps its data. The cache is trusted, and the files
checked against their manifest before each load, as :mod:`iolab.workloads.cache` says.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolab.errors import BadInput, RunFailed
from iolab.events import EventSink, Phase, Warning
from iolab.ownership import owned_name, reap, remove
from iolab.units import format_bytes
from iolab.workloads import cache
from iolab.workloads.tpcc import spec
from iolab.workloads.tpcc.spec import Constants, Random

KIND_GENERATING = "tpccgen"
MANIFEST = cache.MANIFEST
SEED = 20_26  # the data's seed: one initial database per warehouse count
FORMAT = 2  # bumped when the generated data or its manifest changes: an older one is replaced
# (2: the manifest holds each file's SHA-256)
# CSV bytes: measured 8.0 MB for the items and 76.6 MB per warehouse at W=1; rounded up
ITEM_BYTES = 9 * 10**6
BYTES_PER_WAREHOUSE = 80 * 10**6
HEADROOM_BYTES = 16 * 2**20


def cache_root() -> Path:
    """``$IOLAB_CACHE/tpcc`` or ``~/.cache/iolab/tpcc``: beside TPC-H's cache."""
    return cache.cache_root("tpcc")


def estimated_bytes(warehouses: int) -> int:
    return ITEM_BYTES + BYTES_PER_WAREHOUSE * warehouses + HEADROOM_BYTES


@dataclass(frozen=True)
class TpccFiles:
    """The generated data of one warehouse count: one CSV file per table."""

    warehouses: int
    directory: Path

    def path(self, table: str) -> Path:
        return self.directory / f"{table}.csv"

    def manifest(self) -> dict[str, object]:
        return cache.manifest(self.directory)

    def rows(self) -> dict[str, int]:
        rows = self.manifest()["rows"]
        assert isinstance(rows, dict)
        return {str(k): int(v) for k, v in rows.items()}

    def constants(self) -> Constants:
        c = self.manifest()["constants"]
        assert isinstance(c, dict)
        return Constants(int(c["c_last"]), int(c["c_id"]), int(c["ol_i_id"]))

    @property
    def total_bytes(self) -> int:
        return sum(self.path(t).stat().st_size for t in spec.TABLES)


def data_dir(warehouses: int, root: Path | None = None) -> Path:
    return (root or cache_root()) / f"w{warehouses}"


def _current(doc: Mapping[str, Any]) -> bool:
    return doc.get("format") == FORMAT and doc.get("seed") == SEED


def cached(warehouses: int, root: Path | None = None) -> TpccFiles | None:
    """The data of ``warehouses`` in the cache when its files are all there at the sizes its
    manifest says (their checksums are checked by :func:`ensure`); None otherwise."""
    directory = data_dir(warehouses, root)
    doc = cache.data_set(directory, spec.TABLES, _current)
    if doc is None or cache.differs(directory, doc, spec.TABLES, checksums=False) is not None:
        return None
    return TpccFiles(warehouses, directory)


def check_cache(root: Path | None = None) -> None:
    """Refuse, before a run is recorded, a cache directory iolab cannot create or write."""
    cache.check_cache(root or cache_root(), "TPC-C")


def check_space(warehouses: int, root: Path | None = None) -> None:
    """Refuse a warehouse count whose data the cache's filesystem has no room for."""
    root = root or cache_root()
    need = estimated_bytes(warehouses)
    free = cache.free_bytes(root)
    if free < need:
        raise BadInput(
            "--warehouses",
            warehouses,
            f"its data needs about {format_bytes(need)} in {root}, which has "
            f"{format_bytes(free)} free; give fewer warehouses, free some space, or set "
            f"{cache.CACHE_ENV} to a directory on a larger filesystem",
        )


def ensure(warehouses: int, events: EventSink, root: Path | None = None) -> TpccFiles:
    """The data of ``warehouses``: from the cache once its files match their manifest's sizes
    and checksums, else generated into it first (data that do not match are removed first,
    saying so)."""
    root = root or cache_root()
    directory = data_dir(warehouses, root)
    doc = cache.data_set(directory, spec.TABLES, _current)
    if doc is not None:
        why = cache.differs(directory, doc, spec.TABLES, checksums=True)
        if why is None:
            events(
                Phase(
                    f"using cached TPC-C data for {warehouses} warehouses ({directory}, "
                    "checked against its manifest's SHA-256)"
                )
            )
            return TpccFiles(warehouses, directory)
        cache.discard(directory, spec.TABLES, (), why)
        events(
            Warning(
                f"the cached TPC-C data in {directory} are not what iolab generated ({why}): "
                "removed them; generating them again"
            )
        )
    check_cache(root)
    check_space(warehouses, root)
    try:
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as exc:
        raise cache.unusable(root, "TPC-C", f"it cannot be created ({exc.strerror})") from None
    return cache.made_once(
        directory,
        f"TPC-C data for {warehouses} warehouses",
        events,
        lambda: cached(warehouses, root),
        lambda: _generate(warehouses, events, root),
    )


def _generate(warehouses: int, events: EventSink, root: Path) -> TpccFiles:
    """Generate the data into the cache (in :func:`cache.made_once`)."""
    reap(root, KIND_GENERATING, events=events)
    work = root / owned_name(KIND_GENERATING)
    target = data_dir(warehouses, root)
    events(
        Phase(
            f"generating TPC-C data for {warehouses} warehouses (about "
            f"{format_bytes(estimated_bytes(warehouses))}, once: kept in {target})"
        )
    )
    created = [work]
    try:
        work.mkdir(mode=0o755)
        cache.write_manifest(work, generate(warehouses, work))
        # an older format is replaced by this one; complete data that another process (a
        # host of a fleet on the same machine) renamed into place meanwhile is kept: it may be
        # loading from it
        if cache.trusted(target) is not None and cached(warehouses, root) is None:
            cache.discard(target, spec.TABLES, (), "an older iolab's, or incomplete")
        try:
            work.rename(target)
        except OSError:
            if cached(warehouses, root) is None:  # not another process that finished first
                raise
        else:
            created = []
    except OSError as exc:
        raise RunFailed(f"could not generate TPC-C data in {work}: {exc}") from exc
    finally:
        remove(created)
    found = cached(warehouses, root)
    if found is None:
        raise RunFailed(f"no complete TPC-C data in {target}")
    return found


def generate(warehouses: int, directory: Path, seed: int = SEED) -> dict[str, object]:
    """Write every table's CSV file into ``directory``; the manifest's content."""
    constants = Constants.for_load(random.Random(f"{seed}:constants"))
    rows: dict[str, int] = {}
    sizes: dict[str, int] = {}
    sums: dict[str, str] = {}
    for table in spec.TABLES:
        path = directory / cache.csv_name(table)
        rows[table], sums[table] = _write(path, _rows(table, warehouses, seed, constants))
        sizes[table] = path.stat().st_size
    return {
        "format": FORMAT,
        "seed": seed,
        "warehouses": warehouses,
        "constants": {
            "c_last": constants.c_last,
            "c_id": constants.c_id,
            "ol_i_id": constants.ol_i_id,
        },
        "rows": rows,
        "bytes": sizes,
        "sha256": sums,
    }


def _write(path: Path, lines: Iterator[str]) -> tuple[int, str]:
    """A table's lines into a new file of the cache, 10,000 at a time; their count and the
    file's SHA-256."""
    count = 0
    digest = hashlib.sha256()
    with cache.create(path) as f:

        def put(batch: list[str]) -> None:
            block = ("\n".join(batch) + "\n").encode("ascii")
            digest.update(block)
            f.write(block)

        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) >= 10_000:
                put(batch)
                count += len(batch)
                batch = []
        if batch:
            put(batch)
            count += len(batch)
    return count, digest.hexdigest()


def _rows(table: str, warehouses: int, seed: int, c: Constants) -> Iterator[str]:
    if table == "item":
        yield from _items(Random(f"{seed}:item", c))
        return
    make = {
        "warehouse": _warehouse,
        "district": _districts,
        "customer": _customers,
        "history": _history,
        "orders": _orders,
        "new_order": _new_orders,
        "order_line": _order_lines,
        "stock": _stock,
    }[table]
    for w in range(1, warehouses + 1):
        yield from make(Random(f"{seed}:{table}:{w}", c), w)


def _address(r: Random) -> str:
    return ",".join(
        (
            r.astring(10, 20),
            r.astring(10, 20),
            r.astring(10, 20),
            r.astring(2, 2).upper(),
            r.nstring(4) + "11111",
        )
    )


def _items(r: Random) -> Iterator[str]:
    for i in range(1, spec.ITEMS + 1):
        yield (
            f"{i},{r.uniform(1, 10_000)},{r.astring(14, 24)},{r.money(100, 10_000)},"
            f"{r.data(26, 50)}"
        )


def _warehouse(r: Random, w: int) -> Iterator[str]:
    yield f"{w},{r.astring(6, 10)},{_address(r)},{r.rate(2000)},300000.00"


def _districts(r: Random, w: int) -> Iterator[str]:
    for d in range(1, spec.DISTRICTS + 1):
        yield (
            f"{d},{w},{r.astring(6, 10)},{_address(r)},{r.rate(2000)},30000.00,{spec.ORDERS + 1}"
        )


def _customers(r: Random, w: int) -> Iterator[str]:
    for d in range(1, spec.DISTRICTS + 1):
        for c in range(1, spec.CUSTOMERS + 1):
            last = spec.last_name(c - 1) if c <= 1000 else r.customer_last()
            credit = "BC" if r.uniform(1, 10) == 1 else "GC"
            yield (
                f"{c},{d},{w},{r.astring(8, 16)},OE,{last},{_address(r)},{r.nstring(16)},"
                f"{spec.LOAD_TIME},{credit},50000.00,{r.rate(5000)},-10.00,10.00,1,0,"
                f"{r.astring(300, 500)}"
            )


def _history(r: Random, w: int) -> Iterator[str]:
    for d in range(1, spec.DISTRICTS + 1):
        for c in range(1, spec.CUSTOMERS + 1):
            yield f"{c},{d},{w},{d},{w},{spec.LOAD_TIME},10.00,{r.astring(12, 24)}"


def _shape(w: int, d: int, seed: int = SEED) -> tuple[list[int], list[int], list[int]]:
    """District ``d``'s orders: customer of each (a permutation of 1..3000), line count (5..15)
    and carrier (1..10), from one stream, so orders and order lines agree."""
    rng = random.Random(f"{seed}:shape:{w}:{d}")
    customers = list(range(1, spec.CUSTOMERS + 1))
    rng.shuffle(customers)
    counts = [rng.randint(5, 15) for _ in range(spec.ORDERS)]
    carriers = [rng.randint(1, 10) for _ in range(spec.ORDERS)]
    return customers, counts, carriers


def _orders(r: Random, w: int) -> Iterator[str]:
    for d in range(1, spec.DISTRICTS + 1):
        customers, counts, carriers = _shape(w, d)
        for o in range(1, spec.ORDERS + 1):
            carrier = carriers[o - 1] if o < spec.NEW_ORDERS_FROM else ""
            yield f"{o},{d},{w},{customers[o - 1]},{spec.LOAD_TIME},{carrier},{counts[o - 1]},1"


def _new_orders(r: Random, w: int) -> Iterator[str]:
    for d in range(1, spec.DISTRICTS + 1):
        for o in range(spec.NEW_ORDERS_FROM, spec.ORDERS + 1):
            yield f"{o},{d},{w}"


def _order_lines(r: Random, w: int) -> Iterator[str]:
    for d in range(1, spec.DISTRICTS + 1):
        _, counts, _ = _shape(w, d)
        for o in range(1, spec.ORDERS + 1):
            delivered = o < spec.NEW_ORDERS_FROM
            for n in range(1, counts[o - 1] + 1):
                when = spec.LOAD_TIME if delivered else ""
                amount = "0.00" if delivered else r.money(1, 999_999)
                yield (
                    f"{o},{d},{w},{n},{r.uniform(1, spec.ITEMS)},{w},{when},5,{amount},"
                    f"{r.astring(24, 24)}"
                )


def _stock(r: Random, w: int) -> Iterator[str]:
    for i in range(1, spec.STOCK + 1):
        dists = ",".join(r.astring(24, 24) for _ in range(spec.DISTRICTS))
        yield f"{i},{w},{r.uniform(10, 100)},{dists},0,0,0,{r.data(26, 50)}"
