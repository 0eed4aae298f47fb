"""Guest catalog, cache keys, cached builds and the manifest: no VM, no Packer run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sectorlab import images, paths
from sectorlab.errors import SectorlabError, UsageError
from sectorlab.guest import sshkeys
from sectorlab.images import labtools


def test_every_vars_file_is_a_guest():
    assert images.guest_names() == ["debian12", "debian12-zfs", "oraclelinux10", "oraclelinux8", "oraclelinux9"]
    for name in images.guest_names():
        spec = images.load_guest(name)
        assert spec.name == name
        assert spec.provision_scripts, name
        for script in spec.provision_scripts:
            assert (images.PACKER_DIR / script).is_file(), f"{name}: {script} is missing"


# The current templates and the sha256 published build configurations agree on (docs/oracle-linux.md).
PINNED = {
    "oraclelinux8": ("OL8/u10/x86_64/OL8U10_x86_64-kvm-b287.qcow2",
                     "cf9eb243b7390311f1e2896e3e6849241e521e6592c8be9907956e3a6cee1f0c"),
    "oraclelinux9": ("OL9/u8/x86_64/OL9U8_x86_64-kvm-b293.qcow2",
                     "b12103391327abee8090686759c0d62dac9a7af2bf0f45fdf6b0d085a0fbb52b"),
    "oraclelinux10": ("OL10/u1/x86_64/OL10U1_x86_64-kvm-b291.qcow2",
                      "8e59326c4bf7cfa58a6cac404db8ed583fe3a5f4c460e2b73c64988785bb4f0f"),
}


def test_oracle_templates_are_pinned():
    for name, (path, sha256) in PINNED.items():
        spec = images.load_guest(name)
        assert spec.base_recipe == "download" and spec.os_family == "oraclelinux"
        assert spec.base_image_url == "https://yum.oracle.com/templates/OracleLinux/" + path
        assert spec.base_image_sha256 == sha256
        assert spec.firmware == "bios"


def test_the_oracle_linux_guests_differ_only_in_their_template():
    """One vars file per guest is what a template bump edits; the rest of the three must not drift."""
    specs = [images.load_guest(name) for name in PINNED]
    for spec in specs[1:]:
        for field in ("os_family", "base_recipe", "ssh_username", "disk_size", "provision_scripts",
                      "lab_min_memory_mib", "firmware"):
            assert getattr(spec, field) == getattr(specs[0], field), (spec.name, field)


def test_debian_is_built_here():
    spec = images.load_guest("debian12")
    assert spec.base_recipe == "mmdebstrap" and spec.template_file is None


def test_the_zfs_variant_is_debian12_but_for_its_name_and_memory():
    """debian12-zfs builds on debian12's recipe (images/debian12-zfs/recipe.toml): its vars differ in
    the guest's name and the memory a lab VM needs (the ARC, the pool and the NFS server)."""
    base, zfs = images.load_guest("debian12"), images.load_guest("debian12-zfs")
    for field in ("os_family", "base_recipe", "ssh_username", "disk_size", "provision_scripts", "firmware"):
        assert getattr(zfs, field) == getattr(base, field), field
    assert (zfs.name, zfs.lab_min_memory_mib) == ("debian12-zfs", 768)


def test_unknown_guest_names_value_and_choices():
    with pytest.raises(UsageError) as err:
        images.load_guest("centos7")
    msg = str(err.value)
    assert "'centos7'" in msg and "debian12, debian12-zfs, oraclelinux10, oraclelinux8, oraclelinux9" in msg


def test_hash_is_stable_and_sees_every_change(tmp_path):
    a = tmp_path / "a.sh"
    b = tmp_path / "b.sh"
    a.write_text("echo a\n")
    b.write_text("echo b\n")
    first = images.hash_files([a, b], root=tmp_path)
    assert first == images.hash_files([a, b], root=tmp_path)
    b.write_text("echo B\n")
    assert images.hash_files([a, b], root=tmp_path) != first
    b.write_text("echo b\n")
    b.chmod(0o755)
    assert images.hash_files([a, b], root=tmp_path) != first, "the exec bit is an input too"


def test_hash_independent_of_checkout_location(tmp_path):
    for where in ("one", "two"):
        (tmp_path / where).mkdir()
        (tmp_path / where / "x").write_text("same\n")
    assert (images.hash_files([tmp_path / "one" / "x"], root=tmp_path / "one")
            == images.hash_files([tmp_path / "two" / "x"], root=tmp_path / "two"))


