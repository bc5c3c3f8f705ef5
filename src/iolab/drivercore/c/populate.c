/* Populate's client mode in the core (issue 44): one row per INSERT on PostgreSQL (libpq) or
 * MariaDB (libmariadb), any commit_every, every key kind, paced and timed by clock.c.
 *
 * Python (workloads/populate/native.py) configures a Populate under the GIL: the engine, the
 * connection parameters, the INSERT it prepares, the key kind, commit_every, each loader's
 * rows and the clocks' grid. open() starts the driver threads: on MariaDB one a loader
 * (blocking libmariadb), on PostgreSQL one per 32 loaders, at most one a CPU, each driving its
 * loaders' connections with epoll (as pgbench's threads drive their clients). A thread
 * connects its loaders, sets their sessions as the Python path does (autocommit on), prepares
 * the INSERT and waits at a gate; start(t0) opens the gate. Python then polls progress() (rows
 * committed, the end of a warm-up counted in rows), committed() and collect() (closed
 * intervals), and join() gives each loader's seconds and error. The threads touch no Python
 * object: all conversion is in the methods below, under the GIL, from the loaders' own
 * counters (atomics) and the clocks' mutex-guarded lists. Each thread closes its loaders'
 * connections before it ends. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "register.h"

#define POLL_NS 20000000LL  /* a blocking wait's slice: Ctrl-C and stop() are seen within it */
#define STOP_NS 2000000000LL /* how long a stop waits for a transaction's end before cancelling */
#define STATEMENT "iolab_insert"
/* PostgreSQL loaders one thread drives: more results ready at each wake-up, fewer wake-ups a
 * row (16 loaders on a 2-CPU machine at load 10: 21.7 us of the thread's CPU a row on one
 * thread, 30 us on two; 64 loaders: 21 us on either) */
#define LOADERS_PER_THREAD 32
enum { ENGINE_PG = 0, ENGINE_MY = 1 };
enum { KEY_SEQUENTIAL = 0, KEY_RANDOM = 1, KEY_ORDERED = 2 };
enum { W_OPENING = 0, W_READY = 1, W_DONE = 2 };
enum { MX_IDLE = 0, MX_SENT, MX_QUEUED, MX_WAITOUT, MX_DONE };
enum { OP_BEGIN = 0, OP_INSERT, OP_COMMIT };

struct populate;

/* A thread: one MariaDB loader (blocking libmariadb), or several PostgreSQL loaders whose
 * connections it multiplexes with epoll, loaders first .. last - 1. */
typedef struct driver {
    struct populate *p;
    int first, last, started;
    pthread_t thread;
} driver;

/* One loader: its connection, clock, counters and error; padded so that the counter the main
 * thread reads sits on a cache line of its own. */
typedef struct {
    _Alignas(64) _Atomic int64_t committed; /* rows committed (the worker writes, main reads) */
    atomic_int state;                       /* W_OPENING, W_READY, W_DONE */
    char pad[64 - sizeof(int64_t) - sizeof(int)];
    struct populate *p;
    pthread_mutex_t conn_lock; /* between closing the connection and another thread's cancel */
    int index, thread_started; /* thread_started: its driver thread runs (join() waits) */
    int64_t count;
    /* the multiplexed driver's view of the loop in load() (PostgreSQL): */
    int mx_state;                   /* MX_IDLE, MX_SENT, MX_QUEUED, MX_WAITOUT, MX_DONE */
    int mx_op;                      /* the statement in flight: OP_BEGIN, OP_INSERT, OP_COMMIT */
    int mx_stoppable;               /* a queued row may be dropped by stop() (no open transaction) */
    int mx_watched;                 /* its socket is in the driver's epoll set */
    int64_t mx_done, mx_pending, mx_started, mx_commit_at, mx_due;
    PGresult *mx_result;            /* the statement's first result, until its NULL */
    loader_clock clock;
    int clock_ready;
    PGconn *pg;
    PGcancel *cancel;
    MYSQL *my;
    MYSQL_STMT *stmt;
    MYSQL_BIND bind;
    unsigned long key_length;
    unsigned char key[16];
    char key_hex[33];
    uint64_t rng[4];
    long long session;
    double elapsed; /* seconds from t0 to its last row; < 0: stopped or failed */
    int failed;
    long long code; /* MariaDB's error number (0: none) */
    char error[512];
} worker;

typedef struct populate {
    PyObject_HEAD int engine;
    int npg;
    char **pg_keys, **pg_values;
    char *my_host, *my_socket, *my_user, *my_password, *my_db, *my_cnf;
    unsigned int my_port;
    char *sql;
    int key_kind;
    int64_t commit_every, warmup_rows;
    clock_config cfg;
    int n;
    worker *w;
    int ndrivers;
    struct driver *drivers;
    pthread_mutex_t lock; /* guards gate and the workers' state changes (with changed) */
    pthread_cond_t changed;
    int gate; /* 0 closed, 1 go, 2 abort */
    int releasing; /* close(): the loaders may close their connections (guarded by lock) */
    int64_t t0;
    atomic_int stop, opened;
    _Atomic int64_t all_committed; /* only while a warm-up of rows is open */
    atomic_int warm_open;
    _Atomic int64_t warm_at, warm_rows_at;
    int closed;
} Populate;

/* ---- small helpers ------------------------------------------------------------------------ */

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t s[4]) { /* xoshiro256** */
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    return out;
}

static int rng_seed(uint64_t s[4]) {
    size_t got = 0;
    while (got < sizeof(uint64_t) * 4) {
        ssize_t r = getrandom((char *)s + got, sizeof(uint64_t) * 4 - got, 0);
        if (r < 0 && errno != EINTR) return -1;
        if (r > 0) got += (size_t)r;
    }
    if (!(s[0] | s[1] | s[2] | s[3])) s[0] = 1; /* xoshiro's one forbidden state */
    return 0;
}

