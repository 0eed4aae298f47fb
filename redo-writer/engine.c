// SPDX-License-Identifier: Apache-2.0
/*
 * The run: N session threads commit transactions into a shared log buffer; one log writer
 * thread takes everything pending, writes it in whole redo blocks at the current log offset
 * (wrapping at --log-size, as a log switch would), and wakes every session its write covered.
 * "log file parallel write" is the time of that write; "log file sync" is a session's time from
 * commit to wake-up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

#include "redo-writer.h"

struct shared {
	const struct config *cfg;
	pthread_mutex_t lock;
	pthread_cond_t work;        /* redo is pending, or the run is over */
	pthread_cond_t written_cv;  /* the log writer completed a write */
	uint64_t appended;          /* redo bytes committed so far (a byte position, like an SCN) */
	uint64_t written;           /* redo bytes durable so far */
	uint64_t txns_started, txns_done;
	int stop, failed, sessions_left;
	int fd;
	int null_target;
	char *buf;
	uint64_t log_offset;
	uint64_t start_ns, deadline_ns;
	struct results *res;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ULL), .tv_nsec = (long)(t % 1000000000ULL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* One physical write of `len` bytes; returns 0 or -errno. */
static int write_redo(struct shared *sh, uint64_t len)
{
	uint64_t done = 0;

	if (sh->null_target)
		return 0;
	while (done < len) {
		ssize_t n = pwrite(sh->fd, sh->buf + done, len - done, (off_t)(sh->log_offset + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (uint64_t)n;
	}
	if (sh->cfg->sync == SYNC_FDATASYNC && fdatasync(sh->fd))
		return -errno;
	return 0;
}

static void *log_writer(void *arg)
{
	struct shared *sh = arg;
	const struct config *cfg = sh->cfg;
	uint64_t payload = cfg->blocksize - REDO_BLOCK_HEADER;
	uint64_t max_blocks = cfg->max_write / cfg->blocksize;

	pthread_mutex_lock(&sh->lock);
	for (;;) {
		uint64_t pending, blocks, len, t0, t1;
		int err;

		while (sh->appended == sh->written && !sh->stop)
			pthread_cond_wait(&sh->work, &sh->lock);
		if (sh->appended == sh->written && sh->stop)
			break;
		pending = sh->appended - sh->written;
		blocks = (pending + payload - 1) / payload;
		if (blocks > max_blocks) {  /* the rest goes in the next write */
			blocks = max_blocks;
			pending = blocks * payload;
		}
		len = blocks * cfg->blocksize;
		if (sh->log_offset + len > cfg->log_size) {
			sh->log_offset = 0;
			sh->res->wraps++;
		}
		pthread_mutex_unlock(&sh->lock);

		t0 = now_ns();
		err = write_redo(sh, len);
		t1 = now_ns();

		pthread_mutex_lock(&sh->lock);
		if (err) {
			fprintf(stderr, "%s: write of %llu bytes at offset %llu of %s failed: pwrite: %s\n", PROG,
				(unsigned long long)len, (unsigned long long)sh->log_offset, cfg->target, strerror(-err));
			if (err == -EINVAL)
				fprintf(stderr, "%s: O_DIRECT refused a %llu-byte redo block: the device's logical sector "
					"is larger (see '%s probe %s')\n", PROG, cfg->blocksize, PROG, cfg->target);
			sh->failed = 1;
			sh->stop = 1;
			pthread_cond_broadcast(&sh->written_cv);
			break;
		}
		sh->log_offset += len;
		sh->written += pending;
		sh->res->writes++;
		sh->res->writes_small += len < 4096;
		sh->res->bytes_written += len;
		sh->res->wastage_bytes += blocks * payload - pending;
		if (samples_add(&sh->res->write_lat, t1 - t0))
			sh->failed = sh->stop = 1;
		pthread_cond_broadcast(&sh->written_cv);
	}
	pthread_mutex_unlock(&sh->lock);
	return NULL;
}

static void *session(void *arg)
{
	struct shared *sh = arg;
	const struct config *cfg = sh->cfg;
	uint64_t interval = cfg->rate ? 1000000000ULL * cfg->sessions / cfg->rate : 0;
	uint64_t next = now_ns();

	for (;;) {
		uint64_t target, t0, t1;

		if (interval) {
			next += interval;
			sleep_until(next);
		}
		pthread_mutex_lock(&sh->lock);
		if (sh->stop || (cfg->transactions && sh->txns_started >= cfg->transactions) ||
		    (sh->deadline_ns && now_ns() >= sh->deadline_ns)) {
			pthread_mutex_unlock(&sh->lock);
			break;
		}
		sh->txns_started++;
		t0 = now_ns();
		sh->appended += cfg->redo_per_txn;
		target = sh->appended;
		pthread_cond_signal(&sh->work);
		while (sh->written < target && !sh->failed)
			pthread_cond_wait(&sh->written_cv, &sh->lock);
		t1 = now_ns();
		if (!sh->failed) {
			sh->txns_done++;
			sh->res->redo_bytes += cfg->redo_per_txn;
			if (samples_add(&sh->res->sync_lat, t1 - t0))
				sh->failed = sh->stop = 1;
		}
		pthread_mutex_unlock(&sh->lock);
	}
	pthread_mutex_lock(&sh->lock);
	if (--sh->sessions_left == 0) {
		sh->stop = 1;
		pthread_cond_signal(&sh->work);
	}
	pthread_mutex_unlock(&sh->lock);
	return NULL;
}

static int open_target(struct shared *sh)
{
	const struct config *cfg = sh->cfg;
	int flags = O_WRONLY | O_DIRECT | O_CLOEXEC | (cfg->sync == SYNC_ODSYNC ? O_DSYNC : 0);
	struct stat st;

	if (!strcmp(cfg->target, "null:")) {
		sh->null_target = 1;
		return 0;
	}
	if (stat(cfg->target, &st) == 0 && S_ISBLK(st.st_mode)) {
		uint64_t size = 0;

		if (!cfg->force && check_target_safe(cfg->target))
			return -1;
		sh->fd = open(cfg->target, flags);
		if (sh->fd < 0)
			goto open_failed;
		if (ioctl(sh->fd, BLKGETSIZE64, &size) == 0 && size < cfg->log_size) {
			fprintf(stderr, "%s: log size %llu is larger than %s (%llu bytes)\n", PROG, cfg->log_size,
				cfg->target, (unsigned long long)size);
			return -1;
		}
		return 0;
	}
	sh->fd = open(cfg->target, flags | O_CREAT, 0644);
	if (sh->fd < 0)
		goto open_failed;
	if (posix_fallocate(sh->fd, 0, (off_t)cfg->log_size) && ftruncate(sh->fd, (off_t)cfg->log_size)) {
		fprintf(stderr, "%s: cannot size %s to %llu bytes: %s\n", PROG, cfg->target, cfg->log_size, strerror(errno));
		return -1;
	}
	return 0;
open_failed:
	fprintf(stderr, "%s: cannot open %s for O_DIRECT writes: open: %s\n", PROG, cfg->target, strerror(errno));
	return -1;
}

int run(const struct config *cfg, struct results *res)
{
	struct shared sh = { .cfg = cfg, .res = res, .fd = -1 };
	pthread_t writer, *threads;
	unsigned long long i;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	if (open_target(&sh))
		return -2;  /* a target we may not or cannot use: bad input, not a failed run */
	if (posix_memalign((void **)&sh.buf, 4096, cfg->max_write)) {
		fprintf(stderr, "%s: cannot allocate a %llu-byte log buffer\n", PROG, cfg->max_write);
		return -1;
	}
	/* Redo content: a recognisable pattern, the header of each block left as zeroes. */
	memset(sh.buf, 0xa5, cfg->max_write);
	threads = calloc(cfg->sessions, sizeof(*threads));
	if (!threads)
		return -1;
	pthread_mutex_init(&sh.lock, NULL);
	pthread_cond_init(&sh.work, NULL);
	pthread_cond_init(&sh.written_cv, NULL);
	sh.sessions_left = (int)cfg->sessions;
	sh.start_ns = now_ns();
	sh.deadline_ns = cfg->duration_s ? sh.start_ns + cfg->duration_s * 1000000000ULL : 0;

	pthread_create(&writer, NULL, log_writer, &sh);
	for (i = 0; i < cfg->sessions; i++)
		pthread_create(&threads[i], NULL, session, &sh);
	for (i = 0; i < cfg->sessions; i++)
		pthread_join(threads[i], NULL);
	pthread_join(writer, NULL);

	res->elapsed_s = (double)(now_ns() - sh.start_ns) / 1e9;
	res->transactions = sh.txns_done;
	if (sh.failed)
		rc = -1;
	if (sh.fd >= 0)
		close(sh.fd);
	free(sh.buf);
	free(threads);
	return rc;
}
