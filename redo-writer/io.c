// SPDX-License-Identifier: Apache-2.0
/* redo-writer io: timed requests at queue depth 1 (io.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "io.h"

static const struct {
	const char *word;
	enum io_op op;
	int ranged;
} OPS[] = { { "write", IO_WRITE, 1 }, { "write-durable", IO_WRITE_DURABLE, 1 }, { "read", IO_READ, 1 },
	    { "flush", IO_FLUSH, 0 } };

/* A whole number of decimal digits that fits, from `*p` to the next space or the end; 0 or -1. */
static int take_number(const char **p, uint64_t *out)
{
	const char *s = *p;
	size_t len = strspn(s, "0123456789");

	if (!len || len > 19 || (s[len] && (s[len] != ' ' || !s[len + 1])))
		return -1;  /* digits, then the end or one space and more */
	*out = strtoull(s, NULL, 10);
	*p = s + len + (s[len] == ' ');
	return 0;
}

int io_parse(FILE *in, const char *name, struct io_request **out, size_t *n)
{
	char line[IO_LINE_MAX + 2];
	size_t cap = 0, lineno = 0, bytes = 0;
	struct io_request *req = NULL;

	*n = 0;
	while (fgets(line, sizeof(line), in)) {
		size_t len = strlen(line);
		const char *p = line;
		struct io_request r = { 0 };
		size_t k;

		lineno++;
		bytes += len;
		if (bytes > IO_REQUESTS_MAX_BYTES) {
			fprintf(stderr, "%s: %s is over %u bytes: expected at most that many\n", PROG, name,
				IO_REQUESTS_MAX_BYTES);
			goto bad;
		}
		if (len && line[len - 1] == '\n') {
			line[--len] = 0;
		} else if (len < sizeof(line) - 1 && !feof(in)) {
			fprintf(stderr, "%s: %s line %zu holds a NUL byte: expected text\n", PROG, name, lineno);
			goto bad;
		} else if (!feof(in)) {
			fprintf(stderr, "%s: %s line %zu is longer than %d bytes: expected OP [OFFSET LENGTH]\n", PROG, name,
				lineno, IO_LINE_MAX);
			goto bad;
		}
		for (k = 0; k < sizeof(OPS) / sizeof(OPS[0]); k++) {
			size_t w = strlen(OPS[k].word);

			if (!strncmp(p, OPS[k].word, w) && (p[w] == ' ' || !p[w])) {
				p += w + (p[w] == ' ');
				break;
			}
		}
		if (k == sizeof(OPS) / sizeof(OPS[0])) {
			fprintf(stderr, "%s: %s line %zu: expected write, write-durable, read or flush, then OFFSET LENGTH "
				"(none for flush)\n", PROG, name, lineno);
			goto bad;
		}
		r.op = OPS[k].op;
		if (OPS[k].ranged && (take_number(&p, &r.offset) || take_number(&p, &r.length) || *p)) {
			fprintf(stderr, "%s: %s line %zu: %s expected OFFSET LENGTH in decimal bytes\n", PROG, name, lineno,
				OPS[k].word);
			goto bad;
		}
		if (!OPS[k].ranged && (*p || (len && line[len - 1] == ' '))) {
			fprintf(stderr, "%s: %s line %zu: flush takes no offset or length\n", PROG, name, lineno);
			goto bad;
		}
		if (OPS[k].ranged && (!r.length || r.length > IO_MAX_LENGTH || r.offset % 512 || r.length % 512 ||
				      r.offset >= (1ULL << 60))) {
			fprintf(stderr, "%s: %s line %zu: %s %llu %llu: expected a length of 512 to %u bytes, offset and "
				"length multiples of 512, the offset below 2^60\n", PROG, name, lineno, OPS[k].word,
				(unsigned long long)r.offset, (unsigned long long)r.length, IO_MAX_LENGTH);
			goto bad;
		}
		if (*n == IO_MAX_REQUESTS) {
			fprintf(stderr, "%s: %s has more than %d requests: expected at most that many\n", PROG, name,
				IO_MAX_REQUESTS);
			goto bad;
		}
		if (*n == cap) {
			struct io_request *more;

			cap = cap ? cap * 2 : 1024;
			if (!(more = realloc(req, cap * sizeof(*req)))) {
				fprintf(stderr, "%s: out of memory for %zu requests\n", PROG, cap);
				goto bad;
			}
			req = more;
		}
		req[(*n)++] = r;
	}
	if (ferror(in)) {
		fprintf(stderr, "%s: %s: read: %s\n", PROG, name, strerror(errno));
		goto bad;
	}
	if (!*n) {
		fprintf(stderr, "%s: %s holds no request: expected lines of write, write-durable, read or flush\n", PROG,
			name);
		goto bad;
	}
	*out = req;
	return 0;
bad:
	free(req);
	*n = 0;
	return -1;
}

