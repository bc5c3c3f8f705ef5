"""The fleet tests' scenario, run inside a network namespace of its own (``unshare -n``): only
loopback exists there, so every byte of Ray's traffic stays on this machine.

``python fleet_scenario.py WORKDIR`` brings loopback up, starts a fleet (a head and two hosts,
db1 and db2, all on 127.0.0.1), runs the experiment files the test wrote into WORKDIR with
``iolab run --fleet``, SIGKILLs a driver and resumes, kills host db2's node during a run, stops
the fleet, and writes what each step said to WORKDIR/scenario.json for the tests to check.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

IOLAB = [sys.executable, "-m", "iolab"]
PORT = 6399
HEAD = f"127.0.0.1:{PORT}"


def iolab(
    *args: str,
    results: Path | None = None,
    path: str | None = None,
    env: dict[str, str] | None = None,
    token: Path | None = None,
    cwd: Path | None = None,
) -> dict[str, Any]:
    env = {**os.environ, **(env or {})}
    if path is not None:
        env["PATH"] = path
    if results is not None:
        env["IOLAB_RESULTS"] = str(results)
    if token is not None:
        env["IOLAB_FLEET_TOKEN"] = str(token)
    began = time.monotonic()
    done = subprocess.run(
        [*IOLAB, *args], capture_output=True, text=True, env=env, timeout=600, check=False, cwd=cwd
    )
    return {
        "rc": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr[-4000:],
        "seconds": time.monotonic() - began,
    }


def silent_server(port: int) -> socket.socket:
    """A TCP server that accepts connections and never says a word (not a Ray GCS)."""
    server = socket.create_server(("127.0.0.1", port))

    def serve() -> None:
        kept = []
        while True:
            try:
                kept.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    return server


def interrupted_after(args: list[str], seconds: float) -> dict[str, Any]:
    """``iolab ARGS`` sent SIGINT after ``seconds``: how long it took to end after that. (SIGINT
    handled here, not ignored, whatever this process inherited: the child's is then Ctrl-C's
    default, as at a terminal.)"""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    proc = subprocess.Popen(
        [*IOLAB, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(seconds)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    ended = time.monotonic() - sent
    return {"rc": proc.returncode, "stdout": out, "stderr": err[-4000:], "seconds": ended}


def gcs_pids(port: int) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-f", f"gcs_server .*--gcs_server_port={port}( |$)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [int(p) for p in found.split()]


def while_running(
    work: Path, name: str, step: Any, results: Path, json_out: bool = True
) -> dict[str, Any]:
    """``iolab run NAME.toml --fleet HEAD`` with ``step()`` done once both hosts run a run;
    what the driver said, and how long it took to end after the step."""
    driver = subprocess.Popen(
        [*IOLAB, "run", str(work / f"{name}.toml"), "--fleet", HEAD]
        + (["--json"] if json_out else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "IOLAB_RESULTS": str(results)},
    )
    wait_for(results, f"fleet-{name}", lambda s: s.count("running") == 2)  # both hosts busy
    said: dict[str, Any] = {"step": step()}
    sent = time.monotonic()
    stdout, stderr = driver.communicate(timeout=600)
    said.update(
        rc=driver.returncode,
        stdout=stdout,
        stderr=stderr[-4000:],
        seconds=time.monotonic() - sent,
    )
    return said


def statuses(db: Path, name: str) -> list[str]:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            rows = conn.execute(
                "SELECT r.status FROM runs r JOIN experiments e ON e.id = r.experiment_id"
                " WHERE e.name = ? ORDER BY r.id",
                (name,),
            ).fetchall()
    except sqlite3.OperationalError:
        return []
    return [str(s) for (s,) in rows]


def wait_for(
    db: Path, name: str, ok: Any, seconds: float = 240, said: Path | None = None
) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen = statuses(db, name)
        if ok(seen):
            return seen
        time.sleep(0.1)
    driver = said.read_text()[-2000:] if said is not None and said.exists() else ""
    raise AssertionError(
        f"{name}: never reached the state wanted ({statuses(db, name)}); the driver: {driver}"
    )


def node_pids(host: str) -> list[int]:
    """The raylet of a host's node and its child processes (its workers, its agents)."""
    raylets = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "raylet/raylet" in cmdline and f"iolab-host:{host}," in cmdline:
            raylets.append(int(proc.name))
    children = []
    for raylet in raylets:
        out = subprocess.run(
            ["pgrep", "-P", str(raylet)], capture_output=True, text=True, check=False
        ).stdout
        children += [int(p) for p in out.split()]
    return raylets + children


