"""What every row of the bad-input suites asserts: exit 2, one line naming the option or key,
no traceback, and nothing recorded in the results database."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

IOLAB = [sys.executable, "-m", "iolab"]


def iolab(*args: str, cwd: Path, results: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        check=False,
        env={**os.environ, "IOLAB_RESULTS": str(results)},
    )


def recorded(results: Path) -> list[tuple[str, int]]:
    """(table, rows) of the results database's experiments and runs that hold anything."""
    if not results.exists():
        return []
    with sqlite3.connect(results) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        counts = [
            (t, int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]))
            for t in ("experiments", "cells", "runs")
            if t in tables
        ]
    return [(t, n) for t, n in counts if n]


def assert_refused(done: subprocess.CompletedProcess[str], names: str, results: Path) -> None:
    """Exit 2; stderr names ``names``; one line starting ``error:`` (the argument parser's
    refusals too); no traceback; nothing recorded."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert names in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert recorded(results) == []
