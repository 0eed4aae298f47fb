// SPDX-License-Identifier: Apache-2.0
/* The run's report: text for people, one JSON object (--output json) for sectorlab. */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "engine.h"
#include "report.h"
#include "stats.h"

static void event_json(FILE *out, const char *name, struct samples *s)
{
	struct latency_summary l;
	int k;

	summarize(s, &l);
	fprintf(out, "\"%s\": {\"count\": %zu, \"mean_us\": %.1f, \"stddev_us\": %.1f, \"p50_us\": %.1f, \"p95_us\": %.1f, "
		"\"p99_us\": %.1f, \"p99_9_us\": %.1f, \"max_us\": %.1f, \"over_1ms_pct\": %.3f, "
		"\"over_10ms_pct\": %.3f, \"over_20ms_pct\": %.3f, \"histogram_micro\": {",
		name, l.count, l.mean_us, l.stddev_us, l.p50_us, l.p95_us, l.p99_us, l.p999_us, l.max_us, l.over_1ms_pct,
		l.over_10ms_pct, l.over_20ms_pct);
	for (k = 0; k < l.nbuckets; k++)
		fprintf(out, "%s\"%llu\": %llu", k ? ", " : "", 1ULL << k, (unsigned long long)l.buckets[k]);
	fprintf(out, "}}");
}

static void event_text(FILE *out, const char *name, struct samples *s)
{
	struct latency_summary l;

	summarize(s, &l);
	fprintf(out, "%-24s %8zu waits  mean %8.1f us  p50 %8.1f  p95 %8.1f  p99 %8.1f  p99.9 %8.1f  max %8.1f  "
		">1ms %.2f%%  >10ms %.2f%%  >20ms %.2f%%\n", name, l.count, l.mean_us, l.p50_us, l.p95_us, l.p99_us,
		l.p999_us, l.max_us, l.over_1ms_pct, l.over_10ms_pct, l.over_20ms_pct);
}

/* Why a member has no device block; NULL when it has one. */
static const char *device_note(const struct member_result *m, char *buf, size_t size)
{
	const char *name = *m->dev.name ? m->dev.name : m->path;

	if (!strcmp(m->path, "null:"))
		return "null: writes nothing";
	if (m->is_model)
		return "a device model in virtual time: its requests' times are the model's, no device counts them";
	if (m->is_nbd)
		return "an NBD export: no kernel block device under it, so no /sys/block counters (a device model's trace "
		       "counts its requests)";
	if (!m->is_blockdev)
		return "not a block device: the counters of the device under a file count its other I/O too";
	if (!m->before.valid || !m->after.valid)
		snprintf(buf, size, "cannot read the I/O counters of %s in /sys/dev/block", name);
	else if (m->writes && m->after.writes == m->before.writes && !m->dev.paths)
		snprintf(buf, size, "the counters of %s did not move over %llu writes: an NVMe multipath head counts no "
			 "I/O itself, and no path device (nvme<S>c<C>n<N>) of it was found in /sys/block", name,
			 (unsigned long long)m->writes);
	else if (m->writes && m->after.writes == m->before.writes)
		snprintf(buf, size, "the counters of %s did not move over %llu writes: the device does not account its "
			 "I/O", name, (unsigned long long)m->writes);
	else
		return NULL;
	return buf;
}

void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void json_string_or_null(FILE *out, const char *s)
{
	if (*s)
		json_string(out, s);
	else
		fputs("null", out);
}

/*
 * The device's own view of the run, from /sys/block/<dev>/stat. Each O_DSYNC write (or
 * fdatasync) on a device whose cache is write back makes the kernel send an empty flush, a write
 * request of no sectors that the counters count as a write: those are taken out of the data
 * writes, so that a request's size and time are the log write's (iostat's would be halved).
 */
