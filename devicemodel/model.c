/* The device model's arithmetic: distributions, queues, the write-back cache, partial writes,
 * faults. Virtual time in nanoseconds; nothing here sleeps or locks (model.h). */
#include "model.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_US 1000.0
#define Z99 2.3263478740408408 /* the standard normal's 99th percentile */

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t *rng) { /* in (0, 1) */
  return ((double)(splitmix64(rng) >> 11) + 0.5) / 9007199254740992.0;
}

static double std_normal(uint64_t *rng) { /* Box-Muller, one of the pair */
  return sqrt(-2.0 * log(uniform01(rng))) * cos(2.0 * M_PI * uniform01(rng));
}

int model_parse_decimal(const char *text, double *out) {
  const char *p = text;
  char buf[64];
  size_t digits = 0;
  if (*p == '-' || *p == '+') p++;
  for (; *p >= '0' && *p <= '9'; p++) digits++;
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++) digits++;
  if (!digits) return 0;
  if (*p == 'e' || *p == 'E') {
    const char *q = p + 1;
    if (*q == '-' || *q == '+') q++;
    if (*q >= '0' && *q <= '9') {
      while (*q >= '0' && *q <= '9') q++;
      p = q;
    }
  }
  size_t n = (size_t)(p - text);
  if (n >= sizeof buf) return 0;
  memcpy(buf, text, n);
  buf[n] = '\0';
  *out = strtod(buf, NULL);
  return isfinite(*out) ? (int)n : 0;
}

static int parse_numbers(const char *text, double *out, int want) {
  for (int i = 0; i < want; i++) {
    int n = model_parse_decimal(text, &out[i]);
    if (!n) return -1;
    text += n;
    if (i < want - 1) {
      if (*text != ',') return -1;
      text++;
    }
  }
  return *text == '\0' ? 0 : -1;
}

static const char *parse_points(struct dist *d, const char *text) {
  d->points = 0;
  while (*text) {
    if (d->points == MODEL_MAX_POINTS) return "more than 16 percentile points";
    double p, v;
    int n = model_parse_decimal(text, &p);
    if (!n || text[n] != '=') return "percentile points are P=MICROSECONDS (decimal numbers), separated by commas";
    text += n + 1;
    n = model_parse_decimal(text, &v);
    if (!n) return "percentile points are P=MICROSECONDS (decimal numbers), separated by commas";
    const char *end = text + n;
    if (!(p > 0 && p <= 100)) return "a percentile is above 0 and at most 100";
    if (v < 0) return "times are not negative";
    if (d->points > 0 && (p <= d->p[d->points - 1] || v < d->v[d->points - 1]))
      return "percentile points rise: each P and its time at least the previous one's";
    d->p[d->points] = p;
    d->v[d->points] = v;
    d->points++;
    text = end;
    if (*text == ',') text++;
    else if (*text) return "percentile points are P=MICROSECONDS, separated by commas";
  }
  if (d->points < 1 || d->p[d->points - 1] != 100) return "percentile points end with 100=MAXIMUM";
  return NULL;
}

