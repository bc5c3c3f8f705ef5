/* HdrHistogram's bucket index of a latency in whole microseconds: the same layout as
 * iolab.latency.histogram (lowest 1 us, highest 1 h, 3 significant digits), so the counts the
 * core fills are stored, reported and exported exactly as the Python drivers' are.
 * tests/unit/test_drivercore.py checks hdr_bucket against histogram.bucket value by value. */
#ifndef IOLAB_HDR_H
#define IOLAB_HDR_H

#include <stdint.h>

#define HDR_HIGHEST_US 3600000000LL /* one hour: longer values are clamped to it */
#define HDR_HALF_MAGNITUDE 10       /* 1024: half of the 2048 sub-buckets of 3 digits */
#define HDR_MASK ((1LL << (HDR_HALF_MAGNITUDE + 1)) - 1)
/* buckets needed for 0 .. HDR_HIGHEST_US (hdr_bucket(HDR_HIGHEST_US) + 1) */
#define HDR_BUCKETS 23221

static inline int hdr_bit_length(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

/* The counts index of ``us`` (clamped to 0 .. one hour), histogram.bucket's formula. */
static inline int hdr_bucket(int64_t us) {
    if (us < 0) us = 0;
    if (us > HDR_HIGHEST_US) us = HDR_HIGHEST_US;
    int b = hdr_bit_length((uint64_t)(us | HDR_MASK)) - (HDR_HALF_MAGNITUDE + 1);
    return (int)(((int64_t)(b + 1) << HDR_HALF_MAGNITUDE) + (us >> b) - (1LL << HDR_HALF_MAGNITUDE));
}

#endif
