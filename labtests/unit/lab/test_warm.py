"""The saved-state cache, the save of a running guest and the guest probe lab-up runs after a
restore (no VM: virsh is faked)."""

from __future__ import annotations

import json

import pytest

from labtests.unit import records
from sectorlab import labdef
from sectorlab.errors import SectorlabError
from sectorlab.host import accel, libvirt
from sectorlab.lab import warm

LAB = {
    "lab": {"name": "t"},
    "vm": [{"name": "vm1", "guest": "debian12", "disk": [
        {"bus": "nvme", "geometry": "sector4k", "name": "b"},
        {"bus": "nvme", "geometry": "sector512n", "name": "a"},
        {"bus": "virtio", "geometry": "sector512e", "name": "c"},
    ]}],
}


@pytest.fixture
def fake_versions(monkeypatch):
    monkeypatch.setattr(warm, "qemu_version", lambda: "QEMU emulator version 7.2.22")
    monkeypatch.setattr(libvirt.LibvirtHost, "version", lambda host: "Running against daemon: 9.0.0")


def key_of(data, images=None, domain_type="qemu", lab_id="ab" * 16):
    return warm.state_key(labdef.validate(data), images or {"debian12": "aa"}, domain_type, lab_id)[0]


def test_state_key_depends_on_what_the_saved_guest_depends_on(fake_versions, monkeypatch):
    base = key_of(LAB)
    assert base == key_of(json.loads(json.dumps(LAB)))  # same definition, same key
    other_geometry = json.loads(json.dumps(LAB))
    other_geometry["vm"][0]["disk"][2]["geometry"] = "sector4k"
    assert key_of(other_geometry) != base
    more_memory = json.loads(json.dumps(LAB))
    more_memory["vm"][0]["memory_mib"] = 1024
    assert key_of(more_memory) != base
    assert key_of(LAB, images={"debian12": "bb"}) != base
    assert key_of(LAB, domain_type="kvm") != base
    # A guest booted with other kernel arguments is another saved state.
    tcg_args = accel.GUEST_KERNEL_ARGS["qemu"]
    assert tcg_args, "a TCG guest is given norandmaps"
    monkeypatch.setitem(accel.GUEST_KERNEL_ARGS, "qemu", ())
    assert key_of(LAB) != base
    monkeypatch.setitem(accel.GUEST_KERNEL_ARGS, "qemu", tcg_args)
    assert key_of(LAB) == base
    assert key_of(LAB, lab_id="cd" * 16) != base  # the domain's <metadata>, saved with the guest
    monkeypatch.setattr(warm, "qemu_version", lambda: "QEMU emulator version 8.2.0")
    assert key_of(LAB) != base


def test_saved_state_says_why_it_cannot_be_used(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path))
    saved = warm.SavedState("t", "k1", {"qemu": "QEMU 7.2", "images": {"debian12": "bb"}, "format": 1})
    assert saved.missing(["vm1"]) == "no saved state yet"
    (saved.root / "k0").mkdir(parents=True)
    (saved.root / "k0" / "meta.json").write_text(json.dumps({"qemu": "QEMU 7.2", "images": {"debian12": "aa"},
                                                             "format": 1}))
    assert saved.missing(["vm1"]) == "the saved state k0 was made with another guest image"
    saved.dir.mkdir()
    for name in ["meta.json", *warm.STATE_FILES, "vm1.save"] + [f.format(vm="vm1") for f in warm.VM_STATE_FILES]:
        (saved.dir / name).write_text("x")
    assert saved.missing(["vm1"]) == "the saved state k1 is incomplete (no vm1-root.qcow2)"
    saved.root_disk("vm1").write_text("x")
    assert saved.missing(["vm1"]) is None
    state = tmp_path / "state"
    state.mkdir()
    saved.install(state, ["vm1"])
    assert (state / "id_ed25519").exists() and (state / "seed-vm1.iso").exists() and (state / "host-vm1.pub").exists()
    assert sorted(warm.clear("t")) == ["k0", "k1"] and not saved.root.exists()


def test_probe_finds_writes_at_either_end(tmp_path):
    from sectorlab.inguest import guestprobe
    clean, head, tail = (tmp_path / n for n in ("clean", "head", "tail"))
    for f in (clean, head, tail):
        f.write_bytes(bytes(4 << 20))
    with open(head, "r+b") as f:
        f.write(b"redo")
    with open(tail, "r+b") as f:
        f.seek((4 << 20) - 1)
        f.write(b"\x01")
    assert [guestprobe.not_zero(str(p), 65536) for p in (clean, head, tail)] == [False, True, True]


