"""The sectorlab command line: one verb per step of the lab's flow."""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
from pathlib import Path

from . import __version__, accel, images
from .errors import SectorlabError, UsageError


def _progress(msg: str) -> None:
    print(f"sectorlab: {msg}", file=sys.stderr, flush=True)


def _guest_arg(value: str | None) -> str:
    return value or images.default_guest(_progress)


def cmd_doctor(args) -> int:
    from . import doctor
    return doctor.report()


def cmd_accel(args) -> int:
    found = accel.detect(refresh=args.refresh)
    if args.json:
        print(json.dumps({"accelerator": found.name, "libvirt_domain_type": found.libvirt_domain_type,
                          "reason": found.reason}))
    else:
        print(f"{found.name}: {found.reason}")
    return 0


def cmd_image_build(args) -> int:
    record = images.build(_guest_arg(args.guest), force=args.force, progress=_progress)
    print(record.image)
    return 0


def cmd_image_validate(args) -> int:
    from . import lab as lab_mod
    images.validate_templates(_progress)
    lab_mod.check_seeds(_progress)
    return 0


def cmd_image_list(args) -> int:
    for name in images.guest_names():
        spec = images.load_guest(name)
        cached = images.find_cached(spec)
        state = (f"built {cached.built_at} in {cached.build_seconds:.0f} s ({cached.accelerator}) {cached.image}"
                 if cached else "not built")
        base = spec.base_image_url or "built here with mmdebstrap from Debian's packages"
        print(f"{name:<14} {state}")
        print(f"{'':<14} base: {base}")
        if spec.template_file is not None:
            here = "present" if spec.template_file.exists() else "absent"
            print(f"{'':<14} template in cache ({here}): {spec.template_file}")
    return 0


def cmd_image_path(args) -> int:
    spec = images.load_guest(_guest_arg(args.guest))
    cached = images.find_cached(spec)
    if cached is None:
        raise SectorlabError(f"{spec.name}: no image built from the current recipe; run 'make image GUEST={spec.name}'")
    print(cached.image)
    return 0


def cmd_image_boot_time(args) -> int:
    from .vm import BootedVM
    if args.image:  # another build of a guest, e.g. the one before a recipe change, to compare with
        record = Path(args.image).with_suffix(".json")
        if not record.exists():
            raise UsageError(f"--image {args.image}: no build record {record} beside it; expected a qcow2 from "
                             f"the image cache (sectorlab image list)")
        cached = images.ImageRecord.load(record)
        spec = images.load_guest(cached.guest)
    else:
        spec = images.load_guest(_guest_arg(args.guest))
        cached = images.find_cached(spec)
    if cached is None:
        raise SectorlabError(f"{spec.name}: no image built; run 'make image GUEST={spec.name}' first")
    times = []
    for run in range(1, args.runs + 1):
        vm = BootedVM(cached.image, user="lab", name=f"boot{run}", progress=_progress,
                      ready_marker=cached.ready_marker)
        try:
            guest = vm.start(timeout=args.timeout)
            guest.check_output("true")
            times.append(vm.boot_seconds)
        finally:
            vm.stop()
        _progress(f"run {run}/{args.runs}: {times[-1]:.1f} s to SSH login")
    result = {"guest": spec.name, "image": str(cached.image), "runs": times, "median": statistics.median(times),
              "min": min(times), "max": max(times), "accelerator": accel.detect().name}
    print(json.dumps(result) if args.json else
          f"{spec.name}: boot to SSH login, median {result['median']:.1f} s over {len(times)} runs "
          f"(min {result['min']:.1f}, max {result['max']:.1f}) under {result['accelerator']}")
    return 0


