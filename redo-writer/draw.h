/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The run's random draws, one generator for all of them: the Poisson arrivals and the exponential
 * CPU (engine.c), the exponential wake-ups (vclock.c). splitmix64 (Steele, Lea, Flood 2014) is
 * enough for times; each draw's stream is seeded by the caller from --seed.
 */
#ifndef REDO_WRITER_DRAW_H
#define REDO_WRITER_DRAW_H

#include <math.h>
#include <stdint.h>

static inline uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* An exponential draw of mean `mean_ns`: -log(u) times the mean, u uniform in (0, 1]. */
static inline uint64_t exponential_ns(uint64_t *state, double mean_ns)
{
	double u = (double)(splitmix64(state) >> 11) * 0x1.0p-53;

	return (uint64_t)llround(-log1p(-u) * mean_ns);
}

#endif
