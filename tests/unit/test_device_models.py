"""Device models (iolab.testbed.models) on their own: the time each I/O is charged."""

from __future__ import annotations

import dataclasses
import random
import statistics
from pathlib import Path
from typing import Any

import pytest

from iolab.errors import BadInput
from iolab.testbed import models, nbd, parse_devices
from iolab.testbed.spec import DeviceSpec

GIB = 1 << 30


def hdd(**kw: Any) -> dict[str, Any]:
    return models.check({"model": "hdd", **kw})


def random_reads(model: models.Model, n: int, qd: int, bs: int = 4096, seed: int = 1) -> float:
    """IOPS of ``n`` random reads kept ``qd`` deep (a closed loop, as fio runs them)."""
    rng = random.Random(seed)
    blocks = model.size // bs
    start = model.free_at()
    inflight = [start] * qd  # completion times
    for _ in range(n):
        i = min(range(qd), key=inflight.__getitem__)
        inflight[i] = model.submit("read", rng.randrange(blocks) * bs, bs, inflight[i])
    return n / (max(inflight) - start)


def sequential(model: models.Model, op: str, total: int, bs: int, qd: int = 1) -> float:
    """MB/s of ``total`` bytes in ``bs`` I/Os, kept ``qd`` deep."""
    start = model.free_at()
    inflight = [start] * qd
    offset = 0
    while offset < total:
        i = min(range(qd), key=inflight.__getitem__)
        inflight[i] = model.submit(op, offset, bs, inflight[i])
        offset += bs
    return total / (max(inflight) - start) / models.MB


def test_a_7200_rpm_disk_gives_datasheet_random_iops_and_sequential_rate() -> None:
    disk = models.build(hdd(rpm=7200, seek_ms=8.5, mb_s=150), 100 * GIB)
    iops = random_reads(disk, 4000, qd=1)
    # average seek + half a turn (4.17 ms) + transfer: about 79 I/Os per second
    assert 1 / iops == pytest.approx(0.0085 + 0.5 * 60 / 7200 + 4096 / 150e6, rel=0.05)
    assert 60 <= iops <= 120
    assert sequential(disk, "read", 256 << 20, 1 << 20) == pytest.approx(150, rel=0.01)
    # no queue reordering: a deeper queue does not make a single actuator faster
    assert random_reads(disk, 4000, qd=32) == pytest.approx(iops, rel=0.05)


