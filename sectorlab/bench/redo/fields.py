"""The field tables of a bench preset ([bench] and its arrays of tables) and the checks of their
values: what `sectorlab lab fields` prints and preset.from_table reads with.
"""

from __future__ import annotations

from ... import fields, inputs, labdef
from ...analysis.compare import MAX_COMPARISONS, MAX_FIGURES
from ...analysis.metrics import DEFAULT_PRIMARY
from ...errors import UsageError
from ...inguest import rules
from ...labdef import tables as labtables

NULL_TARGET = "null:"
# Commits per second a preset may offer in all. The harness's own ceiling is what redo-writer does
# writing nothing, closed loop, in a lab guest (one TCG vCPU): `redo-writer run --target null:
# --sessions S --duration 3` gave 44,681 commits/s with 1 session, 84,193 with 4 and 86,494 with
# 20 (one run each, 2026-11-24); above a quarter of that an open-loop run measures the harness.
MAX_RATE = 20_000
ARRIVALS = ("closed", "fixed", "poisson")
SEED_LAB = ("ratio", "value", "none")
# A sweep's values, and a preset's sweeps, at most: the presets sweep 2 to 4 values and have up to 3
# sweeps. Each value is checked by a run of the model first, then a model per configuration and
# `repeats` runs of each on this host (16 values of 2 configurations at 8 repeats of 8 s: 34 min).
MAX_SWEEP_VALUES = 16
MAX_SWEEPS = 16


def _blocksizes(where: str, key: str, value, got: dict) -> list[int]:
    if (not isinstance(value, list) or not value
            or any(isinstance(bs, bool) or bs not in rules.VALID_BLOCKSIZES for bs in value)
            or len(set(value)) != len(value)):
        raise UsageError(f"{where}: {key} = {value!r}: expected a list of distinct redo BLOCKSIZEs from "
                         f"{', '.join(map(str, rules.VALID_BLOCKSIZES))}")
    return value


def _disk(where: str, key: str, value, got: dict) -> labdef.Disk | None:
    """A disk of the lab, or None for null: (redo-writer writes nothing: the harness's floor)."""
    disks = got["disks"]
    if value == NULL_TARGET:
        return None
    labtables.text_value(where, key, value)
    if value not in disks:
        raise UsageError(f"{where}: {key} = {value!r}: no such disk in this lab; expected one of "
                         f"{', '.join(disks)}, or {NULL_TARGET} (writes nothing: a control)")
    return disks[value]


def _lbads(where: str, key: str, value, got: dict) -> int:
    d = got["disk"]
    if d is None or d.bus != "nvme":
        what = f"disk {d.name} (bus {d.bus})" if d is not None else NULL_TARGET
        raise UsageError(f"{where}: reformat_lbads on {what}: only an emulated NVMe namespace can be formatted "
                         f"to another LBA size (bus = \"nvme\")")
    if isinstance(value, bool) or not isinstance(value, int) or value not in (512, 4096):
        raise UsageError(f"{where}: reformat_lbads = {value!r}: expected 512 or 4096 (the LBA formats "
                         f"QEMU's NVMe namespace offers)")
    return value


def _selector(where: str, key: str, value, got: dict) -> dict:
    names, blocksizes = got["targets"], got["blocksizes"]
    tname, _, bs = str(value).partition("@")
    if tname not in names or not bs.isdigit() or int(bs) not in blocksizes.get(tname, ()):
        allowed = sorted({b for bl in blocksizes.values() for b in bl})
        raise UsageError(f"{where}: {key} = {value!r}: expected TARGET@BLOCKSIZE with a target of "
                         f"{', '.join(sorted(names))} and a BLOCKSIZE the target runs ({allowed})")
    return {"disk": tname, "blocksize": int(bs)}


def _target_name(where: str, key: str, value, got: dict) -> str:
    labtables.text_value(where, key, value)
    if value not in got["targets"]:
        raise UsageError(f"{where}: target = {value!r}: expected one of {', '.join(sorted(got['targets']))}")
    return value


def _asm_sector(where: str, key: str, value, got: dict) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in (512, 4096):
        raise UsageError(f"{where}: sector_size = {value!r}: expected an ASM disk group SECTOR_SIZE of 512 or 4096")
    return value


