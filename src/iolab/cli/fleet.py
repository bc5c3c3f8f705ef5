"""``iolab fleet``: the hosts that run one experiment together (Ray; ``iolab[fleet]``)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from iolab.cli.console import stderr as err
from iolab.cli.console import stdout as out
from iolab.cli.options import JsonOption
from iolab.units import format_bytes

app = typer.Typer(
    help="A fleet of hosts that run one experiment together (`iolab run FILE --fleet auto`), "
    "each run on one host, every result in one results database. Built on Ray: needs "
    "`pip install 'iolab[fleet]'`. A fleet belongs on a private network; see docs/fleet.md.",
    no_args_is_help=True,
)

AddressOption = Annotated[
    str,
    typer.Option(
        "--address",
        metavar="ADDRESS",
        help="The fleet: `auto` (the one started on this machine), HOST:PORT or ray://...",
    ),
]
NameOption = Annotated[
    str,
    typer.Option(
        "--name",
        help="This host's name in the fleet (matrix key `host`): 1 to 64 letters, digits, "
        "'-', '_' or '.', not one a host of the fleet has already.",
    ),
]
IpOption = Annotated[
    str | None,
    typer.Option(
        "--node-ip-address",
        metavar="IP",
        help="The IP address of this machine that the host is reached at (on the fleet's "
        "private network).",
        show_default=False,
    ),
]


@app.command("start")
def start(
    port: Annotated[
        int, typer.Option("--port", help="The head's port (Ray's GCS), 1 to 65535, free here.")
    ] = 6379,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="Also run experiment runs on this host, under this name.",
            show_default=False,
        ),
    ] = None,
    node_ip: IpOption = None,
) -> None:
    """Start the head of a fleet on this machine (a Ray head node, no dashboard, token
    authentication on; the token file is made if missing, mode 600: copy it to every host; a
    token file another user could read or write is refused). One head per user and machine:
    refused while this user's head runs here. Ray's sessions go to $RAY_TMPDIR/iolab-ray-UID
    (default /tmp), private to this user. Says which ports Ray binds to every interface: close
    them with a firewall (docs/fleet.md)."""
    from iolab.fleet import cluster

    address = cluster.start(port=port, name=name, node_ip=node_ip)
    out.print(f"fleet head at {escape(address)}; token file {escape(str(cluster.token_path()))}")
    out.print(f"on each host: iolab fleet join {escape(address)} --name NAME")
    host = address.rsplit(":", 1)[0].strip("[]")
    if node_ip is None:
        _warn(f"no --node-ip-address: Ray chose {host}; give the fleet's private address")
    elif host != node_ip:
        _warn(f"Ray replaced --node-ip-address {node_ip} by {host} (this machine's address)")
    _warn_exposed()


def _warn(text: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(text)}", soft_wrap=True)


def _warn_exposed() -> None:
    """One line when Ray listens on every interface (Ray 2.60 does for any address but
    127.0.0.1): the ports, and that a firewall must close them."""
    from iolab.fleet import cluster

    ports = cluster.exposed_ports()
    if ports:
        _warn(
            f"Ray listens on every interface here, ports {', '.join(map(str, ports))}: allow "
            "them only from the fleet's addresses with a firewall (docs/fleet.md, Security)"
        )


@app.command("join")
def join(
    head: Annotated[
        str,
        typer.Argument(
            metavar="HEAD", help="The head's HOST:PORT (IPv6 in brackets: [fd00::1]:6379)."
        ),
    ],
    name: NameOption,
    node_ip: IpOption = None,
) -> None:
    """Join this machine to the fleet as host NAME (it needs the head's token file, this
    user's own, mode 600). Refused while another process here joins a host of that name. Says
    which ports Ray binds to every interface: close them with a firewall (docs/fleet.md)."""
    from iolab.fleet import cluster

    cluster.join(head, name, node_ip=node_ip)
    out.print(f"joined the fleet at {escape(head)} as host {escape(name)}")
    if node_ip is None:
        _warn("no --node-ip-address: Ray chose this host's address; give its private address")
    _warn_exposed()


@app.command("status")
def status(
    address: AddressOption = "auto",
    directory: Annotated[
        list[str] | None,
        typer.Option(
            "--dir",
            metavar="DIR",
            help="Also show the free space of this directory on each host (repeatable).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """The hosts of the fleet: alive, busy (running a run) or idle, their iolab, Ray and
    Python versions, fio, and the free space of the directories asked for."""
    from rich.table import Table

    from iolab.fleet import cluster

    hosts = cluster.status(address, directory or [])
    if as_json:
        print(json.dumps({"hosts": [h.as_json() for h in hosts]}, indent=2))
        return
    table = Table(title="fleet", title_justify="left")
    for col in ("host", "state", "machine", "iolab", "ray", "python", "fio", "free"):
        table.add_column(col)
    for h in hosts:
        state = "[red]left[/]" if not h.alive else ("busy" if h.busy else "idle")
        free = ", ".join(
            f"{d} {format_bytes(n) if n is not None else '?'}" for d, n in h.free.items()
        )
        table.add_row(
            h.name,
            state + (f" ({escape(h.error)})" if h.error else ""),
            f"{h.hostname or '?'} {h.address}",
            h.iolab or "?",
            h.ray or "?",
            h.python or "?",
            "yes" if h.tools.get("fio") else "no",
            free or "-",
        )
    out.print(table)
    if not hosts:
        out.print("no host has joined: iolab fleet join HEAD --name NAME")


@app.command("stop")
def stop() -> None:
    """Stop the fleet's Ray processes on this machine (run it on every host, the head last):
    every process of this user's iolab Ray sessions here (orphans too) and their children,
    SIGTERM then, 2 s later, SIGKILL; it returns once all have exited. Another Ray on the
    machine keeps running."""
    from iolab.fleet import cluster

    stopped = cluster.stop()
    if stopped:
        out.print(f"fleet stopped on this machine ({stopped} Ray processes)")
    else:
        out.print(f"no fleet process runs on this machine (none under {cluster.ray_dir()})")
