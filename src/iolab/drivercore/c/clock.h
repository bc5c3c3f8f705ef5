/* A loader's operation clock: the C port of iolab.latency.recording.LoaderClock.
 *
 * Same grid (a fine start, then whole intervals, from Python's _grid_ns), deadline, --rate
 * schedule (row r of loader i due at t0 + (i + r * loaders) / rate), warm-up by time or rows,
 * and interval closing, decision for decision; only the storage differs: each operation's
 * latency is counted straight into its HDR bucket (hdr.h) per operation kind, and a closed
 * interval becomes a sparse record on the clock's list, which the Python side takes under the
 * clock's mutex (tests/unit/test_drivercore_populate.py drives both clocks over one sequence
 * of times and compares their intervals).
 *
 * One thread owns a clock (its loader); any other thread may call clock_end_warmup and
 * clock_take. Times are CLOCK_MONOTONIC nanoseconds, time.perf_counter_ns's clock. */
#ifndef IOLAB_CLOCK_H
#define IOLAB_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define CLOCK_NEVER INT64_MAX /* Python's sys.maxsize: "not set" */
#define CLOCK_KINDS 3         /* recording.KIND_ORDER: transaction, statement, commit */
enum { KIND_TRANSACTION = 0, KIND_STATEMENT = 1, KIND_COMMIT = 2 };

/* What every loader's clock of one load shares; the integers as Python computes them. */
typedef struct {
    int64_t step_ns, fine_steps, ratio; /* recording._grid_ns(interval_s) */
    int64_t deadline_ns;                /* round(duration_s * 1e9), or -1: none */
    int64_t warm_ns;                    /* round(warmup_s * 1e9), or -1: no time warm-up */
    int warm_by_rows;                   /* a warm-up counted in rows (ended by clock_end_warmup) */
    double rate;                        /* rows per second over all loaders, 0: none */
    int loaders;
    int timed; /* record latencies (else pace and stop only) */
} clock_config;

/* One kind's latencies in the open interval: counts by bucket, the buckets touched (to close
 * in O(touched), not O(HDR_BUCKETS)), exact count, sum, min and max in us. */
typedef struct {
    int64_t *counts; /* HDR_BUCKETS slots, allocated on first use */
    int32_t *touched;
    int ntouched;
    int64_t total, sum, min, max;
} clock_hist;

/* A closed interval of one kind: sparse (bucket, count) pairs and the exact figures. */
typedef struct clock_interval {
    struct clock_interval *next;
    int kind, warm;
    int64_t seq, start, end;
    int64_t total, sum, min, max;
    int n;
    int32_t *index;
    int64_t *count;
} clock_interval;

typedef struct {
    int index, timed;
    int64_t t0, step, fine_steps, ratio, fine_end, deadline;
    double ns_per_row, phase; /* the rate's schedule (0: unpaced) */
    int64_t rows;             /* rows scheduled so far */
    int64_t warm_until;       /* rows due before it are the warm-up's (0: none) */
    int64_t warm_rows;
    int warm;                  /* in the warm-up (the owner's) */
    _Atomic int64_t warm_end;  /* where the warm-up ends; another thread may set it once */
    atomic_int rows_warm_open; /* a warm-up of rows not ended yet: clock_end_warmup may end it */
    int64_t seq, start, roll_at;
    clock_hist kinds[CLOCK_KINDS];
    int failed; /* out of memory: intervals lost (said by clock_take's caller) */
    pthread_mutex_t lock;
    clock_interval *closed, *closed_tail;
} loader_clock;

int clock_init(loader_clock *c, const clock_config *cfg, int index, int64_t t0_ns);
void clock_free(loader_clock *c);
int64_t clock_now(void); /* CLOCK_MONOTONIC ns */
/* The next operation's start (its due time under a rate, else now) in *start: 1; 0 when
 * can_stop and the duration is up (LoaderClock._next). */
int clock_next(loader_clock *c, int64_t now, int64_t rows, int can_stop, int64_t *start);
static inline int clock_paced(const loader_clock *c) { return c->ns_per_row != 0.0; }
void clock_record(loader_clock *c, int kind, int64_t started, int64_t now);
void clock_end_warmup(loader_clock *c, int64_t at_ns);
void clock_finish(loader_clock *c, int64_t end_ns);
clock_interval *clock_take(loader_clock *c); /* the closed intervals, oldest first; the caller frees */
void clock_interval_free(clock_interval *i);

#endif
