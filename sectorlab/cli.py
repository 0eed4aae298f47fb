"""The sectorlab command line: one verb per step of the lab's flow."""

# The docstring above is the description `sectorlab --help` prints. This module is the command
# line only: the parser, one function per group of commands that adds its subparsers, and main.
# What each command does is in sectorlab/commands/, one module per group.

from __future__ import annotations

import argparse
import importlib
import math
import os
import select
import signal
import sys
from pathlib import Path

from . import __version__, bench, images, paths
from .errors import SectorlabError, UsageError


class _Command:
    """A command's function (sectorlab/commands/MODULE.py), imported when the command runs: the
    parser, `--help` and a bad command line need none of the commands' modules."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, args):
        return getattr(importlib.import_module(f"{__package__}.commands.{self.module}"), self.name)(args)

    def __repr__(self) -> str:
        return f"sectorlab.commands.{self.module}.{self.name}"


cmd_bench = _Command("bench", "cmd_bench")
cmd_bench_floor = _Command("bench", "cmd_bench_floor")
cmd_bench_host = _Command("bench", "cmd_bench_host")
cmd_bench_lab_up = _Command("bench", "cmd_bench_lab_up")
cmd_bench_load = _Command("bench", "cmd_bench_load")
cmd_bench_sweep = _Command("bench", "cmd_bench_sweep")
cmd_bench_writer = _Command("bench", "cmd_bench_writer")
cmd_crash = _Command("crash", "cmd_crash")
cmd_crash_db = _Command("crash", "cmd_crash_db")
cmd_accel = _Command("host", "cmd_accel")
cmd_doctor = _Command("host", "cmd_doctor")
cmd_geometries = _Command("host", "cmd_geometries")
cmd_image_boot_time = _Command("image", "cmd_image_boot_time")
cmd_image_build = _Command("image", "cmd_image_build")
cmd_image_list = _Command("image", "cmd_image_list")
cmd_image_path = _Command("image", "cmd_image_path")
cmd_image_validate = _Command("image", "cmd_image_validate")
cmd_lab_down = _Command("lab", "cmd_lab_down")
cmd_lab_fields = _Command("lab", "cmd_lab_fields")
cmd_lab_forget = _Command("lab", "cmd_lab_forget")
cmd_lab_from_host = _Command("lab", "cmd_lab_from_host")
cmd_lab_twin = _Command("lab", "cmd_lab_twin")
cmd_lab_status = _Command("lab", "cmd_lab_status")
cmd_lab_up = _Command("lab", "cmd_lab_up")
cmd_lab_validate = _Command("lab", "cmd_lab_validate")
cmd_terraform_check = _Command("lab", "cmd_terraform_check")
cmd_probe = _Command("probe", "cmd_probe")
cmd_compare = _Command("results", "cmd_compare")
cmd_awr = _Command("results", "cmd_awr")
cmd_plot = _Command("results", "cmd_plot")
cmd_report = _Command("results", "cmd_report")

_LAB_HELP = "lab definition (default: $SECTORLAB_LAB_FILE or labs/default.toml)"


class _Parser(argparse.ArgumentParser):
    """A bad command line is one line, as every other bad input: what is wrong, and where the
    usage is (argparse would print the whole usage first)."""

    def error(self, message: str):
        message = message.replace("\n", "\\n")  # an argument with a line break in it stays on the one line
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def whole(low: int, high: int):
    """An argparse type: a whole number in [low, high] (the parser's one line otherwise)."""
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number from {low} to {high}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number from {low} to {high}")
        return value
    return parse


def whole_or_host(low: int, high: int):
    """An argparse type: a whole number in [low, high], or 'host' (measured on this host)."""
    number = whole(low, high)

    def parse(text: str) -> int | str:
        if text == "host":
            return text
        try:
            return number(text)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number from {low} to {high}, or 'host' "
                                             f"(this host's, measured)") from None
    return parse


