"""Why: what limited each run, each cell and each finding, read from the store and rendered.

The verdicts come from :mod:`iolab.analysis.diagnosis`, computed once per run and kept with it
(:mod:`iolab.store.verdicts`); this module reads them and renders them for ``iolab results
show``, ``iolab report`` (terminal, JSON, HTML) and ``iolab compare``. See docs/diagnosis.md.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from iolab.analysis import diagnosis as dx
from iolab.analysis import whycheck
from iolab.analysis.findings import Findings, Ratio, answer, sentence, times
from iolab.report.value import ExperimentReport
from iolab.results import RunId
from iolab.store import Store, verdicts
from iolab.store.database import RunRecord


def run_diagnosis(store: Store, run: RunRecord) -> dx.Diagnosis | None:
    """What limited ``run`` (None: it recorded no probes): the verdict kept with it
    (:func:`iolab.store.verdicts.of_run`), never recomputed against a newer disk run."""
    return verdicts.of_run(store, run).diagnosis


def show_lines(d: dx.Diagnosis) -> list[str]:
    """``iolab results show``: the "limited by" line and its evidence (rich markup)."""
    lines = [f"[bold]{html.escape(d.line, quote=False)}[/]"]
    lines += [f"  {_markup(s)}" for s in dx.sentences(d.evidence)]
    for c in d.candidates:
        share = "" if c.share is None else f" ({c.share:.0%} of session time)"
        lines.append(f"  candidate {c.limit}{share}: " + "; ".join(dx.sentences(c.evidence)))
    lines += [f"  [dim]{_markup(n)}[/]" for n in d.notes]
    return lines


def checked_line(check: whycheck.Check) -> str:
    """The newest check of a run's verdict in one line (``results show``, ``iolab why``,
    serve's run page): when, and what it said."""
    return f"checked ({check.checked_at}): {check.line}"


def _markup(s: str) -> str:
    return s.replace("[", r"\[")


# -- an experiment --------------------------------------------------------------------------


def build(store: Store, report: ExperimentReport) -> dx.Why:
    """Per cell the verdict of its done runs; per finding (best against the others, against
    the baseline, each pair along a matrix key) whether the limit moved."""
    from iolab.store import checks

    cells: list[dx.CellVerdict] = []
    checked: list[tuple[str, str]] = []
    for c in report.cells:
        runs = []
        for run in c.runs:
            if run.status.value != "done":
                continue
            runs.append(run_diagnosis(store, store.run(run.id)))
        cells.append(dx.cell_verdict(c.label, runs))
        found = checks.of_runs(store, [r.id for r in c.runs])
        if found:  # the newest check of a run of the cell
            newest = max(found.values(), key=lambda k: (k.checked_at, k.run))
            checked.append((c.label, f"run {newest.run} {checked_line(newest)}"))
    by_label = {v.label: v for v in cells}
    values = {c.label: c.values for c in report.cells}
    f = report.findings
    ratios: list[tuple[Ratio, str]] = [(r, _key(values, r)) for r in (*f.best_vs, *f.vs_baseline)]
    ratios += [(r, d.key) for d in f.dimensions for r in d.pairs]
    whys: list[dx.FindingWhy] = []
    seen: set[tuple[str, str]] = set()
    for r, key in ratios:
        if (r.a, r.b) in seen or r.a not in by_label or r.b not in by_label:
            continue
        seen.add((r.a, r.b))
        whys.append(
            dx.finding_why(
                by_label[r.a], by_label[r.b], times=times(r), significant=r.significant, key=key
            )
        )
    return dx.Why(tuple(cells), tuple(whys), tuple(checked))


def _key(values: Mapping[str, Mapping[str, Any]], r: Ratio) -> str:
    """The one matrix key two cells differ in ("" when they differ in none or several)."""
    a, b = values.get(r.a, {}), values.get(r.b, {})
    differ = [k for k in a if a.get(k) != b.get(k)]
    return differ[0] if len(differ) == 1 else ""


