"""The fleet's token file, without a cluster: whoever can read it can join the fleet and run
tasks as the user who runs it (root, often), so iolab uses it only when it is the user's own
(mode 600 or 400, not a link, in a directory no one else can write or swap) and makes it so.
``nobody`` (uid 65534) plays the other user. No program but ``runuser`` starts here: the
commands refuse the token before Ray is started (they need Ray installed, to get that far);
tests/integration/test_fleet_trust.py has the same refusals with a real head."""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.fleet import cluster
from tests.unit.cli import iolab, no_programs

UID = os.geteuid()
NOBODY = 65534
ROOT_ONLY = pytest.mark.skipif(UID != 0, reason="another user's file, and root's, need root")
WITH_RAY = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="the fleet's commands say that Ray is missing before they read the token",
)
COMMANDS = [
    ["fleet", "start", "--port", "6399"],
    ["fleet", "join", "127.0.0.1:6399", "--name", "db1"],
    ["fleet", "status", "--address", "127.0.0.1:6399"],
]


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory of this user's, mode 755, that ``nobody`` can enter (unlike tmp_path), its
    links resolved; Ray's directory in it too."""
    made = Path(os.path.realpath(tempfile.mkdtemp(prefix="iolab-token-", dir="/var/tmp")))
    made.chmod(0o755)
    monkeypatch.setenv("RAY_TMPDIR", str(made))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def token(path: Path, mode: int = 0o600, text: str = "ab" * 32) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def refusal(path: Path, why: str) -> str:
    return (
        f"error: the fleet's token file {path} {why}: iolab does not use it (whoever wrote it "
        "could join the fleet and run tasks as this user); use a file of your own, mode 600, in "
        "a directory only you (or root) can write, as `iolab fleet start` makes it, or point "
        "IOLAB_FLEET_TOKEN at one"
    )


