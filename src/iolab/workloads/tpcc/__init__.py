"""The TPC-C-derived OLTP workload (``iolab tpcc``): docs/tpcc.md.

``spec``: the specification's constants, random distributions and schema; ``data``: the
initial database of clause 4.3, generated once per warehouse count into the cache;
``transactions``: the five transactions' inputs and their client-side SQL; ``postgres``,
``mariadb``, ``sqlite``: each engine's DDL, bulk load, server-side routines and counters;
``driver``: the virtual users, the measured window and its numbers; ``consistency``: the
conditions checked after every run.
"""