/* loading.uuid4 / loading.uuid7, as bytes (MariaDB's BINARY(16)) and hex (PostgreSQL's text) */
static void make_key(worker *w) {
    uint64_t a = rng_next(w->rng), b = rng_next(w->rng);
    memcpy(w->key, &a, 8);
    memcpy(w->key + 8, &b, 8);
    if (w->p->key_kind == KEY_ORDERED) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
        for (int i = 0; i < 6; i++) w->key[i] = (unsigned char)(ms >> (8 * (5 - i)));
        w->key[6] = 0x70 | (w->key[6] & 0x0F);
    } else {
        w->key[6] = 0x40 | (w->key[6] & 0x0F);
    }
    w->key[8] = 0x80 | (w->key[8] & 0x3F);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        w->key_hex[2 * i] = hex[w->key[i] >> 4];
        w->key_hex[2 * i + 1] = hex[w->key[i] & 15];
    }
    w->key_hex[32] = 0;
}

/* The first line of a server's message, without libpq's "ERROR:  " (psycopg strips it too) */
static void set_error(worker *w, long long code, const char *text) {
    if (w->failed) return; /* the first error is the one said */
    w->failed = 1;
    w->code = code;
    if (!text || !*text) text = "unknown error";
    const char *colon = strstr(text, ":  ");
    if (colon && colon - text < 16) {
        const char *c = text;
        while (c < colon && *c >= 'A' && *c <= 'Z') c++;
        if (c == colon) text = colon + 3;
    }
    size_t len = strcspn(text, "\n");
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\r')) len--;
    if (len >= sizeof w->error) len = sizeof w->error - 1;
    memcpy(w->error, text, len);
    w->error[len] = 0;
}

