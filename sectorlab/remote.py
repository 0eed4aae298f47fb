"""A libvirt host reached over SSH: `qemu+ssh://[user@]host[:port]/system[?keyfile=F&knownhosts=F]`.

The lab definition's URI is written once, in the dialect of the Terraform provider (which accepts
only `qemu+ssh`, with `keyfile`, `knownhosts` and `sshauth`); three clients reach that host with it:

- Terraform's provider, with the URI as written (its own SSH client; it opens the libvirt socket
  through a direct-streamlocal channel);
- virsh: libvirt's `ssh` transport runs the ssh binary, which checks host keys only against the
  user's own known_hosts; a URI that names `knownhosts=F` is therefore given to virsh through
  libvirt's `libssh` transport, whose `known_hosts=F` pins the same file (virsh_uri());
- sectorlab itself (paramiko, client()): the console logs, the listening ports and the CPU flags of
  that host, and the guests' SSH, whose user-mode forwards listen on *that* host's 127.0.0.1 and are
  reached through a direct-tcpip channel (channel_to()).

Host keys are never accepted unseen: the host must be in `knownhosts` (default ~/.ssh/known_hosts)
and a changed key is refused with both fingerprints named.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import paramiko

from .errors import SectorlabError, UsageError

LOCAL_PREFIXES = ("qemu:///", "qemu+unix:///")  # this host's libvirt, by its default or a named socket


def is_remote(uri: str) -> bool:
    return not uri.startswith(LOCAL_PREFIXES)


@dataclass(frozen=True)
class SshHost:
    uri: str
    user: str
    host: str
    port: int
    keyfile: str | None
    knownhosts: str | None
    params: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        return f"{self.host}:{self.port}" if self.port != 22 else self.host

    @property
    def known_hosts_file(self) -> Path:
        return Path(os.path.expanduser(self.knownhosts or "~/.ssh/known_hosts"))

    @property
    def known_name(self) -> str:
        """How known_hosts names this host (OpenSSH's form for a port other than 22)."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


def ssh_host(uri: str) -> SshHost | None:
    """The SSH endpoint of a remote libvirt URI; None for this host's qemu:///."""
    if not is_remote(uri):
        return None
    parts = urlsplit(uri)
    if parts.scheme != "qemu+ssh":
        raise UsageError(f"libvirt_uri = {uri!r}: a remote host is reached by qemu+ssh:// only (the transport "
                         f"the Terraform provider and sectorlab share); write qemu+ssh://[user@]host[:port]/system")
    if not parts.hostname:
        raise UsageError(f"libvirt_uri = {uri!r}: no host name; write qemu+ssh://[user@]host[:port]/system")
    try:
        port = parts.port or 22
    except ValueError as e:
        raise UsageError(f"libvirt_uri = {uri!r}: the port is not a number from 1 to 65535 ({e}); write "
                         f"qemu+ssh://[user@]host[:port]/system") from e
    params = tuple(parse_qsl(parts.query, keep_blank_values=True))
    q = dict(params)
    for key in ("keyfile", "knownhosts"):
        if key in q and not Path(os.path.expanduser(q[key])).is_file():
            raise UsageError(f"libvirt_uri = {uri!r}: {key}={q[key]!r} is not a file; give the path of the "
                             f"{'private key' if key == 'keyfile' else 'known_hosts file'} to use for {parts.hostname}")
    return SshHost(uri, parts.username or os.environ.get("USER") or "root", parts.hostname, port,
                   q.get("keyfile"), q.get("knownhosts"), params)


def virsh_uri(uri: str) -> str:
    """The URI virsh is given for the lab's URI (see the module's docstring)."""
    host = ssh_host(uri)
    if host is None or host.knownhosts is None:
        return uri
    params = [(k, v) for k, v in host.params if k not in ("knownhosts", "known_hosts")]
    params.append(("known_hosts", os.path.expanduser(host.knownhosts)))
    if host.keyfile and "sshauth" not in dict(params):
        params.append(("sshauth", "privkey"))
    parts = urlsplit(uri)
    return parts._replace(scheme="qemu+libssh", query=urlencode(params, safe="/~")).geturl()


_CLIENTS: dict[str, paramiko.SSHClient] = {}
_LOCK = threading.Lock()


def _fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


def client(uri: str, timeout: float = 20.0) -> paramiko.SSHClient:
    """An SSH connection to the libvirt host of `uri`, opened once per process and reopened when it
    dropped. Its host key must be the one its known_hosts file holds."""
    host = ssh_host(uri)
    if host is None:
        raise SectorlabError(f"{uri} is this host's libvirt; there is no SSH connection to make")
    with _LOCK:
        c = _CLIENTS.get(uri)
        if c is not None and c.get_transport() is not None and c.get_transport().is_active():
            return c
        c = paramiko.SSHClient()
        kh = host.known_hosts_file
        try:
            c.load_host_keys(str(kh))
        except FileNotFoundError:
            pass
        except (OSError, paramiko.SSHException) as e:
            raise SectorlabError(f"libvirt host {host.label}: cannot read known_hosts file {kh}: {e}") from e
        c.set_missing_host_key_policy(paramiko.RejectPolicy())
        pkey = paramiko.PKey.from_path(os.path.expanduser(host.keyfile)) if host.keyfile else None
        try:
            c.connect(host.host, port=host.port, username=host.user, pkey=pkey, timeout=timeout,
                      banner_timeout=timeout, auth_timeout=timeout, allow_agent=pkey is None,
                      look_for_keys=pkey is None)
        except paramiko.BadHostKeyException as e:
            raise SectorlabError(f"libvirt host {host.label}: offered host key {_fingerprint(e.key)}, but {kh} has "
                                 f"{_fingerprint(e.expected_key)} for {host.known_name}: refused (the host was "
                                 f"reinstalled, or this is not that host); if the new key is right, replace its "
                                 f"line in {kh}") from e
        except paramiko.SSHException as e:
            if "not found in known_hosts" in str(e):
                raise SectorlabError(f"libvirt host {host.label}: {host.known_name} is not in {kh}; add its host key "
                                     f"there once you have checked it (ssh-keyscan -p {host.port} {host.host})") from e
            raise SectorlabError(f"libvirt host {host.label}: SSH as {host.user} failed: {e}") from e
        except OSError as e:
            raise SectorlabError(f"libvirt host {host.label}: cannot connect over SSH: {e}") from e
        _CLIENTS[uri] = c
        return c


def close_all() -> None:
    with _LOCK:
        for c in _CLIENTS.values():
            c.close()
        _CLIENTS.clear()


def run(uri: str, command: str, timeout: float = 120.0, check: bool = True) -> tuple[int, str]:
    """Run a shell command on the libvirt host; its exit status and standard output. With `check`,
    a non-zero status raises with its standard error."""
    _, out, err = client(uri).exec_command(command, timeout=timeout)
    stdout = out.read().decode(errors="replace")
    rc = out.channel.recv_exit_status()
    if check and rc != 0:
        detail = err.read().decode(errors="replace").strip()
        raise SectorlabError(f"libvirt host {ssh_host(uri).label}: '{command}' exited {rc}: {detail or 'no message'}")
    return rc, stdout


def listening_ports(uri: str) -> set[int]:
    """TCP ports something listens on at the libvirt host's 127.0.0.1 (or any address), from its sockets."""
    _, out = run(uri, "ss -Htln")
    ports = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 4:
            address, _, port = fields[3].rpartition(":")
            if port.isdigit() and address in ("127.0.0.1", "0.0.0.0", "*", "[::]", "[::ffff:127.0.0.1]"):
                ports.add(int(port))
    return ports


def channel_to(uri: str, port: int, timeout: float = 10.0) -> paramiko.Channel:
    """A direct-tcpip channel through the libvirt host to its 127.0.0.1:`port` (a guest's SSH forward)."""
    transport = client(uri).get_transport()
    return transport.open_channel("direct-tcpip", ("127.0.0.1", port), ("127.0.0.1", 0), timeout=timeout)


class LibvirtHost:
    """The machine a lab's libvirt runs on, as sectorlab reaches its files and sockets: this host
    (LocalHost) or one reached over SSH (RemoteHost). Each operation is written once per kind."""
    remote = False
    via: str | None = None  # the remote URI the guests' SSH goes through; None here
    label = "this host"

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
        import pwd
        for user in ("libvirt-qemu", "qemu"):
            with contextlib.suppress(KeyError):
                return pwd.getpwnam(user).pw_uid
        return 64055


class RemoteHost(LibvirtHost):
    """The same operations, run there over sectorlab's SSH connection (one shell command each)."""
    remote = True

    def __init__(self, uri: str):
        self.via = uri
        self.label = ssh_host(uri).label
        self._listening: set[int] | None = None

    def read_text(self, path: str) -> str | None:
        rc, text = run(self.via, f"cat -- {shlex.quote(path)} 2>/dev/null", check=False)
        return text if rc == 0 else None

    def contains(self, path: str, text: str) -> bool:
        return run(self.via, f"grep -qF -- {shlex.quote(text)} {shlex.quote(path)}", check=False)[0] == 0

    def missing(self, paths: list[str]) -> set[str]:
        if not paths:
            return set()
        quoted = " ".join(shlex.quote(p) for p in paths)
        _, out = run(self.via, f'for p in {quoted}; do test -e "$p" || echo "$p"; done')
        return set(out.splitlines())

    def make_dir(self, path: str) -> None:
        run(self.via, f"mkdir -p -- {shlex.quote(path)}")

    def remove_tree(self, path: str) -> None:
        run(self.via, f"rm -rf -- {shlex.quote(path)}")

    def port_in_use(self, port: int) -> bool:
        if self._listening is None:  # read once per object: the ports its sockets listen on
            self._listening = listening_ports(self.via)
        return port in self._listening

    def space(self, path: str) -> tuple[int, int]:
        q = shlex.quote(path)
        _, out = run(self.via, f'd={q}; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; '
                               f'df -P -B1 -- "$d" | tail -n 1; du -s -B1 -- {q} 2>/dev/null || echo 0')
        try:
            lines = out.split("\n")
            return int(lines[0].split()[3]), int(lines[1].split()[0])
        except (IndexError, ValueError) as e:
            raise SectorlabError(f"{self.label}: cannot read the free space of {path} from df and du "
                                 f"(got {out.strip()[:120]!r})") from e

    def qemu_uid(self) -> int:
        _, out = run(self.via, "id -u libvirt-qemu 2>/dev/null || id -u qemu")
        return int(out.split()[0])


def host(uri: str) -> LibvirtHost:
    """The libvirt host of `uri`, as sectorlab reaches its files and sockets."""
    return RemoteHost(uri) if is_remote(uri) else LocalHost()
