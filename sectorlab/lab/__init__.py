"""Lab lifecycle: `sectorlab lab up|down|status`, driving Terraform and the guests.

State lives in $SECTORLAB_CACHE/labs/<lab>/: the Terraform state and variables, the lab's login
key, each VM's host key (so a re-run converges instead of replacing VMs) and lab.json, the one
file the tests read (SSH endpoints, keys, pinned host keys, every declared disk).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from .. import accel as accel_mod
from .. import geometry as geo
from .. import guestdisks, images, labdef, remote, rmw, seed, sshkeys, tooling, virsh, warm
from ..errors import SectorlabError, UsageError
from ..guest import NVME_TCP_FAILED_MARKER, NVME_TCP_READY_MARKER, READY_MARKER, Guest, console_says_ready
from ..inguest import guestprobe
from ..paths import REPO, cache_dir, link_or_copy, write_atomic
from . import ownership, record

TERRAFORM_DIR = REPO / "terraform"
DEFAULT_LAB_FILE = REPO / "labs" / "default.toml"
PAUSE_ENV = "SECTORLAB_PAUSE_BEFORE"  # a lab-up phase to wait before (LabUp.pause_point)
LAB_USER = "lab"
SSH_TIMEOUT = 900.0
# A hot-plugged NVMe controller takes the guest a few seconds to probe under TCG.
NVME_APPEAR_TIMEOUT = 90.0
# How long a cold lab-up waits, after SSH is up, for the console line that says the in-guest
# NVMe/TCP targets are connected; then it asks the guest (the probe starts or waits for them).
NVME_TCP_CONSOLE_TIMEOUT = 60.0

Progress = Callable[[str], None]


def _say(msg: str) -> None:
    print(f"sectorlab: {msg}", file=sys.stderr, flush=True)


def lab_file_from_env() -> Path:
    return Path(os.environ.get("SECTORLAB_LAB_FILE") or DEFAULT_LAB_FILE)


def state_dir(lab_name: str) -> Path:
    return cache_dir() / "labs" / lab_name


IMAGE_POOL = "sectorlab-images"
IMAGE_POOL_DIR = "/var/lib/libvirt/images/sectorlab-images"


def publish_image(uri: str, record: images.ImageRecord, progress: Progress) -> dict:
    """Make the built image a volume of the shared pool the labs' root disks are backed by, with the
    image's kernel and initramfs beside it for direct kernel boot. On this host each is a hard link
    to the cached file (no copy at each lab-up); on a remote libvirt host each is uploaded once.
    Older images of the guest that no domain uses are removed from the pool.
    Returns the volume name, the files uploaded, and the direct-boot kernel, initrd and command line
    ('' for GRUB)."""
    image, guest = Path(record.image), record.guest
    if IMAGE_POOL not in virsh.run(uri, "pool-list", "--all", "--name", check=False).split():
        virsh.run(uri, "pool-define-as", IMAGE_POOL, "dir", "--target", IMAGE_POOL_DIR)
        virsh.run(uri, "pool-build", IMAGE_POOL)
    if virsh.run(uri, "pool-info", IMAGE_POOL, check=False).find("running") < 0:
        virsh.run(uri, "pool-start", IMAGE_POOL)
    listing = virsh.run(uri, "vol-list", IMAGE_POOL, check=False)
    volumes = [v.split()[0] for v in listing.splitlines() if v.split()]
    uploaded: list[str] = []

    def put(source: Path, fmt: str) -> str:
        """The file as a volume of the image pool; its path on the libvirt host."""
        target = Path(IMAGE_POOL_DIR) / source.name
        if not remote.is_remote(uri):
            if not target.exists():
                link_or_copy(source, target)
                os.chmod(target, 0o644)
                virsh.run(uri, "pool-refresh", IMAGE_POOL)
            return str(target)
        if source.name not in volumes:
            size = source.stat().st_size
            progress(f"uploading {source.name} ({size / 2**20:.0f} MiB) to {remote.ssh_host(uri).label}")
            virsh.run(uri, "vol-create-as", IMAGE_POOL, source.name, str(size), "--format", fmt)
            try:
                virsh.run(uri, "vol-upload", "--pool", IMAGE_POOL, source.name, str(source), timeout=3600)
            except BaseException:
                virsh.run(uri, "vol-delete", "--pool", IMAGE_POOL, source.name, check=False)  # never half an image
                raise
            uploaded.append(source.name)
        return virsh.run(uri, "vol-path", "--pool", IMAGE_POOL, source.name).strip()

    put(image, "qcow2")
    boot = {"kernel": "", "initrd": "", "cmdline": ""}
    if record.cmdline and record.kernel and record.initrd:
        boot = {"kernel": put(Path(record.kernel), "raw"), "initrd": put(Path(record.initrd), "raw"),
                "cmdline": record.cmdline}
    in_use = " ".join(virsh.run(uri, "dumpxml", d, check=False)
                      for d in virsh.run(uri, "list", "--all", "--name", check=False).split())
    built = re.compile(rf"^{re.escape(guest)}-[0-9a-f]{{16}}\.(qcow2|kernel|initrd)$")  # images.build's names
    for old in volumes:
        if Path(old).stem != image.stem and built.match(old) and Path(old).stem not in in_use:
            virsh.run(uri, "vol-delete", "--pool", IMAGE_POOL, old, check=False)
    return {"volume": image.name, "uploaded": uploaded, **boot}


def console_dir(lab_name: str, uri: str, state: Path) -> str:
    """Where the VMs' console logs go, on the libvirt host: the lab's state directory here; on a
    remote host a directory of its own beside QEMU's logs (lab-up makes it, lab-down removes it)."""
    return f"/var/log/libvirt/qemu/sectorlab-{lab_name}" if remote.is_remote(uri) else str(state)


def pool_dir(lab_name: str) -> str:
    # On the libvirt host, where its QEMU user can read it (the cache under /root cannot be).
    return f"/var/lib/libvirt/images/sectorlab-{lab_name}"


