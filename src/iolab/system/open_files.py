"""The open-file limit (``ulimit -n``): raised to its hard limit when iolab starts, and checked
against what a load's connections need before anything is recorded.

A loader connection holds open files (a socket to a server; SQLite's database and WAL files,
each of them, per connection); servers iolab starts inherit the limit too. Past the limit,
opening a connection fails deep in the engine ("unable to open database file").
"""

from __future__ import annotations

import resource

from iolab.errors import BadInput

# What iolab and its probes hold besides the loaders (the results database and its -wal and
# -shm, /proc files, the server's log, probe connections): a SQLite load of one connection
# ran with a limit of 16, one of 100 connections needed 230; rounded up.
BASE = 64


def raise_to_hard() -> int:
    """Raise this process's soft limit of open files to the hard one (programs it starts
    inherit it); the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # as it was; the check says what is missing
    return soft


def check_connections(option: str, connections: int, per_connection: int) -> None:
    """Refuse ``connections`` that would each hold ``per_connection`` open files when even the
    hard limit cannot take them; the soft limit is raised to the hard one first."""
    limit = raise_to_hard()
    if limit == resource.RLIM_INFINITY:
        return
    need = BASE + connections * per_connection
    if need <= limit:
        return
    most = (limit - BASE) // max(1, per_connection)
    noun = "connection needs" if connections == 1 else "connections need"
    said = (
        f"{connections:,} {noun} about {need:,} open files and this process may open "
        f"{limit:,} (`ulimit -n`, already raised to its hard limit)"
    )
    raising = "(`ulimit -Hn` as root, or nofile in /etc/security/limits.conf)"
    if most < 1:
        raise BadInput(
            option,
            connections,
            f"{said}: the open-file limit is too low for even one connection; raise the hard "
            f"limit to at least {need:,} {raising}",
        )
    raise BadInput(
        option, connections, f"{said}: give at most {most:,}, or raise the hard limit {raising}"
    )
