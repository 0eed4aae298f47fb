/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device path: a log member that is an NBD export on a Unix socket of this host (a device
 * model's, sectorlab/devices/server.py), written with libnbd instead of pwrite on a descriptor.
 * The command line recognises and opens it (nbd_uri_scheme, nbd_target_open: every refusal is one
 * line); the run writes it (nbd_target_write, nbd_target_flush) and closes it. A build without
 * libnbd (NBD=no, or libnbd absent: the static binary the guest images get) recognises an NBD URI
 * all the same and refuses it in one line.
 */
#ifndef REDO_WRITER_NBD_H
#define REDO_WRITER_NBD_H

#include <stdint.h>
#include <sys/types.h>

struct nbd_target;

/* What the server said of the export at the handshake. */
struct nbd_export_info {
	uint64_t size;
	int can_fua, can_flush;
	uint64_t minimum_block, preferred_block, maximum_block;  /* 0: not advertised */
	dev_t socket_dev;                                        /* the socket's inode: two URIs, one export */
	ino_t socket_ino;
	char export_name[256];
};

/* Whether this build can write NBD targets. */
extern const int nbd_supported;

/* Whether `value` of --`opt` is an NBD URI (nbd://, nbds://, nbd+unix://, nbd+vsock:// ...), not a
 * path: 1 yes, 0 no. */
int nbd_uri_scheme(const char *value);

/* Parses, checks and connects to the NBD URI `uri` given as --`opt`, within `timeout_s` seconds
 * (--nbd-timeout: the connect and the handshake; later, each reply); NULL after printing one line
 * that names the value and what to do: nothing listening on the socket (connect() failed), a server
 * that refused the export or the handshake (what it said), one that did not answer in time. */
struct nbd_target *nbd_target_open(const char *opt, const char *uri, int timeout_s);
const struct nbd_export_info *nbd_target_info(const struct nbd_target *t);
/* One write of `len` bytes at `off`, with FUA when `fua`; 0 or -errno (nbd_target_error says more).
 * Both wait for the reply polling the socket without sleeping for up to `spin_ns` (--reply-spin-us),
 * then sleeping in poll(), for at most the target's timeout: -ETIMEDOUT after it (nbd_target_failure
 * names the socket and the wait). */
int nbd_target_write(struct nbd_target *t, const void *buf, uint64_t len, uint64_t off, int fua, uint64_t spin_ns);
int nbd_target_flush(struct nbd_target *t, uint64_t spin_ns);
/* One read of `len` bytes at `off` (redo-writer io), as a write waits for its reply. */
int nbd_target_read(struct nbd_target *t, void *buf, uint64_t len, uint64_t off, uint64_t spin_ns);
/* libnbd's message for the last failed call of this thread, one line. */
const char *nbd_target_error(void);
/* Why the target's last write or flush failed when libnbd has no word for it (no reply in time), one
 * line; NULL otherwise. */
const char *nbd_target_failure(const struct nbd_target *t);
void nbd_target_close(struct nbd_target *t);

#endif
