// SPDX-License-Identifier: Apache-2.0
/*
 * The unreadable-ranges file, read and parsed (unreadable.h). redo-writer verify and the device model's
 * nbdkit filter both build this file, so that a guest's verify and the host's model never disagree
 * about what a cut left: the model took every line up to the first bad one and dropped the rest, read
 * "-1" as 2^64 - 1 and stopped silently at 65,536 ranges, where verify refused the same file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unreadable.h"

#define EXPECTED "expected two numbers, OFFSET and LENGTH in bytes (decimal digits, LENGTH at least 1, " \
		 "OFFSET + LENGTH within 64 bits)"

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Digits only (no sign, space, base prefix or suffix), at most 20 of them, fitting in 64 bits. */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (!len || len > 20)
		return -1;
	for (size_t i = 0; i < len; i++) {
		uint64_t digit = (uint64_t)(s[i] - '0');

		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - digit) / 10)
			return -1;
		v = v * 10 + digit;
	}
	*out = v;
	return 0;
}

/* One line of `n` bytes (no newline): 1 a range, 0 a blank line, -1 anything else. */
static int parse_line(const char *p, size_t n, struct unreadable_range *r)
{
	size_t i = 0, a, na, b, nb;

	while (i < n && blank(p[i]))
		i++;
	if (i == n)
		return 0;
	for (a = i; i < n && !blank(p[i]); i++)
		;
	na = i - a;
	if (i == n)
		return -1;
	while (i < n && blank(p[i]))
		i++;
	for (b = i; i < n && !blank(p[i]); i++)
		;
	nb = i - b;
	while (i < n && blank(p[i]))
		i++;
	if (i != n || parse_u64(p + a, na, &r->offset) || parse_u64(p + b, nb, &r->length) || !r->length ||
	    r->offset + r->length < r->offset)
		return -1;
	return 1;
}

int unreadable_parse(const char *text, size_t len, struct unreadable_list *list, char *why, size_t why_size)
{
	size_t cap = 0;
	unsigned long line = 0;

	list->range = NULL;
	list->n = 0;
	for (size_t at = 0; at < len;) {
		const char *p = text + at, *nl = memchr(p, '\n', len - at);
		size_t n = nl ? (size_t)(nl - p) : len - at;
		struct unreadable_range r;
		int rc = parse_line(p, n, &r);

		line++;
		at += n + (nl != NULL);
		if (!rc)
			continue;
		if (rc < 0) {
			snprintf(why, why_size, "line %lu: " EXPECTED, line);
			goto refused;
		}
		if (list->n == UNREADABLE_MAX_RANGES) {
			snprintf(why, why_size, "line %lu: more than %d ranges: expected at most %d (a cut leaves a few)", line,
				 UNREADABLE_MAX_RANGES, UNREADABLE_MAX_RANGES);
			goto refused;
		}
		if (list->n == cap) {
			size_t more = cap ? 2 * cap : 16;
			struct unreadable_range *grown = realloc(list->range, more * sizeof(*grown));

			if (!grown) {
				snprintf(why, why_size, "line %lu: out of memory for %zu ranges", line, more);
				goto refused;
			}
			list->range = grown;
			cap = more;
		}
		list->range[list->n++] = r;
	}
	return 0;
refused:
	free(list->range);
	list->range = NULL;
	list->n = 0;
	return -1;
}

static const char *kind_of(mode_t mode)
{
	return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" :
	       S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" : "a special file";
}

enum unreadable_status unreadable_load(const char *path, struct unreadable_list *list, char *why, size_t why_size,
				       struct stat *st_out)
{
	struct stat st;
	size_t got = 0, cap;
	char *text = NULL;
	int fd, rc;

	list->range = NULL;
	list->n = 0;
	/* O_NONBLOCK: a FIFO nobody writes to would block open() and read() until someone did. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		snprintf(why, why_size, "cannot be read: open: %s: expected a file of lines OFFSET LENGTH this user may "
			 "read: give the path of one (its directories searchable, the file readable)", strerror(err));
		return err == ENOENT ? UNREADABLE_ABSENT : UNREADABLE_REFUSED;
	}
	if (fstat(fd, &st)) {
		snprintf(why, why_size, "cannot be read: fstat: %s: expected a file of lines OFFSET LENGTH that fstat "
			 "describes: check the file system it is on (dmesg), and write the file again", strerror(errno));
		goto refused;
	}
	if (st_out)
		*st_out = st;
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "is %s: expected a regular file of lines OFFSET LENGTH", kind_of(st.st_mode));
		goto refused;
	}
	if (st.st_size < 0 || (unsigned long long)st.st_size > UNREADABLE_MAX_BYTES) {
		snprintf(why, why_size, "is %lld bytes: expected at most %zu (%d ranges of OFFSET LENGTH)",
			 (long long)st.st_size, UNREADABLE_MAX_BYTES, UNREADABLE_MAX_RANGES);
		goto refused;
	}
	/* One byte more than fstat said: a file that grew since is refused, never read cut short. */
	cap = (size_t)st.st_size + 1;
	text = malloc(cap);
	if (!text) {
		snprintf(why, why_size, "cannot be read: out of memory for %zu bytes: expected room for the file: "
			 "free memory, and run again", cap);
		goto refused;
	}
	while (got < cap) {
		ssize_t n = read(fd, text + got, cap - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(why, why_size, "cannot be read: read: %s: expected a file of lines OFFSET LENGTH that "
				 "reads whole: check the disk it is on (dmesg), and write the file again", strerror(errno));
			goto refused;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	if (got == cap) {
		snprintf(why, why_size, "grew while it was read (past %zu bytes): expected a file that is written whole, then "
			 "read", cap - 1);
		goto refused;
	}
	close(fd);
	rc = unreadable_parse(text, got, list, why, why_size);
	free(text);
	return rc ? UNREADABLE_REFUSED : UNREADABLE_OK;
refused:
	close(fd);
	free(text);
	return UNREADABLE_REFUSED;
}
