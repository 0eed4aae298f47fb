// SPDX-License-Identifier: Apache-2.0
/*
 * verify: crash recovery on a log image (verify.h). Two passes over the image, read only and a
 * chunk at a time: the first finds the current sequence (the highest of any good block whose block
 * number is its index), the second follows the chain from block 0 and counts what it meets. A good
 * block is one whose checksum is right and whose header is of this format (type, version, 1 <= used
 * <= blocksize - 16). The chain's next block must be readable, good, of the current sequence, at its
 * own block number, and start where the previous one ended (its position = the previous one's plus
 * its used bytes; the first block any). Blocks named unreadable are never read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "common.h"
#include "nbd.h"
#include "redoblock.h"
#include "report.h"
#include "unreadable.h"
#include "verify.h"

/* The image is read this many bytes at a time (a whole number of blocks: a block is at most 64 KiB). */
#define CHUNK_BYTES (1U << 20)

/* Byte ranges [off, end), sorted and merged. */
struct range {
	uint64_t off, end;
};

struct ranges {
	struct range *r;
	size_t n, cap;
};

/* One block as read. */
struct view {
	const unsigned char *data;
	int unreadable, zero, crc_ok, good;
	struct redo_header h;
	uint64_t pos, mask;         /* the position its payload holds, and the bits of it that it holds */
};

/* A member of the log group: its image, its unreadable ranges, and the chunk of it read last. */
struct member {
	const char *option, *path, *unreadable;  /* the option that named it (--target, --mirror) */
	int fd;
	unsigned char *chunk;
	unsigned char *skip;        /* per block of the chunk: unreadable, not read */
	struct ranges bad;
};

struct verifier {
	const struct verify_config *cfg;
	struct member m[2];         /* the members: --target, and --mirror when given */
	int members;
	uint64_t blocks, chunk_blocks;
	uint32_t sequence;
	/* The chain: blocks recovered, redo bytes in them, the first one's position (the bits known). */
	int ended;
	uint64_t recovered, sum, first, first_mask, end_block;
	const char *end_reason;
	/* The block before, as a check of the header alone reads it: of the current sequence at its
	 * block number, and where the next should start (the bits known). */
	int prev_current;
	uint64_t prev_next, prev_mask;
	uint64_t torn, torn_header_ok, unreadable, valid_after_end, corrupt_undetected;
	uint64_t from_mirror;       /* blocks of the chain read from --mirror: --target's did not continue it */
};

static int by_offset(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static int add_range(struct ranges *rs, uint64_t off, uint64_t end)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 16;
		struct range *r = realloc(rs->r, cap * sizeof(*r));

		if (!r)
			return -1;
		rs->r = r;
		rs->cap = cap;
	}
	rs->r[rs->n++] = (struct range){ off, end };
	return 0;
}

static void merge_ranges(struct ranges *rs)
{
	size_t n = 0;

	if (!rs->n)
		return;
	qsort(rs->r, rs->n, sizeof(*rs->r), by_offset);
	for (size_t i = 1; i < rs->n; i++) {
		if (rs->r[i].off <= rs->r[n].end) {
			if (rs->r[i].end > rs->r[n].end)
				rs->r[n].end = rs->r[i].end;
		} else {
			rs->r[++n] = rs->r[i];
		}
	}
	rs->n = n + 1;
}

