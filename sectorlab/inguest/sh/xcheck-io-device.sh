#!/bin/sh
# Where the guest counts a disk's I/O and how the block layer's trace names it
# (labtests/support/dbs.py, io_device): "STAT_NAME MAJOR:MINOR". Arguments: DEV.

name=${1#/dev/}; stat=$name
# An NVMe multipath head nvmeSnN (NVMe/TCP here) is bio-based and keeps no counters in this kernel:
# its I/O is counted on its hidden path device nvmeScCnN.
case $name in
  nvme*n*)
    for p in /sys/block/"${name%n*}"c*n"${name##*n}"; do [ -e "$p/stat" ] && { stat=${p##*/}; break; }; done ;;
esac
echo "$stat $(cat /sys/block/"$name"/dev)"
