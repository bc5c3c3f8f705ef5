/* TPC-C's server mode in the core (issue 44): the virtual users of
 * iolab.workloads.tpcc.driver as pthreads, each with its own connection, generator, counts and
 * latencies, calling the procedures back to back (or on the --rate schedule: one atomic due
 * counter, latency from the due time). The Python driver keeps the window: it closes the gate
 * between transactions, flushes and reads the database's counts, sets the phase, opens it.
 *
 * Under the GIL: configuration (Tpcc()), connect(), the results (counts(), intervals(),
 * error()). Without it: the workers, and the waits of connect/close/wait/join, in short slices
 * so that Ctrl-C reaches Python. A worker touches no Python object. */
#include "register.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdr.h"
#include "mt.h"
#include "tpcc.h"

#define INPUTS_AHEAD 64 /* driver.INPUTS_AHEAD */
#define MAX_RETRIES 100 /* driver.MAX_RETRIES */
#define SLICE_NS 50000000LL /* the longest wait between two looks at Ctrl-C or a stop */
enum { PHASE_RAMPUP, PHASE_MEASURED, PHASE_DONE };

static int64_t now_ns(void) { /* time.perf_counter_ns()'s clock */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ns(int64_t ns) {
    struct timespec ts = {ns / 1000000000LL, ns % 1000000000LL};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* the latencies of one (interval, kind, rampup) key: its bucket counts, sparse */
typedef struct {
    int64_t seq, total, sum, min, max;
    int kind, rampup;
    size_t first, pairs; /* into the worker's bucket/count arrays */
} entry;

/* the latencies of the current key of one kind, raw until the key changes */
typedef struct {
    int64_t *values;
    size_t n, cap;
} raw;

typedef struct {
    _Alignas(64) atomic_int inside;   /* in a transaction: the gate waits for it */
    atomic_llong new_orders, ended;   /* the live counts (all phases) */
    _Alignas(64) int index;
    void *conn;
    long session;
    tpcc_rng rng;
    tx_input todo[INPUTS_AHEAD];
    int next, have;
    long long counts[TX_KINDS][3]; /* measured window: commits, rollbacks, retries */
    int64_t cur_seq;
    int cur_rampup;
    raw cur[TX_KINDS];
    entry *entries;
    size_t n_entries, cap_entries;
    int32_t *buckets;
    int64_t *bucket_counts;
    size_t n_pairs, cap_pairs;
    int failed, oom;
    db_error error;
    pthread_t thread;
    int started;
    atomic_int done;
    struct Tpcc *run;
} worker;

typedef struct Tpcc {
    PyObject_HEAD
    int engine;
    db_params params;
    int users;
    worker *workers;
    double rate;      /* 0: back to back */
    int64_t interval_ns, t0;
    atomic_llong due; /* --rate: the next transaction's number on the schedule */
    atomic_int closed, stopping, phase, failed;
    pthread_mutex_t lock; /* the gate's slow path only */
    pthread_cond_t opened;
    int connected, running;
} Tpcc;

/* --- the gate: a user marks itself inside, then looks at `closed`; close() sets `closed`,
 * then waits for no user inside (both sequentially consistent: one of them sees the other) */

static int gate_enter(Tpcc *t, worker *w) {
    for (;;) {
        if (atomic_load(&t->stopping)) return 0;
        atomic_store(&w->inside, 1);
        if (!atomic_load(&t->closed)) return 1;
        atomic_store(&w->inside, 0);
        pthread_mutex_lock(&t->lock);
        while (atomic_load(&t->closed) && !atomic_load(&t->stopping))
            pthread_cond_wait(&t->opened, &t->lock);
        pthread_mutex_unlock(&t->lock);
    }
}

static void gate_leave(worker *w) { atomic_store(&w->inside, 0); }

/* --- latencies ----------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the current key's raw values into entries of bucket counts; 0, or -1 out of memory */
static int flush_key(worker *w) {
    for (int k = 0; k < TX_KINDS; k++) {
        raw *r = &w->cur[k];
        if (r->n == 0) continue;
        if (w->n_entries == w->cap_entries) {
            size_t cap = w->cap_entries ? 2 * w->cap_entries : 64;
            entry *e = realloc(w->entries, cap * sizeof *e);
            if (e == NULL) return -1;
            w->entries = e, w->cap_entries = cap;
        }
        if (w->n_pairs + r->n > w->cap_pairs) {
            size_t cap = w->cap_pairs ? 2 * w->cap_pairs : 4096;
            while (cap < w->n_pairs + r->n) cap *= 2;
            int32_t *b = realloc(w->buckets, cap * sizeof *b);
            if (b == NULL) return -1;
            w->buckets = b;
            int64_t *c = realloc(w->bucket_counts, cap * sizeof *c);
            if (c == NULL) return -1;
            w->bucket_counts = c, w->cap_pairs = cap;
        }
        entry *e = &w->entries[w->n_entries++];
        *e = (entry){.seq = w->cur_seq, .kind = k, .rampup = w->cur_rampup, .first = w->n_pairs};
        e->min = INT64_MAX;
        for (size_t i = 0; i < r->n; i++) { /* clamped as Histogram.add_values clamps */
            int64_t v = r->values[i] < 0 ? 0 : r->values[i] > HDR_HIGHEST_US ? HDR_HIGHEST_US
                                                                             : r->values[i];
            e->sum += v;
            if (v < e->min) e->min = v;
            if (v > e->max) e->max = v;
            r->values[i] = hdr_bucket(v);
        }
        e->total = (int64_t)r->n;
        qsort(r->values, r->n, sizeof *r->values, cmp_i64);
        for (size_t i = 0; i < r->n; i++) {
            if (i == 0 || r->values[i] != r->values[i - 1]) {
                w->buckets[w->n_pairs] = (int32_t)r->values[i];
                w->bucket_counts[w->n_pairs++] = 0;
            }
            w->bucket_counts[w->n_pairs - 1]++;
        }
        e->pairs = w->n_pairs - e->first;
        r->n = 0;
    }
    return 0;
}

static int record(worker *w, int64_t seq, int kind, int rampup, int64_t us) {
    if (seq != w->cur_seq || rampup != w->cur_rampup) {
        if (flush_key(w) < 0) return -1;
        w->cur_seq = seq, w->cur_rampup = rampup;
    }
    raw *r = &w->cur[kind];
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 1024;
        int64_t *v = realloc(r->values, cap * sizeof *v);
        if (v == NULL) return -1;
        r->values = v, r->cap = cap;
    }
    r->values[r->n++] = us;
    return 0;
}

/* --- the users ----------------------------------------------------------------------------- */

static int call(Tpcc *t, worker *w, const tx_input *tx) {
    return t->engine == ENGINE_POSTGRES ? pg_call(w->conn, tx, &w->error)
                                        : my_call(w->conn, tx, &w->error);
}

/* wait until `due`, in slices, unless the run stops; 0 when it stops */
static int wait_until(Tpcc *t, int64_t due) {
    for (;;) {
        if (atomic_load(&t->stopping)) return 0;
        int64_t left = due - now_ns();
        if (left <= 0) return 1;
        sleep_ns(left < SLICE_NS ? left : SLICE_NS);
    }
}

static void fail(Tpcc *t, worker *w) {
    w->failed = 1;
    atomic_store(&t->failed, 1);
}

static void *user_main(void *arg) {
    worker *w = arg;
    Tpcc *t = w->run;
    if (t->engine == ENGINE_MARIADB) my_thread_start();
    while (!atomic_load(&t->stopping)) {
        if (w->next == w->have) {
            tpcc_draw(&w->rng, w->todo, INPUTS_AHEAD);
            w->next = 0, w->have = INPUTS_AHEAD;
        }
        const tx_input *tx = &w->todo[w->next++];
        int64_t due = 0;
        if (t->rate > 0) {
            long long j = atomic_fetch_add(&t->due, 1);
            due = t->t0 + (int64_t)((double)j / t->rate * 1e9);
            if (!wait_until(t, due)) break;
        }
        if (!gate_enter(t, w)) break;
        int64_t start = t->rate > 0 ? due : now_ns();
        int retries = 0, how;
        while ((how = call(t, w, tx)) == CALL_RETRY && retries < MAX_RETRIES) retries++;
        if (how == CALL_RETRY || how == CALL_FAIL) {
            fail(t, w);
            gate_leave(w);
            break;
        }
        int64_t now = now_ns();
        int committed = how == CALL_OK;
        atomic_store_explicit(&w->ended, atomic_load_explicit(&w->ended, memory_order_relaxed) +
                                             1 + retries, memory_order_relaxed);
        if (committed && tx->kind == TX_NEW_ORDER)
            atomic_store_explicit(
                &w->new_orders,
                atomic_load_explicit(&w->new_orders, memory_order_relaxed) + 1,
                memory_order_relaxed);
        int phase = atomic_load_explicit(&t->phase, memory_order_relaxed);
        if (record(w, (now - t->t0) / t->interval_ns, tx->kind, phase == PHASE_RAMPUP,
                   (now - start) / 1000) < 0) {
            w->oom = 1;
            fail(t, w);
            gate_leave(w);
            break;
        }
        if (phase == PHASE_MEASURED) {
            long long *c = w->counts[tx->kind];
            c[committed ? 0 : 1]++;
            c[2] += retries;
        }
        gate_leave(w);
    }
    if (t->engine == ENGINE_MARIADB) my_thread_end();
    atomic_store(&w->done, 1);
    return NULL;
}

/* --- the Python type ----------------------------------------------------------------------- */

static void disconnect(Tpcc *t) {
    for (int i = 0; t->workers && i < t->users; i++) {
        worker *w = &t->workers[i];
        if (w->conn == NULL) continue;
        if (t->engine == ENGINE_POSTGRES)
            pg_close(w->conn);
        else
            my_close(w->conn);
        w->conn = NULL;
    }
    t->connected = 0;
}

/* every started worker joined, blocking (the GIL released by the caller or not needed) */
static void join_all(Tpcc *t) {
    for (int i = 0; t->workers && i < t->users; i++)
        if (t->workers[i].started) {
            pthread_join(t->workers[i].thread, NULL);
            t->workers[i].started = 0;
        }
    t->running = 0;
}

static void stop_all(Tpcc *t) {
    pthread_mutex_lock(&t->lock);
    atomic_store(&t->stopping, 1);
    pthread_cond_broadcast(&t->opened);
    pthread_mutex_unlock(&t->lock);
}

static void tpcc_dealloc(Tpcc *t) {
    if (t->running) {
        stop_all(t);
        Py_BEGIN_ALLOW_THREADS join_all(t);
        Py_END_ALLOW_THREADS
    }
    disconnect(t);
    for (int i = 0; t->workers && i < t->users; i++) {
        worker *w = &t->workers[i];
        for (int k = 0; k < TX_KINDS; k++) free(w->cur[k].values);
        free(w->entries);
        free(w->buckets);
        free(w->bucket_counts);
    }
    free(t->workers);
    for (int i = 0; i < t->params.count; i++) {
        free(t->params.keys[i]);
        if (t->params.values[i]) { /* a password among them: not left in freed memory */
            memset(t->params.values[i], 0, strlen(t->params.values[i]));
            free(t->params.values[i]);
        }
    }
    free(t->params.keys);
    free(t->params.values);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->opened);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* a ``random.Random.getstate()`` tuple into the C generator's state */
static int mt_from_state(PyObject *state, mt_state *mt) {
    PyObject *words;
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != 3 ||
        !PyTuple_Check(words = PyTuple_GET_ITEM(state, 1)) || PyTuple_GET_SIZE(words) != MT_N + 1) {
        PyErr_SetString(PyExc_ValueError, "give random.Random.getstate()'s tuple");
        return -1;
    }
    for (int i = 0; i < MT_N; i++) {
        unsigned long v = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(words, i));
        if (v == (unsigned long)-1 && PyErr_Occurred()) return -1;
        mt->mt[i] = (uint32_t)v;
    }
    long index = PyLong_AsLong(PyTuple_GET_ITEM(words, MT_N));
    if (index == -1 && PyErr_Occurred()) return -1;
    if (index < 0 || index > MT_N) {
        PyErr_SetString(PyExc_ValueError, "the generator's index is out of range");
        return -1;
    }
    mt->index = (int)index;
    return 0;
}