const char *dist_parse(struct dist *d, const char *text) {
  double n[2] = {0, 0};
  memset(d, 0, sizeof *d);
  if (strncmp(text, "fixed:", 6) == 0) {
    if (parse_numbers(text + 6, n, 1) < 0) return "fixed:MICROSECONDS";
    d->kind = DIST_FIXED;
    d->a = n[0];
  } else if (strncmp(text, "normal:", 7) == 0) {
    if (parse_numbers(text + 7, n, 2) < 0) return "normal:MEAN,SD (microseconds)";
    if (n[1] < 0) return "normal: the standard deviation is not negative";
    d->kind = DIST_NORMAL;
    d->a = n[0];
    d->b = n[1];
  } else if (strncmp(text, "lognormal:", 10) == 0) {
    if (parse_numbers(text + 10, n, 2) < 0) return "lognormal:MEDIAN,P99 (microseconds)";
    if (!(n[0] > 0) || n[1] < n[0]) return "lognormal: the median is above 0 and the 99th percentile not below it";
    d->kind = DIST_LOGNORMAL;
    d->a = log(n[0]);
    d->b = log(n[1] / n[0]) / Z99;
  } else if (strncmp(text, "pct:", 4) == 0) {
    const char *why = parse_points(d, text + 4);
    if (why) return why;
    d->kind = DIST_PERCENTILES;
    d->a = d->v[0];
  } else {
    return "a distribution is fixed:US, normal:MEAN,SD, lognormal:MEDIAN,P99 or pct:P=US,...,100=US";
  }
  double low = d->kind == DIST_LOGNORMAL ? exp(d->a) : d->a;
  double high = d->kind == DIST_PERCENTILES ? d->v[d->points - 1]
              : d->kind == DIST_LOGNORMAL   ? n[1]
              : d->kind == DIST_NORMAL      ? d->a + 3 * d->b : d->a;
  if (low < 0) return "times are not negative";
  if (high > MODEL_MAX_US) return "times above 10 s (10000000 us) are not a disk's";
  return NULL;
}

static double dist_draw(const struct dist *d, uint64_t *rng) {
  switch (d->kind) {
  case DIST_FIXED: return d->a;
  case DIST_NORMAL: {
    double x = d->a + d->b * std_normal(rng);
    return x > 0 ? x : 0;
  }
  case DIST_LOGNORMAL: return exp(d->a + d->b * std_normal(rng));
  case DIST_PERCENTILES: {
    double u = 100.0 * uniform01(rng);
    if (u <= d->p[0]) return d->v[0];
    for (int i = 1; i < d->points; i++)
      if (u <= d->p[i])
        return d->v[i - 1] + (d->v[i] - d->v[i - 1]) * (u - d->p[i - 1]) / (d->p[i] - d->p[i - 1]);
    return d->v[d->points - 1];
  }
  default: return 0;
  }
}

/* A lognormal's tail (or a normal's) can go past any bound, to infinity with a tiny median: no draw
 * is longer than the longest time a disk is modelled with, nor negative. */
double dist_sample(const struct dist *d, uint64_t *rng) {
  double x = dist_draw(d, rng);
  return x > 0 ? (x < MODEL_MAX_US ? x : MODEL_MAX_US) : 0;
}

uint32_t model_minimum_io(const struct model *m) {
  return m->write_unit > m->physical_sector ? m->write_unit : m->physical_sector;
}

void model_init(struct model *m) {
  memset(m, 0, sizeof *m);
  m->channels = 1;
  m->seed = 1;
  model_reset(m);
}

/* The flash log's draws are its own stream, from its disk's seed unless it has one of its own. */
#define FLASHLOG_SEED_OFFSET 0x9e3779b97f4a7c15ULL

void model_reset(struct model *m) {
  if (m->flashlog) {
    if (!m->flashlog->seed_set) m->flashlog->seed = m->seed + FLASHLOG_SEED_OFFSET;
    model_reset(m->flashlog);
  }
  m->rng = m->seed;
  memset(m->free_at, 0, sizeof m->free_at);
  m->dirty = 0;
  m->dirty_at = 0;
  m->last_durable = 0;
  m->first_at = -1;
  m->writes = 0;
  m->buffered = 0;
  m->buffer_clock = 0;
}

