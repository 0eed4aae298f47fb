/* sectorlab-model: an nbdkit filter that makes the plugin under it (the memory plugin: a sparse,
 * throw-away disk in RAM) behave like a modelled device. Each request gets its cost from the model
 * (model.c: queue per channel, write-back cache, read-modify-write, faults), the data goes to the
 * plugin, and the reply waits until the modelled completion time (an absolute CLOCK_MONOTONIC
 * sleep with a 1 ns timer slack). Every request is one line of the trace file.
 *
 *   nbdkit --filter=./sectorlab-model.so memory size=1G write=lognormal:20,60 channels=4 \
 *          trace=/path/disk.trace [read=... flush=... cache-size=... see config_help]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nbdkit-filter.h>

#include "model.h"
#include "unreadable.h"

static struct model model;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *trace_path;
static FILE *trace;
static int64_t t0;
static __thread int slack_set;

/* The write log (`writelog=PATH`, for crash states built from one run: sectorlab/crash/writelog.py):
 * every write and zero whose data landed, as a record of three little-endian 64-bit fields, its
 * arrival (ns, CLOCK_MONOTONIC, as the trace's t_us), offset, and length | op << 32 (op 1 write, 4
 * zero), then a write's bytes. Records follow the landing of the data (the reader orders them by
 * arrival); they have a lock of their own, so that logging never holds up the model's clock. A
 * request whose record cannot be written whole fails, and its part-record is cut off. A trim is
 * not logged (a drive may read the trimmed bytes as they were). The model's disk is blank when it
 * starts, so the log is the disk's whole history. */
#define WRITELOG_MAGIC MODEL_WRITELOG_MAGIC
static char *writelog_path;
static FILE *writelog;
static pthread_mutex_t writelog_lock = PTHREAD_MUTEX_INITIALIZER;

/* A member that fails at a chosen moment (a test's fault, from the host): SIGUSR1 to the daemon and
 * every write, zero, flush and trim fails with EIO from the next request on; SIGUSR2 and they work
 * again. Reads still work. */
static volatile sig_atomic_t fault_switch;

static void on_fault_signal(int sig) { fault_switch = sig == SIGUSR1; }

/* Medium errors, as a power cut leaves them (docs/crash.md): the byte ranges of the file
 * `unreadable=PATH` names (lines "OFFSET LENGTH", read by redo-writer/unreadable.c, the reader
 * `redo-writer verify --unreadable` shares, so that the two never disagree about what a cut left; no
 * file: none), looked at again when it changes (at most every 50 ms). A read that touches one fails
 * with EIO; so does a write that covers one only in part (the drive would have to read it first); a
 * write that covers one whole rewrites it, and it reads again (a drive reallocates the sector). The
 * file is read by a request's thread before it takes the model's lock (a slow or large file holds up
 * that request, never the others), without blocking (a FIFO is refused, not waited on). A file that
 * is refused (a bad line, too large, not a regular file, one of the model's other files) is one error
 * in nbdkit's log, and until it changes every read, write and zero fails with EIO: the model cannot
 * say which ranges a cut left, and a disk that answered as if none were would pass a recovery test
 * that should fail. At start, such a file stops nbdkit from starting. */
#define UNREADABLE_POLL_NS 50000000
static char *unreadable_path;
static pthread_mutex_t unreadable_load_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t unreadable_polled = -UNREADABLE_POLL_NS;  /* these three: under unreadable_load_lock */
static int unreadable_stat_errno;                       /* what stat() said at the last look: 0, ENOENT, ... */
static struct stat unreadable_seen;                     /* and what it saw (when 0) */
static struct unreadable_range *unreadable;             /* these three: under the model's lock */
static size_t unreadable_n;
static int unreadable_refused;

