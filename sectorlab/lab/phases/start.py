"""Phase 'start' (the cold and converging routes): Terraform applies the lab, and lab.json records
what it made. apply() and recorded() are the restore phase's too."""

from __future__ import annotations

from pathlib import Path

from ... import labdef
from ...paths import write_atomic
from .. import modelled, ownership, record, terraform
from ..diskcheck import guests_from_lab_json
from ..state import LAB_USER, Progress
from ..teardown import holdings_of
from .runner import Phase


def apply(lab: labdef.Lab, state: Path, uri: str, vm_names: list[str], found, progress: Progress,
          *extra: str) -> terraform.Terraform:
    tf = terraform.Terraform(state, progress)
    tf.init()
    progress(f"terraform apply ({Path(tf.binary).name}, domain type {found.libvirt_domain_type}: {found.reason})")
    # Again, just before Terraform defines the domains: another lab-up may have taken one of the
    # names since 'validate' (libvirt would refuse the second definition anyway; this names the owner).
    ownership.refuse_collisions(holdings_of(lab.name, uri), vm_names)
    tf.run(*apply_args(state), *extra, log=state / "terraform-apply.log")
    return tf


def apply_args(state: Path) -> list[str]:
    return ["apply", "-input=false", "-auto-approve", "-no-color", f"-var-file={state / 'terraform.tfvars.json'}"]


def replacing(vm_names: list[str]) -> list[str]:
    """Terraform's arguments that make every VM's root volume and domain anew."""
    return ([f'-replace=libvirt_volume.root["{n}"]' for n in vm_names]
            + [f'-replace=libvirt_domain.vm["{n}"]' for n in vm_names])


def recorded(lab: labdef.Lab, state: Path, tf: terraform.Terraform, progress: Progress, how: str = "") -> dict:
    """lab.json written from Terraform's outputs, and an SSH client for each guest."""
    summary = next((line for line in (state / "terraform-apply.log").read_text().splitlines()
                    if line.startswith("Apply complete!")), "apply complete")
    progress(summary + how)
    data = lab_record(lab, state, tf.outputs())
    write_atomic(state / "lab.json", data.text())
    return {"tf": tf, "data": data, "guests": guests_from_lab_json(data)}


def lab_record(lab: labdef.Lab, state: Path, outputs: dict) -> record.LabRecord:
    """The record of the lab Terraform made (its outputs), with the login, checked as load() checks it."""
    vms, devices = {}, modelled.devices(lab)
    for name, vm in outputs["vms"].items():
        vms[name] = {**vm, "user": LAB_USER, "key_file": str(state / "id_ed25519"),
                     "host_key": (state / f"host-{name}.pub").read_text().strip()}
    return record.LabRecord.from_json({"format": record.FORMAT, "lab": lab.name, "lab_file": str(lab.path),
                                       "libvirt_uri": outputs["libvirt_uri"], "vms": vms,
                                       "disks": {key: {**d, **devices[key]}
                                                 for key, d in outputs["disks"].items()}},
                                      "lab.json")


def run(lab: labdef.Lab, state: Path, uri: str, vm_names: list[str], found, replace: bool,
        progress: Progress) -> dict:
    tf = apply(lab, state, uri, vm_names, found, progress, *(replacing(vm_names) if replace else ()))
    return recorded(lab, state, tf, progress)


PHASE = Phase("start", run, gives=("tf", "data", "guests"), label="terraform apply")
