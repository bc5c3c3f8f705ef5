"""The fleet's refusals that need a real head, run inside a network namespace of its own
(``unshare -n``, loopback only): a token file another user wrote, a second head in the same
directory, two joins of one name at once, a head whose GCS is frozen (SIGSTOP).

``python fleet_trust.py WORKDIR``: what each step said goes to WORKDIR/trust.json for
tests/integration/test_fleet_trust.py to check. Every command runs the iolab of this checkout
(PYTHONPATH is its src), the head and the host too.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fleet_scenario import (  # type: ignore[import-not-found]
    IOLAB,
    end_left,
    fleet_processes,
    gcs_pids,
    iolab,
    statuses,
    wait_for,
)

PORT = 6399
HEAD = f"127.0.0.1:{PORT}"
HERE = ["--node-ip-address", "127.0.0.1"]


def tokens(work: Path, said: dict[str, Any]) -> None:
    """nobody's token file (mode 644) in a world-writable sticky directory, and root's of mode
    644: `fleet start` refuses both and starts no Ray."""
    shared = work / "x"
    shared.mkdir()
    shared.chmod(0o1777)
    theirs = shared / "tok"
    subprocess.run(
        ["runuser", "-u", "nobody", "--", "sh", "-c", f"umask 022; echo {'cd' * 32} > {theirs}"],
        check=True,
    )
    said["nobody's token"] = iolab("fleet", "start", "--port", str(PORT), *HERE, token=theirs)
    open_token = work / "open-token"
    open_token.write_text(secrets.token_hex(32))
    open_token.chmod(0o644)
    said["root's 644 token"] = iolab("fleet", "start", "--port", str(PORT), *HERE, token=open_token)
    said["ray after refused tokens"] = fleet_processes(work)
    if said["ray after refused tokens"]:  # a start took the token: the next steps need none
        iolab("fleet", "stop")


def second_head(work: Path, said: dict[str, Any]) -> None:
    said["start"] = iolab("fleet", "start", "--port", str(PORT), *HERE)
    said["join db1"] = iolab("fleet", "join", HEAD, "--name", "db1", *HERE)
    said["start again"] = iolab("fleet", "start", "--port", str(PORT + 1), *HERE)
    said["address after"] = (
        work / f"iolab-ray-{os.geteuid()}" / "ray" / "ray_current_cluster"
    ).read_text()
    said["gcs on the second port"] = gcs_pids(PORT + 1)
    said["status after"] = iolab("fleet", "status", "--json")  # auto: the first fleet


def joined_twice(work: Path, said: dict[str, Any]) -> None:
    """Two `fleet join --name db3` at once: the first holds db3's lock (it is stopped while it
    holds it, so that the second surely comes meanwhile), the second is refused."""
    lock = work / f"iolab-ray-{os.geteuid()}" / "join-db3.lock"
    first = subprocess.Popen(
        [*IOLAB, "fleet", "join", HEAD, "--name", "db3", *HERE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    held = False
    while first.poll() is None and time.monotonic() < deadline and not held:
        held = lock.exists() and lock.read_text().strip() == str(first.pid)
        time.sleep(0.05)
    said["first held the lock"] = held
    if held:
        first.send_signal(signal.SIGSTOP)
    try:
        said["join db3, second"] = iolab("fleet", "join", HEAD, "--name", "db3", *HERE)
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=300)
    said["join db3, first"] = {"rc": first.returncode, "stdout": out, "stderr": err[-4000:]}
    said["first pid"] = first.pid
    said["status with db3"] = iolab("fleet", "status", "--address", HEAD, "--json")


def frozen(work: Path, said: dict[str, Any]) -> None:
    """The head's GCS stopped (SIGSTOP) while a run is in flight, then before commands start."""
    results = work / "frozen.db"
    driver = subprocess.Popen(
        [*IOLAB, "run", str(work / "frozen.toml"), "--fleet", "auto"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "IOLAB_RESULTS": str(results)},
    )
    gcs = gcs_pids(PORT)
    said["frozen gcs"] = gcs
    try:
        wait_for(results, "frozen", lambda s: s == ["running"])
        for pid in gcs:
            os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            out, err = driver.communicate(timeout=240)
            said["run, head frozen"] = {"rc": driver.returncode, "stdout": out, "stderr": err}
        except subprocess.TimeoutExpired:
            driver.kill()
            out, err = driver.communicate()
            said["run, head frozen"] = {"rc": None, "stdout": out, "stderr": err[-4000:]}
        said["run, head frozen"]["seconds"] = time.monotonic() - stopped
        said["runs, head frozen"] = statuses(results, "frozen")
        said["status, head frozen"] = iolab("fleet", "status")
        said["join, head frozen"] = iolab("fleet", "join", HEAD, "--name", "db4", *HERE)
        said["start, head frozen"] = iolab("fleet", "start", "--port", str(PORT + 2), *HERE)
    finally:
        for pid in gcs:
            os.kill(pid, signal.SIGCONT)
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    said["status, head again"] = iolab("fleet", "status", "--json")


def main(work: Path) -> None:
    said: dict[str, Any] = {}
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    token = work / "token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    try:
        tokens(work, said)
        second_head(work, said)
        joined_twice(work, said)
        frozen(work, said)
    finally:
        said["stop"] = iolab("fleet", "stop")
        said["left"] = fleet_processes(work)
        end_left(work)
        (work / "trust.json").write_text(json.dumps(said, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