static void notify(Populate *p) {
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

/* Sleep until ``until`` (monotonic ns) in slices; 0, or -1 when ``stoppable`` and stop() came */
static int sleep_until(Populate *p, int64_t until, int stoppable) {
    for (;;) {
        if (stoppable && atomic_load_explicit(&p->stop, memory_order_relaxed)) return -1;
        int64_t now = clock_now();
        if (now >= until) return 0;
        int64_t at = until - now > POLL_NS ? now + POLL_NS : until;
        struct timespec ts = {at / 1000000000LL, at % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
}

/* ---- the engines -------------------------------------------------------------------------- */

static int pg_ok(worker *w, PGresult *r) {
    ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        PQclear(r);
        return 0;
    }
    set_error(w, 0, r ? PQresultErrorMessage(r) : PQerrorMessage(w->pg));
    PQclear(r);
    return -1;
}

static int pg_open(worker *w) {
    Populate *p = w->p;
    PGconn *pg = PQconnectdbParams((const char *const *)p->pg_keys,
                                   (const char *const *)p->pg_values, 1);
    pthread_mutex_lock(&w->conn_lock); /* cancel_all reads them */
    w->pg = pg;
    w->cancel = pg && PQstatus(pg) == CONNECTION_OK ? PQgetCancel(pg) : NULL;
    pthread_mutex_unlock(&w->conn_lock);
    if (!w->pg || PQstatus(w->pg) != CONNECTION_OK) {
        set_error(w, 0, w->pg ? PQerrorMessage(w->pg) : "out of memory");
        return -1;
    }
    w->session = PQbackendPID(w->pg);
    int params = p->key_kind != KEY_SEQUENTIAL;
    return pg_ok(w, PQprepare(w->pg, STATEMENT, p->sql, params, NULL));
}

static int pg_exec(worker *w, const char *sql) { return pg_ok(w, PQexec(w->pg, sql)); }

static int pg_insert(worker *w) {
    const char *values[1] = {w->key_hex};
    int params = w->p->key_kind != KEY_SEQUENTIAL;
    if (params) make_key(w);
    return pg_ok(w, PQexecPrepared(w->pg, STATEMENT, params, values, NULL, NULL, 0));
}

static int my_fail(worker *w) {
    if (w->stmt && mysql_stmt_errno(w->stmt))
        set_error(w, mysql_stmt_errno(w->stmt), mysql_stmt_error(w->stmt));
    else set_error(w, mysql_errno(w->my), mysql_error(w->my));
    return -1;
}

static int my_open(worker *w) {
    Populate *p = w->p;
    mysql_thread_init();
    MYSQL *my = mysql_init(NULL);
    pthread_mutex_lock(&w->conn_lock); /* cancel_all reads it */
    w->my = my;
    pthread_mutex_unlock(&w->conn_lock);
    if (!w->my) {
        set_error(w, 0, "out of memory");
        return -1;
    }
    unsigned int timeout = 10;
    mysql_options(w->my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(w->my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (p->my_cnf) { /* its [client] section fills in what the DSN leaves out, as PyMySQL's */
        mysql_options(w->my, MYSQL_READ_DEFAULT_FILE, p->my_cnf);
        mysql_options(w->my, MYSQL_READ_DEFAULT_GROUP, "client");
    }
    if (!mysql_real_connect(w->my, p->my_host, p->my_user, p->my_password, p->my_db, p->my_port,
                            p->my_socket, 0))
        return my_fail(w);
    w->session = (long long)mysql_thread_id(w->my);
    if (mysql_autocommit(w->my, 1)) return my_fail(w);
    w->stmt = mysql_stmt_init(w->my);
    if (!w->stmt) return my_fail(w);
    if (mysql_stmt_prepare(w->stmt, p->sql, strlen(p->sql))) return my_fail(w);
    if (p->key_kind != KEY_SEQUENTIAL) {
        memset(&w->bind, 0, sizeof w->bind);
        w->key_length = 16;
        w->bind.buffer_type = MYSQL_TYPE_BLOB; /* BINARY(16): the raw bytes, as PyMySQL sends */
        w->bind.buffer = w->key;
        w->bind.buffer_length = 16;
        w->bind.length = &w->key_length;
        if (mysql_stmt_bind_param(w->stmt, &w->bind)) return my_fail(w);
    }
    return 0;
}

static int my_insert(worker *w) {
    if (w->p->key_kind != KEY_SEQUENTIAL) make_key(w);
    return mysql_stmt_execute(w->stmt) ? my_fail(w) : 0;
}

static int db_begin(worker *w) {
    if (w->p->engine == ENGINE_PG) return pg_exec(w, "BEGIN");
    return mysql_query(w->my, "BEGIN") ? my_fail(w) : 0;
}

static int db_commit(worker *w) {
    if (w->p->engine == ENGINE_PG) return pg_exec(w, "COMMIT");
    return mysql_commit(w->my) ? my_fail(w) : 0;
}

static void db_rollback(worker *w) { /* after a failure: the failure's own error is kept */
    if (w->p->engine == ENGINE_PG) PQclear(PQexec(w->pg, "ROLLBACK"));
    else mysql_rollback(w->my);
}

static void db_close(worker *w) {
    pthread_mutex_lock(&w->conn_lock);
    if (w->pg) PQfinish(w->pg);
    w->pg = NULL;
    if (w->stmt) mysql_stmt_close(w->stmt);
    w->stmt = NULL;
    if (w->my) {
        mysql_close(w->my);
        mysql_thread_end();
    }
    w->my = NULL;
    pthread_mutex_unlock(&w->conn_lock);
}

/* ---- a loader's thread -------------------------------------------------------------------- */

/* ``n`` more rows committed: the counter Python reads, and the end of a warm-up of rows when
 * these rows reach it (the commit that reaches it ends it, as _Shared.count does) */
static void committed(worker *w, int64_t n) {
    Populate *p = w->p;
    atomic_store_explicit(&w->committed,
                          atomic_load_explicit(&w->committed, memory_order_relaxed) + n,
                          memory_order_release);
    if (!atomic_load_explicit(&p->warm_open, memory_order_relaxed)) return;
    int64_t before = atomic_fetch_add(&p->all_committed, n);
    if (before < p->warmup_rows && before + n >= p->warmup_rows) {
        int64_t at = clock_now();
        for (int i = 0; i < p->n; i++) clock_end_warmup(&p->w[i].clock, at);
        atomic_store(&p->warm_rows_at, before + n);
        atomic_store(&p->warm_at, at);
        atomic_store(&p->warm_open, 0);
    }
}

/* PostgresPopulate._load_client / MariaDBPopulate._load_client for one row per INSERT */
static void load(worker *w) {
    Populate *p = w->p;
    loader_clock *c = &w->clock;
    int explicit = p->commit_every > 1;
    int kind = explicit ? KIND_STATEMENT : KIND_TRANSACTION;
    int64_t done = 0, pending = 0, started;
    int (*insert)(worker *) = p->engine == ENGINE_PG ? pg_insert : my_insert;
    while (done < w->count) {
        if (!pending && atomic_load_explicit(&p->stop, memory_order_relaxed)) return;
        if (!clock_next(c, clock_now(), 1, pending == 0, &started)) {
            /* LoaderClock.wait_out: under a rate a timed load lasts its duration */
            if (clock_paced(c) && c->deadline != CLOCK_NEVER) sleep_until(p, c->deadline, 1);
            break;
        }
        if (clock_paced(c) && sleep_until(p, started, pending == 0) < 0) return;
        if (explicit && !pending && db_begin(w) < 0) goto failed;
        if (insert(w) < 0) goto failed;
        clock_record(c, kind, started, clock_now());
        done++, pending++;
        if (!explicit) {
            pending = 0;
            committed(w, 1);
        } else if (pending >= p->commit_every || done == w->count) {
            int64_t t = clock_now();
            if (db_commit(w) < 0) goto failed;
            clock_record(c, KIND_COMMIT, t, clock_now());
            committed(w, pending);
            pending = 0;
        }
    }
    w->elapsed = (double)(clock_now() - p->t0) / 1e9;
    return;
failed:
    if (explicit && (pending || p->engine == ENGINE_PG)) db_rollback(w);
    atomic_store(&p->stop, 1); /* the others stop at their next commit, as on the Python path */
}

/* ---- PostgreSQL: many loaders per thread, as pgbench's threads drive their clients -------- */

/* load()'s loop as a state machine per loader: one driver thread sends each loader's next
 * statement (PQsendQueryPrepared), and one epoll over the loaders' sockets hands it the results
 * that are ready. A thread a loader cost the machine a wake-up and a context switch per row;
 * here a wake-up collects every result that came meanwhile. Each loader keeps its own clock,
 * counters and rate schedule; statements not due yet under --rate wait on a timerfd. */

static void mx_fail(worker *w, PGresult *r) {
    set_error(w, 0, r ? PQresultErrorMessage(r) : PQerrorMessage(w->pg));
    PQclear(r);
    while ((r = PQgetResult(w->pg))) PQclear(r); /* the connection back to idle, if it can */
    if (w->p->commit_every > 1) db_rollback(w);  /* as load()'s failure path on PostgreSQL */
    atomic_store(&w->p->stop, 1); /* the others stop at their next commit */
    w->mx_state = MX_DONE;
}

static void mx_send(worker *w, int op) {
    int ok;
    w->mx_op = op;
    if (op == OP_INSERT) {
        const char *values[1] = {w->key_hex};
        int params = w->p->key_kind != KEY_SEQUENTIAL;
        if (params) make_key(w);
        ok = PQsendQueryPrepared(w->pg, STATEMENT, params, values, NULL, NULL, 0);
    } else {
        ok = PQsendQuery(w->pg, op == OP_BEGIN ? "BEGIN" : "COMMIT");
    }
    if (ok) w->mx_state = MX_SENT;
    else mx_fail(w, NULL);
}

/* The top of load()'s loop: the loader's next row, sent now, queued until it is due, or its end */
static void mx_next(worker *w, int64_t now) {
    Populate *p = w->p;
    loader_clock *c = &w->clock;
    if (w->mx_done >= w->count) {
        w->elapsed = (double)(now - p->t0) / 1e9;
        w->mx_state = MX_DONE;
        return;
    }
    if (!w->mx_pending && atomic_load_explicit(&p->stop, memory_order_relaxed)) {
        w->mx_state = MX_DONE;
        return;
    }
    if (!clock_next(c, now, 1, w->mx_pending == 0, &w->mx_started)) {
        if (clock_paced(c) && c->deadline != CLOCK_NEVER && now < c->deadline) {
            w->mx_state = MX_WAITOUT; /* LoaderClock.wait_out */
            w->mx_due = c->deadline;
            return;
        }
        w->elapsed = (double)(now - p->t0) / 1e9;
        w->mx_state = MX_DONE;
        return;
    }
    if (clock_paced(c) && w->mx_started > now) {
        w->mx_state = MX_QUEUED;
        w->mx_due = w->mx_started;
        w->mx_stoppable = w->mx_pending == 0;
        return;
    }
    mx_send(w, p->commit_every > 1 && !w->mx_pending ? OP_BEGIN : OP_INSERT);
}

/* A statement of ``w`` completed with ``r`` (its first result) at ``now`` */
static void mx_completed(worker *w, PGresult *r, int64_t now) {
    Populate *p = w->p;
    ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        mx_fail(w, r);
        return;
    }
    PQclear(r);
    int explicit = p->commit_every > 1;
    switch (w->mx_op) {
    case OP_BEGIN:
        mx_send(w, OP_INSERT); /* the row's latency runs from its start, BEGIN included */
        return;
    case OP_INSERT:
        clock_record(&w->clock, explicit ? KIND_STATEMENT : KIND_TRANSACTION, w->mx_started, now);
        w->mx_done++, w->mx_pending++;
        if (!explicit) {
            w->mx_pending = 0;
            committed(w, 1);
        } else if (w->mx_pending >= p->commit_every || w->mx_done == w->count) {
            w->mx_commit_at = now;
            mx_send(w, OP_COMMIT);
            return;
        }
        break;
    default: /* OP_COMMIT */
        clock_record(&w->clock, KIND_COMMIT, w->mx_commit_at, now);
        committed(w, w->mx_pending);
        w->mx_pending = 0;
        break;
    }
    mx_next(w, now);
}

/* The results that are ready on ``w``'s connection */
static void mx_readable(worker *w) {
    if (!PQconsumeInput(w->pg)) { /* the server went away: libpq's result says so, if any */
        PGresult *r = PQgetResult(w->pg);
        if (w->mx_result) PQclear(w->mx_result), w->mx_result = NULL;
        mx_fail(w, r);
        return;
    }
    while (w->mx_state == MX_SENT && !PQisBusy(w->pg)) {
        PGresult *r = PQgetResult(w->pg);
        if (r) { /* the statement's result; its end is the NULL that follows */
            if (w->mx_result) PQclear(r);
            else w->mx_result = r;
            continue;
        }
        r = w->mx_result;
        w->mx_result = NULL;
        mx_completed(w, r, clock_now());
    }
}

/* Arm ``tfd`` for the earliest due time among the queued loaders, after those due now went */
static void mx_timers(driver *d, int tfd, int64_t now) {
    Populate *p = d->p;
    int64_t first = CLOCK_NEVER;
    int stop = atomic_load_explicit(&p->stop, memory_order_relaxed);
    for (int i = d->first; i < d->last; i++) {
        worker *w = &p->w[i];
        if (w->mx_state == MX_QUEUED) {
            if (stop && w->mx_stoppable) w->mx_state = MX_DONE; /* sleep_until's -1: no elapsed */
            else if (w->mx_due <= now)
                mx_send(w, p->commit_every > 1 && !w->mx_pending ? OP_BEGIN : OP_INSERT);
        } else if (w->mx_state == MX_WAITOUT && (stop || w->mx_due <= now)) {
            w->elapsed = (double)(now - p->t0) / 1e9;
            w->mx_state = MX_DONE;
        }
        if ((w->mx_state == MX_QUEUED || w->mx_state == MX_WAITOUT) && w->mx_due < first)
            first = w->mx_due;
    }
    struct itimerspec its = {{0, 0}, {0, 0}};
    if (first != CLOCK_NEVER) {
        its.it_value.tv_sec = first / 1000000000LL;
        its.it_value.tv_nsec = first % 1000000000LL;
        if (!its.it_value.tv_sec && !its.it_value.tv_nsec) its.it_value.tv_nsec = 1;
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Drive loaders first .. last - 1 until each has ended */
static void mx_load(driver *d, int ep, int tfd) {
    Populate *p = d->p;
    int paced = p->cfg.rate > 0;
    struct epoll_event events[64];
    int64_t now = clock_now();
    for (int i = d->first; i < d->last; i++) mx_next(&p->w[i], now);
    for (;;) {
        if (paced) mx_timers(d, tfd, clock_now());
        int live = 0;
        for (int i = d->first; i < d->last; i++) {
            worker *w = &p->w[i];
            if (w->mx_state != MX_DONE) live++;
            else if (w->mx_watched) { /* an ended loader's socket wakes no one */
                epoll_ctl(ep, EPOLL_CTL_DEL, PQsocket(w->pg), NULL);
                w->mx_watched = 0;
            }
        }
        if (!live) return;
        int got = epoll_wait(ep, events, 64, (int)(POLL_NS / 1000000));
        if (got < 0 && errno != EINTR) {
            for (int i = d->first; i < d->last; i++)
                if (p->w[i].mx_state != MX_DONE) {
                    PQclear(p->w[i].mx_result);
                    p->w[i].mx_result = NULL;
                    set_error(&p->w[i], 0, strerror(errno));
                    p->w[i].mx_state = MX_DONE;
                }
            atomic_store(&p->stop, 1);
            return;
        }
        for (int e = 0; e < got; e++) {
            if (events[e].data.u32 == UINT32_MAX) { /* the timer: read it off, mx_timers acts */
                uint64_t ticks;
                ssize_t got_ticks = read(tfd, &ticks, sizeof ticks);
                (void)got_ticks;
                continue;
            }
            worker *w = &p->w[events[e].data.u32];
            if (w->mx_state == MX_SENT) mx_readable(w);
            else if (w->mx_state != MX_DONE && !PQconsumeInput(w->pg))
                mx_fail(w, NULL); /* between statements: a notice is read off, a lost server
                                     fails the loader now (its next statement would) */
        }
    }
}

/* A driver whose loaders have ended keeps their connections open until close(): the probes'
 * last sample reads the sessions' own counters (MariaDB's performance_schema drops a thread's
 * wait summaries when its connection closes), as the Python path's connections stay open
 * until the recording has ended */
static void hold_until_close(Populate *p) {
    pthread_mutex_lock(&p->lock);
    while (!p->releasing) pthread_cond_wait(&p->changed, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* A driver thread on PostgreSQL: connect and prepare its loaders one after another, wait at
 * the gate, drive them all, close them */
static void pg_driver(driver *d) {
    Populate *p = d->p;
    int ok = 1, ep = -1, tfd = -1;
    for (int i = d->first; i < d->last; i++) {
        worker *w = &p->w[i];
        if (ok && (pg_open(w) < 0 || rng_seed(w->rng) < 0)) {
            if (!w->failed) set_error(w, 0, "getrandom failed");
            ok = 0;
        }
        pthread_mutex_lock(&p->lock);
        atomic_store(&w->state, ok ? W_READY : W_DONE);
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
    if (ok) {
        ep = epoll_create1(EPOLL_CLOEXEC);
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
        ok = ep >= 0 && tfd >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) == 0;
        for (int i = d->first; ok && i < d->last; i++) {
            ev.data.u32 = (uint32_t)i;
            ok = epoll_ctl(ep, EPOLL_CTL_ADD, PQsocket(p->w[i].pg), &ev) == 0;
            p->w[i].mx_watched = ok;
        }
        if (!ok) set_error(&p->w[d->first], 0, strerror(errno));
    }
    pthread_mutex_lock(&p->lock);
    if (!ok) atomic_store(&p->w[d->first].state, W_DONE);
    pthread_cond_broadcast(&p->changed);
    while (ok && p->gate == 0) pthread_cond_wait(&p->changed, &p->lock);
    int go = ok && p->gate == 1;
    pthread_mutex_unlock(&p->lock);
    if (go) mx_load(d, ep, tfd);
    if (ep >= 0) close(ep);
    if (tfd >= 0) close(tfd);
    for (int i = d->first; i < d->last; i++) atomic_store(&p->w[i].state, W_DONE);
    notify(p);
    if (go) hold_until_close(p);
    for (int i = d->first; i < d->last; i++) db_close(&p->w[i]);
}

/* A MariaDB loader's thread: connect, prepare, wait at the gate, load(), close */
static void my_driver(driver *d) {
    worker *w = &d->p->w[d->first];
    Populate *p = w->p;
    int ok = my_open(w) == 0;
    if (ok && rng_seed(w->rng) < 0) {
        set_error(w, 0, "getrandom failed");
        ok = 0;
    }
    pthread_mutex_lock(&p->lock);
    atomic_store(&w->state, ok ? W_READY : W_DONE);
    pthread_cond_broadcast(&p->changed);
    while (ok && p->gate == 0) pthread_cond_wait(&p->changed, &p->lock);
    int go = ok && p->gate == 1;
    pthread_mutex_unlock(&p->lock);
    if (go) load(w);
    atomic_store(&w->state, W_DONE);
    notify(p);
    if (go) hold_until_close(p);
    db_close(w);
}

static void *driver_main(void *arg) {
    driver *d = arg;
    if (d->p->engine == ENGINE_PG) pg_driver(d);
    else my_driver(d);
    return NULL;
}

/* ---- waiting from Python ------------------------------------------------------------------ */

static int all_at_least(Populate *p, int state) {
    for (int i = 0; i < p->n; i++)
        if (p->w[i].thread_started && atomic_load(&p->w[i].state) < state) return 0;
    return 1;
}

/* Wait (GIL released) until every worker reached ``state`` or ``ns`` passed; 1 if they did */
static int wait_state(Populate *p, int state, int64_t ns) {
    int64_t until = clock_now() + ns;
    int reached;
    Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&p->lock);
    while (!(reached = all_at_least(p, state)) && clock_now() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts); /* the condition's clock */
        int64_t left = until - clock_now();
        if (left > POLL_NS) left = POLL_NS;
        int64_t at = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + (left > 0 ? left : 0);
        ts.tv_sec = at / 1000000000LL;
        ts.tv_nsec = at % 1000000000LL;
        pthread_cond_timedwait(&p->changed, &p->lock, &ts);
    }
    pthread_mutex_unlock(&p->lock);
    Py_END_ALLOW_THREADS return reached;
}

/* Wait until every worker is done, responsive to signals: -1 with the exception set */
static int wait_done(Populate *p) {
    while (!wait_state(p, W_DONE, POLL_NS))
        if (PyErr_CheckSignals() < 0) return -1;
    return 0;
}

/* Cancel the statements in flight: PQcancel (safe from any thread); libmariadb has no cancel,
 * so its socket is shut down, which ends a statement waiting on a server that does not answer
 * (PyMySQL's loaders wait until the server stops). Under each worker's conn_lock, so that a
 * connection closing meanwhile never has its descriptor, maybe reused, shut down. */
static void cancel_all(Populate *p) {
    for (int i = 0; i < p->n; i++) {
        worker *w = &p->w[i];
        char buf[256];
        pthread_mutex_lock(&w->conn_lock);
        if (w->pg && w->cancel) PQcancel(w->cancel, buf, sizeof buf);
        if (w->my) shutdown((int)mysql_get_socket(w->my), SHUT_RDWR);
        pthread_mutex_unlock(&w->conn_lock);
    }
}

/* Stop everything and join every thread (blocking, GIL released): close() and dealloc */
static void shutdown_all(Populate *p) {
    if (!p->w) return;
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->lock);
    if (p->gate == 0) p->gate = 2;
    p->releasing = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    if (!wait_state(p, W_DONE, STOP_NS)) { /* not at a transaction boundary yet: cancel */
        Py_BEGIN_ALLOW_THREADS cancel_all(p);
        Py_END_ALLOW_THREADS
    }
    Py_BEGIN_ALLOW_THREADS for (int t = 0; t < p->ndrivers; t++) {
        driver *d = &p->drivers[t];
        if (d->started) pthread_join(d->thread, NULL);
        d->started = 0;
        for (int i = d->first; i < d->last; i++) p->w[i].thread_started = 0;
    }
    Py_END_ALLOW_THREADS
}

/* ---- the Python type ---------------------------------------------------------------------- */

static void wipe(char *s) { /* a password leaves memory when it is no longer needed */
    if (s) explicit_bzero(s, strlen(s));
    free(s);
}

static void free_config(Populate *p) {
    for (int i = 0; i < p->npg; i++) {
        free(p->pg_keys[i]);
        wipe(p->pg_values[i]); /* a value may be the password */
    }
    free(p->pg_keys), free(p->pg_values);
    p->pg_keys = p->pg_values = NULL;
    p->npg = 0;
    free(p->my_host), free(p->my_socket), free(p->my_user), free(p->my_db), free(p->my_cnf);
    wipe(p->my_password);
    p->my_host = p->my_socket = p->my_user = p->my_db = p->my_cnf = p->my_password = NULL;
}

static void Populate_dealloc(Populate *p) {
    shutdown_all(p);
    if (p->w) {
        for (int i = 0; i < p->n; i++) {
            db_close(&p->w[i]);
            if (p->w[i].cancel) PQfreeCancel(p->w[i].cancel);
            if (p->w[i].clock_ready) clock_free(&p->w[i].clock);
            pthread_mutex_destroy(&p->w[i].conn_lock);
        }
        free(p->w);
    }
    free(p->drivers);
    free_config(p);
    free(p->sql);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

/* A str value of ``params`` (None when absent), copied */
static int param(PyObject *params, const char *key, char **out) {
    PyObject *v = PyDict_GetItemString(params, key);
    *out = NULL;
    if (!v || v == Py_None) return 0;
    const char *s = PyUnicode_AsUTF8(v);
    if (!s) return -1;
    *out = strdup(s);
    return *out ? 0 : (PyErr_NoMemory(), -1);
}

static int parse_clock(PyObject *t, clock_config *cfg) {
    long long step, fine, ratio, deadline, warm;
    int by_rows, loaders, timed;
    double rate;
    if (!PyArg_ParseTuple(t, "LLLLLpdip:clock", &step, &fine, &ratio, &deadline, &warm, &by_rows,
                          &rate, &loaders, &timed))
        return -1;
    *cfg = (clock_config){step, fine, ratio, deadline, warm, by_rows, rate, loaders, timed};
    return 0;
}

static int Populate_init(Populate *p, PyObject *args, PyObject *kw) {
    static char *names[] = {"engine", "params", "sql", "key", "commit_every", "counts", "clock",
                            "warmup_rows", NULL};
    const char *engine, *sql;
    PyObject *params, *counts, *clock;
    long long commit_every, warmup_rows;
    int key;
    if (p->w || p->sql) {
        PyErr_SetString(PyExc_RuntimeError, "a Populate is configured once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO!siLO!OL", names, &engine, &PyDict_Type, &params,
                                     &sql, &key, &commit_every, &PyList_Type, &counts, &clock,
                                     &warmup_rows))
        return -1;
    if (parse_clock(clock, &p->cfg) < 0) return -1;
    if (commit_every < 1 || key < 0 || key > 2 || PyList_GET_SIZE(counts) < 1) {
        PyErr_SetString(PyExc_ValueError, "commit_every >= 1, key 0..2 and a loader or more");
        return -1;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    p->sql = strdup(sql);
    p->key_kind = key;
    p->commit_every = commit_every;
    p->warmup_rows = warmup_rows;
    atomic_init(&p->warm_open, warmup_rows > 0);
    atomic_init(&p->warm_at, -1);
    if (!strcmp(engine, "postgres")) {
        p->engine = ENGINE_PG;
        Py_ssize_t n = PyDict_Size(params);
        p->pg_keys = calloc((size_t)n + 1, sizeof(char *));
        p->pg_values = calloc((size_t)n + 1, sizeof(char *));
        if (!p->pg_keys || !p->pg_values) return PyErr_NoMemory(), -1;
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(params, &pos, &k, &v)) {
            const char *ks = PyUnicode_AsUTF8(k), *vs = ks ? PyUnicode_AsUTF8(v) : NULL;
            if (!vs) return -1;
            p->pg_keys[p->npg] = strdup(ks);
            p->pg_values[p->npg++] = strdup(vs);
        }
    } else if (!strcmp(engine, "mariadb")) {
        p->engine = ENGINE_MY;
        char *port = NULL;
        if (param(params, "host", &p->my_host) < 0 || param(params, "unix_socket", &p->my_socket) < 0 ||
            param(params, "user", &p->my_user) < 0 || param(params, "password", &p->my_password) < 0 ||
            param(params, "database", &p->my_db) < 0 ||
            param(params, "read_default_file", &p->my_cnf) < 0 || param(params, "port", &port) < 0)
            return -1;
        p->my_port = port ? (unsigned int)atoi(port) : 0;
        free(port);
    } else {
        PyErr_Format(PyExc_ValueError, "the core populates postgres or mariadb, not %s", engine);
        return -1;
    }
    p->n = (int)PyList_GET_SIZE(counts);
    p->w = calloc((size_t)p->n, sizeof(worker));
    if (!p->w || !p->sql) return PyErr_NoMemory(), -1;
    for (int i = 0; i < p->n; i++) {
        p->w[i].p = p;
        pthread_mutex_init(&p->w[i].conn_lock, NULL);
        p->w[i].index = i;
        p->w[i].elapsed = -1;
        p->w[i].count = PyLong_AsLongLong(PyList_GET_ITEM(counts, i));
        if (p->w[i].count == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* open(): every loader connects, readies its session and prepares the INSERT; None when all
 * did, else the first one's error as (loader, code, message) (every thread is then stopped) */
static PyObject *Populate_open(Populate *p, PyObject *unused) {
    if (atomic_exchange(&p->opened, 1)) {
        PyErr_SetString(PyExc_RuntimeError, "a Populate opens once");
        return NULL;
    }
    /* MariaDB: a thread a loader; PostgreSQL: a thread per LOADERS_PER_THREAD loaders, at
     * most one a CPU, each driving its share */
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int t = (p->n + LOADERS_PER_THREAD - 1) / LOADERS_PER_THREAD;
    if (t > cpus) t = cpus;
    if (t < 1) t = 1;
    if (p->engine != ENGINE_PG) t = p->n;
    p->drivers = calloc((size_t)t, sizeof(driver));
    if (!p->drivers) return PyErr_NoMemory();
    p->ndrivers = t;
    for (int i = 0; i < t; i++) {
        driver *d = &p->drivers[i];
        *d = (driver){.p = p, .first = (int)((int64_t)p->n * i / t),
                      .last = (int)((int64_t)p->n * (i + 1) / t)};
        for (int j = d->first; j < d->last; j++) p->w[j].thread_started = 1;
        if (pthread_create(&d->thread, NULL, driver_main, d) != 0) {
            for (int j = d->first; j < d->last; j++) p->w[j].thread_started = 0;
            shutdown_all(p);
            PyErr_SetString(PyExc_OSError, "cannot start a loader thread");
            return NULL;
        }
        d->started = 1;
    }
    while (!wait_state(p, W_READY, POLL_NS)) {
        if (PyErr_CheckSignals() < 0) {
            shutdown_all(p);
            return NULL;
        }
    }
    for (int i = 0; i < p->n; i++)
        if (p->w[i].failed) {
            shutdown_all(p);
            free_config(p);
            return Py_BuildValue("(iLs)", i, p->w[i].code, p->w[i].error);
        }
    free_config(p); /* every connection is open: the password is no longer needed */
    Py_RETURN_NONE;
}

static PyObject *Populate_sessions(Populate *p, PyObject *unused) {
    PyObject *out = PyList_New(p->n);
    for (int i = 0; out && i < p->n; i++) PyList_SET_ITEM(out, i, PyLong_FromLongLong(p->w[i].session));
    return out;
}

/* start(t0_ns): the clocks start at t0 and the loaders are released */
static PyObject *Populate_start(Populate *p, PyObject *arg) {
    long long t0 = PyLong_AsLongLong(arg);
    if (t0 == -1 && PyErr_Occurred()) return NULL;
    if (!atomic_load(&p->opened) || p->gate != 0) {
        PyErr_SetString(PyExc_RuntimeError, "start() follows a successful open(), once");
        return NULL;
    }
    p->t0 = t0;
    for (int i = 0; i < p->n; i++) {
        if (clock_init(&p->w[i].clock, &p->cfg, i, t0) < 0) return PyErr_NoMemory();
        p->w[i].clock_ready = 1;
    }
    pthread_mutex_lock(&p->lock);
    p->gate = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    Py_RETURN_NONE;
}

/* wait(seconds): True once every loader has ended (GIL released while waiting) */
static PyObject *Populate_wait(Populate *p, PyObject *arg) {
    double s = PyFloat_AsDouble(arg);
    if (s == -1.0 && PyErr_Occurred()) return NULL;
    return PyBool_FromLong(wait_state(p, W_DONE, (int64_t)(s * 1e9)));
}

static long long total_committed(Populate *p) {
    long long total = 0;
    for (int i = 0; i < p->n; i++)
        total += atomic_load_explicit(&p->w[i].committed, memory_order_acquire);
    return total;
}

/* committed(): the rows every loader committed so far */
static PyObject *Populate_committed(Populate *p, PyObject *unused) {
    return PyLong_FromLongLong(total_committed(p));
}

/* progress(): (rows committed by all loaders, (ns, rows) where a warm-up of rows ended, or None) */
static PyObject *Populate_progress(Populate *p, PyObject *unused) {
    long long rows = total_committed(p);
    int64_t at = atomic_load(&p->warm_at);
    if (at < 0) return Py_BuildValue("(LO)", rows, Py_None);
    return Py_BuildValue("(L(LL))", rows, (long long)at, (long long)atomic_load(&p->warm_rows_at));
}

/* The closed intervals of one clock, as (loader, kind, seq, warm, start_ns, end_ns, counts,
 * total, sum_us, min_us, max_us), counts a dict {bucket: count}; appended to ``out`` */
static int take_intervals(loader_clock *c, int loader, PyObject *out) {
    clock_interval *list = clock_take(c);
    int rc = 0;
    for (clock_interval *i = list; i && rc == 0; i = i->next) {
        PyObject *counts = PyDict_New();
        for (int j = 0; counts && j < i->n; j++) {
            PyObject *k = PyLong_FromLong(i->index[j]), *v = PyLong_FromLongLong(i->count[j]);
            if (!k || !v || PyDict_SetItem(counts, k, v) < 0) Py_CLEAR(counts);
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        PyObject *t = counts ? Py_BuildValue("(iiLOLLNLLLL)", loader, i->kind, (long long)i->seq,
                                             i->warm ? Py_True : Py_False, (long long)i->start,
                                             (long long)i->end, counts, (long long)i->total,
                                             (long long)i->sum, (long long)i->min, (long long)i->max)
                             : NULL;
        if (!t || PyList_Append(out, t) < 0) rc = -1;
        Py_XDECREF(t);
    }
    clock_interval_free(list);
    if (rc == 0 && c->failed) {
        PyErr_NoMemory(); /* a histogram could not be kept: never a silently short one */
        rc = -1;
    }
    return rc;
}

static PyObject *Populate_collect(Populate *p, PyObject *unused) {
    PyObject *out = PyList_New(0);
    for (int i = 0; out && i < p->n; i++)
        if (p->w[i].clock_ready && take_intervals(&p->w[i].clock, i, out) < 0) Py_CLEAR(out);
    return out;
}

/* stop(cancel): the loaders stop at their next transaction boundary; ``cancel`` also cancels
 * the PostgreSQL statements in flight (a Ctrl-C, as cancel_statements does) */
static PyObject *Populate_stop(Populate *p, PyObject *arg) {
    int cancel = PyObject_IsTrue(arg);
    if (cancel < 0) return NULL;
    atomic_store(&p->stop, 1);
    if (cancel) {
        Py_BEGIN_ALLOW_THREADS cancel_all(p);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

/* join(): each loader's (seconds or None, (code, message) or None), once all have ended;
 * interruptible (the exception propagates, the loaders run on until close()). Their threads
 * and connections stay until close() (hold_until_close), the loads themselves have ended. */
static PyObject *Populate_join(Populate *p, PyObject *unused) {
    if (wait_done(p) < 0) return NULL;
    PyObject *out = PyList_New(p->n);
    for (int i = 0; out && i < p->n; i++) {
        worker *w = &p->w[i];
        PyObject *err = w->failed ? Py_BuildValue("(Ls)", w->code, w->error) : Py_NewRef(Py_None);
        PyObject *t = err ? (w->elapsed >= 0 ? Py_BuildValue("(dN)", w->elapsed, err)
                                             : Py_BuildValue("(ON)", Py_None, err))
                          : NULL;
        if (!t) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, t);
    }
    return out;
}

/* finish(end_ns): close each clock's last interval (after join) */
static PyObject *Populate_finish(Populate *p, PyObject *arg) {
    long long end = PyLong_AsLongLong(arg);
    if (end == -1 && PyErr_Occurred()) return NULL;
    for (int i = 0; i < p->n; i++) {
        /* a loader's thread touches its clock no more once it is done (join() waited) */
        if (p->w[i].thread_started && atomic_load(&p->w[i].state) != W_DONE) {
            PyErr_SetString(PyExc_RuntimeError, "finish() follows join()");
            return NULL;
        }
        if (p->w[i].clock_ready) clock_finish(&p->w[i].clock, end);
    }
    Py_RETURN_NONE;
}

/* warm_rows(): the rows the schedule had due before a time warm-up ended (LoaderClock.warm_rows) */
static PyObject *Populate_warm_rows(Populate *p, PyObject *unused) {
    long long total = 0;
    for (int i = 0; i < p->n; i++)
        if (p->w[i].clock_ready) total += p->w[i].clock.warm_rows;
    return PyLong_FromLongLong(total);
}

static PyObject *Populate_close(Populate *p, PyObject *unused) {
    shutdown_all(p);
    Py_RETURN_NONE;
}

static PyMethodDef Populate_methods[] = {
    {"open", (PyCFunction)Populate_open, METH_NOARGS, "Connect and prepare every loader."},
    {"sessions", (PyCFunction)Populate_sessions, METH_NOARGS, "The loaders' server session ids."},
    {"start", (PyCFunction)Populate_start, METH_O, "Release the loaders at t0 (perf_counter ns)."},
    {"wait", (PyCFunction)Populate_wait, METH_O, "Wait up to s seconds; True once all ended."},
    {"progress", (PyCFunction)Populate_progress, METH_NOARGS, "Rows committed, warm-up's end."},
    {"committed", (PyCFunction)Populate_committed, METH_NOARGS, "Rows committed so far."},
    {"collect", (PyCFunction)Populate_collect, METH_NOARGS, "The intervals closed since."},
    {"stop", (PyCFunction)Populate_stop, METH_O, "Stop at the next transaction boundary."},
    {"join", (PyCFunction)Populate_join, METH_NOARGS, "Each loader's seconds and error."},
    {"finish", (PyCFunction)Populate_finish, METH_O, "Close the clocks' last intervals."},
    {"warm_rows", (PyCFunction)Populate_warm_rows, METH_NOARGS, "Rows due in a time warm-up."},
    {"close", (PyCFunction)Populate_close, METH_NOARGS, "Stop and join every thread."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PopulateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "iolab.drivercore._native.Populate",
    .tp_basicsize = sizeof(Populate),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Populate's client mode (one row per INSERT) on PostgreSQL or MariaDB.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Populate_init,
    .tp_dealloc = (destructor)Populate_dealloc,
    .tp_methods = Populate_methods,
};

/* ---- Clock: one loader clock driven with explicit times, for the differential test -------- */

typedef struct {
    PyObject_HEAD loader_clock clock;
    int ready;
} Clock;

static int Clock_init(Clock *self, PyObject *args, PyObject *kw) {
    int index;
    long long t0;
    PyObject *cfg_tuple;
    clock_config cfg;
    if (self->ready) return 0;
    if (!PyArg_ParseTuple(args, "iLO", &index, &t0, &cfg_tuple) || parse_clock(cfg_tuple, &cfg) < 0)
        return -1;
    if (clock_init(&self->clock, &cfg, index, t0) < 0) return PyErr_NoMemory(), -1;
    self->ready = 1;
    return 0;
}

static void Clock_dealloc(Clock *self) {
    if (self->ready) clock_free(&self->clock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Clock_next(Clock *self, PyObject *args) {
    long long now, rows;
    int can_stop;
    int64_t start;
    if (!PyArg_ParseTuple(args, "LLp", &now, &rows, &can_stop)) return NULL;
    if (!clock_next(&self->clock, now, rows, can_stop, &start)) Py_RETURN_NONE;
    return PyLong_FromLongLong(start);
}

static PyObject *Clock_record(Clock *self, PyObject *args) {
    int kind;
    long long started, now;
    if (!PyArg_ParseTuple(args, "iLL", &kind, &started, &now)) return NULL;
    if (kind < 0 || kind >= CLOCK_KINDS) return PyErr_Format(PyExc_ValueError, "kind %d", kind);
    clock_record(&self->clock, kind, started, now);
    Py_RETURN_NONE;
}

static PyObject *Clock_end_warmup(Clock *self, PyObject *arg) {
    long long at = PyLong_AsLongLong(arg);
    if (at == -1 && PyErr_Occurred()) return NULL;
    clock_end_warmup(&self->clock, at);
    Py_RETURN_NONE;
}

static PyObject *Clock_finish(Clock *self, PyObject *arg) {
    long long end = PyLong_AsLongLong(arg);
    if (end == -1 && PyErr_Occurred()) return NULL;
    clock_finish(&self->clock, end);
    Py_RETURN_NONE;
}

static PyObject *Clock_collect(Clock *self, PyObject *unused) {
    PyObject *out = PyList_New(0);
    if (out && take_intervals(&self->clock, self->clock.index, out) < 0) Py_CLEAR(out);
    return out;
}

static PyObject *Clock_warm_rows(Clock *self, PyObject *unused) {
    return PyLong_FromLongLong(self->clock.warm_rows);
}

static PyMethodDef Clock_methods[] = {
    {"next", (PyCFunction)Clock_next, METH_VARARGS, "next(now, rows, can_stop): start or None."},
    {"record", (PyCFunction)Clock_record, METH_VARARGS, "record(kind, started, now)."},
    {"end_warmup", (PyCFunction)Clock_end_warmup, METH_O, "A warm-up of rows ended at ns."},
    {"finish", (PyCFunction)Clock_finish, METH_O, "Close the last interval."},
    {"collect", (PyCFunction)Clock_collect, METH_NOARGS, "The closed intervals."},
    {"warm_rows", (PyCFunction)Clock_warm_rows, METH_NOARGS, "Rows due in a time warm-up."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ClockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "iolab.drivercore._native.Clock",
    .tp_basicsize = sizeof(Clock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A loader clock on explicit times (clock.c), for the differential test.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Clock_init,
    .tp_dealloc = (destructor)Clock_dealloc,
    .tp_methods = Clock_methods,
};

int populate_register(PyObject *module) {
    /* libmariadb's one-time set-up, here under the GIL before any loader thread calls it */
    if (mysql_library_init(0, NULL, NULL) != 0) {
        PyErr_SetString(PyExc_ImportError, "libmariadb failed to initialise");
        return -1;
    }
    if (PyType_Ready(&PopulateType) < 0 || PyType_Ready(&ClockType) < 0) return -1;
    if (PyModule_AddObjectRef(module, "Populate", (PyObject *)&PopulateType) < 0) return -1;
    return PyModule_AddObjectRef(module, "Clock", (PyObject *)&ClockType);
}
