"""The machine a lab's libvirt runs on, as sectorlab reaches it outside Terraform.

get_host(uri) gives one object per libvirt URI for the whole process (as pytest-testinfra's
Host.get_host(spec) does): LocalHost for this host's `qemu:///` and `qemu+unix:///`, RemoteHost
for `qemu+ssh://` (sectorlab/host/remote.py's SSH connection). Everything sectorlab does there hangs
off it: virsh, QEMU's monitor through virsh (qmp), the host's files, its listening ports, the
free space where the lab's volumes go, its memory and the uid QEMU runs as. Each operation is
written once per kind of host.

The URI is parsed once, when its object is made: a remote one's key files must exist then (the
SSH connection reads them when it opens). Nothing else is kept in the object: the ports are
asked for anew at each call. clear_hosts() forgets every object (the unit tests do it after each
test, and a process that rewrites a URI's key files could).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pwd
import shlex
import shutil
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import paramiko

from ..errors import SectorlabError
from . import remote


class LibvirtHost:
    """A libvirt host: its URI, virsh and QEMU's monitor there, and the host operations each kind
    writes (this host's, or one over SSH)."""
    remote = False
    via: str | None = None  # the remote URI the guests' SSH goes through; None here
    label = "this host"

    def __init__(self, uri: str, virsh_uri: str | None = None):
        self.uri = uri
        self.virsh_uri = virsh_uri or uri  # what virsh is given for `uri` (remote.SshHost.virsh_uri)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"

    def virsh(self, *args: str, check: bool = True, timeout: float = 300) -> str:
        """virsh's standard output; with `check`, a failure raises with virsh's message."""
        proc = subprocess.run(["virsh", "-q", "-c", self.virsh_uri, *args], capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise SectorlabError(f"virsh {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def version(self) -> str | None:
        """`virsh version --daemon` (library, API, hypervisor and daemon versions), or None when libvirt
        does not answer."""
        try:
            out = self.virsh("version", "--daemon", timeout=30)
        except (OSError, subprocess.TimeoutExpired, SectorlabError):
            return None
        return "; ".join(line.strip() for line in out.splitlines() if line.strip()) or None

    def qmp(self, domain: str, command: str, /, **arguments) -> object:
        """QEMU's monitor of the running `domain`: the command's return value; an error raises with
        QEMU's description."""
        request = {"execute": command, **({"arguments": arguments} if arguments else {})}
        reply = json.loads(self.virsh("qemu-monitor-command", domain, json.dumps(request)))
        if "error" in reply:
            raise SectorlabError(f"QEMU {command} on {domain}: {reply['error'].get('desc', reply['error'])}")
        return reply.get("return")

    def read_text(self, path: str) -> str | None:
        """The file's text; None when it does not exist (or cannot be read)."""
        raise NotImplementedError

    def contains(self, path: str, text: str) -> bool:
        """Whether the file exists and has `text` in it (a console line), without fetching it whole."""
        raise NotImplementedError

    def missing(self, paths: list[str]) -> set[str]:
        """Which of `paths` do not exist."""
        raise NotImplementedError

    def make_dir(self, path: str) -> None:
        raise NotImplementedError

    def remove_tree(self, path: str) -> None:
        raise NotImplementedError

    def port_in_use(self, port: int) -> bool:
        """Whether something listens on the host's 127.0.0.1:port (where the guests' forwards listen)."""
        raise NotImplementedError

    def qemu_uid(self) -> int:
        """The uid QEMU runs as under that libvirt (Debian's libvirt-qemu, Red Hat's qemu)."""
        raise NotImplementedError

    def space(self, path: str) -> tuple[int, int]:
        """(bytes free to an unprivileged writer on the filesystem that holds `path`, or would hold it,
        through its nearest existing parent; bytes the files under `path` take now)."""
        raise NotImplementedError

    def memory_bytes(self) -> int:
        """The host's memory (MemTotal of /proc/meminfo)."""
        text = self.read_text("/proc/meminfo") or ""
        for line in text.splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
        raise SectorlabError(f"cannot read MemTotal from /proc/meminfo on {self.label}")


class LocalHost(LibvirtHost):
    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text(errors="replace")
        except OSError:
            return None

    def contains(self, path: str, text: str) -> bool:
        return text in (self.read_text(path) or "")

    def missing(self, paths: list[str]) -> set[str]:
        return {p for p in paths if not os.path.exists(p)}

    def make_dir(self, path: str) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def port_in_use(self, port: int) -> bool:
        # SO_REUSEADDR as QEMU's user-mode networking sets it, so connections of a VM just
        # destroyed, still in TIME_WAIT, do not count.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return True
        return False

    def space(self, path: str) -> tuple[int, int]:
        existing = Path(path)
        while not existing.exists():
            existing = existing.parent
        used = 0
        if Path(path).is_dir():
            for root, _, files in os.walk(path):
                for f in files:
                    with contextlib.suppress(OSError):
                        used += os.lstat(os.path.join(root, f)).st_blocks * 512
        return shutil.disk_usage(existing).free, used  # free to an unprivileged writer (f_bavail)

    def qemu_uid(self) -> int:
        for user in ("libvirt-qemu", "qemu"):
            with contextlib.suppress(KeyError):
                return pwd.getpwnam(user).pw_uid
        return 64055


class RemoteHost(LibvirtHost):
    """The same operations, run there over sectorlab's SSH connection (one shell command each)."""
    remote = True

    def __init__(self, uri: str, ssh: remote.SshHost):
        super().__init__(uri, ssh.virsh_uri())
        self.ssh = ssh
        self.via = uri
        self.label = ssh.label

    def run(self, command: str, timeout: float = 120.0, check: bool = True) -> tuple[int, str]:
        """A shell command there: its exit status and standard output (remote.SshHost.run)."""
        return self.ssh.run(command, timeout, check)

    def channel_to(self, port: int, timeout: float = 10.0) -> paramiko.Channel:
        """A direct-tcpip channel to the host's 127.0.0.1:`port` (a guest's SSH forward)."""
        return self.ssh.channel_to(port, timeout)

    def listening_ports(self) -> set[int]:
        """TCP ports something listens on at the host's 127.0.0.1 (or any address), from its sockets."""
        _, out = self.run("ss -Htln")
        ports = set()
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 4:
                address, _, port = fields[3].rpartition(":")
                if port.isdigit() and address in ("127.0.0.1", "0.0.0.0", "*", "[::]", "[::ffff:127.0.0.1]"):
                    ports.add(int(port))
        return ports

    def read_text(self, path: str) -> str | None:
        rc, text = self.run(f"cat -- {shlex.quote(path)} 2>/dev/null", check=False)
        return text if rc == 0 else None

    def contains(self, path: str, text: str) -> bool:
        return self.run(f"grep -qF -- {shlex.quote(text)} {shlex.quote(path)}", check=False)[0] == 0

    def missing(self, paths: list[str]) -> set[str]:
        if not paths:
            return set()
        quoted = " ".join(shlex.quote(p) for p in paths)
        _, out = self.run(f'for p in {quoted}; do test -e "$p" || echo "$p"; done')
        return set(out.splitlines())

    def make_dir(self, path: str) -> None:
        self.run(f"mkdir -p -- {shlex.quote(path)}")

    def remove_tree(self, path: str) -> None:
        self.run(f"rm -rf -- {shlex.quote(path)}")

    def port_in_use(self, port: int) -> bool:
        return port in self.listening_ports()  # asked anew: the object lives as long as the process

    def space(self, path: str) -> tuple[int, int]:
        q = shlex.quote(path)
        _, out = self.run(f'd={q}; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; '
                          f'df -P -B1 -- "$d" | tail -n 1; du -s -B1 -- {q} 2>/dev/null || echo 0')
        try:
            lines = out.split("\n")
            return int(lines[0].split()[3]), int(lines[1].split()[0])
        except (IndexError, ValueError) as e:
            raise SectorlabError(f"{self.label}: cannot read the free space of {path} from df and du "
                                 f"(got {out.strip()[:120]!r})") from e

    def qemu_uid(self) -> int:
        _, out = self.run("id -u libvirt-qemu 2>/dev/null || id -u qemu")
        return int(out.split()[0])


@functools.cache
def get_host(uri: str) -> LibvirtHost:
    """The libvirt host of `uri`: one object per URI in this process, made at the first call (the
    URI parsed then, and refused in one line when sectorlab cannot reach it)."""
    ssh = remote.ssh_host(uri)
    return LocalHost(uri) if ssh is None else RemoteHost(uri, ssh)


def clear_hosts() -> None:
    """Forget every host object: the next get_host() of a URI parses it again."""
    get_host.cache_clear()


QEMU_RUN_DIR = Path("/run/libvirt/qemu")  # <domain>.pid: a domain's QEMU process on this host


def qemu_pid(domain: str) -> int:
    """The pid of a domain's QEMU process on this host (libvirt's pid file)."""
    try:
        return int((QEMU_RUN_DIR / f"{domain}.pid").read_text().strip())
    except (OSError, ValueError) as e:
        raise SectorlabError(f"{domain}: cannot tell its QEMU process ({QEMU_RUN_DIR / domain}.pid: {e}); is it "
                             f"running?") from e