/* a generator from a state, the constants (c_last, c_id, ol_i_id), the five shares */
static int rng_from(tpcc_rng *r, PyObject *state, PyObject *constants, PyObject *mix, int home,
                    int warehouses, int all_warehouses) {
    memset(r, 0, sizeof *r);
    if (mt_from_state(state, &r->mt) < 0) return -1;
    if (!PyArg_ParseTuple(constants, "iii;constants: (c_last, c_id, ol_i_id)", &r->c_last,
                          &r->c_id, &r->ol_i_id))
        return -1;
    int shares[TX_KINDS];
    if (!PyArg_ParseTuple(mix, "iiiii;mix: the five shares in spec order", &shares[0],
                          &shares[1], &shares[2], &shares[3], &shares[4]))
        return -1;
    long sum = 0;
    for (int k = 0; k < TX_KINDS; k++)
        if (shares[k] > 0) {
            sum += shares[k];
            r->kinds[r->nkinds] = k;
            r->cum[r->nkinds++] = sum;
        }
    if (r->nkinds == 0 || warehouses < 1 || home < 1 || home > warehouses) {
        PyErr_SetString(PyExc_ValueError, "give a share to some transaction and 1 <= home <= W");
        return -1;
    }
    r->home = home, r->warehouses = warehouses, r->all_warehouses = all_warehouses;
    return 0;
}

