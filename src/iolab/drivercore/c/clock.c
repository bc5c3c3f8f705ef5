/* The loader clock (clock.h): LoaderClock's decisions, line for line, with its method names in
 * the comments; latencies counted into HDR buckets instead of appended to an array. */
#include "clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdr.h"

#define TWO_63 9223372036854775808.0 /* the double of 2**63: min(x, sys.maxsize) is maxsize */

int64_t clock_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t floordiv(int64_t a, int64_t b) { /* Python's // */
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t sat_add(int64_t a, int64_t b) { /* Python's ints do not overflow; ours stop */
    return (b > 0 && a > INT64_MAX - b) ? INT64_MAX : a + b;
}

static double capped(double v) { return v >= TWO_63 ? TWO_63 : v; } /* min(v, _NEVER) */

int clock_init(loader_clock *c, const clock_config *cfg, int index, int64_t t0) {
    memset(c, 0, sizeof *c);
    c->index = index;
    c->timed = cfg->timed;
    c->t0 = t0;
    c->step = cfg->step_ns > 0 ? cfg->step_ns : 1;
    c->fine_steps = cfg->fine_steps;
    c->ratio = cfg->ratio > 0 ? cfg->ratio : 1;
    c->fine_end = t0 + c->fine_steps * c->step;
    c->deadline = cfg->deadline_ns >= 0 ? sat_add(t0, cfg->deadline_ns) : CLOCK_NEVER;
    if (cfg->rate > 0) {
        c->ns_per_row = capped((double)cfg->loaders * 1e9 / cfg->rate);
        c->phase = capped((double)index * 1e9 / cfg->rate);
    }
    c->warm_until = cfg->warm_ns >= 0 ? t0 + cfg->warm_ns : 0;
    c->warm = cfg->warm_ns >= 0 || cfg->warm_by_rows;
    atomic_init(&c->warm_end, cfg->warm_ns >= 0 ? t0 + cfg->warm_ns : CLOCK_NEVER);
    atomic_init(&c->rows_warm_open, c->warm && cfg->warm_ns < 0);
    c->start = t0;
    c->roll_at = t0 + c->step;
    return pthread_mutex_init(&c->lock, NULL) == 0 ? 0 : -1;
}

void clock_interval_free(clock_interval *i) {
    while (i) {
        clock_interval *next = i->next;
        free(i->index);
        free(i->count);
        free(i);
        i = next;
    }
}

void clock_free(loader_clock *c) {
    for (int k = 0; k < CLOCK_KINDS; k++) {
        free(c->kinds[k].counts);
        free(c->kinds[k].touched);
    }
    clock_interval_free(c->closed);
    c->closed = c->closed_tail = NULL;
    pthread_mutex_destroy(&c->lock);
}

/* LoaderClock._next */
int clock_next(loader_clock *c, int64_t now, int64_t rows, int can_stop, int64_t *start) {
    int64_t s = now;
    if (c->ns_per_row != 0.0) {
        double due = c->phase + (double)c->rows * c->ns_per_row;
        s = sat_add(c->t0, due >= TWO_63 ? CLOCK_NEVER : (int64_t)due);
        c->rows += rows;
    }
    if (can_stop && (s >= c->deadline || now >= c->deadline)) return 0;
    if (s < c->warm_until) c->warm_rows += rows;
    *start = s;
    return 1;
}

/* LoaderClock._close: the open interval's kinds that hold values go on the closed list */
static void close_interval(loader_clock *c, int64_t end) {
    clock_interval *first = NULL, *last = NULL;
    for (int k = 0; k < CLOCK_KINDS; k++) {
        clock_hist *h = &c->kinds[k];
        if (!h->total) continue;
        clock_interval *i = calloc(1, sizeof *i);
        int32_t *index = malloc(sizeof(int32_t) * (size_t)h->ntouched);
        int64_t *count = malloc(sizeof(int64_t) * (size_t)h->ntouched);
        if (!i || !index || !count) {
            free(i), free(index), free(count);
            c->failed = 1;
        } else {
            *i = (clock_interval){.kind = k, .warm = c->warm, .seq = c->seq, .start = c->start,
                                  .end = end, .total = h->total, .sum = h->sum, .min = h->min,
                                  .max = h->max, .n = h->ntouched, .index = index, .count = count};
            for (int j = 0; j < h->ntouched; j++) {
                index[j] = h->touched[j];
                count[j] = h->counts[h->touched[j]];
            }
            if (last) last->next = i;
            else first = i;
            last = i;
        }
        for (int j = 0; j < h->ntouched; j++) h->counts[h->touched[j]] = 0;
        h->ntouched = 0;
        h->total = h->sum = h->min = h->max = 0;
    }
    if (!first) return;
    pthread_mutex_lock(&c->lock);
    if (c->closed_tail) c->closed_tail->next = first;
    else c->closed = first;
    c->closed_tail = last;
    pthread_mutex_unlock(&c->lock);
}

/* LoaderClock._roll: close the interval ``now`` left and open the one it is in (_slot) */
static void roll(loader_clock *c, int64_t now) {
    int64_t warm_end = atomic_load_explicit(&c->warm_end, memory_order_acquire);
    int warm_ended = c->warm && now >= warm_end;
    int64_t end = warm_ended && warm_end < c->roll_at ? warm_end : c->roll_at;
    close_interval(c, end);
    if (warm_ended) {
        c->warm = 0;
        c->start = end;
        atomic_store_explicit(&c->warm_end, CLOCK_NEVER, memory_order_release);
    }
    int64_t seq, start, stop;
    if (now < c->fine_end) {
        seq = floordiv(now - c->t0, c->step);
        start = c->t0 + seq * c->step;
        stop = c->t0 + (seq + 1) * c->step;
    } else {
        int64_t wide = c->step * c->ratio;
        int64_t k = floordiv(now - c->fine_end, wide);
        seq = c->fine_steps + k;
        start = c->fine_end + k * wide;
        stop = start + wide;
    }
    if (seq != c->seq) {
        c->seq = seq;
        c->start = start;
    }
    c->roll_at = stop;
}

/* LoaderClock.record, with Histogram.add_values's clamp to 0 .. 1 h */
void clock_record(loader_clock *c, int kind, int64_t started, int64_t now) {
    if (!c->timed) return;
    if (now >= c->roll_at || now >= atomic_load_explicit(&c->warm_end, memory_order_acquire))
        roll(c, now);
    int64_t us = floordiv(now - started, 1000);
    if (us < 0) us = 0;
    if (us > HDR_HIGHEST_US) us = HDR_HIGHEST_US;
    clock_hist *h = &c->kinds[kind];
    if (!h->counts) {
        h->counts = calloc(HDR_BUCKETS, sizeof(int64_t));
        h->touched = malloc(sizeof(int32_t) * HDR_BUCKETS);
        if (!h->counts || !h->touched) {
            free(h->counts), free(h->touched);
            h->counts = NULL, h->touched = NULL;
            c->failed = 1;
            return;
        }
    }
    int b = hdr_bucket(us);
    if (h->counts[b]++ == 0) h->touched[h->ntouched++] = b;
    h->min = h->total ? (us < h->min ? us : h->min) : us;
    if (us > h->max) h->max = us;
    h->total++;
    h->sum += us;
}

/* LoaderClock.end_warmup: once, from any thread (the warm-up of rows ended at at_ns) */
void clock_end_warmup(loader_clock *c, int64_t at_ns) {
    if (atomic_exchange(&c->rows_warm_open, 0))
        atomic_store_explicit(&c->warm_end, at_ns, memory_order_release);
}

/* LoaderClock.finish: close the last interval (the loader has stopped) */
void clock_finish(loader_clock *c, int64_t end_ns) {
    if (c->warm && end_ns >= atomic_load_explicit(&c->warm_end, memory_order_acquire))
        roll(c, end_ns);
    close_interval(c, end_ns < c->roll_at ? end_ns : c->roll_at);
}

clock_interval *clock_take(loader_clock *c) {
    pthread_mutex_lock(&c->lock);
    clock_interval *out = c->closed;
    c->closed = c->closed_tail = NULL;
    pthread_mutex_unlock(&c->lock);
    return out;
}
