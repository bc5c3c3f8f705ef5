"""Issue 14, item 2: no DSN password, in any of its forms, in anything iolab prints or writes.

Commands run with passwords in every form (userinfo, userinfo with '@', a bad percent escape,
?password=, ?passwd=, &pwd=, sslpassword, libpq's key=value, the MySQL URL forms): against a
closed port, and for real against a PostgreSQL server this test starts. Then every byte of the
results database, of the reports, exports, timelines and JSON, and of stdout and stderr is
searched for each password, and the files iolab created are its owner's alone (0600).
"""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.engines.interface import Layout, running
from iolab.engines.postgres import PORT, PostgresEngine
from tests.conftest import make_dirs
from tests.integration.test_populate_cli import iolab

pytestmark = pytest.mark.integration
CLOSED = "127.0.0.1:1"  # nothing listens there

# (DSN, the pieces of it that must appear nowhere, expected exit code)
FAILING = [
    (f"postgresql://u:UsrInfoPwA1@{CLOSED}/x", ["UsrInfoPwA1"], 1),
    (f"postgresql://u@{CLOSED}/x?password=QueryPwB2", ["QueryPwB2"], 1),
    (f"postgresql://u@{CLOSED}/x?sslmode=disable&password=AmpPwC3", ["AmpPwC3"], 1),
    (f"postgresql://u:At@SignPwD4@{CLOSED}/x", ["At@SignPwD4", "SignPwD4"], 1),
    (f"postgresql://u:se%ZZcretE5@{CLOSED}/x", ["ZZcretE5", "se%ZZ"], 2),
    (f"postgresql://u:sl/ashF6@{CLOSED}/x", ["ashF6", "sl/ash"], 2),
    (f"postgresql://u@{CLOSED}/x?sslpassword=SslPwG7", ["SslPwG7"], 1),
    ("host=127.0.0.1 port=1 dbname=x password=KeyValPwH8", ["KeyValPwH8"], 2),
    ("host=127.0.0.1 dbname=x password='Quoted KvPwI9'", ["KvPwI9", "Quoted"], 2),
    (f"mysql://u:MyUsrPwJ10@{CLOSED}/x", ["MyUsrPwJ10"], 1),
    (f"mysql://u@{CLOSED}/x?password=MyQueryPwK11", ["MyQueryPwK11"], 1),
    (f"mariadb://u@{CLOSED}/x?passwd=MyPasswdL12&pwd=MyPwdM13", ["MyPasswdL12", "MyPwdM13"], 1),
    (f"mysql://u:My@AtPwN14@{CLOSED}/x", ["My@AtPwN14", "AtPwN14"], 1),
    (f"oracle://scott:TigerPwO15@{CLOSED}/orcl", ["TigerPwO15"], 2),
]
REAL_USERINFO = "RealUserinfoPwP16"
REAL_QUERY = "RealQueryPwQ17"
EVERY_SECRET = [s for _, pieces, _ in FAILING for s in pieces] + [REAL_USERINFO, REAL_QUERY]


@pytest.fixture
def postgres(open_tmp: Path) -> Iterator[PostgresEngine]:
    (data,) = make_dirs(open_tmp, "data")
    engine = PostgresEngine(Layout(data_dirs=(data,)))
    with running(engine):
        yield engine


def nowhere(secrets: list[str], *texts: str | bytes) -> None:
    for text in texts:
        blob = text if isinstance(text, bytes) else text.encode()
        for secret in secrets:
            assert secret.encode() not in blob, f"{secret!r} leaked"


def test_no_password_form_is_printed_or_stored(postgres: PostgresEngine, tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    r = ["--results", str(db)]
    printed: list[str] = []

    for dsn, pieces, code in FAILING:
        done = iolab("populate", "--dsn", dsn, "--rows", "20", "--connections", "2", *r)
        assert done.returncode == code, (dsn, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("error: ")
        nowhere(pieces, done.stdout, done.stderr)
        printed += [done.stdout, done.stderr]

    base = f"@/iolab?host={postgres.socket_dir}&port={PORT}"
    user = postgres.user.name
    real = [
        f"postgresql://{user}:{REAL_USERINFO}{base}",
        f"postgresql://{user}{base}&password={REAL_QUERY}",
    ]
    for dsn in real:
        done = iolab("populate", "--dsn", dsn, "--rows", "400", "--connections", "2", "--json", *r)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["status"] == "done"
        printed += [done.stdout, done.stderr]

    listed = iolab("results", "list", "--json", *r)
    runs = json.loads(listed.stdout)
    assert len(runs) == sum(1 for *_, code in FAILING if code == 1) + len(real)
    done_runs = [run for run in runs if run["status"] == "done"]
    assert len(done_runs) == 2
    # named by the server it ran on, without a password or a ':' (both runs share it)
    assert {run["experiment"] for run in done_runs} == {
        f"populate postgres server={user}@{postgres.socket_dir} port={PORT} db=iolab"
    }
    name = str(done_runs[0]["experiment_id"])  # the shared name is refused: its id is taken
    failed = [run for run in runs if run["status"] == "failed"]
    assert all(run["error"].startswith("cannot connect to ") for run in failed)
    printed += [listed.stdout, iolab("results", "list", *r).stdout]
    for run in runs:
        printed.append(iolab("results", "show", str(run["id"]), "--json", *r).stdout)
        printed.append(iolab("results", "show", str(run["id"]), *r).stdout)

    html, export, timeline = tmp_path / "r.html", tmp_path / "runs.json", tmp_path / "t.html"
    for args in (
        ["report", name, "--html", str(html)],
        ["report", name, "--json"],
        ["export", name, "--format", "json", "-o", str(export)],
        ["export", name],
        ["timeline", str(done_runs[0]["id"]), "-o", str(timeline)],
        ["results", "log", str(done_runs[0]["id"])],
    ):
        done = iolab(*args, *r)
        assert done.returncode in (0, 1), done.stderr  # `results log`: no server log kept
        printed += [done.stdout, done.stderr]
    assert html.exists() and export.exists() and timeline.exists()

    files = [db, *tmp_path.glob("results.db-*"), html, export, timeline]
    nowhere(EVERY_SECRET, *printed, *(f.read_bytes() for f in files if f.exists()))
    # what iolab created is its owner's alone
    for f in (db, html, export, timeline):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    dump = subprocess.run(["sqlite3", str(db), ".dump"], capture_output=True, check=False)
    if dump.returncode == 0:
        nowhere(EVERY_SECRET, dump.stdout)
