"""Device series against ground truth: what fio wrote and read vs what the probes saw reach the
device. The disk under /var/tmp is shared with everything else on the machine, so the test gets a
device of its own: an ext4 filesystem on a loop device (root only; skipped where refused)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import is_root

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed"),
]
IOLAB = [sys.executable, "-m", "iolab"]
MiB = 1024 * 1024


def iolab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*IOLAB, *args], capture_output=True, text=True, timeout=300, check=False)


def _sh(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def loop_mount(open_tmp: Path) -> Iterator[tuple[Path, str]]:
    """An ext4 filesystem on a fresh loop device: (mount point, device name)."""
    if not is_root():
        pytest.skip("loop devices and mounts need root")
    if shutil.which("losetup") is None or shutil.which("mkfs.ext4") is None:
        pytest.skip("losetup or mkfs.ext4 is missing (util-linux, e2fsprogs)")
    image = open_tmp / "disk.img"
    with image.open("wb") as f:
        f.truncate(192 * MiB)
    attach = _sh("losetup", "--find", "--show", str(image))
    if attach.returncode != 0:
        pytest.skip(f"the kernel refused a loop device: {attach.stderr.strip()}")
    device = attach.stdout.strip()
    mount_point = open_tmp / "mnt"
    mount_point.mkdir()
    try:
        made = _sh("mkfs.ext4", "-q", "-F", device)
        assert made.returncode == 0, made.stderr
        mounted = _sh("mount", device, str(mount_point))
        if mounted.returncode != 0:
            pytest.skip(f"the kernel refused to mount {device}: {mounted.stderr.strip()}")
        try:
            yield mount_point, Path(device).name
        finally:
            _sh("umount", str(mount_point))
    finally:
        _sh("losetup", "--detach", device)


def test_device_series_add_up_to_what_fio_moved(
    loop_mount: tuple[Path, str], results_db: Path
) -> None:
    target, device = loop_mount
    quick = ["--size", "32MiB", "--runs", "1", "--duration", "1", "--interval", "0"]
    done = iolab("disk", str(target), "--profile", "real", *quick, "--sample-interval", "0.5s")
    assert done.returncode == 0, done.stderr
    assert "probes:" in done.stdout
    shown = iolab("results", "show", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    passes = doc["disk"]["passes"]
    fio_write = sum(p["io_bytes"] for p in passes if "write" in p["test"])
    fio_read = sum(p["io_bytes"] for p in passes if "read" in p["test"])
    probes = doc["probes"]
    # a run within the fine start (10 s) keeps its 10 Hz grid; a longer one the interval set
    assert probes["interval"] == (0.1 if probes["duration"] <= 10.0 else 0.5)
    assert [(r["role"], r["device"], r["kind"]) for r in probes["roles"]] == [
        ("target", device, "loop")
    ]
    series = {s["name"]: s for s in probes["series"] if s["probe"] == "device"}
    assert {s["subject"] for s in series.values()} == {device}
    written = series["write_mbps"]["total"] * 1e6
    read = series["read_mbps"]["total"] * 1e6
    # direct I/O on a device of its own: what reached it is what fio moved, plus a little ext4
    # metadata (the file's times); nothing of it is missing
    assert fio_write * 0.99 <= written <= fio_write * 1.02 + 2 * MiB
    assert fio_read * 0.99 <= read <= fio_read * 1.02 + 2 * MiB
    ios = series["write_iops"]["total"]
    assert ios > 0 and series["write_await_ms"]["mean"] > 0
    assert 0 < series["util_pct"]["peak"] <= 100.0
    # the timeline draws it
    html = target.parent / "t.html"
    drawn = iolab("timeline", "1", "-o", str(html))
    assert drawn.returncode == 0, drawn.stderr
    page = html.read_text()
    assert "<script type='application/json'" in page  # the interactive figure
    assert f'"name":"write target ({device})"' in page and '"text":"MB/s"' in page


def test_a_role_on_tmpfs_is_memory_and_the_run_goes_on(results_db: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    quick = ["--size", "8MiB", "--runs", "1", "--duration", "1", "--interval", "0"]
    done = iolab("disk", str(shm), "--profile", "real", *quick, "--buffered", "--json")
    assert done.returncode == 0, done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    memory = [w for w in warnings if "memory, not a disk; no device series" in w]
    assert len(memory) == 1  # said once
    assert any("device: no role of this run is on a block device" in w for w in warnings)
    doc = json.loads(iolab("results", "show", "1", "--json").stdout)
    assert doc["status"] == "done"
    probes = doc["probes"]
    assert [(r["role"], r["device"], r["kind"]) for r in probes["roles"]] == []  # no device probe
    assert {s["probe"] for s in probes["series"]} == {"host"}  # the rest of the probes ran
    text = iolab("results", "show", "1").stdout
    assert "memory, not a disk" in text


@pytest.mark.skipif(
    not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")),
    reason="no headless Chromium to draw the PNG (apt-get install chromium)",
)
def test_timeline_png_is_a_picture_of_the_run(open_tmp: Path, results_db: Path) -> None:
    quick = ["--size", "8MiB", "--runs", "1", "--duration", "1", "--interval", "0"]
    done = iolab("disk", str(open_tmp), "--profile", "real", *quick)
    assert done.returncode == 0, done.stderr
    png = open_tmp / "t.png"
    drawn = iolab("timeline", "1", "-o", str(png))
    assert drawn.returncode == 0, drawn.stderr
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert width == 1000 and height > 400  # the SVG's size: several panels stacked
    refused = iolab("timeline", "1", "-o", str(open_tmp / "t.pdf"))
    assert refused.returncode == 2
    assert "--output" in refused.stderr and ".html, .svg or .png" in refused.stderr
    none = iolab("disk", str(open_tmp), "--profile", "real", *quick, "--no-probes")
    assert none.returncode == 0, none.stderr
    empty = iolab("timeline", "2", "-o", str(open_tmp / "t2.html"))
    assert empty.returncode == 2 and "no probe series" in empty.stderr
