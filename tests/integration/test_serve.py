"""`iolab serve` in a real browser (Playwright driving Debian's Chromium) against a results
database seeded by real runs: the experiments list, an experiment's report page, a run's
timeline growing while a populate run writes to the same database, a TPC-C run's NOPM and
TPM series live, a compare page with the ratio and interval of `iolab compare`; and, inside a
network namespace of the test's own, a server bound beyond loopback that refuses every request
without its token."""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab.report.interactive import MAX_POINTS
from tests.conftest import in_network_namespace, make_dirs
from tests.integration.test_populate_cli import IOLAB

pytestmark = pytest.mark.integration

CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)

EXPERIMENT = """
[experiment]
name = "serve-seed"
repetitions = 3
[workload]
kind = "populate"
rows = 300
[layouts.one]
data_dirs = ["a"]
[isolation]
settle_seconds = 0
[matrix]
engine = ["sqlite"]
connections = [1, 2]
"""


def run_iolab(db: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*IOLAB, *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        check=False,
        env={**os.environ, "IOLAB_RESULTS": str(db)},
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def seeded() -> Iterator[tuple[Path, Path]]:
    """(directory, results database): an experiment of 2 cells x 3 runs and one populate
    command, all on SQLite."""
    base = Path(tempfile.mkdtemp(prefix="iolab-test-serve-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        make_dirs(base, "a", "b")
        (base / "exp.toml").write_text(EXPERIMENT)
        db = base / "results.db"
        run_iolab(db, "run", str(base / "exp.toml"))
        run_iolab(
            db, "populate", "--engine", "sqlite", "--data-dir", str(base / "b"), "--rows", "300"
        )
        yield base, db
    finally:
        shutil.rmtree(base, ignore_errors=True)


def start_serve(db: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """`iolab serve` on a free port; (process, its address) once it listens."""
    proc = subprocess.Popen(
        [*IOLAB, "serve", "--results", str(db), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"http://\S+/", line)
    if found is None:
        proc.kill()
        raise AssertionError(
            f"serve did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc, found.group(0)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def server(seeded: tuple[Path, Path]) -> Iterator[str]:
    proc, url = start_serve(seeded[1])
    try:
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM is not None
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


def open_tab(browser: Any, url: str) -> tuple[Any, list[str], list[str]]:
    """A tab that records every URL it asks for and every script error."""
    tab = browser.new_page(viewport={"width": 1200, "height": 900})
    asked: list[str] = []
    errors: list[str] = []
    tab.on("request", lambda r: asked.append(r.url))
    tab.on("pageerror", lambda e: errors.append(str(e)))
    return tab, asked, errors


@needs_chromium
def test_the_list_shows_the_seeded_experiments_and_filters_them(
    server: str, browser: Any, seeded: tuple[Path, Path]
) -> None:
    tab, asked, errors = open_tab(browser, server)
    tab.goto(server)
    rows = tab.locator("#experiments tr").all_inner_texts()[1:]
    assert len(rows) == 2
    cells = [r.split("\t") for r in rows]
    by_name = {c[1]: c for c in cells}
    seed = by_name["serve-seed"]
    assert seed[2] == "experiment"
    assert seed[3] == "populate"
    assert seed[4] == "sqlite"
    assert seed[6:10] == ["2", "6", "0", "0"]  # cells, done, failed, running
    (command,) = [c for name, c in by_name.items() if name != "serve-seed"]
    assert command[2] == "command"
    assert command[6:8] == ["1", "1"]
    tab.goto(server + "?workload=disk")
    assert tab.locator("#experiments tr").count() == 1  # the header only
    tab.goto(server + "?engine=sqlite&workload=populate")
    assert tab.locator("#experiments tr").count() == 3
    with sqlite3.connect(f"file:{seeded[1]}?mode=ro", uri=True) as conn:
        (env,) = conn.execute("SELECT data FROM environments LIMIT 1").fetchone()
    snapshot = json.loads(env)
    (storage,) = list(snapshot["storage"].values())[:1]
    for query, count in (
        (f"?host={snapshot['hostname']}", 3),
        ("?host=no-such-host", 1),
        (f"?device={storage['filesystem']}", 3),
        ("?device=no-such-device", 1),
        ("?since=2000-01-01&until=2000-12-31", 1),
        ("?since=2000-01-01", 3),
    ):
        tab.goto(server + query)
        assert tab.locator("#experiments tr").count() == count, query
    tab.goto(server + "?since=yesterday")
    assert "since: 'yesterday' is not allowed; give a day as YYYY-MM-DD" in tab.content()
    assert errors == []
    assert all(u.startswith(server) for u in asked), asked  # nothing from the network
    tab.close()


@needs_chromium
def test_an_experiment_page_is_the_report_with_its_runs(
    server: str, browser: Any, seeded: tuple[Path, Path]
) -> None:
    report = json.loads(run_iolab(seeded[1], "report", "serve-seed", "--json").stdout)
    tab, asked, errors = open_tab(browser, server)
    tab.goto(server)
    tab.locator("#experiments").get_by_role("link", name="serve-seed").click()
    tab.wait_for_load_state("load")
    assert tab.locator("h1").inner_text() == "iolab report: serve-seed"
    text = tab.locator("body").inner_text()
    for cell in report["cells"]:
        assert cell["label"] in text
    runs = tab.locator("#run-list a")
    assert runs.count() == 6
    # each cell's median run: its box only, the figure fetched as it nears the screen
    boxes = tab.locator(".iplot[data-src]")
    assert boxes.count() == len(report["cells"])
    assert tab.locator("script[type='application/json']").count() == 0
    box = boxes.first
    box.scroll_into_view_if_needed()
    tab.wait_for_selector(".iplot .main-svg")  # drawn by Plotly served here
    src = box.get_attribute("data-src")
    assert src is not None
    served = json.loads(tab.evaluate("u => fetch(u).then(r => r.text())", src))
    # the run `iolab report --html` draws in its file (there as SVG: no Plotly in a file), each
    # series thinned to the same MAX_POINTS
    run_id = int(re.search(r"/runs/(\d+)/figure\.json", src)[1])  # type: ignore[index]
    page = seeded[0] / "report-for-serve.html"
    assert run_iolab(seeded[1], "report", "serve-seed", "--html", str(page)).returncode == 0
    drawn = re.search(
        rf"<h3>([^<]*) · run {run_id}</h3>(?:<p class='caption'>[^<]*</p>)?"
        rf"<svg [^>]*><title>\1 · run {run_id}</title>",
        page.read_text(),
    )
    assert drawn is not None
    assert served["layout"]["title"]["text"] == f"<b>{drawn[1]} · run {run_id}</b>"
    assert all(len(t["y"]) <= MAX_POINTS for t in served["data"])
    runs.first.click()
    tab.wait_for_load_state("load")
    assert tab.locator("#state").inner_text() == "done"
    assert int(tab.locator("#points").inner_text()) >= 1
    tab.wait_for_selector(".iplot .main-svg")
    assert "connections" in tab.locator("body").inner_text()  # its parameters
    assert errors == []
    assert all(u.startswith(server) for u in asked), asked
    tab.close()


@needs_chromium
def test_a_compare_page_gives_the_ratio_and_interval_of_iolab_compare(
    server: str, browser: Any, seeded: tuple[Path, Path]
) -> None:
    tab, asked, errors = open_tab(browser, server)
    tab.goto(server)
    # two cells picked on its page
    tab.locator("#experiments").get_by_role("link", name="serve-seed").click()
    tab.wait_for_load_state("load")
    specs = tab.locator("#compare-cells select[name=a] option").evaluate_all(
        "options => options.map(o => o.value)"
    )
    assert len(specs) == 2 and all(v.startswith("serve-seed:") for v in specs), specs
    a, b = sorted(specs, key=lambda v: "connections=2" in v)  # 1 connection against 2
    cli = json.loads(run_iolab(seeded[1], "compare", a, b, "--json").stdout)
    tab.select_option("#compare-cells select[name=a]", a)
    tab.select_option("#compare-cells select[name=b]", b)
    tab.locator("#compare-cells button").click()
    tab.wait_for_load_state("load")
    tab.wait_for_selector("#ratio")
    # the ratio in words, one direction ("1.43x slower"); its numbers those of --json
    ratio = tab.locator("#ratio")
    assert ratio.inner_text() == f"{cli['times']:.2f}x {cli['direction']}"
    speedup = float(ratio.get_attribute("data-speedup") or "nan")
    assert speedup == pytest.approx(cli["speedup"], rel=2e-3)
    ci = tab.locator("#ci")
    low, high = (float(ci.get_attribute(f"data-{end}") or "nan") for end in ("low", "high"))
    assert low == pytest.approx(cli["ci_low"], rel=2e-3)
    assert high == pytest.approx(cli["ci_high"], rel=2e-3)
    assert low <= speedup <= high
    assert re.search(
        r"^\d+\.\d\d(x (slower|faster) to |-)\d+\.\d\dx (slower|faster)$", ci.inner_text()
    )
    assert tab.locator("#sentence").inner_text() == cli["sentence"]
    assert tab.locator("svg[role=img]").count() == 2  # the means and the ratio, as charts
    tab.goto(server + "compare")  # two runs typed in the form
    tab.fill("input[name=a]", "1,2,3")
    tab.fill("input[name=b]", "4-6")
    tab.get_by_role("button", name="compare").click()
    tab.wait_for_load_state("load")
    by_runs = json.loads(run_iolab(seeded[1], "compare", "1,2,3", "4-6", "--json").stdout)
    assert tab.locator("#sentence").inner_text() == by_runs["sentence"]
    tab.goto(server + "compare?a=1&b=9999")
    assert "give run ids from 1 to" in tab.locator("#error").inner_text()
    missing = tab.goto(server + "runs/9999")
    assert missing is not None and missing.status == 404
    assert "runs are numbered 1 to" in tab.locator("body").inner_text()
    assert errors == []
    assert all(u.startswith(server) for u in asked), asked
    tab.close()


@needs_chromium
def test_a_running_runs_timeline_grows_while_it_runs(
    server: str, browser: Any, seeded: tuple[Path, Path]
) -> None:
    base, db = seeded
    (top,) = sqlite3.connect(db).execute("SELECT MAX(id) FROM runs").fetchone()
    (base / "live").mkdir(mode=0o755)
    populate = subprocess.Popen(
        [
            *IOLAB,
            "populate",
            "--engine",
            "sqlite",
            "--data-dir",
            str(base / "live"),
            "--duration",
            "8s",
            "--connections",
            "1",
            "--sample-interval",  # 10 Hz from the start: no fine start to merge later,
            "100ms",  # so the number of points only grows
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "IOLAB_RESULTS": str(db)},
    )
    tab, asked, errors = open_tab(browser, server)
    try:
        deadline = time.monotonic() + 120
        while True:  # the run's row, committed as running before the work starts
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            row = conn.execute("SELECT id FROM runs WHERE id > ?", (top,)).fetchone()
            conn.close()
            if row is not None:
                break
            assert populate.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        tab.goto(f"{server}runs/{row[0]}")
        assert tab.locator("#state").inner_text() == "running"
        seen: list[tuple[int, int]] = []  # (points shown, points in the drawn figure)
        while tab.locator("#state").inner_text() == "running":
            assert time.monotonic() < deadline, "the run never ended"
            shown = int(tab.locator("#points").inner_text())
            drawn = tab.evaluate(
                "() => { const g = document.getElementById('live');"
                " return g.data ? Math.max(...g.data.map(t => t.y.length)) : 0; }"
            )
            seen.append((shown, drawn))
            tab.wait_for_timeout(300)
        assert populate.wait(timeout=120) == 0, populate.stderr.read() if populate.stderr else ""
    finally:
        if populate.poll() is None:
            populate.kill()
            populate.wait()
    shown_values = [s for s, _ in seen]
    assert shown_values == sorted(shown_values)  # it only grows
    growing = sorted({s for s in shown_values if s > 0})
    assert len(growing) >= 3, seen  # at least three different counts while running
    sizes = sorted({d for _, d in seen if d > 0})  # drawn just after the count is written
    assert len(sizes) >= 2 and sizes[-1] >= growing[-2], seen  # the drawn figure grew too
    assert "done" in tab.locator("#state").inner_text()
    final = json.loads(
        tab.evaluate(f"() => fetch('/runs/{row[0]}/timeline.json').then(r => r.text())")
    )
    assert final["status"] == "done"
    assert final["points"] >= growing[-1]  # the final record holds at least what was shown
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (chunks,) = conn.execute(
            "SELECT COUNT(*) FROM series_chunks WHERE run_id = ?", (row[0],)
        ).fetchone()
    assert chunks == 0  # replaced by the whole series
    assert errors == []
    assert all(u.startswith(server) for u in asked), asked
    tab.close()


NAMESPACE_SCRIPT = textwrap.dedent(
    """
    import json, re, subprocess, sys, urllib.error, urllib.request
    ADDR = "10.213.7.1"
    def run(*cmd):
        subprocess.run(cmd, check=True, capture_output=True)
    run("ip", "link", "set", "lo", "up")
    try:
        run("ip", "link", "add", "iolab0", "type", "dummy")
        dev = "iolab0"
    except subprocess.CalledProcessError:
        run("ip", "link", "add", "iolab0", "type", "veth", "peer", "name", "iolab1")
        run("ip", "link", "set", "iolab1", "up")
        dev = "iolab0"
    run("ip", "addr", "add", ADDR + "/24", "dev", dev)
    run("ip", "link", "set", dev, "up")
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolab", "serve", "--results", sys.argv[1], "--host", ADDR,
         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**__import__("os").environ, "PYTHONUNBUFFERED": "1"})
    first, second = proc.stdout.readline(), proc.stdout.readline()
    url = re.search(r"http://\\S+/", first).group(0)
    link = re.search(r"http://\\S+\\?token=\\S+", second).group(0)
    token = link.split("token=")[1]
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    def get(u, headers={}):
        try:
            with opener.open(urllib.request.Request(u, headers=headers), timeout=30) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()
    out = {"url": url, "first": first, "second": second}
    out["bare"] = get(url)[0], get(url)[2]
    out["bare_run"] = get(url + "runs/1")[0]
    out["wrong"] = get(url + "?token=" + "x" * len(token))[0]
    status, headers, _ = get(link)
    out["with_token"] = status, headers.get("location"), headers.get("set-cookie", "")
    cookie = headers.get("set-cookie", "").split(";")[0]
    status, _, body = get(url, {"Cookie": cookie})
    out["cookie"] = status, "serve-seed" in body
    out["header"] = get(url + "compare", {"X-Iolab-Token": token})[0]
    proc.terminate()
    proc.wait(timeout=30)
    print(json.dumps(out))
    """
)


def test_beyond_loopback_every_request_needs_the_token(seeded: tuple[Path, Path]) -> None:
    out = in_network_namespace(NAMESPACE_SCRIPT, str(seeded[1]))
    assert out["url"].startswith("http://10.213.7.1:")
    assert "access token" in out["second"]
    status, body = out["bare"]
    assert status == 403
    assert "needs its access token" in body
    assert out["bare_run"] == 403
    assert out["wrong"] == 403
    status, location, cookie = out["with_token"]
    assert status == 303
    assert location == "/"  # the token leaves the address bar
    assert cookie.startswith("iolab_token=") and "HttpOnly" in cookie
    assert out["cookie"] == [200, True]
    assert out["header"] == 200


def test_bad_input_and_a_missing_framework_are_one_line(seeded: tuple[Path, Path]) -> None:
    db = str(seeded[1])
    for args, line in (
        (["--port", "70000"], "--port: 70000 is not allowed; give a TCP port from 1 to 65535"),
        (["--host", "example.org"], "--host: 'example.org' is not allowed; give an IP address"),
    ):
        done = subprocess.run(
            [*IOLAB, "serve", "--results", db, *args], capture_output=True, text=True, check=False
        )
        assert done.returncode == 2
        assert line in done.stderr
        assert "Traceback" not in done.stderr
    missing = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['uvicorn'] = None; from iolab.cli.main import run; "
            f"sys.argv = ['iolab', 'serve', '--results', {db!r}]; run()",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2
    assert "pip install 'iolab[serve]'" in missing.stderr
    assert "Traceback" not in missing.stderr
    not_ours = seeded[0] / "exp.toml"
    done = subprocess.run(
        [*IOLAB, "serve", "--results", str(not_ours)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "not an iolab results database" in done.stderr


@needs_chromium
def test_a_running_postgres_runs_waits_and_checkpoints_show_as_they_happen(
    server: str, browser: Any, seeded: tuple[Path, Path]
) -> None:
    base, db = seeded
    (top,) = sqlite3.connect(db).execute("SELECT MAX(id) FROM runs").fetchone()
    (data,) = make_dirs(base, "pg")
    populate = subprocess.Popen(
        [
            *IOLAB,
            *["populate", "--engine", "postgres", "--data-dir", str(data)],
            *["--duration", "8s", "--connections", "2", "--checkpoint-every", "1s"],
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "IOLAB_RESULTS": str(db)},
    )
    tab, asked, errors = open_tab(browser, server)
    seen: list[tuple[int, int, int]] = []  # (points, wait rows, checkpoint rows) while running
    try:
        deadline = time.monotonic() + 180
        row = None
        while row is None:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                row = conn.execute("SELECT id FROM runs WHERE id > ?", (top,)).fetchone()
            assert populate.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        tab.goto(f"{server}runs/{row[0]}")
        while tab.locator("#state").inner_text() == "running":
            assert time.monotonic() < deadline, "the run never ended"
            seen.append(
                (
                    int(tab.locator("#points").inner_text()),
                    tab.locator("#live-sections h3:text('Wait statistics') + table tr").count(),
                    tab.locator("#live-sections h3:text('Checkpoints') + table tr").count(),
                )
            )
            tab.wait_for_timeout(300)
        assert populate.wait(timeout=120) == 0, populate.stderr.read() if populate.stderr else ""
    finally:
        if populate.poll() is None:
            populate.kill()
            populate.wait()
    live = [s for s in seen if s[0] > 0]
    assert live, seen
    assert max(w for _, w, _ in live) > 1, seen  # a header and at least one wait event
    assert max(c for _, _, c in live) > 1, seen  # at least one checkpoint while it ran
    assert errors == []
    assert all(u.startswith(server) for u in asked), asked
    tab.close()


def test_an_experiments_running_run_flushes_its_series_live(tmp_path: Path) -> None:
    """Runs of `iolab run` (the local placement) write chunks as they record, as single
    commands do; the final record replaces them."""
    base = tmp_path / "exp"
    base.mkdir()
    base.chmod(0o755)
    make_dirs(base, "a")
    (base / "live.toml").write_text(
        textwrap.dedent(
            """
            [experiment]
            name = "live"
            [workload]
            kind = "populate"
            engine = "sqlite"
            duration = "6s"
            [layouts.one]
            data_dirs = ["a"]
            [isolation]
            settle_seconds = 0
            drop_caches = false
            [matrix]
            connections = [1]
            """
        )
    )
    db = tmp_path / "results.db"
    running = subprocess.Popen(
        [*IOLAB, "run", str(base / "live.toml")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "IOLAB_RESULTS": str(db)},
    )
    chunks = 0
    try:
        deadline = time.monotonic() + 120
        while running.poll() is None and time.monotonic() < deadline:
            if db.exists():
                with contextlib.suppress(sqlite3.OperationalError):  # before its tables
                    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                    try:
                        (chunks,) = conn.execute(
                            "SELECT count(*) FROM series_chunks JOIN runs ON runs.id = run_id "
                            "WHERE runs.status = 'running'"
                        ).fetchone()
                    finally:
                        conn.close()
                if chunks:
                    break
            time.sleep(0.2)
        assert running.wait(timeout=120) == 0, running.stderr.read() if running.stderr else ""
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()
    assert chunks > 0  # seen while the run was running
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT count(*) FROM series_chunks").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM series").fetchone()[0] > 0


TPCC_TYPES = ("new_order", "payment", "order_status", "delivery", "stock_level")


def _traces(figure: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """A timeline figure's traces by name, each with ``last``: the time of its last sample."""
    out = {}
    for t in figure["data"] if figure else []:
        out[t["name"]] = {**t, "last": t["xlast"] if "xlast" in t else t["x"][-1]}
    return out


def test_a_running_tpcc_runs_nopm_and_tpm_show_live_and_its_page_names_nopm(
    cache: Path, open_tmp: Path
) -> None:
    """`iolab tpcc` on SQLite with `iolab serve` on its results database: while the run is
    running, its timeline.json carries the NOPM and TPM series, growing; once done, the final
    timeline adds each transaction type's p99 (recorded whole at the end), and the run page
    draws NOPM and lists the run's nopm."""
    (data,) = make_dirs(open_tmp, "d")
    db = open_tmp / "results.db"
    err = (open_tmp / "tpcc.err").open("w")
    tpcc = subprocess.Popen(
        [
            *IOLAB,
            *["tpcc", "--engine", "sqlite", "--data-dir", str(data), "--warehouses", "1"],
            *["--connections", "2", "--warmup", "2s", "--duration", "8s", "--json"],
        ],
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        env={**os.environ, "IOLAB_RESULTS": str(db)},
    )
    serve = None
    live: list[dict[str, tuple[float, list[float]]]] = []  # NOPM, TPM: (last time, values)
    try:
        deadline = time.monotonic() + 300  # the data generated first when not cached
        row = None
        while row is None:  # the run's row, committed as running before the load
            with contextlib.suppress(sqlite3.OperationalError):  # before its tables
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                try:
                    row = conn.execute("SELECT id FROM runs").fetchone()
                finally:
                    conn.close()
            assert tpcc.poll() is None, (open_tmp / "tpcc.err").read_text()[-3000:]
            assert time.monotonic() < deadline, "the run was never recorded"
            time.sleep(0.05)
        run = row[0]
        serve, url = start_serve(db)
        while True:
            status, _, body = fetch(f"{url}runs/{run}/timeline.json")
            assert status == 200, body
            doc = json.loads(body)
            if doc["status"] != "running":
                break
            traces = _traces(doc["figure"])
            if "NOPM" in traces:
                live.append({n: (traces[n]["last"], traces[n]["y"]) for n in ("NOPM", "TPM")})
            assert time.monotonic() < deadline, "the run never ended"
            time.sleep(0.3)
        out, _ = tpcc.communicate(timeout=120)
        assert tpcc.returncode == 0, (open_tmp / "tpcc.err").read_text()[-3000:]
        final = json.loads(fetch(f"{url}runs/{run}/timeline.json")[2])
        status, _, page = fetch(f"{url}runs/{run}")
    finally:
        err.close()
        if tpcc.poll() is None:
            tpcc.kill()
            tpcc.wait()
        if serve is not None:
            stop(serve)
    summary = json.loads(out)
    assert summary["status"] == "done" and summary["run"] == run
    nopm = summary["nopm"]
    assert nopm > 0 and nopm == summary["nopm_client"] == summary["nopm_orders"]
    # while running: NOPM and TPM, their last sample later and later, New-Orders counted
    ends = [s["NOPM"][0] for s in live]
    assert ends == sorted(ends), ends
    assert len(set(ends)) >= 3, ends  # grew at least twice while the run ran
    assert max(max(s["NOPM"][1]) for s in live) > 0
    assert sum(live[-1]["TPM"][1]) > sum(live[-1]["NOPM"][1]) > 0  # every type, New-Orders only
    # done: the whole record, the types' p99 beside NOPM and TPM
    assert final["status"] == "done"
    traces = _traces(final["figure"])
    assert {"NOPM", "TPM", *(f"{t} p99" for t in TPCC_TYPES)} <= set(traces), sorted(traces)
    assert traces["NOPM"]["last"] >= ends[-1] - 1  # at least what was shown (merged to 1 s)
    per_second = sorted(traces["NOPM"]["y"])
    assert 0.5 * nopm < per_second[len(per_second) // 2] < 2 * nopm  # per minute, as the run's
    p99 = [v for v in traces["new_order p99"]["y"] if v is not None]  # None: none that second
    assert p99 and all(v > 0 for v in p99)
    # the run page: done, its timeline drawing NOPM, its counters the run's nopm
    assert status == 200
    assert "id='state'>done</b>" in page
    figure = re.search(r"<script type='application/json' id='timeline-1'>(.*?)</script>", page)
    assert figure is not None
    assert "NOPM" in _traces(json.loads(figure[1]))
    shown = re.search(r"<td>nopm</td><td><span class='v'>([^<]+)</span>", page)
    assert shown is not None and float(shown[1]) == pytest.approx(nopm)


def fetch(url: str, method: str = "GET") -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of one request, whatever the status."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read().decode()


HUGE = "9" * 5000  # beyond SQLite's integers, and beyond what int() reads from text
# (path and query, status, what the page says): every id that names no run or experiment is a
# 404, every bad parameter a 400 naming it, and no route raises
HOSTILE = [
    ("runs/99999999999999999999", 404, "RUN: 99999999999999999999 is not allowed"),
    (f"runs/{HUGE}", 404, "no such page"),
    ("runs/9223372036854775807", 404, "RUN: 9223372036854775807 is not allowed"),
    ("runs/9223372036854775808", 404, "RUN: 9223372036854775808 is not allowed"),
    ("runs/0", 404, "RUN: 0 is not allowed; runs are numbered 1 to "),
    ("runs/-1", 404, "no such page"),
    ("runs/abc", 404, "no such page"),
    ("runs/1.5", 404, "no such page"),
    ("runs/99999999999999999999/timeline.json", 404, "RUN: 99999999999999999999"),
    (f"runs/{HUGE}/timeline.json", 404, "no such page"),
    ("runs/99999999999999999999/figure.json", 404, "RUN: 99999999999999999999"),
    ("runs/-3/figure.json", 404, "no such page"),
    ("experiments/99999999999999999999", 404, "EXPERIMENT: 99999999999999999999"),
    (f"experiments/{HUGE}", 404, "no such page"),
    ("experiments/0", 404, "EXPERIMENT: 0 is not allowed; experiments are numbered 1 to "),
    ("experiments/x", 404, "no such page"),
    ("static/../../etc/passwd", 404, "no such page"),
    ("static/iolab.db", 404, "no such page"),
    ("compare?a=99999999999999999999&b=1", 400, "give run ids from 1 to "),
    (f"compare?a={HUGE}&b=1", 400, "give run ids from 1 to "),
    ("compare?a=1-99999999999999999999&b=2", 400, "give run ids from 1 to "),
    ("compare?a=0&b=1", 400, "give run ids from 1 to "),
    ("compare?a=1&b=2&metric=banana", 400, "--metric: 'banana' is not allowed"),
    ("compare?a=nosuch:engine=x&b=1", 400, "EXPERIMENT: 'nosuch:engine=x' is not allowed"),
    ("?since=yesterday", 400, "since: 'yesterday' is not allowed; give a day as YYYY-MM-DD"),
    ("?until=2026-02-30", 400, "until: '2026-02-30' is not allowed; give a day as YYYY-MM-DD"),
    (f"?since={HUGE[:60]}", 400, "since: '999999"),
    ("?since=%EF%BC%92%EF%BC%90%EF%BC%92%EF%BC%96-01-01", 400, "give a day as YYYY-MM-DD"),
]


def test_no_route_raises_on_hostile_ids_and_parameters(seeded: tuple[Path, Path]) -> None:
    """Out-of-range, negative, non-numeric and huge ids and parameters on every route: 404 or
    400 with the reason, the server's headers on each, nothing in the server's log, the
    database unchanged."""
    db = seeded[1]
    before = db.read_bytes()
    proc, url = start_serve(db)
    try:
        for path, status, said in HOSTILE:
            got, headers, body = fetch(url + path)
            assert got == status, (path, got, body[:300])
            assert said in html.unescape(body), (path, body[:600])
            assert headers.get("content-security-policy") == STRICT, path
        got, headers, body = fetch(url + "runs/1", method="POST")
        assert got == 405 and "only answers GET" in body
        assert headers.get("content-security-policy") == STRICT
    finally:
        stop(proc)
    assert proc.stderr is not None
    log = proc.stderr.read()
    assert "Traceback" not in log and " 500 " not in log, log[-3000:]
    assert db.read_bytes() == before


STRICT = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; font-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'"
)
ROUTES = [
    "",
    "?engine=sqlite",
    "experiments/1",
    "runs/1",
    "runs/1/timeline.json",
    "runs/1/figure.json",
    "compare",
    "compare?a=1,2,3&b=4-6",
    "static/plotly.min.js",
    "static/timelines.js",
    "static/save.js",
    "static/live.js",
]


def test_every_route_sends_a_policy_without_inline_script_or_eval(server: str) -> None:
    for path in ROUTES:
        status, headers, _ = fetch(server + path)
        assert status == 200, path
        policy = headers.get("content-security-policy")
        assert policy == STRICT, path
        script_src = next(p for p in policy.split(";") if p.strip().startswith("script-src"))
        assert "unsafe" not in script_src
        assert headers.get("x-content-type-options") == "nosniff"


# In the page: every visible element outside header, main, footer and nav (landmarks), and
# every table header cell without text.
LANDMARKS = """() => {
  const visible = e => {  // drawn on the page (Plotly's measuring svg sits far off it)
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.right + scrollX > 0 && r.bottom + scrollY > 0
      && getComputedStyle(e).visibility !== 'hidden';
  };
  const outside = [];
  for (const e of document.body.children) {
    if (['SCRIPT', 'HEADER', 'MAIN', 'FOOTER', 'NAV'].includes(e.tagName)) continue;
    if (visible(e)) outside.push(e.tagName + (e.id ? '#' + e.id : ''));
  }
  const empty = [...document.querySelectorAll('th')].filter(t => !t.textContent.trim()).length;
  return {outside, empty, mains: document.querySelectorAll('main').length};
}"""


@needs_chromium
def test_pages_draw_under_the_strict_policy_and_keep_every_block_in_a_landmark(
    server: str, browser: Any, seeded: tuple[Path, Path]
) -> None:
    """The timelines draw (Plotly and the page's scripts served as files), no policy violation
    is reported; on every page of serve and in `iolab report --html`'s file each visible block
    is inside a landmark and no table header is empty."""
    report = seeded[0] / "landmarks.html"
    run_iolab(seeded[1], "report", "serve-seed", "--html", str(report))
    for path in ("", "experiments/1", "runs/1", "compare?a=1,2,3&b=4-6", "compare", "nope"):
        tab, asked, errors = open_tab(browser, server + path)
        said: list[str] = []
        tab.on("console", lambda m, said=said: said.append(m.text))
        tab.add_init_script(
            "document.addEventListener('securitypolicyviolation', e => "
            "console.log('violation ' + e.violatedDirective + ' ' + e.blockedURI))"
        )
        tab.goto(server + path)
        tab.wait_for_load_state("load")
        if path in ("experiments/1", "runs/1"):
            tab.locator(".iplot").first.scroll_into_view_if_needed()
            tab.wait_for_selector(".iplot .main-svg")  # drawn
            assert tab.evaluate("typeof Plotly") == "object"
        found = tab.evaluate(LANDMARKS)
        assert found == {"outside": [], "empty": 0, "mains": 1}, (path, found)
        assert [m for m in said if "violation" in m or "Content Security" in m] == [], path
        assert errors == [], path
        assert all(u.startswith(server) for u in asked), asked
        tab.close()
    tab = browser.new_page()
    tab.goto(report.as_uri())
    tab.wait_for_load_state("load")
    assert tab.evaluate(LANDMARKS) == {"outside": [], "empty": 0, "mains": 1}
    tab.close()
