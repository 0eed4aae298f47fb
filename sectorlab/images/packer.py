"""The build of a guest image with Packer, and `packer validate` of the template.

The checks of what this machine must hold (Packer, OVMF for a UEFI guest, a vendor template
that matches its pinned sha256, free space) run before anything is made. Debian's base disk is
built by scripts/build-debian-base and cached by its own recipe's hash. Builds go to a temporary
directory and are renamed into place only when they succeeded.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from ..devices import build as host_build
from ..errors import SectorlabError, UsageError
from ..guest import READY_MARKER, seed, sshkeys
from ..host import accel as accel_mod
from ..paths import REPO, image_cache
from . import labtools, packerprogress, recipe
from .cache import (
    DEBIAN_BASE_SCRIPT,
    GUEST_TOOLS,
    ImageRecord,
    _base_files,
    cached_image_path,
    check_free_space,
    find_cached,
    hash_files,
    input_hash,
    sha256_file,
    update_manifest,
)
from .guests import PACKER_DIR, REQUIRED_FREE_GIB, GuestSpec, Progress, guest_names, load_guest, say

QCOW2_MAGIC = b"QFI\xfb"
# OVMF from Debian's ovmf package (scripts/bootstrap installs it): the firmware's code, read-only,
# and the template of its variable store, copied for each build.
OVMF_DIR = Path("/usr/share/OVMF")
OVMF_CODE, OVMF_VARS = "OVMF_CODE_4M.fd", "OVMF_VARS_4M.fd"


def check_template(spec: GuestSpec, progress: Progress) -> Path:
    """A vendor template already in the cache must be a qcow2 file that matches its pinned sha256
    before Packer sees it. One line naming the file, what was found, what was expected and what to
    do; the file is left where the user put it."""
    path = spec.template_file
    assert path is not None
    pinned = f"pinned in {spec.vars_file.relative_to(REPO)}"
    if path.exists():
        with open(path, "rb") as f:
            magic = f.read(4)
        if magic != QCOW2_MAGIC:
            raise UsageError(f"{path}: not a qcow2 image (it starts with {magic!r}, a qcow2 file with "
                             f"{QCOW2_MAGIC!r}); {spec.name} needs Oracle's KVM template {spec.base_image_url} "
                             f"({pinned}): remove the file or put that template there")
        progress(f"checking {path.name} against its pinned sha256")
        actual = sha256_file(path)
        if actual != spec.base_image_sha256:
            raise UsageError(f"{path}: sha256 {actual}, expected {spec.base_image_sha256} ({pinned}); remove "
                             f"the file or put the right template there")
    else:
        progress(f"{path.name} is not in the cache: Packer will download it from {spec.base_image_url}")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def check_firmware(spec: GuestSpec) -> None:
    """A guest that boots by UEFI needs OVMF on this machine, said before anything is made."""
    if spec.firmware != "uefi":
        return
    missing = [str(OVMF_DIR / f) for f in (OVMF_CODE, OVMF_VARS) if not (OVMF_DIR / f).is_file()]
    if missing:
        raise UsageError(f"{spec.name} boots by UEFI (firmware = \"uefi\" in {spec.vars_file.relative_to(REPO)}), "
                         f"but OVMF is missing ({', '.join(missing)}); run scripts/bootstrap, which installs "
                         f"Debian's ovmf package")


def firmware_args(spec: GuestSpec, work: Path) -> list[list[str]]:
    """QEMU arguments for the guest's firmware during the build: none for BIOS; for UEFI, OVMF's
    code (read-only) and a copy of its variable store, as pflash drives."""
    if spec.firmware != "uefi":
        return []
    variables = work / OVMF_VARS  # OVMF is there: check_firmware ran before the build began
    shutil.copyfile(OVMF_DIR / OVMF_VARS, variables)
    return [["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_DIR / OVMF_CODE}"],
            ["-drive", f"if=pflash,format=raw,unit=1,file={variables}"]]


def build_debian_base(spec: GuestSpec, progress: Progress) -> Path:
    """The mmdebstrap base disk, cached by the hash of its own recipe."""
    key = hash_files(_base_files(spec))[:16]
    outdir = image_cache().parent / "base" / f"{spec.name}-{key}"
    if (outdir / "base.qcow2").exists():
        progress(f"base disk cached: {outdir}")
        return outdir
    # Left by an interrupted build of this guest's base: the exact shape of `tmp` below (a guest
    # whose name starts with this one's is not touched).
    stale_re = re.compile(rf"{re.escape(spec.name)}-[0-9a-f]{{16}}\.tmp-\d+")
    for stale in outdir.parent.glob(f"{spec.name}-*.tmp-*"):
        if stale_re.fullmatch(stale.name):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = outdir.with_name(outdir.name + f".tmp-{os.getpid()}")
    progress(f"building the {spec.name} base disk from Debian's packages into {outdir}")
    _, tools = labtools.load()
    env = {**os.environ, "SECTORLAB_TOOL_PACKAGES": " ".join(labtools.packages(spec.os_family, tools)),
           **recipe.load(spec.name).env()}
    proc = subprocess.run([str(DEBIAN_BASE_SCRIPT), str(tmp)], env=env)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SectorlabError(f"scripts/build-debian-base failed (exit {proc.returncode}); see its messages above")
    tmp.rename(outdir)
    return outdir


def packer_env() -> dict:
    env = dict(os.environ)
    env.setdefault("PACKER_CACHE_DIR", str(image_cache().parent / "packer"))
    env["CHECKPOINT_DISABLE"] = "1"  # no update check: only the package registries may be contacted
    return env


@contextlib.contextmanager
def _build_lock(name: str):
    """One build per guest at a time on this machine; a second waits, then finds the image built."""
    image_cache().mkdir(parents=True, exist_ok=True)
    with open(image_cache() / f".lock-{name}", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"{name}: another build of this guest is running; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(name: str, force: bool = False, progress: Progress = say) -> ImageRecord:
    spec = load_guest(name)
    with _build_lock(name):
        return _build_locked(spec, force, progress)


def _build_locked(spec: GuestSpec, force: bool, progress: Progress) -> ImageRecord:
    name = spec.name
    key = input_hash(spec)
    final = cached_image_path(spec, key)
    cached = find_cached(spec)
    if cached is not None and not force:
        progress(f"{name}: image up to date ({final}, inputs {key[:16]})")
        update_manifest(cached)
        return cached
    _check_build_inputs(spec, progress)
    start = time.monotonic()
    expected = packerprogress.last_build_seconds(image_cache(), name)
    found = accel_mod.detect()
    progress(f"{name}: building with Packer under {found.name} ({found.reason})")
    work = _fresh_work_dir(name, key)
    try:
        machine_vars = _machine_vars(spec, work, found.name, progress)
        built = _run_packer(spec, work, machine_vars, progress, start, expected)
        record = _keep_image(spec, key, work, built, machine_vars, found.name, start)
    except BaseException:
        _drop_failed_build(name, work, progress)
        raise
    shutil.rmtree(work, ignore_errors=True)
    update_manifest(record)
    progress(f"{name}: built {final} ({record.size_bytes / 2**20:.0f} MiB) in {record.build_seconds:.0f} s")
    return record


def _check_build_inputs(spec: GuestSpec, progress: Progress) -> None:
    if shutil.which("packer") is None:
        raise SectorlabError("'packer' is not installed; run scripts/bootstrap")
    # The inputs this machine must hold are checked before anything is made or booted.
    check_firmware(spec)
    if spec.base_recipe == "download":
        check_template(spec, progress)
    check_free_space(image_cache(), REQUIRED_FREE_GIB[spec.base_recipe])


def _fresh_work_dir(name: str, key: str) -> Path:
    """The build's own directory in the cache, after those of interrupted builds of the guest are removed."""
    # Left by an interrupted build of this guest (we hold its lock): the exact shape of `work` below.
    stale_re = re.compile(rf"\.build-{re.escape(name)}-[0-9a-f]{{16}}-\d+")
    for stale in image_cache().glob(f".build-{name}-*"):
        if stale_re.fullmatch(stale.name):
            shutil.rmtree(stale, ignore_errors=True)
    work = image_cache() / f".build-{name}-{key[:16]}-{os.getpid()}"
    work.mkdir(parents=True)
    return work


