"""Ownership by identity (sectorlab/lab/ownership.py), without libvirt: which domains a lab takes for
its own, and what a lab-up refuses. The case that made a lab-down destroy another lab: lab
`default` and lab `default-db` share a prefix, and lab default's VM `db-lab1` and lab default-db's
VM `lab1` share the domain name sectorlab-default-db-lab1."""

from __future__ import annotations

import pytest

from sectorlab.errors import SectorlabError, UsageError
from sectorlab.host import libvirt
from sectorlab.lab import ownership

MACHINE, OTHER_MACHINE = "aa" * 16, "bb" * 16
OURS = ownership.Identity("default", "11" * 16, MACHINE, "here", "/root/.cache/sectorlab")
OWN_DIR = "/var/lib/libvirt/images/sectorlab-default"


def dom(name: str, owner: ownership.Identity | None, uuid: str = "u", sources=()) -> ownership.Domain:
    return ownership.Domain(name, uuid, owner, list(sources))


def identity(lab: str, lab_id: str, machine: str = MACHINE, cache: str = "/root/.cache/sectorlab", vm: str = ""):
    return ownership.Identity(lab, lab_id, machine, "h", cache, vm)


def test_a_domain_is_the_labs_own_by_its_identity_not_its_name():
    own = dom("sectorlab-default-lab1", identity("default", OURS.id, vm="lab1"))
    other_lab = dom("sectorlab-default-db-lab1", identity("default-db", "22" * 16, vm="lab1"))
    # The name lab default's VM db-lab1 would have, held by lab default-db.
    assert ownership.is_own(own, OURS)
    assert not ownership.is_own(other_lab, OURS)
    # The same lab name in another cache, or on another machine with the same cache path: another's.
    assert not ownership.is_own(dom("sectorlab-default-lab1", identity("default", "33" * 16, cache="/srv/ci")), OURS)
    assert not ownership.is_own(dom("sectorlab-default-lab1", identity("default", "33" * 16, OTHER_MACHINE)), OURS)
    # Another id from this very machine and cache, while this cache knows the lab's id: another's
    # (runners cloned from one image share machine id and cache path).
    assert not ownership.is_own(dom("sectorlab-default-lab1", identity("default", "44" * 16)), OURS)
    # No id known here (the cache's labs directory was lost): what this machine, host and cache made.
    no_id = ownership.Identity("default", "", MACHINE, "h", OURS.cache)
    assert ownership.is_own(dom("sectorlab-default-lab1", identity("default", "44" * 16)), no_id)
    assert not ownership.is_own(dom("sectorlab-default-lab1", identity("default", "44" * 16, cache="/srv")), no_id)


def test_a_domain_without_identity_is_own_only_by_its_exact_uuid():
    made_before = ownership.legacy_uuid("default", "lab1")
    assert ownership.is_own(dom("sectorlab-default-lab1", None, made_before), OURS)
    # Also a VM the lab definition no longer lists: its UUID is uuid5 of exactly this lab and VM.
    assert ownership.is_own(dom("sectorlab-default-old", None, ownership.legacy_uuid("default", "old")), OURS)
    assert not ownership.is_own(dom("sectorlab-default-lab1", None, "3b951c4c-3f05-490f-bd33-830c529e78f6"), OURS)
    # The reproduction: a bare domain named as a lab default-db VM would be.
    assert not ownership.is_own(dom("sectorlab-default-db-lab1", None), OURS)
    # lab default-db's VM lab1, made before: the same name as lab default's VM db-lab1, another UUID.
    bare_db = dom("sectorlab-default-db-lab1", None, ownership.legacy_uuid("default-db", "lab1"))
    assert not ownership.is_own(bare_db, OURS)
    assert ownership.is_own(bare_db, ownership.Identity("default-db", "", MACHINE, "h", "/c"))


def holdings(*domains: ownership.Domain, target: str | None = None) -> ownership.Holdings:
    own = [d for d in domains if ownership.is_own(d, OURS)]
    return ownership.Holdings(OURS, own, [d for d in domains if d not in own], "sectorlab-default",
                              "/var/lib/libvirt/images/sectorlab-default", target)


