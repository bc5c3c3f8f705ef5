"""What `iolab report --metric` can name, and which way is better."""

from __future__ import annotations

from iolab.analysis.findings import metric_of
from iolab.workloads.registry import lookup_metric


def lower_is_better(name: str) -> bool:
    return lookup_metric(name).lower_is_better


SUMMARY = {
    "elapsed_seconds": 2.5,
    "rows": 1000,
    "fill_ok": True,
    "engine": "postgres",
    "tests": {"SEQ1M Q8T1 read": {"mbps": 512.0, "lat_p99_us": 80}},
}


def test_a_key_or_a_dotted_path_into_the_summary() -> None:
    assert metric_of(SUMMARY, "elapsed_seconds") == 2.5
    assert metric_of(SUMMARY, "rows") == 1000.0
    assert metric_of(SUMMARY, "tests.SEQ1M Q8T1 read.mbps") == 512.0
    assert metric_of(SUMMARY, "tests.SEQ1M Q8T1 read.lat_p99_us") == 80.0
    for absent in ("fill_ok", "engine", "tests", "tests.SEQ1M Q8T1 read", "nope", "rows.x"):
        assert metric_of(SUMMARY, absent) is None, absent


def test_rates_and_ratios_are_better_high_times_sizes_and_latencies_low() -> None:
    for high in ("rows_per_second", "payload_mb_per_second", "tests.X.mbps", "tests.X.iops"):
        assert not lower_is_better(high), high
    assert (
        not lookup_metric("compression_ratio").lower_is_better
        and not lookup_metric("queries_ok").lower_is_better
    )
    for low in ("elapsed_seconds", "total_seconds", "wal_bytes_per_row", "table_bytes"):
        assert lower_is_better(low), low
    assert lookup_metric("tests.SEQ1M Q8T1 read.lat_p99_us").lower_is_better


def test_sizes_are_better_or_worse_times_faster_or_slower() -> None:
    from iolab.analysis.findings import ratio, sentence

    small, big = [100.0, 101.0, 99.0], [200.0, 202.0, 198.0]
    assert " was 2.00x better than " in sentence(ratio("a", small, "b", big, True, "table_bytes"))
    assert " was 2.00x faster than " in sentence(
        ratio("a", small, "b", big, True, "elapsed_seconds")
    )
    assert " was 2.00x worse than " in sentence(ratio("b", big, "a", small, True, "wal_bytes"))


def test_declared_metrics_say_their_unit_direction_and_words() -> None:
    from iolab.workloads import registry

    rate = registry.lookup_metric("rows_per_second")
    assert (rate.unit, rate.lower_is_better, rate.words) == ("rows/s", False, ("faster", "slower"))
    size = registry.lookup_metric("wal_bytes_per_row")
    assert (size.unit, size.lower_is_better, size.words) == ("B", True, ("better", "worse"))
    latency = registry.lookup_metric("tests.RND4K Q1T1 read.lat_p99_us")  # by its last part
    assert (latency.name, latency.lower_is_better) == ("lat_p99_us", True)
    assert latency.words == ("lower", "higher")  # a lower latency is better, not "faster"
    assert registry.lookup_metric("queries_ok").lower_is_better is False
    assert registry.lookup_metric("compression_ratio").format(2.5) == "2.5 x"
    assert registry.lookup_metric("load_mb_per_second").format(1234.5) == "1,234 MB/s"


def test_a_number_nobody_declared_has_no_direction() -> None:
    import pytest

    from iolab.workloads import registry

    assert registry.find_metric("bananas_per_second") is None
    assert registry.find_metric("rows") is None  # a count of rows is not a measurement to compare
    with pytest.raises(KeyError, match="bananas_per_second is not declared"):
        registry.lookup_metric("bananas_per_second")
    assert registry.find_metric("tests.SEQ1M Q8T1 read.iops") is registry.declared_metrics()["iops"]
