/* CPython's Mersenne Twister (Modules/_randommodule.c) and TPC-C's draws over it (mt.h). */
#include "mt.h"

#include <stdio.h>
#include <string.h>

#define MT_M 397
#define MATRIX_A 0x9908b0dfU
#define UPPER_MASK 0x80000000U
#define LOWER_MASK 0x7fffffffU

uint32_t mt_u32(mt_state *s) {
    static const uint32_t mag01[2] = {0x0U, MATRIX_A};
    uint32_t y, *mt = s->mt;
    if (s->index >= MT_N) { /* generate MT_N words at one time */
        int kk;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (mt[kk] & UPPER_MASK) | (mt[kk + 1] & LOWER_MASK);
            mt[kk] = mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        y = (mt[MT_N - 1] & UPPER_MASK) | (mt[0] & LOWER_MASK);
        mt[MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 0x1U];
        s->index = 0;
    }
    y = mt[s->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

double mt_random(mt_state *s) {
    uint32_t a = mt_u32(s) >> 5, b = mt_u32(s) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* RunRandom.uniform: low + int(random() * (high - low + 1)) */
static int uniform(tpcc_rng *r, int low, int high) {
    return low + (int)(mt_random(&r->mt) * (double)(high - low + 1));
}

/* RunRandom.nurand: the first float for A, the second for the range */
static int nurand(tpcc_rng *r, int a, int low, int high) {
    int span = high - low + 1;
    int c = a == 255 ? r->c_last : a == 1023 ? r->c_id : r->ol_i_id;
    int x = (int)(mt_random(&r->mt) * (double)(a + 1));
    int y = low + (int)(mt_random(&r->mt) * (double)span);
    return ((x | y) + c) % span + low;
}

static int other_warehouse(tpcc_rng *r, int home) {
    if (r->warehouses == 1) return home;
    int w = 1 + (int)(mt_random(&r->mt) * (double)(r->warehouses - 1));
    return w < home ? w : w + 1;
}

static const char *const SYLLABLES[10] = {"BAR", "OUGHT", "ABLE", "PRI",   "PRES",
                                          "ESE", "ANTI",  "CALLY", "ATION", "EING"};

/* spec.Random.customer_last: last_name(nurand(255, 0, 999)) */
static void customer_last(tpcc_rng *r, char *out) {
    int n = nurand(r, 255, 0, 999);
    snprintf(out, 16, "%s%s%s", SYLLABLES[n / 100], SYLLABLES[n / 10 % 10], SYLLABLES[n % 10]);
}

/* spec.Random.money(100, 500000): randint, i.e. _randbelow by getrandbits (not RunRandom's
 * float): k = 19 bits of a word, drawn again while out of range */
static int money_cents(tpcc_rng *r) {
    const uint32_t width = 500000 - 100 + 1; /* bit length 19 */
    uint32_t v;
    do v = mt_u32(&r->mt) >> (32 - 19);
    while (v >= width);
    return 100 + (int)v;
}

/* transactions.draw for one transaction of t->kind at warehouse w */
static void draw_one(tpcc_rng *r, tx_input *t, int w) {
    int W = r->warehouses;
    t->w_id = w;
    t->c_id = 0;
    t->c_last[0] = '\0';
    switch (t->kind) {
    case TX_NEW_ORDER: {
        int count = uniform(r, 5, 15);
        int rollback = uniform(r, 1, 100) == 1;
        t->n = count;
        for (int i = 0; i < count; i++) {
            t->items[i] = rollback && i == count - 1 ? UNUSED_ITEM : nurand(r, 8191, 1, 100000);
            int remote = W > 1 && uniform(r, 1, 100) == 1;
            t->supply[i] = remote ? other_warehouse(r, w) : w;
            t->qty[i] = uniform(r, 1, 10);
        }
        t->d_id = uniform(r, 1, 10);
        t->c_id = nurand(r, 1023, 1, 3000);
        break;
    }
    case TX_PAYMENT: {
        t->d_id = uniform(r, 1, 10);
        if (W == 1 || uniform(r, 1, 100) <= 85) {
            t->c_w_id = w;
            t->c_d_id = t->d_id;
        } else {
            t->c_w_id = other_warehouse(r, w);
            t->c_d_id = uniform(r, 1, 10);
        }
        int by_name = uniform(r, 1, 100) <= 60;
        t->cents = money_cents(r);
        if (by_name)
            customer_last(r, t->c_last);
        else
            t->c_id = nurand(r, 1023, 1, 3000);
        break;
    }
    case TX_ORDER_STATUS:
        t->d_id = uniform(r, 1, 10);
        if (uniform(r, 1, 100) <= 60)
            customer_last(r, t->c_last);
        else
            t->c_id = nurand(r, 1023, 1, 3000);
        break;
    case TX_DELIVERY:
        t->carrier = uniform(r, 1, 10);
        break;
    default: /* TX_STOCK_LEVEL */
        t->d_id = uniform(r, 1, 10);
        t->threshold = uniform(r, 10, 20);
        break;
    }
}

void tpcc_draw(tpcc_rng *r, tx_input *out, int count) {
    /* random.choices(kinds, weights, k=count) as CPython 3.11: bisect_right of random() *
     * total in the cumulative weights, hi = n - 1 */
    double total = (double)r->cum[r->nkinds - 1];
    int hi = r->nkinds - 1;
    for (int i = 0; i < count; i++) {
        double x = mt_random(&r->mt) * total;
        int lo = 0, h = hi;
        while (lo < h) {
            int mid = (lo + h) / 2;
            if (x < (double)r->cum[mid])
                h = mid;
            else
                lo = mid + 1;
        }
        out[i].kind = r->kinds[lo];
    }
    for (int i = 0; i < count; i++) {
        int w = r->all_warehouses ? uniform(r, 1, r->warehouses) : r->home;
        draw_one(r, &out[i], w);
    }
}
