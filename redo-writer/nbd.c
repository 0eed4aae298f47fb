// SPDX-License-Identifier: Apache-2.0
/*
 * The device path: an NBD export on a Unix socket of this host as a log member, through libnbd
 * (one handle per member, used by that member's writer thread only). Only nbd+unix:///[EXPORT]
 * ?socket=PATH is taken: the device path writes to a device model beside it, never over a network
 * (TCP, TLS or vsock). The URI is parsed here, strictly, and the socket it names is the one
 * connected to (nbd_connect_unix, not nbd_connect_uri): the path checked is the path used. Built
 * without libnbd, an NBD URI is still recognised, and refused in one line.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "nbd.h"

#define URI_FORM "nbd+unix:///[EXPORT]?socket=PATH"

/* The letters of `value` before "://", lower-cased into `scheme`; 0 when it has none of that form. */
static int uri_scheme(const char *value, char *scheme, size_t size)
{
	size_t n = strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

	if (!n || n >= size || strncmp(value + n, "://", 3))
		return 0;
	for (size_t i = 0; i < n; i++)
		scheme[i] = (char)tolower((unsigned char)value[i]);
	scheme[n] = 0;
	return 1;
}

int nbd_uri_scheme(const char *value)
{
	char scheme[32];

	return uri_scheme(value, scheme, sizeof(scheme)) && (!strcmp(scheme, "nbd") || !strcmp(scheme, "nbds") ||
		!strncmp(scheme, "nbd+", 4) || !strncmp(scheme, "nbds+", 5));
}

#ifdef HAVE_LIBNBD

#include <libnbd.h>

/* libnbd's own bound on a request's payload; a longer log write is sent in parts of at most this. */
#define NBD_WRITE_MAX (64ULL << 20)

const int nbd_supported = 1;

struct nbd_target {
	struct nbd_handle *h;
	struct nbd_export_info info;
	int timeout_s;              /* --nbd-timeout: the connection, the handshake and each reply */
	int stalled;                /* a reply did not come in time: commands are still in flight */
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char failure[320];          /* why the last write or flush failed, when not libnbd's word */
};

struct nbd_uri {
	char export_name[256];
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static int hex(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* `n` bytes of `s` with their %XX escapes decoded into `out`; 0, -1 a bad escape or an escaped control
 * character (a NUL would cut the name short, a newline make a message two lines), -2 longer than
 * `size` - 1. */
static int percent_decode(const char *s, size_t n, char *out, size_t size)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			if (i + 2 >= n || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0)
				return -1;
			c = hex(s[i + 1]) * 16 + hex(s[i + 2]);
			if (c < 0x20 || c == 0x7f)
				return -1;
			i += 2;
		}
		if (k + 1 >= size)
			return -2;
		out[k++] = (char)c;
	}
	out[k] = 0;
	return 0;
}

static const char *transport_of(const char *scheme)
{
	if (!strcmp(scheme, "nbd"))
		return "NBD over TCP";
	if (!strcmp(scheme, "nbds") || !strcmp(scheme, "nbds+unix"))
		return "NBD over TLS";
	if (!strcmp(scheme, "nbd+vsock") || !strcmp(scheme, "nbds+vsock"))
		return "NBD over vsock";
	return "not a transport redo-writer writes to";
}

