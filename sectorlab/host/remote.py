"""SSH to a libvirt host reached as `qemu+ssh://[user@]host[:port]/system[?keyfile=F&knownhosts=F]`.

The lab definition's URI is written once, in the dialect of the Terraform provider (which accepts
only `qemu+ssh`, with `keyfile`, `knownhosts` and `sshauth`); three clients reach that host with it:

- Terraform's provider, with the URI as written (its own SSH client; it opens the libvirt socket
  through a direct-streamlocal channel);
- virsh: libvirt's `ssh` transport runs the ssh binary, which checks host keys only against the
  user's own known_hosts; a URI that names `knownhosts=F` is therefore given to virsh through
  libvirt's `libssh` transport, whose `known_hosts=F` pins the same file (SshHost.virsh_uri());
- sectorlab itself (paramiko, SshHost.client()): the console logs, the listening ports and the CPU
  flags of that host, and the guests' SSH, whose user-mode forwards listen on *that* host's
  127.0.0.1 and are reached through a direct-tcpip channel (SshHost.channel_to()). The libvirt
  host as sectorlab uses it, over this connection, is sectorlab/host/libvirt.py's RemoteHost.

Host keys are never accepted unseen: the host must be in `knownhosts` (default ~/.ssh/known_hosts)
and a changed key is refused with both fingerprints named.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit

if TYPE_CHECKING:
    import paramiko

from ..errors import SectorlabError, UsageError

LOCAL_PREFIXES = ("qemu:///", "qemu+unix:///")  # this host's libvirt, by its default or a named socket


def is_remote(uri: str) -> bool:
    return not uri.startswith(LOCAL_PREFIXES)


_CLIENTS: dict[str, paramiko.SSHClient] = {}
_LOCK = threading.Lock()


def _fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


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

    def virsh_uri(self) -> str:
        """The URI virsh is given for this host (see the module's docstring)."""
        if self.knownhosts is None:
            return self.uri
        params = [(k, v) for k, v in self.params if k not in ("knownhosts", "known_hosts")]
        params.append(("known_hosts", os.path.expanduser(self.knownhosts)))
        if self.keyfile and "sshauth" not in dict(params):
            params.append(("sshauth", "privkey"))
        parts = urlsplit(self.uri)
        return parts._replace(scheme="qemu+libssh", query=urlencode(params, safe="/~")).geturl()

    def client(self, timeout: float = 20.0) -> paramiko.SSHClient:
        """An SSH connection to the host, opened once per process and reopened when it dropped. Its
        host key must be the one its known_hosts file holds."""
        import paramiko
        with _LOCK:
            c = _CLIENTS.get(self.uri)
            if c is not None and c.get_transport() is not None and c.get_transport().is_active():
                return c
            c = paramiko.SSHClient()
            kh = self.known_hosts_file
            try:
                c.load_host_keys(str(kh))
            except FileNotFoundError:
                pass
            except (OSError, paramiko.SSHException) as e:
                raise SectorlabError(f"libvirt host {self.label}: cannot read known_hosts file {kh}: {e}") from e
            c.set_missing_host_key_policy(paramiko.RejectPolicy())
            pkey = paramiko.PKey.from_path(os.path.expanduser(self.keyfile)) if self.keyfile else None
            try:
                c.connect(self.host, port=self.port, username=self.user, pkey=pkey, timeout=timeout,
                          banner_timeout=timeout, auth_timeout=timeout, allow_agent=pkey is None,
                          look_for_keys=pkey is None)
            except paramiko.BadHostKeyException as e:
                raise SectorlabError(f"libvirt host {self.label}: offered host key {_fingerprint(e.key)}, but {kh} "
                                     f"has {_fingerprint(e.expected_key)} for {self.known_name}: refused (the host "
                                     f"was reinstalled, or this is not that host); if the new key is right, replace "
                                     f"its line in {kh}") from e
            except paramiko.SSHException as e:
                if "not found in known_hosts" in str(e):
                    raise SectorlabError(f"libvirt host {self.label}: {self.known_name} is not in {kh}; add its host "
                                         f"key there once you have checked it (ssh-keyscan -p {self.port} "
                                         f"{self.host})") from e
                raise SectorlabError(f"libvirt host {self.label}: SSH as {self.user} failed: {e}") from e
            except OSError as e:
                raise SectorlabError(f"libvirt host {self.label}: cannot connect over SSH: {e}") from e
            _CLIENTS[self.uri] = c
            return c

    def run(self, command: str, timeout: float = 120.0, check: bool = True) -> tuple[int, str]:
        """Run a shell command on the host; its exit status and standard output. With `check`, a
        non-zero status raises with its standard error."""
        _, out, err = self.client().exec_command(command, timeout=timeout)
        stdout = out.read().decode(errors="replace")
        rc = out.channel.recv_exit_status()
        if check and rc != 0:
            detail = err.read().decode(errors="replace").strip()
            raise SectorlabError(f"libvirt host {self.label}: '{command}' exited {rc}: {detail or 'no message'}")
        return rc, stdout

    def channel_to(self, port: int, timeout: float = 10.0) -> paramiko.Channel:
        """A direct-tcpip channel through the host to its 127.0.0.1:`port` (a guest's SSH forward)."""
        transport = self.client().get_transport()
        return transport.open_channel("direct-tcpip", ("127.0.0.1", port), ("127.0.0.1", 0), timeout=timeout)


def ssh_host(uri: str) -> SshHost | None:
    """The SSH endpoint of a remote libvirt URI; None for this host's qemu:///. Refuses, in one line,
    a URI sectorlab cannot reach, or key files that do not exist (now)."""
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
    """The URI virsh is given for the lab's URI: SshHost.virsh_uri() for a remote one, else itself."""
    host = ssh_host(uri)
    return uri if host is None else host.virsh_uri()


def client(uri: str, timeout: float = 20.0) -> paramiko.SSHClient:
    """SshHost.client() of the libvirt host of `uri` (lab validation opens it before asking virsh:
    the host's key and the SSH login name what is wrong)."""
    host = ssh_host(uri)
    if host is None:
        raise SectorlabError(f"{uri} is this host's libvirt; there is no SSH connection to make")
    return host.client(timeout)


def close_all() -> None:
    with _LOCK:
        for c in _CLIENTS.values():
            c.close()
        _CLIENTS.clear()
