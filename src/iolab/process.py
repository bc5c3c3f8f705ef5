"""The one way iolab runs other programs: every call keeps stderr for the error message."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import MissingTool, RunFailed


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def require(program: str, how: str) -> str:
    """The path of ``program`` on PATH, or a MissingTool error saying how to install it."""
    found = shutil.which(program)
    if found is None:
        raise MissingTool(program, how)
    return found


def run(
    argv: Sequence[str | Path],
    *,
    check: bool = True,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input_text: str | None = None,
    stop_signal: int | None = None,
) -> Completed:
    """Run a program to completion, capturing both streams.

    With ``check`` a non-zero exit raises RunFailed carrying the tail of stderr, so the user sees
    what the program said instead of an exit status alone. When iolab is interrupted (Ctrl-C, a
    time-out) while the program runs, the program gets ``stop_signal`` first, and a few seconds
    to end, before SIGKILL: a program that forks workers (fio) stops them itself, where a
    SIGKILL of its main process would leave them running.
    """
    args = tuple(str(a) for a in argv)
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
    except FileNotFoundError as exc:
        raise MissingTool(args[0], "install it or put it on PATH") from exc
    try:
        stdout, stderr = proc.communicate(input_text, timeout=timeout)
    except BaseException as exc:
        _stop(proc, stop_signal)
        if isinstance(exc, subprocess.TimeoutExpired):
            raise RunFailed(f"{args[0]} did not finish within {timeout:.0f} s") from exc
        raise
    done = Completed(args, proc.returncode, stdout, stderr)
    if check and proc.returncode != 0:
        name = Path(args[0]).name
        raise RunFailed(f"{name} failed (exit {proc.returncode}): {tail(done.stderr)}")
    return done


def _stop(proc: subprocess.Popen[str], stop_signal: int | None, grace: float = 10.0) -> None:
    """End a program iolab no longer waits for: ``stop_signal`` and ``grace`` seconds, then
    SIGKILL."""
    try:
        if proc.poll() is None and stop_signal is not None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(stop_signal)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=grace)
    finally:  # a second Ctrl-C while it stops still ends it
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def tail(text: str, lines: int = 5) -> str:
    """The last non-empty lines of a program's output, joined for a one-line message."""
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"
