-- iolab results database, version 6: the fdatasync latencies of a disk run's commit test.

-- One row per pass of a disk test that syncs after each write (the commit test: 8K write +
-- fdatasync), from fio's json+ bins converted to microseconds. The buckets are HdrHistogram's
-- (1 us .. 1 h, 3 significant digits), packed by iolab/latency/histogram.py, as in
-- latency_intervals; count, min and max are fio's bins', the sum that of the bins' values.
CREATE TABLE disk_sync_histograms (
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    test    TEXT NOT NULL,                -- the disk pass's test label, e.g. COMMIT8K Q1T1 fdatasync
    pass    INTEGER NOT NULL,             -- 0: the discarded warm-up pass
    count   INTEGER NOT NULL,
    sum_us  INTEGER NOT NULL,
    min_us  INTEGER NOT NULL,
    max_us  INTEGER NOT NULL,
    buckets BLOB NOT NULL,
    PRIMARY KEY (run_id, test, pass)
);
