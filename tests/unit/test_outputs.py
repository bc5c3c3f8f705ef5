"""Output paths (``report --html``, ``export -o``, ``timeline -o``, ``demo --html``): never the
results database or its side files, another SQLite database or a file iolab did not write
(one line, exit 2, the file byte-identical); iolab's own outputs are replaced whole, through a
scratch file renamed over them (cli/output.py, report/signature.py). In-process, no program
started; a write that fails on a full filesystem is in tests/integration/test_outputs.py."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sqlite3
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab import report as report_lib
from iolab.config import experiment as config
from iolab.events import Collect
from iolab.report import charts
from iolab.report import html as html_report
from iolab.report.signature import sign_png, sqlite_file, written_by_iolab
from iolab.results import RunOutcome
from iolab.runner import experiment as runner
from iolab.runner.single import CommandRun, execute
from iolab.store import open_store
from iolab.workloads.registry import WORKLOADS
from tests.unit.cli import iolab, no_programs
from tests.unit.fakes import FakeWorkload, experiment_file

NAME = "populate sqlite"


@pytest.fixture(autouse=True)
def _no_programs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with no_programs(monkeypatch):
        yield


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A results database with one finished populate run, and its -wal and -shm files."""
    path = tmp_path / "e.db"

    def body(outcome: RunOutcome) -> None:
        outcome.summary.update({"elapsed_seconds": 1.5, "rows": 200, "rows_per_second": 133.0})

    spec = CommandRun(NAME, "populate", {"engine": "sqlite", "rows": 200}, {}, {})
    with open_store(path) as store:
        execute(store, spec, body)
    for side in ("-wal", "-shm"):  # as a command that has the database open leaves them
        Path(f"{path}{side}").touch()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def runs_listed(db: Path) -> list[int]:
    done = iolab("results", "list", "--json", "--results", str(db))
    assert done.code == 0, done
    return [r["id"] for r in json.loads(done.stdout)]


RESULTS_DB = "it is the results database ({db} or its -wal, -shm or -journal); name another file"
COMMANDS = [
    (["report", NAME, "--html", "{out}"], "--html"),
    (["export", NAME, "-o", "{out}"], "--output"),
    (["export", NAME, "--format", "json", "-o", "{out}"], "--output"),
    (["export", NAME, "--format", "parquet", "-o", "{out}"], "--output"),
]


@pytest.mark.parametrize("side", ["", "-wal", "-shm", "-journal"])
@pytest.mark.parametrize(("argv", "option"), COMMANDS, ids=[" ".join(a[2:]) for a, _ in COMMANDS])
def test_the_results_database_is_never_an_output(
    db: Path, argv: list[str], option: str, side: str
) -> None:
    out = Path(f"{db}{side}")
    before = {p: digest(p) for p in db.parent.iterdir()}
    args = [a.format(out=out) for a in argv]
    done = iolab(*args, "--results", str(db))
    line = f"error: {option}: {str(out)!r} is not allowed; {RESULTS_DB.format(db=db)}"
    assert (done.code, done.error_lines, done.stdout) == (2, [line], "")
    assert {p: digest(p) for p in db.parent.iterdir()} == before  # nothing new, nothing changed
    assert runs_listed(db) == [1]


def test_a_link_to_the_results_database_is_refused_too(db: Path, tmp_path: Path) -> None:
    link = tmp_path / "report.html"
    link.symlink_to(db)
    done = iolab("report", NAME, "--html", str(link), "--results", str(db))
    assert done.error_lines == [
        f"error: --html: {str(link)!r} is not allowed; {RESULTS_DB.format(db=db)}"
    ]
    assert runs_listed(db) == [1] and link.is_symlink()


def test_the_default_results_database_is_never_an_output(db: Path) -> None:
    done = iolab("export", NAME, "-o", str(db), env={"IOLAB_RESULTS": str(db)})
    assert done.error_lines == [
        f"error: --output: {str(db)!r} is not allowed; {RESULTS_DB.format(db=db)}"
    ]
    assert runs_listed(db) == [1]


