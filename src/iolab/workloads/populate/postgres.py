"""PostgreSQL's side of the table-population workload (seeds 000 and 003); see loading.py.

The table is ``iolab_populate (id, payload char(N))`` with a primary key on ``id``, hash
partitioned over the layout's tablespaces (one partition, and its primary-key index, per data
file), or a plain table when there is one tablespace. The payload is stored PLAIN (never
compressed, never moved to a TOAST table) and is wide enough that a heap page holds exactly one
row: PostgreSQL's heap is not clustered, so "one row per page" is about the heap; the
primary-key B-tree is a separate, much smaller relation.

Client mode runs the insert loop in iolab over prepared statements (or COPY); server mode runs
it in a PL/pgSQL procedure, ``iolab_load``, that commits inside its loop, as the seed's T-SQL
loop does.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import select
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from iolab.engines.external import Objects
from iolab.engines.interface import Engine
from iolab.engines.rights import may_checkpoint
from iolab.errors import BadInput
from iolab.latency.recording import LoaderClock, OpKind
from iolab.workloads.populate.loading import (
    TABLE,
    KeyKind,
    LoaderError,
    LoadMethod,
    LoadMode,
    LoadSpec,
    Progress,
    TableStats,
    key_factory,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg import errors as pg_errors

PAGE_SIZE = 8192

# The heap page and tuple layout the payload width is derived from (64-bit builds):
PAGE_HEADER = 24  # SizeOfPageHeaderData
LINE_POINTER = 4  # ItemIdData, one per tuple
TUPLE_HEADER = 24  # HeapTupleHeader is 23 bytes, MAXALIGNed to 24 (no null bitmap: NOT NULL)
VARLENA_HEADER = 4  # char(N) is a varlena; N > 126 bytes takes the 4-byte header
ALIGN = 8  # MAXALIGN: the space a tuple takes on the page is its length rounded up to 8
KEY_BYTES = {KeyKind.SEQUENTIAL: 8, KeyKind.RANDOM: 16, KeyKind.ORDERED_UUID: 16}

PROCEDURE = "iolab_load"
UUIDV7_FUNCTION = "iolab_uuidv7"  # for servers before 18, which have no uuidv7()
PROGRESS_NOTICE = "iolab progress "  # the procedure's NOTICE after a commit: "iolab progress 123"
PROGRESS_INTERVAL = 0.5  # seconds between the procedure's progress notices
MAX_PARAMETERS = 65535  # bind parameters in one statement (protocol limit)
PAYLOAD_CHAR = "a"  # the payload column defaults to repeat('a', N): full width, not padding
_STATEMENT_IDS = itertools.count()  # unique names for the statements the libpq path prepares


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def payload_width(page_size: int = PAGE_SIZE) -> int:
    """The smallest ``char(N)`` width that leaves room for one row per heap page, never two.

    A page of 8192 bytes has a 24-byte header, then line pointers (4 bytes each) growing up and
    tuples (each MAXALIGNed to 8) growing down. Two tuples of aligned size A fit when
    24 + 2*4 + 2*A <= 8192, i.e. A <= 4080. So a tuple must be longer than 4080 bytes, which
    is aligned to at least 4088, to be alone on its page. A tuple is 24 (header) + key + 4
    (varlena header) + N. The smaller key, bigint (8 bytes), decides: 24 + 8 + 4 + N > 4080
    gives N >= 4045. With the larger key, uuid (16 bytes), the tuple is 4089 bytes (4096
    aligned): still one per page, and far below the largest tuple a page takes
    (8192 - MAXALIGN(24 + 4) = 8160), so it is stored whole on one page.
    """
    two_fit = (page_size - PAGE_HEADER - 2 * LINE_POINTER) // 2 // ALIGN * ALIGN
    smallest_key = min(KEY_BYTES.values())
    return two_fit + 1 - TUPLE_HEADER - smallest_key - VARLENA_HEADER


def max_payload(page_size: int = PAGE_SIZE) -> int:
    """The widest payload whose tuple (with the larger key) still fits on one page."""
    largest_tuple = page_size - _align(PAGE_HEADER + LINE_POINTER)  # MaxHeapTupleSize
    return largest_tuple - TUPLE_HEADER - max(KEY_BYTES.values()) - VARLENA_HEADER


def _key_expression(key: KeyKind, server_version_num: int) -> str | None:
    """The SQL that generates a key in server mode; None when the column default does."""
    if key is KeyKind.RANDOM:
        return "gen_random_uuid()"
    if key is KeyKind.ORDERED_UUID:
        return "uuidv7()" if server_version_num >= 180000 else f"{UUIDV7_FUNCTION}()"
    return None


def _insert_statement(k: int, with_key: bool, placeholder: str) -> str:
    """An INSERT of k rows in which the payload is the column's default, as in the seed.

    Only the key travels from the client (for UUID keys): the server fills the payload with
    ``repeat('a', N)``, as pgbench's equivalent script and the seed's ``DEFAULT 'a'`` do.
    ``placeholder`` is ``%s`` (psycopg) or ``$`` (libpq: ``$1``, ``$2``, ...).
    """
    if not with_key:
        rows = ", ".join(["(DEFAULT)"] * k)
        return f"INSERT INTO {TABLE} (payload) VALUES {rows}"
    marks = [f"${i + 1}" if placeholder == "$" else placeholder for i in range(k)]
    return f"INSERT INTO {TABLE} (id) VALUES " + ", ".join(f"({m})" for m in marks)


# A version-7 UUID (RFC 9562) for servers without uuidv7(): the random bits of a version-4 UUID
# with its first 48 bits replaced by Unix milliseconds and its version nibble set to 7 (the
# variant bits of version 4 are already those of version 7).
_UUIDV7_SQL = f"""
CREATE FUNCTION {UUIDV7_FUNCTION}() RETURNS uuid
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000);
    b bytea := uuid_send(gen_random_uuid());
