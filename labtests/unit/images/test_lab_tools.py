"""The lab tools, written once (images/lab-tools.toml), with packages on every guest family."""

from __future__ import annotations

import pytest

from sectorlab import images, paths
from sectorlab.errors import SectorlabError
from sectorlab.images import labtools

# What the lab uses in its guests, by the issue that asked for each: the storage tools, python3,
# device-mapper and the NVMe target modules; provisioning and reformat (parted, util-linux,
# nvme-cli); dm-delay for latency profiles; the databases and XFS of the cross-checks.
REQUIRED_COMMANDS = {"nvme", "fio", "parted", "sfdisk", "blockdev", "lsblk", "wipefs", "sg_readcap", "python3",
                     "dmsetup", "mkfs.xfs", "xfs_info", "mariadbd", "mariadb-install-db", "sysbench"}
REQUIRED_MODULES = {"nvmet", "nvmet_tcp", "nvme_tcp", "dm_delay"}


def test_every_tool_has_packages_on_every_guest_family():
    families, tools = labtools.load()
    assert families == ["debian", "oraclelinux"]
    assert {images.load_guest(g).os_family for g in images.guest_names()} == set(families)
    for tool in tools:
        for family in families:
            assert tool.packages[family], (tool.name, family)
            assert tool.commands[family] or tool.modules, tool.name


def test_the_lab_s_commands_and_modules_are_all_there():
    families, tools = labtools.load()
    for family in families:
        commands = {c.rsplit("/", 1)[-1] for t in tools for c in t.commands[family]}
        assert REQUIRED_COMMANDS <= commands, (family, REQUIRED_COMMANDS - commands)
    assert REQUIRED_MODULES <= {m for t in tools for m in t.modules}


def test_uek_differences_are_said():
    _, tools = labtools.load()
    by_name = {t.name: t for t in tools}
    for name in ("nvme-target", "dm-delay"):  # UEK: modules in kernel-uek-modules-extra on some releases
        assert by_name[name].when_missing["oraclelinux"] and not by_name[name].when_missing["debian"]
        assert by_name[name].packages["oraclelinux"] == ("kernel-uek-modules-extra-{kernel}",)
    assert by_name["sysbench"].repo["oraclelinux"] == "oracle-epel-release-el{major}"  # Oracle's EPEL
    assert by_name["pg_test_fsync"].commands["debian"] == ("/usr/lib/postgresql/15/bin/pg_test_fsync",)


def test_the_environment_the_builds_get():
    env = dict(line.split("=", 1) for line in labtools.lab_env("oraclelinux"))
    assert set(env) == {"LAB_PACKAGES", "LAB_PACKAGES_WHEN_MISSING", "LAB_REPO_PACKAGES", "LAB_COMMANDS",
                        "LAB_MODULES"}
    assert "sg3_utils" in env["LAB_PACKAGES"].split() and "kernel-uek-modules-extra-{kernel}" not in \
        env["LAB_PACKAGES"].split()
    debian = dict(line.split("=", 1) for line in labtools.lab_env("debian"))
    assert "sg3-utils" in debian["LAB_PACKAGES"].split() and debian["LAB_PACKAGES_WHEN_MISSING"] == ""
    with pytest.raises(SectorlabError, match="no packages for the guest family 'suse'"):
        labtools.lab_env("suse")


def test_the_debian_base_list_leaves_the_tools_to_the_map():
    """A tool is written once: not also in the Debian base list (which holds the base system)."""
    base = {line.split("#")[0].strip() for line in (paths.REPO / "images/debian12/packages").read_text().splitlines()}
    _, tools = labtools.load()
    tool_packages = {p for t in tools for p in t.packages["debian"]} - {"linux-image-amd64"}
    assert not base & tool_packages, base & tool_packages


@pytest.mark.parametrize("edit, says", [
    (lambda s: s.replace('oraclelinux = ["fio"]\n', ""), "[tool.fio]: no packages for the oraclelinux guests"),
    (lambda s: s.replace('oraclelinux = ["fio"]', "oraclelinux = []"), "[tool.fio]: oraclelinux = []"),
    (lambda s: s.replace('commands = ["fio"]', ""), "[tool.fio]: neither commands nor modules"),
    (lambda s: s.replace('commands = ["fio"]', 'commands = ["fio"]\nsuse = ["fio"]'), "unknown key(s) suse"),
    (lambda s: s.replace('debian = ["fio"]', 'debian = ["fio fio"]'), "debian = ['fio fio']"),
])
def test_a_tool_forgotten_for_a_family_is_refused(tmp_path, edit, says):
    path = tmp_path / "lab-tools.toml"
    path.write_text(edit(labtools.TOOLS_FILE.read_text()))
    with pytest.raises(SectorlabError) as err:
        labtools.load(path)
    assert says in str(err.value) and "\n" not in str(err.value)
