"""redo-writer's command lines, built in one place: a run (run_args) and a crash recovery's
verify (verify_args), as this host, a guest and the device path run them. The program is named
"redo-writer" (the guest's, on its PATH); a caller on this host puts its built binary first
(devices/build.py). Every option is redo-writer's own (redo-writer/README.md)."""

from __future__ import annotations

PROGRAM = "redo-writer"


def run_args(target: str, blocksize: int, *, sessions: int, redo_per_txn: int, seconds: int, log_size: int,
             arrival: str = "closed", rate: int = 0, seed: int | None = None, cpu_us_per_txn: int = 0,
             second: str | None = None, pairing: str | None = None, checked: bool = False,
             max_write: int | None = None, transactions: int | None = None, cpu_dist: str = "fixed",
             seeded: bool = False) -> list[str]:
    """`redo-writer run` writing redo to `target` at `blocksize` for `seconds`: `sessions` committing
    `redo_per_txn` bytes each, arriving as `arrival` says at `rate` commits/s, `cpu_us_per_txn` of CPU
    before each commit, every one the same or drawn from an exponential of that mean (`cpu_dist`;
    `seed` draws the Poisson arrivals, the exponential CPU and a virtual clock's exponential wake-ups, and
    is passed only for the first two or when `seeded`);
    `second` is the log group's other member, written as `pairing` says (race or mirror); `checked`:
    redo blocks crash recovery can verify (a header with the sequence and a CRC32C); `max_write`: the
    log buffer (redo-writer's default, 1 MiB, when None); `transactions`: the run ends after that many
    commits, or at `seconds`, whichever comes first (a count that does not follow the host's pace)."""
    args = [PROGRAM, "run", *(["--format", "checked"] if checked else []), "--target", target]
    if second:
        args += [f"--{pairing or 'race'}", second]
    args += ["--blocksize", str(blocksize), "--sessions", str(sessions), "--redo-per-txn", str(redo_per_txn),
             "--arrival", arrival, "--rate", str(rate)]
    drawn = cpu_dist == "exponential" and cpu_us_per_txn
    if (arrival == "poisson" or drawn or seeded) and seed is not None:
        args += ["--seed", str(seed)]
    if cpu_us_per_txn:
        args += ["--cpu-us-per-txn", str(cpu_us_per_txn)]
    if drawn:
        args += ["--cpu-dist", cpu_dist]
    if max_write is not None:
        args += ["--max-write", str(max_write)]
    if transactions:
        args += ["--transactions", str(transactions)]
    return args + ["--log-size", str(log_size), "--duration", str(seconds)]


def verify_args(target: str, blocksize: int, log_size: int, acknowledged: int, redo_per_txn: int,
                unreadable: str | None = None, mirror: str | None = None,
                mirror_unreadable: str | None = None, checkpoint: int | None = None) -> list[str]:
    """`redo-writer verify` of the log on `target`, crash recovery as a DBA's instance would run it;
    `unreadable`: a file naming the ranges a read would fail on (a device answers them with EIO
    itself); `mirror`: the log group's second member (and its `mirror_unreadable`), each block read
    from whichever member continues the redo; `checkpoint`: the redo position recovery starts from
    (a wrapping log's pass start), the redo lost counted from it. Its verdict as JSON."""
    return [PROGRAM, "verify", "--target", target, "--blocksize", str(blocksize), "--log-size", str(log_size),
            "--acknowledged", str(acknowledged), "--redo-per-txn", str(redo_per_txn),
            *(["--unreadable", unreadable] if unreadable else []),
            *(["--mirror", mirror] if mirror else []),
            *(["--mirror-unreadable", mirror_unreadable] if mirror and mirror_unreadable else []),
            *(["--checkpoint", str(checkpoint)] if checkpoint is not None else []), "--output", "json"]
