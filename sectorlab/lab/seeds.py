"""What Terraform is given: the lab's variables (terraform.tfvars.json) and each VM's NoCloud seed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import images, labdef
from ..errors import SectorlabError
from ..guest import seed, sshkeys
from ..host import accel, libvirt
from . import modelled, ownership
from .pool import IMAGE_POOL
from .state import DEFAULT_LAB_FILE, LAB_USER, Progress, console_dir, pool_dir, say


def _nvme_tcp_conf(vm: labdef.VM) -> str:
    lines = ["# NVMe serial, backing virtio serial (written by sectorlab lab up)"]
    lines += [f"{d.serial} {d.backing_serial}" for d in vm.disks if d.bus == "nvme-tcp"]
    return "\n".join(lines) + "\n"


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
            # A disk served by its device model is a Unix socket (modelled.py); else a qcow2 volume.
            "disks": [{"name": d.name, "bus": d.bus, "geometry": d.geometry.name, "size_mib": d.size_mib,
                       "serial": d.serial, "backing_serial": d.backing_serial or "",
                       "write_cache": vm.write_cache(d),
                       "socket": str(modelled.server(lab.name, d.name).socket) if vm.profile(d) else ""}
                      for d in vm.disks],
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
        "qemu_uid": libvirt.get_host(uris_one).qemu_uid(),
        "domain_type": domain_type,
        "image_pool": IMAGE_POOL,
        "images": {g: p["volume"] for g, p in published.items()},
        "boot": {g: {"kernel": p["kernel"], "initrd": p["initrd"],
                     "cmdline": kernel_cmdline(" ".join((p["cmdline"], *accel.guest_kernel_args(domain_type))))}
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


def check_seeds(progress: Progress = say) -> None:
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
