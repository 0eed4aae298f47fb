"""A Packer build's output as progress lines: its phases, the provisioning scripts' own lines and
errors on the terminal, every line in the log; the estimate from the guest's last build record."""

from __future__ import annotations

import json
import sys
import time

from sectorlab.images import packerprogress
from sectorlab.paths import REPO

SAVED = REPO / "labtests" / "unit" / "data" / "packer-build-output.txt"  # a real build's output


def _replay(tmp_path, text: str, rc: int = 0, expected=None):
    said = []
    source = tmp_path / "out.txt"
    source.write_text(text)
    cmd = [sys.executable, "-c", f"import sys; sys.stdout.write(open({str(source)!r}).read()); sys.exit({rc})"]
    log = tmp_path / "packer.log"
    got = packerprogress.run(cmd, tmp_path, {}, log, said.append, "debian12", expected, time.monotonic())
    return got, said, log


def test_a_real_builds_output_becomes_its_phases(tmp_path):
    text = SAVED.read_text()
    rc, said, log = _replay(tmp_path, text, expected=300)
    assert rc == 0 and log.read_text() == text
    phases = [s.split(": ", 1)[1].split(" (")[0] for s in said if not s.startswith("debian12:   ")]
    assert phases == ["booting the build guest", "waiting for the guest's SSH", "running debian/lean-boot.sh",
                      "running common/lab-guest.sh", "running common/databases.sh", "running debian/bootloader.sh",
                      "running common/cleanup.sh", "running common/boot-files.sh", "shutting the guest down",
                      "writing the image"]
    assert all("s left by the last build" in s for s in said if not s.startswith("debian12:   "))
    scripts = [s for s in said if s.startswith("debian12:   ")]
    assert "debian12:   databases: MariaDB data directory template 25M" in scripts
    assert not any("No error reported" in s for s in said)  # GRUB's all-clear is not an error
    assert len(said) < len(text.splitlines()) / 2


def test_packers_timestamps_do_not_hide_the_lines(tmp_path):
    stamped = "".join(f"2026-11-24T16:40:{i:02d}Z: {line}\n" for i, line in enumerate(SAVED.read_text().splitlines()))
    _, said, _ = _replay(tmp_path, stamped)
    _, plain, _ = _replay(tmp_path, SAVED.read_text())
    assert [s.split(" (")[0] for s in said] == [s.split(" (")[0] for s in plain]


def test_a_failed_build_says_its_error_and_its_exit(tmp_path):
    rc, said, log = _replay(tmp_path, "==> qemu.guest: Starting VM, booting disk image\n"
                            "==> qemu.guest: Error waiting for SSH: timeout\n"
                            "Build 'qemu.guest' errored after 5 minutes: Timeout waiting for SSH.\n", rc=1)
    assert rc == 1
    assert "debian12:   ==> qemu.guest: Error waiting for SSH: timeout" in said
    assert packerprogress.tail(log, 1) == "Build 'qemu.guest' errored after 5 minutes: Timeout waiting for SSH."


def test_the_estimate_is_the_guests_newest_build_record(tmp_path):
    for name, guest, at, secs in [("debian12-a.json", "debian12", "2026-11-01T00:00:00Z", 400),
                                  ("debian12-b.json", "debian12", "2026-11-20T00:00:00Z", 250),
                                  ("debian12x-c.json", "debian12x", "2026-11-23T00:00:00Z", 100)]:
        (tmp_path / name).write_text(json.dumps({"guest": guest, "built_at": at, "build_seconds": secs}))
    (tmp_path / "debian12-broken.json").write_text("{")
    assert packerprogress.last_build_seconds(tmp_path, "debian12") == 250
    assert packerprogress.last_build_seconds(tmp_path, "oraclelinux9") is None