class Terraform:
    def __init__(self, state: Path, progress: Progress):
        self.state = state
        self.progress = progress
        binary = tooling.terraform_binary()
        if binary is None:
            raise SectorlabError("neither terraform nor OpenTofu is installed; run scripts/bootstrap")
        self.binary = str(binary)

    def env(self) -> dict:
        env = dict(os.environ)
        env["TF_CLI_CONFIG_FILE"] = str(tooling.cli_config())
        env["TF_DATA_DIR"] = str(self.state / ".terraform")
        env["TF_IN_AUTOMATION"] = "1"
        env["CHECKPOINT_DISABLE"] = "1"
        return env

    def run(self, *args: str, capture: bool = False, log: Path | None = None) -> str:
        """Run terraform; with `log`, its whole output goes there and only a failure's tail is shown."""
        cmd = [self.binary, f"-chdir={TERRAFORM_DIR}", *args]
        if log is not None:
            with open(log, "w") as out:
                proc = subprocess.run(cmd, env=self.env(), text=True, stdout=out, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                tail = log.read_text().strip().splitlines()[-15:]
                print("\n".join(tail), file=sys.stderr)
                raise SectorlabError(f"{Path(self.binary).name} {args[0]} failed (exit {proc.returncode}); "
                                     f"the end of its output is above, all of it in {log}")
            return ""
        proc = subprocess.run(cmd, env=self.env(), text=True,
                              stdout=subprocess.PIPE if capture else None,
                              stderr=subprocess.PIPE if capture else None)
        if proc.returncode != 0:
            detail = (proc.stderr or "").strip().splitlines()[-5:] if capture else ["see its output above"]
            raise SectorlabError(f"{Path(self.binary).name} {args[0]} failed (exit {proc.returncode}): "
                                 + " ".join(detail))
        return proc.stdout or ""

    def init(self) -> None:
        if not tooling.cli_config().exists():
            raise SectorlabError(f"{tooling.cli_config()} is missing: run scripts/bootstrap (it builds the "
                                 f"libvirt provider mirror)")
        self.run("init", "-input=false", "-no-color", "-upgrade=false",
                 f"-backend-config=path={self.state / 'terraform.tfstate'}", capture=True)

    def outputs(self) -> dict:
        """The root module's outputs, read from the local state file (no second terraform run)."""
        raw = _load_json(self.state / "terraform.tfstate", {}).get("outputs")
        if not raw:
            raw = json.loads(self.run("output", "-json", capture=True) or "{}")
        return {k: v["value"] for k, v in raw.items()}


def _load_json(path: Path, default):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def _nvme_tcp_conf(vm: labdef.VM) -> str:
    lines = ["# NVMe serial, backing virtio serial (written by sectorlab lab up)"]
    lines += [f"{d.serial} {d.backing_serial}" for d in vm.disks if d.bus == "nvme-tcp"]
    return "\n".join(lines) + "\n"


domain_name = ownership.domain_name


def kernel_cmdline(cmdline: str) -> list[dict[str, str]]:
    """A kernel command line as the libvirt provider reads it back from the domain (its arguments
    sorted, key=value ones in a map, the keyless ones joined under '_'), so a second apply finds no
    change."""
    args = sorted(cmdline.split())
    keyed = dict(a.split("=", 1) for a in args if "=" in a)
    keyless = " ".join(a for a in args if "=" not in a)
    return ([keyed] if keyed else []) + ([{"_": keyless}] if keyless else [])


def seed_doc(vm: labdef.VM, login_key: str, host_key: sshkeys.KeyPair) -> dict:
    """The cloud-init user-data a lab VM boots with: the lab user and its key, the pinned host key,
    and the NVMe/TCP targets' configuration when the VM has such disks."""
    doc = seed.user_data(LAB_USER, [login_key], host_key, vm.name)
    if any(d.bus == "nvme-tcp" for d in vm.disks):
        doc["write_files"] = [{"path": "/etc/sectorlab/nvme-tcp.conf", "permissions": "0644",
                               "content": _nvme_tcp_conf(vm)}]
    return doc


def tfvars(lab: labdef.Lab, state: Path, ports: dict[str, int], domain_type: str,
           published: dict[str, dict], owner: ownership.Identity,
           root_sources: dict[str, str] | None = None) -> dict:
    """Terraform variables for the lab, plus what only the host needs (keys) kept beside them."""
    login = state / "id_ed25519"
    vms = {}
    for vm in lab.vms:
        host_key = sshkeys.KeyPair(private_openssh=(state / f"host-{vm.name}").read_text(),
                                   public_openssh=(state / f"host-{vm.name}.pub").read_text().strip())
        doc = seed_doc(vm, (Path(str(login) + ".pub")).read_text().strip(), host_key)
        iso, seed_id = write_seed(state, lab.name, vm.name, doc)
        vms[vm.name] = {
            "guest": vm.guest,
            "memory_mib": vm.memory_mib,
            "ssh_port": ports[vm.name],
            "uuid": ownership.legacy_uuid(lab.name, vm.name),
            "seed_iso": str(iso),
            "seed_id": seed_id,
            "root_source": (root_sources or {}).get(vm.name, ""),
            "disks": [{"name": d.name, "bus": d.bus, "geometry": d.geometry.name, "size_mib": d.size_mib,
                       "serial": d.serial, "backing_serial": d.backing_serial or "",
                       "latency": d.latency.name if d.latency else "none",
                       "write_delay_ms": d.latency.write_delay_ms if d.latency else 0,
                       "mapper": d.mapper or "",
                       "rmw": d.rmw is not None, "rmw_read_iops": d.rmw.read_iops if d.rmw else 0} for d in vm.disks],
        }
    uris = {vm.libvirt_uri for vm in lab.vms}
    if len(uris) != 1:
        raise SectorlabError(f"lab {lab.name}: VMs on several libvirt hosts ({', '.join(sorted(uris))}) are not "
                             f"supported by one lab yet; split them into one lab definition per host")
    uris_one = uris.pop()
    return {
        "lab_name": lab.name,
        "owner": ownership.terraform_owner(owner),
        "libvirt_uri": uris_one,
        "pool_dir": pool_dir(lab.name),
        "console_dir": console_dir(lab.name, uris_one, state),
        "qemu_uid": remote.host(uris_one).qemu_uid(),
        "domain_type": domain_type,
        "image_pool": IMAGE_POOL,
        "images": {g: p["volume"] for g, p in published.items()},
        "boot": {g: {"kernel": p["kernel"], "initrd": p["initrd"], "cmdline": kernel_cmdline(p["cmdline"])}
                 for g, p in published.items() if p["kernel"]},
        "extra_geometries": {n: {"logical_block_size": g.logical_block_size,
                                 "physical_block_size": g.physical_block_size, "min_io_size": g.min_io_size,
                                 "opt_io_size": g.opt_io_size, "description": g.description}
                             for n, g in lab.extra_geometries.items()},
        "vms": vms,
    }


def write_seed(state: Path, lab_name: str, vm_name: str, doc: dict) -> tuple[Path, str]:
    """The VM's NoCloud seed ISO in the state directory, rewritten only when its content changes
    (the ISO carries timestamps; a seed restored with a saved guest state must stay as it was)."""
    user_data = seed.render_user_data(doc)
    seed_id = hashlib.sha256(user_data.encode()).hexdigest()[:12]
    iso = state / f"seed-{vm_name}.iso"
    stamp = state / f"seed-{vm_name}.id"
    if not iso.exists() or not stamp.exists() or stamp.read_text().strip() != seed_id:
        seed.write_iso(iso, instance_id=f"{lab_name}-{vm_name}-{seed_id}", hostname=vm_name, doc=doc)
        stamp.write_text(seed_id + "\n")
    return iso, seed_id


def _ensure_keys(lab: labdef.Lab, state: Path) -> None:
    login = state / "id_ed25519"
    if not login.exists():
        sshkeys.generate(f"sectorlab-{lab.name}").write(login)
    for vm in lab.vms:
        host = state / f"host-{vm.name}"
        if not host.exists():
            sshkeys.generate(f"{vm.name}-host").write(host)


def port_holder(port: int) -> str | None:
    """Which lab's VM this host's labs gave `port` to (their ports.json), if one did."""
    for ports_file in sorted((cache_dir() / "labs").glob("*/ports.json")):
        for vm, p in _load_json(ports_file, {}).items():
            if p == port:
                return f"lab {ports_file.parent.name}'s VM {vm}"
    return None


def own_ports(lab_name: str) -> set[int]:
    """The SSH ports the lab's VMs were given (its ports.json), which its lab-up may take again."""
    return set(_load_json(state_dir(lab_name) / "ports.json", {}).values())


def _ports(lab: labdef.Lab, state: Path) -> dict[str, int]:
    previous = _load_json(state / "ports.json", {})
    ports = {}
    taken: set[int] = set()
    in_use = remote.host(lab.vms[0].libvirt_uri).port_in_use
    for vm in lab.vms:
        port = vm.ssh_port or previous.get(vm.name)
        if not port or (port in taken):
            port = _free_port(taken, in_use)
        ports[vm.name] = port
        taken.add(port)
    write_atomic(state / "ports.json", json.dumps(ports))
    return ports


def _free_port(taken: set[int], in_use: Callable[[int], bool]) -> int:
    """A port for a guest's SSH forward: one the kernel gives out here (free on this host), and
    neither taken by another VM of the lab nor listened on where the forwards are (`in_use`)."""
    from ..vm import free_port
    while True:
        port = free_port()
        if port not in taken and not in_use(port):
            return port


def guests_from_lab_json(data: dict) -> dict[str, Guest]:
    via = remote.host(data["libvirt_uri"]).via
    return {name: Guest(name, vm["ssh_host"], vm["ssh_port"], vm["user"], Path(vm["key_file"]), vm["host_key"],
                        vm.get("console_log"), via)
            for name, vm in data["vms"].items()}


def domain_states(data: dict) -> dict[str, str]:
    """Each VM's domain state as libvirt says it ("running", "shut off", ...; "absent" when undefined),
    asked by the UUID the lab recorded: a domain of the same name that is not the lab's is absent."""
    return {name: virsh.run(data["libvirt_uri"], "domstate", vm.get("uuid") or vm["domain"], check=False).strip()
            or "absent" for name, vm in data["vms"].items()}


def faults(data: dict, states: dict[str, str] | None = None) -> list[str]:
    """What is wrong with a lab that lab.json says is up, found from the host without asking the
    guests: a VM whose domain does not run (destroyed, or its QEMU killed) and volumes that are gone
    (deleted while the lab ran). Empty for a healthy lab. `states`: domain_states(), if known."""
    found = []
    uri = data["libvirt_uri"]
    states = states or domain_states(data)
    for name, vm in data["vms"].items():
        state = states[name]
        if state != "running":
            found.append(f"{name}: domain {vm['domain']} is {state}, not running (destroyed, or its QEMU was "
                         f"killed)")
    volumes = [(f"{vm_name} root disk", vm.get("root_volume")) for vm_name, vm in data["vms"].items()]
    volumes += [(f"{d['vm']} disk {d['name']}", d.get("volume")) for d in data["disks"].values()]
    volumes = [(what, path) for what, path in volumes if path and path.startswith("/")]
    gone = remote.host(uri).missing([path for _, path in volumes])
    found += [f"{what}: volume {path} is gone (deleted while the lab ran)" for what, path in volumes if path in gone]
    return found


def _running(lab: labdef.Lab, state: Path) -> bool:
    """Whether this lab is up now and whole: its lab.json exists and has every VM, and nothing in
    it is faulty (faults())."""
    data = _record_or_none(state)
    if not data or set(data["vms"]) != {vm.name for vm in lab.vms}:
        return False
    return not faults(data)


def _record_or_none(state: Path) -> dict | None:
    """The lab's lab.json if it is there and readable by this sectorlab (record.load), else None:
    lab-up then treats the lab as not up, and takes down what is left of it first."""
    try:
        return record.load(state / "lab.json") if (state / "lab.json").exists() else None
    except UsageError:
        return None


def _left_behind(lab: labdef.Lab, state: Path) -> list[str]:
    """What of this lab exists although it does not run: Terraform-managed resources, domains, its pool."""
    resources = _load_json(state / "terraform.tfstate", {}).get("resources", [])
    left = [f"{len(resources)} Terraform resource(s)"] if resources else []
    return left + leftovers_of(lab.name, lab.vms[0].libvirt_uri)


class _Route:
    """One way of bringing the lab up; everything in which the three ways differ is here.
    cold: boot, then save a state for the next lab-up; warm: a saved state matches, restore it;
    converge: the lab runs, Terraform finds nothing or little to change."""
    name = ""
    apply_label = "terraform apply"
    wait_label = "boot to SSH"
    pristine = True  # a fresh lab's data disks must read as zeros

    def root_sources(self, run: LabUp) -> dict[str, str]:
        return {name: "" for name in run.vm_names}

    def apply(self, run: LabUp) -> None:
        run.tf.run(*run.apply_args, log=run.state / "terraform-apply.log")

    def wait(self, run: LabUp, name: str, guest: Guest) -> None:
        # A running lab's console may not say it (a guest restored from a saved state booted
        # before its console log began): connect at once.
        run.progress(f"{name}: waiting for SSH on {guest.endpoint}")
        run.progress(f"{name}: SSH up after {guest.wait_until_up(SSH_TIMEOUT, run.progress):.0f} s")

    def saves(self, run: LabUp) -> bool:
        return False

    def steps_clock(self, run: LabUp) -> bool:
        """Whether the guests' clocks are behind (after a restore, or the pause of a save)."""
        return False


class _Cold(_Route):
    name = "cold"

    def wait(self, run: LabUp, name: str, guest: Guest) -> None:
        ready = run.console(name, READY_MARKER)
        run.progress(f"{name}: waiting for SSH on {guest.endpoint}"
                     + (" (connecting once its console says sshd listens)" if ready else ""))
        run.progress(f"{name}: SSH up after {guest.wait_until_up(SSH_TIMEOUT, run.progress, ready):.0f} s")

    def saves(self, run: LabUp) -> bool:
        return run.save_state

    def steps_clock(self, run: LabUp) -> bool:
        return run.save_state


class _Converge(_Route):
    name = "converge"
    pristine = False

    def root_sources(self, run: LabUp) -> dict[str, str]:
        # keep what the running VMs were created from
        previous = _load_json(run.state / "terraform.tfvars.json", {}).get("vms", {})
        return {name: previous.get(name, {}).get("root_source", "") for name in run.vm_names}


class _Warm(_Route):
    name = "warm"
    apply_label = "terraform apply + restore"
    wait_label = "SSH"

    def root_sources(self, run: LabUp) -> dict[str, str]:
        return {name: str(run.state / f"root-{name}.qcow2") for name in run.vm_names}

    def apply(self, run: LabUp) -> None:
        # The domain's first start (Terraform's create) restores the saved state instead of booting:
        # libvirt starts a domain that has a managed-save image by restoring it.
        for name in run.vm_names:
            warm.arm(run.saved, name, run.domains[name])
        try:
            run.tf.run(*run.apply_args, log=run.state / "terraform-apply.log")
            not_restored = [n for n in run.vm_names if warm.managed_save_path(run.domains[n]).exists()]
            if not_restored:
                raise SectorlabError(f"libvirt booted {', '.join(not_restored)} instead of restoring its state")
        except SectorlabError as e:
            for name in run.vm_names:
                warm.managed_save_path(run.domains[name]).unlink(missing_ok=True)
            if run.require_warm:
                raise SectorlabError(f"lab {run.lab.name}: warm restore failed: {e}") from e
            run.progress(f"warm restore failed ({e}); discarding saved state {run.key} and booting cold")
            run.saved.discard()
            run.route = _Cold()
            run.write_tfvars()
            targets = [f'-replace=libvirt_volume.root["{n}"]' for n in run.vm_names]
            targets += [f'-replace=libvirt_domain.vm["{n}"]' for n in run.vm_names]
            run.tf.run(*run.apply_args, *targets, log=run.state / "terraform-apply.log")

    def wait(self, run: LabUp, name: str, guest: Guest) -> None:
        run.progress(f"{name}: restored, SSH up after {guest.wait_until_up(60, run.progress):.1f} s")

    def steps_clock(self, run: LabUp) -> bool:
        return True


class LabUp:
    """`lab up` as a pipeline of named phases, run in this order by run(). Each phase is a method;
    what differs between the cold, warm and converge paths is in the route (_Cold, _Warm,
    _Converge), chosen in 'choose path'. run() times each phase under the label the output has
    always used (None: not timed on its own) and says in which phase a failure or an interrupt
    stopped the lab-up."""

    PIPELINE = ("validate", "image", "choose path", "provision", "start", "wait", "save", "hot-plug", "verify")

    def __init__(self, lab_file: Path, progress: Progress = _say, cold: bool = False, save_state: bool = True,
                 require_warm: bool = False):
        self.lab_file, self.progress = lab_file, progress
        self.cold, self.save_state, self.require_warm = cold, save_state, require_warm
        self.timings: list[list] = []
        self.route: _Route = _Cold()

    def run(self) -> dict:
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
        return console_says_ready(self.data["vms"][name]["console_log"], marker, self.guests[name].via)

    def write_tfvars(self) -> None:
        variables = tfvars(self.lab, self.state, self.ports, self.found.libvirt_domain_type, self.published,
                           self.identity, self.route.root_sources(self))
        (self.state / "terraform.tfvars.json").write_text(json.dumps(variables, indent=2))

    # ---- the phases, in PIPELINE's order --------------------------------------------------------
    def phase_validate(self) -> None:
        self.lab = lab = labdef.load(self.lab_file)
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
        if not running:
            data = _record_or_none(state)
            broken = faults(data) if data else []
            left = _left_behind(lab, state)
            if broken:
                # Part of the lab is gone or stopped: what remains is replaced, never mixed with new parts.
                self.progress(f"lab {lab.name} is not whole: {'; '.join(broken)}: taking the lab down first and "
                              f"bringing all of it up fresh")
                down(self.lab_file, self.progress)
                state.mkdir(parents=True, exist_ok=True)
            elif left:
                # A run that was interrupted, or a host restart, leaves the lab defined but stopped; its
                # data volumes hold that run's writes, and a lab-up promises fresh ones.
                self.progress(f"lab {lab.name} does not run, but {', '.join(left)} remain (an interrupted run or "
                              f"a host restart); their data disks may hold that run's writes: taking the lab down "
                              f"first")
                down(self.lab_file, self.progress)
                state.mkdir(parents=True, exist_ok=True)
        if running:
            route, why = _Converge(), "the lab is running"
        elif self.cold:
            route, why = _Cold(), "asked for (--cold)"
        elif self.uri != "qemu:///system":
            route, why = _Cold(), (f"a saved state is kept and restored only on this host's qemu:///system, not "
                                   f"on libvirt host {remote.host(self.uri).label}; none is saved")
            self.save_state = False
        else:
            missing = self.saved.missing(self.vm_names)
            route, why = (_Cold(), missing) if missing else (_Warm(), f"saved state {self.key}")
            if not missing:
                taken = [p for p in _load_json(self.saved.dir / "ports.json", {}).values()
                         if p not in self.own_ports and labdef.port_in_use(p)]
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
        remote.host(self.uri).make_dir(console_dir(self.lab.name, self.uri, self.state))
        self.domains = {name: domain_name(self.lab.name, name) for name in self.vm_names}
        self.write_tfvars()

    def phase_start(self) -> str:
        self.tf = Terraform(self.state, self.progress)
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
        write_atomic(self.state / "lab.json", json.dumps(self.data, indent=2))
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
            declared = [d for d in self.data["disks"].values() if d["vm"] == name]
            if not any(d["bus"] == "nvme-tcp" for d in declared):
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
        for name in warm.save(self.saved, self.key_parts, self.uri, self.data["vms"], self.state, self.progress):
            self.guests[name].close()
            self.guests[name].wait_until_up(60, self.progress)
        self.timed("save state", time.monotonic() - start)

    def phase_hotplug(self) -> str:
        for name in self.vm_names:
            domain = self.data["vms"][name]["domain"]
            disks = [d for d in self.data["disks"].values() if d["vm"] == name]
            added = warm.hotplug_nvme(self.uri, domain, disks)
            if added:
                self.progress(f"{name}: hot-plugged NVMe controller(s) {', '.join(added)}")
            added = rmw.hotplug(self.uri, domain, disks)
            if added:
                self.progress(f"{name}: hot-plugged read-modify-write disk(s) {', '.join(added)}")
            for disk_name, nodes in rmw.trace_nodes(self.uri, domain, disks).items():
                self.data["disks"][f"{name}/{disk_name}"]["rmw_nodes"] = nodes
        return "disk check"

    def phase_verify(self) -> str:
        self.rows, self.problems = verify(self.data, self.guests, self.progress, wait=NVME_APPEAR_TIMEOUT,
                                          clock=self.route.steps_clock(self), pristine=self.route.pristine)
        return "disk check"

    def finish(self, total: float) -> dict:
        lab, data = self.lab, self.data
        print_table(self.rows)
        summary = ", ".join(f"{n} {s:.1f} s" for n, s in self.timings)
        data["timing"] = {"path": self.route.name, "total_s": round(total, 2),
                          "phases": {n: round(v, 2) for n, v in self.timings}}
        write_atomic(self.state / "lab.json", json.dumps(data, indent=2))
        self.progress(f"lab {lab.name} up by the {self.route.name} path in {total:.1f} s ({summary}); "
                      f"state in {self.state}")
        if self.problems:
            raise SectorlabError(f"lab {lab.name}: {len(self.problems)} disk(s) not as declared: "
                                 + "; ".join(self.problems))
        return data


def up(lab_file: Path, progress: Progress = _say, cold: bool = False, save_state: bool = True,
       require_warm: bool = False) -> dict:
    """Bring the lab up and verify every disk (LabUp's phases). Three paths, named in the output:
    converge (the lab runs: Terraform finds nothing or little to change), warm (a saved state
    matches: restore it) and cold (boot, then save a state for the next lab-up)."""
    return LabUp(lab_file, progress, cold, save_state, require_warm).run()


def wait_for(check: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    """Whether check() became true within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def _lab_json(lab: labdef.Lab, state: Path, outputs: dict) -> dict:
    vms = {}
    for name, vm in outputs["vms"].items():
        vms[name] = {**vm, "user": LAB_USER, "key_file": str(state / "id_ed25519"),
                     "host_key": (state / f"host-{name}.pub").read_text().strip()}
    disks = outputs["disks"]
    # What hot-plug learnt of a running QEMU stays until that QEMU goes (rmw.trace_nodes checks it).
    for key, old in _load_json(state / "lab.json", {}).get("disks", {}).items():
        if key in disks and old.get("rmw_nodes") and disks[key].get("rmw"):
            disks[key]["rmw_nodes"] = old["rmw_nodes"]
    return record.check({"format": record.FORMAT, "lab": lab.name, "lab_file": str(lab.path),
                         "libvirt_uri": outputs["libvirt_uri"], "vms": vms, "disks": disks}, "lab.json")


PROBE = Path(guestprobe.__file__)
PRISTINE_BYTES = 65536


def probe(guest: Guest, declared: list[dict], wait: float = 0.0, clock: bool = False,
          pristine: bool = False) -> dict:
    """One round trip to the guest (sectorlab/inguest/guestprobe.py as root): optionally step its clock,
    start its NVMe/TCP targets if their namespaces are not visible, wait up to `wait` s for the
    declared serials, list its disks, and with `pristine` name the declared disks whose first or
    last 64 KiB are not zeros (where partition tables, signatures and the scenarios' first redo
    blocks go). Disks with added latency get their dm-delay device (created or corrected)."""
    request = {"clock": clock,
               "nvme_tcp": sorted(d["serial"] for d in declared if d["bus"] == "nvme-tcp"),
               "serials": sorted(d["serial"] for d in declared), "wait": wait,
               "pristine_bytes": PRISTINE_BYTES if pristine else 0, "lsblk": guestdisks.LSBLK_COMMAND.split(),
               "delays": [{"serial": d["serial"], "name": Path(d["mapper"]).name, "delay_ms": d["write_delay_ms"]}
                          for d in declared if d.get("mapper")]}
    command = f"sudo -n python3 -c {shlex.quote(PROBE.read_text())} {shlex.quote(json.dumps(request))}"
    text = guest.check_output(command, timeout=wait + 120,
                              answer=(guestprobe.CLOCK_QUESTION, lambda: repr(time.time())))
    try:
        result = json.loads(text)
    except ValueError as e:
        raise guestdisks.GuestOutputError("sectorlab guest probe", f"not JSON ({e})", text) from e
    result["disks"] = guestdisks.by_serial(guestdisks.parse_lsblk(result["lsblk"]))
    return result


def verify(data: dict, guests: dict[str, Guest], progress: Progress, wait: float = 0.0, clock: bool = False,
           pristine: bool = False) -> tuple[list[list[str]], list[str]]:
    """Every declared disk, by serial, at its declared sector sizes. With `wait`, give disks that
    are still appearing (hot-plugged NVMe) up to that many seconds before calling them missing;
    with `clock`, step the guests' clocks first (after a restore); with `pristine`, fail disks that
    hold data (a fresh lab must not show a previous run's writes)."""
    rows = [["VM", "disk", "serial", "bus", "geometry", "guest device", "logical/physical seen"]]
    # The minimum I/O size the guest must show (the advertised one, never below the physical
    # sector), and the optimal one where the geometry advertises it.
    def wanted(d: dict) -> str:
        return geo.topology(d["logical_block_size"], d["physical_block_size"],
                            geo.guest_min_io(d["physical_block_size"], d.get("min_io_size", 0)),
                            d.get("opt_io_size", 0))

    problems = []
    for vm_name, guest in guests.items():
        declared = [d for d in data["disks"].values() if d["vm"] == vm_name]
        result = probe(guest, declared, wait, clock, pristine)
        if result["behind_s"] is not None:
            behind = result["behind_s"]
            progress(f"{vm_name}: clock stepped {abs(behind):.1f} s {'forward' if behind >= 0 else 'back'}")
        if wait:
            progress(f"{vm_name}: every declared disk visible after {result['waited_s']:.1f} s")
        hz = result.get("kernel_hz")
        if hz:
            progress(f"{vm_name}: dm-delay's delays are served in the guest kernel's timer ticks of {1000 / hz:g} ms "
                     f"(CONFIG_HZ={hz}), one tick after the one asked for")
        seen = result["disks"]
        for d in sorted(declared, key=lambda d: d["name"]):
            dev = seen.get(d["serial"])
            want = wanted(d)
            if dev is None:
                rows.append([vm_name, d["name"], d["serial"], d["bus"], d["geometry"], "MISSING", f"- (want {want})"])
                problems.append(f"{vm_name}/{d['name']} (serial {d['serial']}) not in the guest")
                continue
            got = geo.topology(dev.logical_block_size, dev.physical_block_size, dev.minimum_io_size,
                               dev.optimal_io_size if d.get("opt_io_size") else 0)
            mark = "" if got == want else f" (want {want})"
            if mark:
                problems.append(f"{dev.path}: {got}, expected {want} ({d['geometry']})")
            path = dev.path
            if d.get("mapper"):
                mapper = result["mappers"].get(Path(d["mapper"]).name)
                if mapper is None:
                    problems.append(f"{vm_name}/{d['name']}: no dm-delay device over {dev.path}")
                    path += " -> MISSING dm-delay"
                else:
                    seen_sizes = f"{mapper['logical_block_size']}/{mapper['physical_block_size']}"
                    sectors = f"{d['logical_block_size']}/{d['physical_block_size']}"
                    if seen_sizes != sectors:
                        problems.append(f"{mapper['path']}: {seen_sizes}, expected {sectors} as the disk under it")
                        got += f", {mapper['path']} {seen_sizes}"
                    effective = f", ~{geo.effective_delay_ms(d['write_delay_ms'], hz):g} ms" if hz else ""
                    path += f" -> {mapper['path']} (dm-delay {d['write_delay_ms']} ms{effective}/write)"
            if d.get("rmw"):
                path += f" ({rmw.describe(d)})"
            rows.append([vm_name, d["name"], d["serial"], d["bus"], d["geometry"], path, got + mark])
        problems += [f"{path}: not empty at lab-up (expected a fresh volume)" for path in result["dirty"]]
    return rows, problems


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def lab_up_command(lab_file: Path | None = None) -> str:
    """The command that brings up the lab of `lab_file` (make's LAB= for any but the default lab,
    and LAB_SUFFIX= when the lab names have one)."""
    words = ["make", "lab-up"]
    if lab_file is not None and Path(lab_file).resolve() != DEFAULT_LAB_FILE.resolve():
        words.append(f"LAB={shlex.quote(str(lab_file))}")
    if os.environ.get(labdef.SUFFIX_ENV):
        words.append(f"LAB_SUFFIX={shlex.quote(os.environ[labdef.SUFFIX_ENV])}")
    return " ".join(words)


def read_lab_json(lab_name: str, lab_file: Path | None = None) -> dict:
    path = state_dir(lab_name) / "lab.json"
    if not path.exists():
        raise SectorlabError(f"no lab {lab_name!r} is up ({path} does not exist): run '{lab_up_command(lab_file)}'")
    return record.load(path)


@contextlib.contextmanager
def images_pool_lock():
    """Labs brought up at once on this host (two CI jobs, or make test's two lanes) publish to the
    one image pool in turn: its definition, links and clean-up are not safe to run twice at once.
    Held for a second or so; waited for, not refused. The name is 'images', which no lab may take."""
    path = cache_dir() / "labs" / ".lock-images"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


_HELD: dict[str, int] = {}  # lab name -> how deep this process is in lab_lock (lab-up calls lab-down)


@contextlib.contextmanager
def lab_lock(lab_name: str, verb: str):
    """One lab-up or lab-down of a lab at a time on this host: a second, from another process,
    is refused at once with the first one's process id (an empty lock file beside the state
    directory; it stays after lab-down: removed, two processes could each lock a file of their own).
    Re-entered freely by the process that holds it."""
    if _HELD.get(lab_name):
        _HELD[lab_name] += 1
        try:
            yield
        finally:
            _HELD[lab_name] -= 1
        return
    path = cache_dir() / "labs" / f".lock-{lab_name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise SectorlabError(f"lab {lab_name}: {holder} is bringing this lab up or down; wait for it to "
                                 f"finish or stop it, then run '{verb}' again") from None
        f.seek(0)
        f.truncate()
        f.write(f"sectorlab {verb} (process {os.getpid()})")
        f.flush()
        _HELD[lab_name] = 1
        try:
            yield
        finally:
            _HELD.pop(lab_name, None)
            f.truncate(0)


def check_libvirt(lab: labdef.Lab) -> None:
    """Every libvirt URI of the lab answers, or one line that says which does not. lab-down and
    lab-status ask first: without libvirt, a lab's domains look absent while their QEMU runs on,
    and a lab-down would remove the state that still describes them."""
    for uri in sorted({vm.libvirt_uri for vm in lab.vms}):
        labdef.check_uri(uri)


def down(lab_file: Path, progress: Progress = _say) -> None:
    lab = labdef.load(lab_file)
    check_libvirt(lab)
    with lab_lock(lab.name, "lab down"):
        _down(lab, progress)


def _down(lab: labdef.Lab, progress: Progress) -> None:
    state = state_dir(lab.name)
    uri = lab.vms[0].libvirt_uri
    if (state / "terraform.tfstate").exists():
        tf = Terraform(state, progress)
        tf.init()
        progress(f"terraform destroy (lab {lab.name})")
        try:
            tf.run("destroy", "-input=false", "-auto-approve", "-no-color",
                   f"-var-file={state / 'terraform.tfvars.json'}", log=state / "terraform-destroy.log")
        except SectorlabError as e:
            progress(f"{e}; removing what is left with virsh")
    leftovers = sweep_libvirt(lab.name, uri, progress, [vm.name for vm in lab.vms])
    if remote.is_remote(uri) and _holdings(lab.name, uri).holder_of(console_dir(lab.name, uri, state)) is None:
        remote.host(uri).remove_tree(console_dir(lab.name, uri, state))
    shutil.rmtree(state, ignore_errors=True)
    left = leftovers_of(lab.name, uri)
    if left:
        raise SectorlabError(f"lab {lab.name}: still present after lab-down: {', '.join(left)}")
    progress(f"lab {lab.name} is down: no domain, pool, volume or state of its own left" +
             (f" (virsh removed {', '.join(leftovers)})" if leftovers else ""))


def _holdings(lab_name: str, uri: str) -> ownership.Holdings:
    return ownership.holdings(uri, ownership.identity(lab_name), pool_dir(lab_name))


def check_host(lab: labdef.Lab, own_ports: set[int] = frozenset()) -> ownership.Holdings:
    """What `lab validate` and lab-up check of the libvirt host before anything of the lab is made:
    labdef.check_environment (libvirt answers, the lab fits its disk and memory, fixed ports are
    free), and that no domain or pool name of the lab is another's (ownership.refuse_collisions).
    Returns what libvirt holds of the lab's names."""
    labdef.check_environment(lab, own_ports, port_holder, pool_dir)
    held = _holdings(lab.name, lab.vms[0].libvirt_uri)
    ownership.refuse_collisions(held, [vm.name for vm in lab.vms])
    return held


def leftovers_of(lab_name: str, uri: str) -> list[str]:
    """What libvirt and the libvirt host still have of the lab: its own domains (ownership: by
    identity, never by name prefix), its pool and directories unless they are another's."""
    held = _holdings(lab_name, uri)
    left = [f"domain {d.name}" for d in held.own]
    host = remote.host(uri)
    if held.pool_target is not None and held.pool_is_own():
        left.append(f"pool {held.pool}")
    dirs = [pool_dir(lab_name)] + ([console_dir(lab_name, uri, Path())] if host.remote else [])
    gone = host.missing(dirs)
    return left + [f"directory {d}" + (f" on {host.label}" if host.remote else "") for d in dirs
                   if d not in gone and held.holder_of(d) is None]


def sweep_libvirt(lab_name: str, uri: str, progress: Progress, vm_names=()) -> list[str]:
    """Remove what a failed apply or destroy left of the lab: its own domains (with their managed
    saves and volumes), its pool and volumes, the pool directory, and the managed-save images of
    its domains' names (`vm_names`, and its domains') that a warm lab-up armed and no domain took.
    Another's objects are left alone, and said to be."""
    removed = []
    held = _holdings(lab_name, uri)
    for dom in held.own:
        virsh.run(uri, "destroy", dom.uuid, check=False)
        virsh.run(uri, "undefine", dom.uuid, "--managed-save", "--remove-all-storage", check=False)
        removed.append(f"domain {dom.name}")
    pool, directory = held.pool, pool_dir(lab_name)
    if held.pool_target is not None and not held.pool_is_own():
        holder = held.pool_holder()
        progress(f"left alone: pool {pool} at {held.pool_target}, " + (
            f"used by {ownership.owner_text(holder, held.ours)}" if holder else "not at the lab's pool directory"))
    elif held.pool_target is not None:
        for vol in virsh.run(uri, "vol-list", pool, check=False).splitlines():
            if vol.split():
                virsh.run(uri, "vol-delete", "--pool", pool, vol.split()[0], check=False)
        virsh.run(uri, "pool-destroy", pool, check=False)
        virsh.run(uri, "pool-delete", pool, check=False)
        virsh.run(uri, "pool-undefine", pool, check=False)
        removed.append(f"pool {pool}")
    host = remote.host(uri)
    if not host.missing([directory]):
        holder = held.holder_of(directory)
        if holder is None:
            host.remove_tree(directory)
            removed.append(f"directory {directory}" + (f" on {host.label}" if host.remote else ""))
        else:
            progress(f"left alone: {directory}, used by {ownership.owner_text(holder, held.ours)}")
    if uri == "qemu:///system":
        removed += _sweep_managed_saves(uri, held, {ownership.domain_name(lab_name, vm) for vm in vm_names}, progress)
    return removed


def _sweep_managed_saves(uri: str, held: ownership.Holdings, names: set[str], progress: Progress) -> list[str]:
    """The managed-save images a warm lab-up armed for the lab's domain names and no domain took:
    removed when the saved domain is the lab's own (ownership.is_own of the XML in the image)."""
    removed = []
    defined = {d.name for d in held.own + held.others}
    for name in sorted((names | {d.name for d in held.own}) - defined):
        image = warm.managed_save_path(name)
        try:
            if not image.exists():
                continue
        except OSError as e:  # not readable by this user: nothing of it can be told
            progress(f"cannot look for a managed save of {name} ({e.strerror}); left as it is")
            continue
        saved = ownership.save_image_domain(uri, image)
        if saved is not None and ownership.is_own(saved, held.ours):
            image.unlink(missing_ok=True)
            removed.append(f"managed save {image.name}")
        else:
            progress(f"left alone: managed save {image} (" + (
                ownership.owner_text(saved, held.ours) if saved else "libvirt cannot read it") + ")")
    return removed


def status(lab_file: Path, progress: Progress = _say) -> int:
    """The lab's VMs and what each guest shows; what is wrong, one line each, and exit status 1:
    a lab that is not up but left libvirt objects behind, VMs that do not run, volumes that are
    gone, disks not as declared."""
    lab = labdef.load(lab_file)
    check_libvirt(lab)
    try:
        data = read_lab_json(lab.name, lab_file)
    except SectorlabError as e:
        left = leftovers_of(lab.name, lab.vms[0].libvirt_uri)
        if left:
            down_cmd = lab_up_command(lab_file).replace("lab-up", "lab-down")
            print(f"lab {lab.name} is not up (no lab.json: its state directory is gone), but libvirt still has "
                  f"{', '.join(left)}: '{down_cmd}' removes them")
        else:
            print(str(e))
        return 1
    states = domain_states(data)
    problems = faults(data, states)
    guests = guests_from_lab_json(data)
    for name, vm in data["vms"].items():
        print(f"{name}: domain {vm['domain']} {states[name]}, ssh {guests[name].endpoint}")
    running = {name: g for name, g in guests.items() if states[name] == "running"}
    rows, seen = verify({**data, "vms": {n: data["vms"][n] for n in running}}, running, progress)
    if len(rows) > 1:  # a header alone: no VM runs to show its disks
        print_table(rows)
    problems += seen
    for p in problems:
        print(f"problem: {p}")
    if problems:
        print(f"'{lab_up_command(lab_file)}' takes the lab down and brings it up fresh")
    return 1 if problems else 0


def check_seeds(progress: Progress = _say) -> None:
    """The cloud-init user-data of every guest's build (the Oracle Linux builds hand it to cloud-init)
    and of a lab VM (the default lab's first VM, with NVMe/TCP disks), against cloud-init's schema."""
    key = sshkeys.generate("schema-check")
    docs = {f"{name} build": seed.user_data(images.load_guest(name).ssh_username, [key.public_openssh], None,
                                            f"{name}-build")
            for name in images.guest_names()}
    lab = labdef.load(DEFAULT_LAB_FILE)
    docs[f"lab {lab.name} VM {lab.vms[0].name}"] = seed_doc(lab.vms[0], key.public_openssh, key)
    failed = {name: errors for name, doc in docs.items() if (errors := seed.schema_errors(doc))}
    if failed:
        raise SectorlabError("user-data against cloud-init's schema: " + "; ".join(
            f"{name}: {', '.join(errors)}" for name, errors in failed.items()))
    progress(f"cloud-init schema ({seed.cloud_init_schema_file()}): the user-data of {', '.join(docs)}: valid")


def terraform_check(progress: Progress = _say) -> None:
    """terraform fmt -check and validate of terraform/ (init against the local provider mirror)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="sectorlab-tfcheck-") as tmp:
        tf = Terraform(Path(tmp), progress)
        tf.run("fmt", "-check", "-diff", capture=True)
        tf.run("init", "-input=false", "-no-color", "-backend=false", capture=True)
        tf.run("validate", "-no-color", capture=True)
    progress(f"{Path(tf.binary).name} fmt and validate of {TERRAFORM_DIR}: ok")
