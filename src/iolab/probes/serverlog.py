"""The engine's server log, kept with the run (start-up, settings, checkpoints, errors)."""

from __future__ import annotations

from pathlib import Path

LIMIT = 2_000_000  # characters kept; a longer log keeps its beginning and its end


def read_log(path: Path | None, limit: int = LIMIT) -> str | None:
    """The log's text (its head and tail when longer than ``limit``), None when unreadable."""
    if path is None:
        return None
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... iolab left out {cut:,} characters ...]\n{text[-half:]}"
