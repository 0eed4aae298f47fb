#!/bin/sh
# The tracepoint xcheck-trace-on.sh switched on, off again: with a disk's kernel name ($1), its
# counters read at once after (dbs.window), then the trace printed and emptied (labtests/support/dbs.py,
# TRACE_OFF).

t=/sys/kernel/tracing
echo 0 > $t/tracing_on; echo 0 > $t/events/block/block_bio_queue/enable
if [ -n "${1:-}" ]; then
    echo "sectorlab-stat $(cat "/sys/block/$1/stat")"
    echo "sectorlab-inflight $(cat "/sys/block/$1/inflight")"
    echo "sectorlab-max-sectors-kb $(cat "/sys/block/$1/queue/max_sectors_kb")"
fi
cat $t/trace; echo > $t/trace