uint64_t io_reach(const struct io_request *req, size_t n)
{
	uint64_t end = 0;

	for (size_t i = 0; i < n; i++)
		if (req[i].op != IO_FLUSH && req[i].offset + req[i].length > end)
			end = req[i].offset + req[i].length;
	return end;
}

int io_check(const struct io_request *req, size_t n, const char *name, uint64_t size, uint64_t align)
{
	for (size_t i = 0; i < n; i++) {
		const struct io_request *r = &req[i];

		if (r->op == IO_FLUSH)
			continue;
		if (r->offset % align || r->length % align || r->offset > size || r->length > size - r->offset) {
			fprintf(stderr, "%s: %s request %zu: %s %llu %llu: expected offset and length multiples of %llu (the "
				"target's logical block), within its %llu bytes\n", PROG, name, i + 1, OPS[r->op].word,
				(unsigned long long)r->offset, (unsigned long long)r->length, (unsigned long long)align,
				(unsigned long long)size);
			return -1;
		}
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One request on a descriptor: 0 or -errno. */
static int on_fd(int fd, const struct io_request *r, char *buf)
{
	struct iovec iov = { .iov_base = buf, .iov_len = r->length };
	ssize_t got;

	switch (r->op) {
	case IO_FLUSH:
		return fdatasync(fd) ? -errno : 0;
	case IO_READ:
		got = pread(fd, buf, r->length, (off_t)r->offset);
		break;
	default:
		got = pwritev2(fd, &iov, 1, (off_t)r->offset, r->op == IO_WRITE_DURABLE ? RWF_DSYNC : 0);
	}
	if (got < 0)
		return -errno;
	return (uint64_t)got == r->length ? 0 : -EIO;
}

static int on_nbd(struct nbd_target *t, const struct io_request *r, char *buf, uint64_t spin_ns)
{
	switch (r->op) {
	case IO_FLUSH:
		return nbd_target_flush(t, spin_ns);
	case IO_READ:
		return nbd_target_read(t, buf, r->length, r->offset, spin_ns);
	default:
		return nbd_target_write(t, buf, r->length, r->offset, r->op == IO_WRITE_DURABLE, spin_ns);
	}
}

int io_run(int fd, struct nbd_target *nbd, const struct io_request *req, size_t n, uint64_t *ns, uint64_t spin_ns)
{
	/* Reads land in a buffer of their own: what is written stays what was made below. */
	char *buf = aligned_alloc(4096, IO_MAX_LENGTH), *got = aligned_alloc(4096, IO_MAX_LENGTH);
	uint64_t stamp = 0x9e3779b97f4a7c15ULL;

	if (!buf || !got) {
		fprintf(stderr, "%s: out of memory for two %u-byte buffers\n", PROG, IO_MAX_LENGTH);
		free(buf);
		free(got);
		return -1;
	}
	/* Bytes no drive compresses or finds twice: a drive that deduplicates or compresses would
	 * otherwise write less than it was given. */
	for (size_t i = 0; i < IO_MAX_LENGTH; i += 8) {
		stamp ^= stamp << 13, stamp ^= stamp >> 7, stamp ^= stamp << 17;
		memcpy(buf + i, &stamp, 8);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t start;
		int err;

		char *at = req[i].op == IO_READ ? got : buf;

		memcpy(buf, &i, sizeof(i));  /* each write's first bytes its own */
		start = now_ns();
		err = nbd ? on_nbd(nbd, &req[i], at, spin_ns) : on_fd(fd, &req[i], at);
		ns[i] = now_ns() - start;
		if (err) {
			const char *why = nbd ? nbd_target_failure(nbd) : NULL;

			fprintf(stderr, "%s: request %zu (%s %llu %llu) failed: %s\n", PROG, i + 1,
				OPS[req[i].op].word, (unsigned long long)req[i].offset, (unsigned long long)req[i].length,
				why ? why : nbd ? nbd_target_error() : strerror(-err));
			free(buf);
			free(got);
			return -1;
		}
	}
	free(buf);
	free(got);
	return 0;
}
