"""lab down, lab status and the faults and leftovers they find: what is the lab's own is chosen by
identity (ownership.py), never by a name prefix.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .. import labdef
from ..errors import SectorlabError
from ..host import libvirt
from . import hostcheck, modelled, ownership, terraform, warm
from .diskcheck import guests_from_lab_json, print_table, verify
from .record import LabRecord
from .state import (
    Progress,
    as_lab,
    console_dir,
    lab_lock,
    lab_up_command,
    pool_dir,
    port_holder,
    read_lab_json,
    say,
    state_dir,
)


def domain_states(data: LabRecord) -> dict[str, str]:
    """Each VM's domain state as libvirt says it ("running", "shut off", ...; "absent" when undefined),
    asked by the UUID the lab recorded: a domain of the same name that is not the lab's is absent."""
    host = libvirt.get_host(data.libvirt_uri)
    return {name: host.virsh("domstate", vm.uuid or vm.domain, check=False).strip() or "absent"
            for name, vm in data.vms.items()}


def faults(data: LabRecord, states: dict[str, str] | None = None) -> list[str]:
    """What is wrong with a lab that lab.json says is up, found from the host without asking the
    guests: a VM whose domain does not run (destroyed, or its QEMU killed) and volumes that are gone
    (deleted while the lab ran). Empty for a healthy lab. `states`: domain_states(), if known."""
    found = []
    uri = data.libvirt_uri
    states = states or domain_states(data)
    for name, vm in data.vms.items():
        state = states[name]
        if state != "running":
            found.append(f"{name}: domain {vm.domain} is {state}, not running (destroyed, or its QEMU was "
                         f"killed)")
    volumes = [(f"{vm_name} root disk", vm.root_volume) for vm_name, vm in data.vms.items()]
    volumes += [(f"{d.vm} disk {d.name}", d.volume) for d in data.disks.values() if not d.device]
    volumes = [(what, path) for what, path in volumes if path and path.startswith("/")]
    gone = libvirt.get_host(uri).missing([path for _, path in volumes])
    found += [f"{what}: volume {path} is gone (deleted while the lab ran)" for what, path in volumes if path in gone]
    disks = list(data.disks.values())
    dead = set(modelled.dead(data.lab, disks))
    found += [f"{d.vm} disk {d.name}: its device model does not run (its log: "
              f"{modelled.server(data.lab, d.name).log})" for d in disks if d.name in dead]
    return found


def check_libvirt(lab: labdef.Lab) -> None:
    """Every libvirt URI of the lab answers, or one line that says which does not. lab-down and
    lab-status ask first: without libvirt, a lab's domains look absent while their QEMU runs on,
    and a lab-down would remove the state that still describes them."""
    for uri in sorted({vm.libvirt_uri for vm in lab.vms}):
        hostcheck.check_uri(uri)


def down(lab: labdef.Lab | Path, progress: Progress = say) -> None:
    lab = as_lab(lab)
    check_libvirt(lab)
    with lab_lock(lab.name, "lab down"):
        _down(lab, progress)


def _down(lab: labdef.Lab, progress: Progress) -> None:
    state = state_dir(lab.name)
    uri = lab.vms[0].libvirt_uri
    if (state / "terraform.tfstate").exists():
        tf = terraform.Terraform(state, progress)
        tf.init()
        progress(f"terraform destroy (lab {lab.name})")
        try:
            tf.run("destroy", "-input=false", "-auto-approve", "-no-color",
                   f"-var-file={state / 'terraform.tfvars.json'}", log=state / "terraform-destroy.log")
        except SectorlabError as e:
            progress(f"{e}; removing what is left with virsh")
    leftovers = sweep_libvirt(lab.name, uri, progress, [vm.name for vm in lab.vms])
    modelled.stop(lab.name, progress)  # after the domains: QEMU had their sockets open
    host = libvirt.get_host(uri)
    if host.remote and holdings_of(lab.name, uri).holder_of(console_dir(lab.name, uri, state)) is None:
        host.remove_tree(console_dir(lab.name, uri, state))
    shutil.rmtree(state, ignore_errors=True)
    left = leftovers_of(lab.name, uri)
    if left:
        raise SectorlabError(f"lab {lab.name}: still present after lab-down: {', '.join(left)}")
    progress(f"lab {lab.name} is down: no domain, pool, volume or state of its own left" +
             (f" (virsh removed {', '.join(leftovers)})" if leftovers else ""))


