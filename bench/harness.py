"""What the benches' ``main`` functions share: the scratch directory their server runs in, the
ending of a bench that fails or is interrupted (one line and an exit status, never a traceback,
the directory removed), and the machine's state said beside the figures."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ParamSpec

from iolab.errors import IolabError

P = ParamSpec("P")


def one_line(main: Callable[P, int]) -> Callable[P, int]:
    """``main`` whose IolabError (bad input, a failed run) ends it as ``error: ...`` and the
    error's exit status, and whose Ctrl-C ends it with 130 (its server stopped and its scratch
    directory removed by then: :func:`running` and :func:`scratch_dir` clean up on the way)."""

    @functools.wraps(main)
    def run(*args: P.args, **kwargs: P.kwargs) -> int:
        try:
            return main(*args, **kwargs)
        except IolabError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("interrupted; server stopped and its files removed", file=sys.stderr)
            return 130

    return run


@contextmanager
def scratch_dir(prefix: str = "iolab-bench-") -> Iterator[Path]:
    """A new directory under /var/tmp for a bench's server and files (mode 755: the server's
    user reaches its directories inside), removed on every path out."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    try:
        base.chmod(0o755)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages, ``0.52 0.61 0.70``."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def machine() -> str:
    """``2 CPUs · load average 0.52 0.61 0.70``: said with every bench's figures (read at the
    end of the measurement), so a figure taken on a busy machine shows it."""
    return f"{os.cpu_count()} CPUs · load average {load_average()}"