static void device_json(FILE *out, const struct member_result *m, double secs)
{
	const struct devstat *b = &m->before, *a = &m->after;
	unsigned long long requests = a->writes - b->writes, sectors = a->sectors_written - b->sectors_written;
	unsigned long long flushes = a->flushes - b->flushes, flush_ticks = a->flush_ticks_ms - b->flush_ticks_ms;
	unsigned long long empty = 0, w;
	char buf[256];
	const char *note = device_note(m, buf, sizeof(buf));

	if (note) {
		fputs("\"device\": null, \"device_note\": ", out);
		json_string(out, note);
		return;
	}
	if (!strcmp(m->dev.write_cache, "write back"))
		empty = m->syncs < requests ? m->syncs : requests;
	w = requests - empty;
	fputs("\"device\": {\"name\": ", out);
	json_string(out, m->dev.name);
	fprintf(out, ", \"requests\": %llu, \"empty_flush_writes\": %llu, \"writes\": %llu, "
		"\"writes_per_s\": %.1f, \"avg_request_bytes\": %.0f, \"await_ms\": %.3f, \"syncs\": %llu, ",
		requests, empty, w, (double)w / secs, w ? 512.0 * (double)sectors / (double)w : 0,
		w ? (double)(a->write_ticks_ms - b->write_ticks_ms) / (double)w : 0, (unsigned long long)m->syncs);
	if (a->has_flushes)
		fprintf(out, "\"flushes\": %llu, \"flush_await_ms\": %.3f, ", flushes,
			flushes ? (double)flush_ticks / (double)flushes : 0);
	else
		fprintf(out, "\"flushes\": null, \"flush_await_ms\": null, ");
	fprintf(out, "\"write_cache\": ");
	json_string_or_null(out, m->dev.write_cache);
	fprintf(out, ", \"fua\": %s, \"utilization_pct\": %.1f}, \"device_note\": null",
		m->dev.fua < 0 ? "null" : m->dev.fua ? "true" : "false",
		100.0 * (double)(a->io_ticks_ms - b->io_ticks_ms) / (secs * 1000.0));
}

/* An NBD member's own block: what its server offered and how its writes were made durable. */
static void nbd_json(FILE *out, const struct member_result *m)
{
	fputs(", \"transport\": \"nbd\", \"nbd\": {\"export\": ", out);
	json_string(out, m->nbd.export_name);
	fprintf(out, ", \"size_bytes\": %llu, \"can_fua\": %s, \"can_flush\": %s, \"minimum_block\": %llu, "
		"\"preferred_block\": %llu, \"syncs\": %llu, \"fua_writes\": %llu, \"flushes\": %llu}",
		(unsigned long long)m->nbd.size, m->nbd.can_fua ? "true" : "false", m->nbd.can_flush ? "true" : "false",
		(unsigned long long)m->nbd.minimum_block, (unsigned long long)m->nbd.preferred_block,
		(unsigned long long)m->syncs, (unsigned long long)m->fua_writes, (unsigned long long)m->flushes);
}

/* How the target's writes were made durable, for the text report's first line. */
static const char *durability(const struct config *cfg, const struct member_result *m)
{
	if (m->is_model)
		return cfg->sync == SYNC_ODSYNC ? "model writes with FUA" : "model writes, each then a flush";
	if (m->is_nbd)
		return cfg->sync == SYNC_ODSYNC && m->nbd.can_fua ? "NBD writes with FUA" : "NBD writes, each then a flush";
	return cfg->sync == SYNC_ODSYNC ? "O_DIRECT|O_DSYNC" : "O_DIRECT + fdatasync";
}

static const char *arrival_name(enum arrival_mode a)
{
	return a == ARRIVAL_POISSON ? "poisson" : a == ARRIVAL_FIXED ? "fixed" : "closed";
}

static double offered_rate(const struct config *cfg)
{
	return cfg->arrival == ARRIVAL_CLOSED ? 0 : (double)cfg->rate;
}

static void load_json(FILE *out, const struct config *cfg, const struct results *r, double secs)
{
	fprintf(out, "\"arrival\": \"%s\", \"offered_rate\": %.1f, \"achieved_rate\": %.1f, \"arrivals\": %llu, "
		"\"backlog_max\": %llu, \"backlog_end\": %llu, \"kept_up\": %s, \"cpu_us_per_txn\": %llu, "
		"\"cpu_dist\": \"%s\", \"seed\": %llu, \"cpu_measured\": {\"sessions_us_per_txn\": %.1f, \"log_writer_us_per_write\": %.1f}, "
		"\"commits_per_write\": %.3f, ", arrival_name(cfg->arrival), offered_rate(cfg),
		(double)r->transactions / secs, (unsigned long long)r->arrivals, (unsigned long long)r->backlog_max,
		(unsigned long long)r->backlog_end, r->kept_up ? "true" : "false", cfg->cpu_us_per_txn,
		cfg->cpu_dist == CPU_EXPONENTIAL ? "exponential" : "fixed", cfg->seed,
		r->transactions ? r->session_cpu_ns / 1e3 / (double)r->transactions : 0.0,
		r->writes ? r->log_writer_cpu_ns / 1e3 / (double)r->writes : 0.0,
		r->writes ? (double)r->transactions / (double)r->writes : 0.0);
}