def cmd_geometries(args) -> int:
    from . import geometry
    catalog = geometry.geometries()
    if args.json:
        print(json.dumps({"geometries": {n: g.as_dict() for n, g in catalog.items()},
                          "buses": geometry.buses(),
                          "latency_profiles": {n: p.as_dict() for n, p in geometry.latency_profiles().items()},
                          "read_modify_write": geometry.read_modify_write().as_dict()},
                         indent=2))
        return 0
    width = max(len(n) for n in catalog)
    for g in catalog.values():
        io = (f"  minimum I/O {g.min_io_size:>5}" if g.min_io_size else "") + \
             (f"  optimal I/O {g.opt_io_size:>6}" if g.opt_io_size else "")
        print(f"{g.name:<{width}}  logical {g.logical_block_size:>5}  physical {g.physical_block_size:>5}{io}  "
              f"{g.description}")
    print()
    for bus, info in geometry.buses().items():
        missing = ", ".join(g.name for g in catalog.values() if geometry.bus_refuses(bus, g))
        nor = [what for key, what in (("physical_above_logical", "whose physical sector is larger than its logical "
                                                                 "one"),
                                      ("io_hints", "with a minimum or optimal I/O size of its own")) if info.get(key)]
        print(f"{bus:<9} {info['description']}; cannot present: {missing or '-'}"
              + (f" (nor any geometry {' or '.join(nor)})" if nor else ""))
    print()
    for p in geometry.latency_profiles().values():
        print(f"latency = {p.name!r:<11} +{p.write_delay_ms} ms per write  {p.description}")
    print()
    r = geometry.read_modify_write()
    refused = ", ".join(bus for bus, info in geometry.buses().items() if info.get("rmw_unsupported"))
    print(f"rmw = true   {r.read_iops} reads/s ({r.read_ms:.1f} ms each; not on {refused})  {r.description}")
    return 0


def _lab_file(args):
    from . import lab
    return args.lab or lab.lab_file_from_env()


def _lab(args):
    """The lab definition the command names (--lab, $SECTORLAB_LAB_FILE or the default lab), read
    here once: the lab commands are given the Lab, not its path."""
    from . import labdef
    return labdef.load(_lab_file(args))


def cmd_lab_validate(args) -> int:
    from . import lab as lab_mod
    from . import labdef
    lab = labdef.load(args.file)
    if not args.offline:
        lab_mod.check_host(lab, lab_mod.own_ports(lab.name))
    disks = sum(len(vm.disks) for vm in lab.vms)
    print(f"{args.file}: lab {lab.name}, {len(lab.vms)} VM(s), {disks} data disk(s): valid")
    return 0


def cmd_lab_from_host(args) -> int:
    from . import fromhost
    if args.output is not None and args.output.exists() and not args.force:
        raise UsageError(f"-o {args.output}: the file exists; choose another name or add --force to replace it")
    disks, skipped = fromhost.read(args.file)
    plan = fromhost.plan(disks, skipped, args.file.name, fromhost.lab_name_for(args.output), args.size_mib)
    for note in plan.not_reproduced:
        print(f"sectorlab: not as on the source: {note}", file=sys.stderr)
    if args.output is None:
        sys.stdout.write(plan.toml)
        return 0
    from .paths import write_atomic
    write_atomic(args.output, plan.toml)
    print(f"sectorlab: {args.output}: {plan.disks} disk(s) of {args.file}; bring it up with "
          f"'make lab-up LAB={args.output}'", file=sys.stderr)
    return 0


def cmd_lab_up(args) -> int:
    from . import lab
    lab.up(_lab(args), _progress, cold=args.cold, save_state=not args.no_save_state,
           require_warm=args.require_warm)
    return 0


def cmd_lab_forget(args) -> int:
    from . import labdef, warm
    lab = labdef.load(_lab_file(args))
    removed = warm.clear(lab.name)
    print(f"lab {lab.name}: removed saved state(s) {', '.join(removed)}" if removed
          else f"lab {lab.name}: no saved state")
    return 0


def cmd_lab_down(args) -> int:
    from . import lab
    lab.down(_lab(args), _progress)
    return 0