def test_a_lab_up_whose_domain_name_is_taken_names_the_owner():
    taken = dom("sectorlab-default-db-lab1", identity("default-db", "22" * 16, vm="lab1"))
    with pytest.raises(UsageError, match="VM db-lab1 would be domain sectorlab-default-db-lab1, but libvirt has "
                                         "domain sectorlab-default-db-lab1 of lab default-db \\(its VM lab1\\); "
                                         "rename VM db-lab1 or this lab"):
        ownership.refuse_collisions(holdings(taken), ["db-lab1"])
    bare = dom("sectorlab-default-db-lab1", None, "3b95")
    with pytest.raises(UsageError, match="carries no sectorlab identity.*'virsh undefine sectorlab-default-db-lab1'"):
        ownership.refuse_collisions(holdings(bare), ["db-lab1"])
    # The lab's own domain of that name is no collision; another lab's domain of another name neither.
    ownership.refuse_collisions(holdings(dom("sectorlab-default-lab1", identity("default", OURS.id)), taken),
                                ["lab1"])


def test_the_pool_is_anothers_while_anothers_domain_uses_it_or_it_points_elsewhere():
    other_cache = identity("default", "55" * 16, cache="/srv/other")
    by_path = dom("sectorlab-default-vm9", other_cache, sources=["/var/lib/libvirt/images/sectorlab-default/a.qcow2"])
    by_pool = dom("sectorlab-default-vm9", other_cache, sources=["pool:sectorlab-default"])
    beside = dom("sectorlab-default-db-lab1", identity("default-db", "22" * 16),
                 sources=["/var/lib/libvirt/images/sectorlab-default-db/lab1-root.qcow2"])  # a prefix, not inside
    assert holdings(by_path).pool_holder() is by_path and holdings(by_pool).pool_holder() is by_pool
    assert holdings(beside).pool_holder() is None and holdings(beside, target=OWN_DIR).pool_is_own()
    with pytest.raises(UsageError, match="its pool sectorlab-default .* is used by domain sectorlab-default-vm9 of "
                                         "another lab named default \\(the sectorlab on h with cache /srv/other"):
        ownership.refuse_collisions(holdings(by_path), ["lab1"])
    elsewhere = holdings(target="/srv/pools/x")
    assert elsewhere.pool_foreign() and not elsewhere.pool_is_own()
    with pytest.raises(UsageError, match="a pool named sectorlab-default at /srv/pools/x, not at the lab's"):
        ownership.refuse_collisions(elsewhere, ["lab1"])


def test_a_lab_up_takes_again_the_id_its_own_domains_carry(monkeypatch, tmp_path):
    """The cache's labs directory lost while the lab runs: lab-down and the next lab-up still know
    the lab's domains (by machine, host and cache), and the lab-up takes their id again."""
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path))
    lost = ownership.identity("default")
    assert lost.id == ""
    running = dom("sectorlab-default-lab1", ownership.Identity("default", "66" * 16, lost.machine, lost.host,
                                                                 lost.cache, "lab1"))
    held = ownership.Holdings(lost, [running], [], "sectorlab-default", OWN_DIR)
    assert ownership.is_own(running, lost) and held.adoptable_id() == "66" * 16
    assert ownership.identity("default", create=True, adopt=held.adoptable_id()).id == "66" * 16


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
    listed = ["1\n2\n", "1\n"]  # the second domain went away between the two calls

    def run(host, *args, check=True, timeout=300):
        calls.append(args)
        if args[0] == "list":
            return listed.pop(0) if listed else "1\n2\n"
        return f"{ownership._MARK}{a}\n{ownership._MARK}"  # virsh said nothing for the second

    monkeypatch.setattr(libvirt.LibvirtHost, "virsh", run)
    assert [d.name for d in ownership.scan("qemu:///system")] == ["a"]
    assert len(calls) == 3 and calls[1][0].count("dumpxml") == 2
    # A domain still there that libvirt did not describe: no guess, nothing touched.
    with pytest.raises(SectorlabError, match="did not describe domain\\(s\\) 2"):
        ownership.scan("qemu:///system")


def test_the_lab_id_is_made_once_and_kept_beside_the_state_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path))
    assert ownership.identity("default").id == ""  # lab-down and status never make one
    made = ownership.identity("default", create=True)
    assert len(made.id) == 32 and ownership.identity("default").id == made.id
    assert ownership.id_file("default") == tmp_path / "labs" / ".id-default"
    assert ownership.identity("default-db", create=True).id != made.id
    assert made.cache == str(tmp_path)


