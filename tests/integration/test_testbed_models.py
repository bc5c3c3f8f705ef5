"""Model devices on the real stack (nbdkit + iolab's model plugin + nbdfuse + a loop device +
ext4), calibrated against datasheet figures with ``iolab disk device:NAME``: the check a user
runs. Bounds come from the models (a model device is never faster than its model; the stack
adds its own cost per request, measured on a zero-cost model in the same run), not from
timings of other software, so a loaded machine slows nothing below them."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iolab import testbed
from iolab.testbed import nbd

pytestmark = pytest.mark.integration
IOLAB = [sys.executable, "-m", "iolab"]
NO_STACK = testbed.unavailable_reason(limits=False) or nbd.unavailable_reason()
requires_stack = pytest.mark.skipif(NO_STACK is not None, reason=str(NO_STACK))
HDD = {"model": "hdd", "rpm": 7200, "seek_ms": 8.5, "track_to_track_ms": 1.0, "mb_s": 150}
DEVICES: dict[str, dict[str, Any]] = {
    # 4 KiB blocks: mke2fs gives a filesystem this small 1 KiB blocks and a block group (with
    # its metadata between the file's extents) every 8 MiB, which a sequential read of a file
    # must pass over: 0.87-0.91x the platter's rate where 4 KiB blocks give 0.95-0.98x
    "hdd": {"size": "256MiB", **HDD, "mkfs_options": "-b 4096"},
    # the array's disks at 50 MB/s, so that 4 of them in parallel (200 MB/s) stay well inside
    # what the stack carries (400-550 MB/s of 1 MiB writes on a loaded 2-core machine)
    "one": {"size": "256MiB", **HDD, "mb_s": 50},
    "raid10": {
        "size": "512MiB",
        "model": "raid10",
        "members": 8,
        "stripe_kb": 64,
        "member": {**HDD, "mb_s": 50},
    },
    "bbu": {"size": "128MiB", **HDD, "cache_mb": 2, "battery_backed": True},
    "ssd": {"size": "128MiB", "model": "ssd", "read_us": 1000, "write_us": 1500},
    "null": {"size": "128MiB", "model": "null"},
    "fast": {"size": "128MiB", "model": "ssd"},  # the defaults: a 4 KiB read costs 100 us
}


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """All the devices up once (a few seconds), in a private state directory."""
    if NO_STACK is not None:
        pytest.skip(NO_STACK)
    base = Path(tempfile.mkdtemp(prefix=f"iolab-testbed-test-{os.getpid()}-", dir="/var/tmp"))
    base.chmod(0o755)
    files = base.parent / (base.name + "-files")
    files.mkdir()
    saved = os.environ.get("IOLAB_TESTBED_DIR")
    os.environ["IOLAB_TESTBED_DIR"] = str(base)
    try:
        specs = testbed.parse_devices(
            {name: {**spec, "backing_dir": str(files)} for name, spec in DEVICES.items()}
        )
        testbed.up(specs)
        yield base
    finally:
        testbed.down()
        left = list(files.iterdir()) + [p for p in base.iterdir()]
        if saved is None:
            del os.environ["IOLAB_TESTBED_DIR"]
        else:
            os.environ["IOLAB_TESTBED_DIR"] = saved
        shutil.rmtree(files, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
        assert left == [], "testbed down left files behind"


def disk(bed: Path, tmp: Path, device: str, bs: str, qd: int, rw: str, size: str) -> Any:
    """The median of ``iolab disk device:DEVICE`` for one test (2 short passes)."""
    done = subprocess.run(
        [
            *IOLAB, "disk", f"device:{device}", "--profile", "sweep", "--bs", bs, "--qd", str(qd),
            "--threads", "1", "--rw", rw, "--size", size, "--runs", "2", "--duration", "2",
            "--interval", "0", "--no-probes", "--json", "--results", str(tmp / "r.db"),
        ],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "IOLAB_TESTBED_DIR": str(bed)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (test,) = json.loads(done.stdout)["tests"]
    assert test["device_share"] == pytest.approx(1.0, abs=0.1)  # the device saw the I/O
    return test["median"]


@requires_stack
def test_a_7200_rpm_disk_reads_as_the_datasheet_says(bed: Path, tmp_path: Path) -> None:
    rnd = disk(bed, tmp_path, "hdd", "4k", 1, "randread", "192MiB")
    # seek 8.5 ms on average over the whole device, half a turn 4.17 ms: 79 IOPS from the model
    # (a 192 MiB file of a 256 MiB device seeks a little shorter)
    assert 60 <= rnd["iops"] <= 120
    assert rnd["lat"]["p50"] > 5_000  # us: no cache answers a random read
    # sequential: fio on a file laid out in one sequential pass (see docs/testbed.md for why
    # not `iolab disk` here yet); never faster than the platter. What it loses is the file's
    # layout (a seek at each wrap of the file and between extents, 2-3 %) and, under load,
    # time the model's disk waits idle for the stack's next request: 0.96x at load 6, down
    # to 0.73x at load 8 on a 2-core machine (2026-11-24), so the lower bound stays loose
    # (docs/testbed.md)
    target = bed / "mnt" / "hdd" / "seq"
    common = ["--bs=1M", "--size=160M", "--direct=1", "--ioengine=libaio", "--iodepth=4"]
    common += ["--output-format=json", f"--filename={target}"]
    try:
        fio("--name=w", "--rw=write", *common)
        done = fio("--name=r", "--rw=read", "--runtime=3", "--time_based", *common)
    finally:
        target.unlink(missing_ok=True)
    mbps = done["jobs"][0]["read"]["bw_bytes"] / 1e6
    assert 0.60 * 150 <= mbps <= 1.02 * 150


def fio(*args: str) -> Any:
    done = subprocess.run(["fio", *args], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout)


@requires_stack
def test_raid10_of_8_disks_against_one(bed: Path, tmp_path: Path) -> None:
    one = disk(bed, tmp_path, "one", "4k", 32, "randread", "192MiB")
    array = disk(bed, tmp_path, "raid10", "4k", 32, "randread", "384MiB")
    # 8 actuators, reads from the free mirror: 7.5x one disk in the model at QD 32; the stack
    # holds about 8-10 requests in flight (nbdfuse's FUSE threads), where the model gives 5.8x
    assert 3.0 <= array["iops"] / one["iops"] <= 8.5
    one = disk(bed, tmp_path, "one", "1m", 4, "write", "192MiB")
    array = disk(bed, tmp_path, "raid10", "1m", 4, "write", "384MiB")
    # each write goes to both mirrors of 4 pairs: 4x one disk
    assert 3.2 <= array["mbps"] / one["mbps"] <= 4.8


@requires_stack
def test_a_battery_backed_cache_takes_sync_writes_until_it_fills(bed: Path) -> None:
    path = bed / "mnt" / "bbu" / "log"
    size = 64 << 20
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
        chunk = os.urandom(1 << 20)
        for offset in range(0, size, 1 << 20):
            os.pwrite(fd, chunk, offset)  # written, so later writes change no metadata
        os.fdatasync(fd)
        time.sleep(0.5)  # the cache drains at the platter's rate (150 MB/s)
        rng = random.Random(1)
        block = os.urandom(8192)
        took = []
        for _ in range(400):
            start = time.monotonic()
            os.pwrite(fd, block, rng.randrange(size // 8192) * 8192)
            os.fdatasync(fd)
            took.append(time.monotonic() - start)
    finally:
        os.close(fd)
        path.unlink()
    fits = 2_000_000 // 8192  # the 2 MB cache holds 244 such writes
    cached, full = statistics.median(took[: fits // 2]), statistics.median(took[fits + 50 :])
    # once full, each waits for a random write to the platter (about 12.7 ms); while it has
    # room, only the stack's own time (0.2-0.5 ms idle, 1.8 ms at load 13 in CI): at least 4x
    # less, whatever the load adds to both
    assert full > 0.005
    assert cached * 4 < full, (cached, full)


@requires_stack
def test_ssd_read_latency_is_its_parameter(bed: Path, tmp_path: Path) -> None:
    ssd = disk(bed, tmp_path, "ssd", "4k", 1, "randread", "64MiB")
    null = disk(bed, tmp_path, "null", "4k", 1, "randread", "64MiB")
    from iolab.testbed import models

    spec = {k: v for k, v in DEVICES["ssd"].items() if k != "size"}
    model = models.build(models.check(spec), 128 << 20)
    cost_us = (model.submit("read", 0, 4096, 1000.0) - 1000.0) * 1e6  # what the model charges
    assert cost_us == pytest.approx(1000, abs=1)  # the parameter
    assert ssd["lat"]["p50"] >= cost_us  # us: never faster than the model
    assert null["lat"]["p50"] < ssd["lat"]["p50"]
    # how much later than its 1 ms a read ends is the scheduler's on a busy machine (up to 30 %
    # over at load 13 in CI, 2026-11-27), so no bound on the median holds; the fastest of many
    # reads straight to nbdkit's socket is the model's time plus a prompt wake-up
    reader = NbdReader(nbd.socket_path(bed, "ssd"))
    rng = random.Random(3)
    try:
        took = [reader.read_us(rng.randrange((64 << 20) // 4096) * 4096) for _ in range(500)]
    finally:
        reader.close()
    assert cost_us <= min(took) <= 1.2 * cost_us, (min(took), cost_us)


class NbdReader:
    """A minimal NBD client (fixed newstyle, NBD_OPT_EXPORT_NAME, simple replies) that reads
    one block at a time from a device's nbdkit socket and times each read."""

    def __init__(self, sock: Path) -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(str(sock))
        hello = self._recv(18)
        assert hello[:16] == b"NBDMAGICIHAVEOPT", hello
        self.s.sendall(struct.pack(">I", 3))  # fixed newstyle, no zeroes
        self.s.sendall(b"IHAVEOPT" + struct.pack(">II", 1, 0))  # export "", the default one
        self.size, _flags = struct.unpack(">QH", self._recv(10))
        self.handle = 0

    def _recv(self, n: int) -> bytes:
        got = bytearray()
        while len(got) < n:
            part = self.s.recv(n - len(got))
            assert part, "nbdkit closed the connection"
            got += part
        return bytes(got)

    def read_us(self, offset: int, length: int = 4096) -> float:
        self.handle += 1
        request = struct.pack(">IHHQQI", 0x25609513, 0, 0, self.handle, offset, length)
        began = time.perf_counter_ns()
        self.s.sendall(request)
        magic, error, handle = struct.unpack(">IIQ", self._recv(16))
        self._recv(length)
        took = (time.perf_counter_ns() - began) / 1000
        assert (magic, error, handle) == (0x67446698, 0, self.handle)
        return took

    def close(self) -> None:
        self.s.close()


