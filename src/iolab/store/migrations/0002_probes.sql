-- iolab results database, version 2: what the probes recorded during each run, and server logs.

CREATE TABLE probe_runs (
    run_id        INTEGER PRIMARY KEY REFERENCES runs(id),
    interval      REAL NOT NULL,           -- seconds between samples of the series
    wait_interval REAL NOT NULL,           -- seconds between wait-event samples
    duration      REAL NOT NULL,           -- seconds from t0 to the end of recording
    roles         TEXT NOT NULL,           -- JSON: role, path, device, kind, disk, filesystem
    notes         TEXT NOT NULL            -- JSON list of what the probes said (missing views...)
);

-- One row per series; the values are packed (see iolab/store/probes.py), so a 10-hour run at
-- 1 s costs a few hundred kB per series and reports that need no values never unpack them.
CREATE TABLE series (
    run_id    INTEGER NOT NULL REFERENCES runs(id),
    id        INTEGER NOT NULL,
    probe     TEXT NOT NULL,               -- device, host, postgres, mariadb, sqlite, workload
    name      TEXT NOT NULL,               -- write_mbps, wal_lsn_mbps, rows_per_s, ...
    subject   TEXT NOT NULL,               -- device, CPU core, backend type/object, file, or ''
    role      TEXT NOT NULL,               -- data, wal, temp, target, data+wal, or ''
    unit      TEXT NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('rate', 'ratio', 'gauge')),
    t0        REAL NOT NULL,               -- end of the first value's interval (s from t0)
    interval  REAL NOT NULL,
    end_s     REAL NOT NULL,               -- end of the last value's interval
    n         INTEGER NOT NULL,
    total_num REAL NOT NULL,               -- exact sums of the readings' fractions: a rate's
    total_den REAL NOT NULL,               -- total, a ratio's weighted mean = num / den
    peak      REAL,
    encoding  TEXT NOT NULL,               -- f32-shuffle-zlib
    data      BLOB NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE INDEX series_by_name ON series(run_id, probe, name);

CREATE TABLE waits (
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    source      TEXT NOT NULL,             -- pg_stat_activity | performance_schema
    class       TEXT NOT NULL,
    event       TEXT NOT NULL,
    samples     INTEGER NOT NULL,
    share       REAL NOT NULL,
    est_seconds REAL NOT NULL,
    PRIMARY KEY (run_id, source, class, event)
);

CREATE TABLE checkpoints (
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    seq     INTEGER NOT NULL,
    start_s REAL NOT NULL,
    end_s   REAL,                          -- NULL: still running when recording stopped
    pages   INTEGER,
    kind    TEXT NOT NULL,
    detail  TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE run_logs (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name   TEXT NOT NULL,                  -- e.g. 'server'
    text   TEXT NOT NULL,
    PRIMARY KEY (run_id, name)
);