def _arrival(where: str, key: str, value, got: dict) -> str:
    labtables.text_value(where, key, value)
    if value not in ARRIVALS:
        raise UsageError(f"{where}: arrival = {value!r}: expected one of {', '.join(ARRIVALS)}")
    if (value == "closed") != (got["rate"] == 0):
        raise UsageError(f"{where}: arrival = {value!r} with rate = {got['rate']}: a closed loop has no rate "
                         f"(rate = 0) and an open loop (fixed, poisson) needs one (rate > 0)")
    return value


def _metric(where: str, key: str, value, got: dict) -> str:
    from ...analysis.metrics import metric_names
    labtables.text_value(where, key, value)
    if value not in metric_names():
        raise UsageError(f"{where}: {key} = {value!r}: not a metric the report gives; expected one of "
                         f"{', '.join(metric_names())}")
    return value


def _seed_lab(where: str, key: str, value, got: dict) -> str:
    labtables.text_value(where, key, value)
    if value not in SEED_LAB:
        raise UsageError(f"{where}: lab = {value!r}: expected one of {', '.join(SEED_LAB)} (how the lab's runs give "
                         f"the number: a ratio of two configurations, one configuration's value, or not at all)")
    return value


def _real(where: str, key: str, value, got: dict) -> float:
    """A seed's published number: finite (TOML takes nan and inf) and of a size a figure has."""
    return inputs.finite(where, key, value, -1e12, 1e12)


def _positive(where: str, key: str, value, got: dict) -> float:
    """A quantity that is above 0 or meaningless (a rate, a seed's transactions/s): finite, and of
    a size such a figure has."""
    return inputs.finite(where, key, value, 0, 1e12, low_open=True)


def bounded_tables(title: str, most: int) -> fields.Kind:
    """An array of at most `most` TOML tables, written [[TITLE]] in the file."""
    def check(where: str, key: str, value, got: dict) -> list:
        if not isinstance(value, list):
            raise UsageError(f"{where}: {key} = {value!r}: expected {title} tables")
        if len(value) > most:
            raise UsageError(f"{where}: {len(value)} {title} tables: expected at most {most} (the presets' largest "
                             f"has a few; each is tested with bootstraps on both paths)")
        return value
    return fields.Kind(f"{title} tables, at most {most}", check)


def _table(where: str, key: str, value, got: dict) -> dict:
    if not isinstance(value, dict):
        raise UsageError(f"{where}: {key} = {value!r}: expected a table ([bench.{key}])")
    return value


