"""Loopback ports: every guest's SSH and every device model listen on 127.0.0.1 only, on a port the
kernel chose free a moment before (the lab's state keeps the ones it handed out, lab/state.py)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
