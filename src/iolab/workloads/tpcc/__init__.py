"""The TPC-C-derived OLTP workload (``iolab tpcc``): docs/tpcc.md.

``spec``: the specification's constants, random distributions and schema; ``data``: the
initial database of clause 4.3, generated once per warehouse count into the cache;
``transactions``: the five transactions' inputs and their client-side SQL; ``dialect``: what
each engine's part implements, and ``postgres``, ``mariadb``, ``sqlite`` those parts (DDL, bulk
load, server-side routines, counters); ``driver``: the virtual users, the measured window and
its numbers; ``consistency``: the conditions checked after every run; ``steps``: load, measure
and judge on a running engine; ``run``: a whole run's options, checks and run.
"""
