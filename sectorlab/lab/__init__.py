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

The names below are the package's face, as the CLI, the bench and the scenarios use it; anything
else is imported from its module.
"""

from .diskcheck import guests_from_lab_json, print_table, probe, wait_for  # noqa: F401
from .ownership import domain_name  # noqa: F401
from .phases import NVME_APPEAR_TIMEOUT, PAUSE_ENV, up  # noqa: F401
from .pool import IMAGE_POOL, volume_name  # noqa: F401
from .seeds import check_seeds, kernel_cmdline, tfvars  # noqa: F401
from .state import (  # noqa: F401
    lab_file_from_env,
    lab_up_command,
    load_lab,
    own_ports,
    pool_dir,
    read_lab_json,
    state_dir,
    suffix_from_env,
)
from .teardown import check_host, down, faults, leftovers_of, status, sweep_libvirt  # noqa: F401
from .terraform import terraform_check  # noqa: F401