REPO = Path(__file__).parents[2]


def run_in_namespace(
    script: Path, work: Path, env: dict[str, str], said: str, timeout: float
) -> dict[str, Any]:
    """``python SCRIPT WORK`` inside a network namespace of its own (``unshare -n``), started
    in the repository, with SIGINT at its default (a scenario may Ctrl-C a driver it starts,
    whatever the test inherited) and this checkout's ``src`` first on PYTHONPATH (so that
    iolab, the head's and the hosts' Ray workers included, is this checkout's, never another
    install's); what the scenario wrote to WORK/SAID. Called by the tests, not the scenarios."""
    from tests.conftest import interruptible

    env = {
        **env,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")])),
    }
    env.pop("IOLAB_RESULTS", None)
    done = subprocess.run(
        ["unshare", "-n", *interruptible([sys.executable, str(script), str(work)])],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
        cwd=REPO,
    )
    said_file = work / said
    assert said_file.exists(), done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    doc: dict[str, Any] = json.loads(said_file.read_text())
    return doc


RAY = str(Path(sys.executable).parent / "ray")  # a foreign Ray's start (never `ray stop`)
FOREIGN_PORT = 6401
SILENT_PORT = 6403


def fleet_processes(work: Path) -> list[dict[str, Any]]:
    """The live processes started for this test's fleet (``RAY_TMPDIR`` is exactly WORK in
    their environment), found whatever their name or parent, this scenario and its parents
    left out: pid, parent, command. Never another test's Ray (which `pgrep -f` would find)."""
    mark = f"RAY_TMPDIR={work}".encode()
    parent: dict[int, int] = {}
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            environ = (proc / "environ").read_bytes().split(b"\0")
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        parent[int(proc.name)] = int(ppid)
        if mark in environ and state not in ("Z", "X"):
            found.append({"pid": int(proc.name), "ppid": int(ppid), "argv": argv})
    mine, pid = set(), os.getpid()
    while pid > 0 and pid not in mine:
        mine.add(pid)
        pid = parent.get(pid, 0)
    return [p for p in found if p["pid"] not in mine]


def end_left(work: Path) -> None:
    """SIGKILL to whatever of the fleet a failed stop left, so that a failing test leaves no
    Ray process behind."""
    for proc in fleet_processes(work):
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc["pid"], signal.SIGKILL)


