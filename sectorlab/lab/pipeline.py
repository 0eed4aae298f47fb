"""`lab up` as a pipeline of named phases (LabUp.PIPELINE) over one of three routes (routes.py:
cold, warm, converge), and lab.json as it writes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from pathlib import Path

from .. import images, labdef
from ..errors import SectorlabError, UsageError
from ..guest import NVME_TCP_FAILED_MARKER, NVME_TCP_READY_MARKER, console_says_ready
from ..host import accel as accel_mod
from ..host import libvirt
from ..paths import write_atomic
from . import hostcheck, hotplug, modelled, ownership, record, terraform, warm
from .diskcheck import guests_from_lab_json, print_table, probe, verify, wait_for
from .pool import publish_image
from .routes import _Cold, _Converge, _Route, _Warm
from .seeds import tfvars
from .state import (
    LAB_USER,
    Progress,
    _ensure_keys,
    _load_json,
    _ports,
    _say,
    as_lab,
    console_dir,
    images_pool_lock,
    lab_lock,
    own_ports,
    state_dir,
)
from .teardown import _holdings, check_host, down, faults, leftovers_of

PAUSE_ENV = "SECTORLAB_PAUSE_BEFORE"  # a lab-up phase to wait before (LabUp.pause_point)


# A hot-plugged NVMe controller takes the guest a few seconds to probe under TCG.
NVME_APPEAR_TIMEOUT = 90.0
# How long a cold lab-up waits, after SSH is up, for the console line that says the in-guest
# NVMe/TCP targets are connected; then it asks the guest (the probe starts or waits for them).
NVME_TCP_CONSOLE_TIMEOUT = 60.0


domain_name = ownership.domain_name


def _running(lab: labdef.Lab, state: Path) -> bool:
    """Whether this lab is up now and whole: its lab.json exists and has every VM, and nothing in
    it is faulty (faults())."""
    data = _record_or_none(state)
    if not data or set(data.vms) != {vm.name for vm in lab.vms}:
        return False
    return not faults(data)


def _record_or_none(state: Path) -> record.LabRecord | None:
    """The lab's lab.json if it is there and readable by this sectorlab (LabRecord.load), else None:
    lab-up then treats the lab as not up, and takes down what is left of it first."""
    try:
        return record.LabRecord.load(state / "lab.json") if (state / "lab.json").exists() else None
    except UsageError:
        return None


def _left_behind(lab: labdef.Lab, state: Path) -> list[str]:
    """What of this lab exists although it does not run: Terraform-managed resources, domains, its pool."""
    resources = _load_json(state / "terraform.tfstate", {}).get("resources", [])
    left = [f"{len(resources)} Terraform resource(s)"] if resources else []
    return left + leftovers_of(lab.name, lab.vms[0].libvirt_uri)


class LabUp:
    """`lab up` as a pipeline of named phases, run in this order by run(). Each phase is a method;
    what differs between the cold, warm and converge paths is in the route (_Cold, _Warm,
    _Converge), chosen in 'choose path'. run() times each phase under the label the output has
    always used (None: not timed on its own) and says in which phase a failure or an interrupt
    stopped the lab-up."""

    PIPELINE = ("validate", "image", "choose path", "provision", "models", "start", "wait", "save", "hot-plug",
                "verify")

    def __init__(self, lab: labdef.Lab | Path, progress: Progress = _say, cold: bool = False, save_state: bool = True,
                 require_warm: bool = False):
        self.given, self.progress = lab, progress
        self.cold, self.save_state, self.require_warm = cold, save_state, require_warm
        self.timings: list[list] = []
        self.route: _Route = _Cold()

    def run(self) -> record.LabRecord:
        t0 = time.monotonic()
        with contextlib.ExitStack() as self.held:  # the lab's lock, from 'validate' on
            for phase in self.PIPELINE:
                start = time.monotonic()
                try:
                    self.pause_point(phase)
                    label = getattr(self, "phase_" + phase.replace(" ", "_").replace("-", ""))()
                except BaseException as e:
                    # Bad input is refused in one line before anything starts; past that, say where it stopped.
                    if phase != "validate" and not isinstance(e, UsageError):
                        self.progress(f"lab {self.lab.name}: lab-up stopped in its '{phase}' phase"
                                      + (" (interrupted)" if isinstance(e, KeyboardInterrupt) else ""))
                    raise
                if label:
                    self.timed(label, time.monotonic() - start)
            return self.finish(time.monotonic() - t0)

    def pause_point(self, phase: str) -> None:
        """With $SECTORLAB_PAUSE_BEFORE naming this phase, wait there (up to an hour) after saying
        so: the interrupt tests (labtests/test_faults.py) signal a lab-up at a phase of their choice,
        not at whatever moment a timer hits."""
        if os.environ.get(PAUSE_ENV) == phase:
            self.progress(f"lab {getattr(self, 'lab', None) and self.lab.name}: paused before its '{phase}' "
                          f"phase ({PAUSE_ENV})")
            time.sleep(3600)

    def timed(self, label: str, seconds: float) -> None:
        for t in self.timings:
            if t[0] == label:
                t[1] += seconds
                return
        self.timings.append([label, seconds])

    def console(self, name: str, marker: str):
        """A check that the VM's console says `marker`, or None for an image that does not write it."""
        if not self.records[self.vm_guest[name]].ready_marker:
            return None
        return console_says_ready(self.data.vm(name).console_log, marker, self.guests[name].via)

    def write_tfvars(self) -> None:
        variables = tfvars(self.lab, self.state, self.ports, self.found.libvirt_domain_type, self.published,
                           self.identity, self.route.root_sources(self))
        (self.state / "terraform.tfvars.json").write_text(json.dumps(variables, indent=2))

    # ---- the phases, in PIPELINE's order --------------------------------------------------------
    def phase_validate(self) -> None:
        self.lab = lab = as_lab(self.given)  # read once: a Lab from the CLI or the bench is not read again
        self.lab_file = lab.path
        self.held.enter_context(lab_lock(lab.name, "lab up"))  # from here on, this process alone works on it
        self.state = state_dir(lab.name)
        self.own_ports = own_ports(lab.name)
        held = check_host(lab, self.own_ports)  # before anything of the lab is made
        self.uri = lab.vms[0].libvirt_uri
        self.vm_names = [vm.name for vm in lab.vms]
        self.identity = ownership.identity(lab.name, create=True, adopt=held.adoptable_id())
        self.state.mkdir(parents=True, exist_ok=True)
        self.progress(f"lab {lab.name}: {len(lab.vms)} VM(s), {sum(len(v.disks) for v in lab.vms)} data disks "
                      f"({self.lab_file})")
        self.vm_guest = {vm.name: vm.guest for vm in lab.vms}

    def phase_image(self) -> str:
        self.records = {g: images.build(g, progress=self.progress) for g in sorted(set(self.vm_guest.values()))}
        return "image"

    def phase_choose_path(self) -> None:
        lab, state = self.lab, self.state
        self.found = accel_mod.detect_for(self.uri)
        self.key, key_parts = warm.state_key(lab, {g: r.image_sha256 for g, r in self.records.items()},
                                             self.found.libvirt_domain_type, self.identity.id)
        self.key_parts = key_parts
        self.saved = warm.SavedState(lab.name, self.key, key_parts)
        running = _running(lab, state)
        if running and (changed := modelled.changed(lab)):
            # A running model keeps its size and behaviour: the disks are served anew, from scratch.
            self.progress(f"lab {lab.name}: {'; '.join(changed)}: taking the lab down first and bringing all of "
                          f"it up fresh")
            down(self.lab, self.progress)
            state.mkdir(parents=True, exist_ok=True)
            running = False
        if not running:
            data = _record_or_none(state)
            broken = faults(data) if data else []
            left = _left_behind(lab, state)
            if broken:
                # Part of the lab is gone or stopped: what remains is replaced, never mixed with new parts.
                self.progress(f"lab {lab.name} is not whole: {'; '.join(broken)}: taking the lab down first and "
                              f"bringing all of it up fresh")
                down(self.lab, self.progress)
                state.mkdir(parents=True, exist_ok=True)
            elif left:
                # A run that was interrupted, or a host restart, leaves the lab defined but stopped; its
                # data volumes hold that run's writes, and a lab-up promises fresh ones.
                self.progress(f"lab {lab.name} does not run, but {', '.join(left)} remain (an interrupted run or "
                              f"a host restart); their data disks may hold that run's writes: taking the lab down "
                              f"first")
                down(self.lab, self.progress)
                state.mkdir(parents=True, exist_ok=True)
        if running:
            route, why = _Converge(), "the lab is running"
        elif self.cold:
            route, why = _Cold(), "asked for (--cold)"
        elif self.uri != "qemu:///system":
            route, why = _Cold(), (f"a saved state is kept and restored only on this host's qemu:///system, not "
                                   f"on libvirt host {libvirt.get_host(self.uri).label}; none is saved")
            self.save_state = False
        else:
            missing = self.saved.missing(self.vm_names)
            route, why = (_Cold(), missing) if missing else (_Warm(), f"saved state {self.key}")
            if not missing:
                taken = [p for p in _load_json(self.saved.dir / "ports.json", {}).values()
                         if p not in self.own_ports and hostcheck.port_in_use(p)]
                if taken:
                    route, why = _Cold(), f"the saved state's SSH port {taken[0]} is in use"
        self.route = route
        self.progress(f"path: {route.name} ({why})")
        if self.require_warm and route.name != "warm":
            raise SectorlabError(f"lab {lab.name}: --require-warm, but the lab cannot come up warm: {why}")
        if route.name == "warm":
            self.saved.install(state, self.vm_names)

    def phase_provision(self) -> None:
        _ensure_keys(self.lab, self.state)
        start = time.monotonic()
        with images_pool_lock():  # labs brought up at once share the pool
            self.published = {g: publish_image(self.uri, r, self.progress) for g, r in self.records.items()}
        if any(p["uploaded"] for p in self.published.values()):
            self.timed("image upload", time.monotonic() - start)
        self.ports = _ports(self.lab, self.state)
        libvirt.get_host(self.uri).make_dir(console_dir(self.lab.name, self.uri, self.state))
        self.domains = {name: domain_name(self.lab.name, name) for name in self.vm_names}
        self.write_tfvars()

    def phase_models(self) -> str | None:
        """The device models of the lab's disks, before Terraform starts or restores the domains that
        open their sockets (a converging lab's run already: none is started again)."""
        if not any(vm.profile(d) for vm, d in self.lab.disks()):
            return None
        started = modelled.start(self.lab, libvirt.get_host(self.uri).qemu_uid(), self.progress)
        return "device models" if started else None

    def phase_start(self) -> str:
        self.tf = terraform.Terraform(self.state, self.progress)
        self.tf.init()
        self.progress(f"terraform apply ({Path(self.tf.binary).name}, domain type {self.found.libvirt_domain_type}: "
                      f"{self.found.reason})")
        self.apply_args = ["apply", "-input=false", "-auto-approve", "-no-color",
                           f"-var-file={self.state / 'terraform.tfvars.json'}"]
        # Again, just before Terraform defines the domains: another lab-up may have taken one of the
        # names since 'validate' (libvirt would refuse the second definition anyway; this names the owner).
        ownership.refuse_collisions(_holdings(self.lab.name, self.uri), self.vm_names)
        self.route.apply(self)  # the warm route may fall back to the cold one
        summary_line = next((line for line in (self.state / "terraform-apply.log").read_text().splitlines()
                             if line.startswith("Apply complete!")), "apply complete")
        self.progress(summary_line + (" (guests restored from their saved state)" if self.route.name == "warm"
                                      else ""))
        self.data = _lab_json(self.lab, self.state, self.tf.outputs())
        write_atomic(self.state / "lab.json", self.data.text())
        self.guests = guests_from_lab_json(self.data)
        return self.route.apply_label

    def phase_wait(self) -> str:
        for name, guest in self.guests.items():
            self.route.wait(self, name, guest)
        return self.route.wait_label

    def phase_save(self) -> None:
        """On the cold path: the NVMe/TCP targets up, then each guest's state saved for the next lab-up."""
        if not self.route.saves(self):
            return
        start = time.monotonic()
        for name, guest in self.guests.items():  # the state is saved with the NVMe/TCP targets up
            declared = self.data.disks_of(name)
            if not any(d.bus == "nvme-tcp" for d in declared):
                continue
            up, failed = self.console(name, NVME_TCP_READY_MARKER), self.console(name, NVME_TCP_FAILED_MARKER)
            if up is None or failed is None:
                probe(guest, declared)  # an image without the console lines: ask the guest
                continue
            said = wait_for(lambda up=up, failed=failed: up() or failed(), NVME_TCP_CONSOLE_TIMEOUT)
            if said and not failed():
                continue
            self.progress(f"{name}: " + ("its NVMe/TCP targets' unit failed, says its console" if said else
                                         f"no '{NVME_TCP_READY_MARKER}' line on its console after "
                                         f"{NVME_TCP_CONSOLE_TIMEOUT:.0f} s") + "; asking the guest")
            # The probe starts the targets' unit, or waits for it, and lists the namespaces; a unit
            # that fails again fails the probe, with the guest's message.
            probe(guest, declared)
        self.timed("NVMe/TCP targets", time.monotonic() - start)
        start = time.monotonic()
        for name in warm.save(self.saved, self.key_parts, self.uri, self.data.vms, self.state, self.progress):
            self.guests[name].close()
            self.guests[name].wait_until_up(60, self.progress)
        self.timed("save state", time.monotonic() - start)

    def phase_hotplug(self) -> str:
        for name in self.vm_names:
            added = hotplug.hotplug_nvme(self.uri, self.data.vm(name).domain, self.data.disks_of(name))
            if added:
                self.progress(f"{name}: hot-plugged NVMe controller(s) {', '.join(added)}")
        return "disk check"

    def phase_verify(self) -> str:
        self.rows, self.problems = verify(self.data, self.guests, self.progress, wait=NVME_APPEAR_TIMEOUT,
                                          clock=self.route.steps_clock(self), pristine=self.route.pristine)
        return "disk check"

    def finish(self, total: float) -> record.LabRecord:
        lab = self.lab
        print_table(self.rows)
        summary = ", ".join(f"{n} {s:.1f} s" for n, s in self.timings)
        timing = record.Timing(path=self.route.name, total_s=round(total, 2),
                               phases={n: round(v, 2) for n, v in self.timings})
        self.data = data = dataclasses.replace(self.data, timing=timing)
        write_atomic(self.state / "lab.json", data.text())
        self.progress(f"lab {lab.name} up by the {self.route.name} path in {total:.1f} s ({summary}); "
                      f"state in {self.state}")
        if self.problems:
            raise SectorlabError(f"lab {lab.name}: {len(self.problems)} disk(s) not as declared: "
                                 + "; ".join(self.problems))
        return data