static PyObject *tpcc_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"engine",   "params",   "mix",    "warehouses", "all_warehouses",
                             "rate",     "interval_s", "states", "constants", NULL};
    const char *engine;
    PyObject *params, *mix, *states, *constants;
    int warehouses, all_warehouses;
    double rate, interval_s;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sO!OipddO!O", kwlist, &engine, &PyDict_Type,
                                     &params, &mix, &warehouses, &all_warehouses, &rate,
                                     &interval_s, &PyList_Type, &states, &constants))
        return NULL;
    int kind = strcmp(engine, "postgres") == 0  ? ENGINE_POSTGRES
               : strcmp(engine, "mariadb") == 0 ? ENGINE_MARIADB
                                                : -1;
    if (kind < 0 || !(rate >= 0) || !(interval_s > 0) || PyList_GET_SIZE(states) < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "give engine postgres or mariadb, rate >= 0, interval_s > 0, a state per user");
        return NULL;
    }
    Tpcc *t = (Tpcc *)type->tp_alloc(type, 0);
    if (t == NULL) return NULL;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->opened, NULL);
    t->engine = kind;
    t->rate = rate;
    t->interval_ns = (int64_t)(interval_s * 1e9);
    t->users = (int)PyList_GET_SIZE(states);
    t->workers = aligned_alloc(64, sizeof(worker) * (size_t)t->users);
    Py_ssize_t n = PyDict_Size(params);
    t->params.keys = calloc((size_t)n + 1, sizeof(char *));
    t->params.values = calloc((size_t)n + 1, sizeof(char *));
    if (t->workers == NULL || t->params.keys == NULL || t->params.values == NULL) {
        free(t->workers), t->workers = NULL, t->users = 0;
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    memset(t->workers, 0, sizeof(worker) * (size_t)t->users);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(params, &pos, &key, &value)) {
        const char *k = PyUnicode_AsUTF8(key), *v = k ? PyUnicode_AsUTF8(value) : NULL;
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        int i = t->params.count++;
        t->params.keys[i] = strdup(k);
        t->params.values[i] = strdup(v);
        if (!t->params.keys[i] || !t->params.values[i]) {
            Py_DECREF(t);
            return PyErr_NoMemory();
        }
    }
    for (int i = 0; i < t->users; i++) {
        worker *w = &t->workers[i];
        w->index = i, w->run = t, w->cur_seq = -1;
        if (rng_from(&w->rng, PyList_GET_ITEM(states, i), constants, mix,
                     i % warehouses + 1, warehouses, all_warehouses) < 0) {
            Py_DECREF(t);
            return NULL;
        }
    }
    return (PyObject *)t;
}

