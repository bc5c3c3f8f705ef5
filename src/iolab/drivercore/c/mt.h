/* TPC-C's random inputs in the core, drawn exactly as the Python path draws them
 * (iolab.workloads.tpcc.spec.RunRandom and transactions.draw): CPython's Mersenne Twister,
 * seeded from a user's ``random.Random.getstate()``, so a user's transactions and inputs equal
 * the Python driver's draw for draw (tests/unit/test_drivercore_tpcc.py checks it). */
#ifndef IOLAB_MT_H
#define IOLAB_MT_H

#include <stdint.h>

#define MT_N 624

/* CPython's _random.Random state: 624 words and the next word's index */
typedef struct {
    uint32_t mt[MT_N];
    int index;
} mt_state;

uint32_t mt_u32(mt_state *s);   /* genrand_uint32 */
double mt_random(mt_state *s);  /* random(): genrand_res53 */

/* the five transactions, in spec.TRANSACTIONS' order */
enum { TX_NEW_ORDER, TX_PAYMENT, TX_ORDER_STATUS, TX_DELIVERY, TX_STOCK_LEVEL, TX_KINDS };
#define MAX_ITEMS 15
#define UNUSED_ITEM 100001 /* spec.UNUSED_ITEM: the New-Order that must roll back */

/* One transaction's inputs (the fields its kind uses; c_id 0 with c_last: by last name) */
typedef struct {
    int kind;
    int w_id, d_id, c_id, c_w_id, c_d_id;
    int cents;            /* Payment's amount */
    int carrier, threshold;
    int n;                /* New-Order's items */
    int items[MAX_ITEMS], supply[MAX_ITEMS], qty[MAX_ITEMS];
    char c_last[16];      /* three syllables of at most five letters */
} tx_input;

/* One user's generator: its stream, the run's NURand constants, its home and the mix */
typedef struct {
    mt_state mt;
    int c_last, c_id, ol_i_id; /* NURand's C for A = 255, 1023, 8191 */
    int home, warehouses, all_warehouses;
    int nkinds;                /* the kinds with a share, in spec order */
    int kinds[TX_KINDS];
    long cum[TX_KINDS];        /* their cumulative weights */
} tpcc_rng;

/* The next ``count`` transactions' kinds and inputs, in the order they run (the Python path's
 * _User._draw: ``choices`` of ``count`` kinds first, then each one's warehouse and inputs). */
void tpcc_draw(tpcc_rng *r, tx_input *out, int count);

#endif