const char *model_check(const struct model *m) {
  if (m->channels < 1 || m->channels > MODEL_MAX_CHANNELS) return "channels is 1 to 64";
  const double mbps[] = {m->read_mbps, m->write_mbps, m->destage_mbps};
  for (int i = 0; i < 3; i++)
    if (!(mbps[i] == 0 || (mbps[i] >= MODEL_MIN_MBPS && mbps[i] <= MODEL_MAX_MBPS)))
      return "a bandwidth is 0 (none) or 0.001 to 1000000 MB/s";
  if (m->cache_bytes && !(m->destage_mbps > 0)) return "a cache needs cache-destage-mbps (how fast it drains)";
  if (!m->cache_bytes && (m->destage_mbps > 0 || m->cache_hit.kind != DIST_NONE))
    return "cache-destage-mbps and cache-hit need cache-size";
  if ((m->lies_fua || m->lies_flush) && !m->cache_bytes)
    return "lies-about needs a volatile cache: expected cache-size (and cache-plp=false) too, or lies-about=none";
  if ((m->lies_fua || m->lies_flush) && m->cache_plp)
    return "lies-about needs a volatile cache: cache-plp=true is durable at once, nothing to lie about; expected "
           "cache-plp=false or lies-about=none";
  if (m->hold_us > 0 && !m->lies_flush) {
    static char why[200];  /* checked once, before any request */
    snprintf(why, sizeof why, "cache-hold-us=%g needs lies-about=flush or fua,flush (got %s): an honest flush "
             "writes the cache out at once", m->hold_us, m->lies_fua ? "fua" : "none");
    return why;
  }
  uint32_t u = m->physical_sector;
  if (u && (u < 512 || u > MODEL_MAX_SECTOR || (u & (u - 1))))
    return "physical-sector is a power of two, 512 or more (at most 65536)";
  if (m->write_unit && (m->write_unit % 512 || m->write_unit > MODEL_MAX_UNIT))
    return "write-unit is a multiple of 512 (at most 64M)";
  if (m->write_buffer && !m->write_unit) return "write-buffer needs write-unit (it holds write units)";
  /* A buffer of part of a unit would be rounded down unsaid (it holds whole units): said with the
   * nearest multiples it can hold, before the count of units (a buffer below one unit is of part of one). */
  if (m->write_buffer && m->write_buffer % m->write_unit &&
      m->write_buffer / m->write_unit <= MODEL_MAX_BUFFER_UNITS) {
    static char why[240];  /* checked once, before any request */
    unsigned long long b = m->write_buffer, u = m->write_unit, low = b / u * u;
    if (!low)
      snprintf(why, sizeof why, "write-buffer=%llu is not a whole number of write-unit=%llu units: expected a "
               "multiple of %llu, such as %llu or 0 (no buffer)", b, u, u, u);
    else if (low / u == MODEL_MAX_BUFFER_UNITS)
      snprintf(why, sizeof why, "write-buffer=%llu is not a whole number of write-unit=%llu units: expected a "
               "multiple of %llu, such as %llu (%d units, the most it holds)", b, u, u, low, MODEL_MAX_BUFFER_UNITS);
    else
      snprintf(why, sizeof why, "write-buffer=%llu is not a whole number of write-unit=%llu units: expected a "
               "multiple of %llu, such as %llu or %llu", b, u, u, low, low + u);
    return why;
  }
  if (m->write_buffer && m->write_buffer / m->write_unit > MODEL_MAX_BUFFER_UNITS)
    return "write-buffer holds 1 to 4096 write units";
  if (m->stripe > MODEL_MAX_STRIPE) return "stripe is at most 1G";
  if (m->cache_bytes > MODEL_MAX_CACHE) return "cache-size is at most 1T";
  if (!(m->fail_after_seconds >= 0 && m->fail_after_seconds <= MODEL_MAX_FAIL_SECONDS))
    return "fail-after-seconds is 0 (never) to 1000000";
  if (m->flashlog) {
    static char why[320];  /* the write buffer's line fits, after its prefix */
    const char *sub = m->flashlog->write.kind == DIST_NONE
                          ? "it has no write time: give " MODEL_FLASHLOG "write (a flash log that writes in no time "
                            "would answer every write first)"
                          : model_check(m->flashlog);
    if (sub) {
      snprintf(why, sizeof why, "the flash log (" MODEL_FLASHLOG "*): %s", sub);
      return why;
    }
  }
  return NULL;
}

