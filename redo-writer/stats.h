/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Latency statistics: every latency a run measures is kept (struct samples), written out as the
 * events CSV, then summarized into percentiles, shares over 1/10/20 ms and power-of-two
 * microsecond buckets.
 */
#ifndef REDO_WRITER_STATS_H
#define REDO_WRITER_STATS_H

#include <stddef.h>
#include <stdint.h>

/* A growing array of latencies in nanoseconds, with when each ended (ns since the start). */
struct samples {
	uint64_t *v, *t;
	size_t n, cap;
};

struct latency_summary {
	size_t count;
	double mean_us, stddev_us, p50_us, p95_us, p99_us, p999_us, max_us;
	double over_1ms_pct, over_10ms_pct, over_20ms_pct;
	/* V$EVENT_HISTOGRAM_MICRO: bucket k counts waits of [2^(k-1), 2^k) microseconds. */
	uint64_t buckets[40];
	int nbuckets;
};

int samples_add(struct samples *s, uint64_t ns, uint64_t at_ns);
void samples_free(struct samples *s);
/* Writes the CSV of the three waits to `fd` (an open regular file, emptied first) and closes it. */
int write_events(int fd, const char *path, const struct samples *write_lat, const struct samples *sync_lat,
		 const struct samples *response_lat);
/* Sorts `s`: write its events first. */
void summarize(struct samples *s, struct latency_summary *out);

#endif
