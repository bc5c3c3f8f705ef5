from __future__ import annotations

import os
import subprocess
from pathlib import Path

from iolab import ownership


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
