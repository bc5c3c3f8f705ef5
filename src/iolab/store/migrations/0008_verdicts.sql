-- iolab results database, version 8: a run's verdict, kept with the run.

-- What limited a run (docs/diagnosis.md), computed once when the run is stored, against the
-- `iolab disk` runs that had finished by the time it ended, and never again: a disk run added
-- later does not rewrite it. Runs stored before this table get theirs on first read, against
-- the disk runs that had finished by their end time, and are then fixed the same way.
CREATE TABLE verdicts (
    run_id      INTEGER PRIMARY KEY REFERENCES runs(id),
    diagnosis   TEXT,                      -- JSON of the verdict; NULL: the run recorded no probes
    disk_runs   TEXT NOT NULL,             -- JSON object: the run's device -> the disk run whose
                                           -- best tests were that device's measured limits
    computed_at TEXT NOT NULL,
    basis       TEXT NOT NULL CHECK (basis IN ('stored', 'first read'))
);
