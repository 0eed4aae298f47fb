"""`sectorlab probe`: a device's timing measured and a calibrated profile written (sectorlab/probe/)."""

from __future__ import annotations

from .. import bench, paths
from ..errors import UsageError
from .common import png_too, progress


def cmd_probe(args) -> int:
    from ..probe import run
    if not args.target:
        raise UsageError("sectorlab probe: the target is empty: expected a directory on the filesystem under test, "
                         "a block device or an NBD URI (each with --destroy-data)")
    name = args.name or "device"
    if paths.slug(name) != name:
        raise UsageError(f"sectorlab probe --name {name!r}: expected letters, digits, '-', '_' and '.' only (it names "
                         f"the profile and its results directory), such as {paths.slug(name)!r}")
    print(png_too(args, lambda: run.run(args.target, samples=args.samples, seed=args.seed, name=name,
                                        results_root=args.results or bench.RESULTS_DIR,
                                        destroy_data=args.destroy_data, max_seconds=args.max_seconds,
                                        progress=progress)))
    return 0
