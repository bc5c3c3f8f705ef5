"""What another user of a fleet's machine can and cannot do, and what the fleet exposes to the
network: tests/integration/fleet_exposure.py, run once inside a network namespace the test
makes itself (three addresses on its loopback), with ``nobody`` (uid 65534) as the other user.
One fleet (a head and a host) serves every check."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fleet_scenario import end_left, run_in_namespace
from tests.integration.test_fleet import _refused

pytestmark = pytest.mark.integration
SCENARIO = Path(__file__).with_name("fleet_exposure.py")


def _missing() -> str | None:
    why = _refused()
    if why:
        return why
    for tool in ("setpriv", "nft", "ss"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: the fleet's security tests need it"
    return None


@pytest.fixture(scope="module")
def said() -> Iterator[tuple[Path, dict[str, Any]]]:
    why = _missing()
    if why:
        pytest.skip(why)
    work = Path(tempfile.mkdtemp(prefix="is-", dir="/var/tmp"))  # short: Ray's socket paths
    work.chmod(0o755)
    try:
        (work / "a").mkdir()
        (work / "one.toml").write_text(
            f"""
[experiment]
name = "squatted"
[workload]
kind = "populate"
engine = "sqlite"
rows = 100
[layouts.a]
data_dirs = ["{work / "a"}"]
[matrix]
host = ["db1"]
"""
        )
        env = {**os.environ, "IOLAB_FLEET_TOKEN": str(work / "token")}
        yield work, run_in_namespace(SCENARIO, work, env, "exposure.json", timeout=900)
    finally:
        end_left(work / "squat")  # what a scenario that timed out left
        end_left(work / "base")
        shutil.rmtree(work, ignore_errors=True)


def _error(step: dict[str, Any]) -> str:
    lines = [ln for ln in step["stderr"].splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and step["rc"] == 2, step
    assert "Traceback" not in step["stderr"]
    return lines[0]


def test_a_directory_another_user_made_is_refused_and_never_read(
    said: tuple[Path, dict[str, Any]],
) -> None:
    work, got = said
    private = work / "squat" / f"iolab-ray-{os.geteuid()}"
    owned = (
        f"error: the fleet's directory {private} is owned by uid 65534, not by this user "
        f"(uid {os.geteuid()}): iolab does not use it (another user could read or replace what "
        "Ray keeps there); remove it, or set RAY_TMPDIR to a directory of yours"
    )
    assert _error(got["status squatted"]) == owned
    assert _error(got["run squatted"]) == owned
    assert _error(got["start squatted"]) == owned
    assert _error(got["status symlink"]).startswith(
        f"error: the fleet's directory {private} is a symbolic link: iolab does not use it"
    )
    assert _error(got["stop symlink"]).startswith(f"error: the fleet's directory {private} is")
    assert got["heard"] == ""  # nobody's listener: no connection, so no token sent
    assert got["ray after squat"] == []  # the start refused before any Ray process
    assert not (work / "sq.db").exists() or _no_runs(work / "sq.db")


def _no_runs(db: Path) -> bool:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_the_fleets_directory_is_private_to_its_user(said: tuple[Path, dict[str, Any]]) -> None:
    _, got = said
    assert got["start"]["rc"] == 0, got["start"]["stderr"]
    assert got["dir"] == {"mode": "0o700", "uid": os.geteuid()}
    assert got["nobody ls"]["rc"] != 0
    assert "Permission denied" in got["nobody ls"]["stderr"]
    assert "Permission denied" in got["nobody write"]["stderr"]
    # auto found the fleet from the private directory (nobody's write did not land)
    hosts = json.loads(got["status"]["stdout"])["hosts"]
    assert [(h["name"], h["alive"]) for h in hosts] == [("db1", True)]


def _listeners(ss: str) -> list[tuple[str, int, str]]:
    """(address, port, program) of each listening socket of `ss -Hltnp`."""
    out = []
    for line in ss.splitlines():
        local = line.split()[3]
        address, port = local.rsplit(":", 1)
        program = re.search(r'users:\(\("([^"]+)"', line)
        out.append((address.strip("[]"), int(port), program.group(1) if program else "?"))
    return out


def test_every_port_is_on_the_nodes_address_or_named_in_the_warning(
    said: tuple[Path, dict[str, Any]],
) -> None:
    """Ray 2.60 binds its GCS, raylets and workers to every interface whatever
    --node-ip-address says (and only to 127.0.0.1 when that is the node's address): start and
    join say so in one line, naming exactly those ports."""
    _, got = said
    listening = _listeners(got["listening"])
    assert ("*", 6379, "gcs_server") in listening or ("0.0.0.0", 6379, "gcs_server") in listening
    wildcard = sorted({port for address, port, _ in listening if address in ("*", "0.0.0.0", "::")})
    for address, _, program in listening:
        assert address in ("*", "0.0.0.0", "::", "10.99.0.2", "10.99.0.3"), (address, program)
    assert got["start"]["stdout"].startswith("fleet head at 10.99.0.2:6379; ")
    warned = [ln for ln in got["start"]["stderr"].splitlines() if ln.startswith("warning:")]
    assert warned[0] == (
        "warning: Ray replaced --node-ip-address 127.0.0.1 by 10.99.0.2 (this machine's address)"
    )
    said_ports = set()
    for step in (got["start"], got["join"]):
        line = [ln for ln in step["stderr"].splitlines() if ln.startswith("warning:")][-1]
        assert line.startswith("warning: Ray listens on every interface here, ports ")
        assert line.endswith(
            ": allow them only from the fleet's addresses with a firewall (docs/fleet.md, Security)"
        )
        said_ports |= {int(p) for p in re.findall(r"\d+", line.split("ports ")[1].split(":")[0])}
    # every wildcard port at the time of the warnings (a worker started later has its own)
    workers = {port for _, port, program in listening if program.startswith("ray::")}
    assert set(wildcard) - workers == said_ports


def test_the_docs_firewall_closes_the_fleet_to_other_addresses_and_keeps_it_working(
    said: tuple[Path, dict[str, Any]],
) -> None:
    _, got = said
    assert all(step["rc"] == 0 for step in got["nft"]), got["nft"]
    assert len(got["targets"]) >= 8  # GCS, 2 raylets x 2 ports (x 2 addresses), agents, workers
    # without the rules, 10.88.0.9 (outside the fleet) reaches every port; with them none
    assert [ok for _, _, ok in got["outside before"]] == [True] * len(got["targets"])
    assert [ok for _, _, ok in got["outside after"]] == [False] * len(got["targets"])
    # the fleet's own addresses still reach every one
    assert [ok for _, _, ok in got["head after"]] == [True] * len(got["targets"])
    assert [ok for _, _, ok in got["host after"]] == [True] * len(got["targets"])
    hosts = json.loads(got["status with firewall"]["stdout"])["hosts"]
    assert [(h["name"], h["alive"], h["error"]) for h in hosts] == [("db1", True, None)]


def test_stop_ends_the_fleet(said: tuple[Path, dict[str, Any]]) -> None:
    _, got = said
    assert got["stop"]["stdout"].startswith("fleet stopped on this machine ("), got["stop"]
    assert got["left"] == []
