"""Remote libvirt URIs (sectorlab/host/remote.py): parsed and refused in one line, the URI virsh gets;
the SSH side is exercised by labtests/lab/test_remote_host.py (make alone), the host objects made from
the URIs by test_libvirt.py."""

from __future__ import annotations

import pytest

from labtests.unit.labdef.test_labdef import lab_with, refused
from sectorlab.errors import UsageError
from sectorlab.host import libvirt, remote


def test_local_uris_are_not_remote():
    for uri in ("qemu:///system", "qemu:///session", "qemu+unix:///system?socket=/x.sock"):
        assert not remote.is_remote(uri) and remote.ssh_host(uri) is None
        assert remote.virsh_uri(uri) == uri
        assert isinstance(libvirt.get_host(uri), libvirt.LocalHost) and not libvirt.get_host(uri).remote


def test_an_ssh_uri_is_parsed(tmp_path):
    key, kh = tmp_path / "key", tmp_path / "known hosts"
    key.write_text("k")
    kh.write_text("")
    h = remote.ssh_host(f"qemu+ssh://lab@box.example:2222/system?keyfile={key}&knownhosts={kh}")
    assert (h.user, h.host, h.port, h.keyfile, h.knownhosts) == ("lab", "box.example", 2222, str(key), str(kh))
    assert h.label == "box.example:2222" and h.known_name == "[box.example]:2222"
    plain = remote.ssh_host("qemu+ssh://root@box.example/system")
    assert plain.port == 22 and plain.known_name == "box.example" and plain.keyfile is None


def test_virsh_gets_libssh_when_a_known_hosts_file_is_named(tmp_path):
    """libvirt's ssh transport runs the ssh binary, which reads only the user's known_hosts; its
    libssh transport takes known_hosts= (the provider's knownhosts=)."""
    key, kh = tmp_path / "key", tmp_path / "kh"
    key.write_text("k")
    kh.write_text("")
    uri = f"qemu+ssh://root@127.0.0.1:2222/system?keyfile={key}&knownhosts={kh}"
    assert remote.virsh_uri(uri) == (f"qemu+libssh://root@127.0.0.1:2222/system?keyfile={key}&known_hosts={kh}"
                                     f"&sshauth=privkey")
    assert remote.virsh_uri("qemu+ssh://root@box/system") == "qemu+ssh://root@box/system"  # the user's ssh setup


@pytest.mark.parametrize("uri, says", [
    ("qemu+tcp://box/system", "qemu+ssh:// only"),
    ("qemu+tls://box/system", "qemu+ssh:// only"),
    ("qemu+ssh:///system", "no host name"),
    ("qemu+ssh://box:99999/system", "port is not a number from 1 to 65535"),
    ("qemu+ssh://box/system?keyfile=/nonexistent/key", "keyfile='/nonexistent/key' is not a file"),
    ("qemu+ssh://box/system?knownhosts=/nonexistent/kh", "knownhosts='/nonexistent/kh' is not a file"),
])
def test_bad_remote_uris_are_refused_in_one_line(uri, says):
    msg = refused(lab_with(lab={"name": "t", "libvirt_uri": uri}), f"libvirt_uri = {uri!r}", says)
    assert "write" in msg or "give" in msg  # what to do


def test_a_model_served_disk_is_refused_on_a_remote_host(tmp_path):
    data = lab_with(lab={"name": "t", "libvirt_uri": "qemu+ssh://root@box/system"})
    data["vm"][0]["disk"] = [{"bus": "virtio", "geometry": "sector512e", "device": "hdd-7200"}]
    refused(data, "device = ... on libvirt_uri qemu+ssh://root@box/system", "qemu:///system")


def test_no_ssh_connection_is_made_for_this_host():
    with pytest.raises(Exception, match="this host's libvirt"):
        remote.client("qemu:///system")
    with pytest.raises(UsageError):
        remote.ssh_host("qemu+tcp://box/system")
