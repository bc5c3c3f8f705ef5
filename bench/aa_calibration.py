"""Does ``iolab report`` call differences significant when there are none? An A/A experiment.

Eight cells that are the same (``--cells``): SQLite's population load (``--rows`` rows,
``--connections`` loaders) in eight directories of the same filesystem, one layout each, so the
cells differ only in a directory's name. ``--repetitions`` runs each (5), in shuffled order,
through the real CLI (``iolab run``, probes on as by default), then ``iolab report --json``.
The whole experiment is repeated ``--experiments`` times (20), each in a results database of its
own in a fresh temporary directory under ``/var/tmp`` (removed at the end, on Ctrl-C and errors
too).

For each experiment it reads every ratio the report states (the best cell against the
runner-up and the worst, every cell against the baseline, the pairs along the layout key) and
asks: is any of them significant? Once on the unadjusted p-values (``p_value < 0.05``: what the
report said before issue 18) and once on the adjusted ones (``p_adjusted``, Holm within each
family: what it says now). Printed: each experiment's smallest p before and after, and the
share of experiments with any "significant" finding, before and after (PASS when after is at
most 5%). With 20 experiments the share moves in steps of 5%: one experiment of 20 is 5%.

    .venv/bin/python bench/aa_calibration.py [--experiments 20] [--cells 8] [--repetitions 5]
        [--rows 500] [--connections 2] [--json]

It exits 0 whatever the verdict (2 on bad input, 1 when it could not run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from compare import mark

IOLAB = Path(sys.executable).with_name("iolab")
ALPHA = 0.05

EXPERIMENT = """\
[experiment]
name = "aa {index}"
repetitions = {repetitions}
order = "shuffled"

[workload]
kind = "populate"
engine = "sqlite"
rows = {rows}
connections = {connections}

{layouts}
[isolation]
settle_seconds = 0
drop_caches = false

[matrix]
layout = [{names}]
"""


def experiment_file(root: Path, index: int, args: argparse.Namespace) -> Path:
    names = [f"copy{i}" for i in range(1, args.cells + 1)]
    layouts = ""
    for name in names:
        (root / name).mkdir()
        layouts += f'[layouts.{name}]\ndata_dirs = ["{name}"]\n\n'
    file = root / "aa.toml"
    file.write_text(
        EXPERIMENT.format(
            index=index,
            repetitions=args.repetitions,
            rows=args.rows,
            connections=args.connections,
            layouts=layouts,
            names=", ".join(f'"{n}"' for n in names),
        )
    )
    return file


def ratios(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ratio the report states, each once."""
    out = [*report["best_vs"], *report["vs_baseline"]]
    out += [p for d in report["dimensions"] for p in d["pairs"]]
    return [r for r in out if r["p_value"] is not None]


def one(index: int, args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="iolab-aa-", dir="/var/tmp"))
    try:
        file = experiment_file(root, index, args)
        db = root / "iolab.db"
        t0 = time.perf_counter()
        run = subprocess.run(
            [str(IOLAB), "run", str(file), "--results", str(db)],
            capture_output=True,
            text=True,
            check=False,
        )
        if run.returncode != 0:
            raise RuntimeError(f"iolab run failed: {run.stderr[-2000:]}")
        seconds = time.perf_counter() - t0
        done = subprocess.run(
            [str(IOLAB), "report", str(file), "--json", "--results", str(db)],
            capture_output=True,
            text=True,
            check=True,
        )
        report = json.loads(done.stdout)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    found = ratios(report)
    raw = min(r["p_value"] for r in found)
    adjusted = min(r["p_adjusted"] if r["p_adjusted"] is not None else 1.0 for r in found)
    return {
        "experiment": index,
        "seconds": seconds,
        "ratios": len(found),
        "min_p": raw,
        "min_p_adjusted": adjusted,
        "any_raw": raw < ALPHA,
        "any_adjusted": adjusted < ALPHA,
        "comparisons": report["comparisons"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=20)
    parser.add_argument("--cells", type=int, default=8)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--connections", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.experiments < 1 or args.cells < 2 or args.repetitions < 2 or args.rows < 1:
        print("give --experiments >= 1, --cells >= 2, --repetitions >= 2, --rows >= 1")
        return 2
    results = []
    try:
        for i in range(1, args.experiments + 1):
            r = one(i, args)
            results.append(r)
            print(
                f"experiment {i:>2}: {r['ratios']} ratios, smallest p {r['min_p']:.3g} "
                f"(adjusted {r['min_p_adjusted']:.3g}), {r['seconds']:.0f} s",
                file=sys.stderr,
            )
    except KeyboardInterrupt:
        print("interrupted: the experiments so far", file=sys.stderr)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"could not run: {exc}", file=sys.stderr)
        return 1
    if not results:
        return 1
    n = len(results)
    before = sum(r["any_raw"] for r in results) / n
    after = sum(r["any_adjusted"] for r in results) / n
    if args.json:
        print(json.dumps({"before": before, "after": after, "experiments": results}, indent=2))
        return 0
    families = ", ".join(f"{f['family']}: {f['comparisons']}" for f in results[0]["comparisons"])
    chance = sum(f["expected_by_chance"] for f in results[0]["comparisons"])
    print(
        f"A/A: {args.cells} identical SQLite cells x {args.repetitions} runs, {n} experiments\n"
        f"comparisons per report: {families}; chance alone: about {chance:.1f} at p < 0.05\n"
        f"experiments with any significant finding, unadjusted p (before): {before:.0%}\n"
        f"experiments with any significant finding, Holm-adjusted p (after): {after:.0%} "
        f"{mark(after <= ALPHA)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
