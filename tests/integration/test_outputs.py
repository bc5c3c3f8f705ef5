"""An output that cannot be written whole leaves the file it would replace as it was: `iolab
export` and `iolab report --html` onto a full tmpfs end in one line naming the option, exit 2,
the old output byte-identical and no scratch file left (cli/output.py). The refusals of
paths that are not iolab's are in tests/unit/test_outputs.py and the bad-input tables."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import small_tmpfs

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]
NAME = "populate sqlite"


def iolab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, *args], capture_output=True, text=True, timeout=300, check=False, cwd=cwd
    )


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small", "1m") as mnt:
        yield mnt


def fill(directory: Path) -> None:
    """Write until the filesystem has no block left."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_failed_write_leaves_the_old_output_whole(tmp_path: Path, full_tmpfs: Path) -> None:
    db = tmp_path / "e.db"
    seeded = iolab(
        "populate", "--rows", "200", "--connections", "2", "--no-probes", "--results", str(db),
        cwd=tmp_path,
    )  # fmt: skip
    assert seeded.returncode == 0, seeded.stderr
    out = full_tmpfs / "runs.csv"
    first = iolab("export", NAME, "-o", str(out), "--results", str(db), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = out.read_bytes()
    assert before.startswith(b"run,cell,status,")
    fill(full_tmpfs)
    for argv, option in (
        (["export", NAME, "--format", "json", "-o", str(out)], "--output"),
        (["report", NAME, "--html", str(out)], "--html"),
    ):
        done = iolab(*argv, "--results", str(db), cwd=tmp_path)
        line = (
            f"error: {option}: {str(out)!r} is not allowed; name a file you can write "
            "(No space left on device)"
        )
        assert (done.returncode, done.stderr.strip().splitlines()) == (2, [line]), done.stderr
        assert out.read_bytes() == before
        assert sorted(p.name for p in full_tmpfs.iterdir()) == ["filler", "runs.csv"]
