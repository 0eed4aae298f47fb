"""`sectorlab bench-host`: what this host adds to a commit, measured for the virtual clock's
modelled host (bench/clock.py): a post's wake-up and the log writer's CPU per write.

redo-writer runs on the real clock writing to null: (no device, nothing written), one session,
closed loop, no CPU a transaction. Each commit is then the session's post to the sleeping log
writer, the log writer's own work around its write (its thread's CPU per write, redo-writer's
`cpu_measured.log_writer_us_per_write`), its write to null: (log file parallel write) and its post
back to the sleeping session: log file sync is two wake-ups, that CPU and that write, which is how
the virtual clock charges a commit (redo-writer/README.md, "Virtual time"). So, per run,

    wake-up = (log file sync p50 - log file parallel write p50 - the log writer's CPU per write) / 2

and the runs' median and range are this host's figures. The CPU per write is counted by the
kernel for the log writer's thread, so it also holds the system time of its wake-ups and posts: the
wake-up above is what is left of a commit beyond all of the log writer's own time, a lower bound of
the host's wake-up rather than an upper one. A busy host shows larger and wider figures: the range
says so."""

from __future__ import annotations

import json
import statistics
import subprocess
from datetime import datetime, timezone

from ... import redowriter
from ...devices import build
from ...errors import SectorlabError
from ...lab.state import Progress
from ..redo.fields import NULL_TARGET

LOG_SIZE = 64 << 20
HOW = "redo-writer on the real clock to null:, one session, closed loop"
WHAT = {"wakeup_us": f"{HOW}: wake-up = (log file sync p50 - log file parallel write p50 - the log writer's CPU per "
                     f"write) / 2, the median of the runs",
        "log_writer_cpu_us": f"{HOW}: the log writer thread's CPU per write (redo-writer's cpu_measured), the "
                             f"median of the runs"}


def _run(writer: str, seconds: int) -> dict:
    argv = [writer, *redowriter.run_args(NULL_TARGET, 512, sessions=1, redo_per_txn=512, seconds=seconds,
                                         log_size=LOG_SIZE)[1:], "--output", "json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    if proc.returncode != 0:
        raise SectorlabError(f"'{' '.join(argv)}' exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    r = json.loads(proc.stdout)
    sync, write = r["log_file_sync"]["p50_us"], r["log_file_parallel_write"]["p50_us"]
    cpu = r["cpu_measured"]["log_writer_us_per_write"]
    return {"log_file_sync_p50_us": sync, "log_file_parallel_write_p50_us": write, "log_writer_cpu_us": cpu,
            "wakeup_us": max((sync - write - cpu) / 2, 0.0), "commits": r["transactions"]}


def _figure(runs: list[dict], key: str) -> dict:
    values = [r[key] for r in runs]
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(rounds: int = 5, seconds: int = 2, progress: Progress | None = None) -> dict:
    """This host's wake-up and log writer CPU per write: `rounds` runs of `seconds`, their median
    and range, the date and how they were measured."""
    writer = str(build.built(build.REDO_WRITER))
    if progress:
        progress(f"measuring this host's wake-up and log writer CPU: {rounds} runs of {seconds} s of redo-writer to "
                 f"null:")
    runs = [_run(writer, seconds) for _ in range(rounds)]
    return {"wakeup_us": _figure(runs, "wakeup_us"), "log_writer_cpu_us": _figure(runs, "log_writer_cpu_us"),
            "runs": runs, "rounds": rounds, "seconds": seconds, "what": WHAT,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def source(m: dict, key: str) -> str:
    """A measured figure's source, in words, for the record and the report."""
    f = m[key]
    return (f"measured on this host {m['date']}: median of {m['rounds']} runs of {m['seconds']} s, "
            f"{f['min']:.1f}-{f['max']:.1f} us ({m['what'][key]})")
