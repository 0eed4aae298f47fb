// SPDX-License-Identifier: Apache-2.0
/*
 * The run: N session threads commit transactions into a shared log buffer; one log writer
 * thread takes everything pending, writes it in whole redo blocks at the current log offset
 * (wrapping at --log-size, as a log switch would), and wakes every session its write covered.
 * "log file parallel write" is the time of a write until it completes; "log file sync" is a
 * session's time from commit to wake-up.
 *
 * With two members (--mirror, --race) the log writer hands each write to one writer thread per
 * member. A mirrored write completes when every member has it, and the next write waits for it,
 * as a database's log writer waits for every member of a multiplexed group. A raced write
 * completes when the first member has it (the winner is counted), as smart flash logging
 * acknowledges the first of flash and disk; the other member goes on in the background, writing
 * everything it is behind in one write (up to --max-write), and the log writer waits for it only
 * when it falls one log buffer (--max-write bytes) behind: redo stays in the buffer until every
 * member has it.
 *
 * A member whose write fails is reported once (its path, the error, at which log write) and
 * dropped; the run goes on with the other member, as a database goes on with the surviving
 * member of a multiplexed group. When no member is left, the run stops with an error.
 *
 * An NBD member (the device path: a device model's socket on this host, nbd.c) is written through its
 * own libnbd handle by the thread that writes that member. An O_DSYNC write becomes what the kernel
 * makes of one on a block device: a write with FUA when the server takes FUA, else the write and then
 * a flush; --sync fdatasync, the write and then a flush.
 *
 * Every thread is started before any session commits (the sessions wait at a start gate): a thread
 * that cannot be started (too many sessions for the memory limit) stops the run before its first
 * commit, in one line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

#include "common.h"
#include "draw.h"
#include "engine.h"
#include "model.h"
#include "nbd.h"
#include "redoblock.h"
#include "stats.h"
#include "vclock.h"

struct member {
	const char *path;
	int fd;
	int null;
	struct nbd_target *nbd;     /* an NBD member, NULL for the others */
	struct model *model;        /* a model: member (virtual time), NULL for the others */
	FILE *trace, *writelog;     /* a model: member's trace and write log, NULL without */
	int image_fd;               /* the disk it serves (-1: none): each write's bytes land there */
	dev_t rdev;
	uint64_t next;              /* the next log write (sequence number) this member writes */
	uint64_t behind_bytes;      /* bytes of log writes handed out that it has not written yet */
	/* Written by its writer thread only. */
	uint64_t syncs, fua_writes, flushes;
	const char *failed_call;    /* the call whose error a failed write reports */
};

/* A log write handed to the members; its bytes are at buf + bpos. */
struct job {
	uint64_t off, len, pending, blocks, t0, bpos;
	int done[2];
};

struct shared {
	const struct config *cfg;
	struct results *res;
	pthread_mutex_t lock;
	pthread_cond_t work;        /* redo is pending, or the run is over */
	pthread_cond_t written_cv;  /* a write completed */
	pthread_cond_t job_cv;      /* member threads: a job was handed out, or a member finished one */
	pthread_cond_t start_cv;    /* sessions: every thread is up (go), or the run will not happen (stop) */
	int go;
	int wake_sessions;          /* a write released sessions: wake them once the lock is let go */
	uint64_t appended;          /* redo bytes committed so far (a byte position, like an SCN) */
	uint64_t written;           /* redo bytes durable so far */
	uint64_t txns_started, txns_done;
	uint64_t last_done_ns;      /* when the last commit completed */
	int stop, failed, sessions_left;
	struct member m[2];
	int nmembers;
	/* The log buffer: --format plain, max_write bytes of 0xa5 that every write is made from;
	 * checked, two of that, each write's own bytes at its job's bpos, the next after buf_next. */
	char *buf;
	uint64_t buf_size, buf_next;
	uint64_t log_offset;
	uint64_t start_ns, deadline_ns;
	/* log writes handed to the members: ring[seq % ring_size] for seq in [released, issued) */
	struct job *ring;
	uint64_t ring_size, issued, released;
};

/* A session's open-loop arrival schedule: times in ns since the start of the run. */
struct schedule {
	enum arrival_mode mode;
	double interval_ns;         /* between arrivals (Poisson: the mean) */
	double phase_ns;            /* fixed: the first arrival */
	uint64_t rng;               /* Poisson: splitmix64 state */
	uint64_t count;             /* arrivals before `next` */
	uint64_t next;              /* the next arrival */
};

struct session_ctx {
	struct shared *sh;
	uint64_t cpu_rng;           /* --cpu-dist exponential: splitmix64 state */
	struct schedule taken;      /* the next commit to start; its count: commits started */
	struct schedule arrived;    /* the same schedule, walked up to now: the commits that arrived */
	uint64_t backlog_max;
};

/* The run is in virtual time (cfg->clock, set once by run() before any thread starts): the clock,
 * the sleeps, the transactions' CPU and the waits on the run's conditions are the virtual clock's
 * (vclock.h), and the lock has nothing to do (one thread runs at a time). The code that uses them
 * is the same in both. */
static int virt;

