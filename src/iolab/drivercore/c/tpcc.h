/* TPC-C's server mode in the core: what tpcc.c asks of each engine (tpcc_pg.c, tpcc_my.c).
 * Every function here runs without the GIL and touches no Python object. */
#ifndef IOLAB_TPCC_H
#define IOLAB_TPCC_H

#include "mt.h"

enum { ENGINE_POSTGRES, ENGINE_MARIADB };

/* how a call ended: committed, the spec's rollback, a retryable failure, any other error */
enum { CALL_OK, CALL_ROLLBACK, CALL_RETRY, CALL_FAIL };

#define ERR_TEXT 512
typedef struct {
    int code;            /* MariaDB's error number (0 on PostgreSQL) */
    char text[ERR_TEXT]; /* the first line of the message, as the Python drivers say it */
} db_error;

/* connection parameters: keyword/value pairs (PostgreSQL: libpq's; MariaDB: host, port, user,
 * password, database, unix_socket) */
typedef struct {
    int count;
    char **keys, **values;
} db_params;

/* open a connection and prepare it as the dialect's prepare() does; NULL and err on failure */
void *pg_open(const db_params *p, db_error *err);
int pg_call(void *conn, const tx_input *t, db_error *err);
int pg_flush(void *conn);      /* pg_stat_force_next_flush(): the transactions it added */
long pg_session(void *conn);   /* the backend's pid */
void pg_close(void *conn);

void *my_open(const db_params *p, db_error *err);
int my_call(void *conn, const tx_input *t, db_error *err);
long my_session(void *conn);   /* the connection's thread id */
void my_close(void *conn);
int my_library_init(void);  /* once, under the GIL, before any thread */
void my_thread_start(void);
void my_thread_end(void);

#endif
