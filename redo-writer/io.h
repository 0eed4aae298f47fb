/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redo-writer io: a list of requests (writes, writes made durable as they complete, reads, flushes)
 * issued one at a time (queue depth 1) to a file, a block device or an NBD export, each timed on
 * CLOCK_MONOTONIC from its call to its completion. What `sectorlab probe` measures a device with:
 * the patterns are its (sectorlab/probe/), the timing and the I/O this program's.
 */
#ifndef REDO_WRITER_IO_H
#define REDO_WRITER_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nbd.h"

#define IO_MAX_REQUESTS 1000000
#define IO_MAX_LENGTH (16u << 20)
#define IO_LINE_MAX 96
#define IO_REQUESTS_MAX_BYTES (16u << 20)   /* the requests' file: at most this many bytes */

enum io_op { IO_WRITE, IO_WRITE_DURABLE, IO_READ, IO_FLUSH };

struct io_request {
	enum io_op op;
	uint64_t offset, length;
};

/* Reads the requests from `in` (named `name` in messages): one a line, "write OFFSET LENGTH",
 * "write-durable OFFSET LENGTH" (O_DSYNC's write: RWF_DSYNC on a file or block device, FUA on an NBD
 * export), "read OFFSET LENGTH" or "flush"; decimal bytes, multiples of 512, at most IO_MAX_LENGTH a
 * request and IO_MAX_REQUESTS in all. 0, or -1 after one line naming the line and what was expected. */
int io_parse(FILE *in, const char *name, struct io_request **out, size_t *n);

/* How far the requests reach: the end of the furthest. */
uint64_t io_reach(const struct io_request *req, size_t n);

/* Each request within `size` bytes and a multiple of `align` (the target's logical block); 0, or -1
 * after one line naming the first that is not (its number in `name`). */
int io_check(const struct io_request *req, size_t n, const char *name, uint64_t size, uint64_t align);

/* Issues the requests in order to `fd` (opened O_RDWR|O_DIRECT) or, when `nbd` is not NULL, to the
 * export, whose replies are polled for `spin_ns` before sleeping; ns[i] gets request i's time. 0, or
 * -1 after one line naming the request that failed. */
int io_run(int fd, struct nbd_target *nbd, const struct io_request *req, size_t n, uint64_t *ns, uint64_t spin_ns);

#endif
