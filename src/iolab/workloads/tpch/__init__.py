"""TPC-H (``iolab tpch``): the data loaded onto the layout, then the 22 queries, checked.

``options.py`` its options model, ``workload.py`` what the runner calls, ``run.py`` the load and
the queries, ``data.py`` the generated data's cache, ``answers.py`` the queries and their
reference answers, ``dialect.py`` what each engine's part implements, ``dialects.py`` which
engines have one, and one module per engine (``duckdb.py``, ``postgres.py``, ``mariadb.py``);
``metrics.py`` the numbers it records."""
