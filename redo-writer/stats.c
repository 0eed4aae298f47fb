// SPDX-License-Identifier: Apache-2.0
/*
 * Latency statistics: percentiles from every sample (sorted once at the end), the share of
 * waits over 1/10/20 ms, and power-of-two microsecond buckets as V$EVENT_HISTOGRAM_MICRO has them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "stats.h"

int samples_add(struct samples *s, uint64_t ns, uint64_t at_ns)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		uint64_t *v = realloc(s->v, cap * sizeof(*v)), *t;

		if (!v)
			return -1;
		s->v = v;
		t = realloc(s->t, cap * sizeof(*t));
		if (!t)
			return -1;
		s->t = t;
		s->cap = cap;
	}
	s->t[s->n] = at_ns;
	s->v[s->n++] = ns;
	return 0;
}

void samples_free(struct samples *s)
{
	free(s->v);
	free(s->t);
	memset(s, 0, sizeof(*s));
}

static void write_event_rows(FILE *f, const char *name, const struct samples *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		fprintf(f, "%s,%.3f,%.3f\n", name, (double)s->t[i] / 1000.0, (double)s->v[i] / 1000.0);
}

/* Every latency, in the order it happened, before summarize() sorts them: CSV for plots and tests.
 * `fd` is the events file the command line opened and checked (a regular file); it is emptied here,
 * after the run, so that a run that does not happen leaves it as it was. */
int write_events(int fd, const char *path, const struct samples *write_lat, const struct samples *sync_lat,
		 const struct samples *response_lat)
{
	FILE *f = ftruncate(fd, 0) ? NULL : fdopen(fd, "w");

	if (!f) {
		fprintf(stderr, "%s: cannot write events to %s: %s\n", PROG, path, strerror(errno));
		close(fd);
		return -1;
	}
	fprintf(f, "event,end_us,latency_us\n");
	write_event_rows(f, "log_file_parallel_write", write_lat);
	write_event_rows(f, "log_file_sync", sync_lat);
	write_event_rows(f, "commit_response", response_lat);
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "%s: cannot write events to %s: %s\n", PROG, path, strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static double pct(const struct samples *s, double p)
{
	size_t rank;

	if (!s->n)
		return 0;
	rank = (size_t)(p / 100.0 * (double)s->n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return (double)s->v[rank - 1] / 1000.0;
}

void summarize(struct samples *s, struct latency_summary *out)
{
	double sum = 0, sumsq = 0;
	size_t over1 = 0, over10 = 0, over20 = 0, i;

	memset(out, 0, sizeof(*out));
	out->count = s->n;
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	for (i = 0; i < s->n; i++) {
		uint64_t us = s->v[i] / 1000;
		int k = 0;

		sum += (double)s->v[i];
		sumsq += (double)s->v[i] / 1000.0 * ((double)s->v[i] / 1000.0);
		over1 += s->v[i] > 1000000;
		over10 += s->v[i] > 10000000;
		over20 += s->v[i] > 20000000;
		while (k < 39 && us >= (1ULL << k))
			k++;
		out->buckets[k]++;
		if (k + 1 > out->nbuckets)
			out->nbuckets = k + 1;
	}
	out->mean_us = sum / (double)s->n / 1000.0;
	if (s->n > 1) {
		double var = (sumsq - (double)s->n * out->mean_us * out->mean_us) / (double)(s->n - 1);

		out->stddev_us = var > 0 ? sqrt(var) : 0;
	}
	out->p50_us = pct(s, 50);
	out->p95_us = pct(s, 95);
	out->p99_us = pct(s, 99);
	out->p999_us = pct(s, 99.9);
	out->max_us = (double)s->v[s->n - 1] / 1000.0;
	out->over_1ms_pct = 100.0 * (double)over1 / (double)s->n;
	out->over_10ms_pct = 100.0 * (double)over10 / (double)s->n;
	out->over_20ms_pct = 100.0 * (double)over20 / (double)s->n;
}
