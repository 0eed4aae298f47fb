// SPDX-License-Identifier: Apache-2.0
/*
 * redo-writer command line: `run` (the log-writer benchmark), `verify` (crash recovery on a log image
 * the run wrote with --format checked, verify.c) and `probe` (a device's sector geometry). Options
 * come from one table per command (name, help, default, bounds, multiple-of) that drives
 * parsing, validation and --help; numbers are digits only, range-checked. Every file the run writes
 * (its log members and --events) is opened and checked here before anything is written: without
 * blocking (a FIFO would block open() until a reader came), a regular file or, for a member, a
 * block device, and no two of them one file. A member may instead be an NBD export on a Unix socket
 * of this host (nbd.c, the device path): connected here, and checked for size, write access and a
 * way to make a write durable. Or a device model in virtual time (model:KEY=VALUE;..., the lab's
 * model with the filter's keys): then every member is a model or null:, and the run's clock is
 * virtual (vclock.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/fs.h>

#include "common.h"
#include "engine.h"
#include "io.h"
#include "model.h"
#include "nbd.h"
#include "redoblock.h"
#include "report.h"
#include "stats.h"
#include "verify.h"

enum opt_kind { OPT_NUM, OPT_STR, OPT_FLAG };

struct opt {
	const char *name;
	enum opt_kind kind;
	const char *help;
	const char *def;
	unsigned long long min, max;
	const char *choices;  /* for OPT_STR: '|'-separated, NULL: any */
	const char *hint;     /* what to do when the value is out of range, or NULL */
	const char *value;
	int given;
};

static struct opt run_opts[] = {
	{ "target", OPT_STR, "file, block device or NBD export on this host (nbd+unix:///[EXPORT]?socket=PATH) to write "
	  "redo to ('null:' writes nothing); or a device model in virtual time, model:KEY=VALUE;KEY=VALUE... (the lab "
	  "model's keys, and its files as the filter writes them: trace=FILE, image=FILE (the disk it serves, made as "
	  "large as the log), writelog=FILE; the run's clock is then virtual, every member a model: or null:, the same "
	  "run on any host)",
	  NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "mirror", OPT_STR, "second log member: a commit completes when both writes are done (multiplexed redo)", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "race", OPT_STR, "second log member: a commit completes when the first write is done (smart flash logging)", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "events", OPT_STR, "CSV file for every write and commit latency (for plots and statistical tests)", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "blocksize", OPT_NUM, "redo block size in bytes", "512", 512, 4096, "512|1024|4096", NULL, NULL, 0 },
	{ "sessions", OPT_NUM, "committing sessions (threads)", "1", 1, 4096, NULL, NULL, NULL, 0 },
	{ "duration", OPT_NUM, "seconds to run (with --transactions: at most; whichever comes first ends the run)", "10", 1, 86400, NULL, NULL, NULL, 0 },
	{ "transactions", OPT_NUM, "commits to run over all sessions (alone: no time limit; with --duration: whichever comes first)", NULL, 1, 1ULL << 40, NULL, NULL, NULL, 0 },
	{ "redo-per-txn", OPT_NUM, "redo bytes each commit generates", "512", 1, 64ULL << 20, NULL, NULL, NULL, 0 },
	{ "rate", OPT_NUM, "commits per second over all sessions (0: closed loop, as fast as possible); at most 1000000 per session", "0", 0, 10000000, NULL,
	  "a rate the lab cannot offer: ask for fewer commits per second", NULL, 0 },
	{ "arrival", OPT_STR, "how commits arrive: closed loop, or open loop evenly spaced (fixed) or Poisson; "
	  "default closed, or fixed with --rate", NULL, 0, 0, "closed|fixed|poisson", NULL, NULL, 0 },
	{ "cpu-dist", OPT_STR, "how --cpu-us-per-txn varies from one transaction to the next: fixed (every one the "
	  "same), or exponential (drawn with that mean, each session's from --seed and its index)", "fixed", 0, 0,
	  "fixed|exponential", NULL, NULL, 0 },
	{ "seed", OPT_NUM, "seed of the Poisson arrival schedules and the exponential CPU (each session's from it and "
	  "its index)", "1", 0, ~0ULL, NULL, NULL, NULL, 0 },
	{ "cpu-us-per-txn", OPT_NUM, "CPU microseconds a session spends on each transaction before its commit (a busy "
	  "loop on the thread's CPU clock)", "0", 0, 1000000, NULL, NULL, NULL, 0 },
	{ "sync", OPT_STR, "how writes are made durable", "odsync", 0, 0, "odsync|fdatasync", NULL, NULL, 0 },
	{ "log-size", OPT_NUM, "size of the log; writes wrap to its start (a log switch)", "67108864", 65536, 1ULL << 44, NULL, NULL, NULL, 0 },
	{ "max-write", OPT_NUM, "log buffer: the largest single write", "1048576", 4096, 64ULL << 20, NULL, NULL, NULL, 0 },
	{ "spin-us", OPT_NUM, "microseconds the log writer and sessions poll before sleeping (0: always sleep)", "0", 0, 100000, NULL, NULL, NULL, 0 },
	{ "reply-spin-us", OPT_NUM, "microseconds the log writer polls an NBD member's socket for each reply before "
	  "sleeping in poll() (0: always sleep)", "0", 0, 100000, NULL, NULL, NULL, 0 },
	{ "nbd-timeout", OPT_NUM, "seconds an NBD member's server has to accept the connection, complete the handshake, and "
	  "answer each write or flush (a modelled device's longest service time is 10 s); past it the member fails",
	  "30", 1, 3600, NULL, NULL, NULL, 0 },
	{ "cpus", OPT_NUM, "virtual time (a model: member): the modelled host's cores the sessions' --cpu-us-per-txn runs "
	  "on, first come first served; 0: one for every session", "0", 0, 65536, NULL, NULL, NULL, 0 },
	{ "log-writer-cpu-us", OPT_NUM, "virtual time (a model: member): the log writer's CPU before each write, in "
	  "microseconds, on a core of --cpus as the sessions' CPU is (a real run's is measured: cpu_measured)", "0", 0,
	  1000000, NULL, NULL, NULL, 0 },
	{ "wakeup-dist", OPT_STR, "virtual time: --wakeup-us every time (fixed), or drawn from an exponential of that "
	  "mean (from --seed)", "fixed", 0, 0, "fixed|exponential", NULL, NULL, 0 },
	{ "wakeup-us", OPT_NUM, "virtual time (a model: member): microseconds from a post to the thread it wakes "
	  "running (a session woken by its write, the log writer by a commit); 0: at once", "0", 0, 1000000, NULL, NULL,
	  NULL, 0 },
	{ "format", OPT_STR, "what the redo blocks hold: plain (0xa5 throughout) or checked (a header, a CRC32C and "
	  "redo bytes recomputable from their position, for verify)", "plain", 0, 0, "plain|checked", NULL, NULL, 0 },
	{ "output", OPT_STR, "report format", "text", 0, 0, "text|json", NULL, NULL, 0 },
	{ "force", OPT_FLAG, "write to a block device even if it looks in use", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, 0 },
};

