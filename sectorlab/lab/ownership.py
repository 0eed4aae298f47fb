"""Which libvirt objects are a lab's own: by identity, never by a name prefix.

Every domain a lab defines carries, in its libvirt <metadata>, the lab's identity (NAMESPACE):
the lab's name, the VM's name, the lab's id (a random UUID made at the lab's first lab-up), and
the machine, host name and cache directory of the sectorlab that made it. Names alone cannot
own anything: domains are named sectorlab-<lab>-<vm>, so lab `default` with VM `db-lab1` and lab
`default-db` with VM `lab1` both make `sectorlab-default-db-lab1`, and matching
`sectorlab-default-*` took lab default-db's VM for lab default's (a lab-down destroyed it).

A domain is the lab's own when its metadata names this lab and
- this lab's id, or
- when this cache has no id for the lab (its `labs` directory was lost), this machine, host name
  and cache directory: what that cache made is still its own, and the lab-up that follows takes
  the id it finds there again (`identity(..., adopt=...)`); or,
- without sectorlab metadata, when its UUID is exactly the one lab-up gave that lab and VM before
  domains carried an identity (uuid5 of "sectorlab:<lab>:<vm>", the VM's name read from the
  domain's name): an exact identity, whatever the lab definition says now.
Anything else is another's: another lab, the same lab name in another checkout's cache or on
another machine, or a domain sectorlab did not make. Nothing of those is touched; a lab-up whose
domain or pool name another's object holds is refused before anything starts, naming the owner.

The pool (`sectorlab-<lab>`; libvirt pools carry no metadata) and its directory are the lab's own
unless a domain that is not the lab's own uses a volume in it. The id is kept beside the lab's
state directory (`$SECTORLAB_CACHE/labs/.id-<lab>`, like the lock file), not inside it: it
outlives a lab-down, so a guest state saved by one lab-up restores with the same identity in the
next, and a state directory lost while the lab runs does not orphan the lab's domains.
"""

from __future__ import annotations

import re
import socket
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SectorlabError, UsageError
from ..host import libvirt
from ..paths import cache_dir, write_atomic

NAMESPACE = "urn:sectorlab:lab:1"
_MARK = "@@sectorlab-domain@@"
ID_RE = re.compile(r"[0-9a-f]{32}")


def domain_name(lab_name: str, vm_name: str) -> str:
    return f"sectorlab-{lab_name}-{vm_name}"  # as terraform/main.tf names it


def pool_name(lab_name: str) -> str:
    return f"sectorlab-{lab_name}"  # as terraform/main.tf names it


def legacy_uuid(lab_name: str, vm_name: str) -> str:
    """The UUID lab-up gives the domain of `vm_name` (terraform.tfvars.json's uuid): fixed, so that a
    saved guest state restores into the domain a later lab-up defines."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sectorlab:{lab_name}:{vm_name}"))


def _machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if ID_RE.fullmatch(text):
            return text
    return uuid.uuid5(uuid.NAMESPACE_DNS, socket.gethostname()).hex  # no machine id: the host name's


@dataclass(frozen=True)
class Identity:
    """Who made a domain: the lab, its id, and the sectorlab (machine, host name, cache) that made it."""
    lab: str
    id: str  # "" when this cache has no id for the lab (yet)
    machine: str
    host: str
    cache: str
    vm: str = ""

    def describe(self) -> str:
        return f"lab {self.lab}" + (f" (its VM {self.vm})" if self.vm else "")

    def where(self) -> str:
        return f"the sectorlab on {self.host} with cache {self.cache}"


def id_file(lab_name: str) -> Path:
    return cache_dir() / "labs" / f".id-{lab_name}"


def identity(lab_name: str, create: bool = False, adopt: str = "") -> Identity:
    """This cache's identity of the lab; with `create`, its id is made when it has none (lab-up):
    `adopt`, the id this cache's own domains of the lab carry, if they carry one, else a new one."""
    path = id_file(lab_name)
    try:
        lab_id = path.read_text().strip()
    except OSError:
        lab_id = ""
    if not ID_RE.fullmatch(lab_id):
        lab_id = ""
        if create:
            lab_id = adopt if ID_RE.fullmatch(adopt) else uuid.uuid4().hex
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, lab_id + "\n")
    return Identity(lab_name, lab_id, _machine_id(), socket.gethostname(), str(cache_dir()))


