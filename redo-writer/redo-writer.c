// SPDX-License-Identifier: Apache-2.0
/*
 * redo-writer command line: `run` (the log-writer benchmark) and `probe` (a device's sector
 * geometry). Options come from one table (name, help, default, bounds, multiple-of) that drives
 * parsing, validation and --help; numbers are parsed with strtoull, errno and end-pointer checks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/fs.h>

#include "redo-writer.h"

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
	{ "target", OPT_STR, "file or block device to write redo to ('null:' writes nothing)", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "mirror", OPT_STR, "second log member: a commit completes when both writes are done (multiplexed redo)", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "race", OPT_STR, "second log member: a commit completes when the first write is done (smart flash logging)", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "events", OPT_STR, "CSV file for every write and commit latency (for plots and statistical tests)", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ "blocksize", OPT_NUM, "redo block size in bytes", "512", 512, 4096, "512|1024|4096", NULL, NULL, 0 },
	{ "sessions", OPT_NUM, "committing sessions (threads)", "1", 1, 4096, NULL, NULL, NULL, 0 },
	{ "duration", OPT_NUM, "seconds to run (or --transactions)", "10", 1, 86400, NULL, NULL, NULL, 0 },
	{ "transactions", OPT_NUM, "commits to run over all sessions (instead of --duration)", NULL, 1, 1ULL << 40, NULL, NULL, NULL, 0 },
	{ "redo-per-txn", OPT_NUM, "redo bytes each commit generates", "512", 1, 64ULL << 20, NULL, NULL, NULL, 0 },
	{ "rate", OPT_NUM, "commits per second over all sessions (0: closed loop, as fast as possible); at most 1000000 per session", "0", 0, 10000000, NULL,
	  "a rate the lab cannot offer: ask for fewer commits per second", NULL, 0 },
	{ "arrival", OPT_STR, "how commits arrive: closed loop, or open loop evenly spaced (fixed) or Poisson; "
	  "default closed, or fixed with --rate", NULL, 0, 0, "closed|fixed|poisson", NULL, NULL, 0 },
	{ "seed", OPT_NUM, "seed of the Poisson arrival schedules (each session's from it and its index)", "1", 0, ~0ULL, NULL, NULL, NULL, 0 },
	{ "cpu-us-per-txn", OPT_NUM, "CPU microseconds a session spends on each transaction before its commit (a busy "
	  "loop on the thread's CPU clock)", "0", 0, 1000000, NULL, NULL, NULL, 0 },
	{ "sync", OPT_STR, "how writes are made durable", "odsync", 0, 0, "odsync|fdatasync", NULL, NULL, 0 },
	{ "log-size", OPT_NUM, "size of the log; writes wrap to its start (a log switch)", "67108864", 65536, 1ULL << 44, NULL, NULL, NULL, 0 },
	{ "max-write", OPT_NUM, "log buffer: the largest single write", "1048576", 4096, 64ULL << 20, NULL, NULL, NULL, 0 },
	{ "spin-us", OPT_NUM, "microseconds the log writer and sessions poll before sleeping (0: always sleep)", "0", 0, 100000, NULL, NULL, NULL, 0 },
	{ "output", OPT_STR, "report format", "text", 0, 0, "text|json", NULL, NULL, 0 },
	{ "force", OPT_FLAG, "write to a block device even if it looks in use", NULL, 0, 0, NULL, NULL, NULL, 0 },
	{ NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, 0 },
};

static void usage(FILE *out)
{
	const struct opt *o;

	fprintf(out, "usage: %s run --target PATH [options]\n       %s probe PATH [--output json]\n\nrun options:\n",
		PROG, PROG);
	for (o = run_opts; o->name; o++) {
		char range[96] = "";

		if (o->kind == OPT_NUM && !o->choices)
			snprintf(range, sizeof(range), " [%llu..%llu]", o->min, o->max);
		else if (o->choices)
			snprintf(range, sizeof(range), " {%s}", o->choices);
		fprintf(out, "  --%-14s %s%s%s%s\n", o->name, o->help, range, o->def ? ", default " : "", o->def ? o->def : "");
	}
	fputs("\nOpen loop (--arrival fixed|poisson): each session has a schedule of rate/sessions commits per second\n"
	      "of its own; a commit that arrives while its session is busy waits for it (it is queued, not dropped).\n"
	      "commit_response: from a commit's arrival to its redo written (closed loop: it arrives when its session\n"
	      "starts it, so it is the transaction's CPU plus its log file sync). kept_up: closed loop, true; open loop,\n"
	      "the commits that arrived in the run (arrivals) and were not done at its end are at most 2 % of them or\n"
	      "two per session, whichever is more (what is in flight and a short queue; a growing backlog is more).\n", out);
}

static struct opt *find_opt(struct opt *table, const char *name)
{
	for (; table->name; table++)
		if (!strcmp(table->name, name))
			return table;
	return NULL;
}

static int parse_num(const struct opt *o, const char *text, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!*text || *text == '-' || *text == '+') {
		fprintf(stderr, "%s: --%s '%s' is not a whole number\n", PROG, o->name, text);
		return -1;
	}
	v = strtoull(text, &end, 10);
	if (errno == ERANGE || *end) {
		fprintf(stderr, "%s: --%s '%s' is not a whole number%s\n", PROG, o->name, text,
			errno == ERANGE ? " that fits" : "");
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
		o->given = 1;
		if (o->kind == OPT_FLAG)
			continue;
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

static int is_blockdev(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISBLK(st.st_mode);
}

/* Whether two paths name one file or one block device (e.g. /dev/mapper/x and /dev/dm-0). */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, b))
		return 1;
	if (stat(a, &sa) || stat(b, &sb))
		return 0;
	if (S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode))
		return sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The arrival mode against --rate, and a rate the sessions can be offered. */
