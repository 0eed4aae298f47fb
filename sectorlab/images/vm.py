"""Boot a built image directly under QEMU (no libvirt): the image smoke test and boot timing.

The VM runs on a throw-away qcow2 overlay, so the cached image is never written. Networking is
user-mode with restrict=on and SSH forwarded on 127.0.0.1 only.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

from ..errors import SectorlabError
from ..guest import Guest, GuestUnreachable, console_says_ready, seed, sshkeys
from ..host import accel as accel_mod
from ..ports import free_port


def qemu_command(accel: str, overlay: Path, seed_iso: Path, port: int, memory_mib: int, console_log: Path,
                 extra: list[str] | None = None) -> list[str]:
    return [
        accel_mod.QEMU, "-accel", accel, "-machine", "pc", "-cpu", "max" if accel == "tcg" else "host",
        "-smp", "1", "-m", str(memory_mib), "-display", "none", "-nodefaults", "-no-user-config",
        "-drive", f"file={overlay},format=qcow2,if=virtio,discard=unmap",
        "-drive", f"file={seed_iso},format=raw,if=virtio,readonly=on",  # the NoCloud seed (label cidata)
        "-netdev", f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22",
        "-device", "virtio-net-pci,netdev=net0",
        "-serial", f"file:{console_log}",
        *(extra or []),
    ]


class BootedVM:
    """A running QEMU process with a Guest connected to it; use as a context manager."""

    def __init__(self, image: Path, user: str = "lab", memory_mib: int = 512, name: str = "smoke",
                 workdir: Path | None = None, extra_qemu_args: list[str] | None = None,
                 progress: Callable[[str], None] | None = None, ready_marker: str = ""):
        self.image = Path(image)
        # The image's console line for "sshd listens" (ImageRecord.ready_marker): connect then,
        # instead of polling SSH. Empty: poll.
        self.ready_marker = ready_marker
        self.user = user
        self.memory_mib = memory_mib
        self.name = name
        self.extra = extra_qemu_args or []
        self.progress = progress or (lambda msg: None)
        self._tmp = tempfile.TemporaryDirectory(prefix="sectorlab-vm-", dir=workdir)
        self.dir = Path(self._tmp.name)
        self.console_log = self.dir / "console.log"
        self.proc: subprocess.Popen | None = None
        self.guest: Guest | None = None
        self.boot_seconds: float | None = None

    def start(self, timeout: float = 600.0) -> Guest:
        if not self.image.exists():
            raise SectorlabError(f"image {self.image} does not exist; build it with 'make image'")
        accel = accel_mod.detect()
        overlay = self.dir / "root.qcow2"
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(self.image),
                        str(overlay)], check=True)
        login = sshkeys.generate(f"sectorlab-{self.name}")
        key_file = login.write(self.dir / "id_ed25519")
        host_key = sshkeys.generate(f"{self.name}-host")
        iso = seed.write_iso(self.dir / "seed.iso", instance_id=f"{self.name}-{uuid.uuid4()}",
                             hostname=self.name,
                             doc=seed.user_data(self.user, [login.public_openssh], host_key, self.name))
        port = free_port()
        cmd = qemu_command(accel.name, overlay, iso, port, self.memory_mib, self.console_log, self.extra)
        self.progress(f"booting {self.image.name} under {accel.name} (SSH on 127.0.0.1:{port}, "
                      f"console {self.console_log})")
        start = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.dir / "qemu.stderr", "w"))
        self.guest = Guest(self.name, "127.0.0.1", port, self.user, key_file, host_key.public_openssh)
        try:
            self._wait(timeout)
        except BaseException:
            self.stop()
            raise
        self.boot_seconds = time.monotonic() - start
        self.progress(f"{self.name}: SSH up after {self.boot_seconds:.1f} s")
        return self.guest

    def _check_alive(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            err = (self.dir / "qemu.stderr").read_text().strip()
            raise SectorlabError(f"QEMU exited with status {self.proc.returncode} before SSH came up: "
                                 f"{err or 'no message'} (console: {self.console_log_tail()})")

    def _wait(self, timeout: float) -> None:
        assert self.guest is not None and self.proc is not None
        if self.ready_marker:
            console_ready = console_says_ready(self.console_log, self.ready_marker)

            def ready() -> bool:
                self._check_alive()
                return console_ready()
            try:
                self.guest.wait_until_up(timeout, self.progress, ready)
                return
            except GuestUnreachable as e:
                if "host key" in str(e):
                    raise
                raise SectorlabError(f"{self.name}: no SSH after {timeout:.0f} s ({e}); last console lines: "
                                     f"{self.console_log_tail()}") from e
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SectorlabError(f"{self.name}: no SSH after {timeout:.0f} s; last console lines: "
                                     f"{self.console_log_tail()}")
            try:
                self.guest.wait_until_up(min(remaining, 30.0), self.progress)
                return
            except SectorlabError as e:
                if "host key" in str(e):
                    raise

    def console_log_tail(self, lines: int = 5) -> str:
        try:
            text = self.console_log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no console log)"
        return " | ".join(text[-lines:]) or "(empty console log)"

    def stop(self) -> None:
        if self.guest is not None:
            self.guest.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._tmp.cleanup()

    def __enter__(self) -> Guest:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
