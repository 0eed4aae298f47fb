"""Ownership by identity (sectorlab/ownership.py), without libvirt: which domains a lab takes for
its own, and what a lab-up refuses. The case that made a lab-down destroy another lab: lab
`default` and lab `default-db` share a prefix, and lab default's VM `db-lab1` and lab default-db's
VM `lab1` share the domain name sectorlab-default-db-lab1."""

from __future__ import annotations

import pytest

from sectorlab import ownership
from sectorlab.errors import UsageError

MACHINE, OTHER_MACHINE = "aa" * 16, "bb" * 16
OURS = ownership.Identity("default", "11" * 16, MACHINE, "here", "/root/.cache/sectorlab")


def dom(name: str, owner: ownership.Identity | None, uuid: str = "u", sources=()) -> ownership.Domain:
    return ownership.Domain(name, uuid, owner, list(sources))


def identity(lab: str, lab_id: str, machine: str = MACHINE, cache: str = "/root/.cache/sectorlab", vm: str = ""):
    return ownership.Identity(lab, lab_id, machine, "h", cache, vm)


def test_a_domain_is_the_labs_own_by_its_identity_not_its_name():
    legacy = {"sectorlab-default-lab1": ownership.legacy_uuid("default", "lab1")}
    own = dom("sectorlab-default-lab1", identity("default", OURS.id, vm="lab1"))
    other_lab = dom("sectorlab-default-db-lab1", identity("default-db", "22" * 16, vm="lab1"))
    # The name lab default's VM db-lab1 would have, held by lab default-db.
    assert ownership.is_own(own, OURS, legacy)
    assert not ownership.is_own(other_lab, OURS, legacy)
    # The same lab name in another cache, or on another machine with the same cache path: another's.
    assert not ownership.is_own(dom("sectorlab-default-lab1", identity("default", "33" * 16, cache="/srv/ci")),
                                OURS, legacy)
    assert not ownership.is_own(dom("sectorlab-default-lab1", identity("default", "33" * 16, OTHER_MACHINE)),
                                OURS, legacy)
    # This cache's own lab whose id file was lost (another id, same machine and cache): its own.
    assert ownership.is_own(dom("sectorlab-default-lab1", identity("default", "44" * 16)), OURS, legacy)
    # No id known here (lab-down after the cache's labs directory was lost): by machine and cache.
    no_id = ownership.Identity("default", "", MACHINE, "here", OURS.cache)
    assert ownership.is_own(own, no_id, legacy)


def test_a_domain_without_identity_is_own_only_by_its_exact_name_and_uuid():
    legacy = {"sectorlab-default-lab1": ownership.legacy_uuid("default", "lab1")}
    assert ownership.is_own(dom("sectorlab-default-lab1", None, legacy["sectorlab-default-lab1"]), OURS, legacy)
    assert not ownership.is_own(dom("sectorlab-default-lab1", None, "3b951c4c-3f05-490f-bd33-830c529e78f6"),
                                OURS, legacy)
    # The reproduction: a bare domain named as a lab default-db VM would be.
    assert not ownership.is_own(dom("sectorlab-default-db-lab1", None), OURS, legacy)
    assert ownership.legacy_uuid("default", "db-lab1") != ownership.legacy_uuid("default-db", "lab1")


def holdings(*domains: ownership.Domain, vms=("lab1",)) -> ownership.Holdings:
    legacy = {ownership.domain_name("default", vm): ownership.legacy_uuid("default", vm) for vm in vms}
    own = [d for d in domains if ownership.is_own(d, OURS, legacy)]
    return ownership.Holdings(OURS, own, [d for d in domains if d not in own], "sectorlab-default",
                              "/var/lib/libvirt/images/sectorlab-default")


