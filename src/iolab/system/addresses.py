"""This machine's IP addresses, as the kernel lists them (``/proc/net``): what a server
listening on every address (``0.0.0.0``, ``::``) can be reached at."""

from __future__ import annotations

import ipaddress
import itertools
from pathlib import Path

FIB_TRIE = Path("/proc/net/fib_trie")
IF_INET6 = Path("/proc/net/if_inet6")
LINK_SCOPE = 0x20  # if_inet6's scope of fe80::/10 addresses (reachable only with an interface)


def addresses(version: int) -> list[str]:
    """The addresses of IP ``version`` (4 or 6) of this machine, loopback last; link-local
    IPv6 addresses are left out (a link to one needs the interface's name)."""
    found: list[ipaddress.IPv4Address] | list[ipaddress.IPv6Address] = (
        _ipv4() if version == 4 else _ipv6()
    )
    unique = sorted({(a.is_loopback, int(a), str(a)) for a in found})
    return [text for _, _, text in unique]


def _ipv4() -> list[ipaddress.IPv4Address]:
    """Every ``/32 host LOCAL`` entry of the routing trie: an address of an interface."""
    try:
        lines = FIB_TRIE.read_text().splitlines()
    except OSError:
        return []
    found = []
    for before, line in itertools.pairwise(lines):
        if line.strip() == "/32 host LOCAL" and before.strip().startswith("|--"):
            found.append(ipaddress.IPv4Address(before.strip().removeprefix("|--").strip()))
    return found


def _ipv6() -> list[ipaddress.IPv6Address]:
    try:
        lines = IF_INET6.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and int(fields[3], 16) != LINK_SCOPE:
            found.append(ipaddress.IPv6Address(int(fields[0], 16)))
    return found
