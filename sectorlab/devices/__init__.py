"""The lab's device models: each modelled data disk is served from the host by nbdkit's memory
plugin (a sparse, throw-away disk in RAM) under the project's own nbdkit filter
(devicemodel/: service times, queues, a write-back cache, partial writes, faults), which writes a
trace of every request.

- profiles: the catalog's device profiles (sectorlab/geometries.json), each number with its
  source, checked by the model itself (devicemodel/simulate);
- server: one nbdkit daemon per disk (a Unix socket, a pid file, its log);
- trace: the trace read back, and what a report shows of it (service time, queue, utilisation,
  read-modify-writes), per operation.
"""