static PyObject *tpcc_connect(Tpcc *t, PyObject *unused) {
    if (t->connected) Py_RETURN_NONE;
    db_error err = {0};
    int bad = -1;
    for (int i = 0; i < t->users && bad < 0; i++) {
        worker *w = &t->workers[i];
        Py_BEGIN_ALLOW_THREADS
        w->conn = t->engine == ENGINE_POSTGRES ? pg_open(&t->params, &err)
                                               : my_open(&t->params, &err);
        Py_END_ALLOW_THREADS
        if (w->conn == NULL) bad = i;
        else w->session = t->engine == ENGINE_POSTGRES ? pg_session(w->conn) : my_session(w->conn);
        if (bad < 0 && PyErr_CheckSignals() < 0) {
            disconnect(t);
            return NULL;
        }
    }
    if (bad >= 0) { /* worded in Python, by the engine's target, as Populate.open()'s */
        disconnect(t);
        if (t->engine == ENGINE_MARIADB) return Py_BuildValue("(iis)", bad, err.code, err.text);
        return Py_BuildValue("(izs)", bad, NULL, err.text);
    }
    t->connected = 1;
    Py_RETURN_NONE;
}

static PyObject *tpcc_sessions(Tpcc *t, PyObject *unused) {
    PyObject *out = PyList_New(t->users);
    for (int i = 0; out && i < t->users; i++) {
        PyObject *v = PyLong_FromLong(t->workers[i].session);
        if (v == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, v);
    }
    return out;
}