static struct opt verify_opts[] = {
	{ "target", OPT_STR, "the log image, read only: a file or a block device", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "blocksize", OPT_NUM, "redo block size in bytes the log was written with", NULL, 512, 65536,
	  "512|1024|2048|4096|8192|16384|32768|65536", NULL, NULL, 0 },
	{ "log-size", OPT_NUM, "size of the log (the run's --log-size)", NULL, 512, 1ULL << 44, NULL, NULL, NULL, 0 },
	{ "acknowledged", OPT_NUM, "redo byte position every acknowledged commit lies within: counts the redo lost",
	  NULL, 0, ~0ULL, NULL, NULL, NULL, 0 },
	{ "redo-per-txn", OPT_NUM, "redo bytes a commit generates: counts the commits lost (with --acknowledged)", NULL,
	  1, 64ULL << 20, NULL, NULL, NULL, 0 },
	{ "checkpoint", OPT_NUM, "redo byte position of a database's checkpoint (a wrapping log's: the start of the "
	  "pass the writer is in; redo before it needs no recovery): the redo lost is counted from it, the log still "
	  "read from block 0 (with --acknowledged, at most it)", NULL, 0, ~0ULL, NULL, NULL, NULL, 0 },
	{ "unreadable", OPT_STR, "file of lines OFFSET LENGTH (bytes, decimal): ranges a read fails on (medium errors)",
	  NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "mirror", OPT_STR, "the log group's second member (run --mirror's), read only: each block from whichever "
	  "member continues the redo, as a database recovers a multiplexed group", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "mirror-unreadable", OPT_STR, "as --unreadable, of the --mirror member", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "output", OPT_STR, "report format", "text", 0, 0, "text|json", NULL, NULL, 0 },
	{ NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, 0 },
};

static struct opt io_opts[] = {
	{ "target", OPT_STR, "a file (opened O_DIRECT; made as large as the requests reach when it is not there), a "
	  "block device or an NBD export on this host (nbd+unix:///[EXPORT]?socket=PATH) to issue the requests to",
	  NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "requests", OPT_STR, "file of requests, one a line ('-': standard input): write OFFSET LENGTH, write-durable "
	  "OFFSET LENGTH (O_DSYNC's: RWF_DSYNC, or FUA over NBD), read OFFSET LENGTH, flush", NULL, 0, 0, NULL, NULL, NULL,
	  0 },
	{ "nbd-timeout", OPT_NUM, "seconds an NBD export's server has to connect and to answer each request", "30", 1,
	  3600, NULL, NULL, NULL, 0 },
	{ "reply-spin-us", OPT_NUM, "microseconds an NBD export's socket is polled for each reply before sleeping in "
	  "poll() (0: always sleep): a reply that comes within it is timed without a wake-up from idle", "0", 0, 100000,
	  NULL, NULL, NULL, 0 },
	{ "force", OPT_FLAG, "write to a block device even if it looks in use", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, 0 },
};

static void usage_options(FILE *out, const struct opt *o)
{
	for (; o->name; o++) {
		char range[96] = "";

		if (o->kind == OPT_NUM && !o->choices)
			snprintf(range, sizeof(range), " [%llu..%llu]", o->min, o->max);
		else if (o->choices)
			snprintf(range, sizeof(range), " {%s}", o->choices);
		fprintf(out, "  --%-14s %s%s%s%s\n", o->name, o->help, range, o->def ? ", default " : "", o->def ? o->def : "");
	}
}

static void usage(FILE *out)
{
	fprintf(out, "usage: %s run --target PATH%s [options]\n       %s verify --target PATH --blocksize N --log-size "
		"SIZE [options]\n       %s probe PATH [--output json]\n       %s io --target PATH --requests FILE "
		"[options]\n\nrun options:\n", PROG, nbd_supported ? "|nbd+unix:///[EXPORT]?socket=PATH" : "", PROG, PROG, PROG);
	usage_options(out, run_opts);
	fputs("\nOpen loop (--arrival fixed|poisson): each session has a schedule of rate/sessions commits per second\n"
	      "of its own; a commit that arrives while its session is busy waits for it (it is queued, not dropped).\n"
	      "commit_response: from a commit's arrival to its redo written (closed loop: it arrives when its session\n"
	      "starts it, so it is the transaction's CPU plus its log file sync). kept_up: closed loop, true; open loop,\n"
	      "the commits that arrived in the run (arrivals) and were not done at its end are at most 2 % of them or\n"
	      "two per session, whichever is more (what is in flight and a short queue; a growing backlog is more).\n", out);
	fputs("\nverify options (crash recovery on a log written with run --format checked; exit 0 verified, whatever\n"
	      "was lost, 1 the image cannot be read, 2 bad input):\n", out);
	usage_options(out, verify_opts);
	fputs("\nio options (the requests one at a time, each timed from its call to its completion; prints JSON with\n"
	      "each request's nanoseconds; exit 0 done, 1 a request failed, 2 bad input, nothing written):\n", out);
	usage_options(out, io_opts);
	if (!nbd_supported)
		fputs("\nThis build has no NBD support (built without libnbd, as the guests' static binary is): an NBD\n"
		      "--target is refused.\n", out);
}

static struct opt *find_opt(struct opt *table, const char *name)
{
	for (; table->name; table++)
		if (!strcmp(table->name, name))
			return table;
	return NULL;
}

/* A whole number: digits only (no sign, space, base prefix or suffix), at most 20 of them. */
static int parse_num(const struct opt *o, const char *text, unsigned long long *out)
{
	size_t len = strlen(text);
	unsigned long long v;

	if (!len || strspn(text, "0123456789") != len) {
		fprintf(stderr, "%s: --%s '%.40s%s' is not a whole number: expected digits only, %llu to %llu\n", PROG,
			o->name, text, len > 40 ? "..." : "", o->min, o->max);
		return -1;
	}
	errno = 0;
	v = strtoull(text, NULL, 10);
	if (errno == ERANGE || len > 20) {
		fprintf(stderr, "%s: --%s '%.40s%s' is not a whole number that fits: expected %llu to %llu\n", PROG,
			o->name, text, len > 40 ? "..." : "", o->min, o->max);
		return -1;
	}
	if (v < o->min || v > o->max) {
		fprintf(stderr, "%s: --%s %llu is out of range: expected %llu to %llu%s%s\n", PROG, o->name, v, o->min, o->max,
			o->hint ? "; " : "", o->hint ? o->hint : "");
		return -1;
	}
	if (o->choices) {
		char want[64];
		const char *p = o->choices;

		while (*p) {
			size_t n = strcspn(p, "|");

			snprintf(want, sizeof(want), "%.*s", (int)n, p);
			if (strtoull(want, NULL, 10) == v)
				goto ok;
			p += n + (p[n] == '|');
		}
		fprintf(stderr, "%s: --%s %llu is not one of %s\n", PROG, o->name, v, o->choices);
		return -1;
	}
ok:
	*out = v;
	return 0;
}

/* Whether `s` is printable UTF-8 text: no control character (a newline in a path would make a
 * message two lines, and a report's JSON invalid; C1 controls and U+2028/U+2029 break lines too), no
 * byte sequence that is not UTF-8 (overlong, a surrogate, past U+10FFFF). */
static const char *not_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
		unsigned cp = n == 0 ? *p : n == 1 ? *p & 0x1fu : n == 2 ? *p & 0x0fu : *p & 0x07u;
		static const unsigned least[] = { 0, 0x80, 0x800, 0x10000 };

		if (n < 0)
			return "is not UTF-8 text";
		for (int k = 1; k <= n; k++) {
			if ((p[k] & 0xc0) != 0x80)
				return "is not UTF-8 text";
			cp = cp << 6 | (p[k] & 0x3fu);
		}
		if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return "is not UTF-8 text";
		if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
			return "has a control character (a newline, tab, escape, ...)";
		p += n + 1;
	}
	return NULL;
}

/* Whether the first `n` bytes of `s` hold a control character or a byte that is not ASCII. */
static int not_text_prefix(const char *s, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if ((unsigned char)s[k] < 0x20 || (unsigned char)s[k] >= 0x7f)
			return 1;
	return 0;
}