/* `uri` as nbd+unix:///[EXPORT]?socket=PATH, nothing more; 0, or -1 after one line naming it. */
static int parse_uri(const char *opt, const char *uri, struct nbd_uri *u)
{
	char scheme[32];
	const char *p, *query, *end;
	int socket_given = 0;

	if (!uri_scheme(uri, scheme, sizeof(scheme)) || strcmp(scheme, "nbd+unix")) {
		fprintf(stderr, "%s: --%s %s is %s: the device path writes only to an NBD server on this host, through its "
			"Unix socket; give %s\n", PROG, opt, uri, transport_of(scheme), URI_FORM);
		return -1;
	}
	p = uri + strlen("nbd+unix://");
	if (*p != '/') {
		fprintf(stderr, "%s: --%s %s names a host (%.*s): an nbd+unix URI has none, its server is the socket's; "
			"give %s\n", PROG, opt, uri, (int)strcspn(p, "/?#"), p, URI_FORM);
		return -1;
	}
	p++;
	query = p + strcspn(p, "?#");
	if (*query == '#' || strchr(query, '#')) {
		fprintf(stderr, "%s: --%s %s has a fragment (#...): give %s\n", PROG, opt, uri, URI_FORM);
		return -1;
	}
	if (percent_decode(p, (size_t)(query - p), u->export_name, sizeof(u->export_name))) {
		fprintf(stderr, "%s: --%s %s: its export name has a bad %%-escape (or one of a control character) or is longer than %zu bytes: give %s\n",
			PROG, opt, uri, sizeof(u->export_name) - 1, URI_FORM);
		return -1;
	}
	for (p = *query ? query + 1 : query; *p; p = *end ? end + 1 : end) {
		size_t len;
		int rc;

		end = p + strcspn(p, "&");
		len = (size_t)(end - p);
		if (len < 7 || strncmp(p, "socket=", 7)) {
			fprintf(stderr, "%s: --%s %s has the query parameter '%.*s': expected only socket=PATH (%s)\n", PROG, opt,
				uri, (int)len, p, URI_FORM);
			return -1;
		}
		if (socket_given) {
			fprintf(stderr, "%s: --%s %s names socket= more than once: give it once\n", PROG, opt, uri);
			return -1;
		}
		socket_given = 1;
		rc = percent_decode(p + 7, len - 7, u->socket, sizeof(u->socket));
		if (rc == -2) {
			fprintf(stderr, "%s: --%s %s: its socket path is longer than the %zu bytes a Unix socket's path takes: "
				"give a shorter one\n", PROG, opt, uri, sizeof(u->socket) - 1);
			return -1;
		}
		if (rc) {
			fprintf(stderr, "%s: --%s %s: its socket path has a bad %%-escape (or one of a control character): give %s\n", PROG, opt, uri, URI_FORM);
			return -1;
		}
	}
	if (!socket_given || !*u->socket) {
		fprintf(stderr, "%s: --%s %s names no socket: give %s (a device model's socket is /run/sectorlab/devices/"
			"LAB/DISK/disk.sock)\n", PROG, opt, uri, URI_FORM);
		return -1;
	}
	return 0;
}

static const char *kind_of(mode_t mode)
{
	return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISREG(mode) ? "a regular file" :
	       S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" : "a special file";
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static __thread char error_line[512];

const char *nbd_target_error(void)
{
	const char *e = nbd_get_error();

	snprintf(error_line, sizeof(error_line), "%s", e ? e : "(libnbd gave no message)");
	for (char *c = error_line; *c; c++)
		if (*c == '\n' || *c == '\r' || *c == '\t')
			*c = ' ';
	return error_line;
}

/* How a connection ended before it was ready. */
enum connect_result {
	CONNECTED,
	SOCKET_FAILED,              /* socket(): this host has no descriptor or memory for one (errno in *err) */
	CONNECT_FAILED,             /* connect() on the socket: nothing listens (errno in *err) */
	CONNECT_TIMED_OUT,          /* connect() did not complete in time: a backlog nobody accepts from */
	HANDSHAKE_FAILED,           /* the server answered, and refused the export or the handshake */
	HANDSHAKE_TIMED_OUT,        /* it accepted, and did not finish the handshake in time */
	LOCAL_FAILED,               /* libnbd failed on this host to take the connected socket (its error set) */
};

/* Connects to the Unix socket `path` without blocking, by `deadline` (ms): the descriptor, or -1 with
 * *result and *err set. A connect() of one's own, rather than libnbd's, tells "nothing listens" from
 * what the server then says: libnbd reports both with the same errno (ENOENT is also its word for an
 * export the server does not have). */
static int connect_socket(const char *path, int64_t deadline, enum connect_result *result, int *err)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	*result = SOCKET_FAILED;
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	*result = CONNECT_FAILED;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	while (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		struct timespec pause = { 0, 10000000 };

		*err = errno;
		if (*err == EINTR)
			continue;
		/* A full backlog (a server that listens and does not accept): Unix sockets say so at once,
		 * and the connect is tried again until the deadline. */
		if (*err != EAGAIN)
			goto failed;
		if (now_ms() >= deadline) {
			*result = CONNECT_TIMED_OUT;
			goto failed;
		}
		nanosleep(&pause, NULL);
	}
	return fd;
failed:
	close(fd);
	return -1;
}

/* Connects and completes the handshake by `timeout_s` from now; CONNECTED, or how it failed (errno
 * in *err for SOCKET_FAILED and CONNECT_FAILED; libnbd's error set for LOCAL_FAILED and
 * HANDSHAKE_FAILED). */
static enum connect_result connect_within(struct nbd_handle *h, const char *socket, int timeout_s, int *err)
{
	int64_t deadline = now_ms() + (int64_t)timeout_s * 1000;
	enum connect_result result;
	int fd = connect_socket(socket, deadline, &result, err);

