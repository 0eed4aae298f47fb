"""The host and the catalogs: doctor, accel and geometries."""

from __future__ import annotations

import json

from .. import geometry
from ..devices import profiles as device_profiles
from ..errors import UsageError
from ..host import accel, doctor


def cmd_doctor(args) -> int:
    return doctor.report()


def cmd_accel(args) -> int:
    found = accel.detect(refresh=args.refresh)
    if args.json:
        print(json.dumps({"accelerator": found.name, "libvirt_domain_type": found.libvirt_domain_type,
                          "reason": found.reason}))
    else:
        print(f"{found.name}: {found.reason}")
    return 0


def cmd_geometries(args) -> int:
    if args.tails and args.held_out:
        raise UsageError("--tails and --held-out: expected one of them (run the command twice)")
    if not args.tails and (args.samples is not None or args.results is not None):
        raise UsageError(f"{'--samples' if args.samples is not None else '--results'} without --tails: expected "
                         f"--tails virtual or --tails device with it")
    if args.tails:
        from ..devices import tails
        from ..paths import new_results_dir, write_atomic
        samples = args.samples or tails.SAMPLES
        rows = tails.check(args.tails, samples)
        print(json.dumps(rows, indent=2) if args.json else "\n".join(tails.table(rows)))
        if args.results:
            out = new_results_dir(args.results, f"tails-{args.tails}") / "tails.json"
            write_atomic(out, json.dumps({"path": args.tails, "samples": samples, "rows": rows}, indent=2) + "\n")
            print(f"written: {out}")
        return 1 if any(r["verdict"] == "outside" for r in rows) else 0
    if args.held_out:
        from ..devices import heldout
        rows = heldout.check()
        print(json.dumps(rows, indent=2) if args.json else "\n".join(heldout.table(rows)))
        return 0
    catalog = geometry.geometries()
    if args.json:
        print(json.dumps({"geometries": {n: g.as_dict() for n, g in catalog.items()},
                          "buses": geometry.buses(),
                          "device_profiles": {n: {"description": p.description, "params": p.params}
                                              for n, p in device_profiles.profiles().items()}},
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
    width = max(len(n) for n in device_profiles.profiles()) + 2
    for p in device_profiles.profiles().values():
        print(f"device = {p.name!r:<{width}} {p.description}")
    return 0
