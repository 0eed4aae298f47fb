"""Lab lifecycle: `sectorlab lab up|down|status`, driving Terraform and the guests.

State lives in $SECTORLAB_CACHE/labs/<lab>/: the Terraform state and variables, the lab's login
key, each VM's host key (so a re-run converges instead of replacing VMs) and lab.json, the one
file the tests read (SSH endpoints, keys, pinned host keys, every declared disk).

The package, one module per concept: state.py (state directory, keys, ports, locks), pool.py
(the image pool), terraform.py, seeds.py (Terraform's variables and the VMs' seeds), phases/ (lab-up
as a sequence of phases, one module each, and the table of which phases each path runs), warm.py
(the saved states the warm path restores), hotplug.py (the NVMe controllers plugged over QEMU's
monitor), modelled.py (the device model serving each data disk), diskcheck.py (what the guests
show), hostcheck.py (what a lab needs of its libvirt hosts), teardown.py (down, status, faults,
leftovers), ownership.py (what is the lab's own), record.py (lab.json).

The names below are the package's face, as the CLI, the bench and the scenarios use it, each
imported from its module when first used (sectorlab/lazy.py: a command that refuses its input before
it needs a lab starts without the lab's modules); anything else is imported from its module.
"""

from ..lazy import interface

_LAZY = {
    "guests_from_lab_json": "diskcheck",
    "print_table": "diskcheck",
    "probe": "diskcheck",
    "wait_for": "diskcheck",
    "domain_name": "ownership",
    "NVME_APPEAR_TIMEOUT": "phases",
    "PAUSE_ENV": "phases",
    "up": "phases",
    "IMAGE_POOL": "pool",
    "volume_name": "pool",
    "check_seeds": "seeds",
    "kernel_cmdline": "seeds",
    "tfvars": "seeds",
    "lab_file_from_env": "state",
    "lab_up_command": "state",
    "load_lab": "state",
    "own_ports": "state",
    "pool_dir": "state",
    "read_lab_json": "state",
    "state_dir": "state",
    "suffix_from_env": "state",
    "check_host": "teardown",
    "down": "teardown",
    "faults": "teardown",
    "leftovers_of": "teardown",
    "status": "teardown",
    "sweep_libvirt": "teardown",
    "terraform_check": "terraform",
}


__getattr__, __dir__ = interface(__name__, _LAZY, globals())
