#!/usr/bin/python3
"""What `lab up` checks inside a guest, in one round trip: under TCG every SSH command, sudo and
process start costs tenths of a second, so this runs once per guest, as root, with `python3 -c`.
Standard library only (it runs in the guests).

Argument: one JSON object
  clock           true: step the guest's clock to the host's. The probe then writes the line
                  CLOCK_QUESTION and reads the host's time (seconds since the epoch) from stdin,
                  and sets the clock to it plus half the round trip
  nvme_tcp        serials of the in-guest NVMe/TCP namespaces: when one is not visible, start the
                  targets' unit (or wait for its start at boot) once
  serials         disk serials that must be visible; waits for them (hot-plugged NVMe appears late)
  wait            how many seconds to wait for them
  pristine_bytes  check that the first and last this many bytes of those disks are zeros (0: no)
  lsblk           the lsblk command line to run (sectorlab.guestdisks.LSBLK_COMMAND, split)
  set_write_cache {serial: "write through" | "write back"}: set those disks' queue/write_cache
                  (the NVMe disks: QEMU's NVMe device says it has a volatile cache whatever it is told)
Output: one JSON object
  behind_s     how far the guest's clock was behind (null if not stepped)
  waited_s     how long the serials took to appear
  lsblk        lsblk's output (parsed on the host by sectorlab.guestdisks)
  dirty        device paths that are not all zeros at either end
  write_cache  {serial: its queue/write_cache} of the wanted disks that are visible
"""

import json
import os
import subprocess
import sys
import time

NVME_TCP_UNIT = "sectorlab-nvme-tcp.service"
SYS_BLOCK = "/sys/block"


CLOCK_QUESTION = "sectorlab-probe: host time?"


def host_time_now(ask=sys.stdout, answer=sys.stdin, clock=time.monotonic):
    """The host's time now, asked over the probe's own SSH channel: the host answers when the
    question arrives, so the answer is late by about half the round trip (timed by `clock`). A time
    sent with the request would be late by the whole start of sudo and python3 (seconds after a
    restore)."""
    ask.write(CLOCK_QUESTION + "\n")
    ask.flush()
    sent = clock()
    line = answer.readline()
    if not line:
        raise ValueError("no host time on stdin")
    return float(line) + (clock() - sent) / 2


def step_clock():
    # In-process rather than date(1): after a restore every program's first run is slow under TCG.
    host = host_time_now()
    behind = host - time.time()
    time.clock_settime(time.CLOCK_REALTIME, host)
    return behind


def start_nvme_tcp():
    """Start the targets' unit, or wait for its start at boot; a no-op when it has run. When it
    fails, exit with its last journal lines (the guest-side reason)."""
    started = subprocess.run(["systemctl", "start", NVME_TCP_UNIT], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    if started.returncode != 0:
        journal = subprocess.run(["journalctl", "-u", NVME_TCP_UNIT, "-n", "5", "--no-pager", "-o", "cat"],
                                 capture_output=True, text=True).stdout.strip()
        sys.exit(f"{NVME_TCP_UNIT} failed (systemctl start exited {started.returncode}): "
                 + (journal.replace("\n", " | ") or started.stderr.strip() or "no journal lines"))


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


def write_cache(device, set_to=None):
    """The disk's queue/write_cache, after setting it to `set_to` when it says otherwise; None for a
    disk without one (the host then names it as not as declared)."""
    path = os.path.join(SYS_BLOCK, os.path.basename(device), "queue", "write_cache")
    try:
        with open(path) as f:
            now = f.read().strip()
    except FileNotFoundError:
        return None
    if set_to and now != set_to:
        with open(path, "w") as f:
            f.write(set_to)
        with open(path) as f:
            now = f.read().strip()
    return now


def probe(request):
    behind = step_clock() if request.get("clock") else None
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
    setting = request.get("set_write_cache") or {}
    caches = {s: write_cache(found[s], setting.get(s)) for s in sorted(wanted & set(found))}
    return {"behind_s": behind, "waited_s": round(waited, 2), "lsblk": text, "dirty": dirty, "write_cache": caches}


if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.argv[1]))))