BEGIN
    b := overlay(b PLACING substring(int8send(ms) FROM 3 FOR 6) FROM 1 FOR 6);
    b := set_byte(b, 6, (get_byte(b, 6) & 15) | 112);
    RETURN encode(b, 'hex')::uuid;
END
$fn$
"""

# The server-side loader: ``transactions`` transactions of ``statements`` statements each, a
# statement being one row by INSERT ... VALUES (``batch`` 1, the insert method) or ``batch``
# rows by INSERT ... SELECT (the multirow method); then ``rest`` rows (fewer than one
# transaction) in statements of ``batch`` rows, the last one shorter, and one last COMMIT. The
# caller works these out from the rows, commit_every and batch (see ``server_plan``). COMMIT in
# the loop needs a CALL outside a transaction block.
#
# What runs per row is what the engine must run: the INSERT, the COMMIT, the step of a FOR loop
# (counted natively, no expression). The payload is written as ``repeat('a', N)`` in the
# statement, which the planner folds to one constant of the column's type: a PL/pgSQL variable
# would be a parameter, cast to char(N) again for every row. The clock is read once per group of
# ``group_size`` transactions (about CHECK_ROWS rows); the rows committed since the last NOTICE
# are reported in one when ``gap`` has passed since it (every group when ``gap`` is 0). The
# rows not reported are the caller's to report when the CALL returns. The procedure is short and
# has few expressions, because every session compiles it and plans each expression on its first
# CALL: the arithmetic above, done in the procedure, cost 0.5 ms more server CPU per connection
# (bench/README.md).
_PROCEDURE_SQL = """
CREATE PROCEDURE {procedure}(
    transactions bigint, statements int, batch int, rest bigint, group_size int, gap interval
)
LANGUAGE plpgsql AS $proc$
DECLARE
    started bigint := 0;
    noticed bigint := 0;
    take int;
    last_report timestamptz := clock_timestamp();
BEGIN
    WHILE started < transactions LOOP
        take := least(group_size, transactions - started);
        IF batch = 1 AND statements = 1 THEN
            FOR t IN 1..take LOOP
                INSERT INTO {table} ({columns}) VALUES ({row});
                COMMIT;
            END LOOP;
        ELSIF batch = 1 THEN
            FOR t IN 1..take LOOP
                FOR s IN 1..statements LOOP
                    INSERT INTO {table} ({columns}) VALUES ({row});
                END LOOP;
                COMMIT;
            END LOOP;
        ELSE
            FOR t IN 1..take LOOP
                FOR s IN 1..statements LOOP
                    INSERT INTO {table} ({columns}) SELECT {row} FROM generate_series(1, batch);
                END LOOP;
                COMMIT;
            END LOOP;
        END IF;
        started := started + take;
        IF clock_timestamp() - last_report >= gap THEN
            RAISE NOTICE '{notice}%', (started - noticed) * statements * batch;
            noticed := started;
            last_report := clock_timestamp();
        END IF;
    END LOOP;
    IF rest > 0 THEN
        FOR s IN 1..rest / batch LOOP
            INSERT INTO {table} ({columns}) SELECT {row} FROM generate_series(1, batch);
        END LOOP;
        IF rest % batch > 0 THEN
            INSERT INTO {table} ({columns}) SELECT {row} FROM generate_series(1, rest % batch);
        END IF;
        COMMIT;
    END IF;
