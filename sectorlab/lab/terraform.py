"""Terraform (or OpenTofu) over terraform/, with the project's own CLI config and the lab's state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import SectorlabError
from ..host import tooling
from ..paths import REPO
from .state import Progress, load_json, say

TERRAFORM_DIR = REPO / "terraform"


class Terraform:
    def __init__(self, state: Path, progress: Progress):
        self.state = state
        self.progress = progress
        binary = tooling.terraform_binary()
        if binary is None:
            raise SectorlabError("neither terraform nor OpenTofu is installed; run scripts/bootstrap")
        self.binary = str(binary)
        tooling.wait_for_provider(progress)  # scripts/bootstrap builds it in the background

    def env(self) -> dict:
        env = dict(os.environ)
        env["TF_CLI_CONFIG_FILE"] = str(tooling.cli_config())
        env["TF_DATA_DIR"] = str(self.state / ".terraform")
        env["TF_IN_AUTOMATION"] = "1"
        env["CHECKPOINT_DISABLE"] = "1"
        return env

    def run(self, *args: str, capture: bool = False, log: Path | None = None) -> str:
        """Run terraform; with `log`, its whole output goes there and only a failure's tail is shown."""
        cmd = [self.binary, f"-chdir={TERRAFORM_DIR}", *args]
        if log is not None:
            with open(log, "w") as out:
                proc = subprocess.run(cmd, env=self.env(), text=True, stdout=out, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                tail = log.read_text().strip().splitlines()[-15:]
                print("\n".join(tail), file=sys.stderr)
                raise SectorlabError(f"{Path(self.binary).name} {args[0]} failed (exit {proc.returncode}); "
                                     f"the end of its output is above, all of it in {log}")
            return ""
        proc = subprocess.run(cmd, env=self.env(), text=True,
                              stdout=subprocess.PIPE if capture else None,
                              stderr=subprocess.PIPE if capture else None)
        if proc.returncode != 0:
            detail = (proc.stderr or "").strip().splitlines()[-5:] if capture else ["see its output above"]
            raise SectorlabError(f"{Path(self.binary).name} {args[0]} failed (exit {proc.returncode}): "
                                 + " ".join(detail))
        return proc.stdout or ""

    def init(self) -> None:
        if not tooling.cli_config().exists():
            raise SectorlabError(f"{tooling.cli_config()} is missing: run scripts/bootstrap (it builds the "
                                 f"libvirt provider mirror)")
        self.run("init", "-input=false", "-no-color", "-upgrade=false",
                 f"-backend-config=path={self.state / 'terraform.tfstate'}", capture=True)

    def outputs(self) -> dict:
        """The root module's outputs, read from the local state file (no second terraform run)."""
        raw = load_json(self.state / "terraform.tfstate", {}).get("outputs")
        if not raw:
            raw = json.loads(self.run("output", "-json", capture=True) or "{}")
        return {k: v["value"] for k, v in raw.items()}


def terraform_check(progress: Progress = say) -> None:
    """terraform fmt -check and validate of terraform/ (init against the local provider mirror)."""
    with tempfile.TemporaryDirectory(prefix="sectorlab-tfcheck-") as tmp:
        tf = Terraform(Path(tmp), progress)
        tf.run("fmt", "-check", "-diff", capture=True)
        tf.run("init", "-input=false", "-no-color", "-backend=false", capture=True)
        tf.run("validate", "-no-color", capture=True)
    progress(f"{Path(tf.binary).name} fmt and validate of {TERRAFORM_DIR}: ok")