def fraction(low: float, high: float):
    """An argparse type: a finite number strictly between low and high (nan, inf and the bounds
    themselves refused: float() takes 'nan' and 'inf')."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and low < value < high):
            raise argparse.ArgumentTypeError(f"{text!r}: expected a number above {low:g} and below {high:g}")
        return value
    return parse


def judges(text: str) -> list[str]:
    """An argparse type: crash-db's --judges, comma-separated judges (crash/databases.JUDGES), none
    given twice (it would run twice and count its cuts twice)."""
    from .crash import labdb
    try:
        return labdb.check_judges(text.split(","))
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sectorlab", description=__doc__)
    parser.add_argument("--version", action="version", version=f"sectorlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    # In this order: it is the order `sectorlab --help` lists the commands in.
    _add_host_commands(sub)
    _add_image_commands(sub)
    _add_geometry_commands(sub)
    _add_results_commands(sub)
    _add_bench_commands(sub)
    _add_lab_commands(sub)
    _add_probe_command(sub)
    return parser


def _add_host_commands(sub) -> None:
    p = sub.add_parser("doctor", help="what the host has for the lab")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("accel", help="the accelerator the lab uses (real probe, cached per boot)")
    p.add_argument("--refresh", action="store_true", help="probe again instead of using the cached verdict")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_accel)


def _add_image_commands(sub) -> None:
    image = sub.add_parser("image", help="guest images").add_subparsers(dest="image_command", required=True)
    p = image.add_parser("build", help="build a guest image with Packer (cached by the hash of its inputs)")
    p.add_argument("--guest", help=f"{', '.join(images.guest_names())} (default: see 'make image')")
    p.add_argument("--force", action="store_true", help="rebuild even when the cached image is up to date")
    p.set_defaults(func=cmd_image_build)
    p = image.add_parser("validate", help="packer validate the template with every guest's vars")
    p.set_defaults(func=cmd_image_validate)
    p = image.add_parser("list", help="the guests, their bases and what is built")
    p.set_defaults(func=cmd_image_list)
    p = image.add_parser("path", help="print the cached image of a guest")
    p.add_argument("--guest")
    p.set_defaults(func=cmd_image_path)
    p = image.add_parser("boot-time", help="boot the image under QEMU N times and time SSH login")
    p.add_argument("--guest")
    p.add_argument("--image", help="a qcow2 from the image cache instead of the guest's current build "
                                    "(to compare two builds)")
    p.add_argument("--runs", type=whole(1, 100), default=3)
    p.add_argument("--timeout", type=fraction(0, 86400), default=600.0, help="seconds (default 600)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_image_boot_time)


def results_root(text: str) -> Path:
    """An argparse type: --results, a directory where a run's own directory goes (paths.results_root)."""
    try:
        return paths.results_root(text)
    except SectorlabError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--results ")) from None


def _device_path_bench_args(p, results: str) -> None:
    """The options bench-sweep and bench-load share (runs on the device path alone)."""
    p.add_argument("--repeats", type=whole(2, 50), help="runs of each configuration (and value) (default: the "
                   "fewest with which the preset's comparisons can reach p < 0.01 after Holm)")
    p.add_argument("--duration", type=whole(1, 3600), help="seconds of each run (default: the preset's)")
    p.add_argument("--seed", type=whole(0, 2**31 - 1), help="the seed of the run order (default: a new one)")
    p.add_argument("--results", type=results_root, help=f"where {results} goes (default: results/)")
    _clock_args(p, "real: redo-writer on this host to the models over NBD, in real time (default); virtual: the same "
                "models linked into redo-writer, in the models' own time: the same numbers on any host, at any load "
                "(redo-writer/README.md)")


def _clock_args(p, what: str) -> None:
    """The clock of the device path's runs and, on the virtual one, the modelled host (bench/clock.py)."""
    p.add_argument("--clock", choices=("real", "virtual"), default="real", help=what)
    p.add_argument("--wakeup-us", type=whole_or_host(0, 1_000_000), help="--clock virtual: the modelled host's "
                   "wake-up from a post to the thread it wakes, in us (default 0: at once), or 'host': this host's, "
                   "measured before the runs (sectorlab bench-host)")
    p.add_argument("--cpus", type=whole(0, 65536), help="--clock virtual: the modelled host's cores for the "
                   "sessions' CPU (default 0: one for every session)")
    p.add_argument("--cpu-dist", choices=("exponential", "fixed"), help="--clock virtual: a transaction's CPU "
                   "drawn from an exponential of its mean (default, assumed) or every one the same")
    p.add_argument("--wakeup-dist", choices=("exponential", "fixed"), help="--clock virtual: a wake-up drawn from "
                   "an exponential of --wakeup-us (default, assumed) or every one the same")
    p.add_argument("--log-writer-cpu-us", type=whole_or_host(0, 1_000_000), help="--clock virtual: the log "
                   "writer's CPU before each write, in us (default 0: not modelled), or 'host': this host's, measured "
                   "before the runs (sectorlab bench-host)")