END
$proc$
"""
CHECK_ROWS = 32  # rows between two looks at the clock in server mode (see _PROCEDURE_SQL)


@dataclass(frozen=True)
class ServerPlan:
    """The arguments of one ``CALL iolab_load`` (see _PROCEDURE_SQL)."""

    transactions: int  # whole transactions
    statements: int  # statements per transaction
    batch: int  # rows per statement
    rest: int  # rows after the whole transactions, fewer than one, in one last transaction
    group_size: int  # transactions between two looks at the clock


def server_plan(count: int, commit_every: int, batch: int, report_every: float) -> ServerPlan:
    """How ``count`` rows split into transactions as the client loop commits them: after the
    statement that brings the rows to ``commit_every``, and after the last one."""
    if commit_every < 1 or batch < 1 or count < 0:
        raise BadInput(
            "rows/commit_every/batch",
            (count, commit_every, batch),
            "give 0 rows or more, commit_every and batch of 1 or more",
        )
    statements = -(-commit_every // batch)  # whole statements reaching commit_every
    per_commit = statements * batch
    transactions, rest = divmod(count, per_commit)
    group = max(1, CHECK_ROWS // per_commit) if report_every > 0 else 1
    return ServerPlan(transactions, statements, batch, rest, group)


class PostgresPopulate:
    """The :class:`~iolab.workloads.populate.loading.PopulateDialect` of PostgreSQL.

    ``tablespaces`` are the layout's, in data-file order; ``server_version_num`` decides how
    ordered UUIDs are made in server mode (``uuidv7()`` from 18 on). ``progress_interval`` is
    how often, in seconds, the server-mode procedure reports progress (0: after every commit).

    Every method works in client mode; server mode has insert and multirow (COPY FROM STDIN
    needs a client to send the rows: copy with server mode is refused as bad input).
    """

    rows_per_page = 1

    def __init__(
        self,
        tablespaces: list[str],
        server_version_num: int,
        *,
        page_size: int = PAGE_SIZE,
        progress_interval: float = PROGRESS_INTERVAL,
    ) -> None:
        if not tablespaces:
            raise BadInput("tablespaces", tablespaces, "give at least one tablespace")
        if progress_interval < 0:
            raise BadInput("progress_interval", progress_interval, "give 0 seconds or more")
        self.tablespaces = list(tablespaces)
        self.server_version_num = server_version_num
        self.page_size = page_size
        self.progress_interval = progress_interval
        self.methods = frozenset(LoadMethod)
        self.modes = frozenset(LoadMode)

    def payload_bytes(self) -> int:
        return payload_width(self.page_size)

    def core_insert(self, key: KeyKind) -> str:
        """The INSERT of one row the compiled driver core prepares (libpq's ``$n`` placeholders):
        the statement :meth:`load_multiplexed` prepares for one row."""
        return _insert_statement(1, key is not KeyKind.SEQUENTIAL, "$")

    # -- the table -------------------------------------------------------------------------------

    def create_table(self, conn: psycopg.Connection[Any], spec: LoadSpec) -> None:
        """Drop and create the table and the server-mode routines, then commit.

        Partitions: ``iolab_populate_p{i}`` in tablespace ``i`` by hash of the key, each with its
        primary-key index in the same tablespace (created on the partitions first and attached
        when the parent's primary key is added). The payload column is made PLAIN on the parent
        before the partitions exist, so they inherit it (and need no TOAST table).
        """
        from psycopg import sql

        self._check(spec)
        table = sql.Identifier(TABLE)
        key_type = sql.SQL("bigserial" if spec.key is KeyKind.SEQUENTIAL else "uuid")
        # From 16 on, STORAGE in CREATE TABLE: a plain table gets no TOAST table at all.
        plain = " STORAGE PLAIN" if self.server_version_num >= 160000 else ""
        payload_type = sql.SQL("char({})" + plain + " NOT NULL DEFAULT repeat({}, {})").format(
            sql.Literal(spec.payload_bytes),
            sql.Literal(PAYLOAD_CHAR),
            sql.Literal(spec.payload_bytes),
        )
        storage = sql.SQL("ALTER TABLE {} ALTER COLUMN payload SET STORAGE PLAIN").format(table)
        statements: list[sql.SQL | sql.Composed] = [
            sql.SQL("DROP PROCEDURE IF EXISTS {}").format(sql.Identifier(PROCEDURE)),
            sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(table),
        ]
        if len(self.tablespaces) == 1:
            space = sql.Identifier(self.tablespaces[0])
            statements += [
                sql.SQL(
                    "CREATE TABLE {} (id {} NOT NULL, payload {}, "
                    "PRIMARY KEY (id) USING INDEX TABLESPACE {}) "
                    "WITH (fillfactor = 100) TABLESPACE {}"
                ).format(table, key_type, payload_type, space, space),
                storage,
            ]
        else:
            statements += [
                sql.SQL(
                    "CREATE TABLE {} (id {} NOT NULL, payload {}) PARTITION BY HASH (id)"
                ).format(table, key_type, payload_type),
                storage,
            ]
            modulus = len(self.tablespaces)
            for i, name in enumerate(self.tablespaces):
                part = sql.Identifier(f"{TABLE}_p{i}")
                space = sql.Identifier(name)
                statements += [
                    sql.SQL(
                        "CREATE TABLE {} PARTITION OF {} "
                        "FOR VALUES WITH (MODULUS {}, REMAINDER {}) "
                        "WITH (fillfactor = 100) TABLESPACE {}"
                    ).format(part, table, sql.Literal(modulus), sql.Literal(i), space),
                    sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (id) USING INDEX TABLESPACE {}").format(
                        part, space
                    ),
                ]
            statements.append(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (id)").format(table))
        statements += self._routines(spec)
        for statement in statements:
            conn.execute(statement)
        conn.commit()

    def _routines(self, spec: LoadSpec) -> list[psycopg.sql.SQL | psycopg.sql.Composed]:
        """The server-mode procedure (always made, so any mode can load into the table)."""
        from psycopg import sql

        key = _key_expression(spec.key, self.server_version_num)
        made: list[sql.SQL | sql.Composed] = []
        if spec.key is KeyKind.ORDERED_UUID and self.server_version_num < 180000:
            made += [
                sql.SQL("DROP FUNCTION IF EXISTS {}()").format(sql.Identifier(UUIDV7_FUNCTION)),
                sql.SQL(_UUIDV7_SQL),
            ]
        payload = f"repeat('{PAYLOAD_CHAR}', {spec.payload_bytes})"  # folded to a constant
        text = _PROCEDURE_SQL.format(
            procedure=PROCEDURE,
            table=TABLE,
            columns="payload" if key is None else "id, payload",
            row=payload if key is None else f"{key}, {payload}",
            notice=PROGRESS_NOTICE,
        )
        made.append(sql.SQL(text))
        return made

    # -- loading ---------------------------------------------------------------------------------

    def ready(self, conn: psycopg.Connection[Any], spec: LoadSpec) -> None:
        """Server mode: a CALL of no transaction, so that this session compiles the procedure
        (about 1 ms of server CPU a session, bench/README.md) before the clock starts. Client
        mode has nothing to ready: psycopg prepares its statements as they repeat."""
        if spec.mode is not LoadMode.SERVER:
            return
        was_autocommit = conn.autocommit
        conn.autocommit = True
        try:
            _call(conn, ServerPlan(0, 1, 1, 0, 1), 0.0)
        finally:
            conn.autocommit = was_autocommit

    def load(
        self,
        conn: psycopg.Connection[Any],
        spec: LoadSpec,
        count: int,
        progress: Progress,
        clock: LoaderClock | None = None,
    ) -> None:
        """Insert ``count`` rows as ``spec`` says; see :meth:`_load_client`, :meth:`_load_server`.

        The connection's autocommit setting is changed while loading and restored afterwards.
        """
        self._check(spec)
        if count < 0:
            raise BadInput("count", count, "give 0 rows or more")
        if count == 0:
            return
        was_autocommit = conn.autocommit
        try:
            if spec.mode is LoadMode.SERVER:
                self._load_server(conn, spec, count, progress)
            else:
                self._load_client(conn, spec, count, progress, clock or LoaderClock.untimed())
        finally:
            from psycopg import pq

            if not conn.closed and conn.info.transaction_status == pq.TransactionStatus.IDLE:
                conn.autocommit = was_autocommit

    def _load_client(
        self,
        conn: psycopg.Connection[Any],
        spec: LoadSpec,
        count: int,
        progress: Progress,
        clock: LoaderClock,
    ) -> None:
        """The loop in iolab: one statement (or COPY) per ``batch`` rows, prepared.

        A commit follows the statement that brings the uncommitted rows to ``commit_every``, and
        the last statement. When every statement reaches it (``commit_every`` <= rows per
        statement: always for insert with commit_every 1, the seed's case) the connection runs
        in autocommit, one implicit transaction per statement, with no BEGIN/COMMIT round trips,
        and INSERTs go straight through libpq (:meth:`load_multiplexed`); otherwise in explicit
        transactions, through a psycopg cursor. For COPY, each chunk of ``batch`` rows is one COPY
        command, so commits happen at chunk boundaries: the chunk that reaches commit_every.
        """
        if self.multiplexes(spec):
            self.load_multiplexed([conn], spec, [count], lambda _i, n: progress(n), [clock])
            return
        per_statement = 1 if spec.method is LoadMethod.INSERT else spec.batch
        autocommit = spec.commit_every <= per_statement
        conn.autocommit = autocommit
        write = self._copier(conn, spec) if spec.method is LoadMethod.COPY else None
        insert = None if write is not None else self._inserter(conn, spec)
        kind = OpKind.TRANSACTION if autocommit else OpKind.STATEMENT
        done = pending = 0
        try:
            while done < count:
                k = min(per_statement, count - done)
                started = clock.begin(k, can_stop=pending == 0)
                if started is None:
                    break  # the duration is up, at a transaction boundary
                if write is not None:
                    write(k)
                else:
                    assert insert is not None
                    insert(k)
                clock.record(kind, started)
                done += k
                pending += k
                if pending >= spec.commit_every or done == count:
                    if not autocommit:
                        started = time.perf_counter_ns()
                        conn.commit()
                        clock.record(OpKind.COMMIT, started)
                    progress(pending)
                    pending = 0
        except BaseException:
            if not autocommit and not conn.closed:
                with contextlib.suppress(Exception):
                    conn.rollback()
            raise

    def _inserter(self, conn: psycopg.Connection[Any], spec: LoadSpec) -> Callable[[int], None]:
        """A function inserting k rows in one prepared INSERT (a statement per distinct k)."""
        make_key = key_factory(spec.key)
        cur = conn.cursor()
        queries: dict[int, str] = {}

        def insert(k: int) -> None:
            query = queries.get(k)
            if query is None:
                query = queries[k] = _insert_statement(k, make_key is not None, "%s")
            params = [] if make_key is None else [uuid.UUID(bytes=make_key()) for _ in range(k)]
            cur.execute(query, params, prepare=True)

        return insert

    def multiplexes(self, spec: LoadSpec) -> bool:
        """Whether :meth:`load_multiplexed` can drive loaders of ``spec``: client-mode INSERTs
        in autocommit (every statement reaches ``commit_every``: the seed's case)."""
        return (
            spec.mode is LoadMode.CLIENT
            and spec.method is not LoadMethod.COPY
            and spec.commit_every <= (1 if spec.method is LoadMethod.INSERT else spec.batch)
        )

    def load_multiplexed(
        self,
        conns: Sequence[psycopg.Connection[Any]],
        spec: LoadSpec,
        counts: Sequence[int],
        progress: Callable[[int, int], None],
        clocks: Sequence[LoaderClock] | None = None,
    ) -> list[float]:
        """Insert up to ``counts[i]`` rows on ``conns[i]``, all connections driven from this
        thread.

        Each connection runs in autocommit, one implicit transaction per statement (no BEGIN
        or COMMIT round trips), through psycopg's libpq: a statement per distinct row count is
        prepared once (the full-size one before the first row is sent), then each statement is
        a PQsendQueryPrepared; one ``epoll`` over every socket collects whichever results are
        ready and sends those connections their next statement, as pgbench's threads do with
        their clients. Loader threads, one per connection, spent most of a 2-CPU machine's
        spare time handing the GIL over (the client's CPU is the server's here); one thread
        costs ~8 us a row whatever the number of connections. The per-row path reads each
        connection's bound methods from lists and asks the clock one question per statement
        when no ``--rate`` paces it: every microsecond of the client's CPU is taken from the
        server on two cores (bench/README.md, issue 29).

        ``clocks[i]`` times loader i's statements and paces them: a statement not yet due under
        ``--rate`` waits in a queue, and ``epoll`` wakes for the first one due; a loader whose
        duration is up sends nothing more. ``progress(i, n)`` follows each committed statement
        of loader i; it may raise to stop the load. A statement that fails raises
        :class:`LoaderError` naming its loader. Returns each loader's seconds from the call
        until its last row was committed.
        """
        from psycopg import errors as pg_errors
        from psycopg import pq

        if not self.multiplexes(spec):
            raise BadInput("spec", spec, "client-mode INSERTs with a commit per statement")
        n = len(conns)
        clocks = clocks or [LoaderClock.untimed() for _ in conns]
        per_statement = 1 if spec.method is LoadMethod.INSERT else spec.batch
        make_key = key_factory(spec.key)
        prefix = f"iolab_insert_{next(_STATEMENT_IDS)}_"
        names: dict[int, bytes] = {}  # statement name by row count, made once
        no_params: list[bytes] = []  # sequential keys: the server makes them, nothing is sent
        ok = pq.ExecStatus.COMMAND_OK
        transaction = OpKind.TRANSACTION
        perf_ns = time.perf_counter_ns
        t0 = time.perf_counter()
        elapsed = [0.0] * n
        left = list(counts)
        pending = [0] * n  # rows in the statement in flight (or queued, not due yet)
        started = [0] * n  # when it began (its due time under a rate)
        in_flight = [False] * n
        prepared: list[set[int]] = [set() for _ in conns]
        pgconns = [c.pgconn for c in conns]
        # Per loader, bound once: the loop below runs once per row, and every attribute look-up,
        # call layer and clock read in it is client CPU taken from the server
        sends = [p.send_query_prepared for p in pgconns]
        consumes = [p.consume_input for p in pgconns]
        busies = [p.is_busy for p in pgconns]
        results = [p.get_result for p in pgconns]
        dues = [c.due for c in clocks]
        records = [c.record for c in clocks]
        # With no rate, every statement is due when asked: no queue, no clock read to check it
        paced = any(c.paced for c in clocks)
        for c in conns:
            c.autocommit = True
        by_fd: dict[int, int] = {}
        poller = select.epoll()  # its cost grows with the sockets ready, not those watched
        waiting: list[tuple[int, int]] = []  # (due ns, loader): statements not due yet

        def prepare(i: int, k: int) -> bytes:
            """The name of the statement of k rows, prepared on loader i (once per k)."""
            name = names.get(k)
            if name is None:
                name = names[k] = f"{prefix}{k}".encode()
            if k not in prepared[i]:
                text = _insert_statement(k, make_key is not None, "$")
                pgconns[i].send_prepare(name, text.encode())
                wait(i)
                prepared[i].add(k)
            return name

        def params(k: int) -> list[bytes]:
            """The parameters of a statement of k rows: the keys made in the client, if any."""
            if make_key is None:
                return no_params
            return [make_key().hex().encode() for _ in range(k)]

        def send(i: int) -> None:
            """Send loader i its next statement (preparing it first when k is new)."""
            k = pending[i]
            sends[i](full_names[i] if k == full else prepare(i, k), params(k))
            in_flight[i] = True

        def finish(i: int) -> None:
            """Collect loader i's result (its socket is readable and libpq is not busy)."""
            failed: pq.abc.PGresult | None = None
            get_result = results[i]
            while (res := get_result()) is not None:  # drain to the next query
                if res.status != ok and failed is None:
                    failed = res
            if failed is not None:
                error = pg_errors.error_from_result(failed, encoding=conns[i].info.encoding)
                raise LoaderError(i, error)

        def wait(i: int) -> None:
            """Block on loader i alone (a PREPARE, once per statement shape)."""
            alone = select.poll()
            alone.register(pgconns[i].socket, select.POLLIN)
            while True:
                consumes[i]()
                if not busies[i]():
                    break
                alone.poll()
            finish(i)

        def schedule(i: int) -> bool:
            """Loader i's next statement: sent now, or queued until due; False: it is done."""
            if left[i] <= 0:
                return False
            k = per_statement if left[i] >= per_statement else left[i]
            due = dues[i](k)
            if due is None:
                return False
            pending[i] = k
            started[i] = due
            if paced and due > perf_ns():
                heapq.heappush(waiting, (due, i))
            else:
                send(i)
            return True

        full = per_statement  # the rows of every statement but maybe a loader's last
        full_names = [prepare(i, full) if left[i] >= full else b"" for i in range(n)]
        try:
            for i in range(n):
                if schedule(i):  # a loader with no rows keeps its elapsed 0.0
                    fd = pgconns[i].socket
                    by_fd[fd] = i
                    poller.register(fd, select.EPOLLIN)
            poll = poller.poll
            while by_fd:
                timeout = -1.0
                if waiting:  # epoll counts whole ms: wake early, then sleep the rest exactly
                    until = waiting[0][0] - perf_ns()
                    if 0 < until < 1_000_000:
                        time.sleep(until / 1e9)
                    timeout = max(0, until // 1_000_000) / 1000
                for fd, _ in poll(timeout):
                    i = by_fd[fd]
                    consumes[i]()
                    if not in_flight[i] or busies[i]():
                        continue  # a statement not sent yet (not due), or its result not complete
                    finish(i)
                    in_flight[i] = False
                    records[i](transaction, started[i])
                    k = pending[i]
                    left[i] -= k
                    progress(i, k)
                    # schedule(i) inlined for the common case, a full statement due at once
                    if left[i] >= full and not paced:
                        due = dues[i](full)
                        if due is not None:
                            pending[i] = full
                            started[i] = due
                            sends[i](full_names[i], params(full))
                            in_flight[i] = True
                            continue
                    elif schedule(i):
                        continue
                    elapsed[i] = time.perf_counter() - t0
                    poller.unregister(fd)
                    del by_fd[fd]
                while waiting and waiting[0][0] <= perf_ns():
                    send(heapq.heappop(waiting)[1])
        finally:
            poller.close()
        return elapsed

    def _copier(self, conn: psycopg.Connection[Any], spec: LoadSpec) -> Callable[[int], None]:
        """A function sending k rows in one ``COPY ... FROM STDIN`` (text format)."""
        line = (PAYLOAD_CHAR * spec.payload_bytes + "\n").encode()
        make_key = key_factory(spec.key)
        cur = conn.cursor()
        columns = "payload" if make_key is None else "id, payload"
        statement = f"COPY {TABLE} ({columns}) FROM STDIN"

        def write(k: int) -> None:
            if make_key is None:
                data = line * k
            else:
                data = b"".join(make_key().hex().encode() + b"\t" + line for _ in range(k))
            with cur.copy(statement) as copy:
                copy.write(data)

        return write

    def _load_server(
        self, conn: psycopg.Connection[Any], spec: LoadSpec, count: int, progress: Progress
    ) -> None:
        """One ``CALL iolab_load(...)`` for all ``count`` rows, as the seed's loop is one script.

        The procedure commits inside its loop and reports committed rows in NOTICEs (at most
        every ``progress_interval`` seconds), which reach ``progress`` while the CALL runs; what
        is left unreported is passed on when it returns. The alternative, a CALL per some
        thousand rows, would move progress without notices but add a round trip and a new
        procedure invocation per call, further from the seed's single loop.
        """
        batch = 1 if spec.method is LoadMethod.INSERT else spec.batch
        conn.autocommit = True  # COMMIT in a procedure needs CALL outside a transaction block
        reported = 0

        def on_notice(diag: pg_errors.Diagnostic) -> None:
            nonlocal reported
            message = diag.message_primary or ""
            if message.startswith(PROGRESS_NOTICE):
                rows = int(message.removeprefix(PROGRESS_NOTICE))
                reported += rows
                progress(rows)

        plan = server_plan(count, spec.commit_every, batch, self.progress_interval)
        conn.add_notice_handler(on_notice)
        try:
            _call(conn, plan, self.progress_interval)
        finally:
            conn.remove_notice_handler(on_notice)
        if count > reported:
            progress(count - reported)

    # -- measuring -------------------------------------------------------------------------------

    def checkpoint(self, conn: psycopg.Connection[Any]) -> None:
        """A CHECKPOINT, unless the user may not run one (a server of the user's: said before
        the run, see :func:`iolab.engines.rights.check`)."""
        if may_checkpoint(conn):
            conn.execute("CHECKPOINT")
        conn.commit()

    def log_bytes(self, conn: psycopg.Connection[Any]) -> int | None:
        """WAL bytes generated since the cluster began: the insert position as a byte count.

        The insert position (``pg_current_wal_insert_lsn``) counts WAL as it is generated; the
        write position (``pg_current_wal_lsn``) lags it by what is still in WAL buffers.
        """
        row = conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()
        conn.commit()
        assert row is not None
        return int(row[0])

    def table_stats(self, conn: psycopg.Connection[Any]) -> TableStats:
        """Counts over the table; sizes over it and its partitions (heap main fork for data)."""
        from psycopg import sql

        table = sql.Identifier(TABLE)
        counted = conn.execute(
            sql.SQL("SELECT count(*), count(DISTINCT id) FROM {}").format(table)
        ).fetchone()
        sizes = conn.execute(
            "SELECT coalesce(sum(pg_relation_size(c.oid, 'main')), 0), "
            "coalesce(sum(pg_total_relation_size(c.oid)), 0), current_setting('block_size') "
            "FROM pg_class c WHERE c.oid = %(t)s::regclass OR c.oid IN "
            "(SELECT inhrelid FROM pg_inherits WHERE inhparent = %(t)s::regclass)",
            {"t": TABLE},
        ).fetchone()
        conn.commit()
        assert counted is not None
        assert sizes is not None
        block_size = int(sizes[2])
        return TableStats(
            rows=int(counted[0]),
            distinct_keys=int(counted[1]),
            table_bytes=int(sizes[0]),
            total_bytes=int(sizes[1]),
            pages=int(sizes[0]) // block_size,
            page_size=block_size,
        )

    # -- checks ----------------------------------------------------------------------------------

    def _check(self, spec: LoadSpec) -> None:
        if spec.commit_every < 1:
            raise BadInput("commit_every", spec.commit_every, "give 1 row or more")
        if spec.batch < 1:
            raise BadInput("batch", spec.batch, "give 1 row or more")
        widest = max_payload(self.page_size)
        if not 1 <= spec.payload_bytes <= widest:
            raise BadInput(
                "payload_bytes", spec.payload_bytes, f"give 1 to {widest} bytes (one heap page)"
            )
        if spec.method is LoadMethod.COPY and spec.mode is LoadMode.SERVER:
            raise BadInput(
                "--method",
                str(spec.method),
                "COPY FROM STDIN needs the client to send the rows: use --mode client, "
                "or --method multirow for batches inside the server",
            )
        if (
            spec.method is LoadMethod.MULTIROW
            and spec.mode is LoadMode.CLIENT
            and spec.key is not KeyKind.SEQUENTIAL
            and spec.batch > MAX_PARAMETERS
        ):
            raise BadInput(
                "batch",
                spec.batch,
                f"a multirow INSERT takes at most {MAX_PARAMETERS} rows with a UUID key",
            )


def _call(conn: psycopg.Connection[Any], plan: ServerPlan, gap: float) -> None:
    """``CALL iolab_load`` with ``plan``'s arguments, ``gap`` seconds between two NOTICEs."""
    from psycopg import sql

    conn.execute(
        sql.SQL("CALL {}({}, {}, {}, {}, {}, make_interval(secs => {}))").format(
            sql.Identifier(PROCEDURE),
            sql.Literal(plan.transactions),
            sql.Literal(plan.statements),
            sql.Literal(plan.batch),
            sql.Literal(plan.rest),
            sql.Literal(plan.group_size),
            sql.Literal(float(gap)),
        )
    )


OBJECTS = Objects(tables=(TABLE,), procedures=(PROCEDURE,), functions=(UUIDV7_FUNCTION,))


def dialect(engine: Engine) -> PostgresPopulate:
    """The table-population SQL for a running server (its tablespaces and version)."""
    conn: Any = engine.connect()
    try:
        row = conn.execute(
            "SELECT current_setting('server_version_num'), current_setting('block_size')"
        ).fetchone()
    finally:
        conn.close()
    assert row is not None
    return PostgresPopulate(engine.spaces(), int(row[0]), page_size=int(row[1]))
