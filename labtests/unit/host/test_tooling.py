"""The libvirt provider's background build (scripts/build-provider) as Terraform's callers see it:
waited for while the very process its pid file names runs, refused in one line otherwise."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from sectorlab.errors import SectorlabError
from sectorlab.host import tooling
from sectorlab.paths import REPO


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path))
    (tmp_path / "tools").mkdir()
    return tmp_path


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def _pid_file(pid: int, start: str) -> None:
    (tooling.tools_dir() / "provider-build.pid").write_text(f"{pid} {start}\n")


def _make_binary() -> None:
    tooling.provider_binary().parent.mkdir(parents=True, exist_ok=True)
    tooling.provider_binary().write_text("#!/bin/sh\n")


def test_present_provider_returns_at_once_and_says_nothing(cache):
    _make_binary()
    said: list[str] = []
    tooling.wait_for_provider(said.append)
    assert said == []
    assert tooling.provider_status().startswith(f"v{tooling.required_provider()[1]} in ")


def test_waits_while_the_named_process_runs_then_says_it_is_built(cache):
    with subprocess.Popen(["sleep", "30"]) as sleeper:
        _pid_file(sleeper.pid, _start_time(sleeper.pid))
        assert tooling.provider_build_pid() == sleeper.pid
        assert "building (pid" in tooling.provider_status()
        timer = threading.Timer(0.5, _make_binary)
        timer.start()
        said: list[str] = []
        tooling.wait_for_provider(said.append, poll=0.05)
        timer.join()
        sleeper.kill()
    assert said[0].startswith(f"waiting for the libvirt provider's build (pid {sleeper.pid}")
    assert said[-1].startswith(f"libvirt provider v{tooling.required_provider()[1]} built")


def test_a_reused_pid_is_not_the_build(cache):
    """The pid file names this very process but another start time: a pid the kernel gave again."""
    _pid_file(os.getpid(), str(int(_start_time(os.getpid())) + 1))
    assert tooling.provider_build_pid() is None
    with pytest.raises(SectorlabError, match="not built: run scripts/bootstrap"):
        tooling.wait_for_provider(lambda _m: None)


def test_a_failed_build_names_its_status_and_log(cache):
    (tooling.tools_dir() / "provider-build.status").write_text("1\n")
    with pytest.raises(SectorlabError) as e:
        tooling.wait_for_provider(lambda _m: None)
    assert "its build failed (exit 1)" in str(e.value)
    assert str(tooling.tools_dir() / "provider-build.log") in str(e.value)


def test_a_build_past_its_timeout_is_refused_naming_the_pid(cache):
    with subprocess.Popen(["sleep", "30"]) as sleeper:
        _pid_file(sleeper.pid, _start_time(sleeper.pid))
        with pytest.raises(SectorlabError, match=f"build \\(pid {sleeper.pid}\\) still runs after 0 s"):
            tooling.wait_for_provider(lambda _m: None, timeout=0.2, poll=0.05)
        sleeper.kill()


def test_the_script_and_python_agree_on_the_running_build(cache):
    """scripts/build-provider --running reads the same pid file the same way."""
    script = REPO / "scripts" / "build-provider"
    env = dict(os.environ, SECTORLAB_CACHE=str(cache))
    with subprocess.Popen(["sleep", "30"]) as sleeper:
        _pid_file(sleeper.pid, _start_time(sleeper.pid))
        out = subprocess.run([script, "--running"], env=env, capture_output=True, text=True)
        assert (out.returncode, out.stdout.strip()) == (0, str(sleeper.pid))
        sleeper.kill()
        sleeper.wait()
    out = subprocess.run([script, "--running"], env=env, capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == ""
    bad = subprocess.run([script, "--bogus"], env=env, capture_output=True, text=True)
    assert bad.returncode == 1
    assert "unknown argument '--bogus': expected nothing, --running or --wait" in bad.stderr


def test_the_provider_version_is_the_one_terraform_requires_for_python_and_the_scripts():
    versions = (REPO / "terraform" / "versions.tf").read_text()
    assert f'source  = "{tooling.required_provider()[0]}"' in versions
    assert f'version = "{tooling.required_provider()[1]}"' in versions
    env = {**os.environ, "SECTORLAB_CACHE": str(tooling.cache_dir())}
    out = subprocess.run(["bash", "-c", f"source {REPO}/scripts/lib.sh && echo $PROVIDER_VERSION $PROVIDER_BINARY"],
                         capture_output=True, text=True, env=env)
    version, binary = out.stdout.split()
    assert (version, binary) == (tooling.required_provider()[1], str(tooling.provider_binary())), out


def test_bootstraps_at_once_each_finish_and_leave_one_whole_config():
    """Every `make` runs scripts/bootstrap, and makes run side by side (two terminals, the suite's
    workers): each run writes the Terraform CLI config under a name of its own and renames it, so
    none fails on another's file and no half-written or stray file is left."""
    tools = tooling.tools_dir()
    if not (tools / "terraform.rc").is_file():
        pytest.skip("scripts/bootstrap has not run on this host (make runs it)")
    runs = [subprocess.Popen([str(REPO / "scripts" / "bootstrap")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True) for _ in range(4)]
    said = [(r.wait(timeout=300), r.stderr.read()) for r in runs]
    assert [status for status, _ in said] == [0] * 4, said
    assert sorted(p.name for p in tools.glob("terraform.rc*")) == ["terraform.rc"]
    assert sorted(p.name for p in tools.glob("terraform.version*")) == ["terraform.version"]
    text = (tools / "terraform.rc").read_text()
    assert text.startswith("# Written by scripts/bootstrap") and text.rstrip().endswith("disable_checkpoint = true")


def _terraform_version(tools: Path, binary: Path) -> str:
    """scripts/bootstrap's terraform_version, the function as the script has it, run on `binary`."""
    script = (REPO / "scripts" / "bootstrap").read_text()
    function = script[script.index("terraform_version() {"):]
    function = function[:function.index("\n}\n") + 3]
    out = subprocess.run(["bash", "-c", f'set -euo pipefail; {function}\ntools=$1; terraform_version "$2"', "bash",
                          str(tools), str(binary)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_terraform_is_asked_its_version_once_while_the_binary_is_the_same(tmp_path):
    """Every make runs scripts/bootstrap; the version terraform gives is kept beside the binary's
    identity, so terraform is started again only when the binary changed (or says nothing)."""
    calls = tmp_path / "calls"
    fake = tmp_path / "terraform"
    fake.write_text(f'#!/bin/sh\necho x >>{calls}\necho \'{{"terraform_version": "1.11.4", "platform": "linux"}}\'\n')
    fake.chmod(0o755)
    assert [_terraform_version(tmp_path, fake) for _ in range(3)] == ["1.11.4"] * 3
    assert calls.read_text().count("x") == 1
    fake.write_text(f"#!/bin/sh\necho x >>{calls}\necho 'Terraform v1.12.0'\n")  # another binary
    assert [_terraform_version(tmp_path, fake) for _ in range(2)] == ["present"] * 2
    assert calls.read_text().count("x") == 3  # a binary that says no version is asked again, not kept
    assert sorted(p.name for p in tmp_path.glob("terraform.version*")) == ["terraform.version"]
