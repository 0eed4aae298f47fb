"""Accelerator detection: KVM only on a real probe; /dev/kvm alone is never trusted."""

from __future__ import annotations

import pytest

from labtests.conftest import require_program
from sectorlab.errors import UsageError
from sectorlab.host import accel

CPUINFO_VMX = "processor\t: 0\nflags\t\t: fpu vme de pse vmx sse2\n"
CPUINFO_SVM = "processor\t: 0\nflags\t\t: fpu svm lm\nprocessor\t: 1\nflags\t\t: fpu svm lm\n"
CPUINFO_NONE = "processor\t: 0\nflags\t\t: fpu vme de pse hypervisor sse2\n"


def test_cpu_flags_found():
    assert accel.cpu_virt_flags(CPUINFO_VMX) == {"vmx"}
    assert accel.cpu_virt_flags(CPUINFO_SVM) == {"svm"}


def test_cpu_flags_absent_even_with_similar_words():
    assert accel.cpu_virt_flags(CPUINFO_NONE) == set()
    assert accel.cpu_virt_flags("model name\t: svm-like vmx CPU\n") == set()


def test_no_flags_means_tcg_even_with_dev_kvm(tmp_path):
    fake_kvm = tmp_path / "kvm"
    fake_kvm.write_text("")
    found = accel.probe(cpuinfo=CPUINFO_NONE, kvm_device=str(fake_kvm))
    assert found.name == "tcg"
    assert "neither vmx nor svm" in found.reason and "not trusted" in found.reason
    assert found.libvirt_domain_type == "qemu"


def test_flags_but_no_working_device_means_tcg(tmp_path):
    found = accel.probe(cpuinfo=CPUINFO_VMX, kvm_device=str(tmp_path / "missing"))
    assert found.name == "tcg"
    assert "KVM_GET_API_VERSION" in found.reason


def test_a_regular_file_is_not_a_kvm_device(tmp_path):
    fake = tmp_path / "kvm"
    fake.write_text("")
    assert accel.kvm_api_version(str(fake)) is None


def test_boot_sector_layout():
    sector = accel.boot_sector()
    assert len(sector) == 512
    assert sector[-2:] == b"\x55\xaa"
    assert sector[:4] == bytes([0xB0, 0x01, 0xE6, 0xF4])  # mov al,1; out 0xf4,al


def test_boot_sector_runs_under_tcg():
    """The probe payload really executes: under TCG it reaches the debug-exit port."""
    require_program(accel.QEMU)
    ok, why = accel.run_boot_sector("tcg", timeout=60)
    assert ok, why


def test_forced_accelerator(isolated_cache, monkeypatch):
    monkeypatch.setenv("SECTORLAB_ACCEL", "tcg")
    assert accel.detect().name == "tcg"
    monkeypatch.setenv("SECTORLAB_ACCEL", "hvf")
    with pytest.raises(UsageError, match="SECTORLAB_ACCEL='hvf': expected 'kvm' or 'tcg'"):
        accel.detect()


def test_verdict_is_cached_per_boot(isolated_cache, monkeypatch):
    calls = []

    def fake_probe(kernel=None):
        calls.append(kernel)
        return accel.Accelerator("tcg", "fake probe")

    monkeypatch.setattr(accel, "probe", fake_probe)
    first = accel.detect()
    second = accel.detect()
    assert len(calls) == 1
    assert first.name == second.name == "tcg"
    assert "cached for this boot" in second.reason
    accel.detect(refresh=True)
    assert len(calls) == 2