/* The probe's floor on the very disk it probes (sectorlab/probe/measure.py: a floor model served on
 * another disk of the same guest has a path of its own, some tens of microseconds off this one's):
 * while the file `floor=PATH` holds a time in microseconds, every request is answered that long after
 * its arrival, its data still going to the plugin under it, and the model neither costs it nor sees it
 * (its queues, cache, units and faults as they were; no medium error met); without the file, the
 * model. The host writes the file (write_atomic) and takes it away between a probe's turns, when no
 * request is in flight. Looked at by a request's thread before it takes the model's lock (a stat, and a
 * read when it changed), one thread at a time: another meanwhile goes on with the time as it was (only
 * requests at once, never the next one after a switch). The switch holds from the next request on. A file that is not one number from 1 to FLOOR_MAX_US (or not a
 * regular file, or one of the model's other files) is one error in nbdkit's log, and until it changes
 * every request fails with EIO: a probe that took the model's answers for the floor's would subtract
 * the device from itself. At start, such a file stops nbdkit from starting. */
#define FLOOR_MAX_US 10000000.0
#define FLOOR_FILE_MAX 64
static char *floor_path;
static pthread_mutex_t floor_lock = PTHREAD_MUTEX_INITIALIZER;
static int floor_stat_errno = -1;   /* these two: under floor_lock; what stat() said at the last look */
static struct stat floor_seen;
static int64_t floor_ns;            /* 0: the model answers; > 0: the floor's time; -1: refused (written
                                       under floor_lock, read atomically without it) */

/* The files the filter writes, and the one nbdkit serves (the file plugin's file=, which passes
 * through this filter's config on its way down): none of them may be another, by device and inode
 * (a hard link or a symbolic link is the same file under another name). The served file is known by
 * its path as the plugin resolved it when the filter's files are opened; the plugin opens it only per
 * connection, and a filter is handed no plugin's descriptor to compare. */
static char *served_path;
struct own_file {
  const char *key;
  const char *path;
  struct stat st;
  int known;
};
static struct own_file served = {.key = "file"}, trace_file = {.key = "trace"}, writelog_file = {.key = "writelog"};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - t0;
}

static void sleep_abs(int64_t when) {
  int64_t abs = when + t0;
  struct timespec ts = {.tv_sec = abs / 1000000000, .tv_nsec = abs % 1000000000};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* A sleep wakes late: by the timer slack (set to 1 ns here; the default 50 us would blur every
 * microsecond service time) and by the scheduler's wake-up, some 20-40 us in a virtual machine.
 * So the sleep ends `spin_ns` early and the rest is spun on the clock. */
static int64_t spin_ns = -1; /* -1: calibrate */

/* Each worker thread, at its first request: a 1 ns timer slack, and the lowest real-time priority
 * where allowed (root), so that a wake-up preempts the busy QEMU threads beside it at once; a
 * thread spins at most spin_ns, and the kernel's real-time throttling bounds even that. */
static void tune_thread(void) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  struct sched_param sp = {.sched_priority = 1};
  pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); /* not root: ordinary priority */
  slack_set = 1;
}