def _machine_vars(spec: GuestSpec, work: Path, accelerator: str, progress: Progress) -> dict:
    build_key = sshkeys.generate(f"sectorlab-build-{spec.name}")
    key_file = build_key.write(work / "build_key")
    doc = seed.user_data(spec.ssh_username, [build_key.public_openssh], None, f"{spec.name}-build")
    iso = seed.write_iso(work / "seed.iso", f"build-{uuid.uuid4()}", f"{spec.name}-build", doc)
    machine = {
        "accelerator": accelerator,
        "output_directory": str(work / "out"),
        "seed_iso": str(iso),
        "ssh_private_key_file": str(key_file),
        "firmware_args": firmware_args(spec, work),
        "lab_tools_env": labtools.lab_env(spec.os_family),
    }
    if spec.base_recipe == "mmdebstrap":
        base = build_debian_base(spec, progress)
        machine.update({
            "base_image_url": f"file://{base / 'base.qcow2'}",
            "base_image_sha256": sha256_file(base / "base.qcow2"),
            "base_image_target": str(base / "base.qcow2"),
            # The lab's own boot files: the build boots the image as every lab will.
            "direct_kernel": [["-kernel", str(base / "kernel")], ["-initrd", str(base / "initrd.img")],
                              ["-append", " ".join((base / "cmdline").read_text().split()
                                                   + list(accel_mod.Accelerator(accelerator, "").guest_kernel_args))]],
        })
    else:
        machine["base_image_target"] = str(spec.template_file)  # checked by check_template
        machine["base_image_sha256"] = spec.base_image_sha256
    return machine