static uint64_t real_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return virt ? vclock_now() : real_now_ns();
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ULL), .tv_nsec = (long)(t % 1000000000ULL) };

	if (virt) {
		vclock_sleep_until(t);
		return;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void lock(pthread_mutex_t *m)
{
	if (!virt)
		pthread_mutex_lock(m);
}

static void unlock(pthread_mutex_t *m)
{
	if (!virt)
		pthread_mutex_unlock(m);
}

static void cond_wait(pthread_cond_t *cv, pthread_mutex_t *m)
{
	if (virt)
		vclock_wait(cv);
	else
		pthread_cond_wait(cv, m);
}

static void cond_signal(pthread_cond_t *cv)
{
	if (virt)
		vclock_notify(cv, 0);
	else
		pthread_cond_signal(cv);
}

static void cond_broadcast(pthread_cond_t *cv)
{
	if (virt)
		vclock_notify(cv, 1);
	else
		pthread_cond_broadcast(cv);
}


/* The bytes of a model: member's write: on the disk it serves, and a record of the write log
 * (its arrival, offset, length | op << 32, then the bytes: the filter's format). 0, or -errno. */
static int land_write(struct member *m, const char *buf, uint64_t len, uint64_t off, int64_t arrival)
{
	uint64_t head[3] = { (uint64_t)arrival, off, len | (uint64_t)1 << 32 };
	uint64_t done = 0;

	while (m->image_fd >= 0 && done < len) {
		ssize_t n = pwrite(m->image_fd, buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (uint64_t)n;
	}
	if (m->writelog && (fwrite(head, sizeof(head), 1, m->writelog) != 1 || fwrite(buf, len, 1, m->writelog) != 1))
		return errno ? -errno : -EIO;
	return 0;
}

/* One request to a model: member at the clock's now (a write's bytes land on its disk and write log
 * first), its trace line, and the wait until the model's reply. 0, or -errno with the call named. */
static int model_call(struct member *m, enum op op, const char *buf, uint64_t len, uint64_t off, int fua)
{
	int64_t arrival = (int64_t)vclock_now();
	struct cost c = model_request(m->model, op, off, (uint32_t)len, fua, arrival);
	int err;

	if (op == OP_WRITE && !c.error && (err = land_write(m, buf, len, off, arrival))) {
		m->failed_call = "the model's disk or write log";
		return err;
	}
	if (m->trace && model_trace_line(m->trace, 0, op, off, len, fua, arrival, c.answered, &c, c.error) < 0) {
		m->failed_call = "the model's trace";
		return errno ? -errno : -EIO;
	}
	vclock_sleep_until((uint64_t)c.answered);
	if (c.error)
		m->failed_call = op == OP_WRITE ? "the model's write" : "the model's flush";
	return -c.error;
}

/* One write to a model: member, made durable as write_nbd makes one to a model's NBD export (the
 * filter takes FUA: an O_DSYNC write is one request with FUA; fdatasync, the write and then a
 * flush); its trace line and its bytes written as the filter writes them, when the member has
 * those files. */
static int write_model(struct shared *sh, struct member *m, const char *buf, uint64_t len, uint64_t off)
{
	int fua = sh->cfg->sync == SYNC_ODSYNC, err = model_call(m, OP_WRITE, buf, len, off, fua);

	if (err)
		return err;
	if (!fua && (err = model_call(m, OP_FLUSH, NULL, 0, 0, 0)))
		return err;
	m->fua_writes += fua;
	m->flushes += !fua;
	m->syncs++;
	return 0;
}

/* One write of `len` bytes at `off` to an NBD member, made durable as the kernel would make an
 * O_DSYNC write to a block device (FUA, or a flush after it) or as fdatasync would (a flush). */
static int write_nbd(struct shared *sh, struct member *m, const char *buf, uint64_t len, uint64_t off)
{
	int fua = sh->cfg->sync == SYNC_ODSYNC && nbd_target_info(m->nbd)->can_fua;
	int err = nbd_target_write(m->nbd, buf, len, off, fua, sh->cfg->reply_spin_us * 1000ULL);

	if (err) {
		m->failed_call = "nbd_pwrite";
		return err;
	}
	if (fua) {
		m->fua_writes++;
		m->syncs++;
		return 0;
	}
	err = nbd_target_flush(m->nbd, sh->cfg->reply_spin_us * 1000ULL);
	if (err) {
		m->failed_call = "nbd_flush";
		return err;
	}
	m->flushes++;
	m->syncs++;
	return 0;
}

/* One physical write of the `len` bytes at `buf` to member `m` at `off`; returns 0 or -errno. */
static int write_member(struct shared *sh, struct member *m, const char *buf, uint64_t len, uint64_t off)
{
	uint64_t done = 0;

	if (m->null)
		return 0;
	if (m->nbd)
		return write_nbd(sh, m, buf, len, off);
	if (m->model)
		return write_model(sh, m, buf, len, off);
	while (done < len) {
		ssize_t n = pwrite(m->fd, buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (uint64_t)n;
		m->syncs += sh->cfg->sync == SYNC_ODSYNC;  /* the kernel flushes after each O_DSYNC write */
	}
	if (sh->cfg->sync == SYNC_FDATASYNC) {
		if (fdatasync(m->fd))
			return -errno;
		m->syncs++;
	}
	return 0;
}

static int live_members(const struct shared *sh)
{
	int k, n = 0;

	for (k = 0; k < sh->nmembers; k++)
		n += !sh->res->member[k].failed;
	return n;
}

/* The units of `unit` bytes that a write of `len` bytes at `off` covers only in part: its first if
 * it starts inside one, its last if it ends inside one, one when they are the same unit. */
static uint64_t partial_units(uint64_t off, uint64_t len, uint64_t unit)
{
	uint64_t end = off + len;
	int head = off % unit != 0, tail = end % unit != 0;

	if (!len)
		return 0;
	if (off / unit == (end - 1) / unit)
		return head || tail;
	return (uint64_t)head + (uint64_t)tail;
}

/* Called with the lock held: no memory left for the latencies; the run stops, reported once. */
static void out_of_memory(struct shared *sh)
{
	if (!sh->failed)
		fprintf(stderr, "%s: out of memory recording latencies after %llu commits: run fewer --transactions or "
			"a shorter --duration\n", PROG, (unsigned long long)sh->txns_done);
	sh->failed = sh->stop = 1;
	cond_broadcast(&sh->written_cv);
	cond_broadcast(&sh->job_cv);
	cond_signal(&sh->work);
}

/* Called with the lock held: count a completed log write and release the sessions it covers. */
static void account_write(struct shared *sh, const struct job *j, uint64_t t_end)
{
	const struct config *cfg = sh->cfg;

	sh->written += j->pending;
	sh->res->writes++;
	sh->res->writes_small += j->len < 4096;
	if (sh->res->write_unit) {
		sh->res->writes_under_unit += j->len < sh->res->write_unit;
		sh->res->writes_unaligned_to_unit += j->off % sh->res->write_unit || j->len % sh->res->write_unit;
		sh->res->partial_units += partial_units(j->off, j->len, sh->res->write_unit);
	}
	sh->res->bytes_written += j->len;
	sh->res->wastage_bytes += j->blocks * (cfg->blocksize - REDO_BLOCK_HEADER) - j->pending;
	if (samples_add(&sh->res->write_lat, t_end - j->t0, t_end - sh->start_ns))
		out_of_memory(sh);
	sh->wake_sessions = 1;
}

/* Called with the lock held: release, in order, the log writes that are complete (mirror: every
 * live member has them; race: one has). */
static void release_jobs(struct shared *sh, uint64_t t_end)
{
	while (sh->released < sh->issued) {
		struct job *j = &sh->ring[sh->released % sh->ring_size];
		int k, any = 0, all = 1;

		for (k = 0; k < sh->nmembers; k++) {
			if (sh->res->member[k].failed)
				continue;
			any |= j->done[k];
			all &= j->done[k];
		}
		if (!(sh->cfg->members == MEMBERS_RACE ? any : all) || !live_members(sh))
			break;
		account_write(sh, j, t_end);
		sh->released++;
	}
}

/* A queue limit of the device under `fd` (a block device: the ioctl `req`; a file: the sysfs
 * queue/`name` of its filesystem's device), 0 if unknown. */
static unsigned queue_limit_of(int fd, unsigned long req, const char *name)
{
	struct stat st;
	unsigned size = 0;
	char path[160];
	FILE *f;

	if (fstat(fd, &st))
		return 0;
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, req, &size) ? 0 : size;
	/* A file: its filesystem's device; a partition has its disk's queue one level up. */
	for (int up = 0; up < 2 && !size; up++) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%squeue/%s", major(st.st_dev),
			 minor(st.st_dev), up ? "../" : "", name);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%u", &size) != 1)
				size = 0;
			fclose(f);
		}
	}
	return size;
}

