"""What a fleet accepts as a host's name, a port and an address, checked before Ray is asked.

One way for every place a name or an address comes in (``--name``, the matrix key ``host``,
``[fleet] hosts``, ``--fleet``, ``[fleet] address``, ``fleet status --address``, ``fleet join
HEAD``, ``fleet start --port`` and ``--node-ip-address``): a refusal names the option or key, the
value and what is allowed. Ray is not imported here (the experiment files use it too).
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket

from iolab.errors import BadInput

HOST_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
HOST_NAME_RULE = "give a host name of 1 to 64 letters, digits, '-', '_' or '.'"
ADDRESS_RULE = (
    "give HOST:PORT (HOST a name or an IPv4 address, or an IPv6 address in brackets, "
    "e.g. [fd00::1]:6379; PORT 1 to 65535)"
)
PORT_RULE = "give a port from 1 to 65535"
_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def host_name(value: object, field: str) -> str:
    """A host's name in the fleet (Ray's resource ``iolab-host:NAME``, a cell's ``host``)."""
    if not isinstance(value, str) or HOST_NAME.fullmatch(value) is None:
        raise BadInput(field, value, HOST_NAME_RULE)
    return value


def port(value: int, field: str) -> int:
    if not 1 <= value <= 65535:
        raise BadInput(field, value, PORT_RULE)
    return value


def _host_part(host: str) -> bool:
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return False
        return True
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        pass
    else:
        return True
    if host.replace(".", "").isdigit():  # looks like an IPv4 address but is not one
        return False
    labels = host.removesuffix(".").split(".")
    return len(host) <= 253 and all(_LABEL.fullmatch(label) for label in labels)


def split(value: str) -> tuple[str, int] | None:
    """HOST and PORT of ``HOST:PORT`` (IPv6 in brackets, kept), or None when it is not one."""
    host, sep, digits = value.rpartition(":")
    if not sep or not digits.isascii() or not digits.isdigit() or not _host_part(host):
        return None
    number = int(digits)
    return (host, number) if 1 <= number <= 65535 else None


def address(value: str, field: str, *, auto: bool = True) -> str:
    """A fleet's address: ``HOST:PORT`` (the head's GCS), ``ray://HOST:PORT``, or ``auto``
    (the fleet started on this machine) where ``auto`` is true."""
    if auto and value == "auto":
        return value
    if split(value.removeprefix("ray://") if auto else value) is None:
        allowed = ADDRESS_RULE + (", ray://HOST:PORT or auto" if auto else "")
        raise BadInput(field, value, allowed)
    return value


def node_ip(value: str, field: str) -> str:
    """An IP address of this machine, the one a node is reached at (Ray binds to it)."""
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        raise BadInput(field, value, "give an IP address of this machine, e.g. 10.0.0.11") from None
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((str(ip), 0))
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                raise BadInput(
                    field,
                    value,
                    "give an IP address of this machine (`ip -brief address` lists them)",
                ) from None
            raise
    return str(ip)


def port_free(node: str | None, number: int, field: str) -> None:
    """Refuse a port something already listens on here (a fleet's head, another program)."""
    where = node or "0.0.0.0"
    family = socket.AF_INET6 if ":" in where else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no obstacle
        try:
            s.bind((where, number))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise BadInput(
                    field, number, f"give a port this machine lets iolab listen on ({exc.strerror})"
                ) from None
            raise BadInput(
                field,
                number,
                f"port {number} is in use on {where} (a fleet's head started here already, or "
                "another program): stop it with `iolab fleet stop`, or give another --port",
            ) from None