def _add_geometry_commands(sub) -> None:
    p = sub.add_parser("geometries", help="the geometry catalog, what each bus can present, and the latency profiles")
    p.add_argument("--json", action="store_true")
    p.add_argument("--held-out", action="store_true",
                   help="each profile's model at its seed's load against the seed's iostat figures that no "
                        "parameter came from (await, svctm, %%util, avgqu-sz)")
    p.add_argument("--tails", choices=("virtual", "device"),
                   help="each profile whose times are given as their source's percentiles, held to them: the "
                        "model's answers in virtual time, or served on this host and probed over NBD (device: "
                        "make bench-tails, on a quiet machine)")
    p.add_argument("--samples", type=whole(1000, 10_000_000),
                   help="--tails: requests timed per profile (default 200000: a percentile is compared with 10 "
                        "samples above it, so the 99.99th from 100000)")
    p.add_argument("--results", type=results_root,
                   help="--tails: where <timestamp>-tails-PATH/tails.json goes (default: printed only)")
    p.set_defaults(func=cmd_geometries)

    # Listed for --help only: main hands `redo-check` to the rules engine before this parser runs.
    sub.add_parser("redo-check", help="which redo BLOCKSIZE a disk accepts (ORA-01378 rules); see redo-check --help",
                   add_help=False)


def _add_results_commands(sub) -> None:
    p = sub.add_parser("awr", help="what the lab reads of an AWR report (Oracle's text or HTML layout, or its tables "
                                   "as a web page quotes them): the load "
                                   "bench-load --awr runs and the log writer's figures, each with the report's line")
    p.add_argument("report", type=Path,
                   help="an AWR report in Oracle's text or HTML layout (awrrpt_*.txt or .html), or its tables as "
                        "a web page quotes them")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_awr)
    p = sub.add_parser("compare", help="two single redo-writer runs side by side, Welch t-test over their commits "
                       "(not a between-run test)")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    p.add_argument("--alpha", type=fraction(0, 1), default=0.05,
                   help="the significance level, above 0 and below 1 (default 0.05)")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("plot", help="latency histogram and latency over time from a redo-writer --events file")
    p.add_argument("events", type=Path)
    p.add_argument("-o", "--output", type=Path, default=Path("redo-latency.png"))
    p.add_argument("--title")
    p.set_defaults(func=cmd_plot)
    p = sub.add_parser("report", help="report.md and a self-contained report.html (and summary.json where the kind "
                                      "has one) re-rendered from any results directory sectorlab writes")
    p.add_argument("results", type=Path, help="results/<timestamp>-<name>/: it holds bench.json, appliance.json, "
                   "sweep.json, load.json, crash.json or crash-db.json")
    p.add_argument("--png", action="store_true", help="also report.html drawn by headless Chromium, as on a "
                                                      "desktop and a phone (report-desktop.png, report-phone.png)")
    p.set_defaults(func=cmd_report)