def cmd_compare(args) -> int:
    from . import lab
    from .bench import stats
    rows, test = stats.compare(args.a, args.b)
    lab.print_table(rows)
    n_a, n_b = test["n"]
    print(f"log file sync, Welch t-test: t = {test['t']:.3f}, {stats.p_text(test['p'])}, n = {n_a} + {n_b} "
          f"({stats.verdict(test['p'], args.alpha)} at alpha {args.alpha})")
    return 0


def cmd_plot(args) -> int:
    from .bench import stats
    out = stats.plot(args.events, args.output, args.title)
    print(out)
    return 0


def cmd_report(args) -> int:
    from .bench import report
    written = report.write(args.results)
    if args.png:
        written.update(report.render_png(written["html"]))
    for path in written.values():
        print(path)
    return 0


def cmd_bench(args) -> int:
    from . import bench
    from .bench import report
    if args.list:
        for name in bench.preset_names():
            p = bench.load_preset(name)
            print(f"{name:<18} seed {p.seed or '-':<4} {len(p.plan()):>2} runs, ~{bench._clock(p.estimate_s())} "
                  f"of runs  {p.title}")
        return 0
    preset = bench.load_preset(args.preset, args.duration, args.warmup, args.repeats)
    results = bench.run(preset, _progress, args.results)
    if args.png:
        for path in report.render_png(results / "report.html").values():
            _progress(f"drawn: {path}")
    print(results)
    return 0


def cmd_bench_lab_up(args) -> int:
    from .bench import tools
    r = tools.bench_lab_up(_lab(args), args.rounds, _progress)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    for path in ("cold", "warm"):
        s = r[path]
        phases = ", ".join(f"{p} {v:.1f}" for p, v in s["phase_medians_s"].items())
        print(f"{path:<5} lab-up to every disk verified: median {s['median_s']:.1f} s "
              f"(runs {', '.join(f'{t:.1f}' for t in s['totals_s'])}); phase medians (s): {phases}")
    print(f"warm/cold: {r['warm_over_cold']:.2f}x")
    return 0


def cmd_bench_writer(args) -> int:
    from .bench import tools
    r = tools.bench_writer(args.dir, args.rounds, args.seconds, spin_us=args.spin_us)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    for name in ("redo_writer", "fio"):
        s = r[name]
        print(f"{name:<12} write IOPS median {s['iops_median']:8.0f} (min {s['iops_min']:.0f}, "
              f"max {s['iops_max']:.0f}), CPU {s['cpu_us_per_write_median']:.1f} us/write, "
              f"p99 {s['p99_us_median']:.0f} us")
    print(f"redo-writer / fio: IOPS {r['iops_ratio']:.3f}x, CPU per write {r['cpu_ratio']:.3f}x "
          f"({r['rounds']} alternating rounds of {r['seconds']} s on {r['directory']})")
    return 0


def cmd_terraform_check(args) -> int:
    from . import lab
    lab.terraform_check(_progress)
    return 0


def cmd_lab_status(args) -> int:
    from . import lab
    return lab.status(_lab(args), _progress)