def _packer_snapshot(work: Path) -> Path:
    """Packer reads the provisioning scripts only when it reaches them: build from a snapshot so
    the image matches the input hash even if the working tree changes meanwhile."""
    snapshot = work / "packer"
    shutil.copytree(PACKER_DIR, snapshot)
    # redo-writer goes into every image: a static binary runs on any of the guests. The host's own
    # redo-writer links libnbd dynamically when it is installed (NBD targets), so the guests get
    # redo-writer-static, built from the same sources without NBD.
    # (one build at a time with the tests' and the lanes' builds of the same directory: build.built)
    shutil.copy2(host_build.built(host_build.REDO_WRITER_STATIC), snapshot / "files" / "redo-writer")
    for tool in GUEST_TOOLS:
        shutil.copy2(tool, snapshot / "files" / tool.name)
    return snapshot


def _run_packer(spec: GuestSpec, work: Path, machine_vars: dict, progress: Progress, started: float,
                expected: float | None) -> Path:
    """`packer build` of the snapshot with the guest's and this machine's variables: the image it
    wrote. Packer's output goes to a log; the terminal gets its phases (packerprogress)."""
    name = spec.name
    vars_json = work / "machine.pkrvars.json"
    vars_json.write_text(json.dumps(machine_vars, indent=2))
    snapshot = _packer_snapshot(work)
    cmd = ["packer", "build", "-color=false", "-timestamp-ui", f"-var-file={snapshot / 'vars' / spec.vars_file.name}",
           f"-var-file={vars_json}", str(snapshot)]
    log = image_cache() / f"{name}-packer.log"
    progress(f"{name}: {' '.join(cmd)} (its output: {log})")
    rc = packerprogress.run(cmd, work, packer_env(), log, progress, name, expected, started)
    if rc != 0:
        console = image_cache() / f"{name}-failed-build-console.log"
        if (work / "out-console.log").exists():
            shutil.copyfile(work / "out-console.log", console)
        raise SectorlabError(f"{name}: packer build failed (exit {rc}); its last lines:\n{packerprogress.tail(log)}\n"
                             f"its whole output is {log}, the guest's console log is {console}")
    built = work / "out" / f"{name}.qcow2"
    if not built.exists():
        raise SectorlabError(f"{name}: packer reported success but wrote no {built}")
    return built


