"""How iolab knows a file it wrote, so that an output path never overwrites anything else.

Every kind of file iolab writes carries a mark or a shape of its own:

- HTML (reports, timelines, the demo's report): ``<meta name="generator" content="iolab">`` in
  its head;
- SVG (a timeline, the charts of ``--png``): ``data-generator="iolab"`` on its root element;
- PNG: a ``tEXt`` chunk ``Software: iolab`` after the header (Chromium draws the picture,
  :func:`sign_png` marks it);
- Parquet: the key-value metadata ``generator = iolab`` in its footer;
- CSV and JSON exports (formats without a place for a mark): their whole shape, read to the
  end: a CSV of a header ``run,cell,status,...`` and at least one row, each as wide as the
  header, with a run's number, a cell's id and a run status, exactly as Python's csv module writes
  it (``\r\n`` line ends, its quoting); a JSON list of at least one such row as an object
  whose first keys are ``run``, ``cell`` and ``status``, exactly as ``iolab export`` indents it.
  A user's ``[]`` or a CSV of their own that begins ``run,cell,status,`` is not one (nor is an
  export of no run: nothing tells it apart);
- HdrHistogram interval logs: the first line ``#[iolab run ...``.

:func:`written_by_iolab` reads a file's first and last bytes and says whether it is one of them;
:func:`sqlite_file` whether it is an SQLite database (iolab never writes a report over one).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import struct
import zlib
from pathlib import Path
from typing import BinaryIO

GENERATOR = "iolab"
HTML_MARK = f'<meta name="generator" content="{GENERATOR}">'
SVG_MARK = f'data-generator="{GENERATOR}"'
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PNG_KEYWORD = b"Software"
PARQUET_MAGIC = b"PAR1"
PARQUET_KEY = "generator"
CSV_HEAD = "run,cell,status"
JSON_HEAD = '[\n  {\n    "run": '
HLOG_HEAD = "#[iolab run "
SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_MAGICS = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")

HEAD_BYTES = 64 * 1024  # where the marks of HTML, SVG, PNG, CSV, JSON and logs are
EXPORT_BYTES = 256 * 1024 * 1024  # a larger CSV or JSON is not read whole: not taken as iolab's
FOOTER_BYTES = 1024 * 1024  # at most this much of a Parquet footer is read


def sign_png(data: bytes) -> bytes:
    """``data`` (a PNG) with iolab's ``tEXt`` chunk right after its header chunk."""
    if not data.startswith(PNG_MAGIC) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG file")
    header_end = 8 + 4 + 4 + struct.unpack(">I", data[8:12])[0] + 4
    body = b"tEXt" + PNG_KEYWORD + b"\x00" + GENERATOR.encode()
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body))
    return data[:header_end] + chunk + data[header_end:]


def written_by_iolab(path: Path) -> bool:
    """True when the file at ``path`` is one of the kinds iolab writes, marked or shaped as
    iolab writes it (see the module's docstring)."""
    with path.open("rb") as f:
        head = f.read(HEAD_BYTES)
        if head.startswith(PARQUET_MAGIC):
            return _parquet_signed(f)
    if head.startswith(PNG_MAGIC):
        return _png_signed(head)
    text = head.decode("utf-8", errors="replace")
    if text.lstrip().startswith("<"):  # HTML or SVG: the mark is in the head of the document
        return HTML_MARK in text or SVG_MARK in text.split(">", 1)[0]
    if text.startswith(HLOG_HEAD):
        return True
    if text.startswith((CSV_HEAD + "\r\n", CSV_HEAD + ",", JSON_HEAD)):
        return _export_shaped(path)
    return False


def _export_shaped(path: Path) -> bool:
    """A CSV or JSON export as :mod:`iolab.report.export` writes it, whole (see the module)."""
    from iolab.results import RunStatus  # on use: not on every command's path

    if path.stat().st_size > EXPORT_BYTES:
        return False
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    statuses = {s.value for s in RunStatus}

    def row_shaped(run: object, cell: object, status: object) -> bool:
        """A run's number, a cell's id (a hash in hex) and a run status."""
        return (
            isinstance(run, str)
            and run.isdigit()
            and run == str(int(run))
            and isinstance(cell, str)
            and re.fullmatch("[0-9a-f]+", cell) is not None
            and status in statuses
        )

    if text.startswith(CSV_HEAD):
        try:
            rows = list(csv.reader(io.StringIO(text, newline="")))
        except csv.Error:
            return False
        if len(rows) < 2 or rows[0][:3] != CSV_HEAD.split(","):
            return False
        again = io.StringIO()
        csv.writer(again).writerows(rows)
        return again.getvalue() == text and all(
            len(row) == len(rows[0]) and row_shaped(*row[:3]) for row in rows[1:]
        )
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return (
        isinstance(doc, list)
        and len(doc) > 0
        and all(
            isinstance(row, dict)
            and list(row)[:3] == ["run", "cell", "status"]
            and type(row["run"]) is int
            and row_shaped(str(row["run"]), row["cell"], row["status"])
            for row in doc
        )
        and text.removesuffix("\n") == json.dumps(doc, indent=2)
    )


def sqlite_file(path: Path) -> bool:
    """True for an SQLite database, or its write-ahead log."""
    with path.open("rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    return head == SQLITE_MAGIC or head[:4] in WAL_MAGICS


def _png_signed(head: bytes) -> bool:
    at = len(PNG_MAGIC)
    while at + 8 <= len(head):
        length = struct.unpack(">I", head[at : at + 4])[0]
        kind = head[at + 4 : at + 8]
        if kind == b"tEXt" and head[at + 8 : at + 8 + length] == (
            PNG_KEYWORD + b"\x00" + GENERATOR.encode()
        ):
            return True
        if kind in (b"IDAT", b"IEND"):
            return False  # text chunks of iolab's come before the image data
        at += 12 + length
    return False


def _parquet_signed(f: BinaryIO) -> bool:
    """The footer (its length is in the file's last 8 bytes) holds the key and the value."""
    size = f.seek(0, os.SEEK_END)
    if size < 12:
        return False
    f.seek(size - 8)
    tail = f.read(8)
    if tail[4:] != PARQUET_MAGIC:
        return False
    length = min(struct.unpack("<I", tail[:4])[0], FOOTER_BYTES, size - 8)
    f.seek(size - 8 - length)
    footer = f.read(length)
    return PARQUET_KEY.encode() in footer and GENERATOR.encode() in footer