/* Called with the lock held: member `idx` failed a write of log write `seq` with -err. */
static void member_failed(struct shared *sh, int idx, int err, uint64_t seq, uint64_t len, uint64_t off)
{
	const struct config *cfg = sh->cfg;
	struct member_result *r = &sh->res->member[idx];

	r->failed = 1;
	r->error = -err;
	r->failed_at_write = seq + 1;
	fprintf(stderr, "%s: write of %llu bytes at offset %llu of %s failed (log write %llu): %s: %s\n", PROG,
		(unsigned long long)len, (unsigned long long)off, sh->m[idx].path, (unsigned long long)seq + 1,
		sh->m[idx].failed_call ? sh->m[idx].failed_call : "pwrite",
		nbd_target_failure(sh->m[idx].nbd) ? nbd_target_failure(sh->m[idx].nbd) : strerror(-err));
	if (err == -EINVAL && !sh->m[idx].nbd) {
		unsigned logical = queue_limit_of(sh->m[idx].fd, BLKSSZGET, "logical_block_size");
		char size[48] = "";

		if (logical)
			snprintf(size, sizeof(size), "%u bytes; ", logical);
		fprintf(stderr, "%s: O_DIRECT refused a %llu-byte redo block: the device's logical sector is "
			"larger (%ssee '%s probe %s')\n", PROG, cfg->blocksize, size, PROG, sh->m[idx].path);
	}
	if (live_members(sh)) {
		fprintf(stderr, "%s: member %s dropped; going on with %s\n", PROG, sh->m[idx].path,
			sh->m[!idx].path);
		release_jobs(sh, now_ns());
	} else {
		if (sh->nmembers > 1)
			fprintf(stderr, "%s: no log member left; stopping\n", PROG);
		sh->failed = sh->stop = 1;
		cond_broadcast(&sh->written_cv);
	}
	cond_broadcast(&sh->job_cv);
}

/* Called with the lock held; returns with it held. Wakes the sessions a completed write released
 * with the lock let go, so that they do not wake up only to block on it. */
static void wake_sessions(struct shared *sh)
{
	if (!sh->wake_sessions)
		return;
	sh->wake_sessions = 0;
	unlock(&sh->lock);
	cond_broadcast(&sh->written_cv);
	lock(&sh->lock);
}

struct member_arg {
	struct shared *sh;
	int idx;
};

/* A member's writer: the log writes handed out, in order; what it is behind and contiguous in the
 * log (and, --format checked, in the log buffer) goes in one write. */
static void *member_writer(void *arg)
{
	struct shared *sh = ((struct member_arg *)arg)->sh;
	int idx = ((struct member_arg *)arg)->idx;
	struct member *m = &sh->m[idx];

	lock(&sh->lock);
	for (;;) {
		uint64_t first, n, off, len, bpos, i;
		int err;

		while (m->next == sh->issued && !sh->stop && !sh->res->member[idx].failed)
			cond_wait(&sh->job_cv, &sh->lock);
		if (sh->res->member[idx].failed || sh->failed || m->next == sh->issued)
			break;
		first = m->next;
		off = sh->ring[first % sh->ring_size].off;
		len = sh->ring[first % sh->ring_size].len;
		bpos = sh->ring[first % sh->ring_size].bpos;
		for (n = 1; first + n < sh->issued; n++) {
			const struct job *j = &sh->ring[(first + n) % sh->ring_size];

			if (j->off != off + len || len + j->len > sh->cfg->max_write ||
			    (sh->cfg->format == FORMAT_CHECKED && j->bpos != bpos + len))
				break;
			len += j->len;
		}
		unlock(&sh->lock);
		err = write_member(sh, m, sh->buf + bpos, len, off);
		lock(&sh->lock);
		if (err) {
			member_failed(sh, idx, err, first, len, off);
			wake_sessions(sh);
			break;
		}
		sh->res->member[idx].writes++;
		for (i = 0; i < n; i++) {
			struct job *j = &sh->ring[(first + i) % sh->ring_size];

			/* The first member to have a log write wins it (what a race is decided by). */
			sh->res->member[idx].wins += sh->cfg->members == MEMBERS_RACE && !j->done[!idx];
			j->done[idx] = 1;
		}
		m->next = first + n;
		m->behind_bytes -= len;
		release_jobs(sh, now_ns());
		cond_broadcast(&sh->job_cv);
		wake_sessions(sh);
	}
	unlock(&sh->lock);
	return NULL;
}

