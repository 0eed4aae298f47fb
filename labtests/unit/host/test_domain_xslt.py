"""terraform/domain.xsl.tftpl, rendered by the Terraform that lab-up runs and applied by xsltproc to a
domain as the libvirt provider writes it (no VM): every virtio/SCSI data disk gets its serial and
<blockio>, and a disk whose geometry advertises a minimum or optimal I/O size gets a user alias and
a <qemu:override> of exactly those properties on that device (libvirt 9.0's <blockio> has none), as
does a disk presented write-through (write-cache=off); a disk served by its device model becomes
QEMU's NBD client on the model's Unix socket."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest

from labtests.conftest import require_program
from sectorlab.host import tooling
from sectorlab.paths import REPO

QEMU_NS = "{http://libvirt.org/schemas/domain/qemu/1.0}"
# What the libvirt provider hands the XSLT: the seed, then the data disks by volume name.
PROVIDER_DOMAIN = """<domain type="qemu"><name>sectorlab-t-vm1</name><uuid>x</uuid><devices>
<disk type="volume" device="disk"><source pool="p" volume="vm1-seed-1.iso"/><target dev="vdb" bus="virtio"/></disk>
<disk type="volume" device="disk"><source pool="p" volume="vm1-a.qcow2"/><target dev="vdc" bus="virtio"/></disk>
<disk type="volume" device="disk"><source pool="p" volume="vm1-b.qcow2"/><target dev="sda" bus="scsi"/></disk>
<disk type="volume" device="disk"><source pool="p" volume="vm1-c.qcow2"/><target dev="vdd" bus="virtio"/></disk>
<console type="pty"><target type="serial" port="0"/></console></devices></domain>"""


def _disk(volume: str, serial: str, bus: str, logical: int, physical: int, min_io: int = 0, opt_io: int = 0,
          export: str = "", socket: str = "", write_through: bool = False) -> str:
    return (f'{{bus = "{bus}", volume = "{volume}", serial = "{serial}", logical = {logical}, '
            f'physical = {physical}, min_io = {min_io}, opt_io = {opt_io}, export = "{export}", socket = "{socket}", '
            f'write_through = {str(write_through).lower()}}}')


OWNER = {"lab": "t", "vm": "vm1", "lab_id": "0123456789abcdef0123456789abcdef", "machine": "fe" * 16,
         "host": "labhost", "cache": "/root/.cache/sectorlab"}


def _render(tmp_path, disks: list[str], owner: dict | None = None,
            provider_domain: str = PROVIDER_DOMAIN) -> ET.Element:
    terraform = tooling.terraform_binary()
    if terraform is None:
        pytest.skip("no terraform or tofu (scripts/bootstrap installs it)")
    xsltproc = require_program("xsltproc")
    template = REPO / "terraform" / "domain.xsl.tftpl"
    expr = (f'jsonencode(templatefile("{template}", {{uuid = "u-1", ssh_port = 40022, seed_volume = "vm1-seed-1.iso", '
            f'console_log = "/c/vm1-console.log", owner = jsondecode({json.dumps(json.dumps(owner or OWNER))}), '
            f'disks = [{", ".join(disks)}]}}))')
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(tooling.cli_config()), "TF_IN_AUTOMATION": "1"}
    out = subprocess.run([str(terraform), "console"], input=expr, capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    xsl = tmp_path / "domain.xsl"
    xsl.write_text(json.loads(json.loads(out.stdout)))
    (tmp_path / "domain.xml").write_text(provider_domain)
    done = subprocess.run([xsltproc, str(xsl), str(tmp_path / "domain.xml")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return ET.fromstring(done.stdout)


def _data_disk(domain: ET.Element, volume: str) -> ET.Element:
    return next(d for d in domain.iter("disk") if d.find("source").get("volume") == volume)



def test_io_sizes_go_to_the_disks_device_through_an_override(tmp_path):
    domain = _render(tmp_path, [_disk("vm1-a.qcow2", "sa", "virtio", 512, 4096),
                                _disk("vm1-b.qcow2", "sb", "scsi", 4096, 4096, 16384, 131072),
                                _disk("vm1-c.qcow2", "sc", "virtio", 4096, 4096, 16384)])
    a, b, c = (_data_disk(domain, f"vm1-{x}.qcow2") for x in "abc")
    assert (a.findtext("serial"), a.find("blockio").attrib) == \
        ("sa", {"logical_block_size": "512", "physical_block_size": "4096"})
    assert a.find("alias") is None, "a disk without I/O sizes keeps libvirt's own alias"
    assert b.find("blockio").attrib == {"logical_block_size": "4096", "physical_block_size": "4096"}
    aliases = {b.find("alias").get("name"): "b", c.find("alias").get("name"): "c"}
    assert all(name.startswith("ua-") for name in aliases) and len(aliases) == 2, "libvirt's user aliases start ua-"
    overrides = domain.findall(f"{QEMU_NS}override/{QEMU_NS}device")
    props = {aliases[dev.get("alias")]: {p.get("name"): (p.get("type"), p.get("value"))
                                         for p in dev.iter(f"{QEMU_NS}property")} for dev in overrides}
    assert props == {"b": {"min_io_size": ("unsigned", "16384"), "opt_io_size": ("unsigned", "131072")},
                     "c": {"min_io_size": ("unsigned", "16384")}}
    assert domain.findtext("uuid") == "u-1" and domain.find(f"{QEMU_NS}commandline") is not None


def test_a_write_through_disk_gets_write_cache_off_on_its_device_and_nothing_else(tmp_path):
    domain = _render(tmp_path, [_disk("vm1-a.qcow2", "sa", "virtio", 512, 4096, write_through=True),
                                _disk("vm1-b.qcow2", "sb", "scsi", 4096, 4096, 16384, write_through=True),
                                _disk("vm1-c.qcow2", "sc", "virtio", 4096, 4096)])
    a, b, c = (_data_disk(domain, f"vm1-{x}.qcow2") for x in "abc")
    assert c.find("alias") is None, "a write-back disk without I/O sizes keeps libvirt's own alias"
    aliases = {a.find("alias").get("name"): "a", b.find("alias").get("name"): "b"}
    props = {aliases[dev.get("alias")]: {p.get("name"): (p.get("type"), p.get("value"))
                                         for p in dev.iter(f"{QEMU_NS}property")}
             for dev in domain.findall(f"{QEMU_NS}override/{QEMU_NS}device")}
    assert props == {"a": {"write-cache": ("string", "off")},
                     "b": {"write-cache": ("string", "off"), "min_io_size": ("unsigned", "16384")}}


def test_no_override_without_io_sizes(tmp_path):
    domain = _render(tmp_path, [_disk("vm1-a.qcow2", "sa", "virtio", 512, 512),
                                _disk("vm1-b.qcow2", "sb", "scsi", 4096, 4096)])
    assert domain.find(f"{QEMU_NS}override") is None
    assert [d.find("alias") for d in domain.iter("disk")] == [None] * 4


def test_the_labs_identity_goes_into_the_domains_metadata(tmp_path):
    """What ownership.py reads back: every attribute as given, also a cache path with the characters
    XML and XSLT read specially."""
    from sectorlab.lab import ownership
    owner = {**OWNER, "cache": "/tmp/a&b <c> \"d\" 'e' {f}"}
    domain = _render(tmp_path, [_disk("vm1-a.qcow2", "sa", "virtio", 512, 512)], owner)
    found = ownership.parse_domain(ET.tostring(domain, encoding="unicode"))
    assert found.owner == ownership.Identity("t", OWNER["lab_id"], OWNER["machine"], "labhost", owner["cache"], "vm1")
    assert len(domain.findall("metadata")) == 1
    # Metadata the provider wrote itself is kept beside the lab's.
    with_own = PROVIDER_DOMAIN.replace("<uuid>x</uuid>", '<uuid>x</uuid><metadata><p:x xmlns:p="urn:p"/></metadata>')
    domain = _render(tmp_path, [_disk("vm1-a.qcow2", "sa", "virtio", 512, 512)], owner, with_own)
    (metadata,) = domain.findall("metadata")
    assert [child.tag for child in metadata] == ["{urn:p}x", "{urn:sectorlab:lab:1}lab"]


def test_a_model_served_disk_is_the_nbd_client_on_its_models_socket(tmp_path):
    """The provider writes a disk whose url is nbd://:/vm1/m as a network disk without a socket; the
    XSLT gives it the model's Unix socket, keeping the export name the provider reads back as the
    same url (so a converging apply finds nothing to change), with its serial, sectors and I/O sizes."""
    network = PROVIDER_DOMAIN.replace(
        "<console", '<disk type="network" device="disk"><driver name="qemu" type="raw"/>'
                    '<source protocol="nbd" name="/vm1/m"><host/></source><target dev="vde" bus="virtio"/></disk>'
                    "<console")
    socket = "/run/sectorlab/devices/t/m/disk.sock"
    domain = _render(tmp_path, [_disk("vm1-a.qcow2", "sa", "virtio", 512, 512),
                                _disk("", "sm", "virtio", 512, 4096, 16384, export="/vm1/m", socket=socket)],
                     provider_domain=network)
    (m,) = [d for d in domain.iter("disk") if d.get("type") == "network"]
    source = m.find("source")
    assert (source.get("protocol"), source.get("name")) == ("nbd", "/vm1/m")
    assert [h.attrib for h in source.findall("host")] == [{"transport": "unix", "socket": socket}]
    assert (m.findtext("serial"), m.find("blockio").attrib, m.find("driver").attrib) == \
        ("sm", {"logical_block_size": "512", "physical_block_size": "4096"}, {"name": "qemu", "type": "raw"})
    (override,) = domain.findall(f"{QEMU_NS}override/{QEMU_NS}device")
    assert override.get("alias") == m.find("alias").get("name")
    assert _data_disk(domain, "vm1-a.qcow2").findtext("serial") == "sa", "a volume disk beside it is as before"