/* Whether [off, end) overlaps a range. */
static int range_hit(const struct ranges *rs, uint64_t off, uint64_t end)
{
	size_t lo = 0, hi = rs->n;

	while (lo < hi) {       /* the first range that ends after off */
		size_t mid = lo + (hi - lo) / 2;

		if (rs->r[mid].end <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rs->n && rs->r[lo].off < end;
}

/* The --unreadable file (unreadable.c, the reader the device model's unreadable= shares): its ranges,
 * sorted and merged; 0, or 2 (bad input, reported). */
static int read_ranges(const char *option, const char *path, struct ranges *rs)
{
	struct unreadable_list list;
	char why[256];

	if (unreadable_load(path, &list, why, sizeof(why), NULL) != UNREADABLE_OK) {
		fprintf(stderr, "%s: %s %s %s\n", PROG, option, path, why);
		return 2;
	}
	for (size_t i = 0; i < list.n; i++) {
		if (add_range(rs, list.range[i].offset, list.range[i].offset + list.range[i].length)) {
			fprintf(stderr, "%s: %s %s: out of memory for %zu ranges\n", PROG, option, path, list.n);
			free(list.range);
			return 2;
		}
	}
	free(list.range);
	merge_ranges(rs);
	return 0;
}

/* The image's size, or -1 reported (2: bad input). */
static int image_size(const char *option, const char *path, int fd, const struct stat *st, uint64_t *size)
{
	if (S_ISREG(st->st_mode)) {
		*size = (uint64_t)st->st_size;
		return 0;
	}
	if (ioctl(fd, BLKGETSIZE64, size)) {
		fprintf(stderr, "%s: %s %s: ioctl BLKGETSIZE64: %s\n", PROG, option, path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Opens a member's image read only: 0 with m->fd set, else the exit status (reported). */
static int open_member(const struct verifier *v, struct member *m)
{
	const struct verify_config *cfg = v->cfg;
	struct stat st;
	uint64_t size;

	if (nbd_uri_scheme(m->path)) {
		fprintf(stderr, "%s: verify %s %s: expected a file or a block device (verify reads no NBD "
			"export: copy it to a file, e.g. with nbdcopy)\n", PROG, m->option, m->path);
		return 2;
	}
	if (stat(m->path, &st)) {
		fprintf(stderr, "%s: %s %s: %s: expected the log image (a file or a block device)\n", PROG, m->option,
			m->path, strerror(errno));
		return 2;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "%s: %s %s is not a regular file or a block device: expected the log image\n", PROG,
			m->option, m->path);
		return 2;
	}
	m->fd = open(m->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (m->fd < 0) {
		fprintf(stderr, "%s: cannot read %s: open: %s\n", PROG, m->path, strerror(errno));
		return 1;
	}
	if (fstat(m->fd, &st) || image_size(m->option, m->path, m->fd, &st, &size))
		return 1;
	if (size < cfg->log_size) {
		fprintf(stderr, "%s: --log-size %llu is larger than %s (%llu bytes): expected the log's size, the "
			"run's --log-size\n", PROG, cfg->log_size, m->path, (unsigned long long)size);
		return 2;
	}
	return 0;
}

/* Reads block k of the chunk alone after a medium error in its run: 0 read, 1 unreadable (EIO: it
 * is counted as a block named in --unreadable is), -1 reported. */
static int read_one(const struct verifier *v, struct member *m, uint64_t first, uint64_t k)
{
	uint64_t bs = v->cfg->blocksize, done = 0;

	while (done < bs) {
		uint64_t off = (first + k) * bs + done;
		ssize_t got = pread(m->fd, m->chunk + k * bs + done, bs - done, (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EIO) {
			memset(m->chunk + k * bs, 0, bs);
			m->skip[k] = 1;
			return 1;
		}
		if (got <= 0) {
			fprintf(stderr, "%s: cannot read %s at offset %llu: %s\n", PROG, m->path,
				(unsigned long long)off, got ? strerror(errno) : "unexpected end of the image");
			return -1;
		}
		done += (uint64_t)got;
	}
	return 0;
}

/* Reads `n` blocks from block `first` into the chunk, around those that are unreadable (named in
 * --unreadable, or answered with EIO: a medium error, read again block by block); 0 or -1
 * reported. */
static int read_chunk(const struct verifier *v, struct member *m, uint64_t first, uint64_t n)
{
	uint64_t bs = v->cfg->blocksize, k = 0;

	for (uint64_t i = 0; i < n; i++)
		m->skip[i] = (unsigned char)range_hit(&m->bad, (first + i) * bs, (first + i + 1) * bs);
	while (k < n) {
		uint64_t run = 0, done = 0;

		for (; k < n && m->skip[k]; k++)
			;
		for (; k + run < n && !m->skip[k + run]; run++)
			;
		while (done < run * bs) {
			uint64_t off = (first + k) * bs + done;
			ssize_t got = pread(m->fd, m->chunk + k * bs + done, run * bs - done, (off_t)off);

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0 && errno == EIO) {  /* block by block from where the run stopped */
				for (uint64_t j = k + done / bs; j < k + run; j++)
					if (read_one(v, m, first, j) < 0)
						return -1;
				break;
			}
			if (got <= 0) {
				fprintf(stderr, "%s: cannot read %s at offset %llu: %s\n", PROG, m->path,
					(unsigned long long)off, got ? strerror(errno) : "unexpected end of the image");
				return -1;
			}
			done += (uint64_t)got;
		}
		k += run;
	}
	return 0;
}

static int all_zero(const unsigned char *p, size_t n)
{
	return !p[0] && !memcmp(p, p + 1, n - 1);
}

/* Block `k` of a member's chunk, as read. */
static void look(const struct verifier *v, const struct member *m, uint64_t k, struct view *b)
{
	size_t bs = v->cfg->blocksize;

	memset(b, 0, sizeof(*b));
	b->unreadable = m->skip[k];
	if (b->unreadable)
		return;
	b->data = m->chunk + k * bs;
	redo_parse(b->data, &b->h);
	b->crc_ok = b->h.checksum == redo_checksum(b->data, bs);
	b->good = b->crc_ok && redo_header_valid(&b->h, bs);
	b->zero = !b->crc_ok && all_zero(b->data, bs);
	b->pos = redo_pos(b->data, &b->h, &b->mask);
}

/* First pass: the current sequence, of either member. */
static void note_sequence(struct verifier *v, uint64_t i, const struct view *b, const struct view *mirror)
{
	if (b->good && b->h.number == i && b->h.sequence > v->sequence)
		v->sequence = b->h.sequence;
	if (mirror)
		note_sequence(v, i, mirror, NULL);
}

/* Why block `i` does not continue the chain; NULL when it does. */
static const char *chain_break(const struct verifier *v, uint64_t i, const struct view *b)
{
	if (b->unreadable)
		return "unreadable";
	if (b->zero)
		return "unwritten";
	if (!b->good)
		return "bad-checksum";
	if (b->h.sequence != v->sequence)
		return b->h.sequence < v->sequence ? "older-sequence" : "block-number";
	if (b->h.number != i)
		return "block-number";
	/* The low bits of a difference are those of the low bits: a partly known position checks on them. */
	if (((b->pos - v->sum) ^ v->first) & v->first_mask & b->mask)
		return "position";
	return NULL;
}

static void extend_chain(struct verifier *v, const struct view *b)
{
	if (b->mask & ~v->first_mask) {
		v->first = (b->pos - v->sum) & b->mask;
		v->first_mask = b->mask;
	}
	v->sum += b->h.used;
	v->recovered++;
	v->corrupt_undetected += !redo_payload_ok(b->data, &b->h, v->cfg->blocksize);
}

/* Whether the header reads as the current sequence's block `i`, whatever the checksum says. */
static int reads_current(const struct verifier *v, uint64_t i, const struct view *b)
{
	return !b->unreadable && v->sequence && b->h.type == REDO_BLOCK_TYPE && b->h.version == REDO_BLOCK_VERSION &&
	       b->h.sequence == v->sequence && b->h.number == i;
}

/* A torn block: its header reads as current, its checksum fails. Would a check of the header alone
 * have taken it: a used count in range, and the position where the block before ended? */
static void note_torn(struct verifier *v, uint64_t i, const struct view *b)
{
	int current = reads_current(v, i, b) && redo_header_valid(&b->h, v->cfg->blocksize);

	if (reads_current(v, i, b) && !b->crc_ok) {
		v->torn++;
		v->torn_header_ok += current && (!v->prev_current || !((b->pos ^ v->prev_next) & b->mask & v->prev_mask));
	}
	v->prev_current = current;
	v->prev_next = b->pos + b->h.used;
	v->prev_mask = b->mask;
}

/* Whether a block is a good one of the current sequence in its own place. */
static int good_here(const struct verifier *v, uint64_t i, const struct view *b)
{
	return b->good && b->h.sequence == v->sequence && b->h.number == i;
}

/* Second pass: the chain, and what the log holds around it. With a mirror, block by block as a
 * database reads a multiplexed log group: --target's block, or the mirror's where --target's does
 * not continue the chain (after the end: is not good in its place) and the mirror's does. */
static void recover_block(struct verifier *v, uint64_t i, const struct view *target, const struct view *mirror)
{
	const struct view *b = target;
	const char *why;

	if (mirror && (v->ended ? !good_here(v, i, target) && good_here(v, i, mirror)
			       : chain_break(v, i, target) && !chain_break(v, i, mirror))) {
		b = mirror;
		v->from_mirror += !v->ended;
	}
	v->unreadable += b->unreadable;
	if (!v->ended) {
		why = chain_break(v, i, b);
		if (!why) {
			extend_chain(v, b);
		} else {
			v->ended = 1;
			v->end_block = i;
			v->end_reason = why;
		}
	} else if (good_here(v, i, b)) {
		v->valid_after_end++;
	}
	note_torn(v, i, b);
}

/* One pass over the members, `fn` on every block in order (the mirror's beside, or NULL); 0 or -1
 * (reported). */
static int walk(struct verifier *v, void (*fn)(struct verifier *, uint64_t, const struct view *, const struct view *))
{
	struct view b, mirror;

	for (uint64_t first = 0; first < v->blocks; first += v->chunk_blocks) {
		uint64_t n = v->blocks - first < v->chunk_blocks ? v->blocks - first : v->chunk_blocks;

		for (int j = 0; j < v->members; j++)
			if (read_chunk(v, &v->m[j], first, n))
				return -1;
		for (uint64_t k = 0; k < n; k++) {
			look(v, &v->m[0], k, &b);
			if (v->members > 1)
				look(v, &v->m[1], k, &mirror);
			fn(v, first + k, &b, v->members > 1 ? &mirror : NULL);
		}
	}
	return 0;
}

/* The redo position after the chain; a position so near 2^64 that the chain's redo would pass it (a
 * crafted block) is taken as 2^64 - 1, never wrapped round to a small one. */
static uint64_t recovered_to(const struct verifier *v)
{
	uint64_t to;

	if (!v->recovered)
		return 0;
	return __builtin_add_overflow(v->first & v->first_mask, v->sum, &to) ? UINT64_MAX : to;
}

/* What --acknowledged makes of the recovery: redo bytes lost (acknowledged, not recovered, and past
 * --checkpoint when one is given: a wrapping log's redo from passes before is not the recovery's), the commits
 * they held (rounded up: a commit with a byte lost is lost), and redo recovered past it. Differences
 * are taken only the way they are positive, and the commits without adding to `lost` (it may be near
 * 2^64: lost + redo_per_txn - 1 wrapped to a count of 0 commits). */
struct losses {
	uint64_t to, lost, commits, beyond;
};

static struct losses losses_of(const struct verifier *v)
{
	const struct verify_config *cfg = v->cfg;
	struct losses l = { .to = recovered_to(v) };

	uint64_t from = l.to > cfg->checkpoint ? l.to : cfg->checkpoint; /* redo before the checkpoint needs none */

	l.lost = cfg->acknowledged > from ? cfg->acknowledged - from : 0;
	l.beyond = l.to > cfg->acknowledged ? l.to - cfg->acknowledged : 0;
	if (cfg->has_redo_per_txn)
		l.commits = l.lost / cfg->redo_per_txn + (l.lost % cfg->redo_per_txn != 0);
	return l;
}

static void report_json(const struct verifier *v)
{
	const struct verify_config *cfg = v->cfg;
	struct losses l = losses_of(v);
	uint64_t to = l.to;

	fputs("{\"target\": ", stdout);
	json_string(stdout, cfg->target);
	fputs(", \"mirror\": ", stdout);
	if (cfg->mirror)
		json_string(stdout, cfg->mirror);
	else
		fputs("null", stdout);
	printf(", \"blocks_from_mirror\": %llu", (unsigned long long)v->from_mirror);
	printf(", \"blocksize\": %llu, \"log_size\": %llu, \"blocks\": %llu, \"sequence\": %u, \"blocks_recovered\": "
	       "%llu, \"recovered_to\": %llu, ", cfg->blocksize, cfg->log_size, (unsigned long long)v->blocks,
	       v->sequence, (unsigned long long)v->recovered, (unsigned long long)to);
	if (v->ended)
		printf("\"end_block\": %llu, ", (unsigned long long)v->end_block);
	else
		printf("\"end_block\": null, ");
	printf("\"end_reason\": \"%s\", \"torn_blocks\": %llu, \"torn_header_ok\": %llu, \"unreadable_blocks\": %llu, "
	       "\"valid_after_end\": %llu, \"corrupt_undetected\": %llu, ", v->end_reason,
	       (unsigned long long)v->torn, (unsigned long long)v->torn_header_ok, (unsigned long long)v->unreadable,
	       (unsigned long long)v->valid_after_end, (unsigned long long)v->corrupt_undetected);
	if (!cfg->has_acknowledged) {
		printf("\"acknowledged\": null, \"checkpoint\": null, \"lost_bytes\": null, \"redo_per_txn\": null, "
		       "\"lost_commits\": null, \"recovered_beyond_acknowledged\": null}\n");
		return;
	}
	printf("\"acknowledged\": %llu, ", cfg->acknowledged);
	if (cfg->has_checkpoint)
		printf("\"checkpoint\": %llu, ", cfg->checkpoint);
	else
		printf("\"checkpoint\": null, ");
	printf("\"lost_bytes\": %llu, ", (unsigned long long)l.lost);
	if (cfg->has_redo_per_txn)
		printf("\"redo_per_txn\": %llu, \"lost_commits\": %llu, ", cfg->redo_per_txn,
		       (unsigned long long)l.commits);
	else
		printf("\"redo_per_txn\": null, \"lost_commits\": null, ");
	printf("\"recovered_beyond_acknowledged\": %llu}\n", (unsigned long long)l.beyond);
}

static void report_text(const struct verifier *v)
{
	const struct verify_config *cfg = v->cfg;
	struct losses l = losses_of(v);
	uint64_t to = l.to;

	printf("%s verify: %s, blocksize %llu, %llu blocks, log sequence %u\n", PROG, cfg->target, cfg->blocksize,
	       (unsigned long long)v->blocks, v->sequence);
	if (cfg->mirror)
		printf("mirror %s: %llu blocks of the redo read from it\n", cfg->mirror,
		       (unsigned long long)v->from_mirror);
	printf("recovered %llu blocks, the redo to byte %llu; ", (unsigned long long)v->recovered,
	       (unsigned long long)to);
	if (v->ended)
		printf("it ends at block %llu (offset %llu): %s\n", (unsigned long long)v->end_block,
		       (unsigned long long)(v->end_block * cfg->blocksize), v->end_reason);
	else
		printf("it runs to the end of the log\n");
	printf("torn blocks %llu (%llu a check of the header alone would have taken), unreadable blocks %llu, good "
	       "blocks after the end %llu, recovered blocks whose bytes are wrong %llu\n", (unsigned long long)v->torn,
	       (unsigned long long)v->torn_header_ok, (unsigned long long)v->unreadable,
	       (unsigned long long)v->valid_after_end, (unsigned long long)v->corrupt_undetected);
	if (!cfg->has_acknowledged)
		return;
	printf("acknowledged to byte %llu", cfg->acknowledged);
	if (cfg->has_checkpoint)
		printf(" (recovery from the checkpoint at byte %llu)", cfg->checkpoint);
	printf(": %llu bytes lost", (unsigned long long)l.lost);
	if (cfg->has_redo_per_txn)
		printf(" (%llu commits)", (unsigned long long)l.commits);
	printf(", %llu bytes recovered beyond it\n", (unsigned long long)l.beyond);
}

/* Whether two open descriptors are the same file (by device and inode, whatever their paths). */
static int same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int run_verify(struct verifier *v)
{
	int rc;

	for (int j = 0; j < v->members; j++)
		if (v->m[j].unreadable &&
		    (rc = read_ranges(j ? "--mirror-unreadable" : "--unreadable", v->m[j].unreadable, &v->m[j].bad)))
			return rc;
	for (int j = 0; j < v->members; j++)
		if ((rc = open_member(v, &v->m[j])))
			return rc;
	if (v->members > 1 && same_file(v->m[0].fd, v->m[1].fd)) {
		fprintf(stderr, "%s: --mirror %s is the --target %s itself: expected the log group's other member, on "
			"another disk\n", PROG, v->m[1].path, v->m[0].path);
		return 2;
	}
	v->chunk_blocks = CHUNK_BYTES / v->cfg->blocksize;
	for (int j = 0; j < v->members; j++) {
		v->m[j].chunk = malloc(CHUNK_BYTES);
		v->m[j].skip = malloc(v->chunk_blocks);
		if (!v->m[j].chunk || !v->m[j].skip) {
			fprintf(stderr, "%s: out of memory for a %u-byte read buffer\n", PROG, CHUNK_BYTES);
			return 1;
		}
	}
	if (walk(v, note_sequence) || walk(v, recover_block))
		return 1;
	if (!v->ended)
		v->end_reason = "end-of-log";
	if (v->cfg->json)
		report_json(v);
	else
		report_text(v);
	return 0;
}

int verify(const struct verify_config *cfg)
{
	struct verifier v = { .cfg = cfg, .members = cfg->mirror ? 2 : 1, .blocks = cfg->log_size / cfg->blocksize,
			      .m = { { .option = "--target", .path = cfg->target, .unreadable = cfg->unreadable, .fd = -1 },
				     { .option = "--mirror", .path = cfg->mirror, .unreadable = cfg->mirror_unreadable,
				       .fd = -1 } } };
	int rc = run_verify(&v);

	for (int j = 0; j < 2; j++) {
		if (v.m[j].fd >= 0)
			close(v.m[j].fd);
		free(v.m[j].chunk);
		free(v.m[j].skip);
		free(v.m[j].bad.r);
	}
	return rc;
}