def test_guest_hash_covers_its_recipe():
    debian = images.load_guest("debian12")
    files = {p.relative_to(paths.REPO).as_posix() for p in images.files_for_hash(debian)}
    assert "packer/vars/debian12.pkrvars.hcl" in files
    assert "packer/sources.pkr.hcl" in files
    assert "scripts/build-debian-base" in files
    assert "images/debian12/packages" in files
    assert "images/debian12/overlay/usr/local/sbin/sectorlab-seed" in files
    assert "redo-writer/engine.c" in files and "packer/files/sectorlab-nvme-tcp" in files
    assert "devicemodel/model.c" in files  # linked into redo-writer for its model: members
    ol9 = images.load_guest("oraclelinux9")
    ol_files = {p.relative_to(paths.REPO).as_posix() for p in images.files_for_hash(ol9)}
    assert "images/debian12/packages" not in ol_files
    assert images.input_hash(debian) != images.input_hash(ol9)


def _fake_cached(spec, cache: Path) -> Path:
    image = images.cached_image_path(spec, images.input_hash(spec))
    image.parent.mkdir(parents=True, exist_ok=True)
    image.write_bytes(b"qcow2 stand-in")
    record = images.ImageRecord(guest=spec.name, image=str(image), image_sha256="ab" * 32,
                                input_hash=images.input_hash(spec), base_url="x", base_sha256="cd" * 32,
                                built_at="2026-01-01T00:00:00Z", build_seconds=1.0, accelerator="tcg",
                                size_bytes=14)
    image.with_suffix(".json").write_text(json.dumps(record.__dict__))
    return image


def test_cached_image_returns_at_once(isolated_cache, tmp_path, monkeypatch):
    manifest = tmp_path / "manifest.json"
    monkeypatch.setattr(images.cache, "manifest_path", lambda: manifest)
    monkeypatch.setattr(shutil, "which", lambda name: pytest.fail(f"looked for {name}: would build"))
    spec = images.load_guest("debian12")
    image = _fake_cached(spec, isolated_cache)
    said = []
    record = images.build("debian12", progress=said.append)
    assert record.image == str(image)
    assert "up to date" in said[0]
    data = json.loads(manifest.read_text())
    assert data["debian12"]["input_hash"] == images.input_hash(spec)
    assert set(data["debian12"]) >= {"guest", "base_url", "base_sha256", "image_sha256", "input_hash", "built_at"}


def test_manifest_keeps_other_guests(tmp_path, monkeypatch):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"oraclelinux9": {"guest": "oraclelinux9"}}))
    monkeypatch.setattr(images.cache, "manifest_path", lambda: manifest)
    record = images.ImageRecord("debian12", "/x.qcow2", "0" * 64, "1" * 64, "u", "2" * 64, "t", 1.0, "tcg", 1)
    images.update_manifest(record)
    assert set(json.loads(manifest.read_text())) == {"oraclelinux9", "debian12"}


def test_stale_image_is_not_reused(isolated_cache):
    spec = images.load_guest("debian12")
    stale = paths.image_cache() / f"debian12-{'0' * 16}.qcow2"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    stale.with_suffix(".json").write_text("{}")
    assert images.find_cached(spec) is None


def test_template_checksum_mismatch_is_refused(isolated_cache):
    spec = images.load_guest("oraclelinux9")
    spec.template_file.parent.mkdir(parents=True)
    spec.template_file.write_bytes(images.QCOW2_MAGIC + b"but not the template")
    with pytest.raises(UsageError) as err:
        images.check_template(spec, progress=lambda m: None)
    msg = str(err.value)
    assert spec.base_image_sha256 in msg
    assert images.sha256_file(spec.template_file) in msg
    assert spec.template_file.exists(), "a user's file is never deleted"


def test_default_guest_is_debian_without_template(isolated_cache):
    said = []
    assert images.default_guest(said.append) == "debian12"
    assert "OL9U8_x86_64-kvm-b293.qcow2" in said[0] and "GUEST=oraclelinux9" in said[0]


def test_default_guest_is_ol9_with_template(isolated_cache):
    spec = images.load_guest("oraclelinux9")
    spec.template_file.parent.mkdir(parents=True)
    spec.template_file.write_bytes(b"x")
    said = []
    assert images.default_guest(said.append) == "oraclelinux9"
    assert str(spec.template_file) in said[0]


def test_no_free_space_is_one_clear_error(tmp_path):
    with pytest.raises(SectorlabError, match=r"GiB free in .*, the build needs 999999 GiB; .*SECTORLAB_CACHE"):
        images.check_free_space(tmp_path, 999999)


def test_packer_validate_every_guest():
    if shutil.which("packer") is None:
        pytest.skip("host program 'packer' is not installed (scripts/bootstrap installs it)")
    images.validate_templates(progress=lambda m: None)


