"""Reading PostgreSQL's dynamic shared memory control segment: what a killed server left in
/dev/shm that iolab removes for it (the layout is checked on a real server in
tests/integration/test_engine_postgres.py)."""

from __future__ import annotations

import struct
from pathlib import Path

from iolab.engines.postgres import DSM_CONTROL_MAGIC, SHARED_MEMORY, _listed_segments


def control(
    items: list[tuple[int, int]], maxitems: int = 4, magic: int = DSM_CONTROL_MAGIC
) -> bytes:
    data = bytearray(16 + 40 * maxitems)
    struct.pack_into("=III", data, 0, magic, len(items), maxitems)
    for i, (handle, refcount) in enumerate(items):
        struct.pack_into("=IIQQQ?", data, 16 + 40 * i, handle, refcount, 0, 0, 0, True)
    return bytes(data)


def test_the_segments_in_use_are_listed(tmp_path: Path) -> None:
    path = tmp_path / "PostgreSQL.1"
    path.write_bytes(control([(3751431140, 4), (17, 0), (42, 1)]))
    assert _listed_segments(path) == [
        SHARED_MEMORY / "PostgreSQL.3751431140",
        SHARED_MEMORY / "PostgreSQL.42",  # moribund: still a file
    ]


def test_a_file_of_another_layout_lists_nothing(tmp_path: Path) -> None:
    path = tmp_path / "PostgreSQL.1"
    for data in (
        control([(5, 2)], magic=0x12345678),
        control([(5, 2)])[:-8],  # not 16 + 40 * maxitems bytes
        struct.pack("=III", DSM_CONTROL_MAGIC, 9, 1) + bytes(40),  # more items than room
        b"short",
    ):
        path.write_bytes(data)
        assert _listed_segments(path) == []
    assert _listed_segments(tmp_path / "missing") == []
