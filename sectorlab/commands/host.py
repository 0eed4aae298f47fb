"""The host and the catalogs: doctor, accel and geometries."""

from __future__ import annotations

import json

from .. import accel, doctor, geometry


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