def foreign_ray(said: dict[str, Any], work: Path) -> list[int]:
    """A Ray head that is not iolab's (Ray's own directory layout in a directory of the test's,
    no token), started beside the fleet: `iolab fleet stop` must leave it running. Its
    gcs_server and raylet."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["RAY_TMPDIR"] = str(work / "f")
    (work / "f").mkdir()
    done = subprocess.run(
        [RAY, "start", "--head", f"--port={FOREIGN_PORT}", "--num-cpus=1",
         "--include-dashboard=false", "--node-ip-address=127.0.0.1", "--disable-usage-stats"],
        capture_output=True, text=True, env=env, check=False, timeout=180,
    )  # fmt: skip
    said["foreign start"] = {"rc": done.returncode, "stderr": done.stderr[-2000:]}
    ours = f"(gcs_server|raylet/raylet) .*[=:]{FOREIGN_PORT}( |$)"
    found = subprocess.run(
        ["pgrep", "-f", ours], capture_output=True, text=True, check=False
    ).stdout
    said["foreign pids"] = [int(p) for p in found.split()]
    return said["foreign pids"]  # type: ignore[no-any-return]


def end_foreign_ray(pids: list[int]) -> None:
    """SIGKILL to the foreign Ray and every process under it: never `ray stop`, which stops
    every Ray of the machine (other tests' too)."""
    from iolab.system import processes

    procs = processes.listing()
    for pid in processes.with_children(pids, procs):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def main(work: Path) -> None:
    said: dict[str, Any] = {}
    out = work / "scenario.json"
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    said["interfaces"] = subprocess.run(
        ["ip", "-o", "link"], capture_output=True, text=True, check=True
    ).stdout
    try:
        said["start"] = iolab(
            "fleet", "start", "--port", str(PORT), "--node-ip-address", "127.0.0.1"
        )
        for name in ("db1", "db2"):
            said[f"join {name}"] = iolab(
                "fleet", "join", HEAD, "--name", name, "--node-ip-address", "127.0.0.1"
            )
        # db3 has no fio on its PATH: a disk experiment on it is refused before any run
        empty = work / "empty-bin"
        empty.mkdir()
        said["join db3"] = iolab(
            "fleet",
            "join",
            HEAD,
            "--name",
            "db3",
            "--node-ip-address",
            "127.0.0.1",
            path=str(empty),
        )
        said["status"] = iolab("fleet", "status", "--address", HEAD, "--dir", str(work), "--json")
        # refused at once: a name the fleet has, a wrong token, a second head on the port
        said["join twice"] = iolab(
            "fleet", "join", HEAD, "--name", "db1", "--node-ip-address", "127.0.0.1"
        )
        wrong = work / "wrong-token"
        wrong.write_text("0" * 64)
        wrong.chmod(0o600)
        said["wrong token"] = iolab(
            "fleet", "join", HEAD, "--name", "db7", "--node-ip-address", "127.0.0.1", token=wrong
        )
        said["start twice"] = iolab(
            "fleet", "start", "--port", str(PORT), "--node-ip-address", "127.0.0.1"
        )
        # an address where something answers but no fleet's head does, and Ctrl-C there
        silent = silent_server(SILENT_PORT)
        try:
            said["not a head"] = iolab("fleet", "status", "--address", f"127.0.0.1:{SILENT_PORT}")
            said["not a head, ctrl-c"] = interrupted_after(
                ["fleet", "status", "--address", f"127.0.0.1:{SILENT_PORT}"], 2.0
            )
        finally:
            silent.close()
        said["no fio"] = iolab("run", str(work / "tools.toml"), "--json", results=work / "tools.db")
        said["unknown host"] = iolab(
            "run", str(work / "unknown.toml"), "--fleet", HEAD, results=work / "tools.db"
        )
        said["listening"] = subprocess.run(
            ["ss", "-Hltn"], capture_output=True, text=True, check=False
        ).stdout

        # every cell of a host matrix on its host, SQLite and PostgreSQL
        said["hosts"] = iolab(
            "run", str(work / "hosts.toml"), "--fleet", HEAD, "--json", results=work / "hosts.db"
        )
        said["a after hosts"] = sorted(p.name for p in (work / "a").iterdir())
        # TPC-C on both hosts at once, each generating the data into the machine's one cache
        said["tpcc"] = iolab(
            "run", str(work / "tpcc.toml"), "--fleet", HEAD, "--json", results=work / "tpcc.db"
        )
        said["a after tpcc"] = sorted(p.name for p in (work / "a").iterdir())
        # no host in the matrix: runs spread over [fleet] hosts
        said["spread"] = iolab(
            "run", str(work / "spread.toml"), "--json", results=work / "spread.db"
        )
        # pgbench with the script beside the file, the driver started where a file of the same
        # name does another thing (the hosts run in the repository, which has none)
        said["scripts"] = iolab(
            "run",
            str(work / "exp" / "scripts.toml"),
            "--fleet",
            HEAD,
            "--json",
            results=work / "scripts.db",
            cwd=work / "elsewhere",
        )

        # testbed devices brought up on each host for the runs, and taken down after
        from iolab.testbed import unavailable_reason

        said["testbed refused"] = unavailable_reason()
        if said["testbed refused"] is None:
            said["devices"] = iolab(
                "run",
                str(work / "devices.toml"),
                "--fleet",
                HEAD,
                "--json",
                results=work / "dev.db",
            )
            said["testbed after"] = iolab("testbed", "status", "--json")

        # the driver SIGKILLed during a run, then run again
        db = work / "resume.db"
        driver = subprocess.Popen(
            [*IOLAB, "run", str(work / "resume.toml"), "--fleet", HEAD],
            stdout=subprocess.DEVNULL,
            stderr=(work / "resume-killed.err").open("w"),  # read when it never starts a run
            env={**os.environ, "IOLAB_RESULTS": str(db)},
        )
        try:
            seen = wait_for(
                db,
                "fleet-resume",
                lambda s: "done" in s and "running" in s,
                said=work / "resume-killed.err",
            )
        finally:
            driver.send_signal(signal.SIGKILL)
            driver.wait()
        said["resume killed"] = statuses(db, "fleet-resume")
        said["resume killed seen"] = seen
        said["resume"] = iolab(
            "run", str(work / "resume.toml"), "--fleet", HEAD, "--json", results=db
        )

        # Ctrl-C of the driver during runs: the runs in flight are recorded aborted, no orphan
        db = work / "stop.db"
        stopped = subprocess.Popen(
            [*IOLAB, "run", str(work / "stop.toml"), "--fleet", HEAD],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "IOLAB_RESULTS": str(db)},
        )
        wait_for(db, "fleet-stop", lambda s: s.count("running") == 2)
        stopped.send_signal(signal.SIGINT)
        _, stderr = stopped.communicate(timeout=300)
        said["interrupted"] = {"rc": stopped.returncode, "stderr": stderr[-4000:]}

        # host db2's node killed during a run: its run fails with the reason, db1 completes
        db = work / "kill.db"
        killer = subprocess.Popen(
            [*IOLAB, "run", str(work / "kill.toml"), "--fleet", HEAD, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "IOLAB_RESULTS": str(db)},
        )
        wait_for(db, "fleet-kill", lambda s: s.count("running") == 2)  # both hosts busy
        pids = node_pids("db2")
        said["killed pids"] = pids
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        stdout, stderr = killer.communicate(timeout=600)
        said["kill"] = {"rc": killer.returncode, "stdout": stdout, "stderr": stderr[-4000:]}
        # Ray declares a killed node dead once its health checks fail (about 30 s): then the
        # host is listed as left
        deadline = time.monotonic() + 120
        while True:
            said["status after kill"] = iolab("fleet", "status", "--address", HEAD, "--json")
            try:
                hosts = json.loads(said["status after kill"]["stdout"])["hosts"]
            except ValueError:
                break
            if not any(h["name"] == "db2" and h["alive"] for h in hosts):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(2)

        # db2 back, then stopped during a run as `iolab fleet stop` on its machine does
        # (SIGTERM to its node's processes): its run failed, saying so
        said["join db2 again"] = iolab(
            "fleet", "join", HEAD, "--name", "db2", "--node-ip-address", "127.0.0.1"
        )

        def stop_db2() -> list[int]:
            pids = node_pids("db2")
            for pid in pids:
                os.kill(pid, signal.SIGTERM)
            return pids

        said["term"] = while_running(work, "term", stop_db2, work / "term.db")

        # the head's GCS killed while runs are in flight: the driver says so and records them
        def kill_head() -> list[int]:
            pids = gcs_pids(PORT)
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            return pids

        said["head gone"] = while_running(work, "gone", kill_head, work / "gone.db", False)
        # nothing answers where the head was: refused at once, naming the address
        said["status, head down"] = iolab("fleet", "status")
        said["run auto, head down"] = iolab(
            "run", str(work / "gone.toml"), "--fleet", "auto", results=work / "gone.db"
        )
        said["run, nothing there"] = iolab(
            "run", str(work / "gone.toml"), "--fleet", "127.0.0.1:1", results=work / "gone.db"
        )
    finally:
        foreign = foreign_ray(said, work)
        # a stop under a directory whose path ends the same way (/if-XXX is a suffix of
        # /var/tmp/if-XXX) is another fleet's: it must stop nothing of this one
        elsewhere = "/" + work.name
        said["stop elsewhere"] = iolab("fleet", "stop", env={"RAY_TMPDIR": elsewhere})
        said["alive after stop elsewhere"] = len(fleet_processes(work))
        # the head's GCS and every raylet SIGKILLed: their agents and workers lose their
        # parent (orphans, renamed ray::...), and stop must end them too
        for proc in fleet_processes(work):
            if proc["argv"].split(" ")[0].endswith(("gcs_server", "raylet/raylet")):
                os.kill(proc["pid"], signal.SIGKILL)
        time.sleep(3)
        said["orphans"] = [p for p in fleet_processes(work) if p["ppid"] == 1]
        started = time.monotonic()
        said["stop"] = iolab("fleet", "stop")
        said["stop seconds"] = time.monotonic() - started
        said["left"] = fleet_processes(work)  # at once: stop returns when all have exited
        end_left(work)
        time.sleep(1)
        said["foreign after stop"] = [pid for pid in foreign if Path(f"/proc/{pid}").exists()]
        end_foreign_ray(foreign)
        out.write_text(json.dumps(said, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
