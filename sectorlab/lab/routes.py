"""The three routes a lab-up may take, everything in which they differ: cold (boot, then save a
state for the next lab-up), warm (a saved state matches: restore it) and converge (the lab runs;
Terraform finds nothing or little to change). The pipeline (pipeline.LabUp) picks one in its
choose-path phase and asks it at each phase where the routes differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import SectorlabError
from ..guest import READY_MARKER, Guest
from . import warm
from .state import _load_json

if TYPE_CHECKING:  # the pipeline imports the routes
    from .pipeline import LabUp

SSH_TIMEOUT = 900.0


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
