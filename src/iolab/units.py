"""Parsing and printing of sizes and durations, with errors that name the field."""

from __future__ import annotations

import math
import re

from iolab.errors import BadInput

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h)?\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
SIZE_HELP = "use a whole number of bytes or a number with a unit: 4k, 512MiB, 1GiB, 10GB"
DURATION_HELP = "use seconds or a number with a unit: 500ms, 5s, 2m (or 2min), 1h"


def parse_size(text: str | int, field: str) -> int:
    """Bytes from ``4k``/``4KiB`` (binary), ``4KB`` (decimal, as disk makers count), or ``4096``.

    A bare ``k``/``m``/``g`` suffix means binary units, as in fio and CrystalDiskMark's labels.
    """
    if isinstance(text, int):
        if text <= 0:
            raise BadInput(field, text, "use a size greater than zero")
        return text
    m = _SIZE_RE.match(text)
    if not m:
        raise BadInput(field, text, SIZE_HELP)
    number, prefix, binary, b = m.groups()
    power = _POWERS[prefix.lower()]
    decimal = bool(prefix) and bool(b) and not binary
    base = 1000 if decimal else 1024
    value = float(number) * base**power
    if value < 1 or value != int(value):
        raise BadInput(field, text, "give a whole number of bytes above zero, e.g. 4k or 1GiB")
    return int(value)


def parse_duration(text: str | float, field: str) -> float:
    """Seconds from ``5``, ``5s``, ``500ms``, ``2m`` (``2min``) or ``1h``."""
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        m = _DURATION_RE.match(text)
        if not m:
            raise BadInput(field, text, DURATION_HELP)
        number, unit = m.groups()
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}[(unit or "s").lower()]
        seconds = float(number) * scale
    if seconds < 0:
        raise BadInput(field, text, "use a duration of zero or more")
    return seconds


def format_seconds(seconds: float) -> str:
    """A duration as it would be written in a file: ``500ms``, ``5s``, ``2m``, ``1h``, ``90s``."""
    for unit, scale in (("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        if seconds >= scale and (seconds / scale).is_integer():
            return f"{seconds / scale:g}{unit}"
    if 0 < seconds < 1:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"


def parse_int_list(text: str, field: str, *, minimum: int = 1) -> list[int]:
    """``1,8,32`` -> [1, 8, 32]; every item at least ``minimum``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise BadInput(field, text, f"give a comma-separated list of whole numbers >= {minimum}")
    out = []
    for item in items:
        if not item.isdigit() or int(item) < minimum:
            raise BadInput(field, item, f"use whole numbers >= {minimum}, comma-separated (1,8,32)")
        out.append(int(item))
    return out


def format_rate(per_second: float) -> str:
    """A rate as people read it: whole numbers from 100 up (1,234), three significant digits
    below (12.5, 0.667, 1e-09), never rounded to 0."""
    if per_second == 0 or abs(per_second) >= 100:
        return f"{per_second:,.0f}"
    return f"{per_second:.3g}"


def format_bytes(n: float) -> str:
    """Binary units for capacities: ``1.0 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def block_label(nbytes: int) -> str:
    """CrystalDiskMark-style block size label: 4K, 128K, 1M."""
    if nbytes % (1024 * 1024) == 0:
        return f"{nbytes // (1024 * 1024)}M"
    if nbytes % 1024 == 0:
        return f"{nbytes // 1024}K"
    return f"{nbytes}B"


def format_micros(us: float) -> str:
    """A latency in its own scale: ``581 us``, ``17.3 ms``, ``1.14 s``."""
    if math.isnan(us):
        return "-"
    if us < 1000:
        return f"{us:,.0f} µs"
    if us < 1_000_000:
        return f"{us / 1000:,.3g} ms" if us < 100_000 else f"{us / 1000:,.0f} ms"
    return f"{us / 1e6:,.3g} s"