def up(lab: labdef.Lab | Path, progress: Progress = _say, cold: bool = False, save_state: bool = True,
       require_warm: bool = False) -> record.LabRecord:
    """Bring the lab up and verify every disk (LabUp's phases). Three paths, named in the output:
    converge (the lab runs: Terraform finds nothing or little to change), warm (a saved state
    matches: restore it) and cold (boot, then save a state for the next lab-up)."""
    return LabUp(lab, progress, cold, save_state, require_warm).run()


def _lab_json(lab: labdef.Lab, state: Path, outputs: dict) -> record.LabRecord:
    """The record of the lab Terraform made (its outputs), with the login, checked as load() checks it."""
    vms, devices = {}, modelled.devices(lab)
    for name, vm in outputs["vms"].items():
        vms[name] = {**vm, "user": LAB_USER, "key_file": str(state / "id_ed25519"),
                     "host_key": (state / f"host-{name}.pub").read_text().strip()}
    return record.LabRecord.from_json({"format": record.FORMAT, "lab": lab.name, "lab_file": str(lab.path),
                                       "libvirt_uri": outputs["libvirt_uri"], "vms": vms,
                                       "disks": {key: {**d, "device": devices[key]}
                                                 for key, d in outputs["disks"].items()}},
                                      "lab.json")