def test_a_lab_up_whose_domain_name_is_taken_names_the_owner():
    taken = dom("sectorlab-default-db-lab1", identity("default-db", "22" * 16, vm="lab1"))
    with pytest.raises(UsageError, match="VM db-lab1 would be domain sectorlab-default-db-lab1, but libvirt has "
                                         "domain sectorlab-default-db-lab1 of lab default-db \\(its VM lab1\\); "
                                         "rename VM db-lab1 or this lab"):
        ownership.refuse_collisions(holdings(taken, vms=("db-lab1",)), ["db-lab1"])
    bare = dom("sectorlab-default-db-lab1", None, "3b95")
    with pytest.raises(UsageError, match="carries no sectorlab identity.*'virsh undefine sectorlab-default-db-lab1'"):
        ownership.refuse_collisions(holdings(bare, vms=("db-lab1",)), ["db-lab1"])
    # The lab's own domain of that name is no collision; another lab's domain of another name neither.
    ownership.refuse_collisions(holdings(dom("sectorlab-default-lab1", identity("default", OURS.id)), taken),
                                ["lab1"])


def test_the_pool_is_anothers_while_anothers_domain_uses_it():
    other_cache = identity("default", "55" * 16, cache="/srv/other")
    by_path = dom("sectorlab-default-vm9", other_cache, sources=["/var/lib/libvirt/images/sectorlab-default/a.qcow2"])
    by_pool = dom("sectorlab-default-vm9", other_cache, sources=["pool:sectorlab-default"])
    beside = dom("sectorlab-default-db-lab1", identity("default-db", "22" * 16),
                 sources=["/var/lib/libvirt/images/sectorlab-default-db/lab1-root.qcow2"])  # a prefix, not inside
    assert holdings(by_path).pool_holder() is by_path and holdings(by_pool).pool_holder() is by_pool
    assert holdings(beside).pool_holder() is None
    with pytest.raises(UsageError, match="its pool sectorlab-default .* is used by domain sectorlab-default-vm9 of "
                                         "another lab named default \\(the sectorlab on h with cache /srv/other"):
        ownership.refuse_collisions(holdings(by_path), ["lab1"])


def test_parse_domain_reads_the_identity_and_disk_sources():
    xml = """<domain type='qemu'><name>sectorlab-default-lab1</name><uuid>u-1</uuid>
      <metadata><other xmlns="urn:x"/><sectorlab:lab xmlns:sectorlab="urn:sectorlab:lab:1" lab="default" vm="lab1"
        lab_id="0123" machine="m" host="h" cache="/c &amp; d"/></metadata>
      <devices><disk type='volume'><source pool='sectorlab-default' volume='lab1-root.qcow2'/></disk>
      <disk type='file'><source file='/var/lib/x.qcow2'/></disk></devices></domain>"""
    d = ownership.parse_domain(xml)
    assert d.name == "sectorlab-default-lab1" and d.uuid == "u-1"
    assert d.owner == ownership.Identity("default", "0123", "m", "h", "/c & d", "lab1")
    assert d.sources == ["pool:sectorlab-default", "/var/lib/x.qcow2"]
    assert ownership.parse_domain("<domain><name>x</name><uuid>u</uuid></domain>").owner is None


def test_scan_reads_every_domain_in_one_virsh_call(monkeypatch):
    calls = []
    a = "<domain><name>a</name><uuid>1</uuid></domain>"

    def run(uri, *args, check=True, timeout=300):
        calls.append(args)
        if args[0] == "list":
            return "1\n2\n"
        # the second domain went away between the two calls: virsh said nothing for it
        return f"{ownership._MARK}{a}\n{ownership._MARK}"

    monkeypatch.setattr(ownership.virsh, "run", run)
    assert [d.name for d in ownership.scan("qemu:///system")] == ["a"]
    assert len(calls) == 2 and calls[1][0].count("dumpxml") == 2


def test_the_lab_id_is_made_once_and_kept_beside_the_state_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path))
    assert ownership.identity("default").id == ""  # lab-down and status never make one
    made = ownership.identity("default", create=True)
    assert len(made.id) == 32 and ownership.identity("default").id == made.id
    assert ownership.id_file("default") == tmp_path / "labs" / ".id-default"
    assert ownership.identity("default-db", create=True).id != made.id
    assert made.cache == str(tmp_path)
