"""sysbench in the lab: a sysbench script (one of its own ``oltp_*`` or the user's Lua) with the
user's arguments, run against a MariaDB or PostgreSQL iolab provisioned on the layout under test,
with the probes underneath.

- :mod:`.arguments`: which arguments pass through and which iolab owns (the driver and its
  connection, the histogram); the script, read and hashed.
- :mod:`.output`: sysbench's report, its ``--report-interval`` lines and its ``--histogram``.
- :mod:`.run`: ``sysbench SCRIPT prepare`` then ``run``, and what goes into the run's record.
"""
