"""A disk profile as the runner sees it: a cell's parameters into its options, its checks
before any run is recorded, its run and its estimate (no single number: a profile's tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iolab.errors import BadInput
from iolab.events import EventSink
from iolab.results import RunOutcome
from iolab.units import parse_size
from iolab.workloads.disk import metrics
from iolab.workloads.disk.options import DiskWorkload
from iolab.workloads.interface import (
    DEFAULT_SAMPLE_INTERVAL,
    Body,
    Checked,
    Headline,
    Resolve,
    Workload,
    model_of,
    on_device,
)

if TYPE_CHECKING:
    from iolab.workloads.disk.run import DiskOptions


def disk_options(params: Mapping[str, Any], target: Path) -> DiskOptions:
    from iolab.fio.jobs import DataPattern
    from iolab.workloads.disk.run import DiskOptions

    w = model_of(DiskWorkload, params)
    return DiskOptions(
        path=target,
        profile=w.profile,
        size=parse_size(w.size, "--size"),
        runs=w.runs,
        duration=w.duration,
        interval=w.interval,
        data=DataPattern(w.data),
        direct=w.direct,
        mix=w.mix,
        sweep=w.sweep_spec(),
        sample_interval=params.get("sample_interval", DEFAULT_SAMPLE_INTERVAL),
    )


def _disk_check(params: Mapping[str, Any], checked: Checked) -> None:
    from iolab.workloads.disk.run import check_size, check_target

    options = disk_options(params, Path(params["data_dirs"][0]))
    check_size(options)  # also on a testbed device
    if on_device(params):
        return
    checked.once(("disk", options.path, options.size), lambda: check_target(options))


def _disk(
    params: Mapping[str, Any], resolve: Resolve, events: EventSink
) -> tuple[Body, dict[str, Path], dict[str, str]]:
    from iolab.fio.runner import fio_version
    from iolab.workloads.disk.run import check_target, run_profile

    target = resolve(params["data_dirs"][0])
    options = disk_options(params, target)
    check_target(options)

    def body(outcome: RunOutcome) -> None:
        run_profile(options, outcome, events)

    return body, {"target": target}, {"fio": fio_version()}


def _disk_estimate(params: Mapping[str, Any]) -> float:
    options = disk_options(params, Path("."))
    return options.estimated_seconds() + 10.0  # and writing the test file


PROFILES_IN_ORDER = ("default", "nvme", "peak", "real", "db", "quick")  # a sweep's: give --metric


def _first_test(cells: Sequence[Mapping[str, Any]], summaries: Sequence[Mapping[str, Any]]) -> str:
    """``tests.<the profile's first test that ran>.mbps`` (CrystalDiskMark's first row)."""
    from iolab.workloads.disk.run import profile_tests

    ran = {t for s in summaries for t in s.get("tests") or {}}
    profiles = [c["profile"] for c in cells if c.get("profile") in PROFILES_IN_ORDER]
    order = [t.label for t in profile_tests(profiles[0], mix=True)] if profiles else []
    first = next((t for t in order if t in ran), None) or min(ran, default=None)
    if first is None:
        raise BadInput("EXPERIMENT", "disk", "it has no finished test to report on")
    return f"tests.{first}.mbps"


def _headline(params: Mapping[str, Any], summary: Mapping[str, Any]) -> Headline | None:
    """The MB/s of the test a report is about (:func:`_first_test`: the profile's first that
    ran, CrystalDiskMark's first row), named; None when no test finished."""
    try:
        key = _first_test([params], [summary])
    except BadInput:
        return None
    return Headline(key, key.removeprefix("tests.").removesuffix(".mbps"))


def _fio() -> None:
    from iolab.fio.runner import fio_path

    fio_path()


WORKLOAD = Workload(
    name="disk",
    model=DiskWorkload,
    metric=None,
    metric_label="",
    lower_is_better=False,
    prepare=_disk,
    estimate=_disk_estimate,
    check=_disk_check,
    check_tools=_fio,
    first_metric=_first_test,
    metrics=metrics.METRICS,
    headline=_headline,
)
