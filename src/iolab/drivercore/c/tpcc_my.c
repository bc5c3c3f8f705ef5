/* TPC-C's server mode on MariaDB (tpcc/mariadb.py): each user's connection with autocommit
 * off; a transaction is one CALL written out as MariaDBTpcc.call writes it (every input a
 * number or a last name of the spec's syllables), the procedure commits; any error is
 * followed by a ROLLBACK as the Python driver's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "tpcc.h"

#define ER_SIGNAL_EXCEPTION 1644
#define ER_LOCK_WAIT_TIMEOUT 1205
#define ER_LOCK_DEADLOCK 1213

#define CR_SERVER_GONE_ERROR 2006
#define CR_SERVER_LOST 2013

/* the error as PyMySQL words it: the server's own text; a lost connection in PyMySQL's words
 * (libmariadb's differ: "Lost connection to server during query", "Server has gone away") */
static void say(MYSQL *m, db_error *err) {
    const char *msg = mysql_error(m);
    err->code = (int)mysql_errno(m);
    if (err->code == CR_SERVER_LOST) msg = "Lost connection to MySQL server during query";
    if (err->code == CR_SERVER_GONE_ERROR) msg = "MySQL server has gone away";
    size_t n = strcspn(msg, "\n");
    if (n >= ERR_TEXT) n = ERR_TEXT - 1;
    memcpy(err->text, msg, n);
    err->text[n] = '\0';
}

static const char *param(const db_params *p, const char *key) {
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->keys[i], key) == 0) return p->values[i];
    return NULL;
}

void *my_open(const db_params *p, db_error *err) {
    MYSQL *m = mysql_init(NULL);
    if (m == NULL) {
        err->code = 0;
        snprintf(err->text, ERR_TEXT, "out of memory");
        return NULL;
    }
    unsigned int timeout = 10;
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(m, MYSQL_SET_CHARSET_NAME, param(p, "charset") ? param(p, "charset") : "utf8mb4");
    const char *cnf = param(p, "read_default_file");
    if (cnf) { /* its [client] section fills in what the DSN leaves out, as PyMySQL's (populate.c) */
        mysql_options(m, MYSQL_READ_DEFAULT_FILE, cnf);
        mysql_options(m, MYSQL_READ_DEFAULT_GROUP, "client");
    }
    const char *socket = param(p, "unix_socket"), *port = param(p, "port");
    if (!mysql_real_connect(m, socket ? NULL : param(p, "host"), param(p, "user"),
                            param(p, "password"), param(p, "database"),
                            socket || !port ? 0 : (unsigned)atoi(port), socket,
                            CLIENT_MULTI_RESULTS) ||
        mysql_autocommit(m, 0)) {
        say(m, err);
        mysql_close(m);
        return NULL;
    }
    return m;
}

/* every result of a CALL read and freed; nonzero on an error */
static int drain(MYSQL *m) {
    int more;
    do {
        MYSQL_RES *res = mysql_store_result(m);
        if (res) mysql_free_result(res);
        else if (mysql_field_count(m) != 0) return 1;
        more = mysql_next_result(m);
        if (more > 0) return 1;
    } while (more == 0);
    return 0;
}

int my_call(void *conn, const tx_input *t, db_error *err) {
    MYSQL *m = conn;
    char sql[640], a[3][128], id[16], name[20]; /* 15 items of 6 digits: 104 */
    int len;
    if (t->c_last[0])
        snprintf(id, sizeof id, "NULL"), snprintf(name, sizeof name, "'%s'", t->c_last);
    else
        snprintf(id, sizeof id, "%d", t->c_id), snprintf(name, sizeof name, "NULL");
    switch (t->kind) {
    case TX_NEW_ORDER: {
        int all_local = 1;
        const int *cols[3] = {t->items, t->supply, t->qty};
        for (int c = 0; c < 3; c++) {
            size_t at = 0;
            a[c][0] = '\0';
            for (int i = 0; i < t->n && at < sizeof a[c]; i++)
                at += (size_t)snprintf(a[c] + at, sizeof a[c] - at, i ? ",%d" : "%d", cols[c][i]);
        }
        for (int i = 0; i < t->n; i++) all_local &= t->supply[i] == t->w_id;
        len = snprintf(sql, sizeof sql, "CALL tpcc_new_order(%d, %d, %d, %d, '%s', '%s', '%s', %d)",
                       t->w_id, t->d_id, t->c_id, t->n, a[0], a[1], a[2], all_local);
        break;
    }
    case TX_PAYMENT:
        len = snprintf(sql, sizeof sql, "CALL tpcc_payment(%d, %d, %d, %d, %s, %s, %d.%02d)", t->w_id,
                       t->d_id, t->c_w_id, t->c_d_id, id, name, t->cents / 100, t->cents % 100);
        break;
    case TX_ORDER_STATUS:
        len = snprintf(sql, sizeof sql, "CALL tpcc_order_status(%d, %d, %s, %s)", t->w_id, t->d_id,
                       id, name);
        break;
    case TX_DELIVERY:
        len = snprintf(sql, sizeof sql, "CALL tpcc_delivery(%d, %d)", t->w_id, t->carrier);
        break;
    default:
        len = snprintf(sql, sizeof sql, "CALL tpcc_stock_level(%d, %d, %d)", t->w_id, t->d_id,
                       t->threshold);
        break;
    }
    if (mysql_real_query(m, sql, (unsigned long)len) == 0 && drain(m) == 0) return CALL_OK;
    say(m, err);
    int how = CALL_FAIL;
    if (err->code == ER_SIGNAL_EXCEPTION && strstr(err->text, "tpcc:"))
        how = CALL_ROLLBACK; /* the unused item: the spec's rollback */
    else if (err->code == ER_LOCK_DEADLOCK || err->code == ER_LOCK_WAIT_TIMEOUT)
        how = CALL_RETRY;
    /* the refusal leaves the transaction open: rolled back. A failed rollback stops the run;
     * after an error that stops it anyway (a lost connection) the statement's error is what
     * is said, as driver._attempt says it */
    if (mysql_real_query(m, "ROLLBACK", 8) != 0) {
        if (how != CALL_FAIL) say(m, err);
        return CALL_FAIL;
    }
    return how;
}

long my_session(void *conn) { return (long)mysql_thread_id(conn); }

void my_close(void *conn) { mysql_close(conn); }

void my_thread_start(void) { mysql_thread_init(); }

void my_thread_end(void) { mysql_thread_end(); }

int my_library_init(void) { return mysql_library_init(0, NULL, NULL); }
