/* simulate: the device model in virtual time, for exact tests and for seeing what a profile does
 * to a request pattern without a guest. The same key=value parameters as the nbdkit filter.
 *
 *   simulate write=fixed:100 channels=2 < requests
 *
 * Each input line is "T_US OP OFFSET LENGTH [fua]" (OP: read, write, flush, trim, zero; arrival
 * times in microseconds, not decreasing); each output line is the model's decision, as the
 * filter's trace has it (without served_us, which only a real run has). Exit 2 on bad input. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static const char *const op_names[] = {"read", "write", "flush", "trim", "zero"};

static int configure(struct model *m, int argc, char **argv) {
  model_init(m);
  for (int i = 1; i < argc; i++) {
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

int main(int argc, char **argv) {
  struct model m;
  if (configure(&m, argc, argv) < 0) return 2;
  char line[256], opname[16], fua[8];
  double t_us;
  uint64_t offset;
  uint32_t length;
  long lineno = 0;
  printf("t_us,op,offset,length,fua,channel,queue_us,service_us,cached,rmw_reads,unit_reads,error\n");
  while (fgets(line, sizeof line, stdin)) {
    lineno++;
    fua[0] = '\0';
    int n = sscanf(line, "%lf %15s %" SCNu64 " %" SCNu32 " %7s", &t_us, opname, &offset, &length, fua);
    int op = -1;
    for (int i = 0; i < 5 && n >= 4; i++)
      if (strcmp(opname, op_names[i]) == 0) op = i;
    if (n < 4 || op < 0 || (n == 5 && strcmp(fua, "fua"))) {
      fprintf(stderr, "simulate: line %ld: expected 'T_US OP OFFSET LENGTH [fua]', got '%.*s'\n", lineno,
              (int)strcspn(line, "\n"), line);
      return 2;
    }
    int64_t now = (int64_t)(t_us * 1000.0 + 0.5);
    struct cost c = model_request(&m, (enum op)op, offset, length, n == 5, now);
    printf("%.3f,%s,%" PRIu64 ",%" PRIu32 ",%d,%d,%.3f,%.3f,%d,%" PRIu32 ",%" PRIu32 ",%d\n", t_us, op_names[op],
           offset, length, n == 5, c.channel, (c.start - now) / 1e3, (c.done - c.start) / 1e3, c.cached,
           c.rmw_reads, c.unit_reads, c.error);
  }
  return 0;
}
