#!/bin/sh
# The block layer's bio-submission tracepoint switched on, for the size of every write submitted to
# a disk (labtests/support/dbs.py, TRACE_ON): tracefs mounted if it is not, the trace emptied.

set -eu
t=/sys/kernel/tracing
mountpoint -q $t || mount -t tracefs nodev $t
echo 0 > $t/tracing_on; echo > $t/trace; echo 4096 > $t/buffer_size_kb
echo 1 > $t/events/block/block_bio_queue/enable; echo 1 > $t/tracing_on
