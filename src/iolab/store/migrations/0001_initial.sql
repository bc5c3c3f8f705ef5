-- iolab results database, version 1: experiments, cells, runs, environments, disk results.

CREATE TABLE environments (
    id          TEXT PRIMARY KEY,          -- hash of the snapshot
    captured_at TEXT NOT NULL,
    data        TEXT NOT NULL              -- JSON: kernel, CPU, memory, devices, versions
);

CREATE TABLE experiments (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,              -- 'command' for one-cell runs of iolab disk etc.
    config     TEXT NOT NULL,              -- JSON of the resolved configuration
    created_at TEXT NOT NULL
);

CREATE TABLE cells (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    id            TEXT NOT NULL,           -- hash of the resolved parameters
    workload      TEXT NOT NULL,           -- disk | populate | tpch
    params        TEXT NOT NULL,           -- JSON
    PRIMARY KEY (experiment_id, id)
);

CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    cell_id       TEXT NOT NULL,
    repetition    INTEGER NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('planned', 'running', 'done', 'failed', 'aborted')),
    started_at    TEXT,
    ended_at      TEXT,
    env_id        TEXT REFERENCES environments(id),
    pid           INTEGER,                 -- the iolab process running it, to find stale runs
    boot_id       TEXT,
    error         TEXT,
    summary       TEXT NOT NULL DEFAULT '{}',
    FOREIGN KEY (experiment_id, cell_id) REFERENCES cells(experiment_id, id)
);
CREATE INDEX runs_by_cell ON runs(experiment_id, cell_id);

CREATE TABLE disk_passes (
    run_id       INTEGER NOT NULL REFERENCES runs(id),
    test         TEXT NOT NULL,            -- label, e.g. SEQ1M Q8T1 read
    rw           TEXT NOT NULL,            -- fio rw mode
    bs           INTEGER NOT NULL,
    qd           INTEGER NOT NULL,
    threads      INTEGER NOT NULL,
    pass         INTEGER NOT NULL,         -- 0 = discarded warm-up
    seconds      REAL NOT NULL,
    mbps         REAL NOT NULL,            -- decimal MB/s
    iops         REAL NOT NULL,
    lat_mean_us  REAL NOT NULL,
    lat_p50_us   REAL NOT NULL,
    lat_p99_us   REAL NOT NULL,
    lat_p999_us  REAL NOT NULL,
    sync_mean_us REAL,
    sync_p50_us  REAL,
    sync_p99_us  REAL,
    sync_p999_us REAL,
    io_bytes     INTEGER NOT NULL,
    device_bytes INTEGER,
    PRIMARY KEY (run_id, test, pass)
);
