"""Does a fleet of two hosts finish an experiment sooner than one host, and what does sending a
run to a host cost?

    .venv/bin/python bench/fleet_speedup.py [--runs 8] [--seconds 10] [--rate 300] [--json]

Everything runs on this machine inside a network namespace the script makes for itself
(``unshare -n``, only loopback: Ray's traffic cannot leave the machine): a fleet head and two
hosts, db1 and db2, on 127.0.0.1. One experiment of RUNS populate runs on SQLite, each loading
rows at a fixed ``rate`` (rows/s) for ``seconds`` (so a run lasts about that long whatever the
machine's CPU does: a host's disk-bound run, not two CPU-bound runs fighting for two cores),
runs twice: on one host (``[fleet] hosts = ["db1"]``) and on two (db1, db2). Printed:

- wall time on two hosts / on one host (target <= 0.6);
- the fan-out cost per run: from the run's claim in the results database to its start on the
  host, plus from its end on the host to its record in the results database (target: median
  below 0.5 s).

Needs root (or user namespaces) for ``unshare -n`` and the fleet extra (``iolab[fleet]``). The
cluster is stopped at the end (``iolab fleet stop``), and the temporary directory removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

INSIDE = "IOLAB_BENCH_FLEET_INSIDE"
PORT = 6398
HEAD = f"127.0.0.1:{PORT}"


def experiment(work: Path, name: str, hosts: list[str], runs: int, seconds: int, rate: int) -> Path:
    path = work / f"{name}.toml"
    path.write_text(
        f"""
[experiment]
name = "{name}"
repetitions = {runs}
[workload]
kind = "populate"
engine = "sqlite"
duration = "{seconds}s"
rate = {rate}
[layouts.a]
data_dirs = ["a"]
[isolation]
settle_seconds = 0
drop_caches = false
[fleet]
hosts = {json.dumps(hosts)}
"""
    )
    return path


def measure(path: Path, results: Path) -> dict[str, Any]:
    """Run the experiment on the fleet in this process: its wall time and each run's fan-out."""
    from iolab.config import experiment as config
    from iolab.events import Event
    from iolab.fleet import cluster
    from iolab.fleet import executor as fleet_executor
    from iolab.runner import experiment as runner
    from iolab.runner.single import Executed
    from iolab.store import Store, open_store

    claimed: dict[int, float] = {}  # run id -> when it was claimed in the results database
    costs: list[float] = []
    commit, claim_run = vars(runner)["commit"], Store.claim_run  # timed below

    def timed_claim(store: Store, *args: Any) -> Any:
        taken = claim_run(store, *args)
        if taken is not None:
            claimed[int(taken[0])] = time.time()
        return taken

    def timed_commit(store: Store, run_id: Any, executed: Executed) -> None:
        commit(store, run_id, executed)
        recorded = time.time()
        costs.append((executed.began - claimed[int(run_id)]) + (recorded - executed.finished))

    def events(_event: Event) -> None:
        pass

    exp = config.load(path)
    setattr(runner, "commit", timed_commit)  # noqa: B010
    setattr(Store, "claim_run", timed_claim)  # noqa: B010
    try:
        with open_store(results) as store, cluster.connected(HEAD) as ray:
            placed = fleet_executor.factory(ray, exp.spec.fleet.hosts)
            began = time.monotonic()
            outcome = runner.run(exp, store, events, executor=placed)
            wall = time.monotonic() - began
    finally:
        setattr(runner, "commit", commit)  # noqa: B010
        setattr(Store, "claim_run", claim_run)  # noqa: B010
    return {"wall_s": wall, "done": outcome.done, "failed": outcome.failed, "fanout_s": costs}


def inside(args: argparse.Namespace) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    work = Path(tempfile.mkdtemp(prefix="iolab-bench-fleet-", dir="/var/tmp"))
    work.chmod(0o755)
    (work / "a").mkdir(mode=0o755)
    os.environ["IOLAB_FLEET_TOKEN"] = str(work / "token")
    os.environ["RAY_TMPDIR"] = str(work)  # Ray's sessions in the directory removed at the end
    from iolab.fleet import cluster

    out: dict[str, Any] = {"runs": args.runs, "seconds": args.seconds, "rate": args.rate}
    try:
        print("starting a fleet: head, db1, db2 on 127.0.0.1 ...", file=sys.stderr)
        cluster.start(port=PORT, node_ip="127.0.0.1")
        for name in ("db1", "db2"):
            cluster.join(HEAD, name, node_ip="127.0.0.1")
        for label, hosts in (("one host", ["db1"]), ("two hosts", ["db1", "db2"])):
            print(f"{label}: {args.runs} runs of ~{args.seconds} s ...", file=sys.stderr)
            path = experiment(
                work, label.replace(" ", "-"), hosts, args.runs, args.seconds, args.rate
            )
            out[label] = measure(path, work / "results.db")
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    one, two = out["one host"], out["two hosts"]
    ratio = two["wall_s"] / one["wall_s"]
    fanout = one["fanout_s"] + two["fanout_s"]
    median = statistics.median(fanout) if fanout else float("nan")
    out["ratio"] = ratio
    out["fanout_median_s"] = median
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{args.runs} populate runs on SQLite, {args.rate} rows/s for {args.seconds} s each")
    for label in ("one host", "two hosts"):
        m = out[label]
        print(f"  {label:9}: {m['wall_s']:6.1f} s wall, {m['done']} done, {m['failed']} failed")
    verdict = "PASS" if ratio <= 0.6 else "FAIL"
    print(f"two hosts / one host: {ratio:.2f} (target <= 0.60) {verdict}")
    verdict = "PASS" if median < 0.5 else "FAIL"
    print(
        f"fan-out per run (claim -> start on the host, end -> recorded): median {median:.3f} s, "
        f"max {max(fanout):.3f} s over {len(fanout)} runs (target median < 0.5 s) {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rate", type=int, default=300, help="rows/s each run loads")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if os.environ.get(INSIDE):
        inside(args)
        return
    if shutil.which("unshare") is None:
        sys.exit("needs unshare (util-linux) to make a network namespace")
    done = subprocess.run(
        ["unshare", "-n", sys.executable, __file__, *sys.argv[1:]],
        env={**os.environ, INSIDE: "1"},
        check=False,
    )
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