REPEATS = fields.number(1, 50)
REAL = fields.custom("number", _real)
POSITIVE = fields.custom("number above 0", _positive)
BLOCKSIZES = fields.custom("list of " + ", ".join(map(str, rules.VALID_BLOCKSIZES)), _blocksizes)
BENCH_FIELDS = fields.Table("[bench]", "What a bench preset runs: the workload of redo-writer and its runs.", (
    fields.Field("seed", fields.TEXT, "the seed the preset reproduces (shared/seeds/NNN)", default=""),
    fields.Field("title", fields.TEXT, "the report's title", default=lambda got: got["stem"],
                 default_text="the file's name"),
    fields.Field("sessions", fields.number(1, 256), "redo-writer's sessions (committing threads)", default=4),
    fields.Field("redo_per_txn", fields.number(1, 64 << 20), "bytes of redo per commit", default=512),
    fields.Field("rate", fields.number(0, MAX_RATE),
                 "commits per second offered in all (0: closed loop, each session commits as soon as its last "
                 "commit is written)", default=0),
    fields.Field("arrival", fields.custom("closed, fixed or poisson", _arrival),
                 "when commits arrive: closed (no rate), fixed intervals or a Poisson process at `rate`; an "
                 "arrival while its session waits is queued and its wait counted",
                 default=lambda got: "closed" if got["rate"] == 0 else "poisson",
                 default_text="closed without a rate, else poisson"),
    fields.Field("cpu_us_per_txn", fields.number(0, 1_000_000), "CPU (us) a session spends on a transaction "
                 "before it commits", default=0),
    fields.Field("warmup_s", fields.number(1, 3600), "seconds run before each measured run", default=2),
    fields.Field("duration_s", fields.number(1, 3600), "seconds measured (make bench DURATION=)", default=8,
                 label="duration_s (DURATION)"),
    fields.Field("log_size_mib", fields.number(1, 1 << 20), "the redo log's size in MiB", default=64),
    fields.Field("blocksizes", BLOCKSIZES,
                 "the redo BLOCKSIZEs to run (those the rules engine refuses for a target are left out); 1024, "
                 "which Oracle documents for some platforms only, runs only when listed",
                 default=lambda got: [512, 4096], default_text="512, 4096"),
    fields.Field("repeats", REPEATS, "runs of each configuration, interleaved in a random order "
                 "(make bench REPEATS=)", default=8),
    fields.Field("order_seed", fields.number(0, 2**31 - 1), "the seed of the run order (sectorlab bench "
                 "--seed)", default_text="a new one per bench, recorded in bench.json"),
    fields.Field("target", fields.tables("[[bench.target]]"), "[[bench.target]]: what to run on",
                 default_text="every disk"),
    fields.Field("compare", bounded_tables("[[bench.compare]]", MAX_COMPARISONS), "[[bench.compare]]: pairs of "
                 "configurations the report compares", default=lambda got: [], default_text="none"),
    fields.Field("asm", fields.tables("[[bench.asm]]"), "[[bench.asm]]: ASM disk groups to evaluate",
                 default=lambda got: [], default_text="none"),
    fields.Field("seed_figure", bounded_tables("[[bench.seed_figure]]", MAX_FIGURES), "[[bench.seed_figure]]: the "
                 "seed's published numbers the report puts beside the lab's", default=lambda got: [],
                 default_text="none"),
    fields.Field("sweep", bounded_tables("[[bench.sweep]]", MAX_SWEEPS), "[[bench.sweep]]: assumed device parameters "
                 "varied over their plausible range (make bench-sweep)", default=lambda got: [], default_text="none"),
    fields.Field("closed_loop", fields.custom("a table", _table), "[bench.closed_loop]: the seed's own load, closed "
                 "loop on the device path (make bench-load)", default_text="none"),
))
TARGET_FIELDS = fields.Table("[[bench.target]]", "One target: a disk of the lab (or null:), run as a redo log.", (
    fields.Field("disk", fields.custom("a disk of the lab, or null:", _disk), "the disk; null: writes nothing "
                 "(the harness's floor, a control)", default=fields.REQUIRED),
    fields.Field("name", fields.custom("name", labdef.name_field), "the target's name in the report",
                 default=lambda got: got["disk"].name if got["disk"] is not None else "null",
                 default_text="the disk's name (null for null:)"),
    fields.Field("race", fields.custom("a disk of the lab, or null:", _disk),
                 "a second disk of the same geometry written as the log group's other member, each commit done "
                 "when the first of the two writes is (smart flash logging, as two disks of the guest)"),
    fields.Field("mirror", fields.custom("a disk of the lab, or null:", _disk),
                 "a second disk of the same geometry written as the log group's other member, each commit done "
                 "when both writes are (multiplexed redo, or ASM normal redundancy's two copies)"),
    fields.Field("reformat_lbads", fields.custom("512 or 4096", _lbads),
                 "format the NVMe namespace to this LBA size before each of its runs (bus nvme only)"),
    fields.Field("override", fields.BOOLEAN, "run the BLOCKSIZEs above the disk's sector that only "
                 "_disk_sector_size_override allows, with it (labelled so)", default=False),
    fields.Field("control", fields.BOOLEAN, "a control: what the harness costs, not a disk under test",
                 default=lambda got: got["disk"] is None, default_text="true for null:"),
    fields.Field("blocksizes", BLOCKSIZES, "this target's BLOCKSIZEs", default_text="[bench]'s"),
    fields.Field("repeats", REPEATS, "runs of each BLOCKSIZE on this target", default_text="[bench]'s"),
))
COMPARE_FIELDS = fields.Table("[[bench.compare]]", "Two configurations the report compares, run by run.", (
    fields.Field("a", fields.custom("TARGET@BLOCKSIZE", _selector), "the first", default=fields.REQUIRED),
    fields.Field("b", fields.custom("TARGET@BLOCKSIZE", _selector), "the second", default=fields.REQUIRED),
    fields.Field("title", fields.TEXT, "the comparison's title", default_text='"A against B"'),
    fields.Field("primary", fields.custom("a metric of the report", _metric), "the one metric whose test is the "
                 "comparison's verdict", default=DEFAULT_PRIMARY),
))
ASM_FIELDS = fields.Table("[[bench.asm]]", "An ASM disk group on a target, checked by the rules engine.", (
    fields.Field("target", fields.custom("a target's name", _target_name), "the target", default=fields.REQUIRED),
    fields.Field("sector_size", fields.custom("512 or 4096", _asm_sector), "the disk group's SECTOR_SIZE",
                 default=fields.REQUIRED),
))
SEED_FIGURE_FIELDS = fields.Table("[[bench.seed_figure]]", "A number the seed published, and how the lab's runs "
                                  "give the same quantity.", (
    fields.Field("what", fields.TEXT, "what the number is", default=fields.REQUIRED),
    fields.Field("seed_value", REAL, "the seed's number", default=fields.REQUIRED),
    fields.Field("unit", fields.TEXT, "its unit (ms, %, ratio, ...)", default=""),
    fields.Field("quote", fields.TEXT, "the seed's sentence or table row it comes from", default=fields.REQUIRED),
    fields.Field("where", fields.TEXT, "where in the seed", default=fields.REQUIRED),
    fields.Field("derivation", fields.TEXT, "how the number follows from the quote", default=""),
    fields.Field("lab", fields.custom("ratio, value or none", _seed_lab), "ratio: the metric's median on a over b; "
                 "value: on a; none: not comparable (reason)", default=fields.REQUIRED),
    fields.Field("metric", fields.custom("a metric of the report", _metric), "the lab's metric"),
    fields.Field("a", fields.custom("TARGET@BLOCKSIZE", _selector), "the configuration (the numerator)"),
    fields.Field("b", fields.custom("TARGET@BLOCKSIZE", _selector), "the denominator of a ratio"),
    fields.Field("reason", fields.TEXT, "why the lab cannot give the number (lab = none)", default=""),
    fields.Field("tell_apart", REAL, "the value the lab must tell the seed's figure apart from for an agreement "
                 "to mean anything (no difference; default 1 for a ratio): the lab's CI must be narrower than "
                 "the seed's distance from it"),
))
def _values(where: str, key: str, value, got: dict) -> list[str]:
    if (not isinstance(value, list) or not 2 <= len(value) <= MAX_SWEEP_VALUES
            or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value)):
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:60] + f"... ({len(value)} long)"
        raise UsageError(f"{where}: {key} = {shown}: expected a list of at least 2 values (at most "
                         f"{MAX_SWEEP_VALUES}) in the model's syntax (\"0\", \"64k\", \"fixed:20\")")
    return [str(v) for v in value]  # a value given twice, in any spelling, is sweep.read's to refuse


