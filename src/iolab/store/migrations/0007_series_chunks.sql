-- iolab results database, version 7: probe series written in chunks while a run is recording.

-- The recorder appends each series' new values here every second or so, from its own thread
-- and connection, so `iolab serve` can draw a run while it runs and a crash loses at most the
-- last chunk. When the run is finished its whole series go into `series` and its chunks are
-- deleted in the same transaction: a run's samples are in one table or the other, never both.
CREATE TABLE series_chunks (
    run_id   INTEGER NOT NULL REFERENCES runs(id),
    series   INTEGER NOT NULL,             -- the series' number in this recording
    start    INTEGER NOT NULL,             -- index of the chunk's first value in the series
    probe    TEXT NOT NULL,
    name     TEXT NOT NULL,
    subject  TEXT NOT NULL,
    role     TEXT NOT NULL,
    unit     TEXT NOT NULL,
    kind     TEXT NOT NULL CHECK (kind IN ('rate', 'ratio', 'gauge')),
    interval REAL NOT NULL,
    n        INTEGER NOT NULL,
    encoding TEXT NOT NULL,                -- f32-shuffle-zlib, as series.data
    data     BLOB NOT NULL,
    PRIMARY KEY (run_id, series, start)
);

-- The waits and checkpoints the probes that can tell them have found so far (PostgreSQL's
-- wait sampler and checkpoint log), rewritten at each flush; deleted with the chunks.
CREATE TABLE live_findings (
    run_id      INTEGER PRIMARY KEY REFERENCES runs(id),
    waits       TEXT NOT NULL,             -- JSON list of [source, class, event, samples, share, est_seconds]
    checkpoints TEXT NOT NULL              -- JSON list of [start_s, end_s, pages, kind, detail]
);