@dataclass(frozen=True)
class FindingLine:
    """One line of an experiment's answer: a significant difference, its better cell first,
    with what became of the limit between its cells (``moved``), or (``ratio`` None) the one
    line of every pair that differs in nothing significant, with its power estimate."""

    text: str
    ratio: Ratio | None = None
    moved: str = ""  # "the limit moved from data-device to cpu", "both limited by cpu", ""
    flagged: bool = False  # the cells' limits contradict the difference (dx.finding_why)


def finding_lines(f: Findings, why: dx.Why | None = None) -> list[FindingLine]:
    """The answer as a reader acts on it (:func:`iolab.analysis.findings.answer`): each
    significant difference, the largest first, worded "A was 1.80x faster than B (95% CI ...);
    the limit moved from data-device to cpu" (the limit from each cell's stored verdict, when
    ``why`` holds both cells'), then one line for the pairs that differ in nothing significant:
    "12 pairs differ in nothing significant; about 6 more runs per cell would resolve a
    difference of 10 %"."""
    ans = answer(f)
    verdicts = {c.label: c for c in why.cells} if why is not None else {}
    values = {c.cell.label: c.cell.values for c in f.cells}
    out = []
    for r in ans.significant:
        va, vb = verdicts.get(r.a), verdicts.get(r.b)
        moved, flagged, clauses = "", False, [sentence(r)]
        if va is not None and vb is not None:
            moved = dx.limit_moved(va, vb)
            fw = dx.finding_why(va, vb, times=times(r), significant=True, key=_key(values, r))
            flagged = fw.flagged
            clauses += [x for x in (moved, fw.reason) if x]
        out.append(FindingLine("; ".join(clauses), r, moved, flagged))
    if ans.quiet or ans.untested:
        out.append(FindingLine(ans.quiet_sentence))
    return out


def line_markup(line: FindingLine) -> str:
    """A finding line for the terminal (rich markup): a flagged one says so in yellow."""
    return ("[yellow]flagged:[/] " if line.flagged else "") + _markup(line.text)


def line_html(line: FindingLine) -> str:
    """A finding line as an HTML list item; a flagged one says so."""
    if line.flagged:
        return f"<li class='warn'>flagged: {html.escape(line.text)}</li>"
    css = " class='note'" if line.ratio is None else ""
    return f"<li{css}>{html.escape(line.text)}</li>"


def text(why: dx.Why) -> list[Text]:
    """The "Why" section of ``iolab report`` in the terminal: each cell's verdict and its
    evidence (the findings above say what became of the limit in each significant one)."""
    parts = [Text("Why", style="bold")]
    checked = dict(why.checked)
    for c in why.cells:
        parts.append(Text(f"  {c.label}: limited by {c.text}"))
        for s in c.evidence[:3]:
            parts.append(Text(f"    {s}", style="dim"))
        if c.label in checked:
            parts.append(Text(f"    {checked[c.label]}"))
    return parts


def html_section(why: dx.Why | None, findings: Findings | None = None) -> str:
    """The "Why" section of the HTML report ("" without one): each cell's verdict, then (with
    ``findings``) each significant difference with what became of the limit and the one line
    of the pairs that differ in nothing significant."""
    if why is None or not why.cells:
        return ""
    e = html.escape
    checked = dict(why.checked)
    rows = "".join(
        f"<tr><td>{e(c.label)}</td><td>{e(c.text)}</td><td>{e('; '.join(c.evidence))}"
        + (f"<br><span class='checked'>{e(checked[c.label])}</span>" if c.label in checked else "")
        + "</td></tr>"
        for c in why.cells
    )
    lines = finding_lines(findings, why) if findings is not None else []
    items = "".join(line_html(x) for x in lines)
    return (
        "<section id='why'><h2>Why</h2><table><tr><th>cell</th><th>limited by</th>"
        f"<th>evidence (first run with the verdict)</th></tr>{rows}</table>"
        + (f"<ul>{items}</ul>" if items else "")
        + "</section>"
    )


