"""Guest images: image build, validate, list, path and boot-time."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from .. import images
from .. import lab as lab_mod
from ..errors import SectorlabError, UsageError
from ..host import accel
from ..images.vm import BootedVM
from .common import guest_arg, progress


def cmd_image_build(args) -> int:
    record = images.build(guest_arg(args.guest), force=args.force, progress=progress)
    print(record.image)
    return 0


def cmd_image_validate(args) -> int:
    images.validate_templates(progress)
    lab_mod.check_seeds(progress)
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
    spec = images.load_guest(guest_arg(args.guest))
    cached = images.find_cached(spec)
    if cached is None:
        raise SectorlabError(f"{spec.name}: no image built from the current recipe; run 'make image GUEST={spec.name}'")
    print(cached.image)
    return 0


def cmd_image_boot_time(args) -> int:
    if args.image:  # another build of a guest, e.g. the one before a recipe change, to compare with
        record = Path(args.image).with_suffix(".json")
        if not record.exists():
            raise UsageError(f"--image {args.image}: no build record {record} beside it; expected a qcow2 from "
                             f"the image cache (sectorlab image list)")
        cached = images.ImageRecord.load(record)
        spec = images.load_guest(cached.guest)
    else:
        spec = images.load_guest(guest_arg(args.guest))
        cached = images.find_cached(spec)
    if cached is None:
        raise SectorlabError(f"{spec.name}: no image built; run 'make image GUEST={spec.name}' first")
    times = []
    for run in range(1, args.runs + 1):
        vm = BootedVM(cached.image, user="lab", name=f"boot{run}", progress=progress,
                      ready_marker=cached.ready_marker)
        try:
            guest = vm.start(timeout=args.timeout)
            guest.check_output("true")
            times.append(vm.boot_seconds)
        finally:
            vm.stop()
        progress(f"run {run}/{args.runs}: {times[-1]:.1f} s to SSH login")
    result = {"guest": spec.name, "image": str(cached.image), "runs": times, "median": statistics.median(times),
              "min": min(times), "max": max(times), "accelerator": accel.detect().name}
    print(json.dumps(result) if args.json else
          f"{spec.name}: boot to SSH login, median {result['median']:.1f} s over {len(times)} runs "
          f"(min {result['min']:.1f}, max {result['max']:.1f}) under {result['accelerator']}")
    return 0