static int check_arguments(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *why = not_text(argv[i]);

		if (why) {
			/* Name the option it belongs to (--name=VALUE, or the option just before it), never the text. */
			const char *eq = strchr(argv[i], '=');
			int n = 0;
			const char *opt = NULL;

			if (!strncmp(argv[i], "--", 2) && eq && !not_text_prefix(argv[i], (size_t)(eq - argv[i]))) {
				opt = argv[i];
				n = (int)(eq - argv[i]);
			} else if (i > 1 && !strncmp(argv[i - 1], "--", 2) && !strchr(argv[i - 1], '=')) {
				opt = argv[i - 1];
				n = (int)strlen(opt);
			}
			if (opt)
				fprintf(stderr, "%s: argument %d (the value of %.*s) %s: expected printable text\n", PROG, i,
					n > 60 ? 60 : n, opt, why);
			else
				fprintf(stderr, "%s: argument %d %s: expected printable text\n", PROG, i, why);
			return -1;
		}
		if (strlen(argv[i]) > PATH_MAX) {
			fprintf(stderr, "%s: argument %d is %zu bytes long: expected at most %d\n", PROG, i, strlen(argv[i]),
				PATH_MAX);
			return -1;
		}
	}
	return 0;
}

static int check_choice(const struct opt *o, const char *v)
{
	const char *p = o->choices;
	size_t len = strlen(v);

	if (!p)
		return 0;
	while (*p) {
		size_t n = strcspn(p, "|");

		if (n == len && !strncmp(p, v, n))
			return 0;
		p += n + (p[n] == '|');
	}
	fprintf(stderr, "%s: --%s '%s' is not one of %s\n", PROG, o->name, v, o->choices);
	return -1;
}

static int parse_args(struct opt *table, int argc, char **argv, int first)
{
	int i;

	for (i = first; i < argc; i++) {
		const char *arg = argv[i], *eq;
		char name[64];
		struct opt *o;

		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (strncmp(arg, "--", 2)) {
			fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", PROG, arg);
			return -1;
		}
		eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", (int)(eq ? (size_t)(eq - arg - 2) : strlen(arg + 2)), arg + 2);
		o = find_opt(table, name);
		if (!o) {
			fprintf(stderr, "%s: unknown option --%s (see --help)\n", PROG, name);
			return -1;
		}
		if (o->given) {
			fprintf(stderr, "%s: --%s is given more than once: give it once\n", PROG, name);
			return -1;
		}
		o->given = 1;
		if (o->kind == OPT_FLAG) {
			if (eq) {
				fprintf(stderr, "%s: --%s takes no value (got '--%.60s')\n", PROG, name, arg + 2);
				return -1;
			}
			continue;
		}
		if (eq)
			o->value = eq + 1;
		else if (i + 1 < argc)
			o->value = argv[++i];
		else {
			fprintf(stderr, "%s: --%s needs a value\n", PROG, name);
			return -1;
		}
	}
	return 0;
}

static int num(struct opt *table, const char *name, unsigned long long *out)
{
	struct opt *o = find_opt(table, name);
	const char *v = o->given ? o->value : o->def;

	if (!v) {
		*out = 0;
		return 0;
	}
	return parse_num(o, v, out);
}

static const char *str(struct opt *table, const char *name)
{
	struct opt *o = find_opt(table, name);

	return o->given ? o->value : o->def;
}

/* The arrival mode against --rate, and a rate the sessions can be offered. */
static int check_arrival(struct config *cfg)
{
	const char *arrival = str(run_opts, "arrival");

	if (!arrival)
		arrival = cfg->rate ? "fixed" : "closed";
	if (check_choice(find_opt(run_opts, "arrival"), arrival) ||
	    check_choice(find_opt(run_opts, "cpu-dist"), str(run_opts, "cpu-dist")))
		return -1;
	cfg->cpu_dist = !strcmp(str(run_opts, "cpu-dist"), "exponential") ? CPU_EXPONENTIAL : CPU_FIXED;
	if (check_choice(find_opt(run_opts, "wakeup-dist"), str(run_opts, "wakeup-dist")))
		return -1;
	cfg->wakeup_dist = !strcmp(str(run_opts, "wakeup-dist"), "exponential") ? CPU_EXPONENTIAL : CPU_FIXED;
	cfg->arrival = !strcmp(arrival, "poisson") ? ARRIVAL_POISSON : !strcmp(arrival, "fixed") ? ARRIVAL_FIXED :
		       ARRIVAL_CLOSED;
	if (cfg->arrival == ARRIVAL_CLOSED && cfg->rate) {
		fprintf(stderr, "%s: --arrival closed with --rate %llu: a closed loop commits as fast as it can; drop "
			"--rate, or give --arrival fixed|poisson\n", PROG, cfg->rate);
		return -1;
	}
	if (cfg->arrival != ARRIVAL_CLOSED && !cfg->rate) {
		fprintf(stderr, "%s: --arrival %s needs --rate (commits per second over all sessions, 1 to 10000000)\n",
			PROG, arrival);
		return -1;
	}
	if (cfg->rate > 1000000ULL * cfg->sessions) {
		fprintf(stderr, "%s: --rate %llu over %llu session(s) is an arrival every %.3f us per session: expected at "
			"least 1 us apart (at most 1000000 per session); lower --rate or raise --sessions\n", PROG,
			cfg->rate, cfg->sessions, 1e6 * (double)cfg->sessions / (double)cfg->rate);
		return -1;
	}
	return 0;
}

/* --format: checked numbers a log's blocks in 32 bits. */
static int check_format(struct config *cfg)
{
	const char *format = str(run_opts, "format");

	if (check_choice(find_opt(run_opts, "format"), format))
		return -1;
	cfg->format = !strcmp(format, "checked") ? FORMAT_CHECKED : FORMAT_PLAIN;
	if (cfg->format == FORMAT_CHECKED && cfg->log_size / cfg->blocksize > REDO_BLOCK_MAX_BLOCKS) {
		fprintf(stderr, "%s: --format checked numbers blocks in 32 bits: expected a log of at most %llu blocks "
			"(--log-size %llu is %llu blocks of %llu bytes)\n", PROG, REDO_BLOCK_MAX_BLOCKS, cfg->log_size,
			cfg->log_size / cfg->blocksize, cfg->blocksize);
		return -1;
	}
	return 0;
}

