"""The lab: terraform-check and lab validate, from-host, up, down, status and forget."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import fields, labdef, paths
from .. import lab as lab_mod
from ..bench.redo import fields as redo_fields
from ..devices import profiles as device_profiles
from ..errors import UsageError
from ..lab import warm
from ..labdef import fromhost
from ..paths import write_atomic
from .common import load_lab, progress


def cmd_terraform_check(args) -> int:
    lab_mod.terraform_check(progress)
    return 0


def cmd_lab_validate(args) -> int:
    lab = labdef.load(args.file, lab_mod.suffix_from_env())
    if not args.offline:
        lab_mod.check_host(lab, lab_mod.own_ports(lab.name))
    disks = sum(len(vm.disks) for vm in lab.vms)
    print(f"{args.file}: lab {lab.name}, {len(lab.vms)} VM(s), {disks} data disk(s): valid")
    for vm, d in lab.disks():
        print(f"  {vm.name}/{d.name}: {d.bus}, {d.geometry.name}, {_served(vm, d)}")
    return 0


def _served(vm, disk) -> str:
    """How a disk is served and what the guest will read of its write cache."""
    profile = vm.profile(disk)
    if profile is None:
        return f"a qcow2 volume of the remote host's pool, write cache as QEMU presents it ({vm.write_cache(disk)})"
    cache = device_profiles.get(profile).write_cache
    return f"device profile {profile} (write cache {cache}: the guest reads \"{vm.write_cache(disk)}\")"


def _new_output(output, force: bool) -> None:
    """-o checked before anything is read: a file sectorlab may write, not one that exists unless --force."""
    paths.output_file(output, "-o")
    if output.exists() and not force:
        raise UsageError(f"-o {output}: the file exists; choose another name or add --force to replace it")


def cmd_lab_from_host(args) -> int:
    if args.output is not None:
        _new_output(args.output, args.force)
    disks, skipped = fromhost.read(args.file)
    plan = fromhost.plan(disks, skipped, args.file.name, fromhost.lab_name_for(args.output), args.size_mib)
    for note in plan.not_reproduced:
        print(f"sectorlab: not as on the source: {note}", file=sys.stderr)
    if args.output is None:
        sys.stdout.write(plan.toml)
        return 0
    write_atomic(args.output, plan.toml)
    print(f"sectorlab: {args.output}: {plan.disks} disk(s) of {args.file}; bring it up with "
          f"{lab_mod.lab_up_command(args.output)}", file=sys.stderr)
    return 0


def cmd_lab_twin(args) -> int:
    from ..labdef import twin
    _new_output(args.output, args.force)
    # a profile file named relative to where the command runs, as FILE and --awr are (the preset keeps it absolute)
    device = str(Path(args.device).absolute()) if device_profiles.is_file(args.device) else args.device
    out, notes = twin.write(args.output, args.file, args.disk, device, args.awr)
    for note in notes:
        print(f"sectorlab: not as on the source: {note}", file=sys.stderr)
    print(f"sectorlab: {out}: run it with sectorlab bench-load {out} --clock virtual (the device path in virtual "
          f"time), then sectorlab bench {out} (a lab of its own)", file=sys.stderr)
    return 0


def file_tables() -> str:
    """The field tables of a lab definition and a bench preset, as Markdown."""
    from ..crash.preset import CRASH_FIELDS
    return fields.markdown(list(labdef.TABLES) + list(redo_fields.TABLES) + [CRASH_FIELDS])


def cmd_lab_fields(args) -> int:
    sys.stdout.write(file_tables())
    return 0


def cmd_lab_up(args) -> int:
    lab_mod.up(load_lab(args), progress, cold=args.cold, save_state=not args.no_save_state,
               require_warm=args.require_warm)
    return 0


def cmd_lab_down(args) -> int:
    lab_mod.down(load_lab(args), progress)
    return 0


def cmd_lab_status(args) -> int:
    return lab_mod.status(load_lab(args), progress)


def cmd_lab_forget(args) -> int:
    lab = load_lab(args)
    removed = warm.clear(lab.name)
    print(f"lab {lab.name}: removed saved state(s) {', '.join(removed)}" if removed
          else f"lab {lab.name}: no saved state")
    return 0