static PyObject *tpcc_start(Tpcc *t, PyObject *arg) {
    long long t0 = PyLong_AsLongLong(arg);
    if (t0 == -1 && PyErr_Occurred()) return NULL;
    if (!t->connected || t->running) {
        PyErr_SetString(PyExc_RuntimeError, "start() once, after connect()");
        return NULL;
    }
    t->t0 = t0;
    t->running = 1;
    for (int i = 0; i < t->users; i++) {
        worker *w = &t->workers[i];
        if (pthread_create(&w->thread, NULL, user_main, w) != 0) {
            stop_all(t);
            Py_BEGIN_ALLOW_THREADS join_all(t);
            Py_END_ALLOW_THREADS
            return PyErr_Format(PyExc_OSError, "cannot start virtual user %d's thread", i + 1);
        }
        w->started = 1;
    }
    Py_RETURN_NONE;
}

/* wait up to ``seconds`` or until a user fails (threading.Event.wait): True when one failed */
static PyObject *tpcc_wait(Tpcc *t, PyObject *arg) {
    double seconds = PyFloat_AsDouble(arg);
    if (seconds == -1.0 && PyErr_Occurred()) return NULL;
    int64_t end = now_ns() + (int64_t)(seconds * 1e9);
    for (;;) {
        if (atomic_load(&t->failed)) Py_RETURN_TRUE;
        int64_t left = end - now_ns();
        if (left <= 0) Py_RETURN_FALSE;
        Py_BEGIN_ALLOW_THREADS sleep_ns(left < 10000000LL ? left : 10000000LL);
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0) return NULL;
    }
}

/* the gate closed: returns once no user is inside a transaction; none enters until open() */
static PyObject *tpcc_close(Tpcc *t, PyObject *unused) {
    pthread_mutex_lock(&t->lock);
    atomic_store(&t->closed, 1);
    pthread_mutex_unlock(&t->lock);
    for (;;) {
        int inside = 0;
        for (int i = 0; i < t->users; i++) inside |= atomic_load(&t->workers[i].inside);
        if (!inside) Py_RETURN_NONE;
        Py_BEGIN_ALLOW_THREADS sleep_ns(100000); /* 0.1 ms */
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0) return NULL;
    }
}

