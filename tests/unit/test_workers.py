"""Workers are waited for by their own record, not by Thread.join (see iolab.workers)."""

from __future__ import annotations

import threading

import pytest

from iolab.workers import Worker, wait_all


def test_wait_all_waits_for_started_workers_and_skips_the_others() -> None:
    release = threading.Event()
    seen: list[str] = []

    def slow() -> None:
        release.wait(5)
        seen.append("slow")

    started = Worker(slow, (), "slow")
    never = Worker(seen.append, ("never",), "never")
    started.start()
    threading.Timer(0.2, release.set).start()
    wait_all([never, started], timeout=10)
    assert started.entered.is_set() and started.ended.is_set()
    assert seen == ["slow"]
    assert not never.entered.is_set() and not never.ended.is_set()


def test_a_worker_that_raises_has_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    raised: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(str(args.exc_value)))

    def boom() -> None:
        raise ValueError("x")

    worker = Worker(boom, (), "boom")
    worker.start()
    assert worker.ended.wait(5)
    worker._thread.join(5)  # the thread itself, for the exception to reach the hook
    assert raised == ["x"]