def _add_bench_commands(sub) -> None:
    p = sub.add_parser("bench", help="a seed's experiment (labs/bench/PRESET.toml): its own lab up, redo-writer at "
                                     "every BLOCKSIZE the rules engine allows on each disk, lab down, the report")
    p.add_argument("preset", nargs="?", default=bench.DEFAULT_PRESET,
                   help=f"a preset of labs/bench/ (default {bench.DEFAULT_PRESET}; --list shows them) or the "
                        f"path of a lab definition with a [bench] table")
    p.add_argument("--duration", type=int, help="seconds of each measured run (default: the preset's)")
    p.add_argument("--warmup", type=int, help="seconds of the warm-up before each run (default: the preset's)")
    p.add_argument("--repeats", type=int, help="runs of every configuration (default: the preset's)")
    p.add_argument("--seed", type=int, help="the seed of the run order (default: the preset's order_seed, else a "
                                            "new one, printed and recorded in bench.json)")
    p.add_argument("--results", type=results_root, default=bench.RESULTS_DIR,
                   help="where <timestamp>-<preset>/ goes (default: results/ in the project, not committed)")
    p.add_argument("--png", action="store_true", help="also draw report.html as on a desktop and a phone")
    p.add_argument("--list", action="store_true", help="the presets, their runs and estimated run time")
    _clock_args(p, "the clock of each run's device-path twin: real, redo-writer on this host to the lab's models "
                "over NBD right after the guest's run (default); virtual, the same models' parameters linked into "
                "redo-writer, in the models' own time (redo-writer/README.md)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("bench-writer", help="redo-writer (1 session) against fio on the same file, side by side")
    p.add_argument("--dir", type=Path, default=Path("/var/tmp"), help="where the test file goes (default /var/tmp)")
    p.add_argument("--rounds", type=whole(1, 100), default=3)
    p.add_argument("--seconds", type=whole(1, 3600), default=10)
    p.add_argument("--spin-us", type=whole(0, 1_000_000), default=0,
                   help="redo-writer --spin-us (poll before sleeping)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_writer)

    p = sub.add_parser("bench-host", help="this host's wake-up from a post and the log writer's CPU per write "
                                          "(redo-writer to null:), the virtual clock's modelled host measured here")
    p.add_argument("--rounds", type=whole(1, 100), default=5)
    p.add_argument("--seconds", type=whole(1, 3600), default=2)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_host)

    p = sub.add_parser("bench-floor", help="what the lab itself costs a redo write, per bus, in the running lab "
                                           "(redo-writer in the guest beside the model's trace)")
    p.add_argument("--lab", type=Path, help=_LAB_HELP)
    p.add_argument("--disk", action="append", help="a model-served disk of the lab (repeat; default: one per bus)")
    p.add_argument("--rounds", type=whole(1, 100), default=3)
    p.add_argument("--seconds", type=whole(1, 3600), default=4)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_floor)

    p = sub.add_parser("bench-sweep", help="an assumed device parameter of a preset varied over its plausible range "
                                           "on the device path (no lab), and where each headline flips")
    p.add_argument("preset", help="a preset of labs/bench/ with a [[bench.sweep]]")
    p.add_argument("--param", help="the swept parameter (default: every [[bench.sweep]] of the preset)")
    _device_path_bench_args(p, "<timestamp>-<preset>-sweep-<param>/")
    p.set_defaults(func=cmd_bench_sweep)

    p = sub.add_parser("crash", help="power cuts on the device path (no lab), per profile, geometry and redo "
                                      "BLOCKSIZE, judged by redo-writer verify: acknowledged commits lost, torn blocks")
    p.add_argument("preset", nargs="?", help="a crash preset of labs/crash/ (or a path to one)")
    p.add_argument("--list", action="store_true", help="check every preset of labs/crash/ and list its cells")
    p.add_argument("--seed", type=whole(0, 2**31 - 1), help="the seed of the cuts (default: the preset's)")
    when = p.add_mutually_exclusive_group()  # --at is one cut: with --cuts, one of the two would go unsaid
    p.add_argument("--runs", type=whole(3, 100), help="independent runs per cell, each with its own workload seed "
                   "(default: the preset's)")
    when.add_argument("--cuts", type=whole(1, 10000), help="cuts per run inside the writes' windows (default: the "
                      "preset's)")
    when.add_argument("--at", type=fraction(0, 86_400_000), metavar="MS", help="one cut per cell at this moment, in "
                      "milliseconds from the run's first write (default: --cuts moments drawn over the run)")
    p.add_argument("--results", type=results_root, help="where <timestamp>-crash-<preset>/ goes (default: results/)")
    p.add_argument("--clock", choices=("real", "virtual"), default="real", help="real: redo-writer to the models "
                   "over NBD in real time (default); virtual: the same models linked into redo-writer, a cut a moment "
                   "of their own time: the same cuts and verdicts on any host")
    p.add_argument("--png", action="store_true", help="draw report.html as on a desktop and a phone (headless "
                   "Chromium)")
    p.set_defaults(func=cmd_crash)

    p = sub.add_parser("crash-db", help="power cuts judged by real databases in the running lab (make crash-db): "
                                        "MariaDB's doublewrite and PostgreSQL's full_page_writes on and off")
    p.add_argument("--lab", type=Path, help=_LAB_HELP + " (make crash-db: labs/crash-databases.toml)")
    p.add_argument("--judges", type=judges, help="comma-separated judges, each once (default: all: "
                   "mariadb-doublewrite-on, mariadb-doublewrite-off, postgres-fpw-on, postgres-fpw-off, "
                   "postgres-fpw-off-checksums-off)")
    p.add_argument("--runs", type=whole(1, 100), default=3, help="independent runs per judge, each a real cut of "
                   "its own (default 3)")
    p.add_argument("--cuts", type=whole(1, 1000), default=7, help="cuts per disk, judge and run: the real cut and "
                   "CUTS-1 more moments of its run, drawn inside the disk's write windows (default 7)")
    p.add_argument("--seed", type=whole(0, 2**31 - 1), default=20261127, help="of the judges' order, the moments "
                   "and the tears")
    p.add_argument("--results", type=results_root, help="where <timestamp>-crash-db-<lab>/ goes (default: results/)")
    p.add_argument("--png", action="store_true", help="draw report.html as on a desktop and a phone (headless "
                   "Chromium)")
    p.set_defaults(func=cmd_crash_db)

    p = sub.add_parser("bench-load", help="the seed's own load (its sessions, redo and CPU per transaction) closed "
                                          "loop on the device path (no lab): group commit and the seed's figures")
    p.add_argument("preset", help="a preset of labs/bench/ with a [bench.closed_loop] (with --awr: any redo preset, "
                                  "for its disks and comparisons)")
    p.add_argument("--awr", type=Path, help="an AWR report in Oracle's text or HTML layout (awrrpt_*.txt or "
                   ".html, or its tables as a web page quotes them): its sessions, redo and CPU a transaction and "
                   "its log writer's figures in place of the preset's closed loop")
    _device_path_bench_args(p, "<timestamp>-<preset>-closed-loop/")
    p.set_defaults(func=cmd_bench_load)

    p = sub.add_parser("bench-lab-up", help="cold and warm lab-up side by side (destroys the lab first)")
    p.add_argument("--lab", type=Path, help=_LAB_HELP)
    p.add_argument("--rounds", type=whole(1, 100), default=3)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_lab_up)


