"""``iolab testbed``: emulated devices (loop files, filesystems, I/O limits) on this machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from iolab.cli.console import stdout as out
from iolab.cli.options import JsonOption
from iolab.units import format_bytes

if TYPE_CHECKING:
    from rich.table import Table

    from iolab import testbed

app = typer.Typer(
    help="Emulated devices: loop files with a filesystem, mounted under iolab's own directory, "
    "with optional IOPS and MB/s limits, or served through a device model (model = 'hdd', "
    "'ssd', 'raid0', 'raid1', 'raid10', 'raid5': every I/O takes the time the disk, SSD or "
    "array would take; needs nbdkit, nbdkit-plugin-python, libnbd-bin and fuse3). Name them "
    "in paths as device:NAME (e.g. `iolab populate --wal-dir device:hdd`). Needs root. "
    "See docs/testbed.md.",
    no_args_is_help=True,
)


def _table(devices: list[testbed.DeviceStatus]) -> Table:
    from rich.table import Table

    from iolab import testbed

    table = Table(title=f"testbed ({testbed.state_dir()})", title_justify="left")
    for col in (
        "device", "state", "mount point", "loop", "size", "fs", "model", "limits", "backing file"
    ):  # fmt: skip
        table.add_column(col)
    for d in devices:
        state = "up" if d.up else f"[red]broken[/]: {d.problem}"
        loop = f"{d.loop} ({d.majmin})" if d.loop else "-"
        if d.direct_io is False:
            loop += " [yellow]buffered[/]"
        table.add_row(
            d.name,
            state,
            str(d.mount_point),
            loop,
            format_bytes(d.size),
            d.filesystem,
            escape(d.model or "-") + (f"\n[red]{escape(d.fault)}[/]" if d.fault else ""),
            d.limits.describe(),
            str(d.backing_file),
        )
    return table


@app.command("up")
def up(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="TESTBED",
            help="TOML file with [devices.NAME] tables (a testbed or an experiment file; a "
            "regular file of at most 1 MiB).",
            show_default=False,
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Bring up the devices of TESTBED: a preallocated loop file in backing_dir, mkfs, a mount
    under iolab's directory, and the limits in the testbed's cgroup. A device with a model is
    served by nbdkit running the model (unix socket under iolab's directory), exposed as a file
    by nbdfuse, and the loop device reads and writes that file; without nbdkit, FUSE or loop
    devices it is refused with the reason (exit 2). A model device's fault = {...} fails its
    requests through nbdkit's error filter while STATE_DIR/nbd/NAME.fault exists (made at up
    for on = true; touch it to switch a fault on). Devices already up with
    the same settings are kept (changed limits are applied in place); others are left alone."""
    from iolab import testbed
    from iolab.cli.progress import ProgressView

    specs = testbed.load_file(file)
    with ProgressView() as view:
        bed = testbed.up(specs, view)
    if as_json:
        print(json.dumps([d.as_json() for d in bed.devices], indent=2))
        return
    out.print(_table(list(bed.devices)))
    for d in bed.devices:
        out.print(f"[dim]use it as device:{d.name} (e.g. --wal-dir device:{d.name})[/]")


@app.command("down")
def down(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[NAME]...", help="Devices to take down (default: all).", show_default=False
        ),
    ] = None,
) -> None:
    """Unmount, detach and remove the devices iolab's state file names (all, or NAME...), and
    the cgroup after the last; for model devices also stop their nbdfuse and nbdkit (found by
    iolab's own socket and FUSE paths in their command lines). Also cleans what a crashed run
    left behind. Only what carries iolab's mark is removed (its loop file with the recorded
    inode and token, its own mount points and cgroup); anything else the state names is left
    in place and named in a warning. A state directory or file others could write is refused.
    Output that is no longer read (`| head -1`) or cannot be written (`>&-`, a full disk) does
    not stop it: every device is taken down."""
    from iolab import testbed
    from iolab.cli.progress import ProgressView

    with ProgressView() as view:
        done = testbed.down(view, names or None)
    if done:
        out.print(f"taken down: {escape(', '.join(done))}")
        if any(" in place: " in w for w in view.warnings):
            out.print(
                "what the state named that is not iolab's is left in place (see the warnings) "
                "and forgotten"
            )
    else:
        out.print("no testbed devices were up")


@app.command("status")
def status(as_json: JsonOption = False) -> None:
    """List the testbed's devices: state, mount point, loop device (maj:min), size,
    filesystem, model and fault (failing now or armed), limits in force and backing file. A
    model device is broken when its nbdkit or nbdfuse is gone or its FUSE file does not answer
    a stat within 2 s; `up` makes a broken device afresh."""
    from iolab import testbed

    devices = testbed.status()
    if as_json:
        print(json.dumps([d.as_json() for d in devices], indent=2))
        return
    if not devices:
        out.print("no testbed devices are up")
        return
    out.print(_table(devices))
