"""The numbers of results: what every report kind computes from runs, no text.

- stats.py: the statistics (scipy: Mann-Whitney, bootstrap CIs, Holm, exact tests' least p), the
  results' bounded readers (JSON records, run reports, events files) and the shapes they must have
  (conform), and `sectorlab compare`'s Welch test of two single runs;
- metrics.py: one run's numbers (METRICS by name, the AWR-like table rows, the spread of repeats,
  the rules engine's verdict in words);
- compare.py: configurations compared on one value per run (the tests, the shift function, the
  shapes of commit latencies, controls, seed figures against the lab's) and the limits of a family
  of comparisons;
- headlines.py: a comparison's headline on the guest path beside the device path, with the lab's
  own floor on each;
- devicerows.py: a run's counts from the device models' traces (writes, flushes, read-modify-write,
  the flash log's race);
- plots.py: the pictures (matplotlib) and `sectorlab plot`.
"""