static PyObject *tpcc_open(Tpcc *t, PyObject *unused) {
    pthread_mutex_lock(&t->lock);
    atomic_store(&t->closed, 0);
    pthread_cond_broadcast(&t->opened);
    pthread_mutex_unlock(&t->lock);
    Py_RETURN_NONE;
}

/* the engine's counter flushed on each user's connection (users held at the gate); the
 * transactions that added (tpcc's flush_counter) */
static PyObject *tpcc_flush_counter(Tpcc *t, PyObject *unused) {
    long total = 0;
    if (t->engine != ENGINE_POSTGRES) return PyLong_FromLong(0); /* counted at once */
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < t->users; i++)
        if (t->workers[i].conn) total += pg_flush(t->workers[i].conn);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(total);
}

static PyObject *tpcc_set_phase(Tpcc *t, PyObject *arg) {
    long phase = PyLong_AsLong(arg);
    if (phase == -1 && PyErr_Occurred()) return NULL;
    if (phase < PHASE_RAMPUP || phase > PHASE_DONE) {
        PyErr_SetString(PyExc_ValueError, "phase: 0 rampup, 1 measured, 2 done");
        return NULL;
    }
    atomic_store(&t->phase, (int)phase);
    Py_RETURN_NONE;
}

static PyObject *tpcc_stop(Tpcc *t, PyObject *unused) {
    stop_all(t);
    Py_RETURN_NONE;
}

