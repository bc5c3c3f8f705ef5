"""iolab serve's pages and access guard, without a server: what a run page escapes, which
hosts count as loopback, what the token guard lets through."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import MutableMapping
from typing import Any

from iolab.results import CellId, EnvId, ExperimentId, RunId, RunStatus
from iolab.serve.access import TokenGuard, is_loopback
from iolab.serve.pages import run_page
from iolab.store.database import RunRecord


def _run(status: RunStatus = RunStatus.DONE) -> RunRecord:
    return RunRecord(
        id=RunId(7),
        experiment_id=ExperimentId(2),
        experiment="<b>exp</b>",
        cell_id=CellId("c"),
        workload="populate",
        params={"engine": "sqlite", "note": "<img src=x onerror=alert(1)>"},
        repetition=1,
        status=status,
        started_at="2026-11-24T05:00:00+00:00",
        ended_at=None,
        env_id=EnvId("e"),
        error="server said <script>alert(2)</script>",
        summary={"rows": 300},
    )


def test_a_run_page_escapes_what_it_shows_from_the_database() -> None:
    log = "LOG: <script>alert(3)</script> & more"
    page = run_page(_run(), {"hostname": "h<1>"}, None, {"server": log}, (), None)
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(3)&lt;/script&gt; &amp; more" in page
    assert "&lt;b&gt;exp&lt;/b&gt;" in page
    assert "server log" in page


def test_a_running_run_page_polls_its_timeline() -> None:
    page = run_page(_run(RunStatus.RUNNING), {}, None, {}, (), None)
    assert "data-src='/runs/7/timeline.json'" in page
    assert "<script src='/static/plotly.min.js'></script>" in page
    assert "https://" not in page and "http://" not in page  # nothing from the network


def test_loopback_hosts() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("127.1.2.3")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("10.1.2.3")
    assert not is_loopback("::")


def _call(guard: TokenGuard, path: str, query: bytes = b"", headers: Any = ()) -> dict[str, Any]:
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": path, "query_string": query, "headers": list(headers)}
    asyncio.run(guard(scope, receive, send))
    start = sent[0]
    return {"status": start["status"], "headers": dict(start["headers"])}


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def test_the_token_guard() -> None:
    guard = TokenGuard(_ok, "s3cret")
    assert _call(guard, "/")["status"] == 403
    assert _call(guard, "/", b"token=wrong")["status"] == 403
    moved = _call(guard, "/runs/3", b"a=1&token=s3cret")
    assert moved["status"] == 303
    assert moved["headers"][b"location"] == b"/runs/3?a=1"
    assert moved["headers"][b"set-cookie"].startswith(b"iolab_token=s3cret;")
    assert _call(guard, "/", headers=[(b"cookie", b"iolab_token=s3cret")])["status"] == 200
    assert _call(guard, "/", headers=[(b"cookie", b"iolab_token=nope")])["status"] == 403
    assert _call(guard, "/", headers=[(b"x-iolab-token", b"s3cret")])["status"] == 200


def test_a_run_page_says_which_driver_core_ran_the_load() -> None:
    """Issue 44: the core a run's summary recorded, and why; nothing for a run without one."""
    core = {"driver_core": "python", "driver_core_reason": "the compiled core is not built (x)"}
    ran = dataclasses.replace(_run(), summary={"rows": 300} | core)
    page = run_page(ran, {}, None, {}, (), None)
    assert (
        "<p id='driver-core'>driver core: python (the compiled core is not built (x))</p>" in page
    )
    assert "driver core" not in run_page(_run(), {}, None, {}, (), None)
