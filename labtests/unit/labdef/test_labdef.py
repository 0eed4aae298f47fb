"""Lab definitions: every bad input is one clear error before anything starts; no VM needed."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
from pathlib import Path

import pytest
import tomllib

from sectorlab import cli, geometry, labdef
from sectorlab import lab as lab_mod
from sectorlab.errors import UsageError
from sectorlab.host import libvirt
from sectorlab.lab import hostcheck, ownership
from sectorlab.paths import REPO

BASE = {
    "lab": {"name": "t"},
    "vm": [{"name": "vm1", "guest": "debian12", "memory_mib": 768,
            "disk": [{"bus": "virtio", "geometry": "sector4k"}, {"bus": "nvme", "geometry": "sector512n"}]}],
}


def lab_with(**changes):
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        target = data
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        last = keys[-1]
        if value is KeyError:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value
    return data


def refused(data, *fragments):
    with pytest.raises(UsageError) as err:
        labdef.validate(data)
    msg = str(err.value)
    for f in fragments:
        assert f in msg, f"{f!r} not in: {msg}"
    assert "\n" not in msg
    return msg


def test_default_lab_is_the_full_matrix():
    lab = labdef.load(REPO / "labs" / "default.toml")
    pairs = {(d.bus, d.geometry.name) for _, d in lab.disks()}
    assert pairs == {("nvme", "sector512n"), ("nvme", "sector4k"), ("nvme-tcp", "sector512e"),
                     ("virtio", "sector512n"), ("virtio", "sector512e"), ("virtio", "sector4k"),
                     ("scsi", "sector512n"), ("scsi", "sector512e"), ("scsi", "sector4k")}
    names = [d.name for _, d in lab.disks()]
    assert "nvme-sector4k" in names and "virtio-sector512e" in names and len(set(names)) == 9


def test_serials_say_what_the_disk_is_and_fit_virtio():
    lab = labdef.validate(BASE)
    serials = [d.serial for _, d in lab.disks()]
    assert serials == ["sl00-vblk-4k", "sl01-nvme-512n"]
    tcp = labdef.validate(lab_with(vm__0__disk=[{"bus": "nvme-tcp", "geometry": "sector512e"}]))
    disk = next(d for _, d in tcp.disks())
    assert disk.backing_serial == "sl00-ntcp-512e-bk" and len(disk.backing_serial) <= 20


def test_geometry_catalog_is_the_design_table():
    g = geometry.geometries()
    assert {n: (x.logical_block_size, x.physical_block_size, x.min_io_size, x.opt_io_size) for n, x in g.items()} == {
        "sector512n": (512, 512, 0, 0), "sector512e": (512, 4096, 0, 0), "sector4k": (4096, 4096, 0, 0),
        "sector4k-iu16k": (4096, 4096, 16384, 0), "sector4k-p16k": (4096, 16384, 0, 0)}
    # What the guest kernel shows as minimum I/O: the advertised one, never below the physical sector.
    assert [x.guest_min_io for x in g.values()] == [512, 4096, 4096, 16384, 16384]


@pytest.mark.parametrize("bus, ok", [("virtio", True), ("scsi", True), ("nvme", False), ("nvme-tcp", False)])
def test_minimum_and_optimal_io_sizes_on_the_buses_that_present_them(bus, ok):
    """virtio-blk and scsi-hd carry QEMU's min_io_size/opt_io_size; emulated NVMe and the guest's
    NVMe/TCP target do not, and say why (the catalog's reason)."""
    data = lab_with(geometry={"qlc": {"logical_block_size": 4096, "physical_block_size": 4096,
                                      "min_io_size": 16384, "opt_io_size": 131072}},
                    vm__0__disk=[{"bus": bus, "geometry": "qlc"}])
    if ok:
        disk = next(d for _, d in labdef.validate(data).disks())
        assert (disk.geometry.min_io_size, disk.geometry.opt_io_size, disk.geometry.io_hints) == (16384, 131072, True)
    else:
        refused(data, f"bus {bus!r} cannot present qlc (4096/4096, minimum I/O 16384, optimal I/O 131072)",
                "NPWG", "se bus \"virtio\" or \"scsi\"")
    catalog = lab_with(vm__0__disk=[{"bus": bus, "geometry": "sector4k-iu16k"}])
    if ok:
        assert next(d for _, d in labdef.validate(catalog).disks()).geometry.guest_min_io == 16384
    else:
        refused(catalog, f"bus {bus!r} cannot present sector4k-iu16k (4096/4096, minimum I/O 16384)")


@pytest.mark.parametrize("sizes, says", [
    ({"min_io_size": 6000}, "min_io_size = 6000: expected a multiple of the logical sector (4096)"),
    ({"min_io_size": 2048}, "min_io_size = 2048: expected a multiple of the logical sector (4096)"),
    ({"min_io_size": 4096, "physical_block_size": 16384}, "min_io_size = 4096 is below physical_block_size 16384"),
    ({"min_io_size": 16384, "opt_io_size": 8192}, "opt_io_size = 8192 is below the minimum I/O size 16384"),
    ({"opt_io_size": 1 << 30}, f"opt_io_size = {1 << 30}: expected a multiple of the logical sector (4096) up to"),
    ({"min_io_size": "16k"}, "min_io_size = '16k': expected a whole number of bytes"),
    ({"min_io_size": True}, "min_io_size = True: expected a whole number of bytes"),
    ({"physical_block_size": 131072}, "physical_block_size = 131072: expected a power of two from 512 to 65536"),
    ({"logical_block_size": 8192, "physical_block_size": 8192}, "logical_block_size = 8192: the guest kernel takes "
                                                                "logical sectors up to its page size, 4096"),
])
def test_bad_io_sizes_are_refused_naming_the_value(sizes, says):
    g = {"logical_block_size": 4096, "physical_block_size": 4096, **sizes}
    refused(lab_with(geometry={"qlc": g}, vm__0__disk=[{"bus": "virtio", "geometry": "qlc"}]), says)


def test_raid_like_optimal_io_that_is_no_power_of_two_is_accepted():
    """A RAID 5 of four disks with 64 KiB chunks: minimum I/O 64 KiB, optimal I/O 192 KiB."""
    data = lab_with(geometry={"raid5": {"logical_block_size": 512, "physical_block_size": 4096,
                                        "min_io_size": 65536, "opt_io_size": 196608}},
                    vm__0__disk=[{"bus": "scsi", "geometry": "raid5"}])
    assert next(d for _, d in labdef.validate(data).disks()).geometry.opt_io_size == 196608


def test_nvme_512e_refused_with_alternative():
    refused(lab_with(vm__0__disk=[{"bus": "nvme", "geometry": "sector512e"}]),
            "bus 'nvme' cannot present sector512e", "nvme-tcp")


def test_logical_greater_than_physical():
    data = lab_with(geometry={"odd": {"logical_block_size": 4096, "physical_block_size": 512}})
    refused(data, "logical_block_size 4096 > physical_block_size 512")


@pytest.mark.parametrize("size", [1000, 256, 0, -512, "4k", 131072])
def test_block_size_not_power_of_two_or_out_of_range(size):
    data = lab_with(geometry={"odd": {"logical_block_size": size, "physical_block_size": 4096}})
    refused(data, "logical_block_size", repr(size) if isinstance(size, str) else str(size))


def test_lab_defined_geometry_is_usable():
    data = lab_with(geometry={"sector8k": {"logical_block_size": 512, "physical_block_size": 8192}},
                    vm__0__disk=[{"bus": "scsi", "geometry": "sector8k"}])
    lab = labdef.validate(data)
    disk = next(d for _, d in lab.disks())
    assert (disk.geometry.logical_block_size, disk.geometry.physical_block_size) == (512, 8192)


def test_unknown_bus_and_geometry():
    refused(lab_with(vm__0__disk=[{"bus": "sata", "geometry": "sector4k"}]),
            "unknown bus 'sata'", "nvme, nvme-tcp, virtio, scsi")
    refused(lab_with(vm__0__disk=[{"bus": "virtio", "geometry": "sector8k"}]),
            "unknown geometry 'sector8k'", "sector512n, sector512e, sector4k")


def test_lab_name_of_the_image_pool_is_refused():
    refused(lab_with(lab__name="images"), "name = 'images' is taken", "sectorlab-images", "choose another name")


def test_duplicate_disk_names_and_serials():
    disks = [{"bus": "virtio", "geometry": "sector4k"}, {"bus": "virtio", "geometry": "sector4k"}]
    refused(lab_with(vm__0__disk=disks), "duplicate disk name 'virtio-sector4k'")
    disks = [{"bus": "virtio", "geometry": "sector4k", "serial": "X1"},
             {"bus": "scsi", "geometry": "sector4k", "serial": "X1"}]
    refused(lab_with(vm__0__disk=disks), "duplicate serial 'X1'")


def test_serial_too_long_for_virtio():
    refused(lab_with(vm__0__disk=[{"bus": "virtio", "geometry": "sector4k", "serial": "x" * 21}]),
            "serial = 'xxxxxxxxxxxxxxxxxxxxx'", "1-20 characters")


def test_memory_too_small_for_the_guest():
    refused(lab_with(vm__0__memory_mib=128), "memory_mib = 128", "debian12 needs at least 384 MiB")


def test_unknown_guest_and_keys():
    refused(lab_with(vm__0__guest="windows"), "unknown guest 'windows'", "debian12")
    refused(lab_with(vm__0__cpus=2), "unknown key 'cpus'")


def test_vm_without_disks_and_lab_without_vms():
    refused(lab_with(vm__0__disk=[]), "no [[vm.disk]]")
    refused({"lab": {"name": "t"}}, "no [[vm]]")


def test_ports():
    refused(lab_with(vm__0__ssh_port=22), "ssh_port = 22", "1024-65535")
    two = lab_with(vm__0__ssh_port=40022)
    two["vm"].append(copy.deepcopy(two["vm"][0]) | {"name": "vm2"})
    two["vm"][1]["disk"] = [{"bus": "scsi", "geometry": "sector512e"}]
    refused(two, "ssh_port 40022 is also the port of VM vm1")


def test_port_already_taken(monkeypatch):
    monkeypatch.setattr(hostcheck, "check_uri", lambda uri: None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        lab = labdef.validate(lab_with(vm__0__ssh_port=port))
        with pytest.raises(UsageError, match=f"ssh_port {port} on 127.0.0.1 is already taken"):
            hostcheck.check_environment(lab)


def test_own_port_is_not_a_conflict(monkeypatch):
    monkeypatch.setattr(hostcheck, "check_uri", lambda uri: None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        lab = labdef.validate(lab_with(vm__0__ssh_port=port))
        hostcheck.check_environment(lab, own_ports={port})


def test_bad_uri_syntax():
    refused(lab_with(lab={"name": "t", "libvirt_uri": "xen:///"}), "libvirt_uri = 'xen:///'", "qemu:///system")


def test_unreachable_uri(tmp_path):
    """A local socket that does not exist: unreachable, without contacting any other host."""
    if not __import__("shutil").which("virsh"):
        pytest.skip("host program 'virsh' is not installed (scripts/bootstrap installs it)")
    uri = f"qemu+unix:///system?socket={tmp_path}/nothing.sock"
    with pytest.raises(UsageError, match="is unreachable"):
        hostcheck.check_uri(uri)


def test_bad_toml_names_the_file(tmp_path):
    path = tmp_path / "lab.toml"
    path.write_text("[lab\nname = 1\n")
    with pytest.raises(UsageError, match=f"lab definition {path}: not valid TOML"):
        labdef.load(path)
    with pytest.raises(UsageError, match="No such file"):
        labdef.load(tmp_path / "missing.toml")


def test_too_many_nvme_disks():
    disks = [{"bus": "nvme", "geometry": "sector4k", "name": f"n{i}"} for i in range(labdef.MAX_NVME_PER_VM + 1)]
    refused(lab_with(vm__0__disk=disks), f"at most {labdef.MAX_NVME_PER_VM} per VM")


PUBLISHED = {"debian12": {"volume": "img.qcow2", "kernel": "/pool/img.vmlinuz", "initrd": "/pool/img.initrd",
                          "cmdline": "root=UUID=ab-12 ro console=ttyS0,115200 quiet"}}
OWNER = ownership.Identity("t", "0123456789abcdef0123456789abcdef", "fe" * 16, "labhost", "/cache & <more>")


def test_kernel_cmdline_as_the_provider_reads_it_back():
    from sectorlab import lab as lab_mod
    assert lab_mod.kernel_cmdline("") == []
    assert lab_mod.kernel_cmdline("ro quiet") == [{"_": "quiet ro"}]
    assert lab_mod.kernel_cmdline("root=UUID=x ro") == [{"root": "UUID=x"}, {"_": "ro"}]


def test_tfvars_carry_geometry_names_and_seed(tmp_path):
    from sectorlab import lab as lab_mod
    from sectorlab.guest import sshkeys
    lab = labdef.validate(lab_with(vm__0__disk=[{"bus": "nvme-tcp", "geometry": "sector512e"},
                                               {"bus": "scsi", "geometry": "sector4k"}]))
    sshkeys.generate("login").write(tmp_path / "id_ed25519")
    sshkeys.generate("host").write(tmp_path / "host-vm1")
    v = lab_mod.tfvars(lab, tmp_path, {"vm1": 40100}, "qemu", PUBLISHED, OWNER)
    vm = v["vms"]["vm1"]
    assert v["domain_type"] == "qemu" and v["images"] == {"debian12": "img.qcow2"}
    assert v["owner"] == {"lab_id": OWNER.id, "machine": OWNER.machine, "host": OWNER.host, "cache": OWNER.cache}
    # Under TCG the guest keeps its mappings where they were (norandmaps: sectorlab/host/accel.py); under KVM not.
    assert v["boot"]["debian12"] == {"kernel": "/pool/img.vmlinuz", "initrd": "/pool/img.initrd",
                                     "cmdline": [{"root": "UUID=ab-12", "console": "ttyS0,115200"},
                                                 {"_": "norandmaps quiet ro"}]}
    kvm = lab_mod.tfvars(lab, tmp_path, {"vm1": 40100}, "kvm", PUBLISHED, OWNER)
    assert kvm["boot"]["debian12"]["cmdline"] == [{"root": "UUID=ab-12", "console": "ttyS0,115200"}, {"_": "quiet ro"}]
    grub = lab_mod.tfvars(lab, tmp_path, {"vm1": 40100}, "qemu",
                          {"debian12": {"volume": "img.qcow2", "kernel": "", "initrd": "", "cmdline": ""}}, OWNER)
    assert grub["boot"] == {}, "an image without its kernel boots through GRUB"
    assert vm["ssh_port"] == 40100
    assert vm["disks"][0] == {"name": "nvme-tcp-sector512e", "bus": "nvme-tcp", "geometry": "sector512e",
                              "size_mib": labdef.DEFAULT_DISK_MIB, "serial": "sl00-ntcp-512e",
                              "backing_serial": "sl00-ntcp-512e-bk", "write_cache": "write through",
                              "socket": "/run/sectorlab/devices/t/nvme-tcp-sector512e/disk.sock"}
    iso = Path(vm["seed_iso"])

    def iso_file(name):
        return subprocess.run(["isoinfo", "-R", "-x", f"/{name}", "-i", str(iso)], capture_output=True, text=True,
                              check=True).stdout

    doc = json.loads(iso_file("user-data").partition("\n")[2])
    assert doc["write_files"][0]["path"] == "/etc/sectorlab/nvme-tcp.conf"
    assert "sl00-ntcp-512e sl00-ntcp-512e-bk" in doc["write_files"][0]["content"]
    assert doc["ssh_keys"]["ed25519_public"] == (tmp_path / "host-vm1.pub").read_text().strip()
    assert json.loads(iso_file("meta-data"))["instance-id"] == f"t-vm1-{vm['seed_id']}"
    # The same seed is not rewritten (a restored guest's seed must stay byte for byte); the UUID is stable.
    before = iso.read_bytes()
    again = lab_mod.tfvars(lab, tmp_path, {"vm1": 40100}, "qemu", PUBLISHED, OWNER)["vms"]["vm1"]
    assert iso.read_bytes() == before and again["seed_id"] == vm["seed_id"] and again["uuid"] == vm["uuid"]
    # A new login key is a new seed.
    sshkeys.generate("login2").write(tmp_path / "id_ed25519")
    changed = lab_mod.tfvars(lab, tmp_path, {"vm1": 40100}, "qemu", PUBLISHED, OWNER)["vms"]["vm1"]
    assert changed["seed_id"] != vm["seed_id"] and iso.read_bytes() != before


def _one_disk(extra: str):
    return labdef.validate(tomllib.loads('[[vm]]\nname = "lab1"\n[[vm.disk]]\nbus = "virtio"\n'
                                         'geometry = "sector512n"\n' + extra))


@pytest.mark.parametrize("extra", ['latency = "hdd-7200"', 'latency = "none"', "write_latency_us = 3000"])
def test_the_retired_latency_fields_are_refused_naming_what_replaces_them(extra):
    with pytest.raises(UsageError) as e:
        _one_disk(extra)
    msg = str(e.value)
    key, _, value = extra.partition(" = ")
    assert f"{key} = {value.strip(chr(34)) if value.isdigit() else repr(value.strip(chr(34)))}" in msg, msg
    assert "dm-delay in the guest is retired" in msg and 'device = "hdd-7200"' in msg and "\n" not in msg, msg


def _disk_of(bus: str, geometry: str, extra: str):
    return labdef.validate(tomllib.loads(f'[[vm]]\nname = "lab1"\n[[vm.disk]]\nbus = "{bus}"\n'
                                         f'geometry = "{geometry}"\n' + extra))


@pytest.mark.parametrize("extra", ["rmw = true", "rmw = false"])
def test_the_retired_rmw_field_is_refused_naming_the_device_profiles_that_replace_it(extra):
    with pytest.raises(UsageError) as e:
        _disk_of("virtio", "sector512e", extra)
    msg = str(e.value)
    assert f"{extra}: QEMU's paced read-modify-write reads are retired" in msg, msg
    assert 'device = "hdd-7200"' in msg and '"nvme-512e"' in msg and "\n" not in msg, msg


@pytest.mark.parametrize("device", ["", 'device = "floor"\n'])
def test_a_custom_geometry_with_a_larger_physical_sector_is_refused_on_nvme(device):
    """The bus refuses any geometry whose physical sector is larger than its logical one, not only
    the catalog's sector512e: a lab's own 512/8192 geometry on nvme (model-served or not) is refused
    naming it, its sizes and why."""
    with pytest.raises(UsageError, match=r"bus 'nvme' cannot present ae8k \(512/8192\): QEMU's emulated NVMe never "
                                         r"reports a physical sector larger than the logical one"):
        labdef.validate(tomllib.loads('[geometry.ae8k]\nlogical_block_size = 512\nphysical_block_size = 8192\n'
                                      '[[vm]]\nname = "lab1"\n[[vm.disk]]\nbus = "nvme"\ngeometry = "ae8k"\n'
                                      + device))


def test_a_disk_name_too_long_for_its_models_socket_is_refused():
    from sectorlab.lab import modelled

    class Host:
        def memory_bytes(self):
            return 1 << 40

    name = "d" * 63
    lab = labdef.validate(tomllib.loads(
        f'[lab]\nname = "{"l" * 31}"\n[[vm]]\nname = "lab1"\n[[vm.disk]]\nbus = "virtio"\ngeometry = "sector512n"\n'
        f'name = "{name}"\n'))
    with pytest.raises(UsageError, match=rf"lab l{{31}} disk {name}: its device model's socket /run/sectorlab/"
                                         rf"devices/l{{31}}/{name}/disk.sock is 128 bytes, more than the 107 a Unix "
                                         rf"socket's path takes; give the disk or the lab a shorter name"):
        modelled.check(lab, Host())


@pytest.mark.parametrize("disk", ['latency = "hdd-7200"', 'device = "ssd9000"', "rmw = true"])
def test_lab_up_with_a_bad_behaviour_exits_2_and_starts_nothing(disk, tmp_path, isolated_cache, monkeypatch, capsys):
    from sectorlab import cli, images
    from sectorlab import lab as lab_mod
    touched = []
    for module, name in ((lab_mod.terraform, "Terraform"), (libvirt.LibvirtHost, "virsh"), (images, "build")):
        monkeypatch.setattr(module, name, lambda *a, _n=name, **k: touched.append(_n))
    path = tmp_path / "bad.toml"
    path.write_text(f'[lab]\nname = "bad"\n[[vm]]\nname = "lab1"\n[[vm.disk]]\nbus = "virtio"\n'
                    f'geometry = "sector512n"\n{disk}\n')
    assert cli.main(["lab", "up", "--lab", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"sectorlab: error: {path} vm lab1 disk #1: ") and "\n" not in err
    assert touched == [] and not (isolated_cache / "labs").exists()


def test_a_suffix_names_the_lab_apart(monkeypatch, capsys):
    """The parser takes the suffix it is given; the CLI and the scenarios read make's LAB_SUFFIX."""
    monkeypatch.setenv(labdef.SUFFIX_ENV, "-job2")
    assert labdef.load(REPO / "labs" / "default.toml").name == "default", "the parser reads no environment"
    assert lab_mod.load_lab(REPO / "labs" / "default.toml").name == "default-job2"
    assert cli.main(["lab", "validate", "--offline", str(REPO / "labs" / "default.toml")]) == 0
    assert "lab default-job2," in capsys.readouterr().out
    assert labdef.load(REPO / "labs" / "default.toml", suffix="").name == "default"
    assert labdef.load(REPO / "labs" / "default.toml", suffix="-db").name == "default-db"


@pytest.mark.parametrize("suffix", ["job2", "-Job2", "-job 2", "-" + "x" * 30, "-ü"])
def test_a_bad_suffix_is_one_line_naming_it(suffix):
    with pytest.raises(UsageError) as e:
        labdef.load(REPO / "labs" / "default.toml", suffix=suffix)
    msg = str(e.value)
    assert f"SECTORLAB_LAB_SUFFIX={suffix!r}" in msg and "LAB_SUFFIX=-job2" in msg and "\n" not in msg, msg


def test_every_disk_of_a_local_lab_is_served_by_a_model_and_a_remote_labs_by_none():
    """A disk that asks for no profile is served by the floor's; on a remote libvirt host nothing is
    served (sectorlab starts the models on this host) and the disks are volumes."""
    from sectorlab.lab import modelled
    plain = '[[vm.disk]]\nname = "plain"\nbus = "scsi"\ngeometry = "sector512n"\n'
    modelled_disk = '[[vm.disk]]\nbus = "virtio"\ngeometry = "sector4k"\ndevice = "hdd-15k"\nsize_mib = 64\n'
    lab = labdef.validate(tomllib.loads('[lab]\nname = "m"\n[[vm]]\nname = "lab1"\n' + plain + modelled_disk))
    assert modelled.devices(lab) == {"lab1/plain": {"device": "floor"},
                                     "lab1/virtio-sector4k-hdd-15k": {"device": "hdd-15k"}}
    logged = labdef.validate(tomllib.loads('[lab]\nname = "m"\n[[vm]]\nname = "lab1"\n' + plain + "write_log = true\n"))
    assert modelled.devices(logged) == {"lab1/plain": {"device": "floor", "write_log": True}}, "the record says it"
    far = labdef.validate(tomllib.loads('[lab]\nname = "m"\nlibvirt_uri = "qemu+ssh://h/system"\n[[vm]]\n'
                                        'name = "lab1"\n' + plain))
    assert modelled.devices(far) == {"lab1/plain": {"device": None}}
    assert modelled.server("m", "plain").socket == modelled.SERVE_DIR / "m" / "plain" / "disk.sock"


def test_model_served_disks_are_refused_past_half_the_hosts_memory():
    from sectorlab.errors import UsageError
    from sectorlab.lab import modelled

    class Host:
        def memory_bytes(self):
            return 1 << 30

    lab = labdef.validate(tomllib.loads(
        '[lab]\nname = "m"\n[[vm]]\nname = "lab1"\n[[vm.disk]]\nbus = "virtio"\ngeometry = "sector512n"\n'
        'device = "floor"\nsize_mib = 600\n'))
    with pytest.raises(UsageError, match=r"lab m: its 1 model-served disks take 600 MiB in RAM if written through, "
                                         r"more than 50% of this host's 1024 MiB; make them smaller \(size_mib\)"):
        modelled.check(lab, Host())
    modelled.check(labdef.validate(tomllib.loads(
        '[lab]\nname = "m"\n[[vm]]\nname = "lab1"\n[[vm.disk]]\nbus = "virtio"\ngeometry = "sector512n"\n'
        'device = "floor"\nsize_mib = 500\n')), Host())


def test_a_model_served_nvme_disk_is_backed_by_the_model_and_a_512e_disk_gets_its_physical_sector():
    from labtests.unit import records
    from sectorlab.lab import hotplug, modelled
    p3700 = records.disk(name="p3700", bus="nvme", serial="s-p", device="intel-p3700",
                         volume=str(modelled.SERVE_DIR / "m" / "p3700" / "disk.sock"))
    assert hotplug._backing(p3700) == {"driver": "raw", "file": {"driver": "nbd", "server": {
        "type": "unix", "path": str(modelled.SERVE_DIR / "m" / "p3700" / "disk.sock")}}}
    assert hotplug._backing(records.disk(name="v", bus="nvme", serial="s-v", volume="/p/v.qcow2"))["driver"] == \
        "qcow2", "on a remote libvirt host: the volume"
    assert "physical-sector" not in modelled.params("intel-p3700", 512, 512)
    assert modelled.params("floor", 512, 4096) == {"physical-sector": "4096"}  # 512e: the floor's only parameter
    cell = modelled.params("exadata-cell-flashlog", 512, 4096)  # a 512e cell: both media get the guest's writes
    assert cell["physical-sector"] == cell["flashlog.physical-sector"] == "4096"
    assert "flashlog.physical-sector" not in modelled.params("exadata-cell-flashlog", 512, 512)


def test_a_running_model_that_serves_another_size_or_profile_is_named(tmp_path, monkeypatch):
    """What a converging lab-up compares before it keeps a running lab: each running model's size,
    profile and parameters (written beside it when it started) against what the definition gives
    the disk now; a disk whose model does not run is not compared (lab-up starts it)."""
    import json

    from sectorlab.lab import modelled
    monkeypatch.setattr(modelled, "SERVE_DIR", tmp_path)
    monkeypatch.setattr(modelled.DeviceServer, "pid", lambda self: 1 if self.directory.name != "new" else None)
    lab = labdef.validate(tomllib.loads(
        '[lab]\nname = "m"\n[[vm]]\nname = "lab1"\n'
        '[[vm.disk]]\nname = "same"\nbus = "virtio"\ngeometry = "sector512e"\nsize_mib = 64\n'
        '[[vm.disk]]\nname = "grown"\nbus = "virtio"\ngeometry = "sector512n"\nsize_mib = 128\n'
        '[[vm.disk]]\nname = "slow"\nbus = "virtio"\ngeometry = "sector512n"\ndevice = "hdd-15k"\nsize_mib = 64\n'
        '[[vm.disk]]\nname = "new"\nbus = "virtio"\ngeometry = "sector512n"\nsize_mib = 64\n'
        '[[vm.disk]]\nname = "logged"\nbus = "virtio"\ngeometry = "sector512n"\nsize_mib = 64\nwrite_log = true\n'))
    served = {"same": (64, "floor", {"physical-sector": "4096"}), "grown": (64, "floor", {}), "slow": (64, "floor", {}),
              "logged": (64, "floor", {})}
    for name, (mib, profile, params) in served.items():
        (tmp_path / "m" / name).mkdir(parents=True)
        (tmp_path / "m" / name / modelled.SERVED).write_text(
            json.dumps({"size": mib << 20, "profile": profile, "params": params}))
    assert modelled.changed(lab) == [
        "disk grown's device model serves 64 MiB as floor, the definition asks for 128 MiB as floor",
        "disk slow's device model serves 64 MiB as floor, the definition asks for 64 MiB as hdd-15k",
        "disk logged's device model serves 64 MiB as floor, the definition asks for 64 MiB as floor with a write log"]
