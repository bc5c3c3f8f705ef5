-- iolab results database, version 4: what the devices did during each query, and when it ran.

-- JSON: block device name -> {"roles": [...], "read_bytes", "write_bytes", "reads", "writes",
-- "read_ms", "write_ms", "testbed"}, from /proc/diskstats before and after the timed query;
-- NULL for queries recorded before version 4.
ALTER TABLE query_results ADD COLUMN io TEXT;
-- When the timed query began, in seconds on the run's probe time axis (its t0), so the
-- timeline can mark each query; NULL when the probes were off.
ALTER TABLE query_results ADD COLUMN start_s REAL;
