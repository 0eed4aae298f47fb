"""`sectorlab lab twin`: one lab and one bench of a DBA's own disk, drive and load.

Three inputs, each read as the command of its own reads it:

- the disk's geometry: a server's disks as `scripts/collect-host-geometry` (or `lsblk -J ...`)
  wrote them, read by `sectorlab lab from-host` (labdef/fromhost.py), and the disk chosen by its
  kernel name (`--disk`, needed when the file has more than one disk the lab can present);
- the drive's timing: a device profile, the catalog's (`sectorlab geometries` lists them) or the
  profile file `sectorlab probe` wrote of the real drive (docs/probe.md);
- the load: an AWR report (awr/parse.py and awr/load.py: its sessions, redo and CPU a transaction
  at its transactions a second, and its log writer's figures), as `bench-load --awr` reads one.

The result is a bench preset (labs/bench/'s form, written as a file of its own): a lab of one VM
whose disk has the server disk's bus and geometry and is served by the chosen profile, beside the
lab's floor (the same bus and geometry, no behaviour: what the drive adds is measured against it);
targets at each BLOCKSIZE the geometry takes (512 and 4096 on 512-byte sectors, with the override
on 512n as Oracle needs it there; 4096 on 4 KiB sectors); comparisons of 512 against 4096 on the
disk (the DBA's question) and of the floor against the disk at each; and the AWR report's load as
its closed loop, its figures beside the lab's. `sectorlab bench-load TWIN --clock virtual` runs it
on the device path in virtual time, `sectorlab bench TWIN` in a lab (its guest path too). The file
is checked as a preset (bench/kinds.load_preset) before it is kept.
"""

from __future__ import annotations

from pathlib import Path

import tomli_w

from .. import inputs
from ..devices import profiles as device_profiles
from ..errors import SectorlabError, UsageError
from ..paths import output_file, write_atomic
from . import fromhost

SIZE_MIB = 512
REPEATS, WARMUP_S, DURATION_S = 8, 2, 6
# The guest path's open loop (make bench): a few sessions at an offered rate the emulated guest keeps
# up with (the closed loop, bench-load, runs the AWR's own sessions and rate).
GUEST_SESSIONS, GUEST_RATE = 4, 1000
MINE, FLOOR = "mine", "floor"


def _choose(host: Path, disks: list[fromhost.HostDisk], name: str | None,
            skipped: dict[str, str]) -> fromhost.HostDisk:
    names = [d.name for d in disks]
    if name is not None and name in skipped:
        raise UsageError(f"--disk {name!r}: {name}: {skipped[name]}: expected one of {', '.join(names) or '(none)'}")
    if name is None:
        if len(disks) == 1:
            return disks[0]
        raise UsageError(f"{host}: {len(disks)} disks ({', '.join(names)}): expected --disk NAME, the one whose "
                         f"redo you ask about")
    found = [d for d in disks if d.name == name]
    if not found:
        raise UsageError(f"--disk {name!r}: {host} has no such disk: expected one of {', '.join(names) or '(none)'}")
    return found[0]


def _disagreement(disk: fromhost.HostDisk, profile) -> list[str]:
    """What the disk's sectors say and the profile does not: a 512e disk (physical sector above its
    logical one) whose profile reads no unit before a partial write. Which BLOCKSIZE costs what comes
    from the profile's write unit (its read-modify-write), not from the geometry, which only says
    which BLOCKSIZEs the disk takes: said, so that a 512e disk with a profile of a drive that has no
    unit is not read as a 512e drive's answer."""
    unit = profile.params.get("write-unit", "0")
    if disk.physical > disk.logical and unit in ("0", "") and not profile.params.get("physical-sector"):
        return [f"{disk.name}: {disk.logical}-byte sectors on {disk.physical}-byte physical ones, but the device "
                f"profile {profile.name} reads no unit before a smaller write (write-unit 0): BLOCKSIZE "
                f"{disk.logical} costs nothing more in the model; a probe of the drive (its partial-cold figure) "
                f"tells whether it does"]
    return []