static int build_config(struct config *cfg)
{
	const char *sync, *output;
	unsigned long long max_write;

	memset(cfg, 0, sizeof(*cfg));
	cfg->target = str(run_opts, "target");
	if (!cfg->target) {
		fprintf(stderr, "%s: --target is required (a file, a block device, null: or nbd+unix:///[EXPORT]?socket=PATH)\n", PROG);
		return -1;
	}
	if (num(run_opts, "blocksize", &cfg->blocksize) || num(run_opts, "sessions", &cfg->sessions) ||
	    num(run_opts, "duration", &cfg->duration_s) || num(run_opts, "transactions", &cfg->transactions) ||
	    num(run_opts, "redo-per-txn", &cfg->redo_per_txn) || num(run_opts, "rate", &cfg->rate) ||
	    num(run_opts, "log-size", &cfg->log_size) || num(run_opts, "max-write", &max_write) ||
	    num(run_opts, "spin-us", &cfg->spin_us) ||
	    num(run_opts, "reply-spin-us", &cfg->reply_spin_us) || num(run_opts, "nbd-timeout", &cfg->nbd_timeout_s) ||
	    num(run_opts, "seed", &cfg->seed) ||
	    num(run_opts, "cpu-us-per-txn", &cfg->cpu_us_per_txn) || num(run_opts, "wakeup-us", &cfg->wakeup_us) ||
	    num(run_opts, "cpus", &cfg->cpus) || num(run_opts, "log-writer-cpu-us", &cfg->log_writer_cpu_us) ||
	    check_arrival(cfg))
		return -1;
	/* --transactions alone runs without a time limit; with --duration, whichever comes first ends
	 * the run (as fio's number_ios with runtime). */
	if (find_opt(run_opts, "transactions")->given && !find_opt(run_opts, "duration")->given)
		cfg->duration_s = 0;
	if (cfg->log_size % cfg->blocksize) {
		fprintf(stderr, "%s: log size %llu is not a multiple of the block size %llu\n", PROG, cfg->log_size,
			cfg->blocksize);
		return -1;
	}
	if (max_write % cfg->blocksize || max_write > cfg->log_size) {
		fprintf(stderr, "%s: max write %llu must be a multiple of the block size %llu and at most the log size %llu\n",
			PROG, max_write, cfg->blocksize, cfg->log_size);
		return -1;
	}
	cfg->max_write = max_write;
	if (check_format(cfg))
		return -1;
	sync = str(run_opts, "sync");
	output = str(run_opts, "output");
	if (check_choice(find_opt(run_opts, "sync"), sync) || check_choice(find_opt(run_opts, "output"), output))
		return -1;
	cfg->sync = !strcmp(sync, "fdatasync") ? SYNC_FDATASYNC : SYNC_ODSYNC;
	cfg->output = !strcmp(output, "json") ? OUTPUT_JSON : OUTPUT_TEXT;
	cfg->force = find_opt(run_opts, "force")->given;
	cfg->events = str(run_opts, "events");
	if (str(run_opts, "mirror") && str(run_opts, "race")) {
		fprintf(stderr, "%s: give --mirror or --race, not both\n", PROG);
		return -1;
	}
	cfg->second = str(run_opts, "mirror") ? str(run_opts, "mirror") : str(run_opts, "race");
	cfg->members = str(run_opts, "mirror") ? MEMBERS_MIRROR : str(run_opts, "race") ? MEMBERS_RACE : MEMBERS_ONE;
	cfg->member_fd[0] = cfg->member_fd[1] = cfg->events_fd = -1;
	for (int k = 0; k < 2; k++)
		for (int f = 0; f < MODEL_FILES; f++)
			cfg->model_fd[k][f] = -1;
	for (const char *const *name = (const char *const[]){ "target", "mirror", "race", "events", NULL }; *name; name++) {
		const char *v = str(run_opts, *name);

		if (v && !*v) {
			fprintf(stderr, "%s: --%s is empty: expected a path%s\n", PROG, *name,
				strcmp(*name, "events") ? " (a file, a block device or null:)" : " (a regular file)");
			return -1;
		}
	}
	return 0;
}

/* A file the run writes: a log member (--target, --mirror, --race) or --events; or an NBD member. */
struct output {
	const char *opt, *path;
	int member, fd, created;
	struct nbd_target *nbd;     /* an NBD member: its connection (fd -1, st unset) */
	char *real;         /* created: its resolved path, to remove it again if the run does not happen */
	struct stat st;
};

static const char *kind_of(mode_t mode)
{
	return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" :
	       S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" : "a special file";
}

static int usable(const struct output *o, mode_t mode)
{
	return S_ISREG(mode) || (o->member && S_ISBLK(mode));
}

static int refuse_kind(const struct output *o, mode_t mode)
{
	fprintf(stderr, "%s: --%s %s is %s: expected %s%s%s\n", PROG, o->opt, o->path, kind_of(mode),
		o->member ? "a regular file, a block device or null:" : "a regular file (the events CSV)",
		o->member && S_ISSOCK(mode) ? "; an NBD server's socket is given as nbd+unix:///?socket=" : "",
		o->member && S_ISSOCK(mode) ? o->path : "");
	return -1;
}

/* Opens `o` for writing without blocking and refuses what it may not be; nothing is written yet.
 * A member gets O_DIRECT (and O_DSYNC) here, as the run writes it. */
static int open_output(struct output *o, int flags)
{
	struct stat st;
	int existed = stat(o->path, &st) == 0, fl;

	if (existed && !usable(o, st.st_mode))
		return refuse_kind(o, st.st_mode);
	o->fd = open(o->path, flags | O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
	if (o->fd < 0) {
		int err = errno;

		/* O_DIRECT is refused after the file is made (a filesystem without it): take it away again. */
		if (!existed && stat(o->path, &st) == 0 && S_ISREG(st.st_mode) && !st.st_size)
			unlink(o->path);
		if (o->member)
			fprintf(stderr, "%s: cannot open %s for O_DIRECT writes: open: %s\n", PROG, o->path, strerror(err));
		else
			fprintf(stderr, "%s: cannot write events to %s: %s\n", PROG, o->path, strerror(err));
		return -1;
	}
	o->created = !existed;
	if (o->created)
		o->real = realpath(o->path, NULL);
	if (fstat(o->fd, &o->st)) {
		fprintf(stderr, "%s: --%s %s: fstat: %s\n", PROG, o->opt, o->path, strerror(errno));
		return -1;
	}
	if (!usable(o, o->st.st_mode))
		return refuse_kind(o, o->st.st_mode);
	fl = fcntl(o->fd, F_GETFL);
	if (fl < 0 || fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK)) {
		fprintf(stderr, "%s: --%s %s: fcntl: %s\n", PROG, o->opt, o->path, strerror(errno));
		return -1;
	}
	return 0;
}

