"""Which clock a device-path record's runs were on (bench/clock.py's Clock: the real one,
redo-writer over NBD to served models, or the virtual one, the models linked into redo-writer): the
words the sweep and closed-loop reports say it in, and the options that run it again. A record
written before the virtual clock has no "clock": its runs were real."""

from __future__ import annotations

from ..analysis import stats
from ..errors import UsageError


def virtual(doc: dict) -> bool:
    clock = doc.get("clock", "real")
    if clock not in ("real", "virtual"):
        raise UsageError(f"clock = {stats.shown(clock)}: expected 'real' or 'virtual' (the record "
                         f"'sectorlab bench-sweep' and 'sectorlab bench-load' write)")
    return clock == "virtual"


def _whole(doc: dict, key: str, default: int | None = None) -> int:
    v = doc.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise UsageError(f"{key} = {stats.shown(v)}: expected a whole number of the virtual clock's modelled host "
                         f"(the record 'sectorlab bench-sweep' and 'sectorlab bench-load' write)")
    return v


SOURCE_MAX = 1000  # characters of a modelled time's source


def _sources(doc: dict) -> dict[str, str]:
    """The sources of the modelled times measured on a host (bench/clock.py's Clock.sources)."""
    sources = doc.get("sources") or {}
    if not isinstance(sources, dict) or any(k not in ("wakeup_us", "log_writer_cpu_us") or not isinstance(v, str)
                                            or len(v) > SOURCE_MAX for k, v in sources.items()):
        raise UsageError(f"sources = {stats.shown(sources)}: expected the sources of wakeup_us and "
                         f"log_writer_cpu_us, each a text of at most {SOURCE_MAX} characters (the record "
                         f"'sectorlab bench-sweep' and 'sectorlab bench-load' write)")
    return sources


def host(doc: dict, sources: bool = True) -> str:
    """The modelled host of a virtual record, in words, with the source of a time measured on a host
    (`sources`; else only that it was measured or given)."""
    cpus, wakeup = _whole(doc, "cpus"), _whole(doc, "wakeup_us")
    spread = {key: _dist(doc, key) == "exponential" for key in ("cpu_dist", "wakeup_dist")}
    said = _sources(doc)
    given = {k: (f" ({said[k]})" if sources else " (measured)") if k in said else " (given)"
             for k in ("wakeup_us", "log_writer_cpu_us")}
    return ((f"a wake-up of {wakeup} us" + given["wakeup_us"]
             + (" on average (exponential, assumed)" if spread["wakeup_dist"] else "")
             + " from a post to the thread it wakes, " if wakeup else "no wake-up time, ")
            + (f"{cpus} cores for the sessions' CPU" if cpus else "a core for every session")
            + (", each transaction's CPU drawn from an exponential of its mean (assumed)" if spread["cpu_dist"]
               else ", every transaction's CPU the same")
            + (f", {lw} us of the log writer's CPU before each write{given['log_writer_cpu_us']}"
               if (lw := _whole(doc, "log_writer_cpu_us", 0)) else ", the log writer's CPU not modelled"))


def _dist(doc: dict, key: str) -> str:
    dist = doc.get(key, "fixed")
    if dist not in ("fixed", "exponential"):
        raise UsageError(f"{key} = {stats.shown(dist)}: expected 'fixed' or 'exponential' (the record "
                         f"'sectorlab bench-sweep' and 'sectorlab bench-load' write)")
    return dist


def where(doc: dict) -> str:
    """Where the runs ran, for a report's first paragraph."""
    if virtual(doc):
        return ("in virtual time: redo-writer's own engine with the device models linked in, answering in the "
                f"models' own time, nothing of this host's in the figures (redo-writer/README.md); the modelled host: "
                f"{host(doc)}")
    return "on the device path (redo-writer on this host straight to the models over NBD, in real time)"


def warmup(doc: dict, w: dict) -> str:
    return "no warm-up (virtual time)" if virtual(doc) else f"{w['warmup_s']} s warm-up per model"


def again(doc: dict) -> str:
    """The options that put a rerun on the same clock ('' for the real one)."""
    if not virtual(doc):
        return ""
    return (f" --clock virtual --wakeup-us {_whole(doc, 'wakeup_us')} --wakeup-dist {_dist(doc, 'wakeup_dist')} "
            f"--cpus {_whole(doc, 'cpus')} --cpu-dist {_dist(doc, 'cpu_dist')} --log-writer-cpu-us "
            f"{_whole(doc, 'log_writer_cpu_us', 0)}")


class DevicePath:
    """How a bench report names its device path and says what it is, by the clock its twins ran on
    (bench.json's "device_path": the real clock's record has no "clock")."""

    def __init__(self, record: dict | None):
        record = record or {}
        self.virtual = virtual(record)
        self.name = "device path, virtual time" if self.virtual else "device path"
        self.host = host(record) if self.virtual else ""

    def twins(self, models: str = "models") -> str:
        """What a disk's or a comparison's device-path tables are."""
        if self.virtual:
            return (f"On the device path in virtual time (the same runs on this host with the same {models} linked "
                    f"into redo-writer, in the {models}' own time):")
        return f"On the device path (the same runs' twins on this host, straight to the {models}):"

    def intro(self) -> str:
        """The first screen's words on the two paths and the floor."""
        guest = ("Each comparison's primary metric on both paths, a → b: the **guest path** runs redo-writer in the "
                 "guest, through its kernel, QEMU and the emulated CPU (what the OS and the rules do); ")
        if self.virtual:
            return (guest + "the **device path, virtual time** runs the same workload with the same device models "
                    "linked into redo-writer, in the models' own time (what the device's timing does, nothing of "
                    f"this host's in it; the modelled host: {self.host}). The floor is the same run on the `floor` "
                    "model (no device time): on the guest path its share is the lab's own path; in virtual time it is "
                    "the modelled host's wake-ups, so a difference found there is the models' own, exact, and whether "
                    "a DBA's host would show it depends on that host's floor, which the guest path (and the real "
                    "clock's device path) measures.")
        return (guest + "the **device path** runs the same command on this host straight to the same device model "
                "(what the device's timing does). The floor is the same run on the `floor` model (no device time): "
                "its share is the part of a latency that is the lab's own path.")

    def again(self) -> str:
        """The line before the twins' commands in "How to run it again"."""
        if self.virtual:
            return "# on this host, in the results directory, each run's device-path twin in virtual time:"
        return "# on this host, each run's device-path twin right after it:"
