"""A fleet: one experiment's runs placed on many hosts through Ray (the optional extra
``iolab[fleet]``). :mod:`iolab.fleet.cluster` starts, joins, inspects and stops the Ray
cluster, each host labelled with the custom resource ``iolab-host:NAME`` of 1;
:mod:`iolab.fleet.executor` runs the runner's one-cell path on the host a run is placed on.
Ray is imported only here, and only when a fleet is used."""