/* One file or one block device under two names (a symlink, a hard link, /dev/mapper/x and /dev/dm-0). */
static int same_file(const struct stat *a, const struct stat *b)
{
	if (S_ISBLK(a->st_mode) || S_ISBLK(b->st_mode))
		return S_ISBLK(a->st_mode) && S_ISBLK(b->st_mode) && a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Runs argv (no shell: a path is an argument, never shell text) and copies the first non-empty line it
 * prints (stdout, and stderr when `with_stderr`) to `line` ("" if none); -1 when it could not run. */
static int first_line_of(char *const argv[], int with_stderr, char *line, size_t size)
{
	char buf[256];
	int fds[2], status = 0;
	pid_t pid;
	FILE *f;

	*line = 0;
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		dup2(devnull, 0);
		dup2(fds[1], 1);
		dup2(with_stderr ? fds[1] : devnull, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	if (!f) {
		close(fds[0]);
	} else {
		while (fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = 0;
			if (*buf && !*line)
				snprintf(line, size, "%s", buf);
		}
		fclose(f);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -1 : 0;
}

/*
 * Raw writes destroy: refuse a device that is mounted (which includes the root disk: its
 * partitions are mounted), or holds a partition table or filesystem/RAID/LVM signature, or that
 * cannot be checked (lsblk or wipefs could not run). 0 when writing to `path` destroys nothing; else
 * prints why and returns -1.
 */
static int check_target_safe(const char *path)
{
	char *lsblk[] = { "lsblk", "-n", "-o", "MOUNTPOINTS", "--", (char *)path, NULL };
	char *wipefs[] = { "wipefs", "-n", "-O", "TYPE", "--noheadings", "--", (char *)path, NULL };
	char line[256];
	struct stat st;

	if (stat(path, &st) || !S_ISBLK(st.st_mode))
		return 0;
	/* lsblk lists the mount points of the disk and of everything on it: the root disk shows "/". */
	if (first_line_of(lsblk, 0, line, sizeof(line)) || (!*line && first_line_of(wipefs, 1, line, sizeof(line)))) {
		fprintf(stderr, "%s: refusing to write: cannot check whether %s is in use (lsblk and wipefs must run); "
			"use --force to write anyway\n", PROG, path);
		return -1;
	}
	if (*line) {
		fprintf(stderr, "%s: refusing to write: %s is mounted or holds a signature (%s); use --force to "
			"write anyway\n", PROG, path, line);
		return -1;
	}
	return 0;
}

/* A block device member: not in use (unless --force), and large enough for the log. */
static int check_blockdev(const struct config *cfg, const struct output *o)
{
	struct stat now;
	uint64_t size = 0;

	if (!cfg->force && check_target_safe(o->path))
		return -1;
	if (stat(o->path, &now) || !S_ISBLK(now.st_mode) || now.st_rdev != o->st.st_rdev) {
		fprintf(stderr, "%s: --%s %s changed while it was checked: give the device again\n", PROG, o->opt, o->path);
		return -1;
	}
	if (ioctl(o->fd, BLKGETSIZE64, &size) == 0 && size < cfg->log_size) {
		fprintf(stderr, "%s: log size %llu is larger than %s (%llu bytes)\n", PROG, cfg->log_size, o->path,
			(unsigned long long)size);
		return -1;
	}
	return 0;
}

/* An NBD member: large enough for the log, taking writes of a redo block, and a way to make a write
 * durable as --sync asks (FUA or a flush for odsync, a flush for fdatasync). */
static int check_nbd(const struct config *cfg, const struct output *o)
{
	const struct nbd_export_info *info = nbd_target_info(o->nbd);

	if (info->size < cfg->log_size) {
		fprintf(stderr, "%s: log size %llu is larger than %s (%llu bytes): give a smaller --log-size or serve a "
			"larger export\n", PROG, cfg->log_size, o->path, (unsigned long long)info->size);
		return -1;
	}
	if (info->minimum_block > cfg->blocksize || (info->minimum_block && cfg->blocksize % info->minimum_block)) {
		fprintf(stderr, "%s: --%s %s takes writes in whole blocks of %llu bytes (its minimum block size), not of "
			"--blocksize %llu: give a --blocksize that is a multiple of it\n", PROG, o->opt, o->path,
			(unsigned long long)info->minimum_block, cfg->blocksize);
		return -1;
	}
	if (cfg->sync == SYNC_FDATASYNC && !info->can_flush) {
		fprintf(stderr, "%s: --sync fdatasync flushes after each write, and the server of --%s %s takes no flush: "
			"give --sync odsync%s\n", PROG, o->opt, o->path, info->can_fua ? " (FUA writes)" : "");
		return -1;
	}
	if (!info->can_fua && !info->can_flush) {
		fprintf(stderr, "%s: the server of --%s %s takes neither FUA writes nor flushes: no write to it could be "
			"made durable; serve it with flush support\n", PROG, o->opt, o->path);
		return -1;
	}
	return 0;
}

/* Whether two NBD members are one export: the same socket (by inode) and export name. */
static int same_export(const struct output *a, const struct output *b)
{
	const struct nbd_export_info *x = nbd_target_info(a->nbd), *y = nbd_target_info(b->nbd);

	return x->socket_dev == y->socket_dev && x->socket_ino == y->socket_ino && !strcmp(x->export_name, y->export_name);
}

#define MODEL_PREFIX "model:"

static int is_model(const char *path)
{
	return path && !strncmp(path, MODEL_PREFIX, strlen(MODEL_PREFIX));
}

/* A model: member's model from its KEY=VALUE;KEY=VALUE... (the filter's keys); NULL, reported in
 * one line naming the option, the pair and what is wrong. */
static const char *const MODEL_FILE_KEYS[MODEL_FILES] = { "trace", "image", "writelog" };

/* A model: member's file, made when it is not there: trace= and writelog= (emptied when the run
 * starts, as the filter's are), image= (written in place, made as large as the log when the run
 * starts, never shortened); never through a symbolic link, never anything but a regular file, opened
 * without blocking. The fd, or -1 reported. */
static int open_model_file(const char *opt, const char *path, int key, const char *file)
{
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	struct stat st;
	int fd;

	if (!*file) {
		fprintf(stderr, "%s: --%s %s: %s= is empty: expected a path\n", PROG, opt, path, MODEL_FILE_KEYS[key]);
		return -1;
	}
	if (lstat(file, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: --%s %s: %s=%s is %s: expected a regular file\n", PROG, opt, path, MODEL_FILE_KEYS[key],
			file, S_ISLNK(st.st_mode) ? "a symbolic link" : kind_of(st.st_mode));
		return -1;
	}
	fd = open(file, flags, 0644);
	if (fd < 0) {
		fprintf(stderr, "%s: --%s %s: %s=%s: %s\n", PROG, opt, path, MODEL_FILE_KEYS[key], file, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: --%s %s: %s=%s is not a regular file\n", PROG, opt, path, MODEL_FILE_KEYS[key], file);
		close(fd);
		return -1;
	}
	return fd;
}

static struct model *open_model(const char *opt, const char *path, const char **files)
{
	const char *text = path + strlen(MODEL_PREFIX), *why;
	struct model *m = malloc(sizeof(*m));
	char *copy = strdup(text), *pair, *save = NULL;

	if (!m || !copy) {
		fprintf(stderr, "%s: out of memory for --%s's model\n", PROG, opt);
		goto fail;
	}
	model_init(m);
	if (*text && (text[0] == ';' || text[strlen(text) - 1] == ';' || strstr(text, ";;"))) {
		fprintf(stderr, "%s: --%s %s: an empty KEY=VALUE: expected model:KEY=VALUE;KEY=VALUE... (the device model's "
			"keys, as the lab's device profiles give them)\n", PROG, opt, path);
		goto fail;
	}
	for (pair = strtok_r(copy, ";", &save); pair; pair = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(pair, '=');

		if (!eq || eq == pair) {
			fprintf(stderr, "%s: --%s %s: '%s': expected KEY=VALUE (model:KEY=VALUE;KEY=VALUE...)\n", PROG, opt,
				path, pair);
			goto fail;
		}
		*eq = '\0';
		why = NULL;
		for (int f = 0; f < MODEL_FILES; f++) {
			if (strcmp(pair, MODEL_FILE_KEYS[f]))
				continue;
			if (files[f]) {
				fprintf(stderr, "%s: --%s %s: %s= is given twice\n", PROG, opt, path, pair);
				goto fail;
			}
			if (!(files[f] = strdup(eq + 1))) {
				fprintf(stderr, "%s: out of memory for --%s's model\n", PROG, opt);
				goto fail;
			}
			why = "file";
		}
		if (why)
			continue;
		why = model_set(m, pair, eq + 1);
		if (why == MODEL_NOT_MINE) {
			fprintf(stderr, "%s: --%s %s: unknown key '%s': expected the device model's keys (write=, read=, "
				"channels=, cache-size=, physical-sector=, write-unit=, ...)\n", PROG, opt, path, pair);
			goto fail;
		}
		if (why) {
			fprintf(stderr, "%s: --%s %s: %s=%s: %s\n", PROG, opt, path, pair, eq + 1, why);
			goto fail;
		}
	}
	if ((why = model_check(m))) {
		fprintf(stderr, "%s: --%s %s: %s\n", PROG, opt, path, why);
		goto fail;
	}
	model_reset(m);
	free(copy);
	return m;
fail:
	free(copy);
	free(m);
	return NULL;
}

/* The run's clock from its members: virtual when one is a model:, and then every other is a model:
 * or null:; 0, or -1 reported. */
static int choose_clock(struct config *cfg)
{
	const char *member[2] = { cfg->target, cfg->second };
	const char *opt[2] = { "target", cfg->members == MEMBERS_MIRROR ? "mirror" : "race" };
	int models = is_model(member[0]) + is_model(member[1]);

	cfg->clock = models ? CLOCK_VIRTUAL : CLOCK_REAL;
	for (int k = 0; models && k < 2; k++) {
		if (member[k] && !is_model(member[k]) && strcmp(member[k], "null:")) {
			fprintf(stderr, "%s: --%s %s: a run with a model: member is in virtual time: every member is then a "
				"model: or null: (--%s %s)\n", PROG, opt[k], member[k], opt[!k], member[!k]);
			return -1;
		}
	}
	for (const char *const *o = (const char *const[]){ "wakeup-us", "wakeup-dist", "cpus", "log-writer-cpu-us", NULL }; *o; o++) {
		if (!models && find_opt(run_opts, *o)->given) {
			fprintf(stderr, "%s: --%s is the modelled host's, in virtual time: it needs a model: member (a real "
				"run's are this host's own)\n", PROG, *o);
			return -1;
		}
	}
	if (models && find_opt(run_opts, "spin-us")->given) {
		fprintf(stderr, "%s: --spin-us polls the host's clock: a run with a model: member is in virtual time, where "
			"no thread spins (leave --spin-us out)\n", PROG);
		return -1;
	}
	for (int k = 0; k < 2; k++) {
		if (!is_model(member[k]))
			continue;
		if (!(cfg->member_model[k] = open_model(opt[k], member[k], cfg->model_file[k]))) {
			free(cfg->member_model[0]);
			cfg->member_model[0] = NULL;
			return -1;
		}
		cfg->member_model_text[k] = member[k] + strlen(MODEL_PREFIX);
	}
	return 0;
}

/* A model: member's files (trace=, image=, writelog=), opened after the other outputs and checked
 * against them and each other: none the same file as another (a trace over the disk it describes, a
 * write log over the events CSV). 0, or -1 reported, the files it created removed, nothing written. */
static int open_model_files(struct config *cfg, const struct output *out, int nout)
{
	const char *opt[2] = { "target", cfg->members == MEMBERS_MIRROR ? "mirror" : "race" };
	const char *member[2] = { cfg->target, cfg->second };
	struct stat st[2][MODEL_FILES];
	int created[2][MODEL_FILES] = { { 0 } };

	for (int k = 0; k < 2; k++) {
		for (int f = 0; f < MODEL_FILES; f++) {
			const char *file = cfg->model_file[k][f];
			struct stat before;

			if (!file)
				continue;
			created[k][f] = lstat(file, &before) != 0;
			if ((cfg->model_fd[k][f] = open_model_file(opt[k], member[k], f, file)) < 0 ||
			    fstat(cfg->model_fd[k][f], &st[k][f]))
				goto refused;
			for (int i = 0; i < nout; i++) {
				if (out[i].fd >= 0 && !out[i].member && same_file(&out[i].st, &st[k][f])) {
					fprintf(stderr, "%s: --%s %s: %s=%s is the same file as --%s %s: give the model's %s another "
						"file\n", PROG, opt[k], member[k], MODEL_FILE_KEYS[f], file, out[i].opt, out[i].path,
						MODEL_FILE_KEYS[f]);
					goto refused;
				}
			}
			for (int j = 0; j <= k; j++) {
				for (int g = 0; g < (j == k ? f : MODEL_FILES); g++) {
					if (cfg->model_fd[j][g] < 0 || !same_file(&st[j][g], &st[k][f]))
						continue;
					fprintf(stderr, "%s: --%s %s: %s=%s is the same file as %s%s=%s: each of a model's files "
						"is a file of its own\n", PROG, opt[k], member[k], MODEL_FILE_KEYS[f], file,
						j == k ? "its " : "the other member's ", MODEL_FILE_KEYS[g], cfg->model_file[j][g]);
					goto refused;
				}
			}
		}
	}
	return 0;
refused:
	for (int k = 0; k < 2; k++) {
		for (int f = 0; f < MODEL_FILES; f++) {
			if (cfg->model_fd[k][f] >= 0) {
				close(cfg->model_fd[k][f]);
				if (created[k][f])
					unlink(cfg->model_file[k][f]);
			}
			cfg->model_fd[k][f] = -1;
		}
	}
	return -1;
}

/* Closes what open_outputs opened; `remove` takes away the files it created. */
static void close_outputs(struct output *out, int n, int remove)
{
	for (int i = 0; i < n; i++) {
		if (out[i].fd >= 0)
			close(out[i].fd);
		out[i].fd = -1;
		nbd_target_close(out[i].nbd);
		out[i].nbd = NULL;
		if (remove && out[i].created && out[i].real)
			unlink(out[i].real);
		free(out[i].real);
		out[i].real = NULL;
	}
}

/* Opens and checks every file the run writes, before any is written; 0, or -1 (reported, nothing
 * left behind). On success cfg has their descriptors and out[0..*n) records them. */
static int open_outputs(struct config *cfg, struct output *out, int *n)
{
	int flags = O_DIRECT | (cfg->sync == SYNC_ODSYNC ? O_DSYNC : 0);
	const char *second_opt = cfg->members == MEMBERS_MIRROR ? "mirror" : "race";
	const struct { const char *opt, *path; int member; } want[3] = {
		{ "target", cfg->target, 1 }, { second_opt, cfg->second, 1 }, { "events", cfg->events, 0 } };

	*n = 0;
	for (int w = 0; w < 3; w++) {
		struct output *o = &out[*n];

		if (!want[w].path || (want[w].member && (!strcmp(want[w].path, "null:") || is_model(want[w].path))))
			continue;
		*o = (struct output){ .opt = want[w].opt, .path = want[w].path, .member = want[w].member, .fd = -1 };
		(*n)++;
		if (o->member && nbd_uri_scheme(o->path)) {
			if (!(o->nbd = nbd_target_open(o->opt, o->path, (int)cfg->nbd_timeout_s)))
				goto refused;
			for (int i = 0; i < *n - 1; i++) {
				if (out[i].nbd && same_export(&out[i], o)) {
					fprintf(stderr, "%s: --%s %s is the same NBD export as --target %s: a second log member "
						"must be another one\n", PROG, o->opt, o->path, out[i].path);
					goto refused;
				}
			}
			continue;
		}
		if (open_output(o, o->member ? flags : 0))
			goto refused;
		for (int i = 0; i < *n - 1; i++) {
			if (out[i].nbd || !same_file(&out[i].st, &o->st))
				continue;
			if (o->member)
				fprintf(stderr, "%s: --%s %s is the same %s as --target %s: a second log member must be "
					"another one\n", PROG, o->opt, o->path, S_ISBLK(o->st.st_mode) ? "device" : "file",
					out[i].path);
			else
				fprintf(stderr, "%s: --events %s is the same file as --%s %s: the events CSV would overwrite "
					"the log; give --events another file\n", PROG, o->path, out[i].opt, out[i].path);
			goto refused;
		}
	}
	for (int i = 0; i < *n; i++)
		if (out[i].nbd ? check_nbd(cfg, &out[i]) : S_ISBLK(out[i].st.st_mode) && check_blockdev(cfg, &out[i]))
			goto refused;
	for (int i = 0; i < *n; i++) {
		if (!out[i].member) {
			cfg->events_fd = out[i].fd;
		} else {
			cfg->member_fd[strcmp(out[i].opt, "target") != 0] = out[i].fd;
			cfg->member_nbd[strcmp(out[i].opt, "target") != 0] = out[i].nbd;
		}
	}
	return 0;
refused:
	close_outputs(out, *n, 1);
	return -1;
}

static int read_sysfs_int(const struct stat *st, const char *leaf, long long *out)
{
	char path[128];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s", major(st->st_rdev), minor(st->st_rdev), leaf);
	f = fopen(path, "r");
	if (!f)
		return -1;
	rc = fscanf(f, "%lld", out) == 1 ? 0 : -1;
	fclose(f);
	return rc;
}

static int probe(const char *path, enum output_mode output)
{
	struct stat st;
	int fd, logical = 0, alignment = 0;
	unsigned int physical = 0, io_min = 0, io_opt = 0;
	unsigned long long size = 0;
	long long rotational = -1;

	if (stat(path, &st)) {
		fprintf(stderr, "%s: %s: stat: %s\n", PROG, path, strerror(errno));
		return 2;
	}
	if (!S_ISBLK(st.st_mode)) {
		fprintf(stderr, "%s: %s is not a block device\n", PROG, path);
		return 2;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: open: %s\n", PROG, path, strerror(errno));
		return 2;
	}
	if (ioctl(fd, BLKSSZGET, &logical) || ioctl(fd, BLKPBSZGET, &physical) || ioctl(fd, BLKIOMIN, &io_min) ||
	    ioctl(fd, BLKIOOPT, &io_opt) || ioctl(fd, BLKALIGNOFF, &alignment) || ioctl(fd, BLKGETSIZE64, &size)) {
		fprintf(stderr, "%s: %s: ioctl: %s\n", PROG, path, strerror(errno));
		close(fd);
		return 2;
	}
	if (fstat(fd, &st) || !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "%s: %s is not a block device\n", PROG, path);
		close(fd);
		return 2;
	}
	close(fd);
	read_sysfs_int(&st, "queue/rotational", &rotational);
	if (output == OUTPUT_JSON) {
		fputs("{\"device\": ", stdout);
		json_string(stdout, path);
		printf(", \"logical_block_size\": %d, \"physical_block_size\": %u, "
		       "\"minimum_io_size\": %u, \"optimal_io_size\": %u, \"alignment_offset\": %d, "
		       "\"rotational\": %lld, \"size_bytes\": %llu}\n",
		       logical, physical, io_min, io_opt, alignment, rotational, size);
	} else
		printf("%s: logical %d, physical %u, minimum I/O %u, optimal I/O %u, alignment offset %d, "
		       "rotational %lld, %llu bytes\n", path, logical, physical, io_min, io_opt, alignment, rotational, size);
	return 0;
}

/*
 * --acknowledged is a redo byte position, and positions count on across the log's passes (a wrapped
 * log's block 0 holds redo from past --log-size), so the bound is not the log's size but the most redo
 * a log of this size can hold before its 32-bit sequence numbers run out: 2^32 - 1 passes of its
 * blocks, each carrying blocksize - 16 redo bytes. Past that, no run's position is meant (2^64 - 1 was
 * taken, and counted a wrapped number of commits lost); 0, or -1 reported.
 */
static int check_acknowledged(const struct verify_config *cfg)
{
	unsigned long long per_pass = cfg->log_size / cfg->blocksize * (cfg->blocksize - REDO_BLOCK_HEADER), most;

	if (__builtin_mul_overflow(per_pass, 0xffffffffULL, &most) || cfg->acknowledged <= most)
		return 0;
	fprintf(stderr, "%s: --acknowledged %llu is past any redo position a log of --log-size %llu in %llu-byte blocks "
		"reaches (%llu redo bytes a pass, 4294967295 passes: %llu): expected the run's acknowledged position (its "
		"report's redo_bytes)\n", PROG, cfg->acknowledged, cfg->log_size, cfg->blocksize, per_pass, most);
	return -1;
}

/* verify's options; 0, or -1 reported. */
static int build_verify_config(struct verify_config *cfg)
{
	static const char *const required[][2] = { { "target", "the log image: a file or a block device" },
		{ "blocksize", "the redo block size the log was written with" }, { "log-size", "the run's --log-size" } };
	const char *output = str(verify_opts, "output");

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (!find_opt(verify_opts, required[i][0])->given) {
			fprintf(stderr, "%s: verify needs --%s: expected %s\n", PROG, required[i][0], required[i][1]);
			return -1;
		}
	}
	cfg->target = str(verify_opts, "target");
	cfg->unreadable = str(verify_opts, "unreadable");
	cfg->mirror = str(verify_opts, "mirror");
	cfg->mirror_unreadable = str(verify_opts, "mirror-unreadable");
	if (cfg->mirror_unreadable && !cfg->mirror) {
		fprintf(stderr, "%s: --mirror-unreadable names the --mirror member's medium errors: expected --mirror too\n",
			PROG);
		return -1;
	}
	cfg->has_acknowledged = find_opt(verify_opts, "acknowledged")->given;
	cfg->has_redo_per_txn = find_opt(verify_opts, "redo-per-txn")->given;
	cfg->has_checkpoint = find_opt(verify_opts, "checkpoint")->given;
	if (num(verify_opts, "blocksize", &cfg->blocksize) || num(verify_opts, "log-size", &cfg->log_size) ||
	    num(verify_opts, "acknowledged", &cfg->acknowledged) || num(verify_opts, "redo-per-txn", &cfg->redo_per_txn) ||
	    num(verify_opts, "checkpoint", &cfg->checkpoint) ||
	    check_choice(find_opt(verify_opts, "output"), output))
		return -1;
	cfg->json = !strcmp(output, "json");
	if (cfg->log_size % cfg->blocksize || cfg->log_size / cfg->blocksize > REDO_BLOCK_MAX_BLOCKS) {
		fprintf(stderr, "%s: --log-size %llu: expected a multiple of the block size %llu, of at most %llu blocks\n",
			PROG, cfg->log_size, cfg->blocksize, REDO_BLOCK_MAX_BLOCKS);
		return -1;
	}
	if (cfg->has_acknowledged && check_acknowledged(cfg))
		return -1;
	if (cfg->has_redo_per_txn && !cfg->has_acknowledged) {
		fprintf(stderr, "%s: --redo-per-txn counts the commits lost: expected --acknowledged too\n", PROG);
		return -1;
	}
	if (cfg->has_checkpoint && !cfg->has_acknowledged) {
		fprintf(stderr, "%s: --checkpoint %llu: the redo lost is counted from it up to --acknowledged: expected "
			"--acknowledged too\n", PROG, cfg->checkpoint);
		return -1;
	}
	if (cfg->has_checkpoint && cfg->checkpoint > cfg->acknowledged) {
		fprintf(stderr, "%s: --checkpoint %llu is past --acknowledged %llu: expected at most %llu\n", PROG,
			cfg->checkpoint, cfg->acknowledged, cfg->acknowledged);
		return -1;
	}
	return 0;
}

static void io_refuse_kind(const char *path, mode_t mode)
{
	fprintf(stderr, "%s: --target %s is %s: expected a regular file, a block device or an NBD URI "
		"(nbd+unix:///?socket=PATH)\n", PROG, path, kind_of(mode));
}

/* io's --requests: a regular file of at most IO_REQUESTS_MAX_BYTES, opened without blocking (a FIFO
 * put there would hold open() until a writer came), or '-' for standard input. NULL after one line. */
static FILE *open_requests(const char *path)
{
	struct stat st;
	int fd;

	if (!strcmp(path, "-"))
		return stdin;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: --requests %s: %s: expected a file of requests, or - for standard input\n", PROG, path,
			strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st)) {
		fprintf(stderr, "%s: --requests %s: fstat: %s\n", PROG, path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: --requests %s is %s: expected a regular file of requests, or - for standard input\n",
			PROG, path, kind_of(st.st_mode));
		close(fd);
		return NULL;
	}
	if ((unsigned long long)st.st_size > IO_REQUESTS_MAX_BYTES) {
		fprintf(stderr, "%s: --requests %s is %llu bytes: expected at most %u\n", PROG, path,
			(unsigned long long)st.st_size, IO_REQUESTS_MAX_BYTES);
		close(fd);
		return NULL;
	}
	return fdopen(fd, "r");
}

