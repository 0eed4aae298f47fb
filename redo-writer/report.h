/* SPDX-License-Identifier: Apache-2.0 */
/* The run's report: text for people, one JSON object (--output json) for sectorlab. */
#ifndef REDO_WRITER_REPORT_H
#define REDO_WRITER_REPORT_H

#include <stdio.h>

struct config;
struct results;

/* Summarizes the latencies of `res`, which sorts them. */
void report(const struct config *cfg, struct results *res, FILE *out);
/* `s` as a JSON string, quotes included. */
void json_string(FILE *out, const char *s);

#endif
