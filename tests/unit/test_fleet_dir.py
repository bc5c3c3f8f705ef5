"""The fleet's Ray directory and what `fleet stop` takes for the fleet's, without a cluster:
the private directory refused when another user could have made or changed it, the processes
matched by the exact directory (never a part of a path), and the listening sockets read from
/proc."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from iolab.fleet import cluster
from iolab.system import processes, sockets
from tests.unit.cli import iolab, needs

NOBODY = 65534
# where Ray's package is, as cluster._ray_package finds it: a path of the test's own, so that
# the matching is tested without the fleet extra installed (`pip install -e '.[dev]'`)
RAY = "/opt/venv/lib/python3/site-packages/ray"
UID = os.geteuid()


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory like /tmp (mode 1777, sticky) as RAY_TMPDIR."""
    made = tmp_path / "tmp"
    made.mkdir()
    made.chmod(0o1777)
    monkeypatch.setenv("RAY_TMPDIR", str(made))
    return made


def refused(base: Path) -> str:
    with pytest.raises(cluster.UnsafeDirectory) as caught:
        cluster.checked_fleet_dir(create=True)
    return str(caught.value)


def test_the_directory_is_made_private_and_per_user(base: Path) -> None:
    made = cluster.checked_fleet_dir(create=True)
    assert made == base / f"iolab-ray-{UID}"
    assert (made.stat().st_mode & 0o7777, made.stat().st_uid) == (0o700, UID)
    assert cluster.ray_dir() == made / "ray"  # Ray's --temp-dir, which Ray makes 0777
    assert cluster.checked_fleet_dir() == made  # used again as it is


@pytest.mark.skipif(UID != 0, reason="giving a directory to another user needs root")
def test_a_directory_another_user_made_first_is_refused(base: Path) -> None:
    squat = base / f"iolab-ray-{UID}"
    squat.mkdir(mode=0o700)
    os.chown(squat, NOBODY, NOBODY)
    assert refused(base) == (
        f"the fleet's directory {squat} is owned by uid {NOBODY}, not by this user (uid {UID}):"
        " iolab does not use it (another user could read or replace what Ray keeps there);"
        " remove it, or set RAY_TMPDIR to a directory of yours"
    )


def test_a_symbolic_link_is_refused_not_followed(base: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (base / f"iolab-ray-{UID}").symlink_to(elsewhere)
    assert refused(base).startswith(
        f"the fleet's directory {base}/iolab-ray-{UID} is a symbolic link: iolab does not use it"
    )
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o707, 0o750])
def test_a_directory_others_can_enter_is_refused(base: Path, mode: int) -> None:
    made = base / f"iolab-ray-{UID}"
    made.mkdir()
    made.chmod(mode)
    assert f"{made} has mode {mode:04o}, not 0700" in refused(base)


