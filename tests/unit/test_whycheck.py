"""The check of a verdict (`iolab why RUN --check`): which relief each verdict gets, and what
the re-runs' figures say (confirmed, refuted, unknown), in its sentence with the numbers."""

from __future__ import annotations

import re

import pytest

from iolab.analysis import diagnosis as dx
from iolab.analysis import whycheck as wc

POPULATE = {"engine": "postgres", "data_dirs": ["/srv/a"], "mode": "client", "rows": 1000}


def facts(**kw: object) -> wc.RunFacts:
    params = {**POPULATE, **dict(kw.pop("params", {}) or {})}  # type: ignore[call-overload]
    summary = dict(kw.pop("summary", {}) or {})  # type: ignore[call-overload]
    return wc.RunFacts(params, summary, **{"modes": ("client", "server"), **kw})  # type: ignore[arg-type]


def test_a_device_role_and_its_latency_go_on_ram() -> None:
    for limit, role in [
        (dx.WAL, "wal"),
        (dx.WAL_LATENCY, "wal"),
        (dx.DATA, "data"),
        (dx.DATA_LATENCY, "data"),
    ]:
        r = wc.relief(limit, facts())
        assert isinstance(r, wc.Relief)
        assert r.ram == (role,) and not r.changes and not r.halves
        assert "RAM-backed directory" in r.what
    temp = wc.relief(dx.TEMP, facts(params={"temp_dir": "/srv/t"}))
    assert isinstance(temp, wc.Relief) and temp.ram == ("temp",)
    no_temp = wc.relief(dx.TEMP, facts())
    assert isinstance(no_temp, wc.CannotCheck)
    assert no_temp.sentence == "cannot check: the run had no temp directory of its own to move"


def test_a_wal_beside_the_data_moves_with_the_data_directory() -> None:
    r = wc.relief(dx.WAL, facts(own_wal_dir=False))
    assert isinstance(r, wc.Relief) and r.ram == ("data",)
    assert r.what == "the data directory, and the WAL beside it, on a RAM-backed directory"


def test_a_dsn_server_cannot_be_rerun_for_a_layout() -> None:
    r = wc.relief(dx.WAL, facts(params={"dsn": "postgresql://u@db1/x"}))
    assert isinstance(r, wc.CannotCheck) and not r.rerun
    assert "yours (--dsn)" in r.why and "layout iolab provisions" in r.why
    cpu = wc.relief(dx.CPU, facts(params={"dsn": "postgresql://u@db1/x"}))
    assert isinstance(cpu, wc.CannotCheck) and not cpu.rerun


def test_the_client_gets_the_compiled_core_else_server_mode() -> None:
    python = {"driver_core": "python", "driver_core_reason": "IOLAB_DRIVER_CORE=python"}
    core = wc.relief(dx.CLIENT, facts(summary=python, core_built=True))
    assert isinstance(core, wc.Relief)
    assert core.env == {"IOLAB_DRIVER_CORE": "native"}
    assert core.base_env == {"IOLAB_DRIVER_CORE": "python"}  # as it was: the Python core
    # the core not built here: server mode, the runs as they were on the core they ran
    server = wc.relief(dx.CLIENT, facts(summary=python, core_built=False))
    assert isinstance(server, wc.Relief)
    assert server.changes == {"mode": "server"} and server.base_env == {
        "IOLAB_DRIVER_CORE": "python"
    }
    timed = wc.relief(dx.CLIENT, facts(params={"duration": 10.0}))
    assert isinstance(timed, wc.CannotCheck) and "fixed count" in timed.why
    none = wc.relief(dx.CLIENT, facts(modes=()))
    assert isinstance(none, wc.CannotCheck)
    assert none.sentence.startswith("cannot check: the load has no server mode")


