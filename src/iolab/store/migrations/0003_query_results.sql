-- iolab results database, version 3: per-query results of query workloads (TPC-H).

CREATE TABLE query_results (
    run_id    INTEGER NOT NULL REFERENCES runs(id),
    query     INTEGER NOT NULL,            -- TPC-H query number, 1 to 22
    seconds   REAL,                        -- elapsed; NULL when the query did not finish
    rows      INTEGER,                     -- rows returned; NULL when it did not finish
    answer_ok INTEGER,                     -- 1 matches the reference, 0 does not, NULL unchecked
    error     TEXT,                        -- why it did not finish or is wrong
    PRIMARY KEY (run_id, query)
);
