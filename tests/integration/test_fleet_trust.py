"""What a fleet refuses, with a real Ray head: a token file another user wrote (``nobody``) or
others can read, a second head in the directory of a running one, a second join of a name
being joined, and a head whose GCS is frozen (SIGSTOP), during a run and before a command.
tests/integration/fleet_trust.py runs once inside a network namespace the test makes itself;
each test checks one part of what it said."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fleet_scenario import end_left, run_in_namespace
from tests.integration.test_fleet import _refused

pytestmark = pytest.mark.integration
SCENARIO = Path(__file__).with_name("fleet_trust.py")


@pytest.fixture(scope="module")
def said() -> Iterator[tuple[Path, dict[str, Any]]]:
    why = _refused()
    if why:
        pytest.skip(why)
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("another user's token file needs root and runuser")
    work = Path(tempfile.mkdtemp(prefix="it-", dir="/var/tmp"))  # short: Ray's socket paths
    work.chmod(0o755)
    (work / "a").mkdir(mode=0o755)
    (work / "frozen.toml").write_text(
        f"""
[experiment]
name = "frozen"
repetitions = 1
[workload]
kind = "populate"
engine = "sqlite"
rows = 5000000
[layouts.a]
data_dirs = ["{work / "a"}"]
[matrix]
host = ["db1"]
[isolation]
settle_seconds = 0
drop_caches = false
"""
    )
    env = {**os.environ, "IOLAB_FLEET_TOKEN": str(work / "token"), "RAY_TMPDIR": str(work)}
    try:
        yield work, run_in_namespace(SCENARIO, work, env, "trust.json", timeout=1200)
    finally:
        end_left(work)
        shutil.rmtree(work, ignore_errors=True)


def _error(step: dict[str, Any], rc: int = 2) -> str:
    lines = [ln for ln in step["stderr"].splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and step["rc"] == rc, step
    assert "Traceback" not in step["stderr"]
    return lines[0]


def _hosts(step: dict[str, Any]) -> list[tuple[str, bool]]:
    assert step["rc"] == 0, step["stderr"]
    return [(h["name"], h["alive"]) for h in json.loads(step["stdout"])["hosts"]]


def test_a_token_file_nobody_wrote_or_others_can_read_is_refused_and_no_ray_starts(
    said: tuple[Path, dict[str, Any]],
) -> None:
    work, got = said
    tail = (
        ": iolab does not use it (whoever wrote it could join the fleet and run tasks as this "
        "user); use a file of your own, mode 600, in a directory only you (or root) can write, "
        "as `iolab fleet start` makes it, or point IOLAB_FLEET_TOKEN at one"
    )
    assert _error(got["nobody's token"]) == (
        f"error: the fleet's token file {work}/x/tok is owned by uid 65534, not by this user "
        f"(uid 0){tail}"
    )
    assert _error(got["root's 644 token"]) == (
        f"error: the fleet's token file {work}/open-token has mode 0644, not 0600 (or 0400){tail}"
    )
    assert got["ray after refused tokens"] == []
    # the same user's own token, mode 600: the fleet starts with it
    assert got["start"]["rc"] == 0, got["start"]["stderr"]
    assert got["start"]["stdout"].startswith(
        f"fleet head at {'127.0.0.1'}:6399; token file {work}/token\n"
    )


def test_a_second_head_in_the_same_directory_is_refused_while_the_first_runs(
    said: tuple[Path, dict[str, Any]],
) -> None:
    _, got = said
    assert got["join db1"]["rc"] == 0, got["join db1"]["stderr"]
    line = _error(got["start again"])
    assert line.startswith(
        "error: a fleet's head already runs here at 127.0.0.1:6399 (its GCS is pid "
    ), line
    assert line.endswith(
        "; `auto` means it): stop it with `iolab fleet stop` before starting another"
    )
    assert got["address after"].strip() == "127.0.0.1:6399"  # what auto reads: the first
    assert got["gcs on the second port"] == []
    assert _hosts(got["status after"]) == [("db1", True)]


def test_a_second_join_of_a_name_being_joined_says_so(
    said: tuple[Path, dict[str, Any]],
) -> None:
    _, got = said
    assert got["first held the lock"], got["join db3, first"]
    assert _error(got["join db3, second"]) == (
        f"error: --name: 'db3' is not allowed; db3 is being joined by another process (pid "
        f"{got['first pid']}): wait for it to end, then `iolab fleet status --address "
        "127.0.0.1:6399` says whether db3 joined"
    )
    first = got["join db3, first"]
    assert (first["rc"], first["stdout"]) == (
        0,
        "joined the fleet at 127.0.0.1:6399 as host db3\n",
    ), first["stderr"]
    assert _hosts(got["status with db3"]) == [("db1", True), ("db3", True)]


def test_a_frozen_head_is_said_not_to_answer_within_the_limit(
    said: tuple[Path, dict[str, Any]],
) -> None:
    """SIGSTOP of the head's GCS: it still accepts connections (its kernel does), so a connect
    told nothing; the driver hung for minutes. Each check asks the GCS with a deadline."""
    _, got = said
    assert got["frozen gcs"], "the head's GCS was not found to freeze"
    run = got["run, head frozen"]
    assert run["rc"] is not None, "the driver still ran 240 s after the head froze"
    assert _error(run, rc=1) == (
        "error: the fleet's head at 127.0.0.1:6399 does not answer (its GCS said nothing within "
        "4 s): the runs in flight are recorded aborted; start the fleet again, and run the file "
        "again to resume"
    )
    assert run["seconds"] < 60  # generous: 3 checks of 2 + 4 s, and 5 s to disconnect
    assert got["runs, head frozen"] == ["aborted"]
    silent = (
        "no fleet's head answers{here} within 8 s (something accepts connections there: a head "
        "that is stopped or hangs, or another program): give the head's address that `iolab "
        "fleet start` printed"
    )
    here = " (the fleet started on this machine, at 127.0.0.1:6399)"
    assert _error(got["status, head frozen"]) == (
        "error: --address: 'auto' is not allowed; " + silent.format(here=here)
    )
    assert _error(got["join, head frozen"]) == (
        "error: HEAD: '127.0.0.1:6399' is not allowed; " + silent.format(here="")
    )
    for step in ("status, head frozen", "join, head frozen"):
        assert got[step]["seconds"] < 30, step  # generous: the GCS is given 8 s
    # a frozen head still runs: no second head beside it
    assert _error(got["start, head frozen"]).startswith(
        "error: a fleet's head already runs here at 127.0.0.1:6399 (its GCS is pid "
    )
    # SIGCONT: the same head answers again, its hosts there
    assert _hosts(got["status, head again"]) == [("db1", True), ("db3", True)]


def test_the_fleet_stops_and_leaves_nothing(said: tuple[Path, dict[str, Any]]) -> None:
    _, got = said
    assert got["stop"]["stdout"].startswith("fleet stopped on this machine ("), got["stop"]
    assert got["left"] == []