SWEEP_FIELDS = fields.Table("[[bench.sweep]]", "An assumed parameter of a device profile varied over its plausible "
                            "range on the device path (make bench-sweep).", (
    fields.Field("param", fields.TEXT, "the model parameter (a key of the profile's params)",
                 default=fields.REQUIRED),
    fields.Field("profile", fields.TEXT, "the device profile whose disks get the values", default=fields.REQUIRED),
    fields.Field("values", fields.custom(f"list of 2 to {MAX_SWEEP_VALUES} model values", _values),
                 "the values, spanning the range; no two the same as the model reads them (64k is 65536)",
                 default=fields.REQUIRED),
    fields.Field("range", fields.TEXT, "why these values are the plausible range (and where each end comes from)",
                 default=fields.REQUIRED),
))

CLOSED_LOOP_FIELDS = fields.Table("[bench.closed_loop]", "The seed's own load, closed loop, run on the device path "
                                  "(make bench-load): its sessions, redo per transaction and CPU per transaction.", (
    fields.Field("sessions", fields.number(1, 4096), "the seed's sessions committing without think time",
                 default=fields.REQUIRED),
    fields.Field("redo_per_txn", fields.number(1, 64 << 20), "the seed's bytes of redo per transaction",
                 default=fields.REQUIRED),
    fields.Field("cpu_us_per_txn", fields.number(0, 1_000_000), "the seed's CPU (us) per transaction, applied "
                 "before each commit and measured", default=0),
    fields.Field("seed_tps", POSITIVE, "the seed's transactions per second, to say how far the host got"),
    fields.Field("source", fields.TEXT, "where each of these numbers comes from in the seed", default=fields.REQUIRED),
    fields.Field("awr", fields.TEXT, "the AWR report the load was read from (sectorlab lab twin writes it): the "
                 "report says the AWR report's load, not a seed's"),
    fields.Field("figure", bounded_tables("[[bench.closed_loop.figure]]", MAX_FIGURES), "[[bench.closed_loop.figure]]: "
                 "the seed's figures of its closed loop beside the lab's (the fields of [[bench.seed_figure]])",
                 default=lambda got: [], default_text="none"),
))


TABLES = (BENCH_FIELDS, TARGET_FIELDS, COMPARE_FIELDS, ASM_FIELDS, SEED_FIGURE_FIELDS, SWEEP_FIELDS,
          CLOSED_LOOP_FIELDS)
