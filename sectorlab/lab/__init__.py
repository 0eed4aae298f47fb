"""Lab lifecycle: `sectorlab lab up|down|status`, driving Terraform and the guests.

State lives in $SECTORLAB_CACHE/labs/<lab>/: the Terraform state and variables, the lab's login
key, each VM's host key (so a re-run converges instead of replacing VMs) and lab.json, the one
file the tests read (SSH endpoints, keys, pinned host keys, every declared disk).

The package, one module per concept: state.py (state directory, keys, ports, locks), pool.py
(the image pool), terraform.py, seeds.py (Terraform's variables and the VMs' seeds), pipeline.py
(the lab-up pipeline and its routes), hotplug.py (the NVMe controllers plugged over QEMU's
monitor), modelled.py (the device model serving each data disk), diskcheck.py (what the guests
show), teardown.py (down, status, faults, leftovers), ownership.py (what is the lab's own),
record.py (lab.json). The names below are the package's interface, as the CLI, the bench and the
scenarios use it.
"""

from . import ownership, record  # noqa: F401
from .diskcheck import (  # noqa: F401
    PRISTINE_BYTES,
    PROBE,
    guests_from_lab_json,
    print_table,
    probe,
    verify,
    wait_for,
)
from .pipeline import (  # noqa: F401
    NVME_APPEAR_TIMEOUT,
    NVME_TCP_CONSOLE_TIMEOUT,
    PAUSE_ENV,
    LabUp,
    _lab_json,
    _left_behind,
    _record_or_none,
    _running,
    domain_name,
    up,
)
from .pool import (  # noqa: F401
    IMAGE_POOL,
    IMAGE_POOL_DIR,
    publish_image,
    volume_name,
)
from .routes import (  # noqa: F401
    SSH_TIMEOUT,
    _Cold,
    _Converge,
    _Route,
    _Warm,
)
from .seeds import (  # noqa: F401
    _nvme_tcp_conf,
    check_seeds,
    kernel_cmdline,
    seed_doc,
    tfvars,
    write_seed,
)
from .state import (  # noqa: F401
    _HELD,
    DEFAULT_LAB_FILE,
    LAB_USER,
    Progress,
    _ensure_keys,
    _free_port,
    _load_json,
    _ports,
    _say,
    as_lab,
    console_dir,
    images_pool_lock,
    lab_file_from_env,
    lab_lock,
    lab_up_command,
    load_lab,
    own_ports,
    pool_dir,
    port_holder,
    read_lab_json,
    state_dir,
    suffix_from_env,
)
from .teardown import (  # noqa: F401
    _down,
    _holdings,
    _sweep_managed_saves,
    check_host,
    check_libvirt,
    domain_states,
    down,
    faults,
    leftovers_of,
    status,
    sweep_libvirt,
)
from .terraform import (  # noqa: F401
    TERRAFORM_DIR,
    Terraform,
    terraform_check,
)
