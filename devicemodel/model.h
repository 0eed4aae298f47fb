/* The device model of a lab data disk: what one request costs, in virtual time (nanoseconds),
 * without sleeping. filter.c (the nbdkit filter) sleeps until the times it computes; simulate.c
 * feeds it a request list for exact tests. One model per disk; the caller holds its lock. */
#ifndef SECTORLAB_MODEL_H
#define SECTORLAB_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MODEL_MAX_CHANNELS 64
#define MODEL_MAX_POINTS 16
#define MODEL_MAX_US 1e7 /* 10 s: a longer service time is a typo, not a disk; no draw is longer */
#define MODEL_MIN_MBPS 0.001 /* a bandwidth: 0 (no transfer time) or 0.001 to 1000000 MB/s */
#define MODEL_MAX_MBPS 1e6
#define MODEL_MAX_FAIL_SECONDS 1e6
#define MODEL_MAX_PROGRAM_US 1e5     /* program-us: at most 100 ms (flash programs a page in about 0.2-2 ms) */
#define MODEL_MAX_CACHE (1ULL << 40)  /* cache-size: at most 1 TiB */
#define MODEL_MAX_STRIPE (1ULL << 30) /* stripe: at most 1 GiB */
#define MODEL_MAX_SECTOR 65536        /* physical-sector: at most 64 KiB */
#define MODEL_MAX_UNIT (64U << 20)    /* write-unit: at most 64 MiB */
#define MODEL_MAX_BUFFER_UNITS 4096   /* write-buffer: at most this many write units */
#define MODEL_FLASHLOG "flashlog."    /* the prefix of the flash log's keys */

enum dist_kind { DIST_NONE, DIST_FIXED, DIST_NORMAL, DIST_LOGNORMAL, DIST_PERCENTILES };

/* A service time distribution, microseconds. fixed:V; normal:MEAN,SD (truncated at 0);
 * lognormal:MEDIAN,P99; pct:P=V,P=V,... (the inverse CDF through those points, linear between
 * them; the first point's P may be above 0: below it the first V). */
struct dist {
  enum dist_kind kind;
  double a, b;                         /* fixed: a; normal: mean a, sd b; lognormal: mu a, sigma b */
  int points;
  double p[MODEL_MAX_POINTS], v[MODEL_MAX_POINTS];
};

enum op { OP_READ, OP_WRITE, OP_FLUSH, OP_TRIM, OP_ZERO };

struct model {
  /* the media */
  struct dist read, write, flush;      /* per request */
  double read_mbps, write_mbps;        /* transfer, added to the service time; 0: none */
  int channels;                        /* parallel channels, each a FIFO */
  uint64_t stripe;                     /* channel = offset / stripe % channels; 0: the first free */
  /* a write-back cache in front of the media */
  uint64_t cache_bytes;                /* 0: no cache */
  double destage_mbps;                 /* how fast the cache drains to the media */
  struct dist cache_hit;               /* a write the cache takes */
  int cache_plp;                       /* 1: power-loss protected (flush and FUA free); 0: volatile */
  int lies_fua, lies_flush;            /* lies-about=: a volatile cache acknowledges a FUA write, or a flush,
                                          before what it holds is durable (Zheng et al., FAST 2013) */
  double hold_us;                      /* cache-hold-us: a lying drive's write waits this long in its cache
                                          before the drain takes it (assumed; needs lies-about=flush) */
  double program_us;                   /* program-us: flash: a write's window is the program of its units,
                                          this long, not its bytes at the media rate; 0: the rate's */
  /* partial writes */
  uint32_t physical_sector;            /* read-modify-write of a partly written physical sector; 0: none */
  uint32_t write_unit;                 /* flash program unit: a partly written unit is read first (and a partly
                                          written physical sector inside it not again); 0: none */
  uint64_t write_buffer;               /* bytes of DRAM holding the write units written last (least recently
                                          written out first): a partial write into a unit it holds merges
                                          there, with no read of the unit; 0: none (needs write-unit) */
  /* faults: every write, flush, trim and zero fails with EIO from the Nth write on (1-based; 0:
   * never) or from this many seconds after the first request (0: never) */
  uint64_t fail_after_writes;
  double fail_after_seconds;
  uint64_t seed;
  int seed_set;                        /* seed= was given (a flash log without its own seed draws from
                                          its disk's, offset, not from the default) */
  /* Smart flash logging (an Exadata cell): a second medium, modelled as a device of its own (its
   * keys are this model's with the prefix "flashlog."), that every write and flush also goes to at
   * the same moment; the request completes when the first of the two is done. Reads and trims are
   * the disk's. NULL: none. */
  struct model *flashlog;

  /* state */
  int failed;                          /* 1: failing from now on, as switched at run time (the filter's
                                          SIGUSR1; SIGUSR2 switches it off) */
  uint64_t rng;
  int64_t free_at[MODEL_MAX_CHANNELS]; /* ns: when each channel is free */
  double dirty;                        /* bytes in the cache not yet on the media */
  int64_t last_durable;                /* ns: when the last write the cache took is durable (an honest
                                          flush answers no sooner) */
  int64_t dirty_at;                    /* ns: when `dirty` was last brought up to date */
  int64_t first_at;                    /* ns: the first request's arrival; -1 before it */
  uint64_t writes;
  uint32_t buffered;                   /* units in the write buffer */
  uint64_t buffer_clock;               /* the last write's stamp */
  uint64_t buffer_unit[MODEL_MAX_BUFFER_UNITS];  /* which units, and when each was last written */
  uint64_t buffer_stamp[MODEL_MAX_BUFFER_UNITS];
};

