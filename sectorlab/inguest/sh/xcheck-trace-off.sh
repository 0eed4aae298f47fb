#!/bin/sh
# The tracepoint xcheck-trace-on.sh switched on, off again: the trace printed, then emptied
# (labtests/support/dbs.py, TRACE_OFF).

t=/sys/kernel/tracing
echo 0 > $t/tracing_on; echo 0 > $t/events/block/block_bio_queue/enable
cat $t/trace; echo > $t/trace
