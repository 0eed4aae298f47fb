"""lab.json, the record of a running lab: what lab-up wrote for status, hot-plug, the bench and the
scenarios (SSH endpoints, keys, pinned host keys, every declared disk). It carries a format number;
`load` refuses another format or a file of another shape in one line, naming the field, instead of
a KeyError in whichever reader meets it first.

The fields are a table per level (FIELDS): name -> the JSON types it may have. Terraform's outputs
give most of them (terraform/outputs.tf), lab-up adds the login, the timing and what hot-plug
learnt (rmw_nodes).
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import inputs
from ..errors import UsageError

FORMAT = 1
NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))
OPTIONAL_TEXT = (str, type(None))
FIELDS = {
    "lab": {"format": (int,), "lab": (str,), "lab_file": (str,), "libvirt_uri": (str,), "vms": (dict,),
            "disks": (dict,)},
    "vm": {"domain": (str,), "uuid": (str,), "root_volume": (str,), "guest": (str,), "ssh_host": (str,),
           "ssh_port": (int,), "console_log": OPTIONAL_TEXT, "user": (str,), "key_file": (str,),
           "host_key": (str,)},
    "disk": {"vm": (str,), "name": (str,), "bus": (str,), "geometry": (str,), "serial": (str,),
             "backing_serial": OPTIONAL_TEXT, "logical_block_size": (int,), "physical_block_size": (int,),
             "min_io_size": (int,), "opt_io_size": (int,), "size_bytes": NUMBER, "volume": (str,),
             "latency": (str,), "write_delay_ms": NUMBER, "mapper": OPTIONAL_TEXT, "rmw": (bool,),
             "rmw_read_iops": OPTIONAL_NUMBER},
}
MAX_BYTES = 4 << 20  # a lab at every bound of labdef (16 VMs, 496 disks) writes well under 1 MiB


def _short(value) -> str:
    """A value as lab.json spells it, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fields(where: str, table, level: str) -> None:
    if not isinstance(table, dict):
        raise UsageError(f"{where}: {_short(table)} is not an object; expected a {level} entry")
    for name, types in FIELDS[level].items():
        if name not in table:
            raise UsageError(f"{where}: no '{name}'")
        value = table[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise UsageError(f"{where}: {name} = {_short(value)}: expected "
                             + " or ".join("null" if t is type(None) else t.__name__ for t in types))


def check(data, where: str) -> dict:
    """`data` as lab.json must be, or one UsageError line naming what is not."""
    if not isinstance(data, dict):
        raise UsageError(f"{where}: not an object; expected lab.json as lab-up writes it")
    if data.get("format") != FORMAT:
        raise UsageError(f"{where}: format {data.get('format')!r}, this sectorlab reads format {FORMAT} (written by "
                         f"another version of sectorlab); 'make lab-up' brings the lab up afresh")
    _fields(where, data, "lab")
    for name, vm in data["vms"].items():
        _fields(f"{where}: vms.{name}", vm, "vm")
    for key, disk in data["disks"].items():
        _fields(f"{where}: disks.{key}", disk, "disk")
        if disk["vm"] not in data["vms"]:
            raise UsageError(f"{where}: disks.{key}: vm {disk['vm']!r} is not one of the lab's VMs")
    return data


def load(path: Path) -> dict:
    """The lab.json at `path`, checked (check()); read within inputs' bounds."""
    text = inputs.read_text(path, "lab record", MAX_BYTES)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise UsageError(f"{path}: not JSON ({e}); expected lab.json as lab-up writes it") from e
    return check(data, str(path))