static void sleep_until(int64_t when) {
  if (!slack_set) tune_thread();
  /* A long sleep wakes later than a short one (measured: ~35 us late at the median after 6 ms,
   * against the 100 us sleeps of the calibration), so the margin grows by 2 % of the wait. */
  int64_t now = now_ns(), margin = spin_ns + (when - now) / 50;
  if (when - margin > now) sleep_abs(when - margin);
  while (now_ns() < when) __builtin_ia32_pause();
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The wake-up's lateness on this host: the 99th percentile of 128 sleeps of 100 us, plus 10 us,
 * 40 to 300 us (a calibration that met only quick wake-ups would leave the p50 late). */
static int64_t calibrate_spin(void) {
  int64_t late[128];
  tune_thread();
  for (int i = 0; i < 128; i++) {
    int64_t want = now_ns() + 100000;
    sleep_abs(want);
    late[i] = now_ns() - want;
  }
  qsort(late, 128, sizeof *late, cmp_i64);
  int64_t spin = late[126] + 10000;
  return spin < 40000 ? 40000 : spin > 300000 ? 300000 : spin;
}

static void model_load(void) {
  struct sigaction sa = {.sa_handler = on_fault_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGUSR2, &sa, NULL);
  model_init(&model);
  t0 = 0;
  t0 = now_ns();
}

static void model_unload(void) {
  if (trace) fclose(trace);
  if (writelog) fclose(writelog);
  free(trace_path);
  free(writelog_path);
  free(unreadable_path);
  free(floor_path);
  free(served_path);
  free(unreadable);
}

static int same_inode(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Which of the model's other files (or the served one) `st` is; NULL: none. */
static const struct own_file *own_file_of(const struct stat *st) {
  const struct own_file *files[] = {&served, &trace_file, &writelog_file};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    if (files[i]->known && same_inode(&files[i]->st, st)) return files[i];
  return NULL;
}

/* Says of `key`=`path` that it is `other` (the served file, or another of the filter's files). */
static void refuse_same_file(const char *key, const char *path, const struct own_file *other) {
  if (other == &served)
    nbdkit_error("%s=%s is the disk nbdkit serves (file=%s; the same device and inode): expected a file of "
                 "its own; give %s= another path", key, path, other->path, key);
  else
    nbdkit_error("%s=%s is the same file as %s=%s (the same device and inode): expected a file of its own; give "
                 "%s= another path", key, path, other->key, other->path, key);
}

/* Why a file the model reads is refused for being `other` (the served disk or another of its files),
 * in the words that follow its name. */
static void same_file_why(char *why, size_t size, const struct own_file *other) {
  if (other == &served)
    snprintf(why, size, "is the disk nbdkit serves (file=%s; the same device and inode): expected a file of its own",
             other->path);
  else
    snprintf(why, size, "is the same file as %s=%s (the same device and inode): expected a file of its own",
             other->key, other->path);
}

/* The unreadable= file as it is now: 0 and its ranges in *list (none when there is no file), or -1
 * with what is wrong in `why` (the words that follow its name). */
static int unreadable_read(struct unreadable_list *list, char *why, size_t size, struct stat *st) {
  memset(st, 0, sizeof *st);
  enum unreadable_status status = unreadable_load(unreadable_path, list, why, size, st);
  const struct own_file *other = st->st_mode ? own_file_of(st) : NULL;
  if (other) {  /* before what its bytes say: a served disk is no list of ranges */
    free(list->range);
    list->range = NULL;
    list->n = 0;
    same_file_why(why, size, other);
    return -1;
  }
  return status == UNREADABLE_OK || status == UNREADABLE_ABSENT ? 0 : -1;
}

/* Puts the ranges read into force, under the model's lock. */
static void unreadable_install(struct unreadable_list *list, int refused) {
  pthread_mutex_lock(&lock);
  struct unreadable_range *old = unreadable;
  unreadable = list->range;
  unreadable_n = list->n;
  unreadable_refused = refused;
  pthread_mutex_unlock(&lock);
  free(old);
}

/* What stat() says of the unreadable= file now: 0 with *st, or its errno (ENOENT: there is none). */
static int unreadable_stat(struct stat *st) {
  if (stat(unreadable_path, st) == 0) return 0;
  int err = errno ? errno : EIO;
  memset(st, 0, sizeof *st);
  return err;
}

/* Whether the file stat() sees now (`err`, `st`) may be another than at the last look: another
 * name, size or time, or another answer from stat() itself (it appeared, went away, or its directory
 * stopped being searchable). */
static int stat_changed(int err, const struct stat *st, int seen_err, const struct stat *seen) {
  if (err != seen_err) return 1;
  return !err && (!same_inode(st, seen) || st->st_size != seen->st_size || st->st_mtim.tv_sec != seen->st_mtim.tv_sec ||
                  st->st_mtim.tv_nsec != seen->st_mtim.tv_nsec);
}

static int unreadable_changed(int err, const struct stat *st) {
  return stat_changed(err, st, unreadable_stat_errno, &unreadable_seen);
}

/* Called before the model's lock is taken: the ranges of the file, read again if it changed
 * (write_atomic renames a new file over it). One request's thread looks at a time; the others go on
 * with the ranges as they are. What the next look compares with is what stat() said this time, read
 * or refused: a file that cannot be opened (EACCES) has no fstat, and one that is refused is the same
 * file until stat() sees another, so an unchanged bad file is said once, not read and said again at
 * every look. */
static void unreadable_refresh(void) {
  if (!unreadable_path || pthread_mutex_trylock(&unreadable_load_lock)) return;
  int64_t now = now_ns();
  if (now - unreadable_polled >= UNREADABLE_POLL_NS) {
    unreadable_polled = now;
    struct stat st, opened;
    int err = unreadable_stat(&st);
    if (unreadable_changed(err, &st)) {
      struct unreadable_list list;
      char why[256];
      int refused = unreadable_read(&list, why, sizeof why, &opened) != 0;
      unreadable_stat_errno = err;
      unreadable_seen = st;
      if (refused)
        nbdkit_error("unreadable=%s %s: every read, write and zero fails with EIO until the file is good again "
                     "or removed", unreadable_path, why);
      else
        nbdkit_debug("unreadable=%s: %zu ranges", unreadable_path, list.n);
      unreadable_install(&list, refused);
    }
  }
  pthread_mutex_unlock(&unreadable_load_lock);
}

/* Called with the lock held: EIO when the request meets a medium error, as the docs above say; a
 * write that covers a range whole takes it away. */
static int unreadable_meets(enum op op, uint64_t offset, uint32_t count) {
  uint64_t end = offset + count;
  int error = 0;
  if (unreadable_refused) return EIO;
  for (size_t i = 0; i < unreadable_n;) {
    uint64_t a = unreadable[i].offset, b = a + unreadable[i].length;
    if (b <= offset || a >= end) {
      i++;
      continue;
    }
    if (op == OP_READ || a < offset || b > end) {
      error = EIO;
      i++;
      continue;
    }
    unreadable[i] = unreadable[--unreadable_n];  /* rewritten whole */
  }
  return error;
}

/* The floor= file as it is now: its time in ns (> 0), or -1 with what is wrong in `why` (the words
 * that follow its name). */
static int64_t floor_read(char *why, size_t size) {
  int fd = open(floor_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, size, "%s", errno == ELOOP ? "is a symbolic link: expected a regular file (it is not followed)"
                                             : strerror(errno));
    return -1;
  }
  struct stat st;
  char text[FLOOR_FILE_MAX + 1];
  ssize_t got = -1;
  const struct own_file *other = NULL;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode))
    snprintf(why, size, "is not a regular file: expected one holding a time in microseconds");
  else if ((other = own_file_of(&st)))
    same_file_why(why, size, other);
  else if (st.st_size > FLOOR_FILE_MAX)
    snprintf(why, size, "holds %jd bytes: expected one time in microseconds (at most %d bytes)",
             (intmax_t)st.st_size, FLOOR_FILE_MAX);
  else if ((got = read(fd, text, FLOOR_FILE_MAX)) < 0)
    snprintf(why, size, "%s", strerror(errno));
  close(fd);
  if (got < 0) return -1;
  text[got] = 0;
  double us;
  int took = model_parse_decimal(text, &us);
  if (!took || strspn(text + took, "\n") != strlen(text + took) || !(us >= 1 && us <= FLOOR_MAX_US)) {
    snprintf(why, size, "holds \"%.*s\": expected one time in microseconds, 1 to %.0f", (int)strcspn(text, "\n"),
             text, FLOOR_MAX_US);
    return -1;
  }
  return (int64_t)(us * 1000);
}