def terraform_owner(ours: Identity) -> dict:
    """The identity as terraform/variables.tf's `owner` takes it (the domain's <metadata>)."""
    return {"lab_id": ours.id, "machine": ours.machine, "host": ours.host, "cache": ours.cache}


@dataclass
class Domain:
    name: str
    uuid: str
    owner: Identity | None  # None: no sectorlab metadata
    sources: list[str] = field(default_factory=list)  # its disks' files, and pool/volume pairs as "pool:NAME"


def parse_domain(text: str) -> Domain:
    root = ET.fromstring(text)
    owner = None
    element = root.find(f"metadata/{{{NAMESPACE}}}lab")
    if element is not None:
        a = element.attrib
        owner = Identity(a.get("lab", ""), a.get("lab_id", ""), a.get("machine", ""), a.get("host", ""),
                         a.get("cache", ""), a.get("vm", ""))
    sources = []
    for source in root.iterfind("devices/disk/source"):
        if source.get("file"):
            sources.append(source.get("file"))
        if source.get("pool"):
            sources.append(f"pool:{source.get('pool')}")
    return Domain(root.findtext("name", ""), root.findtext("uuid", ""), owner, sources)


def scan(uri: str) -> list[Domain]:
    """Every domain libvirt has at `uri` (defined or running), with its owner: two virsh calls, a
    third only when a listed domain was not described (gone since, or not readable)."""
    host = libvirt.get_host(uri)
    uuids = host.virsh("list", "--all", "--uuid").split()
    if not uuids:
        return []
    # One virsh process for all of them: its command string runs one command after the other (a
    # domain gone in between only fails its own dumpxml).
    out = host.virsh("; ".join(f"echo {_MARK}; dumpxml {u}" for u in uuids), check=False)
    domains = []
    for chunk in out.split(_MARK):
        if chunk.strip():
            try:
                domains.append(parse_domain(chunk.strip()))
            except ET.ParseError:
                continue  # not a domain's XML (virsh said something else)
    # A domain that is still there but was not described cannot be told apart: stop rather than
    # take it for absent (a pool it uses would look free).
    unread = set(uuids) - {d.uuid for d in domains}
    still = set(host.virsh("list", "--all", "--uuid").split()) & unread if unread else set()
    if still:
        raise SectorlabError(f"libvirt at {uri} did not describe domain(s) {', '.join(sorted(still))} "
                             f"(virsh dumpxml); cannot tell which are this lab's: nothing was touched")
    return domains


def is_own(domain: Domain, ours: Identity) -> bool:
    """Whether `domain` is the lab's own (the module's docstring)."""
    o = domain.owner
    if o is None:
        # Made before domains carried an identity: its UUID is uuid5 of exactly this lab and VM.
        prefix = domain_name(ours.lab, "")
        return domain.name.startswith(prefix) and domain.uuid == legacy_uuid(ours.lab, domain.name[len(prefix):])
    if o.lab != ours.lab:
        return False
    if ours.id:
        return o.id == ours.id
    # This cache has no id for the lab (its labs directory was lost): what this cache made, here.
    return (o.machine, o.host, o.cache) == (ours.machine, ours.host, ours.cache)


def owner_text(domain: Domain, ours: Identity) -> str:
    """Whose `domain` is, as a refusal names it."""
    o = domain.owner
    if o is None:
        return f"domain {domain.name} (UUID {domain.uuid}), which carries no sectorlab identity"
    if o.lab != ours.lab:
        return f"domain {domain.name} of {o.describe()}"
    return f"domain {domain.name} of another lab named {o.lab} ({o.where()}, lab id {o.id or 'none'})"


def remedy(domain: Domain) -> str:
    """What to do about another's domain in the way."""
    if domain.owner is None:
        return f"or, if that domain is yours to remove, 'virsh undefine {domain.name}'"
    return f"or take lab {domain.owner.lab} down first ('sectorlab lab down' where it was brought up)"