/* Called with the lock held: whether the log writer may hand out a write of `len` bytes now. */
static int may_issue(const struct shared *sh, uint64_t len)
{
	int k;

	if (sh->released < sh->issued)  /* one log write in flight at a time */
		return 0;
	for (k = 0; k < sh->nmembers; k++)
		if (!sh->res->member[k].failed && sh->m[k].behind_bytes &&
		    sh->m[k].behind_bytes + len > sh->cfg->max_write)
			return 0;   /* a member more than a log buffer behind: wait for it */
	return 1;
}

static uint64_t thread_cpu_ns(void);
static void burn_cpu(uint64_t ns);

/*
 * Called with the lock held: where in the log buffer a write of `len` bytes goes. Plain: at its
 * start, always (every byte is 0xa5). Checked: after the last write, or at the start when it does not
 * fit before the end. The buffer is two log buffers long, and a member behind in a race has at most
 * one log buffer of writes left to write, this one included (may_issue): the write never lands on
 * bytes a member has still to write (a mirror, or one member, has none left). Every place is a
 * multiple of the block size, as O_DIRECT's buffer alignment wants.
 */
static uint64_t place_write(struct shared *sh, uint64_t len)
{
	uint64_t at;

	if (sh->cfg->format == FORMAT_PLAIN)
		return 0;
	at = sh->buf_next + len <= sh->buf_size ? sh->buf_next : 0;
	sh->buf_next = at + len;
	return at;
}

/* Called with the lock held, returns with it held: --format checked fills the blocks of the write of
 * `pending` redo bytes at log offset `off` before it is issued (and before its time starts), with
 * the lock let go so that sessions go on committing. Its first redo byte is the next one to be
 * written (one log write in flight at a time); its sequence is the log's pass, 1 before any wrap. */
static void fill_checked(struct shared *sh, uint64_t bpos, uint64_t off, uint64_t blocks, uint64_t pending)
{
	const struct config *cfg = sh->cfg;
	uint64_t pos = sh->written;
	uint32_t sequence = (uint32_t)(sh->res->wraps + 1);

	unlock(&sh->lock);
	redo_fill((unsigned char *)sh->buf + bpos, cfg->blocksize, blocks, pending, pos, off / cfg->blocksize, sequence);
	lock(&sh->lock);
}

static void *log_writer(void *arg)
{
	struct shared *sh = arg;
	const struct config *cfg = sh->cfg;
	uint64_t payload = cfg->blocksize - REDO_BLOCK_HEADER;
	uint64_t max_blocks = cfg->max_write / cfg->blocksize;

	lock(&sh->lock);
	for (;;) {
		uint64_t pending, blocks, len, off, bpos;
		struct job *j;
		int err, k;

		if (sh->appended == sh->written && !sh->stop && cfg->spin_us && !virt) {
			/* Poll briefly before sleeping: a wake-up costs more than a short spin (--spin-us). */
			uint64_t until = now_ns() + cfg->spin_us * 1000ULL;

			unlock(&sh->lock);
			while (__atomic_load_n(&sh->appended, __ATOMIC_ACQUIRE) == __atomic_load_n(&sh->written, __ATOMIC_ACQUIRE) &&
			       !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) && now_ns() < until)
				__builtin_ia32_pause();
			lock(&sh->lock);
		}
		while (sh->appended == sh->written && !sh->stop)
			cond_wait(&sh->work, &sh->lock);
		if (sh->failed || (sh->appended == sh->written && sh->stop))
			break;
		pending = sh->appended - sh->written;
		blocks = (pending + payload - 1) / payload;
		if (blocks > max_blocks) {  /* the rest goes in the next write */
			blocks = max_blocks;
			pending = blocks * payload;
		}
		len = blocks * cfg->blocksize;
		if (sh->nmembers > 1) {
			while (!may_issue(sh, len) && !sh->failed)
				cond_wait(&sh->job_cv, &sh->lock);
			if (sh->failed)
				break;
		}
		if (sh->log_offset + len > cfg->log_size) {
			sh->log_offset = 0;
			sh->res->wraps++;
		}
		off = sh->log_offset;
		sh->log_offset += len;
		bpos = place_write(sh, len);
		if (cfg->format == FORMAT_CHECKED) {
			fill_checked(sh, bpos, off, blocks, pending);
			if (sh->failed)
				break;
		}
		if (virt && cfg->log_writer_cpu_us) {  /* the modelled log writer's CPU per write, before it */
			unlock(&sh->lock);
			burn_cpu(cfg->log_writer_cpu_us * 1000ULL);
			lock(&sh->lock);
			if (sh->failed)
				break;
		}
		j = &sh->ring[sh->issued % sh->ring_size];
		*j = (struct job){ .off = off, .len = len, .pending = pending, .blocks = blocks, .t0 = now_ns(),
				   .bpos = bpos };
		if (sh->nmembers > 1) {
			/* The members' threads write it; they release it. */
			for (k = 0; k < sh->nmembers; k++)
				if (!sh->res->member[k].failed)
					sh->m[k].behind_bytes += len;
			sh->issued++;
			cond_broadcast(&sh->job_cv);
			while (sh->released < sh->issued && !sh->failed)
				cond_wait(&sh->job_cv, &sh->lock);
			if (sh->failed)
				break;
			continue;
		}
		sh->issued++;
		unlock(&sh->lock);

		err = write_member(sh, &sh->m[0], sh->buf + bpos, len, off);

		lock(&sh->lock);
		if (err) {
			member_failed(sh, 0, err, sh->issued - 1, len, off);
			break;
		}
		sh->res->member[0].writes++;
		j->done[0] = 1;
		release_jobs(sh, now_ns());
		wake_sessions(sh);
	}
	sh->stop = 1;
	sh->res->log_writer_cpu_ns += thread_cpu_ns();
	cond_broadcast(&sh->job_cv);
	cond_broadcast(&sh->written_cv);
	unlock(&sh->lock);
	return NULL;
}

/* An exponential inter-arrival time: -log(u) times the mean, u uniform in (0, 1]. */
static uint64_t exponential_gap(struct schedule *s)
{
	return exponential_ns(&s->rng, s->interval_ns);
}