/* Units of `unit` bytes that [offset, offset+length) covers only in part: its first and its last,
 * or the one unit it lies in. */
static uint32_t partial_units(uint32_t unit, uint64_t offset, uint32_t length) {
  if (!unit || !length) return 0;
  uint64_t end = offset + length;
  int head = offset % unit != 0, tail = end % unit != 0;
  if (offset / unit == (end - 1) / unit) return head || tail;
  return (uint32_t)(head + tail);
}

/* The write buffer: is this unit in it (its slot, or -1)? */
static int buffer_find(const struct model *m, uint64_t unit) {
  for (uint32_t i = 0; i < m->buffered; i++)
    if (m->buffer_unit[i] == unit) return (int)i;
  return -1;
}

/* The unit was just written: it is the buffer's newest, the least recently written one leaving
 * when the buffer is full. */
static void buffer_put(struct model *m, uint64_t unit) {
  int i = buffer_find(m, unit);
  if (i < 0) {
    uint32_t capacity = (uint32_t)(m->write_buffer / m->write_unit);
    if (m->buffered < capacity) i = (int)m->buffered++;
    else {
      i = 0;
      for (uint32_t j = 1; j < m->buffered; j++)
        if (m->buffer_stamp[j] < m->buffer_stamp[i]) i = (int)j;
    }
    m->buffer_unit[i] = unit;
  }
  m->buffer_stamp[i] = ++m->buffer_clock;
}

/* Partly written units the write buffer holds (merged there, not read): the first and the last of
 * [offset, offset+length) where each is partial; then every unit written goes into the buffer (at
 * most its capacity, the last ones). */
static uint32_t buffer_write(struct model *m, uint64_t offset, uint32_t length) {
  if (!m->write_buffer || !length) return 0;
  uint64_t unit = m->write_unit, first = offset / unit, last = (offset + length - 1) / unit;
  uint32_t hits = 0;
  if (offset % unit && buffer_find(m, first) >= 0) hits++;
  if ((offset + length) % unit && last != first && buffer_find(m, last) >= 0) hits++;
  else if ((offset + length) % unit && last == first && !(offset % unit) && buffer_find(m, first) >= 0) hits++;
  uint64_t capacity = m->write_buffer / unit, from = last - first + 1 > capacity ? last + 1 - capacity : first;
  for (uint64_t u = from; u <= last; u++) buffer_put(m, u);
  return hits;
}

static int64_t us_to_ns(double us) { return (int64_t)llround(us * NS_PER_US); }

static int64_t transfer_ns(double mbps, uint32_t length) { /* MB = 10^6 bytes, as datasheets count */
  return mbps > 0 ? (int64_t)llround(length / mbps * 1000.0) : 0;
}

static int pick_channel(const struct model *m, uint64_t offset) {
  if (m->stripe) return (int)(offset / m->stripe % (uint64_t)m->channels);
  int best = 0;
  for (int c = 1; c < m->channels; c++)
    if (m->free_at[c] < m->free_at[best]) best = c;
  return best;
}

/* The media serve the request on one channel, in its FIFO order. */
static void on_media(struct model *m, struct cost *c, int64_t now, int64_t service, uint64_t offset) {
  c->channel = pick_channel(m, offset);
  c->start = now > m->free_at[c->channel] ? now : m->free_at[c->channel];
  c->done = c->start + service;
  m->free_at[c->channel] = c->done;
}

static void drain(struct model *m, int64_t now) {
  if (now > m->dirty_at) {
    m->dirty -= m->destage_mbps * (double)(now - m->dirty_at) / 1000.0; /* bytes per ns = MB/s / 1000 */
    if (m->dirty < 0) m->dirty = 0;
    m->dirty_at = now;
  }
}