/* Looks at the floor= file again (under floor_lock, or before nbdkit serves): what stat() says now
 * becomes what the next look compares with, and the time it holds floor_ns; -1 with what is wrong in
 * `why` when it is refused, said in nbdkit's log with `then` after it. */
static int64_t floor_look(char *why, size_t size, const char *then) {
  struct stat st;
  int err = stat(floor_path, &st) == 0 ? 0 : errno ? errno : EIO;
  if (floor_stat_errno >= 0 && !stat_changed(err, &st, floor_stat_errno, &floor_seen)) return floor_ns;
  floor_stat_errno = err;
  if (!err) floor_seen = st;
  if (err && err != ENOENT) snprintf(why, size, "%s", strerror(err));
  __atomic_store_n(&floor_ns, err == ENOENT ? 0 : err ? -1 : floor_read(why, size), __ATOMIC_RELEASE);
  if (floor_ns < 0)
    nbdkit_error("floor=%s %s%s", floor_path, why, then);
  return floor_ns;
}

/* The floor's time now: 0 (the model answers), its ns, or -1 (refused: EIO). Read again when stat()
 * sees another file than at the last look (another answer, name, size or time). */
static int64_t floor_now(void) {
  if (!floor_path) return 0;
  if (pthread_mutex_trylock(&floor_lock)) return __atomic_load_n(&floor_ns, __ATOMIC_ACQUIRE);
  char why[256];
  int64_t out = floor_look(why, sizeof why,
                           ": every request fails with EIO until the file is good again or removed");
  pthread_mutex_unlock(&floor_lock);
  return out;
}

