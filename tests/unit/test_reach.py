"""Which directories a server user cannot reach, and the command that gives it a view of them."""

from __future__ import annotations

import os
from pathlib import Path

from iolab.system import reach


def test_blocked_ancestor_is_the_topmost_directory_the_user_cannot_enter(open_tmp: Path) -> None:
    outer = open_tmp / "outer"
    inner = outer / "inner"
    leaf = inner / "leaf"
    leaf.mkdir(parents=True)
    open_tmp.chmod(0o755)
    outer.chmod(0o700)
    inner.chmod(0o700)
    uid, gid = 65534, 65534  # nobody: owns none of them
    assert reach.blocked_ancestor(leaf, uid, gid) == outer
    assert reach.blocked_ancestor(outer, uid, gid) is None  # its own mode is not its parents'
    outer.chmod(0o711)
    assert reach.blocked_ancestor(leaf, uid, gid) == inner
    inner.chmod(0o751)
    assert reach.blocked_ancestor(leaf, uid, gid) is None


def test_owner_and_group_bits_count_for_their_user(open_tmp: Path) -> None:
    d = open_tmp / "d"
    (d / "x").mkdir(parents=True)
    open_tmp.chmod(0o755)
    d.chmod(0o710)
    st = d.stat()
    assert reach.can_enter(d, st.st_uid, st.st_gid + 1)  # the owner
    assert reach.can_enter(d, st.st_uid + 1, st.st_gid)  # the group
    assert not reach.can_enter(d, st.st_uid + 1, st.st_gid + 1)  # everyone else


def test_needs_view_lists_each_blocked_path_once_and_not_those_inside_another(
    open_tmp: Path,
) -> None:
    open_tmp.chmod(0o755)
    private = open_tmp / "p"
    (private / "a" / "b").mkdir(parents=True)
    (open_tmp / "open").mkdir()
    private.chmod(0o700)
    paths = [private / "a", private / "a" / "b", private / "a", open_tmp / "open"]
    assert reach.needs_view(paths, 65534, 65534) == [private / "a"]


def test_command_runs_the_helper_under_unshare_as_root() -> None:
    argv = reach.command([Path("/root/x")], 998, 997, ["setpriv", "--", "postgres"])
    assert Path(argv[0]).name == "unshare"
    assert argv[1:5] == ["--mount", "--propagation", "private", "--"]
    i = argv.index("iolab.system.reach")
    assert argv[i + 1 :] == [
        "--uid", "998", "--gid", "997", "--path", "/root/x", "--", "setpriv", "--", "postgres"
    ]  # fmt: skip
    assert os.path.isabs(argv[i - 2])  # this very interpreter
