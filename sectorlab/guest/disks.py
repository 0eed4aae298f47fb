"""What a guest reports about its disks: parsers for lsblk, blockdev, sysfs and nvme-cli output.

Each parser checks the shape of what it parses and raises GuestOutputError naming the command,
so a changed tool version fails loudly instead of yielding wrong numbers. They are unit-tested
against outputs saved from real guests (labtests/unit/data/). And what a measurement does to the
disks first: unwatch().
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import SectorlabError
from ..inguest import nvmeformat

LSBLK_COLUMNS = "NAME,KNAME,TYPE,SERIAL,LOG-SEC,PHY-SEC,MIN-IO,OPT-IO,ALIGNMENT,SIZE,TRAN,MODEL"
LSBLK_COMMAND = f"lsblk -J -b -d -o {LSBLK_COLUMNS}"


class GuestOutputError(SectorlabError):
    def __init__(self, command: str, why: str, text: str):
        snippet = text.strip().replace("\n", " ")[:200]
        super().__init__(f"unexpected output of '{command}': {why}: {snippet!r}")


@dataclass(frozen=True)
class BlockDevice:
    name: str  # kernel name: vdb, sda, nvme0n1
    serial: str
    logical_block_size: int
    physical_block_size: int
    minimum_io_size: int
    optimal_io_size: int
    alignment_offset: int
    size_bytes: int
    transport: str
    model: str

    @property
    def path(self) -> str:
        return f"/dev/{self.name}"


def int_field(dev: dict, key: str, command: str, text: str) -> int:
    """A number column of lsblk's JSON: a number (util-linux 2.37+) or a string of digits (older)."""
    value = dev.get(key)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise GuestOutputError(command, f"device {dev.get('name')!r} has no integer {key!r}", text)


def str_field(dev: dict, key: str, command: str, text: str) -> str:
    value = dev.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise GuestOutputError(command, f"device {dev.get('name')!r} has a {key!r} that is not text: {value!r}", text)
    return value


def parse_lsblk(text: str, command: str = LSBLK_COMMAND) -> list[BlockDevice]:
    """Disks (TYPE disk) from `lsblk -J -b -d -o ...`."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise GuestOutputError(command, f"not JSON ({e})", text) from e
    if not isinstance(data, dict) or not isinstance(data.get("blockdevices"), list):
        raise GuestOutputError(command, "no 'blockdevices' list", text)
    disks = []
    for dev in data["blockdevices"]:
        if not isinstance(dev, dict):
            raise GuestOutputError(command, f"a 'blockdevices' entry is not an object: {dev!r}", text)
        if dev.get("type") != "disk":
            continue
        name = dev.get("kname") or dev.get("name")
        if not isinstance(name, str) or not name:
            raise GuestOutputError(command, "a disk without a 'name'", text)
        disks.append(BlockDevice(
            name=name,
            serial=str_field(dev, "serial", command, text).strip(),
            logical_block_size=int_field(dev, "log-sec", command, text),
            physical_block_size=int_field(dev, "phy-sec", command, text),
            minimum_io_size=int_field(dev, "min-io", command, text),
            optimal_io_size=int_field(dev, "opt-io", command, text),
            alignment_offset=int_field(dev, "alignment", command, text),
            size_bytes=int_field(dev, "size", command, text),
            transport=str_field(dev, "tran", command, text),
            model=str_field(dev, "model", command, text).strip(),
        ))
    return disks


def by_serial(disks: list[BlockDevice]) -> dict[str, BlockDevice]:
    return {d.serial: d for d in disks if d.serial}


def parse_blockdev_sizes(text: str, command: str) -> tuple[int, int]:
    """`blockdev --getss --getpbsz DEV` prints the logical then the physical sector size, one per line."""
    lines = text.split()
    if len(lines) != 2 or not all(x.isascii() and x.isdigit() for x in lines):
        raise GuestOutputError(command, "expected two numbers (logical, physical)", text)
    return int(lines[0]), int(lines[1])


def parse_nvme_id_ns(text: str, command: str) -> dict:
    """`nvme id-ns DEV -o json`: the LBA format in use and its data size in bytes (parsed by the
    guest tools' parser, sectorlab/inguest/nvmeformat.py, which runs on both sides)."""
    try:
        in_use, formats = nvmeformat.parse_lba_formats(text, command)
    except nvmeformat.UnexpectedOutput as e:
        raise GuestOutputError(command, e.why, text) from e
    return {"lba_format": in_use, "data_size": formats[in_use]["data_size"],
            "metadata_size": formats[in_use]["metadata_size"], "formats": [f["data_size"] for f in formats],
            "nsze": json.loads(text).get("nsze")}


# udev watches every disk node (Debian's 60-block.rules: OPTIONS+="watch"): when a process that had it
# open for writing closes it, udev re-probes the disk (blkid: about 40 reads, 0.5 s on a spinning
# disk's model), and those reads queue in front of the next run's writes. A measured disk is not
# watched: a rule in /run (gone at the guest's next boot) by the kernel's exact name for each node.
UNWATCH_RULES = "/run/udev/rules.d/61-sectorlab-unwatched.rules"
UNWATCH_SCRIPT = f"""set -e
mkdir -p {UNWATCH_RULES.rsplit("/", 1)[0]}
touch {UNWATCH_RULES}
for dev; do
  name=$(basename "$(readlink -e "$dev")")
  line="ACTION!=\\"remove\\", SUBSYSTEM==\\"block\\", KERNEL==\\"$name\\", OPTIONS+=\\"nowatch\\""
  grep -qxF "$line" {UNWATCH_RULES} || echo "$line" >> {UNWATCH_RULES}
done
udevadm control --reload
for dev; do udevadm trigger --settle --action=change "$dev"; done
"""


def unwatch(guest, paths: list[str]) -> None:
    """Stop udev re-probing these block devices after each writer closes them (UNWATCH_RULES): the
    probe of a change event runs now, once, instead of inside the next measured run."""
    if paths:
        guest.check_output("sudo -n sh -c", UNWATCH_SCRIPT, "sh", *paths, timeout=120)
