"""Presenting results: terminal tables, JSON documents, HTML. Never recomputes statistics.

:func:`build` makes an experiment's report, one typed value (:mod:`iolab.report.value`), from
the results database; the renderers present it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iolab.report.builder import build
    from iolab.report.value import ExperimentReport

__all__ = ["ExperimentReport", "build"]


def __getattr__(name: str) -> object:
    """``build`` and ``ExperimentReport`` on first use: importing a renderer of this package
    (``iolab.report.populate``, ``.probes``) does not load the builder, the analysis and the
    charts, which a command that prints a table never needs."""
    if name == "build":
        from iolab.report.builder import build

        return build
    if name == "ExperimentReport":
        from iolab.report.value import ExperimentReport

        return ExperimentReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