static void schedule_init(struct schedule *s, const struct config *cfg, unsigned long long idx)
{
	uint64_t seed = cfg->seed ^ (idx + 1) * 0xd1b54a32d192ed03ULL;

	s->mode = cfg->arrival;
	s->interval_ns = 1e9 * (double)cfg->sessions / (double)cfg->rate;
	s->rng = splitmix64(&seed);
	s->count = 0;
	/* Fixed: the sessions' schedules are staggered over one interval, so that together their
	 * commits are evenly spaced rather than all at once. */
	s->phase_ns = s->interval_ns * (double)idx / (double)cfg->sessions;
	s->next = s->mode == ARRIVAL_FIXED ? (uint64_t)s->phase_ns : exponential_gap(s);
}

static void schedule_advance(struct schedule *s)
{
	s->count++;
	if (s->mode == ARRIVAL_FIXED)
		s->next = (uint64_t)(s->phase_ns + (double)s->count * s->interval_ns);
	else
		s->next += exponential_gap(s);
}

/* The arrivals up to and including time `t` (ns since the start). */
static uint64_t schedule_count_until(struct schedule *s, uint64_t t)
{
	while (s->next <= t)
		schedule_advance(s);
	return s->count;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (virt)
		return vclock_thread_cpu();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A transaction's work: CPU, not a sleep, so that on a busy vCPU it costs what CPU costs there. */
static void burn_cpu(uint64_t ns)
{
	uint64_t until;

	if (!ns)
		return;
	if (virt) {
		vclock_burn(ns);
		return;
	}
	until = thread_cpu_ns() + ns;
	while (thread_cpu_ns() < until)
		;
}

/* This transaction's CPU: the mean, or an exponential draw of it from the session's own generator. */
static uint64_t transaction_cpu_ns(struct session_ctx *ctx)
{
	const struct config *cfg = ctx->sh->cfg;
	double mean = (double)cfg->cpu_us_per_txn * 1000.0;

	if (cfg->cpu_dist == CPU_FIXED || !cfg->cpu_us_per_txn)
		return (uint64_t)mean;
	return exponential_ns(&ctx->cpu_rng, mean);
}

/* Whether the run has no more commits for sessions to start. */
static int run_over(struct shared *sh)
{
	const struct config *cfg = sh->cfg;

	return __atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) ||
	       (cfg->transactions && __atomic_load_n(&sh->txns_started, __ATOMIC_RELAXED) >= cfg->transactions) ||
	       (sh->deadline_ns && now_ns() >= sh->deadline_ns);
}

/* Open loop: sleep until the next commit arrives; 0 when the run is over first. A long sleep
 * wakes every 100 ms to see whether the others finished the run. */
static int wait_for_arrival(struct session_ctx *ctx)
{
	struct shared *sh = ctx->sh;
	uint64_t arrival = sh->start_ns + ctx->taken.next, now;

	if (sh->deadline_ns && arrival >= sh->deadline_ns)
		return 0;
	while ((now = now_ns()) < arrival) {
		if (run_over(sh))
			return 0;
		sleep_until(arrival - now > 100000000ULL ? now + 100000000ULL : arrival);
	}
	return 1;
}

/* Counts a transaction as started; 0 when the run has no more. */
static int take_transaction(struct shared *sh)
{
	const struct config *cfg = sh->cfg;

	if (__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE) || (sh->deadline_ns && now_ns() >= sh->deadline_ns))
		return 0;
	return !cfg->transactions || __atomic_fetch_add(&sh->txns_started, 1, __ATOMIC_RELAXED) < cfg->transactions;
}

/* Commits one transaction's redo and waits until it is written; `arrival` is when it arrived. */
static void commit(struct shared *sh, uint64_t arrival)
{
	const struct config *cfg = sh->cfg;
	uint64_t target, t0, t1;

	lock(&sh->lock);
	t0 = now_ns();
	sh->appended += cfg->redo_per_txn;
	target = sh->appended;
	/* Post the log writer after letting go of the lock, so that it does not wake up only to
	 * block on the lock this session still holds (one futex round trip less per commit). */
	unlock(&sh->lock);
	cond_signal(&sh->work);
	lock(&sh->lock);
	if (cfg->spin_us && !virt && sh->written < target) {
		/* Like adaptive "log file sync" polling: check for the write before sleeping on it. */
		uint64_t until = now_ns() + cfg->spin_us * 1000ULL;

		unlock(&sh->lock);
		while (__atomic_load_n(&sh->written, __ATOMIC_ACQUIRE) < target &&
		       !__atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE) && now_ns() < until)
			__builtin_ia32_pause();
		lock(&sh->lock);
	}
	while (sh->written < target && !sh->failed)
		cond_wait(&sh->written_cv, &sh->lock);
	t1 = now_ns();
	if (!sh->failed) {
		sh->txns_done++;
		sh->last_done_ns = t1;
		sh->res->redo_bytes += cfg->redo_per_txn;
		if (samples_add(&sh->res->sync_lat, t1 - t0, t1 - sh->start_ns) ||
		    samples_add(&sh->res->response_lat, t1 - arrival, t1 - sh->start_ns))
			out_of_memory(sh);
	}
	unlock(&sh->lock);
}

/* Open loop, after a commit: the commits that have arrived and wait for the session. Never past a
 * --duration run's deadline: the schedule only moves forward, and a session that looked after the
 * deadline (late, on a busy CPU) would have counted arrivals that are not the run's own
 * (account_arrivals counts up to the deadline), so the same seed gave another count. */
static void note_backlog(struct session_ctx *ctx)
{
	const struct shared *sh = ctx->sh;
	uint64_t t = now_ns() - sh->start_ns;

	if (sh->deadline_ns && t >= sh->deadline_ns - sh->start_ns)
		t = sh->deadline_ns - sh->start_ns - 1;
	uint64_t arrived = schedule_count_until(&ctx->arrived, t);
	uint64_t backlog = arrived - ctx->taken.count;

	if (backlog > ctx->backlog_max)
		ctx->backlog_max = backlog;
}

