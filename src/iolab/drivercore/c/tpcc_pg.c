/* TPC-C's server mode on PostgreSQL (tpcc/postgres.py): each user's connection in autocommit
 * with the five calls prepared as the dialect prepares them, each input sent as text as
 * PostgresTpcc.call sends it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "tpcc.h"

static const char *const NAMES[TX_KINDS] = {"tpcc_new_order", "tpcc_payment", "tpcc_order_status",
                                           "tpcc_delivery", "tpcc_stock_level"};
static const char *const CALLS[TX_KINDS] = {
    "SELECT tpcc_new_order($1::int, $2::int, $3::int, $4::int[], $5::int[], $6::int[])",
    "SELECT tpcc_payment($1::int, $2::int, $3::int, $4::int, $5::int, $6::varchar, $7::numeric)",
    "SELECT tpcc_order_status($1::int, $2::int, $3::int, $4::varchar)",
    "SELECT tpcc_delivery($1::int, $2::int)",
    "SELECT tpcc_stock_level($1::int, $2::int, $3::int)",
};

/* psycopg's message: the server's text without its severity, first line only */
static void say(const char *msg, db_error *err) {
    static const char *const severities[] = {"ERROR:  ", "FATAL:  ", "PANIC:  ", NULL};
    err->code = 0;
    if (msg == NULL || !*msg) msg = "no error details available";
    for (int i = 0; severities[i]; i++)
        if (strncmp(msg, severities[i], strlen(severities[i])) == 0) {
            msg += strlen(severities[i]);
            break;
        }
    size_t n = strcspn(msg, "\n");
    while (n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == '\r')) n--;
    if (n >= ERR_TEXT) n = ERR_TEXT - 1;
    memcpy(err->text, msg, n);
    err->text[n] = '\0';
}

/* why libpq lost a connection (postgres.lost_reason): the server's line in the connection's
 * message (FATAL:  terminating connection ...), else its first line. The result's message says
 * only "server closed the connection unexpectedly", and the connection's puts that first when
 * the query's write found the server gone before libpq read the server's reason (a race). */
static const char *lost_reason(const char *msg) {
    static const char *const severities[] = {"FATAL:  ", "PANIC:  ", "ERROR:  ", NULL};
    for (const char *line = msg; line != NULL; line = strchr(line, '\n')) {
        if (*line == '\n') line++;
        for (int i = 0; severities[i]; i++)
            if (strncmp(line, severities[i], strlen(severities[i])) == 0) return line;
    }
    return msg;
}

void *pg_open(const db_params *p, db_error *err) {
    const char **keys = calloc((size_t)p->count + 1, sizeof *keys);
    const char **values = calloc((size_t)p->count + 1, sizeof *values);
    if (keys == NULL || values == NULL) {
        free(keys);
        free(values);
        snprintf(err->text, ERR_TEXT, "out of memory");
        return NULL;
    }
    /* the options this libpq knows: psycopg's own libpq may be newer (sslnegotiation) */
    PQconninfoOption *known = PQconndefaults();
    int n = 0;
    for (int i = 0; i < p->count; i++)
        for (PQconninfoOption *o = known; o && o->keyword; o++)
            if (strcmp(o->keyword, p->keys[i]) == 0) {
                keys[n] = p->keys[i];
                values[n++] = p->values[i];
                break;
            }
    PQconninfoFree(known);
    /* expand_dbname: a server of the user's gives its whole DSN as dbname (the engine's
     * core_target(), as populate.c takes it) */
    PGconn *conn = PQconnectdbParams(keys, values, 1);
    free(keys);
    free(values);
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        say(conn ? PQerrorMessage(conn) : "out of memory", err);
        PQfinish(conn);
        return NULL;
    }
    for (int k = 0; k < TX_KINDS; k++) {
        PGresult *res = PQprepare(conn, NAMES[k], CALLS[k], 0, NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            say(res ? PQresultErrorMessage(res) : PQerrorMessage(conn), err);
            PQclear(res);
            PQfinish(conn);
            return NULL;
        }
        PQclear(res);
    }
    return conn;
}

/* "{1,2,3}": an int[] in PostgreSQL's text form */
static void int_array(char *out, size_t size, const int *v, int n) {
    size_t at = 0;
    out[at++] = '{';
    for (int i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, i ? ",%d" : "%d", v[i]);
    if (at + 2 <= size) { /* sized for 15 items of 6 digits: always */
        out[at++] = '}';
        out[at] = '\0';
    } else {
        out[size - 1] = '\0';
    }
}

int pg_call(void *conn, const tx_input *t, db_error *err) {
    char num[7][16], items[128], supply[128], qty[64];
    const char *args[7] = {0};
    int n = 0;
#define INT(v) (snprintf(num[n], sizeof num[n], "%d", (v)), args[n] = num[n], n++)
    switch (t->kind) {
    case TX_NEW_ORDER:
        INT(t->w_id), INT(t->d_id), INT(t->c_id);
        int_array(items, sizeof items, t->items, t->n);
        int_array(supply, sizeof supply, t->supply, t->n);
        int_array(qty, sizeof qty, t->qty, t->n);
        args[n++] = items, args[n++] = supply, args[n++] = qty;
        break;
    case TX_PAYMENT:
        INT(t->w_id), INT(t->d_id), INT(t->c_w_id), INT(t->c_d_id);
        if (t->c_last[0])
            args[n++] = NULL, args[n++] = t->c_last;
        else
            INT(t->c_id), args[n++] = NULL;
        snprintf(num[n], sizeof num[n], "%d.%02d", t->cents / 100, t->cents % 100);
        args[n] = num[n], n++;
        break;
    case TX_ORDER_STATUS:
        INT(t->w_id), INT(t->d_id);
        if (t->c_last[0])
            args[n++] = NULL, args[n++] = t->c_last;
        else
            INT(t->c_id), args[n++] = NULL;
        break;
    case TX_DELIVERY:
        INT(t->w_id), INT(t->carrier);
        break;
    default:
        INT(t->w_id), INT(t->d_id), INT(t->threshold);
        break;
    }
#undef INT
    PGresult *res = PQexecPrepared(conn, NAMES[t->kind], n, args, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
        PQclear(res);
        return CALL_OK;
    }
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (res && PQstatus(conn) != CONNECTION_BAD)
        say(PQresultErrorMessage(res), err);
    else
        say(lost_reason(PQerrorMessage(conn)), err);
    int how = CALL_FAIL;
    if (state && strcmp(state, "P0001") == 0 && primary && strstr(primary, "tpcc:"))
        how = CALL_ROLLBACK; /* the unused item: the spec's rollback */
    else if (state && (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0))
        how = CALL_RETRY; /* serialization failure, deadlock */
    PQclear(res);
    return how; /* autocommit: the failed call ended its own transaction */
}

int pg_flush(void *conn) {
    /* refused to a server's user: its counts then lag a second; it ended a transaction too */
    PQclear(PQexec(conn, "SELECT pg_stat_force_next_flush()"));
    return 1;
}

long pg_session(void *conn) { return PQbackendPID(conn); }

void pg_close(void *conn) { PQfinish(conn); }