@requires_stack
def test_an_ssd_model_keeps_its_latency_after_a_burst(bed: Path) -> None:
    """After parallel I/O (QD 16) the plugin's sleeps wake late; each request still ends no
    earlier than the model's time: at QD 1 every read of the default SSD (100 us a read) takes
    at least that. The reads go straight to nbdkit's socket (the model plugin's own timing,
    without nbdfuse, the loop device and the filesystem). How much later than its time a read
    ends is the scheduler's, not the model's, and on a shared machine no bound on it holds
    (a median 89.5 us over null's in one CI run, 3.7 us in a run at load 10, where the null
    reads waited longer than the SSD's): the test asserts the model's floor alone."""
    from iolab.testbed import models

    model = models.build(models.check({"model": "ssd"}), 128 << 20)
    cost_us = (model.submit("read", 0, 4096, 1000.0) - 1000.0) * 1e6  # what the model charges
    sock = nbd.socket_path(bed, "fast")
    subprocess.run(  # the burst: fio's 4 KiB random reads at QD 16 for 3 s
        ["fio", "--name=burst", "--ioengine=nbd", f"--uri=nbd+unix:///?socket={sock}",
         "--rw=randread", "--bs=4k", "--iodepth=16", "--size=64M", "--runtime=3",
         "--time_based"],
        capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    ssd = NbdReader(sock)
    rng = random.Random(5)
    took: list[float] = []
    try:
        for _ in range(4000):
            took.append(ssd.read_us(rng.randrange((64 << 20) // 4096) * 4096))
    finally:
        ssd.close()
    # before, the estimate of how late a sleep wakes stayed at its cap (0.5 ms) after the
    # burst, every request under it skipped its sleep, and the SSD read as fast as null
    assert cost_us > 50
    assert min(took) >= cost_us, (min(took), cost_us)  # never before the model's time


@requires_stack
def test_down_takes_back_what_a_killed_up_left(bed: Path, tmp_path: Path) -> None:
    """nbdkit and nbdfuse outlive a killed iolab; `down` finds them by iolab's paths."""
    name = "crash"
    file = tmp_path / "crash.toml"
    backing = bed.parent / (bed.name + "-files")
    file.write_text(
        f'[devices.{name}]\nsize = "64MiB"\nmodel = "null"\nbacking_dir = "{backing}"\n'
    )
    env = {**os.environ, "IOLAB_TESTBED_DIR": str(bed)}
    proc = subprocess.Popen(
        [*IOLAB, "testbed", "up", str(file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not nbd.nbdfuse_pids(bed, name) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert nbd.nbdkit_pids(bed, name)  # still serving
    down = subprocess.run(
        [*IOLAB, "testbed", "down", name], capture_output=True, text=True, env=env, check=False
    )
    assert down.returncode == 0, down.stderr
    assert "stopping nbdfuse and nbdkit" in down.stderr
    assert nbd.nbdkit_pids(bed, name) == []
    assert nbd.nbdfuse_pids(bed, name) == []
    assert not nbd.socket_path(bed, name).exists()
    assert not nbd.fuse_dir(bed, name).exists()
    assert [p.name for p in backing.iterdir() if name in p.name] == []
    # the other devices are untouched
    assert {d.name for d in testbed.status() if d.up} == set(DEVICES)
    (null,) = [d for d in testbed.status() if d.name == "null"]
    assert null.model == "null (no cost)"


@requires_stack
def test_without_nbdkit_a_model_device_is_refused_and_a_plain_one_works(
    bed: Path, tmp_path: Path
) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("losetup", "mkfs.ext4", "mount", "umount", "fusermount3", "nbdfuse"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    backing = bed.parent / (bed.name + "-files")
    env = {**os.environ, "IOLAB_TESTBED_DIR": str(bed), "PATH": str(tools)}
    model = tmp_path / "model.toml"
    model.write_text(f'[devices.m]\nsize = "64MiB"\nmodel = "hdd"\nbacking_dir = "{backing}"\n')
    done = subprocess.run(
        [*IOLAB, "testbed", "up", str(model)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: nbdkit is not installed; install Debian's nbdkit and nbdkit-plugin-python packages"
    )
    assert "m" not in {d.name for d in testbed.status()}
    plain = tmp_path / "plain.toml"
    plain.write_text(f'[devices.p]\nsize = "64MiB"\nbacking_dir = "{backing}"\n')
    done = subprocess.run(
        [*IOLAB, "testbed", "up", str(plain), "--json"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (dev,) = json.loads(done.stdout)
    assert (dev["name"], dev["state"], dev["model"]) == ("p", "up", None)
    testbed.down(names=["p"])


STRACE = shutil.which("strace")


@requires_stack
@pytest.mark.skipif(STRACE is None, reason="strace is not installed (scripts/setup.sh --tests)")
def test_nbdkit_outlives_a_starter_slow_to_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """nbdkit 1.32 arms a parent-death SIGTERM first thing in main. Each setsid iolab starts it
    through here takes 0.5 s to exit (strace delays its exit_group), as a loaded machine can
    make it: nbdkit must still serve, and say nothing of a signal."""
    real_setsid = shutil.which("setsid")
    assert real_setsid is not None
    base = Path(tempfile.mkdtemp(prefix="iolab-nbd-test-", dir="/var/tmp"))  # short socket path
    try:
        slow = base / "slow-setsid"
        slow.write_text(
            f"#!/bin/sh\nexec {STRACE} -o /dev/null -e trace=exit_group "
            f'-e inject=exit_group:delay_enter=500000 {real_setsid} "$@"\n'
        )
        slow.chmod(0o755)
        real_require = nbd.require
        monkeypatch.setattr(
            nbd,
            "require",
            lambda tool, how: str(slow) if tool == "setsid" else real_require(tool, how),
        )
        backing = base / "backing.img"
        with backing.open("wb") as f:
            f.truncate(16 * 1024 * 1024)
        disk = nbd.start(base, "late", backing, {"model": "null"})
        time.sleep(1.5)  # every delayed exit is past
        assert nbd.nbdkit_pids(base, "late")
        assert nbd.nbdfuse_pids(base, "late")
        with disk.open("rb") as f:
            assert f.read(4096) == bytes(4096)  # served
        assert "signal" not in nbd.log_path(base, "late").read_text().lower()
    finally:
        nbd.stop(base, "late")
        shutil.rmtree(base)
