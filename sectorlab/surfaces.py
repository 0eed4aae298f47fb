"""Every input surface that names a file or a directory, as data: each command-line option of
sectorlab, `sectorlab redo-check` and redo-writer that names one, the results directories
`sectorlab report` reads (each kind, and each file in it that its record names), and each option of
the device model (the nbdkit filter) that names a file.

labtests/unit/test_surfaces.py runs one hostile battery over all of them (a FIFO nobody writes, a
character device, a directory where a file is due, a link to /dev/zero, bytes that are not UTF-8,
nesting 5,000 deep, a dotted key of 100,000 parts, a file over its kind's bound, a name given
twice, a NUL or a '..' in a name a results directory's record holds; /dev/null, a regular file, a
FIFO or a path under a file where a directory is written; the served file itself, by its name, a
hard link or a symbolic link, another of the model's files or a FIFO as a model's file): each is
refused in one line naming it (exit 2; the model does not start), nothing is written anywhere, in
bounded time. It also walks the real parsers, the device model's own help and redo-writer's option
tables and fails on an option that names a file and is not here. A new surface is one entry here
and gets the whole battery; no test is written for it.

An entry's `argv` is its command line with `{path}` where the value goes; the other placeholders
are inputs the battery makes valid so that only the value is hostile:
  {results}      a new directory name for a run's results (--results)
  {out}          a directory the command may write into (plot -o, from-host -o)
  {lab}          a lab definition; {preset} a bench preset (labs/bench/ssd-vs-hdd.toml, by name);
  {crash_preset} a crash preset (labs/crash/small.toml, by name)
  {collector}    a collector file of one disk, sda; {report} a redo-writer JSON report;
  {awr}          an AWR report (labtests/unit/data/awr/awrrpt-11g.txt);
  {events}       a redo-writer events file; {log} a log image redo-writer verify reads, {log2} another
                 (a multiplexed group's second member)
  {requests}     a file of redo-writer io's requests;
  {redo_writer}  redo-writer built from the tree; {filter} the device model's filter, built;
  {served} the file the model serves (nbdkit's file plugin); {socket} the model's socket;
  {trace} {writelog} {unreadable} {floor} the model's own files where the entry is not about them
`member` says where the content named is when it is not the path itself: a file in the directory
(`bench.json`), a file the directory's record names (`runs[].report`: bench.json's first run's
`report`), or the path with another suffix (`.json`: the build record beside an image).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import inputs

# What a value names.
FILE_READ = "file read"
DIRECTORY_READ = "directory read"
DIRECTORY_WRITTEN = "directory written"
FILE_WRITTEN = "file written"
MODEL_FILE = "model option naming a file"
NAMES = (FILE_READ, DIRECTORY_READ, DIRECTORY_WRITTEN, FILE_WRITTEN, MODEL_FILE)


@dataclass(frozen=True)
class Content:
    """What a surface's file holds. `syntax`: TOML, JSON, CSV, text, binary, results (a results
    directory) or none (a path whose metadata alone is read: a block device's sizes, a place to
    write in). `bound`: the largest such file read, in bytes (None: not one read whole).
    `duplicate`: what in it is a name that must not be given twice ('' where nothing is named; a
    JSON file's keys are such names in every kind)."""
    name: str
    syntax: str
    bound: int | None = None
    duplicate: str = ""


LAB = Content("lab definition", "TOML", inputs.LAB_DEFINITION_MAX, "a VM's name")
BENCH_PRESET = Content("bench preset", "TOML", inputs.LAB_DEFINITION_MAX, "a disk's name")
CRASH_PRESET = Content("crash preset", "TOML", inputs.LAB_DEFINITION_MAX, "a profile of its list")
COLLECTOR = Content("collector file", "JSON", inputs.COLLECTOR_MAX, "a disk's name")
REDO_REPORT = Content("redo-writer report", "JSON", inputs.REPORT_JSON_MAX)
EVENTS = Content("redo-writer events", "CSV", inputs.EVENTS_CSV_MAX)
BENCH_RECORD = Content("bench record (bench.json)", "JSON", inputs.BENCH_JSON_MAX, "a run (disk, BLOCKSIZE, repeat)")
APPLIANCE_RECORD = Content("appliance record (appliance.json)", "JSON", inputs.BENCH_JSON_MAX, "a share's name")
IMAGE_RECORD = Content("image build record", "JSON", 64 * inputs.KIB)  # images.cache.RECORD_MAX
RESULTS = Content("results directory", "results")
RANGES = Content("medium errors (lines OFFSET LENGTH)", "text", 4 * inputs.MIB)  # redo-writer/unreadable.c
AWR_REPORT = Content("AWR report", "text", 64 * inputs.MIB)  # awr/parse.py's AWR_TEXT_MAX
IO_REQUESTS = Content("requests (lines OP OFFSET LENGTH)", "text", 16 * inputs.MIB)  # redo-writer/io.h
LOG_IMAGE = Content("redo log image", "binary")
BLOCK_DEVICE = Content("a block device (its sizes; never read)", "none")
PATH_ON_FILESYSTEM = Content("a block device, or a file or directory on one (its sizes; never read)", "none")
PROBE_TARGET = Content("a directory on a filesystem (the probe makes, writes and removes a file of its own there), or "
                       "a block device", "none")
RESULTS_ROOT = Content("where a run's results directory goes", "results")
SCRATCH = Content("where a test file goes", "none")
PICTURE = Content("PNG picture", "binary")
LAB_WRITTEN = Content("lab definition", "TOML")
PRESET_WRITTEN = Content("bench preset", "TOML")
DEVICE_PROFILE = Content("device profile file", "TOML", 64 * inputs.KIB)  # probe/profile.PROFILE_LIMIT
REDO_LOG = Content("redo log member", "binary")
EVENTS_WRITTEN = Content("redo-writer events", "CSV")
TRACE = Content("the model's trace", "CSV")
WRITE_LOG = Content("the model's write log", "binary")
FLOOR_TIME = Content("the floor's time a request (one number of microseconds)", "text", 64)  # devicemodel/filter.c


@dataclass(frozen=True)
class Surface:
    """One option (or positional, environment variable or model key) that names a file or a
    directory. `program`: sectorlab, redo-writer or model (the device model's nbdkit filter);
    `command`: the (sub)command as typed ('lab validate'; '' for the model); `option`: as the
    program spells it (`--lab`, a positional's name such as `file`, `$SECTORLAB_LAB_FILE`, the
    model's `trace`). `refuses_existing`: an existing regular file there is refused (written files
    only: from-host -o without --force)."""
    program: str
    command: str
    option: str
    argv: tuple[str, ...]
    names: str
    content: Content
    member: str = ""
    env: tuple[tuple[str, str], ...] = ()
    refuses_existing: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return self.program, self.command, self.option

    @property
    def id(self) -> str:
        where = f"{self.program} {self.command}".strip()
        return f"{where} {self.option}" + (f" ({self.member})" if self.member else "")


def _s(command: str, option: str, argv: str, names: str, content: Content, **kw) -> Surface:
    return Surface("sectorlab", command, option, tuple(argv.split()), names, content, **kw)


# The device model as sectorlab starts it (devices/server.py: nbdkit's file plugin when a run keeps
# the disk's bytes), one key's file the entry's; --run ends it at once if it starts.
MODEL_COMMAND = ("nbdkit", "--unix", "{socket}", "--log=stderr", "--filter={filter}", "file", "file={served}",
                 "spin-us=0", "trace={trace}", "unreadable={unreadable}", "writelog={writelog}", "floor={floor}",
                 "--run", "true")


def _model(key: str, names: str, content: Content) -> Surface:
    argv = tuple(f"{key}={{path}}" if a == f"{key}={{{key}}}" else a for a in MODEL_COMMAND)
    return Surface("model", "", key, argv, names, content)


_RUN_OPTIONS = "--transactions 1 --log-size 65536 --max-write 65536 --output json"
_VERIFY_OPTIONS = "--blocksize 512 --log-size 65536"

SURFACES: tuple[Surface, ...] = (
    # Lab definitions: every command that takes --lab, and the lab file the environment names.
    *(_s(f"lab {verb}", "--lab", f"lab {verb} --lab {{path}}", FILE_READ, LAB)
      for verb in ("up", "down", "status", "forget")),
    _s("lab status", "$SECTORLAB_LAB_FILE", "lab status", FILE_READ, LAB, env=(("SECTORLAB_LAB_FILE", "{path}"),)),
    _s("lab validate", "file", "lab validate --offline {path}", FILE_READ, LAB),
    _s("bench-floor", "--lab", "bench-floor --lab {path}", FILE_READ, LAB),
    _s("bench-lab-up", "--lab", "bench-lab-up --lab {path}", FILE_READ, LAB),
    _s("crash-db", "--lab", "crash-db --lab {path} --results {results}", FILE_READ, LAB),
    # Presets: a name of labs/bench/ or labs/crash/, or a path.
    _s("bench", "preset", "bench {path} --results {results}", FILE_READ, BENCH_PRESET),
    _s("bench-sweep", "preset", "bench-sweep {path} --results {results}", FILE_READ, BENCH_PRESET),
    _s("bench-load", "preset", "bench-load {path} --results {results}", FILE_READ, BENCH_PRESET),
    _s("awr", "report", "awr {path}", FILE_READ, AWR_REPORT),
    _s("bench-load", "--awr", "bench-load {preset} --awr {path} --clock virtual --wakeup-us 10 --duration 1 "
       "--repeats 2 --results {results}", FILE_READ, AWR_REPORT),
    _s("crash", "preset", "crash {path} --results {results}", FILE_READ, CRASH_PRESET),
    # Where a run's results directory goes.
    _s("bench", "--results", "bench {preset} --results {path}", DIRECTORY_WRITTEN, RESULTS_ROOT),
    _s("bench-sweep", "--results", "bench-sweep {preset} --results {path}", DIRECTORY_WRITTEN, RESULTS_ROOT),
    _s("bench-load", "--results", "bench-load {preset} --results {path}", DIRECTORY_WRITTEN, RESULTS_ROOT),
    _s("crash", "--results", "crash {crash_preset} --results {path}", DIRECTORY_WRITTEN, RESULTS_ROOT),
    _s("crash-db", "--results", "crash-db --lab {lab} --results {path}", DIRECTORY_WRITTEN, RESULTS_ROOT),
    _s("probe", "--results", "probe {out} --samples 20 --results {path}", DIRECTORY_WRITTEN, RESULTS_ROOT),
    _s("geometries", "--results", "geometries --tails virtual --samples 1000 --results {path}", DIRECTORY_WRITTEN,
       RESULTS_ROOT),
    # What a probe measures: a directory on a filesystem (it makes its own file there), a block device.
    _s("probe", "target", "probe {path} --samples 20 --results {results}", FILE_READ, PROBE_TARGET),
    _s("bench-writer", "--dir", "bench-writer --dir {path} --rounds 1 --seconds 1", DIRECTORY_WRITTEN, SCRATCH),
    # Collector files, images, redo-writer's reports and events.
    _s("lab from-host", "file", "lab from-host {path} -o {out}/lab.toml", FILE_READ, COLLECTOR),
    _s("lab from-host", "--output", "lab from-host {collector} -o {path}", FILE_WRITTEN, LAB_WRITTEN,
       refuses_existing=True),
    _s("lab twin", "file", "lab twin {path} --device intel-p3700 --awr {awr} -o {out}/twin.toml", FILE_READ,
       COLLECTOR),
    _s("lab twin", "--awr", "lab twin {collector} --device intel-p3700 --awr {path} -o {out}/twin.toml", FILE_READ,
       AWR_REPORT),
    _s("lab twin", "--device", "lab twin {collector} --device {path} --awr {awr} -o {out}/twin.toml", FILE_READ,
       DEVICE_PROFILE),
    _s("lab twin", "--output", "lab twin {collector} --device intel-p3700 --awr {awr} -o {path}", FILE_WRITTEN,
       PRESET_WRITTEN, refuses_existing=True),
    _s("redo-check", "--from-host", "redo-check --from-host {path} sda", FILE_READ, COLLECTOR),
    _s("redo-check", "device", "redo-check {path} --blocksize 512", FILE_READ, PATH_ON_FILESYSTEM),
    _s("image boot-time", "--image", "image boot-time --image {path}", FILE_READ, IMAGE_RECORD, member=".json"),
    _s("compare", "a", "compare {path} {report}", FILE_READ, REDO_REPORT),
    _s("compare", "b", "compare {report} {path}", FILE_READ, REDO_REPORT),
    _s("plot", "events", "plot {path} -o {out}/p.png", FILE_READ, EVENTS),
    _s("plot", "--output", "plot {events} -o {path}", FILE_WRITTEN, PICTURE),
    # Results directories, each kind and each file its record names.
    _s("report", "results", "report {path}", DIRECTORY_READ, RESULTS),
    _s("report", "results", "report {path}", DIRECTORY_READ, BENCH_RECORD, member="bench.json"),
    _s("report", "results", "report {path}", DIRECTORY_READ, APPLIANCE_RECORD, member="appliance.json"),
    _s("report", "results", "report {path}", DIRECTORY_READ, REDO_REPORT, member="runs[].report"),
    _s("report", "results", "report {path}", DIRECTORY_READ, EVENTS, member="runs[].events"),
    _s("report", "results", "report {path}", DIRECTORY_READ, REDO_REPORT, member="runs[].device_path.report"),
    _s("report", "results", "report {path}", DIRECTORY_READ, EVENTS, member="runs[].device_path.events"),
    # redo-writer (its option tables: run_opts and verify_opts in redo-writer/redo-writer.c).
    Surface("redo-writer", "run", "--target", ("{redo_writer}", "run", "--target", "{path}", *_RUN_OPTIONS.split()),
            FILE_WRITTEN, REDO_LOG),
    *(Surface("redo-writer", "run", opt, ("{redo_writer}", "run", "--target", "{out}/t.log", opt, "{path}",
                                          *_RUN_OPTIONS.split()), FILE_WRITTEN, content)
      for opt, content in (("--mirror", REDO_LOG), ("--race", REDO_LOG), ("--events", EVENTS_WRITTEN))),
    # a model: member's own files (virtual time: redo-writer/README.md), each a key inside --target's value
    *(Surface("redo-writer", "run", f"--target model:{key}=", ("{redo_writer}", "run", "--target",
                                                               f"model:write=fixed:1;{key}={{path}}", "--events",
                                                               "{out}/t.log", *_RUN_OPTIONS.split()),
              FILE_WRITTEN, content)
      for key, content in (("trace", TRACE), ("writelog", WRITE_LOG), ("image", REDO_LOG))),
    Surface("redo-writer", "verify", "--target", ("{redo_writer}", "verify", "--target", "{path}",
                                                  *_VERIFY_OPTIONS.split()), FILE_READ, LOG_IMAGE),
    Surface("redo-writer", "verify", "--unreadable", ("{redo_writer}", "verify", "--target", "{log}",
                                                      *_VERIFY_OPTIONS.split(), "--unreadable", "{path}"),
            FILE_READ, RANGES),
    Surface("redo-writer", "verify", "--mirror", ("{redo_writer}", "verify", "--target", "{log2}",
                                                  *_VERIFY_OPTIONS.split(), "--mirror", "{path}"),
            FILE_READ, LOG_IMAGE),
    Surface("redo-writer", "verify", "--mirror-unreadable", ("{redo_writer}", "verify", "--target", "{log}",
                                                             *_VERIFY_OPTIONS.split(), "--mirror", "{log2}",
                                                             "--mirror-unreadable", "{path}"), FILE_READ, RANGES),
    Surface("redo-writer", "probe", "PATH", ("{redo_writer}", "probe", "{path}"), FILE_READ, BLOCK_DEVICE),
    Surface("redo-writer", "io", "--target", ("{redo_writer}", "io", "--target", "{path}", "--requests", "{requests}"),
            FILE_WRITTEN, REDO_LOG),
    Surface("redo-writer", "io", "--requests", ("{redo_writer}", "io", "--target", "{out}/t.img", "--requests",
                                                "{path}"), FILE_READ, IO_REQUESTS),
    # The device model's files (the filter's config_help: KEY=FILE).
    _model("trace", MODEL_FILE, TRACE),
    _model("writelog", MODEL_FILE, WRITE_LOG),
    _model("unreadable", MODEL_FILE, RANGES),
    _model("floor", MODEL_FILE, FLOOR_TIME),
)

# Options whose name or help reads like a file's but that name none, and why: the coverage test
# takes these as known, so that each is a decision, not an oversight.
NOT_FILES: dict[tuple[str, str, str], str] = {
    ("sectorlab", "redo-check", "--file"): "the redo log's name as ORA-01378 names it (+REDO), not a host file",
    ("sectorlab", "redo-check", "--io-mode"): "direct or buffered (its help speaks of a file on a file system)",
    ("sectorlab", "bench-floor", "--disk"): "a disk's name in the lab",
    ("sectorlab", "bench-sweep", "--param"): "a parameter's name of the preset's [[bench.sweep]]",
    ("sectorlab", "image build", "--guest"): "a guest's name of the catalog (its help names 'make image')",
    ("sectorlab", "probe", "--name"): "the profile's name (letters, digits, '-', '_', '.'), which also names its "
                                      "results directory under --results",
}


def markdown() -> str:
    """The registry as the table docs/reliability.md shows."""
    rows = ["| program | command | option | names | holds | bound |", "|---|---|---|---|---|---|"]
    for s in SURFACES:
        bound = "" if s.content.bound is None else _size(s.content.bound)
        member = f" ({s.member})" if s.member else ""
        syntax = f" ({s.content.syntax})" if s.content.syntax in ("TOML", "JSON", "CSV", "text") else ""
        rows.append(f"| {s.program} | {s.command or '-'} | `{s.option}`{member} | {s.names} | {s.content.name}{syntax} "
                    f"| {bound} |")
    return "\n".join(rows) + "\n"


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= inputs.MIB else f"{n >> 10} KiB" if n >= inputs.KIB else f"{n} B"
