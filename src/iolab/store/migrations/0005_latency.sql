-- iolab results database, version 5: the latency of every operation of a load, as histograms.

-- One row per loader, operation kind and interval (the probe interval, split where the
-- warm-up ended). The buckets are HdrHistogram's (1 us .. 1 h, 3 significant digits), packed
-- by iolab/latency/histogram.py (zlib over 64-bit index, count pairs); count, sum, min and max
-- are exact.
CREATE TABLE latency_intervals (
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    loader  INTEGER NOT NULL,
    kind    TEXT NOT NULL,                -- transaction, statement, commit
    seq     INTEGER NOT NULL,             -- grid interval number from the start of the load
    warmup  INTEGER NOT NULL,             -- 1: inside the warm-up, left out of the results
    start_s REAL NOT NULL,                -- seconds from the start of the load
    end_s   REAL NOT NULL,
    count   INTEGER NOT NULL,
    sum_us  INTEGER NOT NULL,
    min_us  INTEGER NOT NULL,
    max_us  INTEGER NOT NULL,
    buckets BLOB NOT NULL,
    PRIMARY KEY (run_id, kind, loader, seq, warmup)
);

-- Each run's histogram per operation kind over its measured part (the warm-up left out): the
-- sum of its intervals, kept so that a report reads one row per run and kind.
CREATE TABLE latency_totals (
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    kind    TEXT NOT NULL,
    count   INTEGER NOT NULL,
    sum_us  INTEGER NOT NULL,
    min_us  INTEGER NOT NULL,
    max_us  INTEGER NOT NULL,
    buckets BLOB NOT NULL,
    PRIMARY KEY (run_id, kind)
);

-- Where the load's start falls: Unix time and seconds on the probes' time axis; the grid.
CREATE TABLE latency_runs (
    run_id        INTEGER PRIMARY KEY REFERENCES runs(id),
    interval      REAL NOT NULL,
    start_unix    REAL NOT NULL,
    probe_offset  REAL NOT NULL,
    warmup_s      REAL                    -- where the warm-up ended; NULL: no warm-up
);
