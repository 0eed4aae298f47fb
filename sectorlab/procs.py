"""Processes the project started, known by exact identity: a pid together with the process's start
time (field 22 of /proc/PID/stat, in clock ticks since boot), so that a pid the kernel has given to
another process since is never taken for ours."""

from __future__ import annotations

from pathlib import Path


def start_time(pid: int) -> str | None:
    """The start time of process `pid`, or None when there is no such process (or only its
    zombie, which runs no more)."""
    try:
        # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else fields[19]
    except (OSError, IndexError):
        return None


def same_process(pid: int, start: str) -> bool:
    """Whether `pid` is still the process that started at `start`."""
    return start_time(pid) == start


def identity(pid: int) -> str:
    """'PID START', as a pid file of the project's records it."""
    start = start_time(pid)
    if start is None:
        raise ProcessLookupError(pid)
    return f"{pid} {start}"


def read_identity(path: Path) -> int | None:
    """The pid a 'PID START' file names, if that very process still runs."""
    try:
        pid_text, start = path.read_text().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    return pid if same_process(pid, start) else None
