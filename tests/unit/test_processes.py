"""The process table from /proc: a real tree of this test's own children (sleep), found by
an argument, with every process under them, and stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from iolab.system import processes


def test_a_tree_found_by_its_argument_is_stopped_and_its_parents_are_not() -> None:
    marker = f"iolab-test-tree-{os.getpid()}-{time.monotonic_ns()}"
    # a parent (sh, naming the marker) with a child (sleep) that does not name it
    parent = subprocess.Popen(["sh", "-c", f"sleep 60 & wait # {marker}"])
    try:
        deadline = time.monotonic() + 10
        while True:
            procs = processes.listing()
            kids = [p for p in procs if p.ppid == parent.pid]
            if kids or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        (child,) = kids
        assert child.argv == ("sleep", "60")
        roots = processes.matching(lambda p: any(marker in a for a in p.argv), procs)
        assert roots == [parent.pid]
        tree = processes.with_children(roots, procs)
        assert tree == sorted([parent.pid, child.pid])
        mine = processes.ancestors(os.getpid(), procs)
        assert os.getpid() in mine and os.getppid() in mine
        assert not set(tree) & mine
        assert processes.stop(tree, grace=10) == []  # both ended on SIGTERM
        parent.wait(timeout=10)
        assert _zombie(child.pid)  # gone, or waiting for its parent to reap it
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_stop_kills_what_ignores_sigterm() -> None:
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
        assert processes.stop([stubborn.pid], grace=0.5) == [stubborn.pid]
        assert not processes.alive(stubborn.pid)  # exited by the time stop returns
        assert stubborn.wait(timeout=10) == -9
    finally:
        if stubborn.poll() is None:
            stubborn.kill()
            stubborn.wait()


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2 :].split()[0] == "Z"
