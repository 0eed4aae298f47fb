"""Phase 'provision': the lab's keys, its images in the libvirt pool, its SSH ports, its console
directory and Terraform's variables."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ... import labdef
from ...host import libvirt
from .. import ownership
from ..pool import publish_image
from ..seeds import tfvars
from ..state import Progress, console_dir, ensure_keys, images_pool_lock, ports_of
from .runner import Phase, Timings


def run(lab: labdef.Lab, state: Path, uri: str, vm_names: list[str], records: dict, found, identity: ownership.Identity,
        root_sources: dict[str, str], progress: Progress, timings: Timings) -> dict:
    ensure_keys(lab, state)
    start = time.monotonic()
    with images_pool_lock():  # labs brought up at once share the pool
        published = {g: publish_image(uri, r, progress) for g, r in records.items()}
    if any(p["uploaded"] for p in published.values()):
        timings.add("image upload", time.monotonic() - start)
    ports = ports_of(lab, state)
    libvirt.get_host(uri).make_dir(console_dir(lab.name, uri, state))
    variables = tfvars(lab, state, ports, found.libvirt_domain_type, published, identity, root_sources)
    (state / "terraform.tfvars.json").write_text(json.dumps(variables, indent=2))
    return {"published": published, "ports": ports,
            "domains": {name: ownership.domain_name(lab.name, name) for name in vm_names}}


PHASE = Phase("provision", run, gives=("published", "ports", "domains"))