	if (fd < 0)
		return result;
	/* Who holds fd when nbd_aio_connect_socket fails: its manual promises libnbd the socket only on
	 * success, and libnbd (every release from 1.2 on: lib/connect.c and its generated wrapper) leaves
	 * it to the caller only when it refuses the handle's state, before it looks at fd. Past that check it is libnbd's
	 * on every failure: one of its own on this host (fcntl, memory) closes fd and leaves the handle
	 * newly created; a handshake that fails at once (a server whose first bytes are no NBD greeting)
	 * leaves the handle dead, fd closed by libnbd or held until nbd_close. So the state is checked
	 * first, fd is closed here only when libnbd never took it, and never after the call (a second
	 * close could end a descriptor another thread has opened under the same number since). */
	if (!nbd_aio_is_created(h)) {
		close(fd);
		return LOCAL_FAILED;
	}
	if (nbd_aio_connect_socket(h, fd) == -1) {
		*err = nbd_get_errno();
		return nbd_aio_is_created(h) ? LOCAL_FAILED : HANDSHAKE_FAILED;
	}
	while (!nbd_aio_is_ready(h)) {
		int64_t left = deadline - now_ms();

		if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h))
			return HANDSHAKE_FAILED;
		if (left <= 0)
			return HANDSHAKE_TIMED_OUT;
		if (nbd_poll(h, (int)left) == -1)
			return HANDSHAKE_FAILED;
	}
	return CONNECTED;
}

static int64_t block_size(struct nbd_handle *h, int which)
{
	int64_t v = nbd_get_block_size(h, which);

	return v > 0 ? v : 0;
}

struct nbd_target *nbd_target_open(const char *opt, const char *uri, int timeout_s)
{
	struct nbd_target *t;
	struct nbd_uri u;
	struct stat st;
	enum connect_result rc;
	int err = 0;