/* redo-writer io: the requests read and checked, the target opened (a file, made when it is not
 * there, as large as the requests reach; a block device not in use; an NBD export) and checked
 * against them, then issued; JSON out. 0, 1 (a request failed), 2 (bad input: nothing written, a
 * file it made removed). */
static int io_command(void)
{
	const char *target = str(io_opts, "target"), *requests = str(io_opts, "requests");
	struct output o = { .opt = "target", .path = target, .member = 1, .fd = -1 };
	unsigned long long timeout_s, spin_us;
	uint64_t size = 0, align = 512;
	struct io_request *req = NULL;
	uint64_t *ns = NULL;
	size_t n = 0;
	FILE *in;
	int rc = 2, logical = 0, block = 0;
	struct stat st;

	if (!target || !requests || !*target || !*requests) {
		fprintf(stderr, "%s: io needs --target (a file, a block device or an NBD export) and --requests (a file of "
			"requests, or - for standard input)\n", PROG);
		return 2;
	}
	if (num(io_opts, "nbd-timeout", &timeout_s) || num(io_opts, "reply-spin-us", &spin_us) ||
	    !(in = open_requests(requests)))
		return 2;
	if (io_parse(in, strcmp(requests, "-") ? requests : "standard input", &req, &n)) {
		if (in != stdin)
			fclose(in);
		return 2;
	}
	if (in != stdin)
		fclose(in);
	if (nbd_uri_scheme(target)) {
		const struct nbd_export_info *info;
		int durable = 0, flush = 0;

		if (!(o.nbd = nbd_target_open("target", target, (int)timeout_s)))
			goto out;
		info = nbd_target_info(o.nbd);
		size = info->size;
		if (info->minimum_block > align)
			align = info->minimum_block;
		for (size_t i = 0; i < n; i++)
			durable |= req[i].op == IO_WRITE_DURABLE, flush |= req[i].op == IO_FLUSH;
		if ((durable && !info->can_fua) || (flush && !info->can_flush)) {
			fprintf(stderr, "%s: the server of --target %s takes no %s: expected an export that does (its requests "
				"are write-durable, a FUA write, and flush)\n", PROG, target,
				durable && !info->can_fua ? "FUA writes" : "flushes");
			goto out;
		}
	} else {
		int existed = stat(target, &st) == 0;
		dev_t rdev = existed ? st.st_rdev : 0;

		if (existed && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
			io_refuse_kind(target, st.st_mode);
			goto out;
		}
		if (existed && S_ISBLK(st.st_mode) && !find_opt(io_opts, "force")->given && check_target_safe(target))
			goto out;
		/* Without blocking (a FIFO put there since the stat); a block device exclusively (EBUSY while it is
		 * mounted or held), a new file made here (never one another made meanwhile) and O_DIRECT after. */
		o.fd = open(target, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
			    (!existed ? O_CREAT | O_EXCL : S_ISBLK(st.st_mode) ? O_EXCL : 0), 0644);
		if (o.fd < 0) {
			fprintf(stderr, "%s: cannot open %s for reads and writes: %s\n", PROG, target, strerror(errno));
			goto out;
		}
		o.created = !existed;
		if (fstat(o.fd, &o.st)) {
			fprintf(stderr, "%s: --target %s: fstat: %s\n", PROG, target, strerror(errno));
			goto out;
		}
		if (!S_ISREG(o.st.st_mode) && !S_ISBLK(o.st.st_mode)) {
			io_refuse_kind(target, o.st.st_mode);
			goto out;
		}
		if (existed && S_ISBLK(o.st.st_mode) && o.st.st_rdev != rdev) {
			fprintf(stderr, "%s: --target %s changed while it was checked: give the device again\n", PROG, target);
			goto out;
		}
		if (fcntl(o.fd, F_SETFL, (fcntl(o.fd, F_GETFL) & ~O_NONBLOCK) | O_DIRECT)) {
			fprintf(stderr, "%s: cannot use O_DIRECT on %s: %s\n", PROG, target, strerror(errno));
			goto out;
		}
		if (S_ISBLK(o.st.st_mode)) {
			if (ioctl(o.fd, BLKGETSIZE64, &size) || ioctl(o.fd, BLKSSZGET, &logical)) {
				fprintf(stderr, "%s: %s: ioctl: %s\n", PROG, target, strerror(errno));
				goto out;
			}
			align = (uint64_t)logical;
			block = 1;
		} else if (o.created) {
			size = io_reach(req, n);
			if (ftruncate(o.fd, (off_t)size)) {
				fprintf(stderr, "%s: --target %s: cannot make it %llu bytes: %s\n", PROG, target,
					(unsigned long long)size, strerror(errno));
				goto out;
			}
		} else {
			size = (uint64_t)o.st.st_size;
		}
	}
	if (io_check(req, n, target, size, align))
		goto out;
	if (!(ns = calloc(n, sizeof(*ns)))) {
		fprintf(stderr, "%s: out of memory for %zu requests\n", PROG, n);
		goto out;
	}
	if (io_run(o.fd, o.nbd, req, n, ns, spin_us * 1000)) {
		rc = 1;
		goto out;
	}
	fputs("{\"target\": ", stdout);
	json_string(stdout, target);
	printf(", \"transport\": \"%s\", \"size_bytes\": %llu, \"logical_block_size\": %llu, \"requests\": %zu, "
	       "\"ns\": [", o.nbd ? "nbd" : block ? "block" : "file", (unsigned long long)size,
	       (unsigned long long)align, n);
	for (size_t i = 0; i < n; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)ns[i]);
	puts("]}");
	rc = 0;
