"""`sectorlab lab status` of a lab that is not up names the command that brings that lab up."""

from __future__ import annotations

import os

from labtests.unit import records
from sectorlab import cli, lab, labdef
from sectorlab.host import libvirt
from sectorlab.paths import REPO


def test_status_of_a_lab_that_is_not_up_names_its_lab_up(isolated_cache, capsys, monkeypatch):
    """Under a name of its own (a suffix): make test brings the behaviour lab up beside the unit
    tests, and lab status rightly names what libvirt holds of a lab of that name."""
    suffix = f"-unit{os.getpid()}"
    monkeypatch.setenv(labdef.SUFFIX_ENV, suffix)
    assert cli.main(["lab", "status", "--lab", "labs/behaviours.toml"]) == 1
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"no lab 'behaviours{suffix}' is up (") and out.endswith(
        f"run 'make lab-up LAB=labs/behaviours.toml LAB_SUFFIX={suffix}'"), out


def test_the_default_lab_is_brought_up_by_plain_make_lab_up():
    assert lab.lab_up_command(REPO / "labs" / "default.toml") == "make lab-up"
    assert lab.lab_up_command(None) == "make lab-up"
    assert lab.lab_up_command(REPO / "labs" / "my lab.toml") == f"make lab-up LAB='{REPO / 'labs' / 'my lab.toml'}'"


def test_a_lab_named_with_a_suffix_is_named_with_it_in_the_command(monkeypatch):
    monkeypatch.setenv(labdef.SUFFIX_ENV, "-db")
    assert lab.lab_up_command(None) == "make lab-up LAB_SUFFIX=-db"
    assert lab.lab_up_command(REPO / "labs" / "behaviours.toml") == \
        f"make lab-up LAB={REPO / 'labs' / 'behaviours.toml'} LAB_SUFFIX=-db"


HOLD = """import sys, time
from sectorlab.lab import state
with state.lab_lock(sys.argv[1], "lab up"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_second_lab_up_or_down_of_the_same_lab_is_refused_at_once(isolated_cache, monkeypatch, capsys):
    """While one process brings a lab up (it holds the lab's lock), another lab-up or lab-down of
    that lab is refused with the holder's process id, and touches nothing; another lab is free."""
    import subprocess
    import sys

    from sectorlab import images
    touched = []
    for module, name in ((libvirt.LibvirtHost, "virsh"), (images, "build"), (lab.terraform, "Terraform")):
        monkeypatch.setattr(module, name, lambda *a, _n=name, **k: touched.append(_n))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, "default"], stdout=subprocess.PIPE, text=True,
                              cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        for verb in ("up", "down"):
            assert cli.main(["lab", verb]) == 1
            err = capsys.readouterr().err.strip()
            assert err == (f"sectorlab: error: lab default: sectorlab lab up (process {holder.pid}) is bringing this "
                           f"lab up or down; wait for it to finish or stop it, then run 'lab {verb}' again"), err
        assert touched == []
        with lab.state.lab_lock("behaviours", "lab up"), lab.state.lab_lock("behaviours", "lab down"):  # re-entered
            pass
    finally:
        holder.kill()
        holder.wait()
    with lab.state.lab_lock("default", "lab up"):  # free again once the holder is gone
        pass


def test_faults_names_a_stopped_vm_and_a_gone_volume(tmp_path, monkeypatch):
    """What `lab status` and lab-up find from the host alone: one line per fault."""
    here = tmp_path / "here.qcow2"
    here.write_bytes(b"")
    data = records.lab({"lab1": records.vm(domain="sectorlab-x-lab1", uuid="u1", root_volume=str(here)),
                        "lab2": records.vm(domain="sectorlab-x-lab2", uuid="u2", root_volume=str(here))},
                       [records.disk(vm="lab1", name="a", volume=str(tmp_path / "gone.qcow2")),
                        records.disk(vm="lab2", name="b", volume=str(here))])
    states = {"sectorlab-x-lab1": "running\n", "sectorlab-x-lab2": "shut off\n"}
    by_uuid = {"u1": "sectorlab-x-lab1", "u2": "sectorlab-x-lab2"}
    monkeypatch.setattr(libvirt.LibvirtHost, "virsh", lambda host, verb, uuid, check=True: states[by_uuid[uuid]])
    assert lab.faults(data) == [
        "lab2: domain sectorlab-x-lab2 is shut off, not running (destroyed, or its QEMU was killed)",
        f"lab1 disk a: volume {tmp_path / 'gone.qcow2'} is gone (deleted while the lab ran)"]
    states["sectorlab-x-lab2"] = "running\n"
    (tmp_path / "gone.qcow2").write_bytes(b"")
    assert lab.faults(data) == []


def test_domain_states_are_asked_by_the_recorded_uuid(monkeypatch):
    """A domain of the lab's name that is not the lab's (its own gone, another's defined since) is
    not taken for the lab's: libvirt is asked by the UUID lab.json recorded."""
    asked = []
    by_uuid = {"8ca2c1dd-6825-5522-a72d-9fe1a492dfa7": ""}  # the lab's domain: undefined now

    def run(host, verb, domain, check=True):
        asked.append(domain)
        return by_uuid.get(domain, "running\n")

    monkeypatch.setattr(libvirt.LibvirtHost, "virsh", run)
    data = records.lab({"lab1": records.vm(domain="sectorlab-x-lab1", uuid="8ca2c1dd-6825-5522-a72d-9fe1a492dfa7")},
                       [])
    assert lab.teardown.domain_states(data) == {"lab1": "absent"}
    assert asked == ["8ca2c1dd-6825-5522-a72d-9fe1a492dfa7"]