static void load_text(FILE *out, const struct config *cfg, const struct results *r, double secs)
{
	fprintf(out, "arrival %s, offered %.1f/s, achieved %.1f/s, %llu arrivals, backlog max %llu (%llu at the end), "
		"%s, %llu us CPU per transaction, seed %llu\n", arrival_name(cfg->arrival), offered_rate(cfg),
		(double)r->transactions / secs, (unsigned long long)r->arrivals, (unsigned long long)r->backlog_max,
		(unsigned long long)r->backlog_end, r->kept_up ? "kept up" : "did not keep up", cfg->cpu_us_per_txn,
		cfg->seed);
	fprintf(out, "CPU measured: sessions %.1f us per transaction, log writer %.1f us per write; %.3f commits per "
		"log write\n", r->transactions ? r->session_cpu_ns / 1e3 / (double)r->transactions : 0.0,
		r->writes ? r->log_writer_cpu_ns / 1e3 / (double)r->writes : 0.0,
		r->writes ? (double)r->transactions / (double)r->writes : 0.0);
	if (!r->kept_up)
		fprintf(out, "did not keep up: offered %.1f/s, achieved %.1f/s\n", offered_rate(cfg),
			(double)r->transactions / secs);
}

void report(const struct config *cfg, struct results *r, FILE *out)
{
	double secs = r->elapsed_s > 0 ? r->elapsed_s : 1e-9;
	double wastage_pct = r->bytes_written ? 100.0 * (double)r->wastage_bytes / (double)r->bytes_written : 0;

	if (cfg->output == OUTPUT_JSON) {
		fputs("{\"target\": ", out);
		json_string(out, cfg->target);
		fprintf(out, ", \"blocksize\": %llu, \"sessions\": %llu, \"sync\": \"%s\", \"format\": \"%s\", "
			"\"elapsed_s\": %.3f, \"transactions\": %llu, \"tps\": %.1f, \"redo_bytes\": %llu, "
			"\"bytes_written\": %llu, \"wastage_bytes\": %llu, \"wastage_pct\": %.2f, \"writes\": %llu, "
			"\"writes_under_4k\": %llu, \"write_unit\": %llu, \"writes_under_unit\": %llu, "
			"\"writes_unaligned_to_unit\": %llu, \"partial_units\": %llu, \"wraps\": %llu, \"write_mb_s\": %.3f, ",
			cfg->blocksize, cfg->sessions, cfg->sync == SYNC_ODSYNC ? "odsync" : "fdatasync",
			cfg->format == FORMAT_CHECKED ? "checked" : "plain", r->elapsed_s, (unsigned long long)r->transactions, (double)r->transactions / secs,
			(unsigned long long)r->redo_bytes, (unsigned long long)r->bytes_written,
			(unsigned long long)r->wastage_bytes, wastage_pct, (unsigned long long)r->writes,
			(unsigned long long)r->writes_small, (unsigned long long)r->write_unit,
			(unsigned long long)r->writes_under_unit, (unsigned long long)r->writes_unaligned_to_unit,
			(unsigned long long)r->partial_units, (unsigned long long)r->wraps,
			(double)r->bytes_written / secs / 1e6);
		fprintf(out, "\"clock\": \"%s\", \"real_s\": %.3f, ", cfg->clock == CLOCK_VIRTUAL ? "virtual" : "real",
			r->real_s);
		if (cfg->clock == CLOCK_VIRTUAL)
			fprintf(out, "\"virtual\": {\"wakeup_us\": %llu, \"wakeup_dist\": \"%s\", \"cpus\": %llu, "
				"\"log_writer_cpu_us\": %llu, \"switches\": %llu}, ", cfg->wakeup_us,
				cfg->wakeup_dist == CPU_EXPONENTIAL ? "exponential" : "fixed", cfg->cpus,
				cfg->log_writer_cpu_us, (unsigned long long)r->switches);
		load_json(out, cfg, r, secs);
		event_json(out, "log_file_parallel_write", &r->write_lat);
		fprintf(out, ", ");
		event_json(out, "log_file_sync", &r->sync_lat);
		fprintf(out, ", ");
		event_json(out, "commit_response", &r->response_lat);
		fprintf(out, ", \"members_mode\": \"%s\", \"members\": [",
			cfg->members == MEMBERS_MIRROR ? "mirror" : cfg->members == MEMBERS_RACE ? "race" : "one");
		for (int k = 0; k < r->nmembers; k++) {
			const struct member_result *m = &r->member[k];

			fprintf(out, "%s{\"path\": ", k ? ", " : "");
			json_string(out, m->path);
			fprintf(out, ", \"wins\": %llu, \"writes\": %llu, \"failed\": %s, ", (unsigned long long)m->wins, (unsigned long long)m->writes,
				m->failed ? "true" : "false");
			if (m->failed)
				fprintf(out, "\"error\": \"%s\", \"errno\": %d, \"failed_at_write\": %llu, ",
					strerror(m->error), m->error, (unsigned long long)m->failed_at_write);
			else
				fprintf(out, "\"error\": null, \"errno\": null, \"failed_at_write\": null, ");
			device_json(out, &r->member[k], secs);
			if (m->is_nbd)
				nbd_json(out, m);
			if (m->is_model) {
				fputs(", \"transport\": \"model\", \"model\": ", out);
				json_string(out, cfg->member_model_text[k]);
				fprintf(out, ", \"syncs\": %llu, \"fua_writes\": %llu, \"flushes\": %llu",
					(unsigned long long)m->syncs, (unsigned long long)m->fua_writes,
					(unsigned long long)m->flushes);
			}
			fprintf(out, "}");
		}
		fprintf(out, "]}\n");
		return;
	}
	fprintf(out, "%s: %s, blocksize %llu, %llu session(s), %s%s, %.1f s\n", PROG, cfg->target, cfg->blocksize,
		cfg->sessions, durability(cfg, &r->member[0]), cfg->format == FORMAT_CHECKED ? ", checked blocks" : "",
		r->elapsed_s);
	fprintf(out, "transactions %llu (%.1f/s), redo %llu B, written %llu B in %llu writes (%llu under 4 KiB), "
		"wastage %llu B (%.2f%%), %.3f MB/s, %llu log wraps\n",
		(unsigned long long)r->transactions, (double)r->transactions / secs, (unsigned long long)r->redo_bytes,
		(unsigned long long)r->bytes_written, (unsigned long long)r->writes, (unsigned long long)r->writes_small,
		(unsigned long long)r->wastage_bytes, wastage_pct, (double)r->bytes_written / secs / 1e6,
		(unsigned long long)r->wraps);
	if (cfg->clock == CLOCK_VIRTUAL)
		fprintf(out, "virtual time: %.3f s of the model's time in %.3f s on this host (%llu thread switches); "
			"the CPU per transaction is modelled, not burned\n", r->elapsed_s, r->real_s,
			(unsigned long long)r->switches);
	load_text(out, cfg, r, secs);
	if (r->write_unit > 4096 || r->writes_under_unit || r->writes_unaligned_to_unit)
		fprintf(out, "device write unit %llu B (minimum I/O size): %llu of %llu writes smaller than it, %llu not "
			"aligned to it at their start or end, %llu units written in part (a device that writes whole "
			"units reads and rewrites each)\n",
			(unsigned long long)r->write_unit, (unsigned long long)r->writes_under_unit,
			(unsigned long long)r->writes, (unsigned long long)r->writes_unaligned_to_unit,
			(unsigned long long)r->partial_units);
	event_text(out, "log file parallel write", &r->write_lat);
	event_text(out, "log file sync", &r->sync_lat);
	event_text(out, "commit response", &r->response_lat);
	if (cfg->members == MEMBERS_RACE)
		fprintf(out, "race: %s won %llu, %s won %llu\n", r->member[0].path, (unsigned long long)r->member[0].wins,
			r->member[1].path, (unsigned long long)r->member[1].wins);
	for (int k = 0; k < r->nmembers; k++)
		if (r->member[k].is_nbd)
			fprintf(out, "NBD member %s: export of %llu bytes, %llu writes with FUA, %llu flushes (no /sys/block "
				"counters: no kernel block device under it)\n", r->member[k].path,
				(unsigned long long)r->member[k].nbd.size, (unsigned long long)r->member[k].fua_writes,
				(unsigned long long)r->member[k].flushes);
	for (int k = 0; k < r->nmembers; k++)
		if (r->member[k].failed)
			fprintf(out, "member %s FAILED at log write %llu: %s; dropped, the run went on without it\n",
				r->member[k].path, (unsigned long long)r->member[k].failed_at_write,
				strerror(r->member[k].error));
}