static int failing(struct model *m, enum op op, int64_t now) {
  if (op == OP_READ) return 0;
  if (m->failed) return 1;
  if (m->fail_after_writes && m->writes >= m->fail_after_writes) return 1;
  return m->fail_after_seconds > 0 && (double)(now - m->first_at) >= m->fail_after_seconds * 1e9;
}

/* The bytes a write puts on the medium: the write rounded out to the atomic unit, the physical
 * sector or the flash write unit when larger (a read-modify-write writes the whole sector back). */
static uint64_t media_bytes(const struct model *m, uint64_t offset, uint32_t length) {
  uint64_t unit = m->write_unit > m->physical_sector ? m->write_unit : m->physical_sector;
  if (unit <= 1 || !length) return length;
  return ((offset + length + unit - 1) / unit - offset / unit) * unit;
}

/* How long the write's bytes take going onto the medium: on flash with program-us, the program of
 * its units (in parallel on their planes); else its units at `mbps`. */
static int64_t window_ns(const struct model *m, double mbps, uint64_t bytes) {
  if (m->program_us > 0) return us_to_ns(m->program_us);
  return mbps > 0 ? (int64_t)llround((double)bytes / mbps * 1000.0) : 0;
}

/* When the write's bytes start going onto the medium: the last stretch before `durable`, its
 * window, never before the service starts. */
static int64_t media_from(int64_t start, int64_t durable, int64_t window) {
  int64_t t = durable - window;
  return t > start ? t : start;
}

static void write_request(struct model *m, struct cost *c, uint64_t offset, uint32_t length, int fua,
                          int64_t now) {
  c->buffer_hits = buffer_write(m, offset, length);
  c->unit_reads = partial_units(m->write_unit, offset, length) - c->buffer_hits;
  /* A unit made of whole physical sectors is read whole: that read holds the partly written sector,
   * which is not read again (a 512e drive programming 4 KiB pages reads each page once). */
  int covered = m->write_unit && m->physical_sector && m->write_unit % m->physical_sector == 0;
  c->rmw_reads = covered ? 0 : partial_units(m->physical_sector, offset, length);
  if (m->cache_bytes && !(fua && !m->cache_plp && !m->lies_fua)) {
    double room = (double)m->cache_bytes - m->dirty;
    c->start = now;
    if (length > room) { /* wait until the cache has drained enough */
      c->start = now + (int64_t)ceil((length - room) * 1000.0 / m->destage_mbps);
      drain(m, c->start);
    }
    m->dirty += length;
    c->cached = 1;
    c->done = c->start + us_to_ns(dist_sample(&m->cache_hit, &m->rng));
    /* the cache drains in order: this write is on the media once all that is dirty has drained; with
     * a hold or a program time, no sooner than its hold and its own window after the cache took it
     * (held writes whose holds end together are durable together: the hold is not rate-limited) */
    int64_t window = window_ns(m, m->cache_plp ? m->write_mbps : m->destage_mbps, media_bytes(m, offset, length));
    c->durable = m->cache_plp ? c->done : c->start + (int64_t)ceil(m->dirty * 1000.0 / m->destage_mbps);
    if (!m->cache_plp && (m->hold_us > 0 || m->program_us > 0)) {
      int64_t held = c->start + us_to_ns(m->hold_us) + window;
      if (held > c->durable) c->durable = held;
    }
    if (c->durable > m->last_durable) m->last_durable = c->durable;
    c->media = media_from(c->start, c->durable, window);
    return;
  }
  int64_t written = us_to_ns(dist_sample(&m->write, &m->rng)) + transfer_ns(m->write_mbps, length), service = written;
  for (uint32_t i = 0; i < c->rmw_reads + c->unit_reads; i++)
    service += us_to_ns(dist_sample(&m->read, &m->rng));
  on_media(m, c, now, service, offset);
  c->durable = c->done;
  /* the window is within the write's own time: never over the reads of a read-modify-write */
  int64_t window = window_ns(m, m->write_mbps, media_bytes(m, offset, length));
  c->media = media_from(c->start, c->durable, window < written ? window : written);
}

