"""`iolab testbed down` on forged state files: nothing iolab did not make is deleted, unmounted or
removed, whatever the state file says, and each thing left is named in a warning. A state
directory or file that others could have written is refused outright.

Real `iolab testbed down` processes on real files, directories and a real tmpfs mount; no loop
device is needed (none of it is iolab's)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab.testbed import parse_devices
from iolab.testbed.cgroups import find_hierarchy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.geteuid() != 0,
        reason="the forged states name root-owned files and a tmpfs mount: the test needs root",
    ),
    pytest.mark.skipif(shutil.which("losetup") is None, reason="util-linux's losetup is missing"),
]
IOLAB = [sys.executable, "-m", "iolab"]


@pytest.fixture
def place() -> Iterator[Path]:
    """A directory of its own under /var/tmp (0755, root's), holding the state and the victims."""
    base = Path(tempfile.mkdtemp(prefix="iolab-test-forgery-", dir="/var/tmp"))
    base.chmod(0o755)
    (base / "st").mkdir(mode=0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def down(state_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, "testbed", "down"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "IOLAB_TESTBED_DIR": str(state_dir)},
    )


def device(name: str, backing_dir: Path, **fields: Any) -> dict[str, Any]:
    (spec,) = parse_devices({name: {"size": "64MiB", "backing_dir": str(backing_dir)}})
    doc: dict[str, Any] = {
        "spec": spec.as_json(),
        "backing_file": str(backing_dir / f".iolab-testbed-{name}-0badf00d.img"),
        "mount_point": "",
        "backing_id": None,
        "token": "",
        "loop": None,
        "dev": None,
        "formatted": True,
        "mounted": True,
        "direct_io": True,
        "created_by": 1,
        "boot_id": "",
    }
    doc.update(fields)
    return doc


def forge(state_dir: Path, devices: dict[str, dict[str, Any]], cgroup: Any = None) -> Path:
    path = state_dir / "state.json"
    path.write_text(json.dumps({"format": 1, "devices": devices, "cgroup": cgroup}))
    path.chmod(0o600)
    return path


def victim_file(where: Path, name: str = "victim") -> Path:
    path = where / name
    path.write_text("precious")
    path.chmod(0o600)
    return path


def warnings_of(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return " ".join(done.stderr.split())  # the progress view may wrap long lines


def test_files_named_in_a_forged_state_are_left(place: Path) -> None:
    st = place / "st"
    plain = victim_file(place)  # the example: no token, no inode
    known = victim_file(place, "known")  # its real inode recorded, but no token
    marked = victim_file(place, "marked")  # inode and a token, but no mark on the file
    # a name like iolab's own, never marked
    lookalike = victim_file(place, ".iolab-testbed-d-0badf00d.img")
    forge(
        st,
        {
            "a": device("a", place, backing_file=str(plain), mount_point=str(st / "mnt" / "a")),
            "b": device(
                "b",
                place,
                backing_file=str(known),
                backing_id=[os.stat(known).st_dev, os.stat(known).st_ino],
                mount_point=str(st / "mnt" / "b"),
            ),
            "c": device(
                "c",
                place,
                backing_file=str(marked),
                backing_id=[os.stat(marked).st_dev, os.stat(marked).st_ino],
                token="0123456789abcdef",
                mount_point=str(st / "mnt" / "c"),
            ),
            "d": device("d", place, backing_file=str(lookalike), mount_point=str(st / "mnt" / "d")),
        },
    )
    done = down(st)
    assert "is left in place (see the warnings)" in done.stdout
    text = warnings_of(done)
    for victim in (plain, known, marked, lookalike):
        assert victim.read_text() == "precious"
        assert stat.S_IMODE(victim.stat().st_mode) == 0o600
        assert f"left {victim} in place" in text, text
    assert not (st / "state.json").exists()  # the forged records are forgotten, not obeyed


def test_directories_and_mounts_named_in_a_forged_state_are_left(place: Path) -> None:
    st = place / "st"
    empty = place / "empty"  # an empty directory of someone else's, named as a mount point
    empty.mkdir()
    group = place / "group"  # and one named as the testbed's cgroup
    group.mkdir()
    mounted = place / "mounted"  # a mount of someone else's, with its device number
    mounted.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mounted)], check=True)
    try:
        (mounted / "data").write_text("theirs")
        dev = os.stat(mounted).st_dev
        forge(
            st,
            {
                "a": device("a", place, mount_point=str(empty)),
                "b": device(
                    "b",
                    place,
                    mount_point=str(mounted),
                    loop="/dev/loop7",
                    dev=[os.major(dev), os.minor(dev)],
                ),
            },
            cgroup={"version": "v2", "path": str(group)},
        )
        text = warnings_of(down(st))
        assert empty.is_dir()
        assert group.is_dir() and list(group.iterdir()) == []  # no io.max written into it
        assert (mounted / "data").read_text() == "theirs"  # still mounted
        assert os.stat(mounted).st_dev == dev
        for left in (empty, group, mounted):
            assert f"left {left} in place" in text, text
    finally:
        subprocess.run(["umount", str(mounted)], check=False)


def test_a_forged_cgroup_next_to_iolabs_is_left(place: Path) -> None:
    """A directory in the cgroup hierarchy that is not the testbed's own name."""
    hierarchy = find_hierarchy()
    if hierarchy is None:
        pytest.skip("no cgroup hierarchy with the blkio or io controller here")
    st = place / "st"
    theirs = hierarchy.mount_point / f"not-iolab-{os.getpid()}"
    theirs.mkdir()
    try:
        forge(st, {}, cgroup={"version": hierarchy.version, "path": str(theirs)})
        text = warnings_of(down(st))
        assert theirs.is_dir()
        assert f"left {theirs} in place" in text
    finally:
        theirs.rmdir()


@pytest.mark.parametrize("what", ["directory writable by others", "file of another user"])
def test_a_state_others_could_write_is_refused(place: Path, what: str) -> None:
    st = place / "st"
    victim = victim_file(place)
    state = forge(st, {"a": device("a", place, backing_file=str(victim))})
    if what == "directory writable by others":
        st.chmod(0o777)
        why = f"the testbed's state directory {st} is writable by others (mode 0777)"
    else:
        os.chown(state, 65534, 65534)
        why = f"the testbed's state file {state} is owned by uid 65534"
    done = down(st)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert why in lines[0], lines[0]
    assert victim.read_text() == "precious"
    assert state.exists()  # left for the owner to look at
    status = subprocess.run(
        [*IOLAB, "testbed", "status"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "IOLAB_TESTBED_DIR": str(st)},
    )
    assert status.returncode == 2 and why in status.stderr
