"""The seed examples on device models: they parse, and their models give the rates they state."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.config import experiment as config
from iolab.testbed import load_file, models
from tests.unit.test_device_models import sequential

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GIB = 1 << 30


def _flash(params: dict[str, object]) -> models.Model:
    """The flash alone (no write cache), so a long write shows the sustained rate."""
    return models.build({**params, "cache_mb": 0, "power_loss_protection": False}, GIB)


def test_seed_000_models_compares_the_scsi_array_and_two_ssd_formats_over_1_4_16_files() -> None:
    exp = config.load(EXAMPLES / "seed-000-file-layouts-models.toml")
    assert len(exp.cells) == 9
    assert {c.values["files"] for c in exp.cells} == {1, 4, 16}
    assert exp.baseline is not None and exp.baseline.values == {"layout": "scsi", "files": 1}
    devices = {d.name: d for d in load_file(EXAMPLES / "seed-000-file-layouts-models.toml")}
    assert sorted(devices) == ["sata", "scsi", "ssd100", "ssd50"]
    rates = {}
    for name in ("ssd100", "ssd50"):
        params = devices[name].model_params
        assert params is not None and params["model"] == "raid0"
        member = _flash(params["member"])
        rates[name] = sequential(member, "write", 256 << 20, 1 << 20, qd=8)
    # the comment's figures: write amplification 2.3 at 28 % spare, 1 at 156 %
    assert rates["ssd100"] == pytest.approx(550 / (1.28 / 0.56), rel=0.03)
    assert rates["ssd50"] == pytest.approx(550, rel=0.03)


def test_seed_001_models_puts_the_log_on_the_data_array_sata_and_two_ssd_raids() -> None:
    path = EXAMPLES / "seed-001-log-device-models.toml"
    exp = config.load(path)
    assert exp.name == "seed-001-log-device-models"
    assert [c.values["layout"] for c in exp.cells] == ["shared", "sata", "ssd_raid1", "ssd_raid0"]
    assert exp.baseline is not None and exp.baseline.values == {"layout": "sata"}
    wal = {c.values["layout"]: c.params["wal_dir"] for c in exp.cells}
    assert wal == {
        "shared": "device:data/wal",
        "sata": "device:sata",
        "ssd_raid1": "device:ssd_raid1",
        "ssd_raid0": "device:ssd_raid0",
    }
    # the seed's load: 16 connections, a commit per row; the data always on the SCSI array, in
    # a directory of its own so that the shared layout's log can sit beside it
    for cell in exp.cells:
        assert cell.params["connections"] == 16 and cell.params["commit_every"] == 1
        assert cell.params["data_dirs"] == ["device:data/data"]
        assert cell.params["settings"] == {"max_wal_size": "64MB"}
    devices = {d.name: d for d in load_file(path)}
    assert sorted(devices) == ["data", "sata", "ssd_raid0", "ssd_raid1"]
    kinds = {n: (d.model_params or {}).get("model") for n, d in devices.items()}
    assert kinds == {"data": "raid10", "sata": "raid10", "ssd_raid1": "raid1", "ssd_raid0": "raid0"}
    # the comment's figure: 240 MB/s sustained per half at the model's default 28 % spare
    params = devices["ssd_raid0"].model_params
    assert params is not None
    flash = _flash(params["member"])
    assert sequential(flash, "write", 256 << 20, 1 << 20, qd=8) == pytest.approx(
        550 / (1.28 / 0.56), rel=0.03
    )


def test_seed_004_models_has_six_ssds_whose_sum_stays_below_the_stack() -> None:
    exp = config.load(EXAMPLES / "seed-004-tpch-models.toml")
    assert len(exp.cells) == 6
    assert {c.params["files"] for c in exp.cells} == {2, 4, 6}
    devices = load_file(EXAMPLES / "seed-004-tpch-models.toml")
    assert [d.name for d in devices] == [f"ssd{i}" for i in range(6)]
    params = devices[0].model_params
    assert params is not None
    flash = _flash(params)
    read = sequential(flash, "read", 256 << 20, 128 << 10, qd=8)
    write = sequential(flash, "write", 256 << 20, 128 << 10, qd=8)
    assert read == pytest.approx(57, rel=0.03)  # the comment: 50-57 MB/s in 128-256 KiB reads
    assert sequential(flash, "read", 256 << 20, 256 << 10, qd=8) == pytest.approx(50, rel=0.03)
    assert write == pytest.approx(50, rel=0.05)
    # six of them read below the 400 MB/s the emulation carries on a 2-core machine
    assert 6 * read < 400
