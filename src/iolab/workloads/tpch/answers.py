"""The 22 TPC-H queries and their answers, from DuckDB's tpch extension, and the answer check.

The queries are ``tpch_queries()`` of the extension (``duckdb-ext-tpch``, loaded offline from
the package's directory), with TPC-H's validation substitution parameters. The extension's
answers (``tpch_answers()``, at SF 0.01, 0.1 and 1) were made from the data of DuckDB's own
generator, which writes different random text (addresses, comments) than dbgen and
``tpchgen-cli`` do; numbers, keys, names and dates agree. So the reference iolab checks engines
against is made in two steps, once per scale factor and kept beside the data
(``answers.json``):

1. DuckDB (in memory) runs the 22 queries on the generated files;
2. those answers are checked against the extension's: every value, except the columns that
   print generated text (:data:`GENERATED_TEXT`) and query 13, whose counts depend on the text
   of ``o_comment``. A disagreement means the data are not TPC-H's: the run fails.

A value matches the reference when both are empty (NULL), when both are numbers that agree to
the decimals the less precise one prints (integers exactly), or when the text is the same
without trailing blanks (``CHAR(n)`` pads). Rows are compared in order.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from iolab.engines.duckdb import duckdb_module, sql_string
from iolab.errors import MissingTool, RunFailed
from iolab.events import EventSink, Phase
from iolab.workloads import cache
from iolab.workloads.tpch.data import ANSWERS_FILE, ANSWERS_TMP
from iolab.workloads.tpch.dialect import TpchFiles
from iolab.workloads.tpch.duckdb import DuckDBTpch

EXTENSION_PACKAGE = "duckdb-ext-tpch"
EXTENSIONS_ENV = "IOLAB_DUCKDB_EXTENSIONS"
HOW_TO_GET = "pip install duckdb-ext-tpch (or pip install 'iolab[engines]')"
QUERIES = tuple(range(1, 23))
ANSWER_SCALE_FACTORS = (0.01, 0.1, 1.0)  # where the extension has answers

# Columns whose values come from the generator's random text, which DuckDB's generator makes
# differently from dbgen / tpchgen-cli; and the query whose rows depend on such text.
GENERATED_TEXT: dict[int, frozenset[str]] = {
    2: frozenset({"s_address", "s_comment"}),
    10: frozenset({"c_address", "c_comment"}),
    15: frozenset({"s_address"}),
    20: frozenset({"s_address"}),
}
TEXT_DEPENDENT_QUERIES = frozenset({13})
RELATIVE_SLACK = Decimal("1e-12")  # binary floating point noise in the last digits


@dataclass(frozen=True)
class Answer:
    """A query's result as text: column names and rows of canonical values (NULL is '')."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def as_json(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows]}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Answer:
        return cls(tuple(doc["columns"]), tuple(tuple(r) for r in doc["rows"]))

    @classmethod
    def from_pipe_text(cls, text: str) -> Answer:
        """The extension's format: a header line, then one line per row, ``|``-separated."""
        lines = text.splitlines()
        columns = tuple(lines[0].split("|")) if lines else ()
        rows = tuple(tuple(line.split("|")) for line in lines[1:])
        return cls(columns, rows)

    @classmethod
    def from_rows(cls, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Answer:
        return cls(tuple(columns), tuple(tuple(canonical(v) for v in r) for r in rows))


def canonical(value: Any) -> str:
    """A result value as text the way the check compares it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode(errors="replace").rstrip()
    return str(value).rstrip()


def _number(text: str) -> Decimal | None:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _decimals(text: str) -> int | None:
    """Digits after the point as printed; None for exponent notation."""
    if "e" in text.lower():
        return None
    _, _, fraction = text.partition(".")
    return len(fraction)


def same_value(got: str, want: str) -> bool:
    if got == want:
        return True
    a, b = _number(got), _number(want)
    if a is None or b is None:
        return got.rstrip() == want.rstrip()
    # half a unit of the last digit the less precise side prints (integers: exactly equal)
    decimals = [d for d in (_decimals(got), _decimals(want)) if d is not None]
    tolerance = Decimal(5) * Decimal(10) ** -(min(decimals) + 1) if decimals else Decimal(0)
    slack = RELATIVE_SLACK * max(abs(a), abs(b))
    return abs(a - b) <= max(tolerance, slack)


def mismatch(got: Answer, want: Answer, skip: frozenset[str] = frozenset()) -> str | None:
    """Why ``got`` is not ``want`` (first difference), or None when they match.

    ``skip``: column names (of ``want``) not compared.
    """
    if len(got.columns) != len(want.columns):
        return f"{len(got.columns)} columns, expected {len(want.columns)}"
    if len(got.rows) != len(want.rows):
        return f"{len(got.rows)} rows, expected {len(want.rows)}"
    compared = [i for i, name in enumerate(want.columns) if name.lower() not in skip]
    for r, (g, w) in enumerate(zip(got.rows, want.rows, strict=True)):
        for i in compared:
            if not same_value(g[i], w[i]):
                return f"row {r + 1} {want.columns[i]}: got {g[i]!r}, expected {w[i]!r}"
    return None


# --- the extension ------------------------------------------------------------------------


def extension_directory() -> Path:
    """The DuckDB extension directory the ``duckdb-ext-tpch`` package installed, or the one
    ``$IOLAB_DUCKDB_EXTENSIONS`` names (laid out as DuckDB's: ``v1.4.4/linux_amd64/...``)."""
    env = os.environ.get(EXTENSIONS_ENV)
    if env:
        return Path(env)
    try:
        dist = importlib.metadata.distribution(EXTENSION_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise MissingTool("DuckDB's tpch extension (package duckdb-ext-tpch)", HOW_TO_GET) from exc
    return Path(str(dist.locate_file("duckdb_ext/extensions")))


def load_extension(conn: Any) -> None:
    """Load the tpch extension from the package, never from the network."""
    duckdb = duckdb_module()
    directory = extension_directory()
    conn.execute("SET autoinstall_known_extensions = false")
    conn.execute(f"SET extension_directory = {sql_string(str(directory))}")
    try:
        conn.execute("LOAD tpch")
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0]
        raise MissingTool(
            f"DuckDB's tpch extension for DuckDB {duckdb.__version__} (package "
            f"{EXTENSION_PACKAGE}, looked in {directory}: {first})",
            f"install the duckdb-ext-tpch built for this DuckDB: {HOW_TO_GET}",
        ) from None


def _extension_conn() -> Any:
    conn = duckdb_module().connect(":memory:")
    try:
        load_extension(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def queries() -> dict[int, str]:
    """Query number -> its text (DuckDB's dialect), from ``tpch_queries()``."""
    conn = _extension_conn()
    try:
        rows = conn.execute("SELECT query_nr, query FROM tpch_queries()").fetchall()
    finally:
        conn.close()
    return {int(n): str(q) for n, q in rows}


def has_answers(scale_factor: float) -> bool:
    return any(abs(scale_factor - sf) < 1e-9 for sf in ANSWER_SCALE_FACTORS)


def extension_answers(scale_factor: float) -> dict[int, Answer]:
    """The extension's answers at ``scale_factor`` (empty where it has none)."""
    conn = _extension_conn()
    try:
        rows = conn.execute(
            "SELECT query_nr, answer FROM tpch_answers() WHERE abs(scale_factor - ?) < 1e-9",
            [scale_factor],
        ).fetchall()
    finally:
        conn.close()
    return {int(n): Answer.from_pipe_text(str(a)) for n, a in rows}


# --- the reference -------------------------------------------------------------------------


def reference(files: TpchFiles, events: EventSink) -> dict[int, Answer] | None:
    """The answers engines are checked against at this data's scale factor; None where the
    extension has no answers to vouch for them (see the module docstring)."""
    if not has_answers(files.scale_factor):
        return None
    path = files.directory / ANSWERS_FILE
    try:
        doc = json.loads(cache.read_trusted(path))
    except FileNotFoundError:
        pass
    else:
        return {int(n): Answer.from_json(a) for n, a in doc["answers"].items()}
    events(Phase("computing the reference answers with DuckDB (once per scale factor)"))
    computed = _compute(files)
    official = extension_answers(files.scale_factor)
    for number in QUERIES:
        if number in TEXT_DEPENDENT_QUERIES:
            continue
        why = mismatch(computed[number], official[number], GENERATED_TEXT.get(number, frozenset()))
        if why is not None:
            raise RunFailed(
                f"the TPC-H data in {files.directory} do not give TPC-H's answer to query "
                f"{number} ({why}); remove that directory to generate the data again"
            )
    doc = {
        "scale_factor": files.scale_factor,
        "made_by": f"DuckDB {duckdb_module().__version__}, checked against tpch_answers()",
        "answers": {str(n): a.as_json() for n, a in computed.items()},
    }
    tmp = files.directory / ANSWERS_TMP
    if cache.trusted(tmp) is not None:
        tmp.unlink()  # left by a process killed while writing it
    with cache.create(tmp) as f:
        f.write((json.dumps(doc) + "\n").encode())
    tmp.replace(path)
    return computed


def _compute(files: TpchFiles) -> dict[int, Answer]:
    texts = queries()
    db = _extension_conn()
    try:
        dialect = DuckDBTpch(["main"])
        dialect.create_tables(db)
        dialect.load(db.cursor, files, lambda _n: None)
        found = {}
        for number in QUERIES:
            cur = db.execute(texts[number])
            names = [d[0] for d in cur.description or []]
            found[number] = Answer.from_rows(names, cur.fetchall())
        return found
    finally:
        db.close()
