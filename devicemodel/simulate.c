/* simulate: the device model in virtual time, for exact tests and for seeing what a profile does
 * to a request pattern without a guest. The same key=value parameters as the nbdkit filter.
 *
 *   simulate write=fixed:100 channels=2 < requests
 *
 * Each input line is "T_US OP OFFSET LENGTH [fua]" (OP: read, write, flush, trim, zero; arrival
 * times in microseconds, decimal, 0 to 1e12, not decreasing; OFFSET and LENGTH whole numbers, LENGTH
 * at most 4294967295 as an NBD request's, OFFSET + LENGTH at most 2^63 - 1; at most 255 characters
 * a line; blank lines are skipped); each output line is the model's decision, as the filter's trace has it (without
 * served_us, which only a real run has). Exit 2 on bad input, in one line naming it: a bad
 * parameter before any output, a bad request line after the lines before it.
 *
 *   simulate --depth=4 [--think-us=60] read=fixed:77 channels=4 < requests
 *
 * With --depth=K the requests are a closed loop of K, as fio's at iodepth K: each input line is
 * "OP OFFSET LENGTH [fua]", the first K arrive at once and each further one when one of the K before
 * it is answered (the earliest), --think-us later (a path's own time between a reply and the next
 * request; default 0); t_us is the arrival the loop gave it. K is 1 to 1024. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static const char *const op_names[] = {"read", "write", "flush", "trim", "zero"};

#define MAX_DEPTH 1024
static int depth;        /* 0: each line carries its arrival; K: a closed loop of K (--depth) */
static double think_us;  /* --think-us: from a reply to the next request of a closed loop */

/* --depth=K and --think-us=US: 1 when the argument was one of them (taken), 0 when it is no option,
 * -1 when it is one with a bad value (said). */
static int loop_option(const char *arg) {
  double v;
  int took;
  if (strncmp(arg, "--depth=", 8) == 0) {
    took = model_parse_decimal(arg + 8, &v);
    if (!took || arg[8 + took] || !(v >= 1 && v <= MAX_DEPTH) || v != (double)(int)v) {
      fprintf(stderr, "simulate: %s: expected --depth=K, K a whole number of requests 1 to %d\n", arg, MAX_DEPTH);
      return -1;
    }
    depth = (int)v;
    return 1;
  }
  if (strncmp(arg, "--think-us=", 11) == 0) {
    took = model_parse_decimal(arg + 11, &v);
    if (!took || arg[11 + took] || !(v >= 0 && v <= 1e9)) {
      fprintf(stderr, "simulate: %s: expected --think-us=US, microseconds 0 to 1e9\n", arg);
      return -1;
    }
    think_us = v;
    return 1;
  }
  return 0;
}

static int configure(struct model *m, int argc, char **argv) {
  model_init(m);
  for (int i = 1; i < argc; i++) {
    int option = loop_option(argv[i]);
    if (option < 0) return -1;
    if (option) continue;
    char *eq = strchr(argv[i], '=');
    if (!eq) {
      fprintf(stderr, "simulate: '%s': expected KEY=VALUE\n", argv[i]);
      return -1;
    }
    *eq = '\0';
    const char *why = model_set(m, argv[i], eq + 1);
    if (why) {
      fprintf(stderr, "simulate: %s=%s: %s\n", argv[i], eq + 1, why);
      return -1;
    }
  }
  const char *why = model_check(m);
  if (why) {
    fprintf(stderr, "simulate: %s\n", why);
    return -1;
  }
  model_reset(m);
  return 0;
}

#define MAX_T_US 1e12        /* arrival times: about 11.6 days */
#define MAX_VIRTUAL_NS 1e17  /* the model's clock: about 3 years; past it, the input is no disk's load */
#define LINE_MAX_CHARS 255

/* Reads one line into `line` (without its newline); 1 a line, 0 at the end, -1 when it is longer than
 * LINE_MAX_CHARS or has a NUL or control character (the message names which). */
static int read_line(char *line, long lineno) {
  size_t n = 0;
  int c;
  while ((c = getchar()) != EOF && c != '\n') {
    if (n == LINE_MAX_CHARS) {
      fprintf(stderr, "simulate: line %ld is longer than %d characters: expected 'T_US OP OFFSET LENGTH [fua]'\n",
              lineno, LINE_MAX_CHARS);
      return -1;
    }
    if ((c < 0x20 && c != '\t' && c != '\r') || c >= 0x7f) {
      fprintf(stderr, "simulate: line %ld has a control character or a byte that is not ASCII (%d): expected "
              "'T_US OP OFFSET LENGTH [fua]'\n", lineno, c);
      return -1;
    }
    line[n++] = (char)c;
  }
  line[n] = '\0';
  return n || c != EOF ? 1 : 0;
}

/* A whole number of digits only, at most `max`; 0 or -1. */
static int parse_whole(const char *text, uint64_t max, uint64_t *out) {
  size_t len = strlen(text);
  if (!len || len > 20 || strspn(text, "0123456789") != len) return -1;
  errno = 0;
  unsigned long long v = strtoull(text, NULL, 10);
  if (errno == ERANGE || v > max) return -1;
  *out = v;
  return 0;
}

/* The line as it was, in one line of text: its tabs and carriage returns (the only control
 * characters read_line lets through) shown as spaces. */