static int check_arrival(struct config *cfg)
{
	const char *arrival = str(run_opts, "arrival");

	if (!arrival)
		arrival = cfg->rate ? "fixed" : "closed";
	if (check_choice(find_opt(run_opts, "arrival"), arrival))
		return -1;
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

static int build_config(struct config *cfg)
{
	const char *sync, *output;
	unsigned long long max_write;

	memset(cfg, 0, sizeof(*cfg));
	cfg->target = str(run_opts, "target");
	if (!cfg->target) {
		fprintf(stderr, "%s: --target is required (a file, a block device or null:)\n", PROG);
		return -1;
	}
	if (num(run_opts, "blocksize", &cfg->blocksize) || num(run_opts, "sessions", &cfg->sessions) ||
	    num(run_opts, "duration", &cfg->duration_s) || num(run_opts, "transactions", &cfg->transactions) ||
	    num(run_opts, "redo-per-txn", &cfg->redo_per_txn) || num(run_opts, "rate", &cfg->rate) ||
	    num(run_opts, "log-size", &cfg->log_size) || num(run_opts, "max-write", &max_write) ||
	    num(run_opts, "spin-us", &cfg->spin_us) || num(run_opts, "seed", &cfg->seed) ||
	    num(run_opts, "cpu-us-per-txn", &cfg->cpu_us_per_txn) || check_arrival(cfg))
		return -1;
	if (find_opt(run_opts, "transactions")->given) {
		if (find_opt(run_opts, "duration")->given) {
			fprintf(stderr, "%s: give --duration or --transactions, not both\n", PROG);
			return -1;
		}
		cfg->duration_s = 0;
	}
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
	if (cfg->second && strcmp(cfg->target, "null:") && same_file(cfg->target, cfg->second)) {
		fprintf(stderr, "%s: --%s %s is the same %s as --target %s: a second log member must be another one\n",
			PROG, cfg->members == MEMBERS_MIRROR ? "mirror" : "race", cfg->second,
			is_blockdev(cfg->target) ? "device" : "file", cfg->target);
		return -1;
	}
	return 0;
}

/*
 * Raw writes destroy: refuse a device that is mounted (which includes the root disk: its
 * partitions are mounted), or holds a partition table or filesystem/RAID/LVM signature.
 */
int check_target_safe(const char *path)
{
	char cmd[512], line[256];
	FILE *p;
	struct stat st;
	int problem = 0;

	if (stat(path, &st) || !S_ISBLK(st.st_mode))
		return 0;
	/* lsblk lists the mount points of the disk and of everything on it: the root disk shows "/". */
	snprintf(cmd, sizeof(cmd), "lsblk -n -o MOUNTPOINTS '%s' 2>/dev/null; wipefs -n -O TYPE --noheadings '%s' 2>&1",
		 path, path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = 0;
		if (*line && !problem) {
			fprintf(stderr, "%s: refusing to write: %s is mounted or holds a signature (%s); use --force to "
				"write anyway\n", PROG, path, line);
			problem = 1;
		}
	}
	pclose(p);
	return problem ? -1 : 0;
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

int probe(const char *path, enum output_mode output)
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
	fd = open(path, O_RDONLY | O_CLOEXEC);
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
	close(fd);
	read_sysfs_int(&st, "queue/rotational", &rotational);
	if (output == OUTPUT_JSON)
		printf("{\"device\": \"%s\", \"logical_block_size\": %d, \"physical_block_size\": %u, "
		       "\"minimum_io_size\": %u, \"optimal_io_size\": %u, \"alignment_offset\": %d, "
		       "\"rotational\": %lld, \"size_bytes\": %llu}\n",
		       path, logical, physical, io_min, io_opt, alignment, rotational, size);
	else
		printf("%s: logical %d, physical %u, minimum I/O %u, optimal I/O %u, alignment offset %d, "
		       "rotational %lld, %llu bytes\n", path, logical, physical, io_min, io_opt, alignment, rotational, size);
	return 0;
}

int main(int argc, char **argv)
{
	struct config cfg;
	struct results res;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
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
	if (strcmp(argv[1], "run")) {
		fprintf(stderr, "%s: unknown command '%s': expected run or probe\n", PROG, argv[1]);
		return 2;
	}
	if (parse_args(run_opts, argc, argv, 2) || build_config(&cfg))
		return 2;
	rc = run(&cfg, &res);
	if (rc >= 0 && cfg.events && write_events(cfg.events, &res))  /* before report(): it sorts */
		rc = -1;
	if (rc >= 0)
		report(&cfg, &res, stdout);
	samples_free(&res.write_lat);
	samples_free(&res.sync_lat);
	samples_free(&res.response_lat);
	/* Exit status: 0 done; 1 the run failed (an I/O error with no member left); 2 bad input,
	 * nothing written; 3 done, but a log member failed and was dropped (the report names it). */
	return rc == -2 ? 2 : rc == 1 ? 3 : rc ? 1 : 0;
}