def _clean(x):
    """A table TOML can hold: no None (a key left out)."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def make(host: Path, disk: str | None, device: str, awr: Path, lab_name: str = "twin") -> tuple[dict, list[str]]:
    """The twin preset as a table, and what of the source it does not reproduce (from-host's notes)."""
    from ..awr import load as awr_load
    from ..awr import parse as awr_parse
    device_profiles.get(device)               # a catalog name or a profile file, read and checked (one line)
    report = awr_parse.read(awr)              # a report that is not one is refused before the disks are read
    disks, skipped = fromhost.read(host)
    chosen = _choose(host, disks, disk, skipped)
    plan = fromhost.plan([chosen], {}, str(host), lab_name, SIZE_MIB)
    notes = list(plan.not_reproduced) + _disagreement(chosen, device_profiles.get(device))
    lab = inputs.toml(plan.toml, "lab definition from", str(host))
    vm = lab["vm"][0]
    mine = vm["disk"][0]
    mine.update({"name": MINE, "device": str(device)})
    vm["disk"].append({"name": FLOOR, "bus": mine["bus"], "geometry": mine["geometry"], "device": "floor",
                       "size_mib": SIZE_MIB})
    logical, physical = chosen.logical, chosen.physical
    blocksizes = [512, 4096] if logical == 512 else [4096]
    override = logical == 512 and physical == 512      # BLOCKSIZE 4096 on 512n needs Oracle's override
    targets = [{"name": MINE, "disk": MINE, **({"override": True} if override else {})},
               {"name": FLOOR, "disk": FLOOR, **({"override": True} if override else {})}]
    compares = []
    if 512 in blocksizes:
        compares.append({"title": f"your disk ({chosen.name}) at BLOCKSIZE 512 against 4096", "a": f"{MINE}@512",
                         "b": f"{MINE}@4096", "primary": "log_file_sync_p50_ms"})
    for bs in blocksizes:
        compares.append({"title": f"the lab's floor against your disk at BLOCKSIZE {bs}: what your drive adds",
                         "a": f"{FLOOR}@{bs}", "b": f"{MINE}@{bs}", "primary": "log_file_sync_p50_ms"})
    configs = [f"{t['name']}@{bs}" for t in targets for bs in blocksizes]
    closed = awr_load.closed_loop(report, [c for c in configs if c.startswith(MINE)]) | {"awr": str(awr)}
    bench = {"seed": "", "title": f"twin of {chosen.name} ({chosen.model or 'model unknown'}) served by {device}, "
                                  f"the load of {awr.name}",
             "sessions": GUEST_SESSIONS, "redo_per_txn": closed["redo_per_txn"], "rate": GUEST_RATE,
             "arrival": "poisson", "blocksizes": blocksizes, "repeats": REPEATS, "warmup_s": WARMUP_S,
             "duration_s": DURATION_S, "target": targets, "compare": compares, "closed_loop": closed}
    doc = {"lab": lab["lab"], **({"geometry": lab["geometry"]} if "geometry" in lab else {}), "vm": [vm],
           "bench": bench}
    return _clean(doc), notes


def write(output: Path, host: Path, disk: str | None, device: str, awr: Path) -> tuple[Path, list[str]]:
    """The twin preset written to `output`, with a header saying where each part came from and how
    to run it, checked as a preset before it is kept (a refused one is not left behind)."""
    from ..bench import kinds
    output = output_file(output, "-o")
    doc, notes = make(host, disk, device, awr, fromhost.lab_name_for(output))
    header = [fromhost.comment(f"A twin (sectorlab lab twin): {doc['bench']['title']}."),
              fromhost.comment(f"The disk's geometry from {host}, its timing from the device profile {device}, "
                               f"the load from the AWR report {awr}."),
              "# Run it on the device path in virtual time, then in a lab of its own:",
              fromhost.comment(f"  sectorlab bench-load {output} --clock virtual"),
              fromhost.comment(f"  sectorlab bench {output}"),
              "# Not as on the source:", *[fromhost.comment(f"- {n}") for n in notes], ""]
    write_atomic(output, "\n".join(header) + "\n" + tomli_w.dumps(doc))
    try:
        kinds.load_preset(str(output))
    except UsageError as e:  # pragma: no cover (every value above is one a preset takes)
        output.unlink(missing_ok=True)
        raise SectorlabError(f"the twin of {host} is refused as a preset ({e}); this is sectorlab's fault: please "
                             f"report it with the three files") from e
    return output, notes
