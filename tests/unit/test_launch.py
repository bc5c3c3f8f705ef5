"""The launcher: which directories a server user cannot reach, the command line, and the tie to
the parent (it dies with it, and notices a parent that died before the tie)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from iolab.system import launch


def test_blocked_ancestor_is_the_topmost_directory_the_user_cannot_enter(open_tmp: Path) -> None:
    outer = open_tmp / "outer"
    inner = outer / "inner"
    leaf = inner / "leaf"
    leaf.mkdir(parents=True)
    open_tmp.chmod(0o755)
    outer.chmod(0o700)
    inner.chmod(0o700)
    uid, gid = 65534, 65534  # nobody: owns none of them
    assert launch.blocked_ancestor(leaf, uid, gid) == outer
    assert launch.blocked_ancestor(outer, uid, gid) is None  # its own mode is not its parents'
    outer.chmod(0o711)
    assert launch.blocked_ancestor(leaf, uid, gid) == inner
    inner.chmod(0o751)
    assert launch.blocked_ancestor(leaf, uid, gid) is None


def test_owner_and_group_bits_count_for_their_user(open_tmp: Path) -> None:
    d = open_tmp / "d"
    (d / "x").mkdir(parents=True)
    open_tmp.chmod(0o755)
    d.chmod(0o710)
    st = d.stat()
    assert launch.can_enter(d, st.st_uid, st.st_gid + 1)  # the owner
    assert launch.can_enter(d, st.st_uid + 1, st.st_gid)  # the group
    assert not launch.can_enter(d, st.st_uid + 1, st.st_gid + 1)  # everyone else


def test_needs_view_lists_each_blocked_path_once_and_not_those_inside_another(
    open_tmp: Path,
) -> None:
    open_tmp.chmod(0o755)
    private = open_tmp / "p"
    (private / "a" / "b").mkdir(parents=True)
    (open_tmp / "open").mkdir()
    private.chmod(0o700)
    paths = [private / "a", private / "a" / "b", private / "a", open_tmp / "open"]
    assert launch.needs_view(paths, 65534, 65534) == [private / "a"]


def test_command_runs_this_file_tied_to_this_process_and_under_unshare_for_a_view() -> None:
    plain = launch.command(["fio", "--x"], death_signal="INT")
    assert plain[:4] == [sys.executable, "-I", "-S", launch.__file__]
    assert plain[4:] == ["--parent", str(os.getpid()), "--death-signal", "INT", "--", "fio", "--x"]
    argv = launch.command(
        ["postgres"], death_signal="TERM", user=(998, 997), view=[Path("/root/x")]
    )
    assert Path(argv[0]).name == "unshare"
    assert argv[1:5] == ["--mount", "--propagation", "private", "--"]
    i = argv.index(launch.__file__)
    assert argv[i + 1 :] == [
        "--parent", str(os.getpid()), "--death-signal", "TERM", "--uid", "998", "--gid", "997",
        "--path", "/root/x", "--", "postgres",
    ]  # fmt: skip


# A parent that starts the program through the launcher, prints its pid, then dies (os._exit,
# as by SIGKILL) either at once or once the program runs.
PARENT = """
import os, subprocess, sys, time
from iolab.system import launch
quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
child = subprocess.Popen(launch.command(["sleep", "{marker}"], death_signal="KILL"), **quiet)
print(child.pid, flush=True)
if {wait}:
    while not open(f"/proc/{{child.pid}}/cmdline", "rb").read().startswith(b"sleep"):
        time.sleep(0.01)
os._exit(0)
"""


def _alive(pid: int, marker: str) -> bool:
    try:
        return marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _gone_soon(pid: int, marker: str) -> bool:
    for _ in range(200):
        if not _alive(pid, marker):
            return True
        time.sleep(0.025)
    return False


def test_a_program_dies_with_its_parent_even_by_sigkill() -> None:
    marker = "301.5"
    out = subprocess.run([sys.executable, "-c", PARENT.format(marker=marker, wait=True)],
                         capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    assert _gone_soon(int(out.stdout), marker)


def test_a_parent_dead_before_the_tie_is_noticed_and_nothing_runs() -> None:
    """The parent dies while the launcher starts (before it can set its parent-death signal): the
    launcher sees a new parent and never starts the program."""
    marker = "302.5"
    out = subprocess.run([sys.executable, "-c", PARENT.format(marker=marker, wait=False)],
                         capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    pid = int(out.stdout)
    assert _gone_soon(pid, "launch.py")
    assert not _alive(pid, marker)
