"""Presenting results: terminal tables, JSON documents, HTML. Never recomputes statistics.

:func:`build` makes an experiment's report, one typed value (:mod:`iolab.report.value`), from
the results database; the renderers present it.
"""

from iolab.report.builder import build
from iolab.report.value import ExperimentReport

__all__ = ["ExperimentReport", "build"]
