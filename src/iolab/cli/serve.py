"""``iolab serve``: the results database in the browser (see :mod:`iolab.serve`)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import ReadResultsOption
from iolab.errors import BadInput, MissingTool

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def serve(
    results: ReadResultsOption = None,
    port: Annotated[
        int, typer.Option(help="TCP port to listen on (0: any free port, printed at start).")
    ] = 8080,
    host: Annotated[
        str,
        typer.Option(
            help="Address to listen on. Default: loopback only. Any other address (e.g. this "
            "machine's LAN address, to share links on the network) makes the server print a "
            "one-time access token that every request must carry. 0.0.0.0 (or ::) listens on "
            "every address and prints a link for each of this machine's.",
        ),
    ] = "127.0.0.1",
) -> None:
    """Browse the results database in a browser, read-only: the experiments (filter by
    workload, engine, device, host, date), each experiment's report (the same as `iolab report
    --html`), each run's page (parameters, environment, devices, counters, waits, checkpoints,
    server log, timeline), `iolab compare`'s answer with charts, and a running run's timeline
    redrawn every second as its probes flush. Nothing is loaded from the network. Ctrl-C stops
    it."""
    import socket

    if not 0 <= port <= 65535:
        raise BadInput("--port", port, "give a TCP port from 1 to 65535, or 0 for any free one")
    try:
        address = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        raise BadInput(
            "--host", host, "give an IP address of this machine, e.g. 127.0.0.1 or 192.168.1.5"
        ) from None
    try:
        import uvicorn

        from iolab.serve.access import new_token
        from iolab.serve.app import create_app
    except ImportError as exc:
        raise MissingTool(
            f"{exc.name or 'the web framework'} (for iolab serve)",
            "install iolab with its serve extra: pip install 'iolab[serve]' "
            "(scripts/setup.sh does)",
        ) from None
    from iolab.store import default_path, open_readonly

    path = results or default_path()
    open_readonly(path).close()  # refuse a file that is not a results database at once
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((str(address), port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise BadInput(
            "--host/--port", f"{host}:{port}", f"cannot listen there ({exc.strerror})"
        ) from None
    token = None if address.is_loopback else new_token()
    bound = sock.getsockname()[1]
    urls = [escape(_url(a, bound)) for a in _reachable(address)]  # an IPv6 one's [] is no markup
    where = ", ".join(urls) + (" (every address of this machine)" if len(urls) > 1 else "")
    out.print(f"serving {escape(str(path))} read-only at {where}", highlight=False, soft_wrap=True)
    if token is not None:
        out.print(
            "access token (every request needs it; share this link): "
            + ", ".join(f"{url}?token={token}" for url in urls),
            highlight=False,
            soft_wrap=True,
        )
    out.print("[dim]Ctrl-C stops it[/]", highlight=False)
    config = uvicorn.Config(
        create_app(Path(path), token), log_level="warning", lifespan="off", access_log=False
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM, after the server shut down
        out.print("stopped")
    finally:
        sock.close()


def _reachable(address: IPAddress) -> list[IPAddress]:
    """Where a browser reaches a server listening on ``address``: the address itself, or for
    0.0.0.0 and :: (every address) this machine's addresses, loopback last."""
    if not address.is_unspecified:
        return [address]
    from iolab.system.addresses import addresses

    versions = (4,) if address.version == 4 else (6, 4)  # :: takes IPv4 too (dual stack)
    found = [ipaddress.ip_address(a) for v in versions for a in addresses(v)]
    return found or [ipaddress.ip_address("127.0.0.1" if address.version == 4 else "::1")]


def _url(address: IPAddress, port: int) -> str:
    shown = f"[{address}]" if address.version == 6 else str(address)
    return f"http://{shown}:{port}/"
