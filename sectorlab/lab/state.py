"""Where a lab's state lives and who may touch it: the state directory, keys and SSH ports, the
lab's lock and the image pool's lock, lab.json read back.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Callable

from .. import labdef
from ..errors import SectorlabError
from ..guest import sshkeys
from ..host import libvirt, remote
from ..paths import REPO, cache_dir, write_atomic
from ..ports import free_port
from . import record

DEFAULT_LAB_FILE = REPO / "labs" / "default.toml"
LAB_USER = "lab"


Progress = Callable[[str], None]


def say(msg: str) -> None:
    print(f"sectorlab: {msg}", file=sys.stderr, flush=True)


def lab_file_from_env() -> Path:
    return Path(os.environ.get("SECTORLAB_LAB_FILE") or DEFAULT_LAB_FILE)


def state_dir(lab_name: str) -> Path:
    return cache_dir() / "labs" / lab_name


def console_dir(lab_name: str, uri: str, state: Path) -> str:
    """Where the VMs' console logs go, on the libvirt host: the lab's state directory here; on a
    remote host a directory of its own beside QEMU's logs (lab-up makes it, lab-down removes it)."""
    return f"/var/log/libvirt/qemu/sectorlab-{lab_name}" if remote.is_remote(uri) else str(state)


def pool_dir(lab_name: str) -> str:
    # On the libvirt host, where its QEMU user can read it (the cache under /root cannot be).
    return f"/var/lib/libvirt/images/sectorlab-{lab_name}"


def load_json(path: Path, default):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def ensure_keys(lab: labdef.Lab, state: Path) -> None:
    login = state / "id_ed25519"
    if not login.exists():
        sshkeys.generate(f"sectorlab-{lab.name}").write(login)
    for vm in lab.vms:
        host = state / f"host-{vm.name}"
        if not host.exists():
            sshkeys.generate(f"{vm.name}-host").write(host)


def port_holder(port: int) -> str | None:
    """Which lab's VM this host's labs gave `port` to (their ports.json), if one did."""
    for ports_file in sorted((cache_dir() / "labs").glob("*/ports.json")):
        for vm, p in load_json(ports_file, {}).items():
            if p == port:
                return f"lab {ports_file.parent.name}'s VM {vm}"
    return None


def own_ports(lab_name: str) -> set[int]:
    """The SSH ports the lab's VMs were given (its ports.json), which its lab-up may take again."""
    return set(load_json(state_dir(lab_name) / "ports.json", {}).values())


def ports_of(lab: labdef.Lab, state: Path) -> dict[str, int]:
    previous = load_json(state / "ports.json", {})
    ports = {}
    taken: set[int] = set()
    in_use = libvirt.get_host(lab.vms[0].libvirt_uri).port_in_use
    for vm in lab.vms:
        port = vm.ssh_port or previous.get(vm.name)
        if not port or (port in taken):
            port = _free_port(taken, in_use)
        ports[vm.name] = port
        taken.add(port)
    write_atomic(state / "ports.json", json.dumps(ports))
    return ports


def _free_port(taken: set[int], in_use: Callable[[int], bool]) -> int:
    """A port for a guest's SSH forward: one the kernel gives out here (free on this host), and
    neither taken by another VM of the lab nor listened on where the forwards are (`in_use`)."""
    while True:
        port = free_port()
        if port not in taken and not in_use(port):
            return port


def suffix_from_env() -> str:
    """make's LAB_SUFFIX ($SECTORLAB_LAB_SUFFIX): appended to the name of every lab read from a path
    the user named (the CLI, the scenarios), never by the parser itself."""
    return os.environ.get(labdef.SUFFIX_ENV, "")


def load_lab(path: Path | str) -> labdef.Lab:
    """The lab definition at `path`, named with make's LAB_SUFFIX."""
    return labdef.load(Path(path), suffix_from_env())


def as_lab(lab: labdef.Lab | Path | str) -> labdef.Lab:
    """A lab definition given as one already read (the CLI and the bench read it once) or as a path."""
    return lab if isinstance(lab, labdef.Lab) else load_lab(lab)


def lab_up_command(lab_file: Path | None = None) -> str:
    """The command that brings up the lab of `lab_file` (make's LAB= for any but the default lab,
    and LAB_SUFFIX= when the lab names have one)."""
    words = ["make", "lab-up"]
    if lab_file is not None and Path(lab_file).resolve() != DEFAULT_LAB_FILE.resolve():
        words.append(f"LAB={shlex.quote(str(lab_file))}")
    if suffix_from_env():
        words.append(f"LAB_SUFFIX={shlex.quote(suffix_from_env())}")
    return " ".join(words)


def read_lab_json(lab_name: str, lab_file: Path | None = None) -> record.LabRecord:
    path = state_dir(lab_name) / "lab.json"
    if not path.exists():
        raise SectorlabError(f"no lab {lab_name!r} is up ({path} does not exist): run '{lab_up_command(lab_file)}'")
    return record.LabRecord.load(path)


@contextlib.contextmanager
def images_pool_lock():
    """Labs brought up at once on this host (two CI jobs, or make test's two lanes) publish to the
    one image pool in turn: its definition, links and clean-up are not safe to run twice at once.
    Held for a second or so; waited for, not refused. The name is 'images', which no lab may take."""
    path = cache_dir() / "labs" / ".lock-images"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


_HELD: dict[str, int] = {}  # lab name -> how deep this process is in lab_lock (lab-up calls lab-down)


@contextlib.contextmanager
def lab_lock(lab_name: str, verb: str):
    """One lab-up or lab-down of a lab at a time on this host: a second, from another process,
    is refused at once with the first one's process id (an empty lock file beside the state
    directory; it stays after lab-down: removed, two processes could each lock a file of their own).
    Re-entered freely by the process that holds it."""
    if _HELD.get(lab_name):
        _HELD[lab_name] += 1
        try:
            yield
        finally:
            _HELD[lab_name] -= 1
        return
    path = cache_dir() / "labs" / f".lock-{lab_name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise SectorlabError(f"lab {lab_name}: {holder} is bringing this lab up or down; wait for it to "
                                 f"finish or stop it, then run '{verb}' again") from None
        f.seek(0)
        f.truncate()
        f.write(f"sectorlab {verb} (process {os.getpid()})")
        f.flush()
        _HELD[lab_name] = 1
        try:
            yield
        finally:
            _HELD.pop(lab_name, None)
            f.truncate(0)