static void flush_request(struct model *m, struct cost *c, int64_t now) {
  if (m->cache_bytes && m->cache_plp) { /* what the cache holds is as safe as the media */
    c->cached = 1;
    c->start = c->done = now;
    return;
  }
  if (m->lies_flush) { /* answered as a cache hit; what the cache holds drains as before, durable as before */
    c->cached = 1;
    c->start = now;
    c->done = now + us_to_ns(dist_sample(&m->cache_hit, &m->rng));
    return;
  }
  /* A flush waits for every write in flight and, behind a volatile cache, for the cache to drain (and
   * for the last write it took to be durable: its program, when that is longer). */
  c->start = now;
  for (int i = 0; i < m->channels; i++)
    if (m->free_at[i] > c->start) c->start = m->free_at[i];
  if (m->cache_bytes) {
    c->start += (int64_t)ceil(m->dirty * 1000.0 / m->destage_mbps);
    m->dirty = 0;
    m->dirty_at = c->start;
  }
  c->done = c->start + us_to_ns(dist_sample(&m->flush, &m->rng));
  if (m->cache_bytes && c->done < m->last_durable) c->done = m->last_durable;
}

static struct cost disk_request(struct model *m, enum op op, uint64_t offset, uint32_t length, int fua, int64_t now) {
  struct cost c = {.start = now, .done = now, .channel = -1, .flashlog_first = -1, .flashlog_start = -1,
                   .flashlog_done = -1, .durable = -1, .media = -1};
  if (m->first_at < 0) m->first_at = now;
  if (op == OP_WRITE || op == OP_ZERO) m->writes++;
  if (failing(m, op, now)) {
    c.error = EIO;
    return c;
  }
  if (m->cache_bytes) drain(m, now);
  switch (op) {
  case OP_READ:
    on_media(m, &c, now, us_to_ns(dist_sample(&m->read, &m->rng)) + transfer_ns(m->read_mbps, length), offset);
    break;
  case OP_WRITE:
  case OP_ZERO: write_request(m, &c, offset, length, fua, now); break;
  case OP_FLUSH: flush_request(m, &c, now); break;
  case OP_TRIM: break;
  }
  return c;
}

/* With a flash log, a write or a flush goes to both media at once and completes at the first
 * (seed 002: "Oracle will write to the disk and flash simultaneously and allow the redo log sync
 * operation to complete when the first device completes"); each medium's own queue, cache and
 * partial writes decide its time, and the disk serves its whole request whoever answers (the cost's
 * start, done and channel stay the disk's). A fault of the flash log leaves the disk's answer (the
 * cell writes redo to its disk whatever the flash log does); a fault of the disk fails the request,
 * and the flash log is not written (the cell has nowhere to keep the redo). */
struct cost model_request(struct model *m, enum op op, uint64_t offset, uint32_t length, int fua, int64_t now) {
  struct cost c = disk_request(m, op, offset, length, fua, now);
  c.answered = c.done;
  if (!m->flashlog || c.error || (op != OP_WRITE && op != OP_ZERO && op != OP_FLUSH)) return c;
  struct cost f = disk_request(m->flashlog, op, offset, length, fua, now);
  c.flashlog_first = 0;
  if (f.error) return c;
  c.flashlog_start = f.start;
  c.flashlog_done = f.done;
  if (f.durable >= 0 && (c.durable < 0 || f.durable < c.durable)) {
    c.durable = f.durable;
    c.media = f.media;
  }
  if (f.done < c.done) {
    c.flashlog_first = 1;
    c.answered = f.done;
  }
  return c;
}

