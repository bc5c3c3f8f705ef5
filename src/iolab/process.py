"""The one way iolab runs other programs: every call keeps stderr for the error message."""

from __future__ import annotations

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
) -> Completed:
    """Run a program to completion, capturing both streams.

    With ``check`` a non-zero exit raises RunFailed carrying the tail of stderr, so the user sees
    what the program said instead of an exit status alone.
    """
    args = tuple(str(a) for a in argv)
    try:
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            input=input_text,
            check=False,
        )
    except FileNotFoundError as exc:
        raise MissingTool(args[0], "install it or put it on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise RunFailed(f"{args[0]} did not finish within {timeout:.0f} s") from exc
    done = Completed(args, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        name = Path(args[0]).name
        raise RunFailed(f"{name} failed (exit {proc.returncode}): {tail(done.stderr)}")
    return done


def tail(text: str, lines: int = 5) -> str:
    """The last non-empty lines of a program's output, joined for a one-line message."""
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"