/* What the model decided for one request. With a flash log, start, done, channel, cached and the
 * reads are the disk's own (its queue and utilisation as they are, whoever answers first); the
 * flash log's own times are beside them, and `answered` is when the host gets its reply. */
struct cost {
  int64_t start, done;                 /* ns: service starts (after its queue), and completes */
  int64_t answered;                    /* ns: the reply: done, or the flash log's done when it is first */
  int64_t flashlog_start, flashlog_done;  /* ns: the flash log's service (-1: no flash log's, or it failed) */
  int64_t durable;                     /* ns: a write's data survives a power cut from then on: on the media
                                          (done), in a protected cache (done), or destaged from a volatile
                                          one (when the drain passes its last byte); a cell's, the first of
                                          its two media's; -1: not a write, or failed */
  int64_t media;                       /* ns: a write's bytes start going onto the medium: from then until
                                          `durable` a power cut can leave them part-written (before it the
                                          old bytes are whole: it is still positioning, reading a sector to
                                          modify it, or in a cache). The units it writes (the write rounded
                                          out to the physical sector, or the flash write unit when larger)
                                          at the medium's rate: write-mbps, or cache-destage-mbps for a
                                          volatile cache's drain; or their program, program-us; never
                                          before the service starts, nor over the reads of a read-modify-
                                          write. -1: as durable */
  int channel;                         /* -1: the cache answered, no channel */
  int cached;                          /* a write the cache took, or a flush the cache answered */
  uint32_t rmw_reads;                  /* physical sectors read first */
  uint32_t unit_reads;                 /* flash units read first */
  uint32_t buffer_hits;                /* partly written units merged in the write buffer instead */
  int flashlog_first;                  /* with a flash log: 1 when it completed the request first, 0 when
                                          the disk did (a tie is the disk's, and so is every request the
                                          flash log failed: the cell falls back to its disk); -1: no flash
                                          log, or a read */
  int error;                           /* 0, or EIO for a fault */
};

/* Parses "fixed:100", "normal:100,10", "lognormal:80,400" or "pct:50=80,99=400,100=900".
 * Returns NULL, or the message of what is wrong (a static string). */
const char *dist_parse(struct dist *d, const char *text);
/* One draw, microseconds, 0 to MODEL_MAX_US; rng is the model's generator state (splitmix64). */
double dist_sample(const struct dist *d, uint64_t *rng);

/* A decimal number as a person writes one ("12", "-0.5", "1e3"): no hex, inf, nan or spaces; finite.
 * Returns the characters it took (0: none, not a number). */
int model_parse_decimal(const char *text, double *out);

/* Sets one parameter by its key (the filter's and simulate's key=value arguments). Returns NULL,
 * MODEL_NOT_MINE for a key that is not the model's, or what is wrong with the value. */
extern const char *const MODEL_NOT_MINE;
const char *model_set(struct model *m, const char *key, const char *value);

void model_init(struct model *m);      /* defaults: no service time, one channel, no cache */
/* The smallest write the device takes without reading first, as a disk advertises it (the kernel's
 * minimum_io_size): the flash write unit, else the physical sector; 0 when it has neither. */
uint32_t model_minimum_io(const struct model *m);
const char *model_check(const struct model *m);  /* NULL, or what is inconsistent */
void model_reset(struct model *m);     /* state only */
struct cost model_request(struct model *m, enum op op, uint64_t offset, uint32_t length, int fua, int64_t now);
/* The trace's last columns of a request that arrived at `arrival` (ns), as both the filter and
 * simulate write them: MODEL_TRACE_TAIL_HEADER's (the empty ones left empty). Returns snprintf's
 * count. */
int model_trace_tail(char *buf, size_t size, const struct cost *c, int64_t arrival);
#define MODEL_TRACE_TAIL_HEADER "buffer_hits,flashlog_first,flashlog_queue_us,flashlog_service_us,durable_us,media_us"
/* The trace's header (the filter's, and redo-writer's model: members'), and the write log's first
 * line (then records of arrival ns, offset, length | op << 32, each a uint64_t, and a write's bytes). */
#define MODEL_TRACE_HEADER \
  "t_us,op,offset,length,fua,channel,queue_us,service_us,served_us,cached,rmw_reads,unit_reads,error," \
  MODEL_TRACE_TAIL_HEADER "\n"
#define MODEL_WRITELOG_MAGIC "sectorlab-writelog 1\n"
/* One whole trace line (MODEL_TRACE_HEADER's columns), as the filter and redo-writer's model:
 * members write it: the request `op` of `length` bytes at `offset` that arrived at `arrival` (ns, the
 * model's clock; the trace shows arrival + t0, the filter's host clock) and was replied to at `replied`
 * (served: from the answering medium's start to then), with `error` (0 or an errno). Returns fprintf's. */
int model_trace_line(FILE *out, int64_t t0, enum op op, uint64_t offset, uint64_t length, int fua, int64_t arrival,
                     int64_t replied, const struct cost *c, int error);


#endif
