from __future__ import annotations

import pytest

from iolab.errors import BadInput
from iolab.units import block_label, format_bytes, parse_duration, parse_int_list, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4k", 4096),
        ("4KiB", 4096),
        ("4KB", 4000),
        ("1GiB", 1 << 30),
        ("1g", 1 << 30),
        ("10GB", 10_000_000_000),
        ("512", 512),
        ("1.5MiB", 1_572_864),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text, "--size") == expected


@pytest.mark.parametrize("text", ["", "abc", "10XB", "-1G", "0.5", "1.5"])
def test_parse_size_rejects_with_field_and_value(text: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_size(text, "--size")
    assert err.value.field == "--size"
    assert str(err.value).startswith(f"--size: {text!r}")


def test_parse_duration() -> None:
    assert parse_duration("5", "--duration") == 5.0
    assert parse_duration("500ms", "--duration") == 0.5
    assert parse_duration("2m", "--duration") == 120.0
    with pytest.raises(BadInput, match="--duration: 'soon'"):
        parse_duration("soon", "--duration")


def test_parse_int_list() -> None:
    assert parse_int_list("1, 8,32", "--qd") == [1, 8, 32]
    with pytest.raises(BadInput, match="--qd: '0'"):
        parse_int_list("1,0", "--qd")
    with pytest.raises(BadInput, match="--qd: 'x'"):
        parse_int_list("x", "--qd")


def test_labels() -> None:
    assert block_label(4096) == "4K"
    assert block_label(1 << 20) == "1M"
    assert block_label(128 * 1024) == "128K"
    assert format_bytes(1 << 30) == "1.0 GiB"


def test_seconds_are_written_as_a_file_writes_them() -> None:
    from iolab.units import format_seconds

    got = [format_seconds(x) for x in (5.0, 0.5, 120.0, 90.0, 3600.0, 5.5, 0.1, 0.0)]
    assert got == ["5s", "500ms", "2m", "90s", "1h", "5.5s", "100ms", "0s"]


def test_cell_labels_show_durations_in_their_units() -> None:
    from iolab.analysis.findings import label_of

    values = {"checkpoint_every": 5.0, "connections": 16, "presize_wal": "off", "duration": 600}
    assert label_of(values) == "checkpoint_every=5s connections=16 presize_wal=off duration=10m"
    assert label_of({"data_dirs": ["a", "b"]}) == "data_dirs=a+b"