def _boot_files(machine_vars: dict, final: Path) -> tuple[dict, str]:
    """The kernel and initramfs the image boots with by direct kernel boot (the Debian base's,
    scripts/debian-boot-files), copied next to the image, and their command line; none for an image
    that boots through its own boot loader (a vendor template)."""
    if not machine_vars.get("direct_kernel"):
        return {}, ""
    base = Path(machine_vars["base_image_target"]).parent
    boot = {}
    for f in ("kernel", "initrd.img"):
        boot[f] = final.with_suffix(f".{f.split('.')[0]}")
        shutil.copyfile(base / f, boot[f])
    return boot, (base / "cmdline").read_text().strip()


def _keep_image(spec: GuestSpec, key: str, work: Path, built: Path, machine_vars: dict, accelerator: str,
                start: float) -> ImageRecord:
    """The built image renamed into the cache under its input hash, with its build record beside it."""
    final = cached_image_path(spec, key)
    boot, cmdline = _boot_files(machine_vars, final)
    record = ImageRecord(
        guest=spec.name, image=str(final), image_sha256=sha256_file(built), input_hash=key,
        base_url=spec.base_image_url or f"mmdebstrap:{machine_vars['base_image_url']}",
        base_sha256=machine_vars["base_image_sha256"],
        built_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        build_seconds=round(time.monotonic() - start, 1), accelerator=accelerator,
        size_bytes=built.stat().st_size, kernel=str(boot.get("kernel", "")),
        initrd=str(boot.get("initrd.img", "")), cmdline=cmdline, ready_marker=READY_MARKER)
    built.rename(final)
    final.with_suffix(".json").write_text(json.dumps(asdict(record), indent=2) + "\n")
    return record


def _drop_failed_build(name: str, work: Path, progress: Progress) -> None:
    if os.environ.get("SECTORLAB_KEEP_FAILED_BUILD"):
        progress(f"{name}: failed build kept in {work} (SECTORLAB_KEEP_FAILED_BUILD)")
    else:
        shutil.rmtree(work, ignore_errors=True)


def validate_templates(progress: Progress = say) -> None:
    """`packer validate` of the template with every guest's vars (machine values as placeholders)."""
    if shutil.which("packer") is None:
        raise SectorlabError("'packer' is not installed; run scripts/bootstrap")
    tmp = Path(tempfile.mkdtemp(prefix="sectorlab-validate-"))
    key = sshkeys.generate("validate").write(tmp / "key")
    placeholders = {"seed_iso": str(tmp / "seed.iso"), "output_directory": str(tmp / "out"),
                    "ssh_private_key_file": str(key), "base_image_sha256": "0" * 64,
                    "base_image_url": f"file://{tmp}/base.qcow2"}
    failed = []
    try:
        _validate_each(placeholders, failed, progress)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        raise SectorlabError("packer validate failed: " + " | ".join(failed))


def _validate_each(placeholders: dict, failed: list, progress: Progress) -> None:
    for name in guest_names():
        spec = load_guest(name)
        machine = {k: v for k, v in placeholders.items()
                   if not (k.startswith("base_image") and spec.base_recipe == "download")}
        cmd = ["packer", "validate", f"-var-file={spec.vars_file}"]
        cmd += [f"-var={k}={v}" for k, v in machine.items()] + [str(PACKER_DIR)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=packer_env())
        if proc.returncode != 0:
            failed.append(f"{name}: {(proc.stdout + proc.stderr).strip()}")
        else:
            progress(f"packer validate {name}: ok")
