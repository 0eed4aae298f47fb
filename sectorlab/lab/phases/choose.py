"""Phase 'choose path': converge (the lab runs), warm (a saved state matches: restore it) or cold
(boot, then save a state for the next lab-up), with the reason said; a lab that is not whole, or
left behind by an interrupted run, is taken down first. Everything in which the routes' later
phases differ is decided here and handed on as facts: the root disks' sources, whether the data
disks must read blank, whether a state is saved."""

from __future__ import annotations

from pathlib import Path

from ... import labdef
from ...errors import SectorlabError, UsageError
from ...host import accel as accel_mod
from ...host import libvirt
from .. import hostcheck, modelled, ownership, record, warm
from ..state import Progress, load_json
from ..teardown import down, faults, leftovers_of
from .runner import Phase


def running(lab: labdef.Lab, state: Path) -> bool:
    """Whether this lab is up now and whole: its lab.json exists and has every VM, and nothing in
    it is faulty (faults())."""
    data = record_or_none(state)
    if not data or set(data.vms) != {vm.name for vm in lab.vms}:
        return False
    return not faults(data)


def record_or_none(state: Path) -> record.LabRecord | None:
    """The lab's lab.json if it is there and readable by this sectorlab (LabRecord.load), else None:
    lab-up then treats the lab as not up, and takes down what is left of it first."""
    try:
        return record.LabRecord.load(state / "lab.json") if (state / "lab.json").exists() else None
    except UsageError:
        return None


def left_behind(lab: labdef.Lab, state: Path) -> list[str]:
    """What of this lab exists although it does not run: Terraform-managed resources, domains, its pool."""
    resources = load_json(state / "terraform.tfstate", {}).get("resources", [])
    left = [f"{len(resources)} Terraform resource(s)"] if resources else []
    return left + leftovers_of(lab.name, lab.vms[0].libvirt_uri)


def root_sources(route: str, state: Path, vm_names: list[str]) -> dict[str, str]:
    """What each VM's root volume is made from: the image (""), the saved state's root disk
    (warm), or what the running VMs were made from (converge)."""
    if route == "warm":
        return {name: str(state / f"root-{name}.qcow2") for name in vm_names}
    if route == "converge":
        previous = load_json(state / "terraform.tfvars.json", {}).get("vms", {})
        return {name: previous.get(name, {}).get("root_source", "") for name in vm_names}
    return {name: "" for name in vm_names}


def _take_down_first(lab: labdef.Lab, state: Path, why: str, progress: Progress) -> None:
    progress(f"lab {lab.name}{why}: taking the lab down first and bringing all of it up fresh")
    down(lab, progress)
    state.mkdir(parents=True, exist_ok=True)


def run(lab: labdef.Lab, state: Path, uri: str, vm_names: list[str], records: dict, identity: ownership.Identity,
        own_ports: set[int], cold: bool, save_state: bool, require_warm: bool, progress: Progress) -> dict:
    found = accel_mod.detect_for(uri)
    key, key_parts = warm.state_key(lab, {g: r.image_sha256 for g, r in records.items()},
                                    found.libvirt_domain_type, identity.id)
    saved = warm.SavedState(lab.name, key, key_parts)
    up = running(lab, state)
    if up and (changed := modelled.changed(lab)):
        # A running model keeps its size and behaviour: the disks are served anew, from scratch.
        _take_down_first(lab, state, f": {'; '.join(changed)}", progress)
        up = False
    if not up:
        data = record_or_none(state)
        broken = faults(data) if data else []
        if broken:
            # Part of the lab is gone or stopped: what remains is replaced, never mixed with new parts.
            _take_down_first(lab, state, f" is not whole: {'; '.join(broken)}", progress)
        elif left := left_behind(lab, state):
            # A run that was interrupted, or a host restart, leaves the lab defined but stopped; its
            # data volumes hold that run's writes, and a lab-up promises fresh ones.
            _take_down_first(lab, state, f" does not run, but {', '.join(left)} remain (an interrupted run or a "
                             f"host restart); their data disks may hold that run's writes", progress)
    if up:
        route, why = "converge", "the lab is running"
    elif cold:
        route, why = "cold", "asked for (--cold)"
    elif uri != "qemu:///system":
        route, why = "cold", (f"a saved state is kept and restored only on this host's qemu:///system, not "
                              f"on libvirt host {libvirt.get_host(uri).label}; none is saved")
        save_state = False
    else:
        missing = saved.missing(vm_names)
        route, why = ("cold", missing) if missing else ("warm", f"saved state {key}")
        if not missing:
            taken = [p for p in load_json(saved.dir / "ports.json", {}).values()
                     if p not in own_ports and hostcheck.port_in_use(p)]
            if taken:
                route, why = "cold", f"the saved state's SSH port {taken[0]} is in use"
    progress(f"path: {route} ({why})")
    if require_warm and route != "warm":
        raise SectorlabError(f"lab {lab.name}: --require-warm, but the lab cannot come up warm: {why}")
    if route == "warm":
        saved.install(state, vm_names)
    return {"route": route, "found": found, "key": key, "key_parts": key_parts, "saved": saved,
            "saves": save_state and route == "cold", "root_sources": root_sources(route, state, vm_names),
            "pristine": route != "converge",  # a fresh lab's data disks must read as zeros
            "clock_behind": False, "replace": False}


PHASE = Phase("choose path", run, gives=("route", "found", "key", "key_parts", "saved", "saves", "root_sources",
                                           "pristine", "clock_behind", "replace"))