class _Parser(argparse.ArgumentParser):
    """A bad command line is one line, as every other bad input: what is wrong, and where the
    usage is (argparse would print the whole usage first)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    from . import bench
    parser = _Parser(prog="sectorlab", description=__doc__)
    parser.add_argument("--version", action="version", version=f"sectorlab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("doctor", help="what the host has for the lab")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("accel", help="the accelerator the lab uses (real probe, cached per boot)")
    p.add_argument("--refresh", action="store_true", help="probe again instead of using the cached verdict")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_accel)

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
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_image_boot_time)

    p = sub.add_parser("geometries", help="the geometry catalog, what each bus can present, and the latency profiles")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_geometries)

    sub.add_parser("redo-check", help="which redo BLOCKSIZE a disk accepts (ORA-01378 rules); see redo-check --help",
                   add_help=False)

    p = sub.add_parser("compare", help="two redo-writer JSON reports side by side, Welch t-test on commit latency")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    p.add_argument("--alpha", type=float, default=0.05)
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("plot", help="latency histogram and latency over time from a redo-writer --events file")
    p.add_argument("events", type=Path)
    p.add_argument("-o", "--output", type=Path, default=Path("redo-latency.png"))
    p.add_argument("--title")
    p.set_defaults(func=cmd_plot)
    p = sub.add_parser("report", help="report.md, a self-contained report.html and summary.json from a bench's "
                                      "results directory")
    p.add_argument("results", type=Path, help="results/<timestamp>-<preset>/ (it holds bench.json)")
    p.add_argument("--png", action="store_true", help="also report.html drawn by headless Chromium, as on a "
                                                      "desktop and a phone (report-desktop.png, report-phone.png)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("bench", help="a seed's experiment (labs/bench/PRESET.toml): its own lab up, redo-writer at "
                                     "every BLOCKSIZE the rules engine allows on each disk, lab down, the report")
    p.add_argument("preset", nargs="?", default=bench.DEFAULT_PRESET,
                   help=f"a preset of labs/bench/ (default {bench.DEFAULT_PRESET}; --list shows them) or the "
                        f"path of a lab definition with a [bench] table")
    p.add_argument("--duration", type=int, help="seconds of each measured run (default: the preset's)")
    p.add_argument("--warmup", type=int, help="seconds of the warm-up before each run (default: the preset's)")
    p.add_argument("--repeats", type=int, help="runs of every configuration (default: the preset's)")
    p.add_argument("--results", type=Path, default=bench.RESULTS_DIR,
                   help="where <timestamp>-<preset>/ goes (default: results/ in the project, not committed)")
    p.add_argument("--png", action="store_true", help="also draw report.html as on a desktop and a phone")
    p.add_argument("--list", action="store_true", help="the presets, their runs and estimated run time")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("bench-writer", help="redo-writer (1 session) against fio on the same file, side by side")
    p.add_argument("--dir", type=Path, default=Path("/var/tmp"), help="where the test file goes (default /var/tmp)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--spin-us", type=int, default=0, help="redo-writer --spin-us (poll before sleeping)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_writer)

    p = sub.add_parser("bench-lab-up", help="cold and warm lab-up side by side (destroys the lab first)")
    p.add_argument("--lab", type=Path, help="lab definition (default: $SECTORLAB_LAB_FILE or labs/default.toml)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_lab_up)

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
    for verb, func, text in (("up", cmd_lab_up, "build the image if needed, create or converge the VMs, verify disks"),
                             ("down", cmd_lab_down, "destroy the lab's VMs, volumes, pool and state"),
                             ("status", cmd_lab_status, "the lab's VMs and what the guests see"),
                             ("forget", cmd_lab_forget, "delete the saved guest states (next lab-up boots cold)")):
        p = lab.add_parser(verb, help=text)
        p.add_argument("--lab", type=Path, help="lab definition (default: $SECTORLAB_LAB_FILE or labs/default.toml)")
        p.set_defaults(func=func)
        if verb == "up":
            p.add_argument("--cold", action="store_true",
                           help="boot the guests even when a saved state matches (and save a new one)")
            p.add_argument("--no-save-state", action="store_true",
                           help="after a cold boot, do not save the guests' state for the next lab-up")
            p.add_argument("--require-warm", action="store_true",
                           help="fail instead of booting cold when no saved state matches or the restore fails")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["redo-check"]:
        # The rules engine parses its own command line: it also runs standalone inside guests.
        from .inguest import rules
        return rules.main(argv[1:], prog="sectorlab redo-check")
    args = build_parser().parse_args(argv)
    # `kill` (SIGTERM, as a CI runner's timeout sends it) stops a command as Ctrl-C does: lab-up
    # names the phase it stopped in, a bench brings its lab down.
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return args.func(args)
    except SectorlabError as e:
        print(f"sectorlab: error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("sectorlab: interrupted", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