def test_every_image_prints_the_ready_line_the_host_waits_for():
    """sectorlab connects to a booting guest once its console has guest.READY_MARKER; every
    guest's provisioning installs the unit that writes it (an image without it would be polled
    only after BLIND_POLL_AFTER)."""
    from sectorlab.guest import NVME_TCP_FAILED_MARKER, NVME_TCP_READY_MARKER, READY_MARKER
    script = (paths.REPO / "packer" / "scripts" / "common" / "lab-guest.sh").read_text()
    assert f'echo "{READY_MARKER}" > /dev/console' in script
    targets = (paths.REPO / "packer" / "files" / "sectorlab-nvme-tcp").read_text()
    assert f'echo "{NVME_TCP_READY_MARKER}" > /dev/console' in targets
    assert f'echo "{NVME_TCP_FAILED_MARKER} (exit $rc)" > /dev/console' in targets
    for vars_file in sorted((paths.REPO / "packer" / "vars").glob("*.pkrvars.hcl")):
        assert '"scripts/common/lab-guest.sh"' in vars_file.read_text(), vars_file.name


def test_boot_time_of_another_build_needs_its_record(tmp_path, capsys):
    """`image boot-time --image` (to compare two builds) refuses a qcow2 without its build record."""
    from sectorlab import cli
    stray = tmp_path / "debian12-0000.qcow2"
    stray.write_bytes(b"")
    assert cli.main(["image", "boot-time", "--image", str(stray)]) == 2
    err = capsys.readouterr().err
    assert str(stray) in err and "no build record" in err and "sectorlab image list" in err


def test_a_template_that_is_not_a_qcow2_is_refused(isolated_cache):
    spec = images.load_guest("oraclelinux10")
    spec.template_file.parent.mkdir(parents=True)
    spec.template_file.write_text("<html>404 Not Found</html>")
    with pytest.raises(UsageError) as err:
        images.check_template(spec, progress=lambda m: None)
    msg = str(err.value)
    assert f"{spec.template_file}: not a qcow2 image" in msg and spec.base_image_url in msg and "\n" not in msg
    assert spec.template_file.exists()


@pytest.mark.parametrize("content", [b"<html>404</html>", images.QCOW2_MAGIC + b"wrong"], ids=["not-qcow2", "sha256"])
def test_a_bad_template_stops_the_build_before_anything_is_made(isolated_cache, monkeypatch, content):
    """Refused before Packer runs or a build directory exists: nothing half-built in the cache."""
    spec = images.load_guest("oraclelinux9")
    spec.template_file.parent.mkdir(parents=True)
    spec.template_file.write_bytes(content)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a[0]}: would build"))
    with pytest.raises(UsageError, match=str(spec.template_file)):
        images.build("oraclelinux9", progress=lambda m: None)
    assert not list(paths.image_cache().glob(".build-*")) and not list(paths.image_cache().glob("*.qcow2"))


def test_a_uefi_guest_without_ovmf_is_refused_before_anything_is_made(isolated_cache, monkeypatch, tmp_path):
    spec = images.load_guest("oraclelinux10")
    uefi = images.GuestSpec(**{**spec.__dict__, "firmware": "uefi"})
    monkeypatch.setattr(images.packer, "OVMF_DIR", tmp_path / "no-ovmf")
    with pytest.raises(UsageError) as err:
        images.check_firmware(uefi)
    msg = str(err.value)
    assert "oraclelinux10 boots by UEFI" in msg and str(tmp_path / "no-ovmf" / images.OVMF_CODE) in msg
    assert "scripts/bootstrap" in msg and "ovmf" in msg and "\n" not in msg
    monkeypatch.setattr(images.packer, "load_guest", lambda name: uefi)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a[0]}: would build"))
    with pytest.raises(UsageError, match="boots by UEFI"):
        images.build("oraclelinux10", progress=lambda m: None)
    assert not list(paths.image_cache().glob(".build-*"))


def test_a_uefi_guest_boots_ovmf_from_pflash(tmp_path, monkeypatch):
    ovmf = tmp_path / "OVMF"
    ovmf.mkdir()
    (ovmf / images.OVMF_CODE).write_bytes(b"code")
    (ovmf / images.OVMF_VARS).write_bytes(b"vars")
    monkeypatch.setattr(images.packer, "OVMF_DIR", ovmf)
    spec = images.load_guest("oraclelinux9")
    assert images.firmware_args(spec, tmp_path) == []
    uefi = images.GuestSpec(**{**spec.__dict__, "firmware": "uefi"})
    args = images.firmware_args(uefi, tmp_path)
    assert args == [["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={ovmf / images.OVMF_CODE}"],
                    ["-drive", f"if=pflash,format=raw,unit=1,file={tmp_path / images.OVMF_VARS}"]]
    assert (tmp_path / images.OVMF_VARS).read_bytes() == b"vars"  # a copy: the build writes its variables