def test_probe_waits_for_late_disks_and_reports_dirty_ones(tmp_path):
    """The probe run as the guest runs it (python3 -c, one JSON argument), with a fake lsblk that
    shows the second disk only from its third call on."""
    import os
    import subprocess
    import sys

    from sectorlab import lab
    disk_a, disk_b = tmp_path / "a", tmp_path / "b"
    disk_a.write_bytes(bytes(1 << 20))
    disk_b.write_bytes(b"x" + bytes((1 << 20) - 1))
    calls = tmp_path / "calls"
    fake = tmp_path / "lsblk"
    fake.write_text(f"""#!{sys.executable}
import json, os
n = len(open({str(calls)!r}).read()) if os.path.exists({str(calls)!r}) else 0
open({str(calls)!r}, "a").write("x")
devs = [{{"name": {os.path.relpath(disk_a, "/dev")!r}, "type": "disk", "serial": "sa"}}]
if n >= 2:
    devs.append({{"name": {os.path.relpath(disk_b, "/dev")!r}, "type": "disk", "serial": "sb"}})
print(json.dumps({{"blockdevices": devs}}))
""")
    fake.chmod(0o755)
    request = {"clock": None, "nvme_tcp": [], "serials": ["sa", "sb"], "wait": 30, "pristine_bytes": 4096,
               "lsblk": [str(fake)]}
    out = subprocess.run([sys.executable, "-c", lab.diskcheck.PROBE.read_text(), json.dumps(request)],
                         capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    assert len(calls.read_text()) == 3 and result["behind_s"] is None
    assert [os.path.realpath(p) for p in result["dirty"]] == [str(disk_b)]
    assert [d["serial"] for d in json.loads(result["lsblk"])["blockdevices"]] == ["sa", "sb"]
    assert result["write_cache"] == {"sa": None, "sb": None}, "files, not block devices: no queue/write_cache"


def test_probe_sets_a_disks_write_cache_only_when_asked_and_reports_what_it_reads(tmp_path, monkeypatch):
    """The NVMe disks' write cache is the guest's to set (QEMU's NVMe device keeps a volatile one):
    the probe writes queue/write_cache when it says otherwise, and reads back what the kernel keeps."""
    from sectorlab.inguest import guestprobe
    monkeypatch.setattr(guestprobe, "SYS_BLOCK", str(tmp_path))
    for name, now in (("nvme0n1", "write back"), ("vdb", "write through")):
        (tmp_path / name / "queue").mkdir(parents=True)
        (tmp_path / name / "queue" / "write_cache").write_text(now + "\n")
    assert guestprobe.write_cache("/dev/vdb") == "write through"
    assert guestprobe.write_cache("/dev/nvme0n1") == "write back", "not asked: left as it is"
    assert guestprobe.write_cache("/dev/nvme0n1", "write through") == "write through"
    assert (tmp_path / "nvme0n1" / "queue" / "write_cache").read_text() == "write through"
    assert guestprobe.write_cache("/dev/sdz") is None


@pytest.mark.parametrize("up_at_start", [True, False])
def test_probe_starts_nvme_tcp_targets_only_when_a_namespace_is_missing(tmp_path, up_at_start):
    """systemctl (slow to start in a guest just restored) runs only when an NVMe/TCP namespace is
    not listed; then the unit is started and the disks listed again."""
    import os
    import subprocess
    import sys

    from sectorlab import lab
    started, log = tmp_path / "started", tmp_path / "systemctl.log"
    if up_at_start:
        started.touch()
    (tmp_path / "lsblk").write_text(f"""#!{sys.executable}
import json, os
devs = [{{"name": "vda", "type": "disk", "serial": "plain"}}]
if os.path.exists({str(started)!r}):
    devs.append({{"name": "nvme0n1", "type": "disk", "serial": "tcp1"}})
print(json.dumps({{"blockdevices": devs}}))
""")
    (tmp_path / "systemctl").write_text(f"""#!/bin/sh
echo "$*" >> {log}
[ "$1" = start ] && touch {started}
""")
    for f in ("lsblk", "systemctl"):
        (tmp_path / f).chmod(0o755)
    request = {"clock": None, "nvme_tcp": ["tcp1"], "serials": ["plain", "tcp1"], "wait": 0, "pristine_bytes": 0,
               "lsblk": [str(tmp_path / "lsblk")]}
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    out = subprocess.run([sys.executable, "-c", lab.diskcheck.PROBE.read_text(), json.dumps(request)],
                         capture_output=True, text=True, check=True, env=env).stdout
    serials = [d["serial"] for d in json.loads(json.loads(out)["lsblk"])["blockdevices"]]
    assert serials == ["plain", "tcp1"]
    calls = log.read_text().splitlines() if log.exists() else []
    assert calls == ([] if up_at_start else
                     ["start sectorlab-nvme-tcp.service"])


def test_link_or_copy_links_on_one_filesystem(tmp_path):
    from sectorlab.paths import link_or_copy
    src, dst = tmp_path / "state.save", tmp_path / "managed.save"
    src.write_bytes(b"saved")
    link_or_copy(src, dst)
    assert dst.read_bytes() == b"saved" and dst.stat().st_ino == src.stat().st_ino


class FakeVirsh:
    """virsh as warm.save uses it: records the calls; `refuse` makes snapshot-create-as fail
    (a libvirt without memory-only snapshots)."""

    def __init__(self, refuse: bool = False):
        self.calls: list[tuple[str, ...]] = []
        self.refuse = refuse

    def __call__(self, *args, **kwargs):
        self.calls.append(args)
        if args[0] == "domblklist":
            return "vda  /pool/vm1-root.qcow2\nvdb  /pool/vm1-seed.iso\nsda  /pool/vm1-d.qcow2\n"
        if args[0] == "snapshot-create-as":
            if self.refuse:
                raise SectorlabError("virsh snapshot-create-as: unsupported configuration")
            memspec = args[args.index("--memspec") + 1]
            open(memspec.split(",")[0].removeprefix("file="), "wb").write(b"state")
        if args[0] == "save":
            open(args[2], "wb").write(b"state")
        if args[0] == "save-image-dumpxml":
            return "<domain/>"
        return ""


def saved_state_setup(tmp_path, monkeypatch, fake):
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(libvirt.LibvirtHost, "virsh", lambda host, *args, **kwargs: fake(*args, **kwargs))
    state = tmp_path / "state"
    state.mkdir()
    for name in list(warm.STATE_FILES) + [f.format(vm="vm1") for f in warm.VM_STATE_FILES]:
        (state / name).write_text(name)
    root = tmp_path / "vm1-root.qcow2"
    root.write_bytes(b"root disk")
    return warm.SavedState("t", "k1"), state, {"vm1": records.vm(domain="dom1", root_volume=str(root))}


def test_save_keeps_the_guest_running_with_a_memory_only_snapshot(tmp_path, monkeypatch):
    fake = FakeVirsh()
    saved, state, vms = saved_state_setup(tmp_path, monkeypatch, fake)
    assert warm.save(saved, {"format": 1}, "qemu:///system", vms, state, lambda m: None) == []
    verbs = [c[0] for c in fake.calls]
    assert verbs == ["domblklist", "suspend", "snapshot-create-as", "resume", "save-image-dumpxml",
                     "save-image-define"]
    snapshot = fake.calls[2]
    assert "--no-metadata" in snapshot
    assert [snapshot[i + 1] for i, a in enumerate(snapshot) if a == "--diskspec"] == [
        "vda,snapshot=no", "vdb,snapshot=no", "sda,snapshot=no"]
    assert fake.calls[5][-1] == "--running"  # taken paused, restored running
    assert saved.missing(["vm1"]) is None
    assert saved.root_disk("vm1").read_bytes() == b"root disk"


def test_save_falls_back_to_save_and_restore(tmp_path, monkeypatch):
    fake = FakeVirsh(refuse=True)
    saved, state, vms = saved_state_setup(tmp_path, monkeypatch, fake)
    said = []
    assert warm.save(saved, {"format": 1}, "qemu:///system", vms, state, said.append) == ["vm1"]
    verbs = [c[0] for c in fake.calls]
    assert verbs == ["domblklist", "suspend", "snapshot-create-as", "resume", "save", "restore"]
    assert "unsupported configuration" in said[0] and "stopping and restoring" in said[0]
    assert saved.missing(["vm1"]) is None


def test_wait_for_a_console_line(tmp_path):
    from sectorlab import lab
    from sectorlab.guest import NVME_TCP_READY_MARKER, console_says_ready
    console = tmp_path / "vm1-console.log"
    console.write_text("sectorlab-ready: ssh\n")
    targets_up = console_says_ready(console, NVME_TCP_READY_MARKER)
    assert lab.wait_for(targets_up, 0.3, interval=0.05) is False
    console.write_text(console.read_text() + NVME_TCP_READY_MARKER + "\n")
    assert lab.wait_for(targets_up, 0.3, interval=0.05) is True


def test_probe_reports_a_failed_nvme_tcp_unit_with_its_journal(tmp_path):
    import os
    import subprocess
    import sys

    from sectorlab import lab
    (tmp_path / "lsblk").write_text(f"""#!{sys.executable}
print('{{"blockdevices": [{{"name": "vda", "type": "disk", "serial": "plain"}}]}}')
""")
    (tmp_path / "systemctl").write_text("#!/bin/sh\necho 'Job failed' >&2\nexit 1\n")
    (tmp_path / "journalctl").write_text(
        "#!/bin/sh\necho 'sectorlab-nvme-tcp: no virtio disk with serial bk1 (backing of tcp1) after 30 s'\n")
    for f in ("lsblk", "systemctl", "journalctl"):
        (tmp_path / f).chmod(0o755)
    request = {"clock": None, "nvme_tcp": ["tcp1"], "serials": ["plain", "tcp1"], "wait": 0, "pristine_bytes": 0,
               "lsblk": [str(tmp_path / "lsblk")]}
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-c", lab.diskcheck.PROBE.read_text(), json.dumps(request)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == ("sectorlab-nvme-tcp.service failed (systemctl start exited 1): "
                                   "sectorlab-nvme-tcp: no virtio disk with serial bk1 (backing of tcp1) after 30 s")
