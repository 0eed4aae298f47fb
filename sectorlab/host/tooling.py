"""Where the host tools the project installs itself live: the libvirt provider's filesystem mirror,
the project-local Terraform CLI config, and OpenTofu when there is no terraform.
scripts/bootstrap creates them; these functions answer where they are, and wait for the provider
while scripts/build-provider (started by the bootstrap as a daemon of its own) still builds it."""

from __future__ import annotations

import functools
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from .. import procs
from ..errors import SectorlabError
from ..paths import REPO, cache_dir

VERSIONS_TF = REPO / "terraform" / "versions.tf"


@functools.cache
def required_provider() -> tuple[str, str]:
    """The libvirt provider's source and version as terraform/versions.tf requires them (the one
    place that says; scripts/lib.sh reads the same lines). Read when first asked, not on import:
    an installed sectorlab without the checkout imports this module too."""
    text = VERSIONS_TF.read_text()
    found = re.search(r'libvirt\s*=\s*\{[^}]*?source\s*=\s*"([^"]+)"[^}]*?version\s*=\s*"([^"]+)"', text, re.S)
    if found is None:
        raise SectorlabError(f"{VERSIONS_TF}: no libvirt provider with a source and an exact version")
    return found.group(1), found.group(2)


def tools_dir() -> Path:
    return cache_dir() / "tools"


def provider_mirror() -> Path:
    return tools_dir() / "terraform-mirror"


def provider_binary(host: str = "registry.terraform.io") -> Path:
    source, version = required_provider()
    return provider_mirror() / host / source / version / "linux_amd64" / f"terraform-provider-libvirt_v{version}"


def cli_config() -> Path:
    return tools_dir() / "terraform.rc"


def terraform_binary() -> Path | None:
    """terraform on PATH, else the OpenTofu that scripts/bootstrap built."""
    found = shutil.which("terraform")
    if found:
        return Path(found)
    tofu = tools_dir() / "bin" / "tofu"
    if tofu.exists():
        return tofu
    found = shutil.which("tofu")
    return Path(found) if found else None


def _build_file(suffix: str) -> Path:
    return tools_dir() / f"provider-build.{suffix}"


def provider_build_pid() -> int | None:
    """The pid of the provider build in progress: the process the pid file names, if the same
    process (same start time) still runs; a pid reused by another process is not it."""
    return procs.read_identity(_build_file("pid"))


def provider_status() -> str:
    """One line on the provider: present, building (pid, log), failed (status, log), or not built."""
    log = _build_file("log")
    if provider_binary().exists():
        return f"v{required_provider()[1]} in {provider_mirror()}"
    pid = provider_build_pid()
    if pid is not None:
        return f"v{required_provider()[1]} building (pid {pid}, log {log})"
    status = _build_file("status")
    if status.exists():
        return f"v{required_provider()[1]}: its build failed (exit {status.read_text().strip()}); see {log}"
    return f"v{required_provider()[1]} not built: run scripts/bootstrap"


def wait_for_provider(progress: Callable[[str], None], timeout: float = 1800, poll: float = 1.0,
                      every: float = 30.0) -> None:
    """Return when the provider is in the mirror; while its build runs, wait and say so every `every`
    seconds. A failed or missing build, or one past `timeout`, is one line naming what to do."""
    t0 = last = time.monotonic()
    said = False
    while not provider_binary().exists():
        pid = provider_build_pid()
        if pid is None:
            if provider_binary().exists():  # finished between the two checks
                break
            raise SectorlabError(f"the libvirt provider is not there: {provider_status()}")
        now = time.monotonic()
        if not said or now - last >= every:
            progress(f"waiting for the libvirt provider's build (pid {pid}, {now - t0:.0f} s so far; "
                     f"log {_build_file('log')})")
            said, last = True, now
        if now - t0 > timeout:
            raise SectorlabError(f"the libvirt provider's build (pid {pid}) still runs after {timeout:.0f} s; "
                                 f"see {_build_file('log')}")
        time.sleep(poll)
    if said:
        progress(f"libvirt provider v{required_provider()[1]} built ({time.monotonic() - t0:.0f} s waited)")