def test_a_bad_firmware_value_names_the_file(tmp_path, monkeypatch):
    vars_dir = tmp_path / "vars"
    vars_dir.mkdir()
    text = (images.PACKER_DIR / "vars" / "oraclelinux9.pkrvars.hcl").read_text().replace('"bios"', '"coreboot"')
    (vars_dir / "oraclelinux9.pkrvars.hcl").write_text(text)
    monkeypatch.setattr(images.guests, "PACKER_DIR", tmp_path)
    with pytest.raises(SectorlabError, match="firmware = 'coreboot', expected 'bios' or 'uefi'"):
        images.load_guest("oraclelinux9")


def test_a_lab_vm_of_a_uefi_guest_is_refused(monkeypatch):
    from sectorlab import labdef
    spec = images.load_guest("oraclelinux9")
    uefi = images.GuestSpec(**{**spec.__dict__, "firmware": "uefi"})
    monkeypatch.setattr(images, "load_guest", lambda name: uefi if name == "oraclelinux9" else spec)
    data = {"lab": {"name": "t"}, "vm": [{"name": "vm1", "guest": "oraclelinux9",
                                          "disk": [{"bus": "virtio", "geometry": "sector4k"}]}]}
    with pytest.raises(UsageError, match="guest oraclelinux9 boots by UEFI") as err:
        labdef.validate(data)
    assert "\n" not in str(err.value)


def test_packer_takes_the_uefi_firmware_and_the_lab_tools(tmp_path):
    """The variables sectorlab passes a UEFI build (pflash drives) and every build (the lab tools'
    environment) are what the template declares: packer validate with them set."""
    if shutil.which("packer") is None:
        pytest.fail("packer is not installed; run scripts/bootstrap")
    spec = images.load_guest("oraclelinux10")
    key = sshkeys.generate("validate").write(tmp_path / "key")
    machine = {"seed_iso": str(tmp_path / "seed.iso"), "output_directory": str(tmp_path / "out"),
               "ssh_private_key_file": str(key), "firmware": "uefi",
               "firmware_args": [["-drive", "if=pflash,format=raw,unit=0,readonly=on,file=/x/OVMF_CODE_4M.fd"]],
               "lab_tools_env": labtools.lab_env("oraclelinux")}
    vars_json = tmp_path / "machine.pkrvars.json"
    vars_json.write_text(json.dumps(machine))
    proc = subprocess.run(["packer", "validate", f"-var-file={spec.vars_file}", f"-var-file={vars_json}",
                           str(images.PACKER_DIR)], capture_output=True, text=True, env=images.packer_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = {**machine, "firmware": "coreboot"}
    vars_json.write_text(json.dumps(bad))
    proc = subprocess.run(["packer", "validate", f"-var-file={spec.vars_file}", f"-var-file={vars_json}",
                           str(images.PACKER_DIR)], capture_output=True, text=True, env=images.packer_env())
    assert proc.returncode != 0 and "firmware must be bios or uefi" in proc.stdout + proc.stderr


def test_a_guest_file_is_parsed_once_while_it_stays_the_same_file(tmp_path, monkeypatch):
    import hcl2
    vars_dir = tmp_path / "vars"
    vars_dir.mkdir()
    path = vars_dir / "debian12.pkrvars.hcl"
    path.write_text((images.PACKER_DIR / "vars" / "debian12.pkrvars.hcl").read_text())
    monkeypatch.setattr(images.guests, "PACKER_DIR", tmp_path)
    parsed = []
    real = hcl2.load
    monkeypatch.setattr(hcl2, "load", lambda f: parsed.append(1) or real(f))
    first = images.load_guest("debian12")
    assert images.load_guest("debian12") == first and len(parsed) == 1
    # edited to the same size: its modification time tells (set apart from the first: a coarse clock
    # can give two writes a millisecond apart the same one)
    before = path.stat().st_mtime_ns
    path.write_text(path.read_text().replace("lab_min_memory_mib     = 384", "lab_min_memory_mib     = 512"))
    os.utime(path, ns=(before + 10**9, before + 10**9))
    assert images.load_guest("debian12").lab_min_memory_mib == 512 and len(parsed) == 2
    path.unlink()
    with pytest.raises(UsageError, match="unknown guest 'debian12'"):
        images.load_guest("debian12")
