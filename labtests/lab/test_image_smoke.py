"""Image smoke test: boot the built guest image under QEMU and check what every lab guest must have.

Guards the image recipe (packer/, images/): the lab user logs in with the lab's key only, the
host key is the one the lab pinned, and the storage tools and NVMe target modules the scenarios
use are present. Needs the image: `make image` (make test builds it first). A missing image is
a failure, not a skip: the lab was asked to provide it.
"""

from __future__ import annotations

import pytest

from labtests.conftest import selected_guest
from labtests.support import dbs
from sectorlab import images
from sectorlab.images import labtools
from sectorlab.images.vm import BootedVM

pytestmark = pytest.mark.vm


@pytest.fixture(scope="module")
def booted():
    name = selected_guest() or images.default_guest(lambda msg: None)
    spec = images.load_guest(name)
    record = images.find_cached(spec)
    if record is None:
        pytest.fail(f"{name}: no image built from the current recipe; run 'make image GUEST={name}'")
    vm = BootedVM(record.image, user="lab", name=f"smoke-{name}", progress=print, ready_marker=record.ready_marker)
    try:
        guest = vm.start(timeout=600)
    except Exception:
        vm.stop()
        raise
    yield vm, guest
    vm.stop()


def test_it_boots_through_its_own_grub(booted):
    """BootedVM gives QEMU the disk alone: the BIOS ran the image's boot loader, which passed the
    kernel its path (for Debian: GRUB as the base build writes it, root by the filesystem's UUID)."""
    _vm, guest = booted
    cmdline = guest.check_output("cat /proc/cmdline")
    assert "BOOT_IMAGE=" in cmdline, cmdline
    if guest.check_output(". /etc/os-release; echo $ID") == "debian":
        assert "root=UUID=" + guest.check_output("findmnt -n -o UUID /") in cmdline, cmdline


def test_every_lab_tool_of_its_family_is_there(booted):
    """Every command and kernel module images/lab-tools.toml names for the guest's family."""
    vm, guest = booted
    family = images.load_guest(vm.name.removeprefix("smoke-")).os_family
    _, tools = labtools.load()
    for tool in tools:
        for command in tool.commands[family]:
            found = guest.run("sudo -n sh -c", f"command -v {command}")
            assert found.ok and found.stdout.strip(), f"{tool.name}: {command} is not in the guest ({found.stderr})"
        for module in tool.modules:
            assert guest.run("sudo -n modinfo -n", module).ok, f"{tool.name}: module {module} is not in the guest"


def test_storage_tools_answer(booted):
    _, guest = booted
    assert guest.check_output("nvme version").startswith("nvme version ")
    assert guest.check_output("fio --version").startswith("fio-")
    assert "parted" in guest.check_output("parted --version")
    for tool in ("sg_readcap", "sfdisk", "blockdev", "lsblk", "wipefs", "udevadm", "python3"):
        guest.check_output("command -v", tool)
    assert "redo-writer run --target PATH" in guest.check_output("redo-writer --help")
    # The DBA's procedures and the rules engine, as the image installs them (docs/scenarios.md).
    assert guest.check_output("provision-redo-disk --help").startswith("usage: provision-redo-disk ")
    assert guest.check_output("reformat-nvme --help").startswith("usage: reformat-nvme ")
    assert '"default_blocksize": 4096' in guest.check_output("redo-check --logical 512 --physical 4096 --json")


def test_databases_are_installed_and_no_server_runs(booted):
    """The cross-checks' databases (labtests/databases/test_cross_checks.py)
    are in the image, no database server starts at boot, and the MariaDB data directory template
    is there; transparent huge pages are off (packer/scripts/debian/lean-boot.sh says why)."""
    _, guest = booted
    assert guest.check_output("mariadbd --version").startswith("mariadbd ")
    assert "PostgreSQL" in guest.check_output(dbs.PG_TEST_FSYNC, "--version")
    assert guest.check_output("sysbench --version").startswith("sysbench ")
    assert "mkfs.xfs version" in guest.check_output("mkfs.xfs -V")
    for unit in ("mariadb.service", "postgresql.service"):  # as root: the lab user has no D-Bus session
        assert guest.run("sudo -n systemctl is-enabled", unit).stdout.strip() == "disabled", unit
        assert guest.run("sudo -n systemctl is-active", unit).stdout.strip() == "inactive", unit
    for server in ("mariadbd", "postgres"):  # one name each: pgrep matches nothing beyond 15 characters
        found = guest.run("pgrep -l -x", server)
        assert found.rc == 1 and not found.stdout.strip() and not found.stderr.strip(), (server, found)
    assert guest.run("sudo -n test -d", f"{dbs.MARIADB_TEMPLATE}/mysql").ok
    assert "[never]" in guest.check_output("cat /sys/kernel/mm/transparent_hugepage/enabled")


def test_nvme_target_modules_load(booted):
    _, guest = booted
    for module in ("nvmet", "nvmet_tcp", "nvme_tcp"):
        guest.check_output("sudo -n modprobe", module)
    loaded = guest.check_output("cat /proc/modules").split("\n")
    names = {line.split()[0] for line in loaded if line}
    assert {"nvmet", "nvmet_tcp", "nvme_tcp"} <= names, f"loaded: {sorted(names)}"


def test_lab_user_has_no_password_and_root_no_ssh(booted):
    _, guest = booted
    status = guest.check_output("sudo -n passwd --status lab").split()
    assert status[1] in ("L", "LK"), f"lab user's password state is {status[1]}, expected locked"
    sshd = guest.check_output("sudo -n sshd -T")
    settings = dict(line.split(" ", 1) for line in sshd.splitlines() if " " in line)
    assert settings["passwordauthentication"] == "no"
    assert settings["permitrootlogin"] == "no"


def test_host_key_came_from_the_seed_not_the_build(booted):
    vm, guest = booted
    served = guest.check_output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[1]
    assert served == guest.host_key.get_base64()


def test_image_records_itself(booted):
    _, guest = booted
    info = dict(line.split("=", 1) for line in guest.check_output("cat /etc/sectorlab-image").splitlines())
    # lab-guest.sh's lines and databases.sh's (the latter written in the Debian base's chroot)
    assert set(info) >= {"guest_os", "kernel", "nvme_cli", "fio", "redo_writer", "mariadb", "pg_test_fsync",
                         "sysbench", "xfsprogs"}
    assert all(info[k].strip() for k in ("mariadb", "pg_test_fsync", "sysbench", "xfsprogs")), info
    assert info["kernel"] == guest.check_output("uname -r")
