"""pgbench in the lab: the user's pgbench arguments and scripts, run against a PostgreSQL iolab
provisioned on the layout under test, with the probes underneath.

- :mod:`.arguments`: which arguments pass through and which iolab owns (the connection, the
  transaction log's place); the scripts the run uses, read and hashed.
- :mod:`.output`: pgbench's summary, its ``-P`` progress lines and its ``-l`` transaction logs.
- :mod:`.run`: ``pgbench -i`` then the measured run, and what goes into the run's record.
"""
