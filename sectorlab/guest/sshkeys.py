"""SSH key pairs for the lab: a per-lab login key and per-VM host keys that the host pins.

Generated with `cryptography` (paramiko's own dependency), in OpenSSH format, so that neither
ssh-keygen nor a known_hosts file outside the lab is involved.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class KeyPair:
    private_openssh: str  # "-----BEGIN OPENSSH PRIVATE KEY-----..."
    public_openssh: str  # "ssh-ed25519 AAAA... comment"

    def write(self, path: Path) -> Path:
        """Write the private key (0600) and the public key beside it as PATH.pub."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.private_openssh)
        Path(str(path) + ".pub").write_text(self.public_openssh + "\n")
        return path


def generate(comment: str) -> KeyPair:
    # Imported here: cryptography's bindings take 40-65 ms to load, and most commands make no key.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    return KeyPair(private, f"{public} {comment}")
