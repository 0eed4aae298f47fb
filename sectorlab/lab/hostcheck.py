"""What a lab definition needs of the libvirt hosts it names, checked before anything is made: the
URIs answer, the lab's volumes and memory fit, fixed SSH ports are free on the host's 127.0.0.1.
The definition itself (labdef) is checked without any host."""

from __future__ import annotations

import subprocess
from typing import Callable

from ..errors import SectorlabError, UsageError
from ..host import libvirt, remote
from ..labdef import Lab
from . import modelled


def port_in_use(port: int) -> bool:
    """Whether something listens on this host's 127.0.0.1:port."""
    return libvirt.get_host("qemu:///system").port_in_use(port)


def check_environment(lab: Lab, own_ports: set[int] = frozenset(),
                      holder_of: Callable[[int], str | None] = lambda port: None,
                      pool_dir: Callable[[str], str] | None = None) -> None:
    """Host-dependent checks: libvirt URIs answer, the lab fits the host's disk and memory
    (check_capacity, with `pool_dir` naming where its volumes go), fixed SSH ports are free (or
    already this lab's) on the libvirt host's 127.0.0.1. `holder_of` names what holds a port
    (another lab's VM) when it knows."""
    for uri in sorted({vm.libvirt_uri for vm in lab.vms}):
        check_uri(uri)
    if pool_dir is not None:
        check_capacity(lab, pool_dir)
    hosts = {uri: libvirt.get_host(uri) for uri in {vm.libvirt_uri for vm in lab.vms if vm.ssh_port}}
    for vm in lab.vms:
        where = hosts.get(vm.libvirt_uri)
        if vm.ssh_port and vm.ssh_port not in own_ports and where.port_in_use(vm.ssh_port):
            holder = holder_of(vm.ssh_port)
            raise UsageError(f"vm {vm.name}: ssh_port {vm.ssh_port} on 127.0.0.1 is already taken"
                             f"{f' on {where.label}' if where.remote else ''}"
                             f"{f' (by {holder})' if holder else ''}; choose another port or 0 to let lab-up "
                             f"pick one")


def check_capacity(lab: Lab, pool_dir: Callable[[str], str]) -> None:
    """Before anything of the lab is made: its data volumes' full size fits the free space where
    they go (the volumes are thin, but the scenarios and benches may write them whole), counting
    what the lab's pool already holds as free (a running lab's own volumes), and its VMs' memory
    fits the libvirt host's."""
    for uri in sorted({vm.libvirt_uri for vm in lab.vms}):
        vms = [vm for vm in lab.vms if vm.libvirt_uri == uri]
        host = libvirt.get_host(uri)
        where = f" on {host.label}" if host.remote else ""
        want = sum(d.size_mib for vm in vms for d in vm.disks if not vm.profile(d)) << 20  # model-served: in RAM
        free, own = host.space(pool_dir(lab.name))
        if want > free + own:
            raise UsageError(f"lab {lab.name}: its data disks add up to {want / 2**30:,.1f} GiB, and "
                             f"{pool_dir(lab.name)}{where} has {(free + own) / 2**30:,.1f} GiB free; make "
                             f"size_mib smaller, the lab smaller, or free space there")
        memory = sum(vm.memory_mib for vm in vms) << 20
        total = host.memory_bytes()
        if memory > total:
            raise UsageError(f"lab {lab.name}: its VMs' memory adds up to {memory >> 20} MiB, more than the "
                             f"{total >> 20} MiB of the libvirt host{where}; make memory_mib smaller or the lab "
                             f"smaller")
        modelled.check(lab, host)


def check_uri(uri: str) -> None:
    if remote.is_remote(uri):  # the host's key and sectorlab's own SSH first: they name what is wrong
        try:
            remote.client(uri)
        except SectorlabError as e:
            raise UsageError(str(e)) from e
    try:
        proc = subprocess.run(["virsh", "-c", remote.virsh_uri(uri), "uri"], capture_output=True, text=True,
                              timeout=30)
    except FileNotFoundError as e:
        raise UsageError("virsh is not installed; run scripts/bootstrap") from e
    except subprocess.TimeoutExpired as e:
        raise UsageError(f"libvirt URI {uri}: no answer in 30 s; check that libvirtd runs there") from e
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no message"
        if remote.is_remote(uri):
            raise UsageError(f"libvirt URI {uri} is unreachable ({detail}); check that SSH reaches "
                             f"{remote.ssh_host(uri).label} with its key and known_hosts entry and that libvirtd "
                             f"runs there, or fix libvirt_uri")
        raise UsageError(f"libvirt URI {uri} is unreachable ({detail}); start libvirtd (scripts/bootstrap does "
                         f"on this host) or fix libvirt_uri")