def _add_probe_command(sub) -> None:
    p = sub.add_parser("probe", help="measure a device's timing at queue depth 1 and its random reads at depths 1 "
                                     "to 8, and write a calibrated profile (docs/probe.md)")
    p.add_argument("target", help="a directory on the filesystem under test (the probe makes, writes and removes a "
                                  "file of its own there), a block device that holds nothing or an NBD URI of this "
                                  "host (a device model), each with --destroy-data")
    p.add_argument("--samples", type=whole(20, 2000), default=100, help="timed requests of each figure (default "
                   "100), and four times as many reads at each queue depth (at most 4,000)")
    p.add_argument("--seed", type=whole(0, 2**31 - 1), default=1, help="of the requests' order and the random "
                   "reads' offsets (default 1)")
    p.add_argument("--name", help="the profile's name and its results directory's (default: device)")
    p.add_argument("--max-seconds", type=whole(10, 86400), default=900, help="refuse a probe the pilot says "
                   "would take longer (default 900)")
    p.add_argument("--destroy-data", action="store_true", help="a block device or NBD target: write over it "
                   "(a block device is refused anyway when it holds a partition table, a filesystem, RAID, LVM or "
                   "ASM, or is mounted)")
    p.add_argument("--results", type=results_root, help="where <timestamp>-probe-NAME/ goes (default: results/)")
    p.add_argument("--png", action="store_true", help="draw report.html as on a desktop and a phone (headless "
                   "Chromium)")
    p.set_defaults(func=cmd_probe)