	if (parse_uri(opt, uri, &u))
		return NULL;
	if (stat(u.socket, &st)) {
		if (errno == ENOENT)
			fprintf(stderr, "%s: --%s %s: socket %s does not exist: start the NBD server that serves it (a lab's "
				"device model: sectorlab lab up; or nbdkit --unix %s ...), or give the socket of one that runs\n",
				PROG, opt, uri, u.socket, u.socket);
		else
			fprintf(stderr, "%s: --%s %s: socket %s: stat: %s\n", PROG, opt, uri, u.socket, strerror(errno));
		return NULL;
	}
	if (!S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "%s: --%s %s: %s is %s, not a Unix socket: give the socket an NBD server listens on\n", PROG,
			opt, uri, u.socket, kind_of(st.st_mode));
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->h = nbd_create())) {
		fprintf(stderr, "%s: --%s %s: nbd_create: %s\n", PROG, opt, uri, t ? nbd_target_error() : strerror(ENOMEM));
		free(t);
		return NULL;
	}
	/* A server that goes away mid-run is a failed write of that member, not a signal that kills the run. */
	signal(SIGPIPE, SIG_IGN);
	if (nbd_set_export_name(t->h, u.export_name) == -1) {
		fprintf(stderr, "%s: --%s %s: nbd_set_export_name: %s\n", PROG, opt, uri, nbd_target_error());
		goto refused;
	}
	t->timeout_s = timeout_s;
	snprintf(t->socket, sizeof(t->socket), "%s", u.socket);
	rc = connect_within(t->h, u.socket, timeout_s, &err);
	switch (rc) {
	case CONNECTED:
		break;
	case CONNECT_FAILED:
		if (err == ECONNREFUSED || err == ENOENT)
			fprintf(stderr, "%s: --%s %s: nothing serves socket %s (connect: %s): start the NBD server (a lab's "
				"device model: sectorlab lab up), or give the socket of one that runs\n", PROG, opt, uri,
				u.socket, strerror(err));
		else if (err == EACCES || err == EPERM)
			fprintf(stderr, "%s: --%s %s: cannot connect to socket %s (connect: %s): expected a socket this user "
				"may write to, in directories it may search: give such a socket, or run as the socket's "
				"owner\n", PROG, opt, uri, u.socket, strerror(err));
		else
			fprintf(stderr, "%s: --%s %s: cannot connect to socket %s (connect: %s): expected the Unix stream socket "
				"an NBD server listens on: give the socket of one that runs (a lab's device model: "
				"sectorlab lab up; or nbdkit --unix PATH ...)\n", PROG, opt, uri, u.socket, strerror(err));
		goto refused;
	case SOCKET_FAILED:
		fprintf(stderr, "%s: --%s %s: cannot make a socket to connect to %s (socket: %s): expected a free "
			"descriptor and memory on this host: raise the open-file limit (ulimit -n) or free memory, and "
			"run again\n", PROG, opt, uri, u.socket, strerror(err));
		goto refused;
	case LOCAL_FAILED:
		fprintf(stderr, "%s: --%s %s: connected to socket %s, and libnbd failed on this host to take the "
			"connection (%s): not the server's doing; expected libnbd to take a connected Unix socket: check "
			"this host's memory and open-file limit (ulimit -n), and run again\n", PROG, opt, uri, u.socket,
			nbd_target_error());
		goto refused;
	case CONNECT_TIMED_OUT:
		fprintf(stderr, "%s: --%s %s: the server on %s did not accept the connection within %d s (--nbd-timeout): "
			"give the socket of an NBD server that runs, or a longer --nbd-timeout\n", PROG, opt, uri, u.socket,
			timeout_s);
		goto refused;
	case HANDSHAKE_TIMED_OUT:
		fprintf(stderr, "%s: --%s %s: the server on %s accepted the connection and did not complete the NBD "
			"handshake within %d s (--nbd-timeout): give the socket of an NBD server, or a longer --nbd-timeout\n",
			PROG, opt, uri, u.socket, timeout_s);
		goto refused;
	case HANDSHAKE_FAILED:
		fprintf(stderr, "%s: --%s %s: the server on %s refused the NBD handshake for export '%s': %s: give an export "
			"that server serves\n", PROG, opt, uri, u.socket, u.export_name, nbd_target_error());
		goto refused;
	}
	if (nbd_is_read_only(t->h) == 1) {
		fprintf(stderr, "%s: --%s %s is read-only (its server offers it so): serve it writable (nbdkit without -r)\n",
			PROG, opt, uri);
		goto refused;
	}
	t->info.size = nbd_get_size(t->h) > 0 ? (uint64_t)nbd_get_size(t->h) : 0;
	t->info.can_fua = nbd_can_fua(t->h) == 1;
	t->info.can_flush = nbd_can_flush(t->h) == 1;
	t->info.minimum_block = (uint64_t)block_size(t->h, LIBNBD_SIZE_MINIMUM);
	t->info.preferred_block = (uint64_t)block_size(t->h, LIBNBD_SIZE_PREFERRED);
	t->info.maximum_block = (uint64_t)block_size(t->h, LIBNBD_SIZE_MAXIMUM);
	t->info.socket_dev = st.st_dev;
	t->info.socket_ino = st.st_ino;
	snprintf(t->info.export_name, sizeof(t->info.export_name), "%s", u.export_name);
	return t;
refused:
	nbd_target_close(t);
	return NULL;
}