@dataclass
class Holdings:
    """What of a lab's names libvirt has at one URI: its own domains, and another's objects that
    hold a name the lab would use."""
    ours: Identity
    own: list[Domain]
    others: list[Domain]  # not the lab's own
    pool: str
    pool_dir: str
    pool_target: str | None = None  # where the pool of that name points, None without one

    def pool_foreign(self) -> bool:
        """A pool of the lab's pool name exists but points elsewhere than the lab's pool directory:
        not made by a lab of this name."""
        return self.pool_target is not None and self.pool_target.rstrip("/") != self.pool_dir.rstrip("/")

    def holder_of(self, directory: str) -> Domain | None:
        """A domain, not the lab's own, that uses a file in `directory` (then it is not the lab's to remove)."""
        inside = directory.rstrip("/") + "/"
        return next((d for d in self.others if any(s.startswith(inside) for s in d.sources)), None)

    def pool_holder(self) -> Domain | None:
        """A domain, not the lab's own, that uses a volume of the lab's pool (then the pool is not the lab's)."""
        by_name = next((d for d in self.others if f"pool:{self.pool}" in d.sources), None)
        return by_name or self.holder_of(self.pool_target or self.pool_dir)

    def pool_is_own(self) -> bool:
        """Whether the pool and directory of the lab's pool name are the lab's to remove."""
        return not self.pool_foreign() and self.pool_holder() is None

    def adoptable_id(self) -> str:
        """The id the lab's own domains carry, when they were made by this cache without one known
        here now (its id file was lost): a lab-up takes it again instead of making a new one."""
        ids = {d.owner.id for d in self.own if d.owner is not None and d.owner.id}
        return ids.pop() if len(ids) == 1 else ""

    def named(self, names: list[str]) -> list[Domain]:
        """Another's domains that hold one of `names`."""
        return [d for d in self.others if d.name in names]


def pool_target(uri: str, pool: str) -> str | None:
    """The target directory of the pool named `pool`, None when libvirt has no pool of that name."""
    host = libvirt.get_host(uri)
    if pool not in host.virsh("pool-list", "--all", "--name").split():
        return None
    try:
        return ET.fromstring(host.virsh("pool-dumpxml", pool)).findtext("target/path", "")
    except ET.ParseError as e:
        raise SectorlabError(f"virsh pool-dumpxml {pool}: not XML ({e})") from e


def holdings(uri: str, ours: Identity, pool_dir: str) -> Holdings:
    own, others = [], []
    for d in scan(uri):
        (own if is_own(d, ours) else others).append(d)
    return Holdings(ours, own, others, pool_name(ours.lab), pool_dir, pool_target(uri, pool_name(ours.lab)))


def refuse_collisions(h: Holdings, vm_names: list[str]) -> None:
    """Before a lab-up makes anything: no domain or pool name of the lab may be another's."""
    for vm in vm_names:
        for d in h.named([domain_name(h.ours.lab, vm)]):
            raise UsageError(f"lab {h.ours.lab}: VM {vm} would be domain {d.name}, but libvirt has "
                             f"{owner_text(d, h.ours)}; rename VM {vm} or this lab (LAB_SUFFIX=...), {remedy(d)}")
    if h.pool_foreign():
        raise UsageError(f"lab {h.ours.lab}: libvirt has a pool named {h.pool} at {h.pool_target}, not at the "
                         f"lab's {h.pool_dir}: not made by a lab of this name; rename this lab (LAB_SUFFIX=...) or, "
                         f"if that pool is yours to remove, 'virsh pool-undefine {h.pool}'")
    holder = h.pool_holder()
    if holder is not None:
        raise UsageError(f"lab {h.ours.lab}: its pool {h.pool} ({h.pool_dir}) is used by "
                         f"{owner_text(holder, h.ours)}; rename this lab (LAB_SUFFIX=...), {remedy(holder)}")


def save_image_domain(uri: str, path: Path) -> Domain | None:
    """The domain a saved image (a managed save) was taken of, from its XML; None when libvirt
    cannot read it."""
    text = libvirt.get_host(uri).virsh("save-image-dumpxml", str(path), check=False)
    if not text.strip():
        return None
    try:
        return parse_domain(text)
    except ET.ParseError:
        return None
