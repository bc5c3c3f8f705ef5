"""The ``iolab`` command in-process: :func:`iolab.cli.main.run`, the real entry point (typer's
parsing, and iolab's errors mapped to one line and an exit code), with argv, environment and
the standard streams swapped by typer's ``CliRunner``. No subprocess: a call takes
milliseconds.

:func:`no_programs` makes starting any program fail the test, so a case that gets past the
argument checks by mistake cannot start fio or a server.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from iolab.cli import main


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def iolab(*args: str, env: Mapping[str, str | None] | None = None) -> Result:
    """Run ``iolab ARGS`` as the console script does; its exit code and output."""
    runner = CliRunner()
    handler = signal.getsignal(signal.SIGTERM)
    argv, script = sys.argv, sys.modules["__main__"]
    # a wide terminal, so --help's panels do not wrap what the tests look for
    environment = {"COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    try:
        with runner.isolation(env=environment) as streams:
            sys.argv = ["iolab", *args]
            # the console script's __main__ (no package), so usage lines say "iolab", not
            # "python -m pytest"
            sys.modules["__main__"] = ModuleType("__main__")
            try:
                main.run()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            out, err = streams[0].getvalue(), streams[1].getvalue()
    finally:
        sys.argv = argv
        sys.modules["__main__"] = script
        signal.signal(signal.SIGTERM, handler)
    return Result(code, out.decode(), err.decode())


@contextmanager
def no_programs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Within: any program started (subprocess, os.exec*, os.posix_spawn*) fails the test;
    yields the argument lists that were tried."""
    tried: list[list[str]] = []

    def refuse(args: Any, *_rest: Any, **_kw: Any) -> Any:
        tried.append([str(a) for a in args] if isinstance(args, list | tuple) else [str(args)])
        raise AssertionError(f"a unit test started a program: {args!r}")

    def refuse_child(_self: Any, args: Any, *_rest: Any, **_kw: Any) -> Any:
        return refuse(args)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse_child)
    for name in ("posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, lambda path, *rest, **kw: refuse([path]))
    yield tried


def needs(module: str, extra: str) -> pytest.MarkDecorator:
    """Skip where ``module`` of iolab's ``extra`` is not installed (`pip install -e '.[dev]'`
    alone, as CI's second venv): the command refuses for want of it before what the test is
    about."""
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None, reason=f"needs the {extra} extra ({module})"
    )