static int model_config(nbdkit_next_config *next, nbdkit_backend *nxdata, const char *key, const char *value) {
  if (strcmp(key, "spin-us") == 0) {
    double us;
    int took = model_parse_decimal(value, &us);
    if (!took || value[took] || !(us >= 0 && us <= 1000)) {
      nbdkit_error("spin-us=%s: expected microseconds, 0 to 1000", value);
      return -1;
    }
    spin_ns = (int64_t)(us * 1000);
    return 0;
  }
  if (strcmp(key, "trace") == 0) {
    free(trace_path);
    trace_path = strdup(value);
    return trace_path ? 0 : -1;
  }
  if (strcmp(key, "writelog") == 0) {
    free(writelog_path);
    writelog_path = strdup(value);
    return writelog_path ? 0 : -1;
  }
  if (strcmp(key, "floor") == 0) {
    free(floor_path);
    floor_path = strdup(value);
    return floor_path ? 0 : -1;
  }
  if (strcmp(key, "unreadable") == 0) {
    free(unreadable_path);
    unreadable_path = strdup(value);
    return unreadable_path ? 0 : -1;
  }
  if (strcmp(key, "file") == 0) {  /* the file plugin's: remembered, and passed on */
    free(served_path);
    if (!(served_path = strdup(value))) return -1;
    return next(nxdata, key, value);
  }
  const char *why = model_set(&model, key, value);
  if (why == MODEL_NOT_MINE) return next(nxdata, key, value);
  if (why) {
    nbdkit_error("%s=%s: %s", key, value, why);
    return -1;
  }
  return 0;
}

static int model_config_complete(nbdkit_next_config_complete *next, nbdkit_backend *nxdata) {
  const char *why = model_check(&model);
  if (why) {
    nbdkit_error("device model: %s", why);
    return -1;
  }
  model_reset(&model);
  return next(nxdata);
}

/* A file the model writes (key=PATH): never through a symlink, never blocking on a FIFO, only ever
 * a regular file. Opened without emptying it: it is emptied only once it is known to be none of the
 * model's other files and not the disk nbdkit serves (model_get_ready). The descriptor, or -1 after
 * one error line; *created when the open made the file. */
static int open_output(struct own_file *f, int *created) {
  struct stat st;
  const char *key = f->key, *path = f->path;
  *created = 0;
  if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    nbdkit_error("%s=%s: %s: expected a regular file%s", key, path,
                 S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode)
                 ? "a directory" : "a device or special file", S_ISLNK(st.st_mode) ? " (it is not followed)" : "");
    return -1;
  }
  const int flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  int fd = open(path, flags | O_CREAT | O_EXCL, 0644);
  if (fd >= 0)
    *created = 1;
  else if (errno == EEXIST)
    fd = open(path, flags);
  if (fd < 0) {
    nbdkit_error("%s=%s: %s", key, path,
                 errno == ELOOP ? "a symbolic link: expected a regular file (it is not followed)" : strerror(errno));
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fstat(fd, &f->st) || !S_ISREG(f->st.st_mode) || fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
    nbdkit_error("%s=%s: %s", key, path,
                 fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) ? "not a regular file: expected a regular file"
                                                              : strerror(errno));
    close(fd);
    return -1;
  }
  f->known = 1;
  return fd;
}

