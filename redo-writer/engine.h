/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The run: sessions commit into a shared log buffer; one log writer gathers everything pending
 * into one write (group commit), pads it to whole redo blocks (16-byte header each; --format
 * checked fills them as redoblock.h says, before the write's time starts), writes it
 * with O_DIRECT and O_DSYNC (an NBD member: with FUA, or followed by a flush) and wakes the
 * sessions the write covered. It takes everything it needs in struct config (the descriptors and
 * NBD connections of the members and the events file's descriptor included) and gives back struct
 * results.
 */
#ifndef REDO_WRITER_ENGINE_H
#define REDO_WRITER_ENGINE_H

#include <stdint.h>

#include "nbd.h"
#include "stats.h"

struct model;  /* a device model (../devicemodel/model.h) */

/* A model: member's files, by their keys: trace=, image=, writelog=. */
enum model_file { MODEL_TRACE, MODEL_IMAGE, MODEL_WRITELOG, MODEL_FILES };

enum sync_mode { SYNC_ODSYNC, SYNC_FDATASYNC };
/* The run's clock: real (the host's; its members are files, block devices, NBD exports or null:),
 * or virtual (vclock.h: its members are device models answering in the model's time, or null:). */
enum clock_mode { CLOCK_REAL, CLOCK_VIRTUAL };
/* One log member, or two: multiplexed (a commit waits for both) or raced (the first one wins,
 * as Exadata smart flash logging writes to disk and flash at once). */
enum members_mode { MEMBERS_ONE, MEMBERS_MIRROR, MEMBERS_RACE };
enum output_mode { OUTPUT_TEXT, OUTPUT_JSON };
/* What the redo blocks hold: plain, 0xa5 throughout (header bytes included); checked, a real header,
 * a CRC32C and redo bytes recomputable from their position (redoblock.h), as `verify` reads them. */
enum redo_format { FORMAT_PLAIN, FORMAT_CHECKED };
/* How commits arrive: closed, each session commits again as soon as its last commit is done; open
 * loop, on a schedule of its own (evenly spaced or Poisson), whether or not the last one is done. */
enum arrival_mode { ARRIVAL_CLOSED, ARRIVAL_FIXED, ARRIVAL_POISSON };
/* A transaction's CPU: every one cpu_us_per_txn, or drawn from an exponential of that mean. */
enum cpu_dist { CPU_FIXED, CPU_EXPONENTIAL };

struct config {
	const char *target;
	const char *second;                 /* --mirror or --race member */
	enum members_mode members;
	const char *events;                 /* file for every latency, or NULL */
	unsigned long long blocksize;
	unsigned long long sessions;
	unsigned long long duration_s;      /* 0: no time limit (--transactions alone) */
	unsigned long long transactions;    /* total, 0: run --duration */
	unsigned long long redo_per_txn;
	unsigned long long rate;            /* commits per second over all sessions, 0: closed loop */
	enum arrival_mode arrival;
	unsigned long long seed;            /* of the Poisson arrival schedules */
	unsigned long long cpu_us_per_txn;  /* CPU a session spends on a transaction before its commit */
	enum cpu_dist cpu_dist;
	unsigned long long log_size;
	unsigned long long max_write;       /* the log buffer: the largest single write */
	unsigned long long spin_us;         /* poll this long before sleeping on a condition */
	unsigned long long reply_spin_us;   /* poll an NBD member's socket this long for a reply */
	unsigned long long nbd_timeout_s;   /* an NBD member's connect, handshake and each reply: at most this */
	enum sync_mode sync;
	enum output_mode output;
	enum redo_format format;
	int force;
	/* Opened and checked by the command line before the run (open_outputs): each member's
	 * descriptor (-1 for null: and an NBD member), an NBD member's connection (NULL for the others)
	 * and the events file's descriptor (-1 without --events). */
	int member_fd[2];
	struct nbd_target *member_nbd[2];
	int events_fd;
	/* A model: member (virtual time): its model, configured and checked (NULL for the others); the
	 * run owns it from here on. */
	enum clock_mode clock;
	unsigned long long wakeup_us;       /* virtual time: a thread posted or woken runs this long after */
	enum cpu_dist wakeup_dist;          /* ... every time, or an exponential of that mean */
	unsigned long long cpus;            /* virtual time: the modelled host's cores for the sessions' CPU (0: one each) */
	unsigned long long log_writer_cpu_us;  /* virtual time: the log writer's CPU before each write */
	struct model *member_model[2];
	const char *member_model_text[2];   /* its parameters as given */
	/* A model: member's own files, as the filter writes them (-1: none): its trace (every request, the
	 * filter's columns), the disk it serves (the bytes written land there) and its write log. */
	const char *model_file[2][MODEL_FILES];
	int model_fd[2][MODEL_FILES];
};

/* /sys/block/<dev>/stat counters of a block device member, before and after the run (summed
 * over the path devices of an NVMe multipath head); the flush counters from kernel 5.5 on. */
struct devstat {
	int valid, has_flushes;
	unsigned long long writes, sectors_written, write_ticks_ms, io_ticks_ms, flushes, flush_ticks_ms;
};

/* The device under a block device member: what its counters were read from, and its cache. */
struct devinfo {
	char name[64];              /* kernel name (nvme0n1), "" if unknown */
	int paths;                  /* NVMe multipath head: path devices summed; -1 none found */
	char write_cache[16];       /* queue/write_cache: "write back", "write through", "" unknown */
	int fua;                    /* queue/fua, -1 unknown */
};

struct member_result {
	const char *path;
	int is_blockdev;
	uint64_t wins;              /* --race: log writes this member had first */
	uint64_t writes;            /* its own writes (a member behind in a race writes several log writes at once) */
	int failed, error;          /* a write failed with errno `error` ... */
	uint64_t failed_at_write;   /* ... at this log write (1 = the first); the member was dropped */
	uint64_t syncs;             /* cache flushes it asked for: one per O_DSYNC write or fdatasync call */
	/* An NBD member (the device path): what its server offered, and how its writes were made
	 * durable: FUA writes, or flush requests after the writes. */
	int is_nbd;
	struct nbd_export_info nbd;
	int is_model;               /* a device model in virtual time: its requests' times are the model's */
	uint64_t fua_writes, flushes;
	struct devinfo dev;
	struct devstat before, after;
};

struct results {
	double elapsed_s;
	uint64_t transactions, redo_bytes, bytes_written, wastage_bytes, writes, writes_small, wraps;
	/* The largest minimum I/O size of the members' devices (the kernel's minimum_io_size: the
	 * physical sector, or the write unit a device advertises above it), 0 if unknown; the log
	 * writes smaller than it, those not starting or not ending on its boundaries, and the units
	 * the writes cover only in part: a write's first and last unit, one when they are the same
	 * (each makes the device read a unit and rewrite it). */
	uint64_t write_unit, writes_under_unit, writes_unaligned_to_unit, partial_units;
	struct samples write_lat, sync_lat;
	/* From a commit's arrival to its redo written: queueing for the session, CPU, log file sync. */
	struct samples response_lat;
	/* Open loop: the commits scheduled in the measured time, the most any session had arrived and
	 * not started after a commit, the same at the end over all sessions; whether the run kept up. */
	uint64_t arrivals, backlog_max, backlog_end;
	int kept_up;
	/* The CPU the threads used, measured (CLOCK_THREAD_CPUTIME_ID at each thread's end): the
	 * sessions' (their transactions' CPU, commits and waits) and the log writer's. */
	uint64_t session_cpu_ns, log_writer_cpu_ns;
	/* Virtual time: the real seconds the run took to compute, and how often a thread was handed the
	 * baton (vclock.h). */
	double real_s;
	uint64_t switches;
	struct member_result member[2];
	int nmembers;
};

/* 0 done, 1 done on fewer members than asked (a member failed, reported), -1 the run failed
 * (reported), -2 the target cannot be used (reported). */
int run(const struct config *cfg, struct results *res);

#endif