class FakeLibvirt:
    """virsh as sweep_libvirt and leftovers_of use it, over a few domains and pools; records what
    would change libvirt's state."""

    def __init__(self, domains: dict[str, str], pools: dict[str, str]):
        self.domains, self.pools, self.changed = domains, pools, []  # uuid -> XML; name -> target

    def virsh(self, *args, check=True, timeout=300):
        verb = args[0]
        if verb == "list":
            return "\n".join(self.domains) + "\n"
        if ";" in verb:  # scan's batch of dumpxml
            return "".join(f"{ownership._MARK}{self.domains[u]}" for u in self.domains)
        if verb == "pool-list":
            return "\n".join(self.pools) + "\n"
        if verb == "pool-dumpxml":
            return f"<pool><name>{args[1]}</name><target><path>{self.pools[args[1]]}</path></target></pool>"
        if verb == "vol-list":
            return ""
        self.changed.append(args)
        return ""


def _xml(name: str, uuid: str, owner: ownership.Identity | None, source: str) -> str:
    meta = "" if owner is None else (
        f'<metadata><sectorlab:lab xmlns:sectorlab="{ownership.NAMESPACE}" lab="{owner.lab}" vm="{owner.vm}" '
        f'lab_id="{owner.id}" machine="{owner.machine}" host="{owner.host}" cache="{owner.cache}"/></metadata>')
    return (f"<domain><name>{name}</name><uuid>{uuid}</uuid>{meta}<devices><disk><source file='{source}'/></disk>"
            f"</devices></domain>")


def test_lab_down_removes_its_own_domains_and_nothing_of_anothers(monkeypatch, tmp_path):
    from sectorlab.lab import modelled
    monkeypatch.setattr(modelled, "SERVE_DIR", tmp_path / "devices")  # not a lab of this name that runs here
    from sectorlab import lab as lab_mod
    monkeypatch.setenv("SECTORLAB_CACHE", str(tmp_path))
    ours = ownership.identity("default", create=True)
    other_cache = ownership.Identity("default-db", "22" * 16, ours.machine, ours.host, ours.cache, "lab1")
    fake = FakeLibvirt({
        "u-own": _xml("sectorlab-default-lab1", "u-own", ownership.Identity(
            "default", ours.id, ours.machine, ours.host, ours.cache, "lab1"), f"{OWN_DIR}/lab1-root.qcow2"),
        "u-db": _xml("sectorlab-default-db-lab1", "u-db", other_cache,
                     "/var/lib/libvirt/images/sectorlab-default-db/lab1-root.qcow2"),
        "u-bare": _xml("sectorlab-default-x", "u-bare", None, "/srv/x.qcow2"),
    }, {"sectorlab-default": OWN_DIR, "sectorlab-default-db": "/var/lib/libvirt/images/sectorlab-default-db"})
    monkeypatch.setattr(libvirt.LibvirtHost, "virsh", lambda host, *args, **kwargs: fake.virsh(*args, **kwargs))
    monkeypatch.setattr(libvirt.LocalHost, "missing", lambda self, paths: set(paths))
    said = []
    removed = lab_mod.sweep_libvirt("default", "qemu+unix:///system", said.append, ["lab1", "db-lab1"])
    assert removed == ["domain sectorlab-default-lab1", "pool sectorlab-default"]
    touched = {a[1] for a in fake.changed if a[0] in ("destroy", "undefine")}
    assert touched == {"u-own"}, fake.changed
    assert {a[-1] for a in fake.changed if a[0].startswith("pool-")} == {"sectorlab-default"}
    # Another cache's lab of the same name uses the pool: the pool and its directory are left alone.
    fake.domains["u-other"] = _xml("sectorlab-default-vm9", "u-other", ownership.Identity(
        "default", "77" * 16, "cc" * 16, "elsewhere", "/srv/cache", "vm9"), f"{OWN_DIR}/vm9-root.qcow2")
    fake.changed.clear()
    lab_mod.sweep_libvirt("default", "qemu+unix:///system", said.append)
    assert [a for a in fake.changed if a[0].startswith(("pool-", "vol-"))] == []
    assert any(line.startswith("left alone: pool sectorlab-default") and "/srv/cache" in line for line in said), said
    assert lab_mod.leftovers_of("default", "qemu+unix:///system") == ["domain sectorlab-default-lab1"]