int model_trace_line(FILE *out, int64_t t0, enum op op, uint64_t offset, uint64_t length, int fua, int64_t arrival,
                     int64_t replied, const struct cost *c, int error) {
  static const char *const names[] = {"read", "write", "flush", "trim", "zero"};
  int64_t from = c->flashlog_first == 1 ? c->flashlog_start : c->start;
  char tail[192];
  model_trace_tail(tail, sizeof tail, c, arrival);
  return fprintf(out, "%.3f,%s,%" PRIu64 ",%" PRIu64 ",%d,%d,%.3f,%.3f,%.3f,%d,%" PRIu32 ",%" PRIu32 ",%d,%s\n",
                 (arrival + t0) / 1e3, names[op], offset, length, fua, c->channel, (c->start - arrival) / 1e3,
                 (c->done - c->start) / 1e3, (replied - from) / 1e3, c->cached, c->rmw_reads, c->unit_reads, error,
                 tail);
}

int model_trace_tail(char *buf, size_t size, const struct cost *c, int64_t arrival) {
  char flash[64] = ",", durable[32] = "", media[32] = "";
  if (c->flashlog_done >= 0)
    snprintf(flash, sizeof flash, "%.3f,%.3f", (c->flashlog_start - arrival) / 1e3,
             (c->flashlog_done - c->flashlog_start) / 1e3);
  if (c->durable >= 0) snprintf(durable, sizeof durable, "%.3f", (c->durable - arrival) / 1e3);
  if (c->durable >= 0 && c->media >= 0) snprintf(media, sizeof media, "%.3f", (c->media - arrival) / 1e3);
  return snprintf(buf, size, "%" PRIu32 ",%d,%s,%s,%s", c->buffer_hits, c->flashlog_first, flash, durable, media);
}

/* "4096", "4k", "512M", "1G": bytes (powers of 1024, as nbdkit's sizes); digits only before the suffix. */
static int parse_size(const char *text, uint64_t *out) {
  char *end;
  if (*text < '0' || *text > '9') return -1;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno == ERANGE) return -1;
  uint64_t mult = 1;
  switch (*end) {
  case 'k': case 'K': mult = 1ULL << 10; end++; break;
  case 'm': case 'M': mult = 1ULL << 20; end++; break;
  case 'g': case 'G': mult = 1ULL << 30; end++; break;
  case 't': case 'T': mult = 1ULL << 40; end++; break;
  }
  if (*end || (v && mult > UINT64_MAX / v)) return -1;
  *out = v * mult;
  return 0;
}

static int parse_number(const char *text, double *out) {
  int n = model_parse_decimal(text, out);
  return n && !text[n] ? 0 : -1;
}

const char *const MODEL_NOT_MINE = "not a device model key";

