"""Which driver core runs a load (``iolab.drivercore.choose``): IOLAB_DRIVER_CORE's values,
the reasons recorded with a run, and how a run's core is said (issue 44). The case of a core
that is not built is tests/integration/test_drivercore_fallback.py's: a fresh install where
the build fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab import drivercore
from iolab.drivercore import Core, choose, ran, shown, wanted
from iolab.errors import BadInput
from iolab.system.snapshot import capture

BUILT = drivercore.native() is not None
needs_build = pytest.mark.skipif(not BUILT, reason=f"the compiled core is {drivercore.missing()}")


@pytest.mark.parametrize(
    ("value", "choice"),
    [(None, "auto"), ("", "auto"), ("auto", "auto"), (" Native ", "native"), ("PYTHON", "python")],
)
def test_wanted_reads_the_choice(
    monkeypatch: pytest.MonkeyPatch, value: str | None, choice: str
) -> None:
    if value is None:
        monkeypatch.delenv("IOLAB_DRIVER_CORE", raising=False)
    else:
        monkeypatch.setenv("IOLAB_DRIVER_CORE", value)
    assert wanted() == choice


@pytest.mark.parametrize("value", ["c", "native,python", "1"])
def test_a_bad_value_is_refused_naming_the_variable_the_value_and_the_choices(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("IOLAB_DRIVER_CORE", value)
    for call in (wanted, lambda: choose(True, "populate's client mode")):
        with pytest.raises(BadInput) as caught:
            call()
        assert str(caught.value) == (
            f"IOLAB_DRIVER_CORE: {value.lower()!r} is not allowed; give auto, native or python"
        )
        assert caught.value.exit_code == 2  # the CLI's `error: ...` line, exit 2


def test_python_is_chosen_when_asked_or_when_the_core_does_not_run_the_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IOLAB_DRIVER_CORE", "python")
    assert choose(True, "x") == Core("python", "IOLAB_DRIVER_CORE=python")
    assert choose(False, "x") == Core("python", "IOLAB_DRIVER_CORE=python")
    monkeypatch.setenv("IOLAB_DRIVER_CORE", "auto")
    assert choose(False, "SQLite's load") == Core(
        "python", "the compiled core does not run SQLite's load"
    )


def test_native_for_a_load_the_core_does_not_run_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IOLAB_DRIVER_CORE", "native")
    with pytest.raises(BadInput) as caught:
        choose(False, "TPC-C's client mode")
    assert str(caught.value) == (
        "IOLAB_DRIVER_CORE: 'native' is not allowed; the compiled core does not run TPC-C's "
        "client mode: unset it or give python"
    )


@needs_build
def test_the_built_core_is_chosen_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IOLAB_DRIVER_CORE", raising=False)
    assert choose(True, "x") == Core("native", "built")
    monkeypatch.setenv("IOLAB_DRIVER_CORE", "native")
    assert choose(True, "x") == Core("native", "IOLAB_DRIVER_CORE=native")
    assert drivercore.missing() == ""


def test_a_runs_core_is_recorded_and_said() -> None:
    summary = Core("python", "IOLAB_DRIVER_CORE=python").record()
    assert summary == {"driver_core": "python", "driver_core_reason": "IOLAB_DRIVER_CORE=python"}
    assert ran(summary) == "python (IOLAB_DRIVER_CORE=python)"
    assert shown(summary) == "driver core: python (IOLAB_DRIVER_CORE=python)"
    assert shown(Core("native", "built").record()) == "driver core: native (built)"
    assert shown({"rows": 10}) == ran({"rows": 10}) == ""  # a disk run, SQLite, an older run


def test_each_runs_environment_says_whether_the_core_is_built() -> None:
    assert drivercore.built() is BUILT
    assert capture({}, {})["driver_core_built"] is BUILT


def test_a_role_whose_directory_is_gone_fails_the_run_in_one_line(tmp_path: Path) -> None:
    """A testbed device another experiment took down under a run: the run fails saying which
    directory is gone, not with a traceback (FileNotFoundError from statvfs)."""
    from iolab.errors import IolabError

    gone = tmp_path / "wal"
    with pytest.raises(IolabError) as failed:
        capture({"data": tmp_path, "wal": gone}, {})
    assert str(failed.value) == f"the wal directory {gone} is gone: No such file or directory"
