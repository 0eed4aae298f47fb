"""Where the host tools the project installs itself live: the libvirt provider's filesystem mirror,
the project-local Terraform CLI config, and OpenTofu when there is no terraform.
scripts/bootstrap creates them; these functions only answer where they are."""

from __future__ import annotations

import shutil
from pathlib import Path

from .paths import cache_dir

PROVIDER_VERSION = "0.8.3"
PROVIDER_SOURCE = "dmacvicar/libvirt"


def tools_dir() -> Path:
    return cache_dir() / "tools"


def provider_mirror() -> Path:
    return tools_dir() / "terraform-mirror"


def provider_binary(host: str = "registry.terraform.io") -> Path:
    return (provider_mirror() / host / PROVIDER_SOURCE / PROVIDER_VERSION / "linux_amd64"
            / f"terraform-provider-libvirt_v{PROVIDER_VERSION}")


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