def _add_lab_commands(sub) -> None:
    p = sub.add_parser("terraform-check", help="terraform fmt -check and validate of terraform/")
    p.set_defaults(func=cmd_terraform_check)

    lab = sub.add_parser("lab", help="the VM lab").add_subparsers(dest="lab_command", required=True)
    p = lab.add_parser("validate", help="check a lab definition before anything starts")
    p.add_argument("file", type=Path)
    p.add_argument("--offline", action="store_true", help="skip host checks (ports, libvirt URI)")
    p.set_defaults(func=cmd_lab_validate)
    p = lab.add_parser("from-host", help="a lab definition whose disks reproduce a server's "
                                         "(the file scripts/collect-host-geometry wrote there, or lsblk's JSON)")
    p.add_argument("file", type=Path)
    p.add_argument("-o", "--output", type=Path, help="write the lab definition there, e.g. labs/prod-db1.toml "
                                                     "(the lab is named after it; default: print it)")
    p.add_argument("--size-mib", type=int, default=256, help="the size of every lab disk (default 256)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.set_defaults(func=cmd_lab_from_host)
    p = lab.add_parser("twin", help="one lab and one bench of your own disk, drive and load: a server's disk (as for "
                                    "from-host), a device profile (the catalog's or sectorlab probe's file) and an "
                                    "AWR report, as a bench preset (docs/twin.md)")
    p.add_argument("file", type=Path, help="the server's disks: what scripts/collect-host-geometry wrote, or lsblk's "
                                           "JSON")
    p.add_argument("--disk", help="the disk whose redo you ask about, by its kernel name (nvme0n1, sda); needed when "
                                  "the server has more than one disk to choose from")
    p.add_argument("--device", required=True, help="its timing: a catalog profile (sectorlab geometries lists them) "
                                                   "or the profile file sectorlab probe wrote of the drive")
    p.add_argument("--awr", required=True, type=Path, help="its load: an AWR report (text or HTML, or its tables "
                                                          "quoted from a web page)")
    p.add_argument("-o", "--output", required=True, type=Path,
                   help="the preset to write, e.g. labs/bench/twin-db1.toml (the lab is named after it)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.set_defaults(func=cmd_lab_twin)
    p = lab.add_parser("fields", help="every key of a lab definition and a bench preset: type, bounds, default "
                                      "(Markdown, as docs/lab-definition.md shows it)")
    p.set_defaults(func=cmd_lab_fields)
    for verb, func, text in (("up", cmd_lab_up, "build the image if needed, create or converge the VMs, verify disks"),
                             ("down", cmd_lab_down, "destroy the lab's VMs, volumes, pool and state"),
                             ("status", cmd_lab_status, "the lab's VMs and what the guests see"),
                             ("forget", cmd_lab_forget, "delete the saved guest states (next lab-up boots cold)")):
        p = lab.add_parser(verb, help=text)
        p.add_argument("--lab", type=Path, help=_LAB_HELP)
        p.set_defaults(func=func)
        if verb == "up":
            p.add_argument("--cold", action="store_true",
                           help="boot the guests even when a saved state matches (and save a new one)")
            p.add_argument("--no-save-state", action="store_true",
                           help="after a cold boot, do not save the guests' state for the next lab-up")
            p.add_argument("--require-warm", action="store_true",
                           help="fail instead of booting cold when no saved state matches or the restore fails")


# What an installed sectorlab answers without the project's checkout (paths.checkout): the
# catalog and the tables, read from the package itself.
WITHOUT_CHECKOUT = frozenset({cmd_geometries, cmd_lab_fields})


_BUILT: list = [None, None]  # (build_parser as it was, the parser it built)


def _parser() -> argparse.ArgumentParser:
    """The parser build_parser makes, made once a process: a parse does not change it, and making it
    (some 120 subparsers and options, each of argparse's texts looked up by gettext) takes as long as
    most commands run, which a process that calls main() again and again pays each time. A
    build_parser put in its place (a test's) is used and kept in turn."""
    if _BUILT[0] is not build_parser:
        _BUILT[:] = [build_parser, build_parser()]
    return _BUILT[1]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["redo-check"]:
        # The rules engine parses its own command line: it also runs standalone inside guests.
        from .inguest import redocheck
        from .labdef import fromhost
        return redocheck.main(argv[1:], prog="sectorlab redo-check", from_host=fromhost.redo_check_sizes)
    args = _parser().parse_args(argv)
    # `kill` (SIGTERM, as a CI runner's timeout sends it) stops a command as Ctrl-C does: lab-up
    # names the phase it stopped in, a bench brings its lab down.
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        if args.func not in WITHOUT_CHECKOUT:
            paths.checkout(" ".join(filter(None, (getattr(args, "command", None), getattr(args, "lab_command", None)))))
        if getattr(args, "png", False) and not getattr(args, "list", False):
            from .report import render
            render.chromium()  # --png's browser, asked for before any run, lab or report is made
        rc = args.func(args)
        sys.stdout.flush()  # here, not at the interpreter's exit: a reader that went away is seen below
        return rc
    except SectorlabError as e:
        print(f"sectorlab: error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("sectorlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if not _stdout_gone():
            raise  # another pipe or socket: not this command's reader
        # The reader of stdout went away (`sectorlab bench --list | head`): stop quietly, as a shell
        # tool does on SIGPIPE, with stdout pointed at /dev/null so that the exit's flush cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on its end)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
