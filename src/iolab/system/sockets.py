"""The TCP ports processes of this machine listen on, and on which address, read from /proc:
their sockets (``/proc/PID/fd``) matched with the listening ones of their network namespace
(``/proc/PID/net/tcp`` and ``tcp6``). Used to tell a port bound to one address from one bound
to every interface (``0.0.0.0``, ``::``)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
LISTEN = "0A"  # the TCP state of a listening socket in /proc/net/tcp


@dataclass(frozen=True)
class Listening:
    pid: int
    address: str  # "0.0.0.0", "::", "127.0.0.1", ...
    port: int

    @property
    def every_interface(self) -> bool:
        return ipaddress.ip_address(self.address).is_unspecified


def listening(pids: Iterable[int]) -> list[Listening]:
    """The TCP ports ``pids`` listen on (a process that ends meanwhile is left out)."""
    out = set()
    for pid in pids:
        inodes = _socket_inodes(pid)
        if not inodes:
            continue
        for name in ("tcp", "tcp6"):
            try:
                lines = (PROC / str(pid) / "net" / name).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if fields[3] != LISTEN or fields[9] not in inodes:
                    continue
                host, port = fields[1].split(":")
                out.add(Listening(pid, _address(host), int(port, 16)))
    return sorted(out, key=lambda s: (s.port, s.address, s.pid))


def _socket_inodes(pid: int) -> set[str]:
    fds = PROC / str(pid) / "fd"
    found: set[str] = set()
    try:
        names = os.listdir(fds)
    except OSError:
        return found
    for fd in names:
        try:
            target = os.readlink(fds / fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[8:-1])
    return found


def _address(hexed: str) -> str:
    """An address as /proc/net/tcp* writes it: 32-bit words in the host's byte order."""
    raw = bytes.fromhex(hexed)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))