def holdings_of(lab_name: str, uri: str) -> ownership.Holdings:
    return ownership.holdings(uri, ownership.identity(lab_name), pool_dir(lab_name))


def check_host(lab: labdef.Lab, own_ports: set[int] = frozenset()) -> ownership.Holdings:
    """What `lab validate` and lab-up check of the libvirt host before anything of the lab is made:
    hostcheck.check_environment (libvirt answers, the lab fits its disk and memory, fixed ports are
    free), and that no domain or pool name of the lab is another's (ownership.refuse_collisions).
    Returns what libvirt holds of the lab's names."""
    hostcheck.check_environment(lab, own_ports, port_holder, pool_dir)
    held = holdings_of(lab.name, lab.vms[0].libvirt_uri)
    ownership.refuse_collisions(held, [vm.name for vm in lab.vms])
    return held


def leftovers_of(lab_name: str, uri: str) -> list[str]:
    """What libvirt and the libvirt host still have of the lab: its own domains (ownership: by
    identity, never by name prefix), its pool and directories unless they are another's."""
    held = holdings_of(lab_name, uri)
    left = [f"domain {d.name}" for d in held.own]
    host = libvirt.get_host(uri)
    if held.pool_target is not None and held.pool_is_own():
        left.append(f"pool {held.pool}")
    dirs = [pool_dir(lab_name)] + ([console_dir(lab_name, uri, Path())] if host.remote else [])
    gone = host.missing(dirs)
    models = [f"device model directory {modelled.lab_dir(lab_name)}"] if modelled.lab_dir(lab_name).exists() else []
    return left + models + [f"directory {d}" + (f" on {host.label}" if host.remote else "") for d in dirs
                            if d not in gone and held.holder_of(d) is None]


def sweep_libvirt(lab_name: str, uri: str, progress: Progress, vm_names=()) -> list[str]:
    """Remove what a failed apply or destroy left of the lab: its own domains (with their managed
    saves and volumes), its pool and volumes, the pool directory, and the managed-save images of
    its domains' names (`vm_names`, and its domains') that a warm lab-up armed and no domain took.
    Another's objects are left alone, and said to be."""
    removed = []
    held = holdings_of(lab_name, uri)
    host = libvirt.get_host(uri)
    for dom in held.own:
        host.virsh("destroy", dom.uuid, check=False)
        host.virsh("undefine", dom.uuid, "--managed-save", "--remove-all-storage", check=False)
        removed.append(f"domain {dom.name}")
    pool, directory = held.pool, pool_dir(lab_name)
    if held.pool_target is not None and not held.pool_is_own():
        holder = held.pool_holder()
        progress(f"left alone: pool {pool} at {held.pool_target}, " + (
            f"used by {ownership.owner_text(holder, held.ours)}" if holder else "not at the lab's pool directory"))
    elif held.pool_target is not None:
        for vol in host.virsh("vol-list", pool, check=False).splitlines():
            if vol.split():
                host.virsh("vol-delete", "--pool", pool, vol.split()[0], check=False)
        host.virsh("pool-destroy", pool, check=False)
        host.virsh("pool-delete", pool, check=False)
        host.virsh("pool-undefine", pool, check=False)
        removed.append(f"pool {pool}")
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


def status(lab: labdef.Lab | Path, progress: Progress = say) -> int:
    """The lab's VMs and what each guest shows; what is wrong, one line each, and exit status 1:
    a lab that is not up but left libvirt objects behind, VMs that do not run, volumes that are
    gone, disks not as declared."""
    lab = as_lab(lab)
    lab_file = lab.path
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
    for name, vm in data.vms.items():
        print(f"{name}: domain {vm.domain} {states[name]}, ssh {guests[name].endpoint}")
    running = {name: g for name, g in guests.items() if states[name] == "running"}
    rows, seen = verify(data, running, progress)  # the disks of the running VMs
    if len(rows) > 1:  # a header alone: no VM runs to show its disks
        print_table(rows)
    problems += seen
    for p in problems:
        print(f"problem: {p}")
    if problems:
        print(f"'{lab_up_command(lab_file)}' takes the lab down and brings it up fresh")
    return 1 if problems else 0
