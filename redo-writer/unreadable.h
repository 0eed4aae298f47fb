/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file of unreadable byte ranges a power cut leaves (lines "OFFSET LENGTH"): one reader for both
 * programs that take it, `redo-writer verify --unreadable` on the host or in a guest and the device
 * model's `unreadable=` (devicemodel/filter.c compiles this file too), so that what a cut left is read
 * the same way by both, or refused by both. Neither program includes the other's headers: this one
 * needs only the C library.
 *
 * The file: lines of two decimal numbers, OFFSET and LENGTH in bytes, separated by blanks (space, tab;
 * a line may end in "\r\n"); digits only (no sign, no base prefix, no exponent), each fitting in 64
 * bits, LENGTH at least 1 and OFFSET + LENGTH within 64 bits; a blank line is none. A line that is not
 * that is refused with its number, never skipped, and so is the file past UNREADABLE_MAX_RANGES ranges.
 */
#ifndef SECTORLAB_UNREADABLE_H
#define SECTORLAB_UNREADABLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* A cut tears only the writes on the media at its moment, and leaves at most the two partly written
 * units at a write's ends unreadable (sectorlab/crash/powerloss.py): the crash runs write a handful of
 * ranges. 65,536 is what the device model's fixed table held before this reader. */
#define UNREADABLE_MAX_RANGES 65536
/* What sectorlab writes is at most 42 bytes a line (two 20-digit numbers, a space, a newline): 65,536
 * of them are 2.6 MiB. 64 bytes a range (4 MiB) leaves room for blanks and blank lines, and keeps a
 * link to /dev/zero or a runaway file from being read past it. */
#define UNREADABLE_MAX_BYTES ((size_t)UNREADABLE_MAX_RANGES * 64)

struct unreadable_range {
	uint64_t offset, length;
};

struct unreadable_list {
	struct unreadable_range *range;     /* malloc'd; free() it */
	size_t n;
};

enum unreadable_status {
	UNREADABLE_OK = 0,
	UNREADABLE_ABSENT = 1,              /* no file of that name: no ranges, to a caller that allows it */
	UNREADABLE_REFUSED = -1,            /* what is wrong is in `why` */
};

/*
 * Reads the file at `path` without blocking (a FIFO is refused, never waited on): a regular file of at
 * most UNREADABLE_MAX_BYTES, parsed whole. On UNREADABLE_OK, *list holds its ranges in file order (free
 * list->range); else *list is empty and `why` says what is wrong, as the words that follow the file's
 * name in a message ("line 3: expected two numbers ...", "is a FIFO: expected a regular file ...").
 * `st`, when not NULL, gets the opened file's fstat (to tell it from another file by device and inode).
 */
enum unreadable_status unreadable_load(const char *path, struct unreadable_list *list, char *why, size_t why_size,
				       struct stat *st);

/* Parses `len` bytes of `text` (not NUL-terminated; a NUL is refused as any other stray byte). 0, or
 * -1 with `why` set as above. */
int unreadable_parse(const char *text, size_t len, struct unreadable_list *list, char *why, size_t why_size);

#endif