out:
	free(req);
	free(ns);
	if (o.fd >= 0)
		close(o.fd);
	if (rc && o.created && stat(target, &st) == 0 && st.st_dev == o.st.st_dev && st.st_ino == o.st.st_ino)
		unlink(target);  /* the file it made (that very one), for a run that did not happen or failed */
	nbd_target_close(o.nbd);
	return rc;
}

int main(int argc, char **argv)
{
	struct output out[3];
	struct config cfg;
	struct results res;
	int rc, nout = 0;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (check_arguments(argc, argv))
		return 2;
	if (!strcmp(argv[1], "probe")) {
		if (argc < 3 || argc > 5 || (argc >= 4 && strcmp(argv[3], "--output"))) {
			fprintf(stderr, "usage: %s probe PATH [--output json|text]\n", PROG);
			return 2;
		}
		if (argc == 5 && strcmp(argv[4], "json") && strcmp(argv[4], "text")) {
			fprintf(stderr, "%s: --output '%s' is not one of text|json\n", PROG, argv[4]);
			return 2;
		}
		return probe(argv[2], argc == 5 && !strcmp(argv[4], "json") ? OUTPUT_JSON : OUTPUT_TEXT);
	}
	if (!strcmp(argv[1], "verify")) {
		struct verify_config vcfg;

		if (parse_args(verify_opts, argc, argv, 2) || build_verify_config(&vcfg))
			return 2;
		return verify(&vcfg);
	}
	if (!strcmp(argv[1], "io"))
		return parse_args(io_opts, argc, argv, 2) ? 2 : io_command();
	if (strcmp(argv[1], "run")) {
		fprintf(stderr, "%s: unknown command '%.60s': expected run, verify, probe or io\n", PROG, argv[1]);
		return 2;
	}
	if (parse_args(run_opts, argc, argv, 2) || build_config(&cfg) || choose_clock(&cfg))
		return 2;
	if (open_outputs(&cfg, out, &nout) || open_model_files(&cfg, out, nout)) {
		close_outputs(out, nout, 1);
		free(cfg.member_model[0]);
		free(cfg.member_model[1]);
		return 2;
	}
	rc = run(&cfg, &res);   /* closes the members' descriptors and NBD connections */
	for (int i = 0; i < nout; i++) {
		if (out[i].member) {
			out[i].fd = -1;
			out[i].nbd = NULL;
		}
	}
	if (rc >= 0 && cfg.events_fd >= 0) {
		for (int i = 0; i < nout; i++)
			if (!out[i].member)
				out[i].fd = -1;  /* write_events closes it */
		/* Before report(), which sorts the latencies. */
		if (write_events(cfg.events_fd, cfg.events, &res.write_lat, &res.sync_lat, &res.response_lat))
			rc = -1;
	}
	if (rc >= 0)
		report(&cfg, &res, stdout);
	/* A run that did not happen leaves no file it created behind; one that failed, no empty events file. */
	for (int i = 0; i < nout; i++)
		if (rc >= 0 || (rc == -1 && out[i].member))
			out[i].created = 0;
	close_outputs(out, nout, 1);
	samples_free(&res.write_lat);
	samples_free(&res.sync_lat);
	samples_free(&res.response_lat);
	/* Exit status: 0 done; 1 the run failed (an I/O error with no member left); 2 bad input,
	 * nothing written; 3 done, but a log member failed and was dropped (the report names it). */
	return rc == -2 ? 2 : rc == 1 ? 3 : rc ? 1 : 0;
}
