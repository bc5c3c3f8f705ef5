-- iolab results database, version 9: a verdict checked by the runs that relieve it.

-- `iolab why RUN --check` runs the run's cell again, as it was and with the limit its verdict
-- names relieved (docs/diagnosis.md, "The check"), and keeps what that said here, beside the
-- verdict (table verdicts). The re-runs are runs of their own, in an experiment of kind 'check'
-- (experiment_id), so that they never join the checked run's cells. A run checked again keeps
-- every check; readers show the newest.
CREATE TABLE checked_verdicts (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    limit_checked TEXT NOT NULL,           -- the verdict's limit (none: its candidates in turn)
    outcome       TEXT NOT NULL CHECK (outcome IN ('confirmed', 'refuted', 'unknown')),
    moved         TEXT,                    -- the limit whose relief moved the run, if one did
    ratio         REAL,                    -- the deciding relief's speed-up (relieved / as it was)
    ci_low        REAL,                    -- its 95 % interval
    ci_high       REAL,
    base_runs     TEXT NOT NULL,           -- JSON list: the re-runs as it was
    relieved_runs TEXT NOT NULL,           -- JSON list: the re-runs relieved
    sentence      TEXT NOT NULL,           -- what it said, as shown
    steps         TEXT NOT NULL,           -- JSON: each relief tried, its runs, figures, outcome
    experiment_id INTEGER REFERENCES experiments(id),
    checked_at    TEXT NOT NULL
);
CREATE INDEX checked_verdicts_by_run ON checked_verdicts(run_id);