/* An output checked by open_files, emptied and given its first line: its stream, or NULL after one
 * error line (the descriptor is then closed). */
static FILE *start_output(int fd, const char *key, const char *path, const char *first_line) {
  FILE *f = NULL;
  if (ftruncate(fd, 0) || !(f = fdopen(fd, "w")) || fputs(first_line, f) == EOF || fflush(f)) {
    nbdkit_error("%s=%s: %s", key, path, strerror(errno));
    if (f) fclose(f);
    else close(fd);
    return NULL;
  }
  return f;
}

static const char trace_header[] = MODEL_TRACE_HEADER;

/* The filter's files, checked against each other and the served disk before any is emptied or
 * written: the trace, the write log, and the unreadable= ranges as they are at start; then the write
 * log and the trace emptied and started (`writelog` and `trace`). 0, or -1 after one error line, with
 * nothing left open and the files it made taken away again, whatever step failed. */
static int open_files(void) {
  struct own_file *outputs[] = {&writelog_file, &trace_file};
  FILE **streams[] = {&writelog, &trace};
  const char *first_lines[] = {WRITELOG_MAGIC, trace_header};
  int fds[2] = {-1, -1}, created[2] = {0, 0};
  struct unreadable_list list = {NULL, 0};
  writelog_file.path = writelog_path;
  trace_file.path = trace_path;
  served.path = served_path;
  served.known = served_path && stat(served_path, &served.st) == 0;  /* else the plugin has refused it */
  for (int i = 0; i < 2; i++) {
    if (!outputs[i]->path) continue;
    if ((fds[i] = open_output(outputs[i], &created[i])) < 0) goto refused;
    outputs[i]->known = 0;  /* not compared with itself */
    const struct own_file *other = own_file_of(&outputs[i]->st);
    outputs[i]->known = 1;
    if (other) {
      refuse_same_file(outputs[i]->key, outputs[i]->path, other);
      goto refused;
    }
  }
  if (unreadable_path) {
    char why[256];
    struct stat opened;
    unreadable_stat_errno = unreadable_stat(&unreadable_seen);  /* what the first look compares with */
    if (unreadable_read(&list, why, sizeof why, &opened)) {
      nbdkit_error("unreadable=%s %s", unreadable_path, why);
      goto refused;
    }
  }
  if (floor_path) {
    char why[256];
    if (floor_look(why, sizeof why, "") < 0) goto refused;
  }
  for (int i = 0; i < 2; i++) {
    if (fds[i] < 0) continue;
    *streams[i] = start_output(fds[i], outputs[i]->key, outputs[i]->path, first_lines[i]);
    fds[i] = -1;  /* the stream's now, or closed */
    if (!*streams[i]) goto refused;
  }
  if (unreadable_path) {
    unreadable_polled = now_ns();
    unreadable_install(&list, 0);
  }
  return 0;
refused:
  free(list.range);
  for (int i = 0; i < 2; i++) {
    if (*streams[i]) fclose(*streams[i]);
    *streams[i] = NULL;
    if (fds[i] >= 0) close(fds[i]);
    if (created[i]) unlink(outputs[i]->path);
  }
  return -1;
}

static int model_get_ready(int thread_model) {
  (void)thread_model;
  if (open_files()) return -1;
  if (spin_ns < 0) spin_ns = calibrate_spin();
  fprintf(stderr, "sectorlab-model: sleeps end %.1f us early and spin the rest (spin-us)\n", spin_ns / 1e3);
  return 0;
}

/* A write or zero whose data landed: its record in the log; -1 (and *err) when the record could not
 * be written whole (a crash state built from the log would be wrong): it is cut off again. */
