#!/bin/sh
# The block layer's bio-submission tracepoint switched on, for the size of every write submitted to
# a disk (labtests/support/dbs.py, TRACE_ON): tracefs mounted if it is not, the trace emptied. With a
# disk's kernel name ($1), its counters read at once after (dbs.window): what it had written, the
# requests in flight then and the largest request it takes; then a mark in the trace, so that a
# write traced before it (it may be in the counters read already) is told from the load's.

set -eu
t=/sys/kernel/tracing
mountpoint -q $t || mount -t tracefs nodev $t
echo 0 > $t/tracing_on; echo > $t/trace; echo 4096 > $t/buffer_size_kb
echo 1 > $t/events/block/block_bio_queue/enable; echo 1 > $t/tracing_on
if [ -n "${1:-}" ]; then
    echo "sectorlab-stat $(cat "/sys/block/$1/stat")"
    echo "sectorlab-inflight $(cat "/sys/block/$1/inflight")"
    echo "sectorlab-max-sectors-kb $(cat "/sys/block/$1/queue/max_sectors_kb")"
    echo sectorlab-window-start > $t/trace_marker
fi