FOREIGN = (
    "it holds something iolab did not write (not one of its reports, timelines, charts or "
    "exports); iolab leaves it as it is: name a new file, or remove it first"
)
SQLITE = (
    "it is an SQLite database (or one's side file); iolab leaves it as it is: name another file"
)


def _other_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (t TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()


FILES = [
    ("notes.txt", lambda p: p.write_text("my notes\n"), FOREIGN),
    ("page.html", lambda p: p.write_text("<!DOCTYPE html><html><head></head></html>\n"), FOREIGN),
    ("data.csv", lambda p: p.write_text("a,b\n1,2\n"), FOREIGN),
    ("data.json", lambda p: p.write_text('{"run": 1}\n'), FOREIGN),
    ("other.db", _other_sqlite, SQLITE),
]


@pytest.mark.parametrize(("name", "make", "allowed"), FILES, ids=[f[0] for f in FILES])
@pytest.mark.parametrize(("argv", "option"), COMMANDS, ids=[" ".join(a[2:]) for a, _ in COMMANDS])
def test_a_file_iolab_did_not_write_is_left_as_it_is(
    db: Path, tmp_path: Path, argv: list[str], option: str, name: str, make: object, allowed: str
) -> None:
    out = tmp_path / name
    assert callable(make)
    make(out)
    before = digest(out)
    done = iolab(*[a.format(out=out) for a in argv], "--results", str(db))
    line = f"error: {option}: {str(out)!r} is not allowed; {allowed}"
    assert (done.code, done.error_lines, done.stdout) == (2, [line], "")
    assert digest(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [name, "e.db", "e.db-wal", "e.db-shm"]
    )


def test_the_side_file_of_another_database_is_refused(db: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    _other_sqlite(other)
    wal = tmp_path / "other.db-wal"
    wal.write_bytes(b"")  # empty, as SQLite leaves it: still not an output
    done = iolab("export", NAME, "-o", str(wal), "--results", str(db))
    assert done.error_lines == [f"error: --output: {str(wal)!r} is not allowed; {SQLITE}"]
    assert wal.read_bytes() == b""


def test_iolab_replaces_its_own_outputs_whole(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs.out"
    out.touch()  # an empty file is taken (mktemp's)
    out.chmod(0o640)
    shapes = []
    formats = ["csv", "json", "parquet", "csv"]
    if importlib.util.find_spec("duckdb") is None:  # the engines extra writes parquet
        formats.remove("parquet")
    for fmt in formats:
        done = iolab("export", NAME, "--format", fmt, "-o", str(out), "--results", str(db))
        assert (done.code, done.stdout.strip()) == (0, f"wrote 1 runs to {out}"), done
        assert written_by_iolab(out)
        shapes.append(out.read_bytes()[:4])
    heads = {"csv": b"run,", "json": b"[\n  ", "parquet": b"PAR1"}
    assert shapes == [heads[f] for f in formats]
    header, row = out.read_text().splitlines()
    assert (header, row.split(",")[0], row.split(",")[2:]) == (
        "run,cell,status,elapsed_seconds,rows,rows_per_second",
        "1",
        ["done", "1.5", "200", "133.0"],
    )
    assert (out.stat().st_mode & 0o777) == 0o640  # an existing file keeps its mode
    page = tmp_path / "report.html"
    for _ in range(2):  # the report over the export, then over itself
        done = iolab("report", NAME, "--html", str(page), "--results", str(db))
        assert done.code == 0 and f"wrote {page}" in done.stdout, done
    assert written_by_iolab(page) and (page.stat().st_mode & 0o777) == 0o600
    done = iolab("report", NAME, "--html", str(out), "--results", str(db))  # an export's path
    assert done.code == 0 and out.read_text().startswith("<!DOCTYPE html>")
    left = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("e.db"))
    assert left == ["report.html", "runs.out"]  # no scratch file
    assert runs_listed(db) == [1]


def _png() -> bytes:
    """A 1x1 PNG as a browser writes it: header, image data, end."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\xff\xff"))
        + chunk(b"IEND", b"")
    )


def test_each_kind_iolab_writes_is_recognised(tmp_path: Path) -> None:
    svg = charts._Svg().document(10, 10, "t")
    hlog = "#[iolab run 3 of x, cell 1: transaction latency, values in microseconds]\n"
    signed = sign_png(_png())
    assert signed[33:55] == b"\x00\x00\x00\x0etEXtSoftware\x00iolab"  # after IHDR
    assert zlib.crc32(signed[37:55]) == struct.unpack(">I", signed[55:59])[0]
    cases = {
        "a.svg": (svg, True),
        "b.png": (signed, True),
        "c.png": (_png(), False),  # a PNG iolab did not mark
        "d.hlog": (hlog, True),
        "e.json": ("[]", False),  # a user's empty list (issue 43); an export of no run too
        "g.csv": ("run,cell,status\r\n", False),
        "h.csv": ("run,cell,status,notes\nmine,2,to do,x\n", False),  # a user's own CSV
        "i.csv": ("run,cell,status,rows\r\n1,f69ba2a28830,done,200\r\n", True),
        "j.csv": ("run,cell,status,rows\n1,f69ba2a28830,done,200\n", False),  # not csv's line ends
        "k.csv": (
            "run,cell,status,rows\r\n1,f69ba2a28830,done,2\r\n2,f69ba2a28830,to do,3\r\n",
            False,
        ),
        "l.json": (
            json.dumps([{"run": 1, "cell": "f69ba2a28830", "status": "done", "rows": 2}], indent=2),
            True,
        ),
        "m.json": ('[\n  {\n    "run": "mine"\n  }\n]', False),
        "n.json": (
            json.dumps([{"run": 1, "cell": "f69ba2a28830", "status": "done"}]),
            False,
        ),  # not indented
        "f.svg": ('<svg xmlns="http://www.w3.org/2000/svg"></svg>', False),
    }
    for name, (content, ours) in cases.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        assert written_by_iolab(path) is ours, name
        assert not sqlite_file(path)


def test_a_users_file_shaped_like_an_export_is_not_replaced(db: Path, tmp_path: Path) -> None:
    # issue 43: a user's `[]` and a CSV of theirs that began `run,cell,status,` were replaced
    for name, content in (
        ("mine.json", "[]\n"),
        ("mine.csv", "run,cell,status,owner\nA7,kitchen,ordered,me\n"),
    ):
        path = tmp_path / name
        path.write_text(content)
        fmt = name.rsplit(".", 1)[1]
        done = iolab("export", NAME, "--format", fmt, "-o", str(path), "--results", str(db))
        line = f"error: --output: {str(path)!r} is not allowed; {FOREIGN}"
        assert (done.code, done.error_lines, done.stdout) == (2, [line], "")
        assert path.read_text() == content
        path.unlink()  # a new file: written, and then replaced as iolab's own
        for _ in range(2):
            done = iolab("export", NAME, "--format", fmt, "-o", str(path), "--results", str(db))
            assert (done.code, done.stdout.strip()) == (0, f"wrote 1 runs to {path}"), done
        assert written_by_iolab(path)


def test_every_chart_name_is_checked_before_one_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--png: a taken name among the charts refuses them all, before Chromium draws one (an
    experiment of three cells, recorded by the fake workload of tests/unit/fakes.py)."""
    if shutil.which("chromium") is None:
        pytest.skip("--png needs chromium to be installed, even to refuse")
    monkeypatch.setitem(WORKLOADS, "populate", FakeWorkload().kind())
    db = tmp_path / "e.db"
    with open_store(db) as store:
        runner.run(config.load(experiment_file(tmp_path)), store, Collect())
        built = report_lib.build(store, "fake", timelines="median")
    files = html_report.chart_files(html_report.report_page(built, "now", []))
    slides = tmp_path / "slides"
    slides.mkdir()
    assert len(files) >= 2, files
    taken = slides / f"{files[-1][0]}.svg"
    taken.write_text("mine\n")
    done = iolab("report", "fake", "--png", str(slides), "--results", str(db))
    line = f"error: --png: {str(taken)!r} is not allowed; {FOREIGN}"
    assert (done.code, done.error_lines) == (2, [line])
    assert [p.name for p in slides.iterdir()] == [taken.name] and taken.read_text() == "mine\n"