def run_limits(why: dx.Why | None) -> dict[str, str]:
    """Per cell label, its verdict and evidence in one line: beside each run's timeline."""
    if why is None:
        return {}
    return {
        c.label: f"cell limited by {c.text}" + (": " + "; ".join(c.evidence) if c.evidence else "")
        for c in why.cells
    }


def document(why: dx.Why | None) -> dict[str, object] | None:
    """``iolab report --json``'s ``why``."""
    if why is None:
        return None
    checked = dict(why.checked)
    return {
        "cells": [
            {
                "cell": c.label,
                "limit": c.limit,
                "runs": c.runs,
                "counts": dict(c.counts),
                "evidence": list(c.evidence),
                **({"checked": checked[c.label]} if c.label in checked else {}),
            }
            for c in why.cells
        ],
        "findings": [
            {"a": f.a, "b": f.b, "why": f.text, "flagged": f.flagged} for f in why.findings
        ],
    }


@dataclass(frozen=True)
class Compared:
    """``iolab compare``'s why: each side's verdict and whether the limit moved; ``line``: the
    ratio's sentence with, when significant, what became of the limit, and when not, how many
    more runs would resolve a difference (:func:`iolab.analysis.findings.power`)."""

    a: dx.CellVerdict
    b: dx.CellVerdict
    why: dx.FindingWhy
    line: str = ""
    moved: str = ""  # dx.limit_moved: "the limit moved from rate to wal-device", ""

    @property
    def lines(self) -> list[str]:
        """Each side's verdict with its evidence, then the flag when its limits contradict the
        difference."""
        out = []
        for v in (self.a, self.b):
            out.append(f"{v.label}: limited by {v.text}")
            out += [f"  {s}" for s in v.evidence[:3]]
        if self.why.flagged:
            out.append("flagged: " + self.why.text)
        return out

    @property
    def document(self) -> dict[str, object]:
        return {
            "a": {"limit": self.a.limit, "runs": self.a.runs, "counts": dict(self.a.counts)},
            "b": {"limit": self.b.limit, "runs": self.b.runs, "counts": dict(self.b.counts)},
            "why": self.why.text,
            "moved": self.moved,
            "flagged": self.why.flagged,
            "line": self.line,
        }


def compare(
    store: Store,
    a: tuple[str, Sequence[int]],
    b: tuple[str, Sequence[int]],
    ratio: Ratio,
    values: tuple[Sequence[float], Sequence[float]] | None = None,
) -> Compared:
    """The verdicts of both sides' runs (label, run ids) and the why of their ratio;
    ``values``: each side's numbers, for the power estimate of a difference not significant."""

    def side(label: str, runs: Sequence[int]) -> dx.CellVerdict:
        return dx.cell_verdict(label, [run_diagnosis(store, store.run(RunId(r))) for r in runs])

    va, vb = side(*a), side(*b)
    why = dx.finding_why(va, vb, times=times(ratio), significant=ratio.significant)
    moved = dx.limit_moved(va, vb)
    return Compared(va, vb, why, compared_line(ratio, moved, values), moved)


def compared_line(
    ratio: Ratio, moved: str, values: tuple[Sequence[float], Sequence[float]] | None = None
) -> str:
    """``iolab compare``'s verdict in one line: "A was 1.80x faster than B (95% CI ...); the
    limit moved from data-device to cpu", or "A vs B: no significant difference (...); about
    4 more runs per side would resolve a difference of 10 %"."""
    from iolab.analysis.findings import power, power_words

    clauses = [sentence(ratio)]
    if ratio.significant:
        clauses += [moved] if moved else []
    elif values is not None:
        est = power(values)
        if est is not None:
            clauses.append(power_words(est, "side"))
    return "; ".join(clauses)
