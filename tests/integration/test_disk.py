"""`iolab disk` end to end: real fio on a temp directory, small sizes, short passes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iolab import ownership
from tests.conftest import interruptible

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed"),
]
IOLAB = [sys.executable, "-m", "iolab"]
QUICK = ["--size", "16MiB", "--runs", "1", "--duration", "1", "--interval", "0"]


def iolab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


def leftovers(path: Path) -> list[str]:
    return [p.name for p in path.iterdir() if p.name.startswith(".iolab-")]


def test_real_profile_stores_every_pass(tmp_path: Path, results_db: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    done = iolab("disk", str(target), "--profile", "real", *QUICK, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    labels = [t["test"] for t in doc["tests"]]
    assert labels == ["SEQ1M Q1T1 read", "SEQ1M Q1T1 write", "RND4K Q1T1 read", "RND4K Q1T1 write"]
    for t in doc["tests"]:
        assert t["passes"] == 1
        assert t["median"]["mbps"] > 0
        assert t["median"]["iops"] > 0
        assert 0 < t["median"]["lat"]["p50"] <= t["median"]["lat"]["p999"]
        # direct I/O on a real disk: the device saw (at least about) what fio moved
        if t["device_share"] is not None:
            assert t["device_share"] > 0.5
    rnd = next(t for t in doc["tests"] if t["test"] == "RND4K Q1T1 read")
    assert rnd["median"]["mbps"] == pytest.approx(rnd["median"]["iops"] * 4096 / 1e6, rel=0.01)
    assert leftovers(target) == []  # the test file is gone

    listed = json.loads(iolab("results", "list", "--json").stdout)
    assert [r["id"] for r in listed] == [doc["run"]]
    assert listed[0]["status"] == "done"
    assert listed[0]["workload"] == "disk"
    shown = json.loads(iolab("results", "show", str(doc["run"]), "--json").stdout)
    assert len(shown["disk"]["passes"]) == 4 * 2  # warm-up + 1 measured pass per test
    assert sum(p["discarded"] for p in shown["disk"]["passes"]) == 4
    env = shown["environment"]
    assert env["kernel"].startswith("Linux")
    assert env["cpu_count"] >= 1
    assert env["versions"]["fio"]
    storage = env["storage"]["target"]
    assert storage["path"] == str(target.resolve())
    assert storage["filesystem"]
    text = iolab("results", "show", str(doc["run"])).stdout
    assert "SEQ1M Q1T1" in text
    assert "RND4K Q1T1 write" in text


def test_db_profile_reports_commits(tmp_path: Path, results_db: Path) -> None:
    done = iolab("disk", str(tmp_path), "--profile", "db", *QUICK, "--json")
    assert done.returncode == 0, done.stderr
    tests = {t["test"]: t for t in json.loads(done.stdout)["tests"]}
    assert set(tests) >= {
        "RND8K Q1T1 read",
        "RND8K Q32T1 write",
        "SEQ64K Q8T1 read",
        "SEQ256K Q8T1 read",
        "SEQ1M Q8T1 write",
        "COMMIT8K Q1T1 fdatasync",
    }
    commit = tests["COMMIT8K Q1T1 fdatasync"]
    assert commit["commits_per_second"] > 0
    assert commit["median"]["sync"]["p99"] >= commit["median"]["sync"]["p50"] > 0
    assert tests["RND8K Q1T1 read"]["median"]["sync"] is None


def test_sweep_matrix_and_grid_text(tmp_path: Path, results_db: Path) -> None:
    done = iolab(
        "disk",
        str(tmp_path),
        "--profile",
        "sweep",
        "--bs",
        "4k,64k",
        "--qd",
        "1,4",
        "--rw",
        "randread",
        "--rwmix",
        "70",
        *QUICK,
    )
    assert done.returncode == 0, done.stderr
    for row in ("RND4K Q1T1", "RND4K Q4T1", "RND64K Q1T1", "RND64K Q4T1"):
        assert row in done.stdout
    assert "R70/W30" in done.stdout


def test_tmpfs_is_flagged_as_memory(results_db: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    done = iolab("disk", str(shm), "--profile", "real", *QUICK, "--json")
    if done.returncode != 0:  # kernels before 6.6 refuse O_DIRECT on tmpfs: say so clearly
        assert "refuses direct I/O" in done.stderr
        assert "--buffered" in done.stderr
        return
    warnings = json.loads(done.stdout)["warnings"]
    assert any("measures memory, not a disk" in w for w in warnings)


def test_ctrl_c_removes_the_test_file_and_keeps_the_run(tmp_path: Path, results_db: Path) -> None:
    proc = subprocess.Popen(
        interruptible(
            [
                *IOLAB,
                *["disk", str(tmp_path), "--size", "64MiB", "--runs", "3"],
                *["--duration", "2", "--interval", "0"],
            ]
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(tmp_path), "the test file never appeared"
    time.sleep(3)  # into the measuring passes
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in err
    assert "Traceback" not in err
    assert leftovers(tmp_path) == []
    # fio's job processes ended with it (a SIGKILL of fio's main process alone leaves them)
    found = subprocess.run(
        ["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert found.stdout.split() == []
    (run,) = json.loads(iolab("results", "list", "--json").stdout)
    assert run["status"] == "aborted"
    shown = json.loads(iolab("results", "show", str(run["id"]), "--json").stdout)
    assert shown["disk"]["passes"], "passes measured before Ctrl-C are kept"


def test_leftover_of_a_killed_run_is_removed(tmp_path: Path, results_db: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    tag = ownership.owned_name("disk").split("-")[3]
    orphan = tmp_path / f".iolab-disk-{dead.pid}-{tag}-0badf00d"
    orphan.write_bytes(b"x" * 4096)
    mine = tmp_path / "keep-me.dat"
    mine.write_text("not iolab's")
    done = iolab("disk", str(tmp_path), "--profile", "real", *QUICK)
    assert done.returncode == 0, done.stderr
    assert not orphan.exists()
    assert mine.read_text() == "not iolab's"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "fastest"], "--profile: 'fastest' is not allowed; choose one of: default"),
        (["--size", "12XB"], "--size: '12XB' is not allowed"),
        (["--size", "900TiB"], "--size: '900.0 TiB'"),
        (["--duration", "soon"], "--duration: 'soon' is not allowed"),
        (["--runs", "0"], "--runs: 0 is not allowed"),
        (["--profile", "sweep", "--qd", "1,0"], "--qd: '1,0' is not allowed; use whole numbers"),
        (["--profile", "sweep", "--rw", "append"], "--rw: 'append' is not allowed"),
        (["--qd", "4"], "--qd: '4' is not allowed; goes with the sweep profile only"),
        (["--data", "ones"], "--data: 'ones' is not allowed; choose one of: random, zero"),
    ],
)
def test_bad_options(tmp_path: Path, results_db: Path, args: list[str], message: str) -> None:
    done = iolab("disk", str(tmp_path), *args)
    assert done.returncode == 2
    assert message in done.stderr.replace("\n", " ")
    assert "Traceback" not in done.stderr
    assert not results_db.exists() or json.loads(iolab("results", "list", "--json").stdout) == []


def test_bad_paths(tmp_path: Path, results_db: Path) -> None:
    missing = iolab("disk", str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert "PATH:" in missing.stderr
    assert "existing directory" in missing.stderr
    a_file = tmp_path / "file"
    a_file.write_text("")
    not_dir = iolab("disk", str(a_file))
    assert not_dir.returncode == 2
    assert "give a directory" in not_dir.stderr


def test_read_only_directory(tmp_path: Path, results_db: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.geteuid() == 0 and (
        shutil.which("chattr") is None
        or subprocess.run(["chattr", "+i", str(ro)], check=False).returncode
    ):
        pytest.skip("root ignores permissions and chattr +i is not available here")
    try:
        done = iolab("disk", str(ro), *QUICK)
        assert done.returncode == 2
        assert "you can write to" in done.stderr
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(ro)], check=False)
        ro.chmod(0o755)


def test_missing_fio_says_how_to_install(tmp_path: Path, results_db: Path) -> None:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))
    done = iolab("disk", str(tmp_path), env=env)
    assert done.returncode == 2
    assert "fio is not installed" in done.stderr
    assert "apt-get install fio" in done.stderr