static int writelog_record(enum op op, uint64_t offset, uint32_t count, const void *buf, int64_t arrival,
                           int *err) {
  if (!writelog) return 0;
  uint64_t head[3] = {(uint64_t)(arrival + t0), offset, (uint64_t)count | (uint64_t)op << 32};
  int r = 0;
  pthread_mutex_lock(&writelog_lock);
  off_t at = ftello(writelog);
  if (fwrite(head, sizeof head, 1, writelog) != 1 || (buf && count && fwrite(buf, count, 1, writelog) != 1) ||
      fflush(writelog)) {
    nbdkit_error("writelog=%s: %s", writelog_path, strerror(errno));
    clearerr(writelog);
    if (at < 0 || ftruncate(fileno(writelog), at) || fseeko(writelog, at, SEEK_SET)) {
      nbdkit_error("writelog=%s: its last record cannot be cut off: no more records", writelog_path);
      fclose(writelog);
      writelog = NULL;
    }
    *err = EIO;
    r = -1;
  }
  pthread_mutex_unlock(&writelog_lock);
  return r;
}


/* The model's cost of the request; the data operation; the wait; the trace line (its arrival time on
 * the host's CLOCK_MONOTONIC, so that the traces of two disks, a race's members, line up). */
static int serve(enum op op, uint64_t offset, uint32_t count, uint32_t flags, int data_result, int *err,
                 int64_t arrival, struct cost c) {
  if (c.error) {
    *err = c.error;
    data_result = -1;
  } else if (data_result == 0) {
    sleep_until(c.answered);
  }
  int64_t finished = now_ns();
  if (trace) {
    /* served: from the answering medium's start to the reply, against its service time */
    pthread_mutex_lock(&lock);
    model_trace_line(trace, t0, op, offset, count, (flags & NBDKIT_FLAG_FUA) != 0, arrival, finished, &c,
                     c.error ? c.error : (data_result ? *err : 0));
    fflush(trace);
    pthread_mutex_unlock(&lock);
  }
  return data_result;
}

/* A request the floor answers: `floor` (ns) after its arrival, or EIO (-1: the floor file refused). */
static struct cost floor_cost(enum op op, int64_t arrival, int64_t floor) {
  struct cost c = {.start = arrival, .done = arrival + (floor > 0 ? floor : 0), .flashlog_start = -1,
                   .flashlog_done = -1, .durable = -1, .media = -1, .flashlog_first = -1};
  c.answered = c.done;
  if (floor < 0) c.error = EIO;
  else if (op == OP_WRITE || op == OP_ZERO) c.durable = c.done;
  return c;
}

static struct cost cost_of(enum op op, uint64_t offset, uint32_t count, uint32_t flags, int64_t *arrival) {
  int64_t floor = floor_now();
  if (floor) {  /* the model's state is not touched: no lock */
    *arrival = now_ns();
    return floor_cost(op, *arrival, floor);
  }
  unreadable_refresh();
  pthread_mutex_lock(&lock);
  model.failed = fault_switch;
  *arrival = now_ns();
  struct cost c = model_request(&model, op, offset, count, (flags & NBDKIT_FLAG_FUA) != 0, *arrival);
  if (!c.error && (op == OP_READ || op == OP_WRITE || op == OP_ZERO)) c.error = unreadable_meets(op, offset, count);
  pthread_mutex_unlock(&lock);
  return c;
}

static int model_pread(nbdkit_next *next, void *handle, void *buf, uint32_t count, uint64_t offset,
                       uint32_t flags, int *err) {
  (void)handle;
  int64_t arrival;
  struct cost c = cost_of(OP_READ, offset, count, flags, &arrival);
  int r = c.error ? -1 : next->pread(next, buf, count, offset, flags, err);
  return serve(OP_READ, offset, count, flags, r, err, arrival, c);
}

static int model_pwrite(nbdkit_next *next, void *handle, const void *buf, uint32_t count, uint64_t offset,
                        uint32_t flags, int *err) {
  (void)handle;
  int64_t arrival;
  struct cost c = cost_of(OP_WRITE, offset, count, flags, &arrival);
  int r = c.error ? -1 : next->pwrite(next, buf, count, offset, flags, err);
  if (r == 0) r = writelog_record(OP_WRITE, offset, count, buf, arrival, err);
  return serve(OP_WRITE, offset, count, flags, r, err, arrival, c);
}