static int bad_line(long lineno, const char *line, const char *why) {
  char shown[LINE_MAX_CHARS + 1];
  size_t n = 0;
  for (; line[n]; n++) shown[n] = line[n] == '\t' || line[n] == '\r' ? ' ' : line[n];
  shown[n] = '\0';
  fprintf(stderr, "simulate: line %ld: %s, got '%s'\n", lineno, why, shown);
  return 2;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    for (const unsigned char *p = (const unsigned char *)argv[i]; *p; p++)
      if (*p < 0x20 || *p >= 0x7f) {
        fprintf(stderr, "simulate: argument %d has a control character or a byte that is not ASCII: expected "
                "KEY=VALUE\n", i);
        return 2;
      }
  struct model m;
  if (configure(&m, argc, argv) < 0) return 2;
  if (think_us > 0 && !depth) {
    fprintf(stderr, "simulate: --think-us without --depth: each line gives its own arrival; give --depth=K\n");
    return 2;
  }
  static int64_t slot_free[MAX_DEPTH]; /* a closed loop's K slots: when each is next free (ns) */
  char line[LINE_MAX_CHARS + 1], copy[LINE_MAX_CHARS + 3 + 24];
  double t_us, last_t_us = 0;
  long lineno = 0;
  int r;
  printf("t_us,op,offset,length,fua,channel,queue_us,service_us,cached,rmw_reads,unit_reads,error,"
         MODEL_TRACE_TAIL_HEADER "\n");
  while ((r = read_line(line, ++lineno)) > 0) {
    char *field[6];
    int n = 0, slot = 0;
    if (line[strspn(line, " \t\r")] == '\0') continue; /* a blank line */
    if (depth) { /* the arrival the loop gives it, as if the line had carried it */
      for (int i = 1; i < depth; i++)
        if (slot_free[i] < slot_free[slot]) slot = i;
      double arrival_us = slot_free[slot] / 1e3 + think_us;
      if (arrival_us > MAX_T_US) {
        fprintf(stderr, "simulate: line %ld: the closed loop's arrival %.0f us is past 1e12 us of virtual time: "
                "give fewer requests or a shorter --think-us\n", lineno, arrival_us);
        return 2;
      }
      snprintf(copy, sizeof copy, "%.3f %s", arrival_us, line);
    } else {
      strcpy(copy, line);
    }
    for (char *tok = strtok(copy, " \t\r"); tok; tok = strtok(NULL, " \t\r"))
      if (n < 6) field[n++] = tok;
      else n = 6;
    int op = -1;
    for (int i = 0; i < 5 && n >= 2; i++)
      if (strcmp(field[1], op_names[i]) == 0) op = i;
    if (n < 4 || n > 5 || op < 0 || (n == 5 && strcmp(field[4], "fua")))
      return bad_line(lineno, line, depth ? "expected 'OP OFFSET LENGTH [fua]' (--depth: no arrival time)"
                                          : "expected 'T_US OP OFFSET LENGTH [fua]'");
    int took = model_parse_decimal(field[0], &t_us);
    if (!took || field[0][took] || !(t_us >= 0 && t_us <= MAX_T_US))
      return bad_line(lineno, line, "T_US is the arrival time in microseconds, a decimal number 0 to 1e12");
    if (t_us < last_t_us) {
      fprintf(stderr, "simulate: line %ld: arrival time %.3f is before the previous line's %.3f: arrival times do "
              "not decrease (sort the requests by time)\n", lineno, t_us, last_t_us);
      return 2;
    }
    last_t_us = t_us;
    uint64_t offset, length;
    if (parse_whole(field[3], UINT32_MAX, &length))
      return bad_line(lineno, line, "LENGTH is a whole number of bytes, 0 to 4294967295");
    if (parse_whole(field[2], (uint64_t)INT64_MAX - length, &offset))
      return bad_line(lineno, line, "OFFSET is a whole number of bytes, OFFSET + LENGTH at most 2^63 - 1");
    int64_t now = (int64_t)(t_us * 1000.0 + 0.5);
    struct cost c = model_request(&m, (enum op)op, offset, (uint32_t)length, n == 5, now);
    if ((double)c.done > MAX_VIRTUAL_NS || (double)c.flashlog_done > MAX_VIRTUAL_NS ||
        (double)c.durable > MAX_VIRTUAL_NS) {
      fprintf(stderr, "simulate: line %ld: the model's queue runs past %.0f s of virtual time: the requests and "
              "the parameters (a bandwidth near 0?) give a load no disk serves\n", lineno, MAX_VIRTUAL_NS / 1e9);
      return 2;
    }
    if (depth) slot_free[slot] = c.answered;
    char tail[192];
    model_trace_tail(tail, sizeof tail, &c, now);
    printf("%.3f,%s,%" PRIu64 ",%" PRIu64 ",%d,%d,%.3f,%.3f,%d,%" PRIu32 ",%" PRIu32 ",%d,%s\n", t_us, op_names[op],
           offset, length, n == 5, c.channel, (c.start - now) / 1e3, (c.done - c.start) / 1e3, c.cached,
           c.rmw_reads, c.unit_reads, c.error, tail);
  }
  return r < 0 ? 2 : 0;
}