def test_memory_lifted_and_the_cpu_cap_halved() -> None:
    mem = wc.relief(wc.MEMORY, facts(params={"memory": "256MiB"}))
    assert isinstance(mem, wc.Relief) and mem.changes == {"memory": None}
    assert mem.what == "the memory cap (256MiB) lifted"
    assert isinstance(wc.relief(wc.MEMORY, facts()), wc.CannotCheck)
    capped = wc.relief(dx.CPU, facts(params={"cpus": 1.5}))
    assert isinstance(capped, wc.Relief) and capped.halves
    assert (
        capped.changes == {"cpus": 0.75} and capped.what == "the CPU cap halved (1.5 CPUs -> 0.75)"
    )
    host = wc.relief(dx.CPU, facts(host_cpus=4))
    assert isinstance(host, wc.Relief) and host.changes == {"cpus": 2.0}
    tiny = wc.relief(dx.CPU, facts(params={"cpus": 0.015}))
    assert isinstance(tiny, wc.CannotCheck)


def test_verdicts_without_a_relief_cannot_be_checked() -> None:
    for limit in (dx.CONTENTION, dx.RATE):
        r = wc.relief(limit, facts())
        assert isinstance(r, wc.CannotCheck) and r.rerun
        assert r.sentence.startswith("cannot check: ")
    bare = dx.Diagnosis(dx.NONE, None, ())
    [only] = wc.reliefs(bare, facts())
    assert isinstance(only, wc.CannotCheck)
    both = dx.Diagnosis(
        dx.NONE, None, (), (dx.Candidate(dx.WAL, 0.4, ()), dx.Candidate(dx.CLIENT, 0.3, ()))
    )
    steps = wc.reliefs(both, facts())
    assert [s.limit for s in steps] == [dx.WAL, dx.CLIENT]


WAL = wc.Relief(dx.WAL, "the WAL directory on a RAM-backed directory", ram=("wal",))
CPU = wc.Relief(dx.CPU, "the CPU cap halved (2 CPUs -> 1)", changes={"cpus": 1.0}, halves=True)
SHAPE = re.compile(r"\d+\.\d+x")


def test_a_relief_that_moves_the_run_confirms() -> None:
    step = wc.judge(WAL, [1, 4, 5], [2, 3, 6], [100, 102, 98], [240, 245, 238], False)
    assert step.outcome == wc.CONFIRMED
    assert step.ratio == pytest.approx(2.41, abs=0.01)
    assert step.ci_low is not None and 2.2 < step.ci_low < step.ratio < step.ci_high
    assert step.sentence == (
        "relieving the WAL device (the WAL directory on a RAM-backed directory) made it 2.41x "
        f"faster (95 % CI {wc._x(step.ci_low)}-{wc._x(step.ci_high or 0)}x): confirmed"
    )


def test_a_relief_that_changes_nothing_refutes() -> None:
    step = wc.judge(WAL, [1, 4, 5], [2, 3, 6], [100, 101, 99], [101, 100, 102], False)
    assert step.outcome == wc.REFUTED
    assert step.sentence.startswith(
        "relieving the WAL device (the WAL directory on a RAM-backed directory) changed nothing "
        "(1.01x, 0.9"
    )
    assert step.sentence.endswith("x): the WAL device was not the limit")
    # a lower-is-better figure (seconds): 10 s as it was, 10.1 s relieved, slower
    slower = wc.judge(WAL, [1, 2], [3, 4], [10.0, 10.02], [11.0, 11.01], True)
    assert slower.outcome == wc.REFUTED and slower.ratio == pytest.approx(0.91, abs=0.01)
    assert "made it slower (0.91x, " in slower.sentence


def test_runs_too_spread_to_say_are_unknown() -> None:
    step = wc.judge(WAL, [1, 4, 5], [2, 3, 6], [100, 150, 60], [130, 70, 200], False)
    assert step.outcome == wc.UNKNOWN
    assert "unknown, the runs vary too much to say" in step.sentence
    one = wc.judge(WAL, [1], [2], [100], [300], False)
    assert one.outcome == wc.UNKNOWN and one.ratio == pytest.approx(3.0) and one.ci_low is None


def test_the_cpu_cap_halved_must_cost_about_half() -> None:
    half = wc.judge(CPU, [1, 4], [2, 3], [100, 101, 99], [50, 52, 49], False)
    assert half.outcome == wc.CONFIRMED and half.ratio == pytest.approx(0.503, abs=0.01)
    assert half.sentence.startswith("halving the CPU cap (2 CPUs -> 1) cut it to 0.5x (95 % CI")
    assert half.sentence.endswith("x), about half: confirmed")
    little = wc.judge(CPU, [1, 4], [2, 3], [100, 101, 99], [90, 92, 91], False)
    assert little.outcome == wc.REFUTED
    assert little.sentence.startswith("halving the CPU cap (2 CPUs -> 1) cut it only to 0.91x (")
    assert little.sentence.endswith("): the CPU was not the limit")