static void *session(void *arg)
{
	struct session_ctx *ctx = arg;
	struct shared *sh = ctx->sh;
	int open_loop = sh->cfg->arrival != ARRIVAL_CLOSED;

	/* A session sleeps until its next commit arrives: without this, the kernel may wake it up to
	 * 50 us late (the default timer slack), and that would count in every commit_response. */
	if (open_loop)
		prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	lock(&sh->lock);
	while (!sh->go && !sh->stop)
		cond_wait(&sh->start_cv, &sh->lock);
	unlock(&sh->lock);
	for (;;) {
		uint64_t arrival;

		if (open_loop && !wait_for_arrival(ctx))
			break;
		/* A commit queued behind the previous one arrived at its scheduled time: its wait counts. */
		arrival = open_loop ? sh->start_ns + ctx->taken.next : now_ns();
		if (!take_transaction(sh))
			break;
		if (open_loop)
			schedule_advance(&ctx->taken);
		burn_cpu(transaction_cpu_ns(ctx));
		commit(sh, arrival);
		if (open_loop)
			note_backlog(ctx);
	}
	lock(&sh->lock);
	sh->res->session_cpu_ns += thread_cpu_ns();
	if (--sh->sessions_left == 0) {
		sh->stop = 1;
		cond_signal(&sh->work);
	}
	unlock(&sh->lock);
	return NULL;
}

static int read_stat_file(const char *path, struct devstat *st)
{
	unsigned long long v[17] = { 0 };
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (n < 17 && fscanf(f, "%llu", &v[n]) == 1)
		n++;
	fclose(f);
	if (n < 11)
		return -1;
	st->valid = 1;
	st->writes += v[4];
	st->sectors_written += v[6];
	st->write_ticks_ms += v[7];
	st->io_ticks_ms += v[9];
	/* Fields 16 and 17 (flushes, their time) came with kernel 5.5. */
	st->has_flushes = n >= 17;
	st->flushes += v[15];
	st->flush_ticks_ms += v[16];
	return 0;
}

/* The kernel name of the block device `rdev` ("" if sysfs does not say). */
static void device_name(dev_t rdev, char *name, size_t size)
{
	char path[64], link[300];
	const char *base;
	size_t len;
	ssize_t n;

	*name = 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(rdev), minor(rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = 0;
	base = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	len = strlen(base) < size ? strlen(base) : size - 1;
	memcpy(name, base, len);
	name[len] = 0;
}

/* A queue attribute of `rdev` (a partition's is its disk's, one level up), "" if unknown. */
static void queue_attr(dev_t rdev, const char *attr, char *out, size_t size)
{
	char path[128];
	FILE *f;

	*out = 0;
	for (int up = 0; up < 2 && !*out; up++) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%squeue/%s", major(rdev), minor(rdev),
			 up ? "../" : "", attr);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(out, (int)size, f))
			*out = 0;
		out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
}

static void read_devinfo(const struct member *m, struct devinfo *info)
{
	char fua[8];

	memset(info, 0, sizeof(*info));
	info->fua = -1;
	if (m->null || !m->rdev)
		return;
	device_name(m->rdev, info->name, sizeof(info->name));
	queue_attr(m->rdev, "write_cache", info->write_cache, sizeof(info->write_cache));
	queue_attr(m->rdev, "fua", fua, sizeof(fua));
	if (*fua)
		info->fua = fua[0] == '1';
}

/* An NVMe native-multipath head (nvme<S>n<N>, not a partition nor a path) counts no I/O itself:
 * its path devices nvme<S>c<C>n<N> do. Sums theirs; returns how many, -1 if it is no head. */
static int read_nvme_paths(const char *name, struct devstat *st)
{
	unsigned int subsys, ns;
	char pattern[96];
	int end = 0, n = 0;
	glob_t g;

	if (sscanf(name, "nvme%un%u%n", &subsys, &ns, &end) != 2 || name[end])
		return -1;
	snprintf(pattern, sizeof(pattern), "/sys/block/nvme%uc*n%u/stat", subsys, ns);
	if (glob(pattern, 0, NULL, &g))
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++)
		n += read_stat_file(g.gl_pathv[i], st) == 0;
	globfree(&g);
	return n;
}

static void read_devstat(const struct member *m, struct devinfo *info, struct devstat *st)
{
	char path[64];

	memset(st, 0, sizeof(*st));
	if (m->null || !m->rdev)
		return;
	info->paths = read_nvme_paths(info->name, st);
	if (info->paths > 0)
		return;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", major(m->rdev), minor(m->rdev));
	read_stat_file(path, st);
}

