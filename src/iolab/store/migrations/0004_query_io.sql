-- iolab results database, version 4: what the devices did during each query.

-- JSON: block device name -> {"roles": [...], "read_bytes", "write_bytes", "reads", "writes",
-- "read_ms", "write_ms", "testbed"}, from /proc/diskstats before and after the timed query;
-- NULL for queries recorded before version 4.
ALTER TABLE query_results ADD COLUMN io TEXT;
