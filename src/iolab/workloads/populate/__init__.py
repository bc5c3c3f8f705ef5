"""The population workload (``iolab populate``): rows loaded into one table by many connections.

``options.py`` its options model, ``workload.py`` what the runner calls, ``run.py`` the load,
``loading.py`` what each engine's part implements, ``dialects.py`` which engines have one, and
one module per engine (``postgres.py``, ``mariadb.py``, ``sqlite.py``); ``checkpoints.py``
the requested-checkpoint schedule; ``metrics.py`` the numbers it records."""
