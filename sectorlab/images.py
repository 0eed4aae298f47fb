"""Guest images: which guests exist, their cache keys, the build with Packer and the manifest.

The guests are the files packer/vars/<guest>.pkrvars.hcl (one place per concept). A built image
lives in the cache outside the repository under a name that carries the hash of every input
that shapes it (templates, vars, provisioning scripts and, for Debian, the base recipe), so an
unchanged recipe is never built twice and a changed one never reuses a stale image. Builds go
to a temporary directory and are renamed into place only when they succeeded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import hcl2

from . import accel as accel_mod
from . import labtools, seed, sshkeys
from .errors import SectorlabError, UsageError
from .guest import READY_MARKER
from .paths import REPO, image_cache, manifest_path

PACKER_DIR = REPO / "packer"
DEBIAN_BASE_SCRIPT = REPO / "scripts" / "build-debian-base"
DEFAULT_GUEST_ORDER = ("oraclelinux9", "debian12")
# Free space a build needs in the cache (the build copy, the compacted result, the base disk).
REQUIRED_FREE_GIB = {"mmdebstrap": 8, "download": 25}

Progress = Callable[[str], None]


def _say(msg: str) -> None:
    print(f"sectorlab: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class GuestSpec:
    name: str
    os_family: str
    base_recipe: str
    base_image_url: str
    base_image_sha256: str
    ssh_username: str
    disk_size: str
    provision_scripts: tuple[str, ...]
    lab_min_memory_mib: int = 512
    firmware: str = "bios"  # how the base disk boots under Packer: bios or uefi (OVMF)

    @property
    def vars_file(self) -> Path:
        return PACKER_DIR / "vars" / f"{self.name}.pkrvars.hcl"

    @property
    def template_file(self) -> Path | None:
        """Where a vendor template is kept in the cache (and where a user may drop it)."""
        if self.base_recipe != "download":
            return None
        return image_cache().parent / "templates" / self.base_image_url.rsplit("/", 1)[-1]


def _unquote(value):
    # python-hcl2 keeps the quotes of string literals in some versions.
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    if isinstance(value, list):
        return [_unquote(v) for v in value]
    return value


def load_guest(name: str) -> GuestSpec:
    path = PACKER_DIR / "vars" / f"{name}.pkrvars.hcl"
    if not path.exists():
        raise UsageError(f"unknown guest {name!r}: expected one of {', '.join(guest_names())} "
                         f"(the files packer/vars/<guest>.pkrvars.hcl); pick one, or add "
                         f"packer/vars/{name}.pkrvars.hcl to make it a guest")
    with open(path) as f:
        raw = {k: _unquote(v) for k, v in hcl2.load(f).items()}
    try:
        spec = GuestSpec(
            name=raw["guest"], os_family=raw["os_family"], base_recipe=raw["base_recipe"],
            base_image_url=raw.get("base_image_url", ""), base_image_sha256=raw.get("base_image_sha256", ""),
            ssh_username=raw.get("ssh_username", "lab"), disk_size=raw.get("disk_size", "4096M"),
            provision_scripts=tuple(raw["provision_scripts"]),
            lab_min_memory_mib=int(raw.get("lab_min_memory_mib", 512)), firmware=raw.get("firmware", "bios"))
    except KeyError as e:
        raise SectorlabError(f"{path}: missing variable {e.args[0]}") from e
    if spec.name != name:
        raise SectorlabError(f"{path}: guest = {spec.name!r}, expected {name!r} (the file name)")
    if spec.firmware not in ("bios", "uefi"):
        raise SectorlabError(f"{path}: firmware = {spec.firmware!r}, expected 'bios' or 'uefi'")
    if spec.base_recipe not in REQUIRED_FREE_GIB:
        raise SectorlabError(f"{path}: base_recipe = {spec.base_recipe!r}, expected 'mmdebstrap' or 'download'")
    return spec


def guest_names() -> list[str]:
    return sorted(p.name[: -len(".pkrvars.hcl")] for p in (PACKER_DIR / "vars").glob("*.pkrvars.hcl"))


def default_guest(progress: Progress = _say) -> str:
    """Oracle Linux 9 when its template is already in the cache, else debian12 (never probes the network)."""
    ol9 = load_guest("oraclelinux9")
    if ol9.template_file is not None and ol9.template_file.exists():
        progress(f"GUEST not set: using oraclelinux9 (its template is in the cache: {ol9.template_file})")
        return "oraclelinux9"
    progress(f"GUEST not set: using debian12 (for Oracle Linux 9, put {ol9.base_image_url.rsplit('/', 1)[-1]} "
             f"into {ol9.template_file.parent}/ or run 'make image GUEST=oraclelinux9' on a machine that "
             f"reaches yum.oracle.com)")
    return "debian12"


REDO_WRITER_DIR = REPO / "redo-writer"
# The DBA's tools every guest gets, standard-library Python run from /usr/local/lib/sectorlab/ (the
# rules engine as redo-check; redodisk.py as provision-redo-disk, nvmeformat.py as reformat-nvme,
# both on blockdev.py): installed by packer/scripts/common/lab-guest.sh.
GUEST_TOOLS = [REPO / "sectorlab" / "inguest" / name for name in ("rules.py", "blockdev.py", "redodisk.py",
                                                                   "nvmeformat.py")]


BOOT_FILES_SCRIPT = PACKER_DIR / "scripts" / "common" / "boot-files.sh"


def _redo_writer_sources() -> list[Path]:
    return sorted(REDO_WRITER_DIR.glob("*.[ch]")) + [REDO_WRITER_DIR / "Makefile"]


def _files_for_hash(spec: GuestSpec) -> list[Path]:
    files = sorted(PACKER_DIR.glob("*.pkr.hcl")) + [spec.vars_file]
    files += sorted(p for p in (PACKER_DIR / "files").iterdir() if p.is_file())
    files += [PACKER_DIR / s for s in spec.provision_scripts] + [BOOT_FILES_SCRIPT]
    files += _redo_writer_sources() + GUEST_TOOLS + [labtools.TOOLS_FILE]
    if spec.base_recipe == "mmdebstrap":
        files += _base_files(spec)
    return files


def _base_files(spec: GuestSpec) -> list[Path]:
    recipe = REPO / "images" / spec.name
    return [DEBIAN_BASE_SCRIPT, REPO / "scripts" / "lib.sh", labtools.TOOLS_FILE] + \
        sorted(p for p in recipe.rglob("*") if p.is_file())


def hash_files(files: list[Path], extra: str = "", root: Path = REPO) -> str:
    """sha256 over (path relative to `root`, exec bit, content) of each file, plus `extra`.

    Paths are relative so that two clones of the repository share one cache.
    """
    h = hashlib.sha256()
    for path in files:
        if not path.exists():
            raise SectorlabError(f"input {path} of the image recipe is missing")
        rel = path.relative_to(root).as_posix()
        h.update(f"{rel}\0{os.access(path, os.X_OK)}\0".encode())
        h.update(path.read_bytes())
        h.update(b"\0")
    h.update(extra.encode())
    return h.hexdigest()


def input_hash(spec: GuestSpec) -> str:
    return hash_files(_files_for_hash(spec), extra=f"{spec.base_image_url}\0{spec.base_image_sha256}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class ImageRecord:
    guest: str
    image: str
    image_sha256: str
    input_hash: str
    base_url: str
    base_sha256: str
    built_at: str
    build_seconds: float
    accelerator: str
    size_bytes: int
    # For direct kernel boot (packer/scripts/common/boot-files.sh); empty: boot through GRUB.
    kernel: str = ""
    initrd: str = ""
    cmdline: str = ""
    # The line the guest writes to its serial console once sshd listens (guest.READY_MARKER);
    # empty for images built before it did, which are polled over SSH.
    ready_marker: str = ""

    @classmethod
    def load(cls, path: Path) -> ImageRecord:
        return cls(**json.loads(path.read_text()))


def cached_image_path(spec: GuestSpec, key: str) -> Path:
    return image_cache() / f"{spec.name}-{key[:16]}.qcow2"


def find_cached(spec: GuestSpec) -> ImageRecord | None:
    image = cached_image_path(spec, input_hash(spec))
    record = image.with_suffix(".json")
    if image.exists() and record.exists():
        return ImageRecord.load(record)
    return None


def update_manifest(record: ImageRecord) -> None:
    path = manifest_path()
    data = json.loads(path.read_text()) if path.exists() else {}
    data[record.guest] = asdict(record)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def check_free_space(directory: Path, need_gib: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(directory).free / 2**30
    if free < need_gib:
        raise SectorlabError(f"only {free:.1f} GiB free in {directory}, the build needs {need_gib} GiB; free "
                             f"space there or point SECTORLAB_CACHE at a larger disk")


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
    stale_re = re.compile(rf"^{re.escape(spec.name)}-[0-9a-f]{{16}}\.tmp-\d+$")
    for stale in outdir.parent.glob(f"{spec.name}-*.tmp-*"):
        if stale_re.match(stale.name):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = outdir.with_name(outdir.name + f".tmp-{os.getpid()}")
    progress(f"building the {spec.name} base disk from Debian's packages into {outdir}")
    _, tools = labtools.load()
    env = {**os.environ, "SECTORLAB_TOOL_PACKAGES": " ".join(labtools.packages(spec.os_family, tools))}
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
            _say(f"{name}: another build of this guest is running; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(name: str, force: bool = False, progress: Progress = _say) -> ImageRecord:
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
    if shutil.which("packer") is None:
        raise SectorlabError("'packer' is not installed; run scripts/bootstrap")
    # The inputs this machine must hold are checked before anything is made or booted.
    check_firmware(spec)
    if spec.base_recipe == "download":
        check_template(spec, progress)
    check_free_space(image_cache(), REQUIRED_FREE_GIB[spec.base_recipe])
    start = time.monotonic()
    found = accel_mod.detect()
    progress(f"{name}: building with Packer under {found.name} ({found.reason})")

    # Left by an interrupted build of this guest (we hold its lock): the exact shape of `work` below.
    stale_re = re.compile(rf"^\.build-{re.escape(name)}-[0-9a-f]{{16}}-\d+$")
    for stale in image_cache().glob(f".build-{name}-*"):
        if stale_re.match(stale.name):
            shutil.rmtree(stale, ignore_errors=True)
    work = image_cache() / f".build-{name}-{key[:16]}-{os.getpid()}"
    work.mkdir(parents=True)
    (work / "out-boot").mkdir()  # where Packer downloads the kernel, initramfs and command line
    try:
        machine_vars = _machine_vars(spec, work, found.name, progress)
        vars_json = work / "machine.pkrvars.json"
        vars_json.write_text(json.dumps(machine_vars, indent=2))
        # Packer reads the provisioning scripts only when it reaches them: build from a snapshot so
        # the image matches the input hash even if the working tree changes meanwhile.
        snapshot = work / "packer"
        shutil.copytree(PACKER_DIR, snapshot)
        # redo-writer goes into every image: a static binary runs on any of the guests.
        make = subprocess.run(["make", "-s", "-C", str(REDO_WRITER_DIR)], capture_output=True, text=True)
        if make.returncode != 0:
            raise SectorlabError(f"make -C redo-writer failed: {make.stderr.strip()}")
        shutil.copy2(REDO_WRITER_DIR / "redo-writer", snapshot / "files" / "redo-writer")
        for tool in GUEST_TOOLS:
            shutil.copy2(tool, snapshot / "files" / tool.name)
        cmd = ["packer", "build", "-color=false", f"-var-file={snapshot / 'vars' / spec.vars_file.name}",
               f"-var-file={vars_json}", str(snapshot)]
        progress(f"{name}: {' '.join(cmd)}")
        proc = subprocess.run(cmd, cwd=str(work), env=packer_env())
        if proc.returncode != 0:
            console = image_cache() / f"{name}-failed-build-console.log"
            if (work / "out-console.log").exists():
                shutil.copyfile(work / "out-console.log", console)
            raise SectorlabError(f"{name}: packer build failed (exit {proc.returncode}); its output is above, "
                                 f"the guest's console log is {console}")
        built = work / "out" / f"{name}.qcow2"
        if not built.exists():
            raise SectorlabError(f"{name}: packer reported success but wrote no {built}")
        boot = {}
        cmdline_file = work / "out-boot" / "cmdline"
        cmdline = cmdline_file.read_text().strip() if cmdline_file.exists() else ""
        if cmdline:
            for f in ("kernel", "initrd.img"):
                boot[f] = final.with_suffix(f".{f.split('.')[0]}")
                (work / "out-boot" / f).rename(boot[f])
        record = ImageRecord(
            guest=name, image=str(final), image_sha256=sha256_file(built), input_hash=key,
            base_url=spec.base_image_url or f"mmdebstrap:{machine_vars['base_image_url']}",
            base_sha256=machine_vars["base_image_sha256"],
            built_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            build_seconds=round(time.monotonic() - start, 1), accelerator=found.name,
            size_bytes=built.stat().st_size, kernel=str(boot.get("kernel", "")),
            initrd=str(boot.get("initrd.img", "")), cmdline=cmdline, ready_marker=READY_MARKER)
        built.rename(final)
        final.with_suffix(".json").write_text(json.dumps(asdict(record), indent=2) + "\n")
    except BaseException:
        if os.environ.get("SECTORLAB_KEEP_FAILED_BUILD"):
            progress(f"{name}: failed build kept in {work} (SECTORLAB_KEEP_FAILED_BUILD)")
        else:
            shutil.rmtree(work, ignore_errors=True)
        raise
    shutil.rmtree(work, ignore_errors=True)
    update_manifest(record)
    progress(f"{name}: built {final} ({record.size_bytes / 2**20:.0f} MiB) in {record.build_seconds:.0f} s")
    return record


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
            "direct_kernel": [["-kernel", str(base / "vmlinuz")], ["-initrd", str(base / "initrd.img")],
                              ["-append", "root=/dev/vda1 rw console=ttyS0,115200"]],
        })
    else:
        machine["base_image_target"] = str(spec.template_file)  # checked by check_template
        machine["base_image_sha256"] = spec.base_image_sha256
    return machine


def validate_templates(progress: Progress = _say) -> None:
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
