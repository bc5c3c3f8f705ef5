"""Probes: what happened underneath every run (devices, host, engine counters, waits,
checkpoints), sampled beside the workload by :class:`iolab.probes.recorder.Recorder`."""