@pytest.mark.skipif(UID != 0, reason="giving a link to another user needs root")
def test_a_base_that_is_another_users_link_is_refused(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = base / "theirs"
    link.symlink_to(tmp_path)
    os.lchown(link, NOBODY, NOBODY)
    monkeypatch.setenv("RAY_TMPDIR", str(link))
    with pytest.raises(cluster.UnsafeDirectory) as caught:
        cluster.checked_fleet_dir(create=True)
    assert f"{link} is a symbolic link of uid {NOBODY}" in str(caught.value)
    assert not (tmp_path / f"iolab-ray-{UID}").exists()


def test_a_base_everyone_writes_without_the_sticky_bit_is_refused(base: Path) -> None:
    base.chmod(0o777)
    assert f"{base} is writable by every user and not sticky" in refused(base)


@needs("ray", "fleet")  # `fleet status` looks for Ray first
def test_auto_refuses_a_squatted_directory_before_reading_it(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`iolab fleet status` (auto): one line, exit 2, and the address file of the squatted
    directory never read (it would have sent the token there)."""
    token = tmp_path / "token"
    token.write_text("0" * 64)
    token.chmod(0o600)
    squat = base / f"iolab-ray-{UID}"
    (squat / "ray").mkdir(parents=True)
    (squat / "ray" / "ray_current_cluster").write_text("10.99.0.2:7777")
    squat.chmod(0o777)
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_USAGE_STATS_ENABLED"):
        monkeypatch.delenv(key, raising=False)  # connected() sets them: restored after
        monkeypatch.setenv(key, "x")
    done = iolab("fleet", "status", env={"IOLAB_FLEET_TOKEN": str(token)})
    assert (done.code, done.error_lines) == (
        2,
        [
            f"error: the fleet's directory {squat} has mode 0777, not 0700: iolab does not use "
            "it (another user could read or replace what Ray keeps there); remove it, or set "
            "RAY_TMPDIR to a directory of yours"
        ],
    )


@needs("ray", "fleet")  # `fleet status` looks for Ray first
def test_auto_without_a_fleet_here_never_falls_back_to_rays_own_lookup(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ray's own `auto` reads RAY_TMPDIR/ray/ray_current_cluster, which anyone can write."""
    token = tmp_path / "token"
    token.write_text("0" * 64)
    token.chmod(0o600)  # the user's own: read
    (base / "ray").mkdir(mode=0o777)
    (base / "ray" / "ray_current_cluster").write_text("10.99.0.2:7777")
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_USAGE_STATS_ENABLED"):
        monkeypatch.setenv(key, "x")
    done = iolab("fleet", "status", env={"IOLAB_FLEET_TOKEN": str(token)})
    assert (done.code, done.error_lines) == (
        2,
        [
            f"error: --address: 'auto' is not allowed; no fleet of this user runs on this machine "
            f"(none in {base}/iolab-ray-{UID}/ray): start one with `iolab fleet start`, or give "
            "the head's HOST:PORT"
        ],
    )


@pytest.fixture(autouse=True)
def ray_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's package is at :data:`RAY` for what matches its programs."""
    monkeypatch.setattr(cluster, "_ray_package", lambda: (f"{RAY}/",))


def _proc(pid: int, *argv: str) -> processes.Process:
    return processes.Process(pid, 1, "S", pid, argv)


def test_stop_matches_the_exact_directory_never_a_part_of_a_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fleet under /tmp/x/v/s is not the one of RAY_TMPDIR=/s (a substring of its path)."""
    monkeypatch.setenv("RAY_TMPDIR", "/s")
    here = f"/s/iolab-ray-{UID}/ray"
    monkeypatch.setattr(processes, "environ", lambda pid: {})
    monkeypatch.setattr(processes, "open_files", lambda pid: [])
    ours = [
        _proc(1, f"{RAY}/core/src/ray/raylet/raylet", f"--temp_dir={here}"),
        _proc(2, f"{RAY}/core/src/ray/gcs/gcs_server", f"--session-dir={here}/session_1"),
        _proc(3, "python", f"{RAY}/_private/log_monitor.py", f"--logs-dir={here}/s/logs"),
    ]
    others = [
        _proc(4, f"{RAY}/core/src/ray/raylet/raylet", f"--temp_dir=/tmp/x/v{here}"),
        _proc(5, f"{RAY}/core/src/ray/gcs/gcs_server", f"--session-dir=/tmp/x/v{here}/s_1"),
        _proc(6, "raylet", f"--temp_dir={here}-old"),
        _proc(7, f"{RAY}/core/src/ray/raylet/raylet", "--temp_dir=/tmp/ray"),
        _proc(8, "tail", "-f", f"{here}/session_latest/logs/raylet.out"),  # not Ray's
    ]
    assert [p.pid for p in ours + others if cluster._ours(p)] == [1, 2, 3]


def test_stop_finds_a_renamed_orphan_by_the_logs_it_has_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ray's setproctitle overwrites most of a renamed process's environment too: what an
    orphan keeps is its log files, open in the session's directory."""
    monkeypatch.setenv("RAY_TMPDIR", "/s")
    logs = f"/s/iolab-ray-{UID}/ray/session_1/logs"
    files = {
        1: ["/dev/null", f"{logs}/dashboard_agent.out", f"{logs}/dashboard_agent.err"],
        2: [f"/tmp/x/v{logs}/worker.out", "socket:[123]"],
        3: [],
    }
    monkeypatch.setattr(processes, "open_files", lambda pid: files[pid])
    monkeypatch.setattr(processes, "environ", lambda pid: {})
    procs = [_proc(1, "ray::DashboardAgent"), _proc(2, "ray::IDLE"), _proc(3, "ray::IDLE")]
    assert [p.pid for p in procs if cluster._ours(p)] == [1]


def test_open_files_reads_this_process(tmp_path: Path) -> None:
    with (tmp_path / "log.out").open("w"):
        assert str(tmp_path / "log.out") in processes.open_files(os.getpid())
    assert processes.open_files(2**22 + 7) == []


def test_stop_finds_a_renamed_orphan_by_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_TMPDIR", "/s")
    mark = {cluster.MARK_ENV: f"/s/iolab-ray-{UID}/ray"}
    other = {cluster.MARK_ENV: f"/tmp/x/v/s/iolab-ray-{UID}/ray"}
    env = {1: mark, 2: other, 3: {}}
    monkeypatch.setattr(processes, "environ", lambda pid: env[pid])
    monkeypatch.setattr(processes, "open_files", lambda pid: [])
    env[4] = mark
    procs = [
        _proc(1, "ray::DashboardAgent"),
        _proc(2, "ray::IDLE"),
        _proc(3, "ray::IDLE"),
        _proc(4, "postgres", "-D", "/data"),  # a server a run started: only as a child
    ]
    assert [p.pid for p in procs if cluster._ours(p)] == [1]


def test_environ_reads_this_process() -> None:
    assert "PATH" in processes.environ(os.getpid())
    assert processes.environ(2**22 + 7) == {}  # no such process


@pytest.mark.parametrize(
    ("family", "address", "every"),
    [
        (socket.AF_INET, "127.0.0.1", False),
        (socket.AF_INET, "0.0.0.0", True),
        (socket.AF_INET6, "::1", False),
        (socket.AF_INET6, "::", True),
    ],
)
def test_listening_sockets_are_read_with_their_address(
    family: socket.AddressFamily, address: str, every: bool
) -> None:
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        s.listen()
        port = s.getsockname()[1]
        found = [x for x in sockets.listening([os.getpid()]) if x.port == port]
    assert [(x.address, x.every_interface) for x in found] == [(address, every)]
