"""A Ctrl-C of a whole `make test` (`make alone`; CI runs it): SIGINT to make's process group, as a
terminal sends it, once the labs lane has its lab up and runs scenarios while the databases lane
runs its own steps beside it. make exits non-zero saying it was interrupted and where each lane
stopped; every lab it brought up is taken down on the way out (the lab-runs trap SIGINT and still
run their lab-down), so afterwards no domain, pool, QEMU process, lab state or lab-up lock holder
of it is left; and then `make lab-up` works.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from labtests.support.lab import project_domains, qemu_guest, qemu_processes
from sectorlab import lab as lab_mod
from sectorlab.paths import REPO, cache_dir

pytestmark = pytest.mark.alone

LOCAL = "qemu:///system"


def _domains() -> list[str]:
    return project_domains(LOCAL)


def test_ctrl_c_of_make_test_takes_its_labs_down():
    if _domains():
        pytest.fail(f"make alone needs no lab up; domains {', '.join(_domains())} exist: take their labs down first")
    # A shell that started this test in the background made SIGINT ignored: restore it for make.
    proc = subprocess.Popen(["make", "--no-print-directory", "test"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 600
        for line in proc.stdout:
            lines.append(line)
            if "labs | sectorlab: lab default up by" in line:
                break
            assert time.monotonic() < deadline, "".join(lines[-50:])
        else:
            pytest.fail(f"make test ended (exit {proc.wait()}) before its labs lane had its lab up:\n"
                        + "".join(lines[-50:]))
        time.sleep(20)  # into the scenarios of one lane and the steps of the other
        up_at_signal = _domains()
        os.killpg(proc.pid, signal.SIGINT)
        t = time.monotonic()
        lines.extend(proc.stdout)
        rc = proc.wait(timeout=600)
        stopped_in = time.monotonic() - t
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out = "".join(lines)
    assert rc != 0, out[-5000:]
    assert "make test: interrupted after" in out, out[-5000:]
    assert "labs | make: interrupted; taking the lab down" in out, out[-5000:]
    assert "labs | sectorlab: lab default is down" in out, out[-5000:]
    assert up_at_signal, "no lab was up when the signal was sent: the test interrupted nothing"
    # Nothing of make test is left on the host.
    assert _domains() == [], out[-5000:]
    assert [p for d in up_at_signal for p in qemu_processes(qemu_guest(d))] == [], out[-5000:]
    labs = cache_dir() / "labs"
    assert not [p for p in labs.glob("*/lab.json")], [str(p) for p in labs.glob("*/lab.json")]
    assert not [p for p in labs.rglob("*.tmp")]
    print(f"make test interrupted with {', '.join(up_at_signal)} up; make exited {rc} {stopped_in:.1f} s later")
    # And the next lab-up works.
    for target in ("lab-up", "lab-down"):
        done = subprocess.run(["make", "--no-print-directory", target], cwd=REPO, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _domains() == [] and not lab_mod.state_dir("default").exists()
