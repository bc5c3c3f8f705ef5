"""Who may read the pages: anyone on loopback; beyond it, only who has the server's token.

A server bound to a loopback address needs no token. Bound elsewhere (``--host``), it makes a
one-time token at start; every request carries it as ``?token=`` (the page then sets it as a
cookie and redirects to the address without it), the cookie, or the ``X-Iolab-Token`` header.
Anything else gets 403 and one line saying what is missing.
"""

from __future__ import annotations

import ipaddress
import secrets
from http import cookies
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "iolab_token"
HEADER = b"x-iolab-token"


def new_token() -> str:
    return secrets.token_urlsafe(18)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TokenGuard:
    """ASGI middleware: every HTTP request must carry ``token``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = dict(query).get("token")
        if given is not None and secrets.compare_digest(given, self.token):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
            await _respond(
                send,
                303,
                b"",
                [
                    (b"location", location.encode("latin-1")),
                    (
                        b"set-cookie",
                        f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode(),
                    ),
                ],
            )
            return
        headers = dict(scope.get("headers", []))
        carried = headers.get(HEADER, b"").decode("latin-1")
        jar = cookies.SimpleCookie()
        try:
            jar.load(headers.get(b"cookie", b"").decode("latin-1"))
        except cookies.CookieError:
            jar = cookies.SimpleCookie()
        if COOKIE in jar:
            carried = carried or jar[COOKIE].value
        if carried and secrets.compare_digest(carried, self.token):
            await self.app(scope, receive, send)
            return
        await _respond(
            send,
            403,
            b"this iolab serve needs its access token: open the address with ?token= that "
            b"`iolab serve` printed when it started\n",
            [(b"content-type", b"text/plain; charset=utf-8")],
        )


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
