"""JSON documents of reports: ``iolab report --json`` and ``iolab compare --json``."""

from __future__ import annotations

import json
from collections.abc import Sequence

from iolab.analysis import diagnosis as dx
from iolab.analysis.findings import (
    POWER,
    DimensionGain,
    Findings,
    Ratio,
    answer,
    direction,
    gain_sentence,
    sentence,
)
from iolab.report import why
from iolab.report.comparison import Comparison
from iolab.report.spectrum import Spectrum
from iolab.report.value import ExperimentReport


def ratio_document(r: Ratio) -> dict[str, object]:
    """A ratio's numbers as they are (``speedup`` > 1: a is better, whatever the metric's
    direction), and the same in one direction: ``times`` (1 or more) ``direction`` ("faster",
    "slower", "lower", ...), as the ``sentence`` says it."""
    return {
        "a": r.a,
        "b": r.b,
        "speedup": r.better,
        "times": max(r.better, 1 / r.better),
        "direction": direction(r),
        "ci_low": r.better_low,
        "ci_high": r.better_high,
        "p_value": r.comparison.p_value,
        "p_adjusted": r.p_adjusted,
        "family_size": r.family,
        "significant": r.significant,
        "sentence": sentence(r),
    }


def dimension_document(d: DimensionGain) -> dict[str, object]:
    """One matrix key's gain: its average (None where the pairs go opposite ways: then the
    other key that splits them, and its groups), its sentence and every pair."""
    return {
        "key": d.key,
        "a": d.a,
        "b": d.b,
        "mean_speedup": d.mean_better,
        "differs_by": d.by,
        "groups": [{"value": v, "pairs": [f"{r.a} vs {r.b}" for r in rs]} for v, rs in d.groups],
        "sentence": gain_sentence(d),
        "pairs": [ratio_document(p) for p in d.pairs],
    }


def answer_document(f: Findings, verdicts: dx.Why | None) -> dict[str, object]:
    """The answer (:func:`iolab.report.why.finding_lines`): each significant difference, its
    better cell first, with where the limit moved (``limit``) and its line; the pairs that
    differ in nothing significant in one line, with the power estimate's numbers."""
    ans = answer(f)
    lines = why.finding_lines(f, verdicts)
    p = ans.power
    return {
        "significant": [
            ratio_document(x.ratio) | {"limit": x.moved, "flagged": x.flagged, "line": x.text}
            for x in lines
            if x.ratio is not None
        ],
        "not_significant": {
            "pairs": len(ans.quiet),
            "untested": len(ans.untested),
            "sentence": ans.quiet_sentence,
            "power": None
            if p is None
            else {
                "more_runs_per_cell": p.more_runs,
                "difference": p.difference,
                "runs_per_cell": p.runs,
                "log_sd": p.spread,
                "family_size": p.family,
                "power": POWER,
            },
        },
        "comparisons": ans.comparisons,
    }


def report_document(report: ExperimentReport) -> dict[str, object]:
    """The findings of ``iolab report --json``: best cell, the answer (significant differences
    first, the rest in one line), ratios, gains per matrix key, warnings, efficiency, drift,
    per-query times and every cell's statistics."""
    f = report.findings
    return {
        "metric": f.metric,
        "lower_is_better": f.lower_is_better,
        "best": f.best.cell.label if f.best else None,
        "answer": answer_document(f, report.why),
        "best_vs": [ratio_document(r) for r in f.best_vs],
        "baseline": f.baseline,
        "vs_baseline": [ratio_document(r) for r in f.vs_baseline],
        "dimensions": [dimension_document(d) for d in f.dimensions],
        "comparisons": [
            {
                "family": x.name,
                "comparisons": x.comparisons,
                "expected_by_chance": x.by_chance,
                "significant_unadjusted": x.raw_significant,
                "significant_adjusted": x.significant,
                "adjustment": "holm" if "Bonferroni" not in x.name else "bonferroni",
            }
            for x in f.families
        ],
        "warnings": list(f.warnings),
        "overlaps": [
            {
                "run": o.run,
                "other_run": o.other,
                "other_experiment": o.other_experiment,
                "host": o.host,
                "from": o.start,
                "to": o.end,
            }
            for o in report.overlaps
        ],
        "efficiency": [
            {
                "cell": e.cell,
                "device": e.device,
                "roles": list(e.roles),
                "write_mb_per_second": e.mbps,
                "runs": e.runs,
                "limit_mb_per_second": e.limit.mbps,
                "limit_test": e.limit.test,
                "limit_disk_run": e.limit.run_id,
                "share": e.share,
            }
            for e in f.efficiency
        ],
        "drift": None
        if f.drift is None
        else {
            "cell": f.drift.cell,
            "hours": list(f.drift.hours),
            "values": list(f.drift.values),
            "change": f.drift.trend.change,
            "p_value": f.drift.trend.p_value,
            "significant": f.drift.trend.significant,
        },
        "queries": [
            {
                "cell": q.cell,
                "runs": q.runs,
                "median_seconds": {str(n): v for n, v in q.seconds.items()},
            }
            for q in f.queries
        ],
        "cells": [
            {
                "label": c.cell.label,
                "values": dict(c.cell.values),
                "runs": list(c.cell.metric),
                "failed": c.cell.failed,
                **(
                    {
                        "n": c.summary.n,
                        "mean": c.summary.mean,
                        "median": c.summary.median,
                        "sd": c.summary.sd,
                        "cv": c.summary.cv,
                        "min": c.summary.min,
                        "max": c.summary.max,
                        "ci_low": c.summary.ci_low,
                        "ci_high": c.summary.ci_high,
                        "outliers": list(c.summary.outliers),
                    }
                    if c.summary
                    else {"n": 0}
                ),
            }
            for c in f.cells
        ],
    }


def latency_document(spectra: Sequence[Spectrum]) -> list[dict[str, object]]:
    """The spectra's numbers: per operation kind, each cell's runs merged (count, mean,
    p50 .. p99.99, max in microseconds), the WAL devices' commit tests beside them, and the WAL
    devices no disk run measured."""
    return [
        {
            "kind": s.kind,
            "cells": [
                {"cell": line.label, "runs": line.runs, **line.histogram.stats()}
                for line in s.lines
            ],
            "commit_tests": [
                {
                    "test": line.label,
                    "disk_run": line.disk_run,
                    "passes": line.runs,
                    **line.histogram.stats(),
                }
                for line in s.disks
            ],
            "untested_wal_devices": list(s.missing),
        }
        for s in spectra
    ]


def report_json(report: ExperimentReport) -> str:
    doc = report_document(report)
    doc["latency"] = latency_document(report.spectra)
    doc["why"] = why.document(report.why)
    return json.dumps(doc, indent=2)


def comparison_document(c: Comparison) -> dict[str, object]:
    return {
        "metric": c.metric,
        "a_values": list(c.a.values),
        "b_values": list(c.b.values),
        **ratio_document(c.ratio),
        "latency": {kind: {"a": a.stats(), "b": b.stats()} for kind, (a, b) in c.latency.items()},
    }


def comparison_json(c: Comparison) -> str:
    return json.dumps(comparison_document(c), indent=2)