static int model_flush(nbdkit_next *next, void *handle, uint32_t flags, int *err) {
  (void)handle;
  int64_t arrival;
  struct cost c = cost_of(OP_FLUSH, 0, 0, flags, &arrival);
  int r = c.error ? -1 : next->flush(next, flags, err);
  return serve(OP_FLUSH, 0, 0, flags, r, err, arrival, c);
}

static int model_trim(nbdkit_next *next, void *handle, uint32_t count, uint64_t offset, uint32_t flags,
                      int *err) {
  (void)handle;
  int64_t arrival;
  struct cost c = cost_of(OP_TRIM, offset, count, flags, &arrival);
  int r = c.error ? -1 : next->trim(next, count, offset, flags, err);
  return serve(OP_TRIM, offset, count, flags, r, err, arrival, c);
}

static int model_zero(nbdkit_next *next, void *handle, uint32_t count, uint64_t offset, uint32_t flags,
                      int *err) {
  (void)handle;
  int64_t arrival;
  struct cost c = cost_of(OP_ZERO, offset, count, flags, &arrival);
  int r = c.error ? -1 : next->zero(next, count, offset, flags, err);
  if (r == 0) r = writelog_record(OP_ZERO, offset, count, NULL, arrival, err);
  return serve(OP_ZERO, offset, count, flags, r, err, arrival, c);
}

/* FUA reaches the filter as a flag of its own (behind a volatile cache it decides the cost); the
 * plugin under it is asked too, so that nbdkit knows what it may pass down. */
static int model_can_fua(nbdkit_next *next, void *handle) {
  (void)handle;
  if (next->can_fua(next) != NBDKIT_FUA_NATIVE) {
    nbdkit_error("device model: the plugin under it does not take FUA natively (the memory plugin does)");
    return -1;
  }
  return NBDKIT_FUA_NATIVE;
}

static int model_can_flush(nbdkit_next *next, void *handle) {
  (void)handle;
  return next->can_flush(next);
}

static struct nbdkit_filter filter = {
    .name = "sectorlab-model",
    .longname = "sectorlab device model",
    .load = model_load,
    .unload = model_unload,
    .config = model_config,
    .config_complete = model_config_complete,
    .config_help = "read=DIST write=DIST flush=DIST  service times (fixed:US normal:MEAN,SD lognormal:MEDIAN,P99"
                   " pct:P=US,...,100=US)\n"
                   "read-mbps=N write-mbps=N  transfer rate added per byte; channels=N stripe=BYTES\n"
                   "cache-size=BYTES cache-destage-mbps=N cache-hit=DIST cache-plp=BOOL  a write-back cache\n"
                   "physical-sector=BYTES write-unit=BYTES  partial writes read first\n"
                   "write-buffer=BYTES  the units written last, merged in DRAM (no read)\n"
                   "flashlog.KEY=VALUE  a flash log: writes and flushes go to it too, done at the first\n"
                   "fail-after-writes=N fail-after-seconds=S  EIO from then on (and SIGUSR1 to the daemon:\n"
                   "  from now on, SIGUSR2: no more); seed=N trace=FILE\n"
                   "writelog=FILE  every write's arrival, place and bytes, for crash states\n"
                   "unreadable=FILE  medium errors: lines OFFSET LENGTH (read again when the file changes)\n"
                   "floor=FILE  while it holds a time in us, every request answered that long after it\n"
                   "  arrives, the model bypassed (the probe's floor on the disk it probes)\n"
                   "spin-us=US  how early a sleep ends to spin the rest (default: calibrated at start)",
    .get_ready = model_get_ready,
    .pread = model_pread,
    .pwrite = model_pwrite,
    .flush = model_flush,
    .trim = model_trim,
    .zero = model_zero,
    .can_fua = model_can_fua,
    .can_flush = model_can_flush,
};

NBDKIT_REGISTER_FILTER(filter)
