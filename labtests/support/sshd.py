"""A private OpenSSH server on 127.0.0.1 for the remote-libvirt scenario (labtests/lab/test_remote_host.py).

The sshd is Debian's own (openssh-server, with libwrap0 beside it), downloaded with `apt-get download`
into the cache and unpacked there, never installed: installing the package would start an sshd on
port 22 of the user's machine. It runs as root (the libvirt socket wants root) with a config, host
key, client key and known_hosts file of its own in a temporary directory, listens on 127.0.0.1 only
and takes public keys only. OpenSSH wants a privilege-separation user `sshd` and an empty /run/sshd:
the user exists only inside a mount namespace of the server (a copy of /etc/passwd bind-mounted over
it there), and /run/sshd is made only if absent and removed afterwards. Nothing else on the host
changes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sectorlab.guest import sshkeys
from sectorlab.paths import cache_dir
from sectorlab.ports import free_port

PACKAGES = ("openssh-server", "libwrap0")
PRIVSEP_DIR = Path("/run/sshd")


def unpacked() -> Path:
    """The unpacked packages (cached): root/usr/sbin/sshd and its libwrap."""
    base = cache_dir() / "test-sshd"
    root = base / "root"
    if (root / "usr/sbin/sshd").exists():
        return root
    debs = base / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    os.chmod(debs, 0o755)  # apt's download user writes there
    subprocess.run(["apt-get", "download", "-q", *PACKAGES], cwd=debs, check=True, capture_output=True, text=True)
    tmp = base / "root.tmp"
    subprocess.run(["rm", "-rf", str(tmp)], check=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
    tmp.rename(root)
    return root


@dataclass
class Sshd:
    port: int
    dir: Path
    client_key: Path
    known_hosts: Path
    host_key_line: str
    log: Path
    process: subprocess.Popen

    def uri(self, known_hosts: Path | None = None) -> str:
        return (f"qemu+ssh://root@127.0.0.1:{self.port}/system?keyfile={self.client_key}"
                f"&knownhosts={known_hosts or self.known_hosts}")


@contextlib.contextmanager
def running(workdir: Path):
    root = unpacked()
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    host_key, client_key = workdir / "host_ed25519", workdir / "client_ed25519"
    sshkeys.generate("sectorlab-test-sshd").write(host_key)
    sshkeys.generate("sectorlab-test-client").write(client_key)
    host_line = " ".join((workdir / "host_ed25519.pub").read_text().split()[:2])
    (workdir / "authorized_keys").write_text((workdir / "client_ed25519.pub").read_text())
    known_hosts = workdir / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_line}\n")
    config = workdir / "sshd_config"
    config.write_text("\n".join([
        "ListenAddress 127.0.0.1", f"Port {port}", f"HostKey {host_key}", f"PidFile {workdir / 'sshd.pid'}",
        f"AuthorizedKeysFile {workdir / 'authorized_keys'}", "AuthenticationMethods publickey",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
        "UsePAM no", "StrictModes no", "AllowTcpForwarding local", "AllowStreamLocalForwarding local",
        "X11Forwarding no", "AllowAgentForwarding no", "PermitTunnel no", "LogLevel DEBUG1", "",
    ]))
    passwd = workdir / "passwd"
    passwd.write_text(Path("/etc/passwd").read_text() + "sshd:x:65534:65534:sshd privsep:/run/sshd:/usr/sbin/nologin\n")
    made_privsep = not PRIVSEP_DIR.exists()
    if made_privsep:
        PRIVSEP_DIR.mkdir(mode=0o755)
    log = workdir / "sshd.log"
    sshd = root / "usr/sbin/sshd"
    script = 'mount --bind "$1" /etc/passwd && exec "$2" -D -f "$3" -E "$4"'
    env = {**os.environ, "LD_LIBRARY_PATH": str(root / "usr/lib/x86_64-linux-gnu")}
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                             str(passwd), str(sshd), str(config), str(log)], env=env)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"test sshd did not start (exit {proc.poll()}): "
                                   f"{log.read_text() if log.exists() else 'no log'}")
            time.sleep(0.1)
        yield Sshd(port, workdir, client_key, known_hosts, host_line, log, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        # the sessions' children (virt-ssh-helper) end with their connections
        if made_privsep:
            with contextlib.suppress(OSError):
                PRIVSEP_DIR.rmdir()
