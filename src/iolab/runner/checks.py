"""Everything checked of an experiment before any run is recorded: the one path that both
``iolab plan`` and ``iolab run`` take (through :func:`iolab.runner.experiment.make_plan`).

The file itself was validated when it was read (:mod:`iolab.config.experiment`); here are the
checks that look at the machine and the results database: each cell's workload options, engine
settings (read by the engine's own binary), directories and free space (the same checks a
single command makes, see :class:`iolab.workloads.interface.Workload`), the testbed devices' backing
directories, and whether the experiment's name is free for this definition.
"""

from __future__ import annotations

from iolab.config.experiment import Experiment
from iolab.config.fields import in_file
from iolab.errors import BadInput
from iolab.store import Store
from iolab.store import experiments as store_experiments
from iolab.workloads.interface import Checked
from iolab.workloads.registry import WORKLOADS


def check(experiment: Experiment, store: Store | None) -> None:
    """Raise BadInput (naming the file's key) for anything a run of this file would refuse."""
    if store is not None:
        check_name(experiment, store)
    if experiment.spec.devices:
        from iolab import testbed

        up = {d.name for d in testbed.status() if d.up}
        specs = testbed.parse_devices(experiment.spec.devices, "devices")
        testbed.check_space([s for s in specs if s.name not in up])
    kind = WORKLOADS[experiment.kind]
    checked = Checked()
    for cell in experiment.cells:
        try:
            kind.check(cell.run_params, checked)
        except BadInput as exc:
            raise in_file(exc, cell.values, str(cell.params["layout"])) from None


def check_name(experiment: Experiment, store: Store) -> None:
    """An experiment's name is its identity: the same name may carry new parameters (new cells
    beside the old ones) but not another workload kind, nor the name of single commands' runs
    (``populate sqlite``, ``disk /mnt/ssd``), or the stored runs would be read as the new kind."""
    name = experiment.name
    found = store_experiments.find(store, name)
    if found is None:
        if store_experiments.find_any(store, name) is not None:
            raise BadInput(
                "experiment.name",
                name,
                f"runs of single iolab commands are stored under this name in {store.path}; "
                "give the experiment a name of its own",
            )
        return
    stored = store_experiments.config_of(store, found).get("workload") or {}
    was = stored.get("kind") if isinstance(stored, dict) else None
    if was is not None and was != experiment.kind:
        raise BadInput(
            "experiment.name",
            name,
            f"an experiment of this name in {store.path} is a {was} experiment, and this file's "
            f"workload is {experiment.kind}; give it another name (a name keeps one workload kind)",
        )
