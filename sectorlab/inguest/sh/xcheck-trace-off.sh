#!/bin/sh
# The tracepoint xcheck-trace-on.sh switched on, off again: with a disk's kernel name ($1), a mark in
# the trace and then its counters read (dbs.window), the tracepoint still on, so that a write traced
# after the mark (it may be missing from the counters) is told from the load's; then the tracepoint
# off, the trace printed and emptied (labtests/support/dbs.py, TRACE_OFF).

t=/sys/kernel/tracing
if [ -n "${1:-}" ]; then
    echo sectorlab-window-end > $t/trace_marker
    echo "sectorlab-stat $(cat "/sys/block/$1/stat")"
    echo "sectorlab-inflight $(cat "/sys/block/$1/inflight")"
    echo "sectorlab-max-sectors-kb $(cat "/sys/block/$1/queue/max_sectors_kb")"
fi
echo 0 > $t/tracing_on; echo 0 > $t/events/block/block_bio_queue/enable
cat $t/trace; echo > $t/trace