/* A member as the command line opened and checked it (fd -1: null:); a regular file is sized to the log. */
static int open_member(const struct config *cfg, struct member *m, struct member_result *r)
{
	struct stat st;

	r->path = m->path;
	if (m->model) {
		r->is_model = 1;
		return 0;
	}
	if (m->nbd) {
		/* Checked by the command line: large enough for the log, writable, durable by FUA or flush. */
		r->is_nbd = 1;
		r->nbd = *nbd_target_info(m->nbd);
		return 0;
	}
	if (m->fd < 0) {
		m->null = 1;
		return 0;
	}
	if (fstat(m->fd, &st)) {
		fprintf(stderr, "%s: %s: fstat: %s\n", PROG, m->path, strerror(errno));
		return -1;
	}
	if (S_ISBLK(st.st_mode)) {
		m->rdev = st.st_rdev;
		r->is_blockdev = 1;
		return 0;
	}
	if (posix_fallocate(m->fd, 0, (off_t)cfg->log_size) && ftruncate(m->fd, (off_t)cfg->log_size)) {
		fprintf(stderr, "%s: cannot size %s to %llu bytes: %s\n", PROG, m->path, cfg->log_size, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Open loop, after the run: the commits that arrived in the measured time (up to --duration, or
 * the last commit of a --transactions run; with both, whichever ended the run), the backlog left at its end, and whether the run kept
 * up (see --help). The elapsed time ends with the last commit or with --duration, whichever is
 * later: not when a session sleeping for an arrival after the last --transactions commit noticed
 * that the run was over.
 */
static void account_arrivals(struct shared *sh, struct session_ctx *ctx)
{
	const struct config *cfg = sh->cfg;
	struct results *res = sh->res;
	/* A run of --transactions and --duration that took its last commit before the deadline is
	 * measured as a --transactions run; one the deadline ended, as a --duration run. */
	uint64_t deadline = cfg->transactions && __atomic_load_n(&sh->txns_started, __ATOMIC_RELAXED) >= cfg->transactions
				    ? 0 : sh->deadline_ns;
	uint64_t end = sh->last_done_ns > deadline ? sh->last_done_ns : deadline;
	/* A --duration run takes no commit after its deadline: those that arrive later are not its own. */
	uint64_t until = deadline ? deadline : end;
	unsigned long long i;
	uint64_t short_by;

	if (end <= sh->start_ns)
		return;
	res->elapsed_s = (double)(end - sh->start_ns) / 1e9;
	for (i = 0; i < cfg->sessions; i++) {
		uint64_t arrived = schedule_count_until(&ctx[i].arrived, until - sh->start_ns - 1);
		uint64_t backlog = arrived > ctx[i].taken.count ? arrived - ctx[i].taken.count : 0;

		res->arrivals += arrived;
		res->backlog_end += backlog;
		if (ctx[i].backlog_max > res->backlog_max)
			res->backlog_max = ctx[i].backlog_max;
		if (backlog > res->backlog_max)
			res->backlog_max = backlog;
	}
	/* Against the commits that did arrive, not the offered rate (a Poisson run's arrivals are off the
	 * rate by about sqrt(n)); what is left at the end may be what is in flight and a short queue (two
	 * commits a session) or 2 % of the arrivals, whichever is more: a backlog that grows is more. */
	short_by = res->arrivals > res->transactions ? res->arrivals - res->transactions : 0;
	res->kept_up = (double)short_by <= fmax(0.02 * (double)res->arrivals, 2.0 * (double)cfg->sessions);
}

/* The threads' stacks: what they use is small; the default (8 MiB each) would make 4,096 sessions
 * ask for 32 GiB of address space. */
#define THREAD_STACK (256 * 1024)

/* A thread of the run: a real one, or one on the virtual clock. */
struct thread {
	pthread_t pt;
	struct vthread *vt;
};

/* Starts one thread; 0, or -1 reported naming it. */
static int start_thread(struct thread *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg, const char *what,
			unsigned long long i, unsigned long long n)
{
	int err = virt ? vclock_create(&t->vt, attr, fn, arg) : pthread_create(&t->pt, attr, fn, arg);

	if (err)
		fprintf(stderr, "%s: cannot start %s thread %llu of %llu: pthread_create: %s; lower --sessions or raise the "
			"memory limit (ulimit -v)\n", PROG, what, i + 1, n, strerror(err));
	return err ? -1 : 0;
}

static void join_thread(struct thread *t)
{
	if (virt)
		vclock_join(t->vt);
	else
		pthread_join(t->pt, NULL);
}

static void free_run(struct shared *sh, struct thread *threads, struct session_ctx *ctx)
{
	for (int k = 0; k < sh->nmembers; k++) {
		if (sh->m[k].fd >= 0)
			close(sh->m[k].fd);
		nbd_target_close(sh->m[k].nbd);
		free(sh->m[k].model);
		if (sh->m[k].trace)
			fclose(sh->m[k].trace);
		if (sh->m[k].writelog)
			fclose(sh->m[k].writelog);
		if (sh->m[k].image_fd >= 0)
			close(sh->m[k].image_fd);
	}
	free(sh->ring);
	free(sh->buf);
	free(threads);
	free(ctx);
}

int run(const struct config *cfg, struct results *res)
{
	struct shared sh = { .cfg = cfg, .res = res, .m = { { .fd = -1, .image_fd = -1 }, { .fd = -1, .image_fd = -1 } } };
	struct thread writer, member_threads[2], *threads;
	struct member_arg member_args[2];
	struct session_ctx *ctx;
	pthread_attr_t attr;
	unsigned long long i, started = 0;
	int rc = 0, k, members_started = 0, writer_started = 0, err;
	uint64_t real_start;

	memset(res, 0, sizeof(*res));
	virt = cfg->clock == CLOCK_VIRTUAL;
	sh.m[0].path = cfg->target;
	sh.m[1].path = cfg->second;
	sh.nmembers = cfg->members == MEMBERS_ONE ? 1 : 2;
	res->nmembers = sh.nmembers;
	for (k = 0; k < sh.nmembers; k++) {
		sh.m[k].fd = cfg->member_fd[k];  /* from here on, the run's to close */
		sh.m[k].nbd = cfg->member_nbd[k];
		sh.m[k].model = cfg->member_model[k];
		sh.m[k].image_fd = cfg->model_fd[k][MODEL_IMAGE];
		sh.m[k].trace = cfg->model_fd[k][MODEL_TRACE] >= 0 ? fdopen(cfg->model_fd[k][MODEL_TRACE], "w") : NULL;
		sh.m[k].writelog = cfg->model_fd[k][MODEL_WRITELOG] >= 0 ? fdopen(cfg->model_fd[k][MODEL_WRITELOG], "w") :
				   NULL;
		/* emptied (the disk: made as large as the log) only now, when the run starts: a refused run
		 * leaves them as they were */
		if (sh.m[k].image_fd >= 0) {
			struct stat st;

			if (fstat(sh.m[k].image_fd, &st) ||
			    ((uint64_t)st.st_size < cfg->log_size && ftruncate(sh.m[k].image_fd, (off_t)cfg->log_size))) {
				fprintf(stderr, "%s: cannot size the disk of --%s's model to %llu bytes: %s\n", PROG,
					k ? "mirror" : "target", cfg->log_size, strerror(errno));
				free_run(&sh, NULL, NULL);
				return -1;
			}
		}
		if ((cfg->model_fd[k][MODEL_TRACE] >= 0 && (!sh.m[k].trace || ftruncate(cfg->model_fd[k][MODEL_TRACE], 0) ||
							    fputs(MODEL_TRACE_HEADER, sh.m[k].trace) < 0)) ||
		    (cfg->model_fd[k][MODEL_WRITELOG] >= 0 &&
		     (!sh.m[k].writelog || ftruncate(cfg->model_fd[k][MODEL_WRITELOG], 0) ||
		      fputs(MODEL_WRITELOG_MAGIC, sh.m[k].writelog) < 0))) {
			fprintf(stderr, "%s: cannot start the files of --%s's model: %s\n", PROG, k ? "mirror" : "target",
				strerror(errno));
			free_run(&sh, NULL, NULL);
			return -1;
		}
	}
	for (k = 0; k < sh.nmembers; k++) {
		unsigned unit;

		if (open_member(cfg, &sh.m[k], &res->member[k])) {
			free_run(&sh, NULL, NULL);
			return -2;  /* a target we may not or cannot use: bad input, not a failed run */
		}
		/* An NBD server's preferred block size is the unit below which it reads and rewrites
		 * (the NBD protocol's word for what minimum_io_size means to the kernel). */
		unit = sh.m[k].null ? 0 : sh.m[k].nbd ? (unsigned)res->member[k].nbd.preferred_block :
		       sh.m[k].model ? model_minimum_io(sh.m[k].model) :
		       queue_limit_of(sh.m[k].fd, BLKIOMIN, "minimum_io_size");
		if (unit > res->write_unit)
			res->write_unit = unit;
	}
	sh.buf_size = cfg->format == FORMAT_CHECKED ? 2 * cfg->max_write : cfg->max_write;
	if (posix_memalign((void **)&sh.buf, 4096, sh.buf_size)) {
		fprintf(stderr, "%s: cannot allocate a %llu-byte log buffer\n", PROG, (unsigned long long)sh.buf_size);
		sh.buf = NULL;
		free_run(&sh, NULL, NULL);
		return -1;
	}
	memset(sh.buf, 0xa5, sh.buf_size);
	/* At most one log buffer of writes behind, each at least one redo block: the ring holds them. */
	sh.ring_size = cfg->max_write / cfg->blocksize + 2;
	sh.ring = calloc(sh.ring_size, sizeof(*sh.ring));
	threads = calloc(cfg->sessions, sizeof(*threads));
	ctx = calloc(cfg->sessions, sizeof(*ctx));
	if (!threads || !ctx || !sh.ring) {
		fprintf(stderr, "%s: out of memory for %llu sessions\n", PROG, cfg->sessions);
		free_run(&sh, threads, ctx);
		return -1;
	}
	if ((err = pthread_mutex_init(&sh.lock, NULL)) || (err = pthread_cond_init(&sh.work, NULL)) ||
	    (err = pthread_cond_init(&sh.written_cv, NULL)) || (err = pthread_cond_init(&sh.job_cv, NULL)) ||
	    (err = pthread_cond_init(&sh.start_cv, NULL)) || (err = pthread_attr_init(&attr)) ||
	    (err = pthread_attr_setstacksize(&attr, THREAD_STACK))) {
		fprintf(stderr, "%s: cannot set up the threads' locks: %s\n", PROG, strerror(err));
		free_run(&sh, threads, ctx);
		return -1;
	}
	sh.sessions_left = (int)cfg->sessions;
	real_start = real_now_ns();
	if (virt) {
		vclock_set_wakeup(cfg->wakeup_us * 1000ULL, cfg->wakeup_dist == CPU_EXPONENTIAL, cfg->seed);
		vclock_set_cpus((unsigned)cfg->cpus);
		vclock_begin();
	}
	for (k = 0; k < sh.nmembers; k++) {
		read_devinfo(&sh.m[k], &res->member[k].dev);
		read_devstat(&sh.m[k], &res->member[k].dev, &res->member[k].before);
	}

	for (k = 0; sh.nmembers > 1 && k < sh.nmembers; k++, members_started++) {
		member_args[k] = (struct member_arg){ .sh = &sh, .idx = k };
		if (start_thread(&member_threads[k], &attr, member_writer, &member_args[k], "log member writer",
				 (unsigned long long)k, (unsigned long long)sh.nmembers))
			break;
	}
	if (members_started == (sh.nmembers > 1 ? sh.nmembers : 0))
		writer_started = !start_thread(&writer, &attr, log_writer, &sh, "log writer", 0, 1);
	for (i = 0; writer_started && i < cfg->sessions; i++, started++) {
		ctx[i].sh = &sh;
		ctx[i].cpu_rng = cfg->seed ^ (i + 1) * 0x9fb21c651e98df25ULL;
		if (start_thread(&threads[i], &attr, session, &ctx[i], "session", i, cfg->sessions))
			break;
	}
	pthread_attr_destroy(&attr);

	/* Open the gate: the run starts now, every thread up; or it does not, and they all stop. */
	lock(&sh.lock);
	if (started == cfg->sessions) {
		sh.start_ns = now_ns();
		sh.deadline_ns = cfg->duration_s ? sh.start_ns + cfg->duration_s * 1000000000ULL : 0;
		for (i = 0; cfg->arrival != ARRIVAL_CLOSED && i < cfg->sessions; i++) {
			schedule_init(&ctx[i].taken, cfg, i);
			ctx[i].arrived = ctx[i].taken;
		}
		sh.go = 1;
	} else {
		sh.failed = sh.stop = 1;
		cond_signal(&sh.work);
		cond_broadcast(&sh.job_cv);
	}
	cond_broadcast(&sh.start_cv);
	unlock(&sh.lock);
	for (i = 0; i < started; i++)
		join_thread(&threads[i]);
	if (writer_started)
		join_thread(&writer);
	for (k = 0; k < members_started; k++)
		join_thread(&member_threads[k]);

	res->elapsed_s = (double)(now_ns() - sh.start_ns) / 1e9;
	res->real_s = (double)(real_now_ns() - real_start) / 1e9;
	if (virt) {
		res->switches = vclock_switches();
		vclock_end();
	}
	res->transactions = sh.txns_done;
	res->arrivals = sh.txns_done;  /* closed loop: a commit arrives when its session starts it */
	res->kept_up = 1;
	if (sh.go && cfg->arrival != ARRIVAL_CLOSED) {
		res->arrivals = 0;
		account_arrivals(&sh, ctx);
	}
	for (k = 0; k < sh.nmembers; k++) {
		read_devstat(&sh.m[k], &res->member[k].dev, &res->member[k].after);
		res->member[k].syncs = sh.m[k].syncs;
		res->member[k].fua_writes = sh.m[k].fua_writes;
		res->member[k].flushes = sh.m[k].flushes;
	}
	if (sh.failed)
		rc = -1;
	else if (live_members(&sh) < sh.nmembers)
		rc = 1;  /* done, on fewer members than asked */
	free_run(&sh, threads, ctx);
	return rc;
}