def refused(path: Path, why: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The token is refused in that one line."""
    monkeypatch.setenv("IOLAB_FLEET_TOKEN", str(path))
    with pytest.raises(cluster.UntrustedToken) as caught:
        cluster.token_file()
    assert f"error: {caught.value}" == refusal(path, why)
    assert caught.value.exit_code == 2


def nobodys_token(base: Path) -> Path:
    """nobody's token file (mode 644) in a world-writable sticky directory: the issue's case."""
    shared = base / "x"
    shared.mkdir()
    shared.chmod(0o1777)
    path = shared / "tok"
    wrote = subprocess.run(
        ["runuser", "-u", "nobody", "--", "sh", "-c", f"umask 022; echo {'cd' * 32} > {path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert wrote.returncode == 0, wrote.stderr
    assert (path.stat().st_uid, stat.S_IMODE(path.stat().st_mode)) == (NOBODY, 0o644)
    return path


@ROOT_ONLY
@WITH_RAY
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
@pytest.mark.parametrize("case", ["nobody's", "root's 644"])
def test_every_command_refuses_the_token_before_ray_starts(
    base: Path, argv: list[str], case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if case == "nobody's":
        path = nobodys_token(base)
        why = f"is owned by uid {NOBODY}, not by this user (uid {UID})"
    else:
        path = token(base / "tok", 0o644)
        why = "has mode 0644, not 0600 (or 0400)"
    monkeypatch.setenv("IOLAB_FLEET_TOKEN", str(path))
    with no_programs(monkeypatch) as tried:
        done = iolab(*argv)
    assert (done.code, done.error_lines) == (2, [refusal(path, why)])
    assert tried == []  # no `ray start`


@ROOT_ONLY
def test_a_token_nobody_wrote_in_a_sticky_directory_is_refused(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = nobodys_token(base)
    refused(path, f"is owned by uid {NOBODY}, not by this user (uid {UID})", monkeypatch)


@ROOT_ONLY
def test_a_root_token_of_mode_644_is_refused(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = token(base / "tok", 0o644)
    refused(path, "has mode 0644, not 0600 (or 0400)", monkeypatch)


@ROOT_ONLY
def test_a_token_of_this_user_in_a_directory_nobody_owns_is_refused(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = base / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY, NOBODY)  # nobody could swap the file for one of theirs
    path = token(theirs / "tok")
    refused(path, f"is in {theirs}, which is owned by uid {NOBODY}", monkeypatch)


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("group-readable", "has mode 0640, not 0600 (or 0400)"),
        ("world-readable", "has mode 0604, not 0600 (or 0400)"),
        ("executable", "has mode 0700, not 0600 (or 0400)"),
        ("symlink", "is a symbolic link"),
        ("fifo", "is not a regular file"),
        ("directory", "is not a regular file"),
        ("empty", "is empty"),
        ("sticky directory", "is in {base}/d, which is writable by others (mode 1777)"),
        ("group-writable directory", "is in {base}/d, which is writable by others (mode 0775)"),
        ("writable above", "is under {base}/d, which others can write (mode 0777)"),
    ],
)
def test_a_token_another_user_could_have_written_or_swapped_is_refused(
    base: Path, case: str, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = base / "d"
    d.mkdir(mode=0o700)
    path = d / "tok"
    if case == "group-readable":
        token(path, 0o640)
    elif case == "world-readable":
        token(path, 0o604)
    elif case == "executable":
        token(path, 0o700)
    elif case == "symlink":
        path.symlink_to(token(base / "good"))  # a good file, reached through a link
    elif case == "fifo":
        os.mkfifo(path, 0o600)  # would block a plain open: refused at once
    elif case == "directory":
        path.mkdir(mode=0o700)
    elif case == "empty":
        token(path, text=" \n")
    elif case == "sticky directory":
        token(path)
        d.chmod(0o1777)  # like /tmp: anyone may add a file, and remove their own
    elif case == "group-writable directory":
        token(path)
        d.chmod(0o775)
    elif case == "writable above":
        inner = d / "in"
        inner.mkdir(mode=0o700)
        path = token(inner / "tok")
        d.chmod(0o777)  # not sticky: anyone may rename `in` and put their own there
    refused(path, why.format(base=base), monkeypatch)


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_token_of_this_users_own_is_used(
    base: Path, mode: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = base / "home"
    home.mkdir(mode=0o700)
    path = token(home / "tok", mode)
    (base / "link").symlink_to(home)  # a link among the directories is resolved: Ray gets
    monkeypatch.setenv("IOLAB_FLEET_TOKEN", str(base / "link" / "tok"))  # the real path
    assert cluster.token_file() == path
    assert cluster._token_env(create=False) == {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(path),
    }


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o277])
def test_start_makes_the_token_private_whatever_the_umask(
    base: Path, umask: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = base / "new" / "tok"
    monkeypatch.setenv("IOLAB_FLEET_TOKEN", str(path))
    before = os.umask(umask)
    try:
        assert cluster.token_file(create=True) == path
    finally:
        os.umask(before)
    st = path.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (UID, 0o600)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 & ~umask
    text = path.read_text()
    assert len(text) == 64 and int(text, 16) >= 0
    assert cluster.token_file(create=True) == path  # used again, not made again
    assert path.read_text() == text


def test_start_makes_no_token_through_a_link_nor_in_a_directory_others_can_write(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = base / "d"
    d.mkdir(mode=0o700)
    path = d / "tok"
    target = base / "target"
    path.symlink_to(target)  # a dangling link where the token goes
    monkeypatch.setenv("IOLAB_FLEET_TOKEN", str(path))
    with pytest.raises(cluster.UntrustedToken) as caught:
        cluster.token_file(create=True)
    assert f"error: {caught.value}" == refusal(path, "is a symbolic link")
    assert not target.exists()  # nothing written through the link
    path.unlink()
    d.chmod(0o1777)
    with pytest.raises(cluster.UntrustedToken) as caught:
        cluster.token_file(create=True)
    assert f"error: {caught.value}" == refusal(
        path, f"is in {d}, which is writable by others (mode 1777)"
    )
    assert not path.exists()  # refused before anything was written there