def test_none_relieves_each_candidate_in_turn_and_names_the_one_that_moved() -> None:
    client = wc.Relief(dx.CLIENT, "server mode (the load's loop inside the engine)")
    first = wc.judge(WAL, [1, 4], [2, 3], [100, 101, 99], [101, 100, 102], False)
    second = wc.judge(client, [5, 8], [6, 7], [100, 101, 99], [310, 305, 300], False)
    check = wc.Check(9, dx.NONE, (first, second), "2026-11-28T00:00:00+00:00", 3)
    assert check.outcome == wc.CONFIRMED and check.moved == dx.CLIENT
    lines = check.sentences()
    assert lines[0].startswith("the first candidate, the WAL device: relieving the WAL device")
    assert lines[1].startswith("the next candidate, the client: relieving the client (server")
    assert lines[1].endswith(": confirmed")
    assert lines[2] == "the check names client: relieving it moved the run"
    assert check.deciding is second
    # refuted when every candidate was; unknown when one could not be checked
    assert wc.Check(9, dx.NONE, (first, first)).outcome == wc.REFUTED
    cannot = wc.CannotCheck(dx.CONTENTION, "no relief")
    assert wc.Check(9, dx.NONE, (first, cannot)).outcome == wc.UNKNOWN
    assert wc.Check(9, dx.CONTENTION, (cannot,)).line == "cannot check: no relief"


def test_a_check_reads_back_as_it_was_kept() -> None:
    first = wc.judge(WAL, [1, 4], [2, 3], [100, 101, 99], [101, 100, 102], False)
    cannot = wc.CannotCheck(dx.CONTENTION, "locks are the load's own")
    check = wc.Check(9, dx.NONE, (first, cannot), "2026-11-28T00:00:00+00:00", 3)
    doc = check.document()
    assert doc["outcome"] == "unknown" and doc["moved"] is None
    assert doc["ratio"] == pytest.approx(first.ratio, abs=1e-4)
    back = wc.Check.from_document(doc)
    assert back.line == check.line and back.outcome == check.outcome
    assert back.experiment_id == 3 and back.checked_at == check.checked_at


def test_the_checked_verdict_shows_in_the_why_section_and_on_the_run_page() -> None:
    from iolab.report import why as why_report
    from iolab.serve.pages import run_page
    from tests.unit.test_serve_pages import _run

    step = wc.judge(WAL, [11, 14], [12, 13], [100, 102, 98], [240, 245, 238], False)
    check = wc.Check(7, dx.WAL, (step,), "2026-11-28T00:20:00+00:00", 4)
    line = why_report.checked_line(check)
    assert line == f"checked (2026-11-28T00:20:00+00:00): {step.sentence}"
    wal = dx.Diagnosis(dx.WAL, 0.9, (dx.Evidence("x", 1, "%", "the wal device at its cap"),))
    cell = dx.cell_verdict("ssd", [wal])
    w = dx.Why((cell,), (), (("ssd", f"run 7 {line}"),))
    assert [t.plain for t in why_report.text(w)][-1] == f"    run 7 {line}"
    assert f"<span class='checked'>run 7 {line}</span>" in why_report.html_section(w)
    doc = why_report.document(w)
    assert doc is not None and doc["cells"][0]["checked"] == f"run 7 {line}"  # type: ignore[index]
    page = run_page(_run(), {}, None, {}, (), None, wal.line, line)
    assert "<p id='verdict'>limited by wal-device (90% of session time)</p>" in page
    assert f"<p id='checked'>{line}</p>" in page


def test_each_rerun_s_figure_in_one_line() -> None:
    step = wc.judge(WAL, [2, 5], [3, 4], [189.6, 186.1], [7161.4, 12110.2], False)
    assert step.figures("rows_per_second") == (
        "rows_per_second: as it was run 2 189.6, run 5 186.1; relieved run 3 7,161, run 4 12,110"
    )
