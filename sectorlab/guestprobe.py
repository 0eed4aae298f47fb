#!/usr/bin/python3
"""What `lab up` checks inside a guest, in one round trip: under TCG every SSH command, sudo and
process start costs tenths of a second, so this runs once per guest, as root, with `python3 -c`.
Standard library only (it runs in the guests).

Argument: one JSON object
  clock           host time (seconds since the epoch) to step the guest's clock to, or null
  nvme_tcp        serials of the in-guest NVMe/TCP namespaces: when one is not visible, start the
                  targets' unit (or wait for its start at boot) once
  serials         disk serials that must be visible; waits for them (hot-plugged NVMe appears late)
  wait            how many seconds to wait for them
  pristine_bytes  check that the first and last this many bytes of those disks are zeros (0: no)
  lsblk           the lsblk command line to run (sectorlab.guestdisks.LSBLK_COMMAND, split)
Output: one JSON object
  behind_s  how far the guest's clock was behind (null if not stepped)
  waited_s  how long the serials took to appear
  lsblk     lsblk's output (parsed on the host by sectorlab.guestdisks)
  dirty     device paths that are not all zeros at either end
"""

import json
import os
import subprocess
import sys
import time

NVME_TCP_UNIT = "sectorlab-nvme-tcp.service"


def step_clock(host_time):
    # In-process rather than date(1): after a restore every program's first run is slow under TCG.
    behind = host_time - time.time()
    time.clock_settime(time.CLOCK_REALTIME, host_time)
    return behind


def start_nvme_tcp():
    """Start the targets' unit, or wait for its start at boot; a no-op when it has run."""
    subprocess.run(["systemctl", "start", NVME_TCP_UNIT], check=True, stdout=subprocess.DEVNULL)


def devices_by_serial(lsblk_text):
    return {(d.get("serial") or "").strip(): "/dev/" + (d.get("kname") or d["name"])
            for d in json.loads(lsblk_text)["blockdevices"] if d.get("type") == "disk" and d.get("serial")}


def not_zero(path, nbytes):
    """Whether the first or last nbytes of path hold anything but zeros."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        return bool(os.pread(fd, nbytes, 0).strip(b"\0") or os.pread(fd, nbytes, max(size - nbytes, 0)).strip(b"\0"))
    finally:
        os.close(fd)


def probe(request):
    clock = request.get("clock")
    behind = step_clock(clock) if clock is not None else None
    nvme_tcp = set(request.get("nvme_tcp") or [])
    wanted = set(request.get("serials", []))
    start = time.monotonic()
    while True:
        text = subprocess.run(request["lsblk"], check=True, capture_output=True, text=True).stdout
        found = devices_by_serial(text)
        if nvme_tcp - set(found):
            # Not all up yet: the unit may still be running from boot (systemctl waits for it) or
            # not have run. When every namespace is visible, systemctl (slow to start right after
            # a restore) is not needed at all.
            start_nvme_tcp()
            nvme_tcp = set()
            continue
        if wanted <= set(found) or time.monotonic() - start >= request.get("wait", 0):
            break
        time.sleep(0.5)
    waited = time.monotonic() - start
    nbytes = request.get("pristine_bytes", 0)
    dirty = [found[s] for s in sorted(wanted & set(found)) if nbytes and not_zero(found[s], nbytes)]
    return {"behind_s": behind, "waited_s": round(waited, 2), "lsblk": text, "dirty": dirty}


if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.argv[1]))))
