from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from iolab import ownership
from iolab.events import Collect


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_reap_removes_only_orphans_of_its_kind(tmp_path: Path) -> None:
    mine = tmp_path / ownership.owned_name("disk")
    mine.write_text("live")
    tag = mine.name.split("-")[3]
    orphan = tmp_path / f".iolab-disk-{_dead_pid()}-{tag}-deadbeef"
    orphan.write_text("left by a killed run")
    other_kind = tmp_path / f".iolab-pg-{_dead_pid()}-{tag}-deadbeef"
    other_kind.mkdir()
    foreign = tmp_path / "important.dat"
    foreign.write_text("user data")
    lookalike = tmp_path / ".iolab-disk-notapid"
    lookalike.write_text("not ours")

    removed = ownership.reap(tmp_path, "disk")

    assert removed == [orphan]
    assert mine.exists() and other_kind.exists() and foreign.exists() and lookalike.exists()
    assert ownership.reap(tmp_path, "pg") == [other_kind]


def test_owned_names_carry_this_process() -> None:
    name = ownership.owned_name("disk")
    assert name.startswith(f".iolab-disk-{os.getpid()}-")
    assert not ownership.is_orphan(Path(name), "disk")


def _as_nobody(directory: Path, script: str) -> None:
    """Run ``script`` (sh) as the real ``nobody`` in ``directory``."""
    nobody = pwd.getpwnam("nobody")
    subprocess.run(
        ["/bin/sh", "-c", script],
        cwd=directory,
        user=nobody.pw_uid,
        group=nobody.pw_gid,
        extra_groups=[],
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (nobody)")
def test_reap_leaves_what_another_user_made_with_iolabs_name(open_tmp: Path) -> None:
    sticky = open_tmp / "tmp"  # a /tmp of the test's own: world-writable, sticky
    sticky.mkdir()
    sticky.chmod(0o1777)
    tag = ownership.owned_name("disk").split("-")[3]
    theirs = [f".iolab-{kind}-{_dead_pid()}-{tag}-0badc0de" for kind in ("pgbenchlog", "populate")]
    link = f".iolab-output-{_dead_pid()}-{tag}-0badc0de"
    _as_nobody(
        sticky,
        " && ".join(f"mkdir {n} && echo theirs > {n}/keep" for n in theirs)
        + f" && ln -s {open_tmp} {link}",
    )
    mine = sticky / f".iolab-pgbenchlog-{_dead_pid()}-{tag}-00c0ffee"  # root's own orphan
    mine.mkdir()
    elsewhere = open_tmp / "elsewhere"  # what a link inside root's orphan points to
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("not in the orphan")
    (mine / "link").symlink_to(elsewhere)
    (mine / "log").write_text("left by a killed run")
    seen = Collect()

    assert ownership.reap(sticky, "pgbenchlog", events=seen) == [mine]
    assert ownership.reap(sticky, "populate", events=seen) == []
    assert ownership.reap(sticky, "output", events=seen) == []
    assert ownership.reap(sticky, "pgbenchlog", events=seen) == []  # said once

    for name in theirs:
        assert (sticky / name / "keep").read_text() == "theirs\n"
        assert (sticky / name).stat().st_uid == pwd.getpwnam("nobody").pw_uid
    assert (sticky / link).is_symlink()
    assert (elsewhere / "keep").read_text() == "not in the orphan"  # rmtree never followed it
    assert not mine.exists()
    assert seen.warnings() == [
        f"{sticky / name} has iolab's name but another user's owner (nobody, uid 65534): "
        "not iolab's, left in place"
        for name in (*theirs, link)
    ]