const struct nbd_export_info *nbd_target_info(const struct nbd_target *t)
{
	return &t->info;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Waits for the command `cookie`, at most --nbd-timeout: polls the socket without sleeping for up to
 * `spin_ns` (a reply that comes within it is read at once, with no wake-up from idle), then sleeps in
 * poll(). 0 or -errno; -ETIMEDOUT when no reply came in time (t->failure says so). */
static int wait_for(struct nbd_target *t, int64_t cookie, uint64_t spin_ns, const char *what)
{
	uint64_t start = now_ns(), until = spin_ns ? start + spin_ns : 0;
	uint64_t deadline = start + (uint64_t)t->timeout_s * 1000000000ULL;

	for (;;) {
		int done = nbd_aio_command_completed(t->h, (uint64_t)cookie);
		uint64_t now = now_ns();
		int wait_ms;

		if (done == 1)
			return 0;
		if (done == -1)
			return nbd_get_errno() ? -nbd_get_errno() : -EIO;
		if (now >= deadline) {
			t->stalled = 1;
			snprintf(t->failure, sizeof(t->failure), "the server on %s sent no reply to the %s within %d s "
				 "(--nbd-timeout)", t->socket, what, t->timeout_s);
			return -ETIMEDOUT;
		}
		/* poll()'s wait in whole ms, rounded up so that it never spins short of the deadline */
		wait_ms = until && now < until ? 0 : (int)((deadline - now + 999999) / 1000000);
		if (nbd_poll(t->h, wait_ms) == -1)
			return nbd_get_errno() ? -nbd_get_errno() : -EIO;
	}
}

/* A write or a read of `len` bytes at `off`, in parts of at most the export's maximum block, each
 * waited for before the next. */
static int in_parts(struct nbd_target *t, char *buf, uint64_t len, uint64_t off, int write, uint32_t flags,
		    uint64_t spin_ns)
{
	uint64_t part = t->info.maximum_block && t->info.maximum_block < NBD_WRITE_MAX ? t->info.maximum_block :
			NBD_WRITE_MAX;

	for (uint64_t done = 0; done < len;) {
		uint64_t n = len - done < part ? len - done : part;
		int64_t cookie = write ? nbd_aio_pwrite(t->h, buf + done, n, off + done, NBD_NULL_COMPLETION, flags) :
				 nbd_aio_pread(t->h, buf + done, n, off + done, NBD_NULL_COMPLETION, flags);
		int err;

		if (cookie == -1)
			return nbd_get_errno() ? -nbd_get_errno() : -EIO;
		if ((err = wait_for(t, cookie, spin_ns, write ? "write" : "read")))
			return err;
		done += n;
	}
	return 0;
}

int nbd_target_write(struct nbd_target *t, const void *buf, uint64_t len, uint64_t off, int fua, uint64_t spin_ns)
{
	return in_parts(t, (char *)buf, len, off, 1, fua ? LIBNBD_CMD_FLAG_FUA : 0, spin_ns);
}

int nbd_target_read(struct nbd_target *t, void *buf, uint64_t len, uint64_t off, uint64_t spin_ns)
{
	return in_parts(t, buf, len, off, 0, 0, spin_ns);
}

int nbd_target_flush(struct nbd_target *t, uint64_t spin_ns)
{
	int64_t cookie = nbd_aio_flush(t->h, NBD_NULL_COMPLETION, 0);

	if (cookie == -1)
		return nbd_get_errno() ? -nbd_get_errno() : -EIO;
	return wait_for(t, cookie, spin_ns, "flush");
}

const char *nbd_target_failure(const struct nbd_target *t)
{
	return t && *t->failure ? t->failure : NULL;
}

/* NBD_CMD_DISC when nothing is in flight, so that the server sees a client that left, not a dropped
 * one; given --nbd-timeout to go out. nbd_shutdown() would wait for every reply still due, forever
 * from a server that stalled. */
void nbd_target_close(struct nbd_target *t)
{
	if (!t)
		return;
	if (!t->stalled && nbd_aio_is_ready(t->h) && nbd_aio_in_flight(t->h) == 0 && nbd_aio_disconnect(t->h, 0) == 0) {
		int64_t deadline = now_ms() + (int64_t)t->timeout_s * 1000;

		while (!nbd_aio_is_closed(t->h) && !nbd_aio_is_dead(t->h)) {
			int64_t left = deadline - now_ms();

			if (left <= 0 || nbd_poll(t->h, (int)left) == -1)
				break;
		}
	}
	nbd_close(t->h);
	free(t);
}

#else /* no libnbd: an NBD URI is recognised and refused */

const int nbd_supported = 0;

struct nbd_target *nbd_target_open(const char *opt, const char *uri, int timeout_s)
{
	(void)timeout_s;
	fprintf(stderr, "%s: --%s %s is an NBD URI, and this redo-writer is built without NBD support (libnbd was not "
		"installed at its build; the guests' static binary never has it): on the host, run scripts/bootstrap, "
		"then make -C redo-writer\n", PROG, opt, uri);
	return NULL;
}

const struct nbd_export_info *nbd_target_info(const struct nbd_target *t)
{
	(void)t;
	return NULL;
}

int nbd_target_write(struct nbd_target *t, const void *buf, uint64_t len, uint64_t off, int fua, uint64_t spin_ns)
{
	(void)t, (void)buf, (void)len, (void)off, (void)fua, (void)spin_ns;
	return -ENOTSUP;
}

int nbd_target_flush(struct nbd_target *t, uint64_t spin_ns)
{
	(void)t, (void)spin_ns;
	return -ENOTSUP;
}

int nbd_target_read(struct nbd_target *t, void *buf, uint64_t len, uint64_t off, uint64_t spin_ns)
{
	(void)t, (void)buf, (void)len, (void)off, (void)spin_ns;
	return -ENOTSUP;
}

const char *nbd_target_error(void)
{
	return "built without NBD support";
}

const char *nbd_target_failure(const struct nbd_target *t)
{
	(void)t;
	return NULL;
}

void nbd_target_close(struct nbd_target *t)
{
	(void)t;
}

#endif
