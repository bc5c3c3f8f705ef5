"""A verdict is part of the run (issue 46 item 0), end to end: a populate run on SQLite is
stored with its verdict against the real `iolab disk` run of its directory's device; a new
disk run of the same directory leaves `results show` of the populate run byte for byte as it
was, citing the same disk run; `--with-disk` recomputes against the new one and says so."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed"),
]
IOLAB = [sys.executable, "-m", "iolab"]
QUICK = ["--size", "16MiB", "--runs", "1", "--duration", "1", "--interval", "0"]


def iolab(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160", "NO_COLOR": "1"}
    return subprocess.run(
        [*IOLAB, *args], capture_output=True, text=True, env=env, timeout=600, check=False
    )


def disk(target: Path) -> int:
    done = iolab("disk", str(target), "--profile", "real", *QUICK, "--json")
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["run"])


def verdict(shown: str) -> list[str]:
    """The verdict's lines of `results show`: from "limited by" to where it says whence."""
    lines = shown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("limited by"))
    end = next(i for i, line in enumerate(lines) if line.strip().startswith("verdict "))
    return lines[start : end + 1]


def test_a_new_disk_run_does_not_change_a_stored_runs_verdict(
    tmp_path: Path, results_db: Path
) -> None:
    target = tmp_path / "disk"  # on a block device (not tmpfs): the disk run measures it
    target.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    first = disk(target)
    done = iolab(
        "populate", "--engine", "sqlite", "--data-dir", str(data), "--rows", "3000", "--json"
    )
    assert done.returncode == 0, done.stderr
    run = int(json.loads(done.stdout)["run"])
    before = iolab("results", "show", str(run))
    assert before.returncode == 0, before.stderr
    said = verdict(before.stdout)
    assert said[0].startswith("limited by ")
    cited = re.search(
        r"verdict stored with the run \(([^)]+)\), against disk run (\d+) \((\w+)\)",
        " ".join(" ".join(said).split()),
    )
    assert cited is not None, said
    assert int(cited.group(2)) == first
    device = cited.group(3)

    second = disk(target)  # the same directory, measured after the run
    assert second > first
    after = iolab("results", "show", str(run))
    assert after.returncode == 0, after.stderr
    assert verdict(after.stdout) == said
    assert after.stdout == before.stdout
    doc = json.loads(iolab("results", "show", str(run), "--json").stdout)
    assert doc["verdict"]["basis"] == "stored"
    assert doc["verdict"]["disk_runs"] == {device: first}

    again = iolab("results", "show", str(run), "--with-disk", str(second))
    assert again.returncode == 0, again.stderr
    flat = " ".join(again.stdout.split())
    assert (
        f"verdict recomputed now against disk run {second} ({device}) (--with-disk); not stored"
        in flat
    )
    assert "the verdict kept with the run: " + said[0] in flat
    # ... and keeps nothing of it
    assert iolab("results", "show", str(run)).stdout == before.stdout