const char *model_set(struct model *m, const char *key, const char *value) {
  if (strncmp(key, MODEL_FLASHLOG, strlen(MODEL_FLASHLOG)) == 0) {
    const char *sub = key + strlen(MODEL_FLASHLOG);
    if (strncmp(sub, MODEL_FLASHLOG, strlen(MODEL_FLASHLOG)) == 0) return "a flash log has no flash log of its own";
    if (m->flashlog == NULL) {
      if (!(m->flashlog = malloc(sizeof *m->flashlog))) return "out of memory";
      model_init(m->flashlog);
    }
    const char *why = model_set(m->flashlog, sub, value);
    return why == MODEL_NOT_MINE ? "not a device model key (after " MODEL_FLASHLOG ")" : why;
  }
  static const struct { const char *key; size_t field; } dists[] = {
    {"read", offsetof(struct model, read)}, {"write", offsetof(struct model, write)},
    {"flush", offsetof(struct model, flush)}, {"cache-hit", offsetof(struct model, cache_hit)}};
  static const struct { const char *key; size_t field; double min, max; const char *expected; } numbers[] = {
    {"read-mbps", offsetof(struct model, read_mbps), MODEL_MIN_MBPS, MODEL_MAX_MBPS,
     "expected 0 (no transfer time) or 0.001 to 1000000 MB/s"},
    {"write-mbps", offsetof(struct model, write_mbps), MODEL_MIN_MBPS, MODEL_MAX_MBPS,
     "expected 0 (no transfer time) or 0.001 to 1000000 MB/s"},
    {"cache-destage-mbps", offsetof(struct model, destage_mbps), MODEL_MIN_MBPS, MODEL_MAX_MBPS,
     "expected 0.001 to 1000000 MB/s"},
    {"fail-after-seconds", offsetof(struct model, fail_after_seconds), 0, MODEL_MAX_FAIL_SECONDS,
     "expected 0 (never) to 1000000 seconds"},
    {"cache-hold-us", offsetof(struct model, hold_us), 0, MODEL_MAX_US, "expected 0 (none) to 10000000 us"},
    {"program-us", offsetof(struct model, program_us), 0, MODEL_MAX_PROGRAM_US,
     "expected 0 (the write's bytes at the media rate) to 100000 us"}};
  uint64_t u;
  for (size_t i = 0; i < sizeof dists / sizeof *dists; i++)
    if (strcmp(key, dists[i].key) == 0) return dist_parse((struct dist *)((char *)m + dists[i].field), value);
  for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
    if (strcmp(key, numbers[i].key) == 0) {
      double v;
      if (parse_number(value, &v)) return "expected a decimal number";
      if (!(v == 0 || (v >= numbers[i].min && v <= numbers[i].max))) return numbers[i].expected;
      *(double *)((char *)m + numbers[i].field) = v;
      return NULL;
    }
  if (strcmp(key, "lies-about") == 0) {
    int fua = strcmp(value, "fua") == 0, flush = strcmp(value, "flush") == 0, both = strcmp(value, "fua,flush") == 0;
    if (!fua && !flush && !both && strcmp(value, "none"))
      return "expected what the drive acknowledges before it is durable: fua, flush or fua,flush (none: it does "
             "not lie)";
    m->lies_fua = fua || both;
    m->lies_flush = flush || both;
    return NULL;
  }
  if (strcmp(key, "cache-plp") == 0) {
    if (strcmp(value, "true") && strcmp(value, "false")) return "expected true or false";
    m->cache_plp = strcmp(value, "true") == 0;
    return NULL;
  }
  if (strcmp(key, "channels") && strcmp(key, "stripe") && strcmp(key, "cache-size") &&
      strcmp(key, "physical-sector") && strcmp(key, "write-unit") && strcmp(key, "fail-after-writes") &&
      strcmp(key, "seed") && strcmp(key, "write-buffer"))
    return MODEL_NOT_MINE;
  if (parse_size(value, &u))
    return strcmp(key, "channels") == 0            ? "expected a whole number, 1 to 64"
           : strcmp(key, "seed") == 0              ? "expected a whole number, 0 to 18446744073709551615"
           : strcmp(key, "fail-after-writes") == 0 ? "expected a whole number of writes (0: never)"
                                                   : "expected a whole number of bytes (or 4k, 1M, 2G)";
  if (strcmp(key, "channels") == 0) m->channels = u > MODEL_MAX_CHANNELS ? 0 : (int)u;
  else if (strcmp(key, "stripe") == 0) {
    if (u > MODEL_MAX_STRIPE) return "expected 0 (none) to 1G";
    m->stripe = u;
  } else if (strcmp(key, "cache-size") == 0) {
    if (u > MODEL_MAX_CACHE) return "expected 0 (no cache) to 1T";
    m->cache_bytes = u;
  }
  else if (strcmp(key, "physical-sector") == 0) m->physical_sector = u > MODEL_MAX_SECTOR ? 3 : (uint32_t)u;
  else if (strcmp(key, "write-unit") == 0) m->write_unit = u > MODEL_MAX_UNIT ? 3 : (uint32_t)u;
  else if (strcmp(key, "write-buffer") == 0) m->write_buffer = u;
  else if (strcmp(key, "fail-after-writes") == 0) m->fail_after_writes = u;
  else {
    m->seed = u;
    m->seed_set = 1;
  }
  return NULL;
}
