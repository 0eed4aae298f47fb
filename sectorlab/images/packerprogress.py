"""Packer's output as progress: every line to a log file, one line per phase on the terminal.

A build's output is a wall of Packer's own lines; what a user needs is where it is, how long it
has run and about how long is left. The phases are Packer's own markers (its "==>" lines); the
provisioning scripts' summary lines ("lab-guest: ...") are passed through; the estimate is the
guest's last build time, from its build record in the cache.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from .. import inputs
from ..errors import UsageError
from .guests import Progress

PHASES = [
    (re.compile(r"==> [\w.]+: Starting VM"), "booting the build guest"),
    (re.compile(r"==> [\w.]+: Waiting for SSH"), "waiting for the guest's SSH"),
    (re.compile(r"==> [\w.]+: Provisioning with shell script: .*/scripts/(\S+)$"), "running {0}"),
    (re.compile(r"==> [\w.]+: Gracefully halting"), "shutting the guest down"),
    (re.compile(r"==> [\w.]+: Converting hard drive"), "writing the image"),
]
# A provisioning script's own line: "    qemu.guest: lab-guest: ..." (the scripts start theirs so).
SCRIPT_LINE = re.compile(r"^\s+[\w.]+: ([a-z][\w-]*: \S.*)$")
# packer build -timestamp-ui puts the time before each line; the log keeps it, the terminal shows
# the build's elapsed time instead.
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d): ")
ERROR_LINE = re.compile(r"^(==> [\w.]+: .*(?:(?<!No )[Ee]rror|failed).*|Build '.*' errored.*)$")


def last_build_seconds(cache: Path, guest: str) -> float | None:
    """How long the guest's newest build in the cache took (its build record), or None."""
    newest = None
    for record in cache.glob(f"{guest}-*.json"):
        try:
            data = inputs.read_json(record, "image record", 64 * inputs.KIB)
        except UsageError:
            continue
        if not (isinstance(data, dict) and data.get("guest") == guest
                and isinstance(data.get("build_seconds"), (int, float))):
            continue
        if newest is None or str(data.get("built_at")) > str(newest.get("built_at")):
            newest = data
    return float(newest["build_seconds"]) if newest else None


def _phase(line: str) -> str | None:
    for pattern, text in PHASES:
        m = pattern.search(line)
        if m:
            return text.format(*m.groups())
    return None


def run(cmd: list[str], cwd: Path, env: dict, log: Path, progress: Progress, name: str,
        expected: float | None, started: float) -> int:
    """Run Packer with its output in `log` and its phases as progress lines; its exit status."""
    with open(log, "w") as out, subprocess.Popen(cmd, cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        for line in proc.stdout:
            out.write(line)
            line = TIMESTAMP.sub("", line.rstrip("\n"))
            phase = _phase(line)
            if phase:
                elapsed = time.monotonic() - started
                left = f", about {max(expected - elapsed, 0):.0f} s left by the last build" if expected else ""
                progress(f"{name}: {phase} ({elapsed:.0f} s{left})")
            elif SCRIPT_LINE.match(line) or ERROR_LINE.match(line):
                progress(f"{name}:   {(SCRIPT_LINE.match(line) or ERROR_LINE.match(line)).group(1)}")
    return proc.returncode


def tail(log: Path, lines: int = 25) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