def test_seek_grows_with_distance_and_a_stream_out_of_order_costs_its_transfer() -> None:
    disk = models.Disk(GIB, 7200, seek_ms=8.5, track_to_track_ms=1.0, mb_s=150)
    assert disk.seek(0) == 0.0
    assert 0.001 < disk.seek(4096) < disk.seek(GIB // 100) < disk.seek(GIB // 10) < disk.seek(GIB)
    # 1 MiB reads of a 4 MiB window, delivered in a shuffled order, as the stack does
    rng = random.Random(3)
    now = 0.0
    for window in range(0, 64 << 20, 4 << 20):
        order = [window + (i << 20) for i in range(4)]
        rng.shuffle(order)
        for offset in order:
            now = disk.submit("read", offset, 1 << 20, now)
    assert (64 << 20) / now / models.MB == pytest.approx(150, rel=0.02)


def test_after_a_seek_the_piece_just_before_its_target_costs_no_second_seek() -> None:
    """The stack delivers the second 512 KiB piece of a stream before the first: the half
    track that passed under the head during the half turn after the seek is in the buffer."""
    disk = models.Disk(GIB, 7200, seek_ms=8.5, track_to_track_ms=1.0, mb_s=150)
    half_turn = 60 / 7200 / 2
    piece = 512 << 10
    start = 500 << 20
    second = disk.submit("read", start + piece, piece, 0.0)
    first = disk.submit("read", start, piece, 0.0)
    assert first == second  # in the buffer already: no platter time
    after = disk.submit("read", start + 2 * piece, piece, 0.0)
    assert after - second == pytest.approx(piece / 150e6)
    # a piece more than half a track before the target is a seek back
    far = disk.submit("read", start - (2 << 20), piece, 0.0)
    assert far - after > half_turn
    # writes keep no look-behind
    disk.submit("write", 100 << 20, piece, 0.0)
    assert disk.buffered_from == 100 << 20


def test_queued_ios_wait_for_the_actuator() -> None:
    disk = models.build(hdd(), GIB)
    first = disk.submit("read", 500 << 20, 4096, 0.0)
    second = disk.submit("read", 100 << 20, 4096, 0.0)
    assert second > 2 * first * 0.9  # the second started when the first was done


def test_a_sync_write_after_idle_waits_for_the_sector_to_come_round() -> None:
    """Appends with a flush between them, as a log does, get one write per turn at best."""
    disk = models.build(hdd(rpm=7200), GIB)
    now = 0.0
    offset = 0
    for _ in range(100):
        now = disk.submit("write", offset, 8192, now)
        now = disk.submit("flush", 0, 0, now) + 20e-6  # the next commit 20 us later
        offset += 8192
    per_write = now / 100
    assert per_write == pytest.approx(60 / 7200, rel=0.05)  # a turn: 120 commits/s


def test_a_battery_backed_cache_makes_flushes_free_until_it_fills() -> None:
    plain = models.build(hdd(cache_mb=1), GIB)
    bbu = models.build(hdd(cache_mb=1, battery_backed=True), GIB)
    for model in (plain, bbu):
        assert isinstance(model, models.WriteCache)
    rng = random.Random(2)

    def sync_writes(model: models.Model, n: int) -> list[float]:
        now, took = 0.0, []
        for _ in range(n):
            start = now
            now = model.submit("write", rng.randrange(GIB // 8192) * 8192, 8192, now)
            now = model.submit("flush", 0, 0, now)
            took.append(now - start)
        return took

    assert min(sync_writes(plain, 20)) > 0.004  # each flush waits for the platter
    took = sync_writes(bbu, 400)
    fits = 1_000_000 // 8192  # writes the 1 MB cache holds
    assert max(took[: fits - 1]) < 0.001  # sub-millisecond while the cache has room
    assert statistics.median(took[fits + 10 :]) > 0.004  # then at the disk's pace


def test_ssd_latency_and_channels() -> None:
    params = models.check({"model": "ssd", "read_us": 90, "write_us": 150, "channels": 4})
    ssd = models.build(params, GIB)
    assert ssd.submit("read", 0, 4096, 1.0) == pytest.approx(1.0 + 90e-6)
    ssd = models.build(params, GIB)
    done = [ssd.submit("read", i * 4096, 4096, 0.0) for i in range(8)]
    assert done[:4] == pytest.approx([90e-6] * 4)  # four channels in parallel
    assert done[4:] == pytest.approx([180e-6] * 4)  # then they queue


def test_over_provisioning_sets_the_sustained_write_rate() -> None:
    def rate(op: float) -> float:
        params = models.check(
            {"model": "ssd", "sustained_write_mb_s": 100, "over_provisioning": op, "mb_s": 1000}
        )
        return sequential(models.build(params, GIB), "write", 64 << 20, 128 << 10, qd=8)

    assert rate(0.07) < rate(0.28) < rate(1.0)
    assert rate(1.0) == pytest.approx(100, rel=0.05)  # write amplification 1 at 100 % spare


def test_raid0_splits_at_the_stripe_and_members_work_in_parallel() -> None:
    one = models.build(hdd(mb_s=100), GIB)
    raid = models.build(
        models.check(
            {
                "model": "raid0",
                "members": 4,
                "stripe_kb": 64,
                "member": {"model": "hdd", "mb_s": 100},
            }
        ),
        4 * GIB,
    )
    assert raid.size >= 4 * GIB
    assert sequential(raid, "read", 256 << 20, 1 << 20) == pytest.approx(
        4 * sequential(one, "read", 256 << 20, 1 << 20), rel=0.05
    )


def test_raid10_of_8_reads_randomly_like_several_disks_and_writes_like_4() -> None:
    member = {"model": "hdd", "rpm": 7200, "seek_ms": 8.5, "mb_s": 150}
    one = models.build(models.check(member), GIB)
    raid = models.build(models.check({"model": "raid10", "members": 8, "member": member}), 4 * GIB)
    single = random_reads(one, 3000, qd=32)
    ratio = random_reads(raid, 3000, qd=32) / single
    assert 4.0 <= ratio <= 8.0  # reads go to the free mirror of each pair
    one = models.build(models.check(member), GIB)
    raid = models.build(models.check({"model": "raid10", "members": 8, "member": member}), 4 * GIB)
    seq = sequential(raid, "write", 256 << 20, 1 << 20, qd=4) / sequential(
        one, "write", 64 << 20, 1 << 20, qd=4
    )
    assert seq == pytest.approx(4, rel=0.1)  # every write goes to both mirrors


def test_raid5_partial_writes_read_before_they_write() -> None:
    member = {"model": "hdd", "mb_s": 100}
    params = models.check({"model": "raid5", "members": 4, "stripe_kb": 64, "member": member})
    raid = models.build(params, 3 * GIB)
    small = raid.submit("write", 1 << 30, 4096, 0.0)
    raid = models.build(params, 3 * GIB)
    read = raid.submit("read", 1 << 30, 4096, 0.0)
    assert small > 1.8 * read  # read old data and parity, then write both
    raid = models.build(params, 3 * GIB)
    stripe = 3 * 64 * 1024  # a full row: data and parity written, nothing read
    full = raid.submit("write", 0, stripe, 0.0)
    raid = models.build(params, 3 * GIB)
    partial = raid.submit("write", 0, stripe - 4096, 0.0)
    assert partial > full


def test_null_costs_nothing() -> None:
    null = models.build(models.check({"model": "null"}), GIB)
    assert null.submit("write", 0, 1 << 20, 5.0) == 5.0


@pytest.mark.parametrize(
    ("table", "key", "allowed"),
    [
        ({"model": "tape"}, "model", "choose one of: hdd, ssd, raid0"),
        ({"model": "hdd", "rpm": 100}, "rpm", "give a whole number from 1000 to 20000"),
        ({"model": "hdd", "rpm": 7200.5}, "rpm", "give a whole number"),
        ({"model": "hdd", "battery_backed": "yes"}, "battery_backed", "give true or false"),
        ({"model": "hdd", "seek_ms": 2, "track_to_track_ms": 3}, "track_to_track_ms", "at most"),
        ({"model": "ssd", "rpm": 7200}, "rpm", "keys of a ssd model: read_us"),
        ({"model": "raid10", "members": 5, "member": {"model": "hdd"}}, "members", "even"),
        ({"model": "raid1", "members": 2}, "member", "give the member device"),
        ({"model": "raid1", "members": 2, "member": {"model": "raid0"}}, "member.model", "one"),
        # issue 43: an unknown member's choices were every model's, raid0 ... null
        (
            {"model": "raid1", "members": 2, "member": {"model": "tape"}},
            "member.model",
            "a member is one device: 'hdd' or 'ssd'",
        ),
        ({"model": "raid1", "members": 2, "member": {"model": "hdd", "rpm": 1}}, "member.rpm", ""),
    ],
)
def test_check_names_the_key_the_value_and_what_is_allowed(
    table: dict[str, Any], key: str, allowed: str
) -> None:
    with pytest.raises(models.ParamError) as err:
        models.check(table)
    assert err.value.key == key
    assert allowed in err.value.allowed


def test_a_model_device_in_a_testbed_file() -> None:
    (spec,) = parse_devices(
        {
            "sata": {
                "size": "1GiB",
                "model": "raid10",
                "members": 8,
                "cache_mb": 256,
                "battery_backed": True,
                "member": {"model": "hdd", "rpm": 7200},
            }
        }
    )
    params = spec.model_params
    assert params is not None
    assert params["member"]["seek_ms"] == 8.5  # defaults filled in
    assert spec.effective_rotational is True
    assert DeviceSpec.from_json(spec.as_json()) == spec
    assert spec.layout_key()["model"] == params
    assert models.describe(params).startswith("raid10 of 8 x (hdd 7200 rpm")
    assert "cache 256 MB battery-backed" in models.describe(params)
    (ssd,) = parse_devices({"ssd": {"size": "1GiB", "model": "ssd"}})
    assert ssd.effective_rotational is False
    (plain,) = parse_devices({"p": {"size": "1GiB"}})
    assert plain.model_params is None


def test_bad_model_keys_are_refused_with_their_path() -> None:
    with pytest.raises(BadInput) as err:
        parse_devices({"sata": {"size": "1GiB", "model": "hdd", "rpm": "fast"}})
    assert str(err.value) == (
        "devices.sata.rpm: 'fast' is not allowed; give a whole number from 1000 to 20000"
    )
    with pytest.raises(BadInput) as err:
        parse_devices({"sata": {"size": "1GiB", "model": "hdd", "rmp": 7200}})
    assert str(err.value).startswith("devices.sata.rmp: 7200 is not allowed; keys of a hdd")
    assert "and the device's own: size, backing_dir" in str(err.value)
    with pytest.raises(BadInput) as err:
        parse_devices({"sata": {"size": "1GiB", "rpm": 7200}})
    assert "devices.sata.rpm" in str(err.value)
    assert "model" in str(err.value)


def test_a_fault_on_a_model_device_becomes_error_filter_parameters(tmp_path: Path) -> None:
    (spec,) = parse_devices(
        {"wal": {"size": "64MiB", "model": "null", "fault": {"op": "write", "on": False}}}
    )
    assert spec.fault_params == {"op": "write", "error": "EIO", "rate": 1.0, "on": False}
    assert DeviceSpec.from_json(spec.as_json()) == spec
    assert spec.layout_key()["fault"] == spec.fault_params
    switch = str(tmp_path / "nbd" / "wal.fault")
    assert nbd.fault_args(tmp_path, "wal", spec.fault_params) == [
        "error-pwrite=EIO", "error-pwrite-rate=1", f"error-pwrite-file={switch}",
        "error-zero=EIO", "error-zero-rate=1", f"error-zero-file={switch}",
    ]  # fmt: skip
    some = {"op": "read", "error": "ENOSPC", "rate": 0.25, "on": True}
    assert nbd.fault_args(tmp_path, "wal", some) == [
        "error-pread=ENOSPC",
        "error-pread-rate=0.25",
        f"error-pread-file={switch}",
    ]
    (plain,) = parse_devices({"p": {"size": "64MiB", "model": "null"}})
    assert plain.fault_params is None


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (5, "devices.d.fault: 5 is not allowed; give a table, e.g."),
        ({"op": "flush"}, "devices.d.fault.op: 'flush' is not allowed; choose one of: write, read"),
        ({"error": "EBUSY"}, "devices.d.fault.error: 'EBUSY' is not allowed; choose one of: EIO"),
        ({"rate": 0}, "devices.d.fault.rate: 0 is not allowed; give the fraction of requests"),
        ({"rate": 1.5}, "devices.d.fault.rate: 1.5 is not allowed; give the fraction"),
        ({"rate": True}, "devices.d.fault.rate: True is not allowed; give the fraction"),
        ({"on": "yes"}, "devices.d.fault.on: 'yes' is not allowed; give true (failing once"),
        ({"after": 10}, "devices.d.fault.after: 10 is not allowed; keys of a fault: op, error"),
    ],
)
def test_bad_faults_name_the_key(fault: object, message: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_devices({"d": {"size": "64MiB", "model": "null", "fault": fault}})
    assert str(err.value).startswith(message)


def test_a_fault_needs_a_model_device() -> None:
    with pytest.raises(BadInput) as err:
        parse_devices({"d": {"size": "64MiB", "fault": {"op": "write"}}})
    assert str(err.value).startswith("devices.d.fault: {'op': 'write'} is not allowed; a fault")
    assert 'model = "null"' in str(err.value)


def test_the_requests_nbdkit_failed_are_counted_from_its_log_since_a_mark(tmp_path: Path) -> None:
    log = nbd.log_path(tmp_path, "wal")
    log.parent.mkdir()
    log.write_text(
        "nbdkit: python[1]: error: write: sending newstyle handshake: Broken pipe\n"
        "nbdkit: python.3: error: injecting EIO error into pwrite\n"
    )
    mark = nbd.log_mark(tmp_path, "wal")
    assert nbd.errors_since(tmp_path, "wal", 0) == (1, "injecting EIO error into pwrite")
    assert nbd.errors_since(tmp_path, "wal", mark) == (0, "")
    with log.open("a") as f:
        f.write("nbd_aio_command_completed: write: command failed: Input/output error\n")
        f.write("nbdkit: python.7: error: injecting ENOSPC error into zero\n")
        f.write("nbdkit: python.9: error: injecting EIO error into pwrite\n")
    assert nbd.errors_since(tmp_path, "wal", mark) == (2, "injecting EIO error into pwrite")
    assert nbd.errors_since(tmp_path, "gone", 0) == (0, "")
    assert nbd.log_mark(tmp_path, "gone") == 0


def test_status_shows_a_fault_armed_or_failing_now(tmp_path: Path) -> None:
    """``testbed status`` says whether a device's fault fails requests now: its switch file."""
    from iolab.testbed.lifecycle import DeviceStatus
    from iolab.testbed.spec import Limits

    (spec,) = parse_devices(
        {"wal": {"size": "64MiB", "model": "null", "fault": {"op": "write", "rate": 0.5}}}
    )
    switch = nbd.fault_file(tmp_path, "wal")
    switch.parent.mkdir()
    status = DeviceStatus(
        "wal", tmp_path / "mnt", "/dev/loop9", (7, 9), tmp_path / "f", 1 << 26, "ext4", (),
        True, False, Limits(), spec, fault_switch=switch,
    )  # fmt: skip
    assert status.fault == f"fault armed: 50% of the writes fail with EIO once {switch} exists"
    assert status.as_json()["fault_failing_now"] is False
    switch.touch()
    assert status.fault == f"fault on: 50% of the writes fail with EIO (remove {switch} to stop it)"
    doc = status.as_json()
    assert doc["fault_failing_now"] is True
    assert doc["fault"] == spec.fault_params  # as the file gave it
    plain = dataclasses.replace(status, spec=parse_devices({"d": {"size": "64MiB"}})[0])
    assert plain.fault is None
