"""pgbench in the lab (``iolab pgbench``): the user's pgbench arguments and scripts, run against a
PostgreSQL iolab provisioned on the layout under test (or a server of the user's, ``--dsn``),
with the probes underneath.

``options.py`` its options model (named keys: clients, threads, scale, duration, rate, script),
``workload.py`` what the runner calls, ``arguments.py`` which arguments pass through and which
iolab owns (the connection, the transaction log's place) and the scripts read and hashed,
``output.py`` pgbench's summary, ``-P`` progress lines and ``-l`` transaction logs, ``run.py``
``pgbench -i`` then the measured run and the run's record; ``metrics.py`` the numbers it
records. What it shares with sysbench is in :mod:`iolab.workloads.drivers`.
"""
