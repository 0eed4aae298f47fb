"""Which clock a device-path run is on, one place for the bench's twins (bench/redo/twin.py), the
sweeps and the closed loop (bench/devicepath/): the real one, redo-writer on this host writing to
the models over NBD in real time, or the virtual one, the same models linked into redo-writer as
`model:` members, answering in the models' own time (redo-writer/README.md, "Virtual time").

On the virtual clock what a real host adds is not measured but given, and recorded with the runs:
a post's wake-up, the modelled host's cores for the sessions' CPU, the log writer's CPU before each
write, and how a transaction's CPU and a wake-up vary."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UsageError

CLOCKS = ("real", "virtual")
# On the real clock the log writer polls its NBD socket this long for each reply before sleeping
# (redo-writer --reply-spin-us): the path's latency is then its own floor plus the model's service
# time (docs/performance.md, "The device path").
REPLY_SPIN_US = 1000


@dataclass(frozen=True)
class Clock:
    """Which clock the runs are on, and on the virtual one what the modelled host adds: a post's
    wake-up (us), its cores for the sessions' CPU (0: one a session), and how a transaction's CPU
    and a wake-up vary (exponential, assumed: with fixed ones nothing separates the sessions in virtual
    time and every write carries all of them; a real host's own noise separates them on the real
    clock)."""
    name: str = "real"
    wakeup_us: int = 0
    cpus: int = 0
    cpu_dist: str = "exponential"
    wakeup_dist: str = "exponential"
    log_writer_cpu_us: int = 0
    # A modelled time measured on this host rather than given: its source in words, by its name
    # (bench/cost/host.py's; "wakeup_us", "log_writer_cpu_us").
    sources: dict = field(default_factory=dict, compare=False)

    @property
    def virtual(self) -> bool:
        return self.name == "virtual"

    def as_json(self) -> dict:
        return {"clock": self.name, **({"wakeup_us": self.wakeup_us, "wakeup_dist": self.wakeup_dist,
                                        "cpus": self.cpus, "cpu_dist": self.cpu_dist,
                                        "log_writer_cpu_us": self.log_writer_cpu_us} if self.virtual else {}),
                **({"sources": dict(self.sources)} if self.virtual and self.sources else {})}

    def args(self) -> list[str]:
        """redo-writer's options for this clock."""
        if self.virtual:
            return ["--wakeup-us", str(self.wakeup_us), "--wakeup-dist", self.wakeup_dist, "--cpus", str(self.cpus),
                    "--log-writer-cpu-us", str(self.log_writer_cpu_us)]
        return ["--reply-spin-us", str(REPLY_SPIN_US)]


REAL = Clock()


def check(preset, w, clock: Clock) -> None:
    """Before anything starts: a load of preset `preset` (its workload `w`) the clock can run.
    Back-to-back sessions with no CPU and no wake-up are in step in virtual time (every write carries
    every session), and on a model that serves in no time, the floor, no time would pass."""
    if clock.virtual and w.arrival == "closed" and not w.cpu_us_per_txn and not clock.wakeup_us:
        raise UsageError(f"preset {preset.name!r}: its sessions commit back to back with no CPU a transaction, and "
                         f"in virtual time nothing else separates them: on a model that serves in no time (the "
                         f"floor) no time would pass, and on any other every write would carry every session; give "
                         f"the modelled host's wake-up, --wakeup-us (make WAKEUP_US=), e.g. 10")


SECOND_SEED = 1_000_003  # a second member's model draws from the run's seed plus this


def model_member(params: dict[str, str], seed: int, second: bool = False, trace: str | None = None) -> str:
    """A model: member of redo-writer: the model's parameters, its seed (a second member's another)
    and, with `trace`, the file its trace lines go to (a path without ';')."""
    if trace is not None and (";" in trace or not trace):
        raise UsageError(f"trace file {trace!r}: expected a path without ';' (a model: member's pairs are "
                         f"';'-separated)")
    extra = {"seed": str(seed + (SECOND_SEED if second else 0)), **({"trace": trace} if trace else {})}
    return "model:" + ";".join(f"{k}={v}" for k, v in (params | extra).items())