/* every user's thread joined, looking at Ctrl-C between short waits */
static PyObject *tpcc_join(Tpcc *t, PyObject *unused) {
    for (int i = 0; t->running && i < t->users; i++) {
        worker *w = &t->workers[i];
        while (w->started && !atomic_load(&w->done)) {
            Py_BEGIN_ALLOW_THREADS sleep_ns(1000000); /* 1 ms */
            Py_END_ALLOW_THREADS
            if (PyErr_CheckSignals() < 0) return NULL;
        }
    }
    if (t->running) {
        Py_BEGIN_ALLOW_THREADS join_all(t); /* all done: returns at once */
        Py_END_ALLOW_THREADS
        for (int i = 0; i < t->users; i++) /* the last key's latencies */
            if (flush_key(&t->workers[i]) < 0) return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

static PyObject *tpcc_disconnect(Tpcc *t, PyObject *unused) {
    if (t->running) {
        PyErr_SetString(PyExc_RuntimeError, "stop() and join() the users first");
        return NULL;
    }
    disconnect(t);
    Py_RETURN_NONE;
}

/* (new orders committed, transactions ended) so far, all users (the probes' live series) */
static PyObject *tpcc_live(Tpcc *t, PyObject *unused) {
    long long orders = 0, ended = 0;
    for (int i = 0; i < t->users; i++) {
        orders += atomic_load_explicit(&t->workers[i].new_orders, memory_order_relaxed);
        ended += atomic_load_explicit(&t->workers[i].ended, memory_order_relaxed);
    }
    return Py_BuildValue("(LL)", orders, ended);
}

/* the first failed user's (index, MariaDB error number or None, first line), or None */
static PyObject *tpcc_error(Tpcc *t, PyObject *unused) {
    for (int i = 0; i < t->users; i++) {
        worker *w = &t->workers[i];
        if (!w->failed) continue;
        if (w->oom) return Py_BuildValue("(izs)", i, NULL, "out of memory for latencies");
        if (t->engine == ENGINE_MARIADB)
            return Py_BuildValue("(iis)", i, w->error.code, w->error.text);
        return Py_BuildValue("(izs)", i, NULL, w->error.text);
    }
    Py_RETURN_NONE;
}

static int running_check(Tpcc *t) {
    if (t->running) PyErr_SetString(PyExc_RuntimeError, "join() the users first");
    return t->running ? -1 : 0;
}

/* each user's measured counts: [user][kind] = (commits, rollbacks, retries) */
static PyObject *tpcc_counts(Tpcc *t, PyObject *unused) {
    if (running_check(t) < 0) return NULL;
    PyObject *out = PyList_New(t->users);
    for (int i = 0; out && i < t->users; i++) {
        long long(*c)[3] = t->workers[i].counts;
        PyObject *u = Py_BuildValue("((LLL)(LLL)(LLL)(LLL)(LLL))", c[0][0], c[0][1], c[0][2],
                                    c[1][0], c[1][1], c[1][2], c[2][0], c[2][1], c[2][2],
                                    c[3][0], c[3][1], c[3][2], c[4][0], c[4][1], c[4][2]);
        if (u == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, u);
    }
    return out;
}

/* every (user, kind index, seq, rampup, total, sum, min, max, {bucket: count}) */
static PyObject *tpcc_intervals(Tpcc *t, PyObject *unused) {
    if (running_check(t) < 0) return NULL;
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < t->users; i++) {
        worker *w = &t->workers[i];
        for (size_t j = 0; j < w->n_entries; j++) {
            entry *e = &w->entries[j];
            PyObject *counts = PyDict_New();
            for (size_t p = 0; counts && p < e->pairs; p++) {
                PyObject *b = PyLong_FromLong(w->buckets[e->first + p]);
                PyObject *c = PyLong_FromLongLong(w->bucket_counts[e->first + p]);
                if (!b || !c || PyDict_SetItem(counts, b, c) < 0) Py_CLEAR(counts);
                Py_XDECREF(b);
                Py_XDECREF(c);
            }
            PyObject *row = counts ? Py_BuildValue("(iiLOLLLLN)", i, e->kind, (long long)e->seq,
                                                   e->rampup ? Py_True : Py_False,
                                                   (long long)e->total, (long long)e->sum,
                                                   (long long)e->min, (long long)e->max, counts)
                                   : NULL;
            if (row == NULL || PyList_Append(out, row) < 0) Py_CLEAR(out);
            Py_XDECREF(row);
        }
    }
    return out;
}

static PyMethodDef tpcc_methods[] = {
    {"connect", (PyCFunction)tpcc_connect, METH_NOARGS,
     "Open and prepare every user's connection: None, or the first refused user's (index, "
     "MariaDB error number or None, message)."},
    {"sessions", (PyCFunction)tpcc_sessions, METH_NOARGS,
     "The users' server-side ids: PostgreSQL backend pids, MariaDB thread ids."},
    {"start", (PyCFunction)tpcc_start, METH_O, "Start the users; t0: perf_counter_ns()."},
    {"wait", (PyCFunction)tpcc_wait, METH_O, "Wait seconds or until a user fails (True)."},
    {"close", (PyCFunction)tpcc_close, METH_NOARGS, "Hold the users between transactions."},
    {"flush_counter", (PyCFunction)tpcc_flush_counter, METH_NOARGS,
     "Flush the engine's counter on each user's connection; the transactions it added."},
    {"set_phase", (PyCFunction)tpcc_set_phase, METH_O, "0 rampup, 1 measured, 2 done."},
    {"open", (PyCFunction)tpcc_open, METH_NOARGS, "Let the users go on."},
    {"stop", (PyCFunction)tpcc_stop, METH_NOARGS, "Users end after their transaction."},
    {"join", (PyCFunction)tpcc_join, METH_NOARGS, "Wait for every user's thread to end."},
    {"disconnect", (PyCFunction)tpcc_disconnect, METH_NOARGS, "Close the connections."},
    {"live", (PyCFunction)tpcc_live, METH_NOARGS, "(new orders, transactions ended) so far."},
    {"error", (PyCFunction)tpcc_error, METH_NOARGS, "The first failed user's error, or None."},
    {"counts", (PyCFunction)tpcc_counts, METH_NOARGS, "Measured counts per user and kind."},
    {"intervals", (PyCFunction)tpcc_intervals, METH_NOARGS, "Latencies per user/kind/interval."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TpccType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "iolab.drivercore._native.Tpcc",
    .tp_doc = "TPC-C's server mode: the virtual users as threads over libpq or libmariadb.",
    .tp_basicsize = sizeof(Tpcc),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = tpcc_new,
    .tp_dealloc = (destructor)tpcc_dealloc,
    .tp_methods = tpcc_methods,
};

/* tpcc_draws(state, constants, mix, home, warehouses, all_warehouses, n): the first n
 * transactions a user draws, as (kind index, inputs) tuples (tests/unit: the Python path's) */
static PyObject *tpcc_draws(PyObject *self, PyObject *args) {
    PyObject *state, *constants, *mix;
    int home, warehouses, all_warehouses, n;
    if (!PyArg_ParseTuple(args, "OOOiipi", &state, &constants, &mix, &home, &warehouses,
                          &all_warehouses, &n))
        return NULL;
    tpcc_rng r;
    if (rng_from(&r, state, constants, mix, home, warehouses, all_warehouses) < 0) return NULL;
    PyObject *out = PyList_New(0);
    tx_input batch[INPUTS_AHEAD];
    for (int done = 0; out && done < n; done += INPUTS_AHEAD) {
        tpcc_draw(&r, batch, INPUTS_AHEAD);
        for (int i = 0; out && i < INPUTS_AHEAD && done + i < n; i++) {
            tx_input *t = &batch[i];
            PyObject *c_id, *c_last, *in = NULL;
            c_id = t->c_last[0] ? Py_NewRef(Py_None) : PyLong_FromLong(t->c_id);
            c_last = t->c_last[0] ? PyUnicode_FromString(t->c_last) : Py_NewRef(Py_None);
            switch (t->kind) {
            case TX_NEW_ORDER: {
                PyObject *items = PyTuple_New(t->n);
                for (int j = 0; items && j < t->n; j++) {
                    PyObject *it = Py_BuildValue("(iii)", t->items[j], t->supply[j], t->qty[j]);
                    if (it == NULL) Py_CLEAR(items);
                    else PyTuple_SET_ITEM(items, j, it);
                }
                in = items ? Py_BuildValue("(iiiN)", t->w_id, t->d_id, t->c_id, items) : NULL;
                break;
            }
            case TX_PAYMENT:
                in = Py_BuildValue("(iiiiOON)", t->w_id, t->d_id, t->c_w_id, t->c_d_id, c_id,
                                   c_last,
                                   PyUnicode_FromFormat("%d.%02d", t->cents / 100, t->cents % 100));
                break;
            case TX_ORDER_STATUS:
                in = Py_BuildValue("(iiOO)", t->w_id, t->d_id, c_id, c_last);
                break;
            case TX_DELIVERY:
                in = Py_BuildValue("(ii)", t->w_id, t->carrier);
                break;
            default:
                in = Py_BuildValue("(iii)", t->w_id, t->d_id, t->threshold);
            }
            Py_XDECREF(c_id);
            Py_XDECREF(c_last);
            PyObject *row = in ? Py_BuildValue("(iN)", t->kind, in) : NULL;
            if (row == NULL || PyList_Append(out, row) < 0) Py_CLEAR(out);
            Py_XDECREF(row);
        }
    }
    return out;
}

static PyMethodDef tpcc_functions[] = {
    {"tpcc_draws", tpcc_draws, METH_VARARGS,
     "tpcc_draws(state, constants, mix, home, warehouses, all_warehouses, n): the first n "
     "(kind index, inputs) a user draws."},
    {NULL, NULL, 0, NULL},
};

int tpcc_register(PyObject *module) {
    if (PyType_Ready(&TpccType) < 0) return -1;
    if (PyModule_AddObjectRef(module, "Tpcc", (PyObject *)&TpccType) < 0) return -1;
    if (PyModule_AddFunctions(module, tpcc_functions) < 0) return -1;
    /* libmariadb's global set-up, once, before any thread opens a connection */
    if (my_library_init() != 0) {
        PyErr_SetString(PyExc_ImportError, "libmariadb did not initialize");
        return -1;
    }
    return 0;
}
