"""sysbench in the lab (``iolab sysbench``): a sysbench script (one of its own ``oltp_*`` or the
user's Lua) with the user's arguments, run against a MariaDB or PostgreSQL iolab provisioned on
the layout under test, with the probes underneath.

``options.py`` its options model (the script; named keys: threads, duration, rate, tables,
table_size), ``workload.py`` what the runner calls, ``arguments.py`` which arguments pass
through and which iolab owns (the driver and its connection, the histogram) and the script read
and hashed, ``output.py`` sysbench's report, ``--report-interval`` lines and ``--histogram``,
``run.py`` ``prepare`` then ``run`` and the run's record; ``metrics.py`` the numbers it records.
What it shares with pgbench is in :mod:`iolab.workloads.drivers`.
"""
