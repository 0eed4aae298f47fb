"""Oracle redo BLOCKSIZE rules: which block size a redo log gets on a disk, which it refuses with
ORA-01378, and which work at the cost of read-modify-write.

Standard library only: `sectorlab redo-check` on the host and `redo-check` inside lab guests run
it through redocheck.py (the command); asmrules.py holds ASM's side. The three files, copied
together, also run on a database server (`python3 redocheck.py ...`).

The model (RULES below, each with its evidence and source; docs/redo-blocksize.md prints them):
- BLOCKSIZE is 512, 1024 or 4096 (Oracle 11.2+; the Administrator's Guide). Without it a redo log
  gets the disk's media (physical) sector size (seed 000: a 4Kn P3700 gets 4096).
- On a 512e disk outside ASM the sources conflict: the Guide gives a 4 KiB default (seed 003
  carries its words without naming it), seed 003 in its own words a 512 default and a BLOCKSIZE
  4096 that needs the override. The model keeps the Guide's answer and says the conflict in the
  verdict (evidence assumed).
- B < host (logical) sector with direct I/O (ASM, raw devices, FILESYSTEMIO_OPTIONS DIRECTIO or
  SETALL): ORA-01378, and _disk_sector_size_override does not help: an O_DIRECT write of B bytes to
  such a disk fails with EINVAL. With buffered I/O (a file system's NONE or ASYNCH, Linux's default)
  the page cache makes the write possible and only the database's own check refuses it. Off Linux
  the default for a file on a file system is not known: the verdict holds for both, or is not known.
- B > media sector: ORA-01378 (seeds 001, 002: 4096 on a 512n disk) unless the database instance
  sets _disk_sector_size_override=TRUE (seeds 000, 002; seed 003 for 4096 on 512e); set in the ASM
  instance it does not reach the database, and CREATE DISKGROUP without SECTOR_SIZE fails with
  ORA-15086 (asmrules.py).
  BLOCKSIZE 1024 above the media sector on HP-UX or Tru64, whose native log block it was, is not
  known: the verdict is neither allowed nor refused.
- B < media sector (512e): allowed, but a write that covers a physical sector only in part costs
  the drive a read-modify-write: 7 of 8 writes of 512 bytes start inside a 4 KiB sector (seed 003)
  and the 8th ends inside it, so all of them do (partial_units counts both ends).
- Inside ASM the database sees the disk group's sizes (asmrules.py): before 12.2 its SECTOR_SIZE as
  both host and media sector (seed 003), from 12.2 LOGICAL_SECTOR_SIZE as the host sector (not
  named: the model's default, SECTOR_SIZE, on which a BLOCKSIZE below SECTOR_SIZE then rests).
- Each redo block carries a 16-byte header; a write is padded to whole blocks ("redo wastage").
- A disk whose physical sector or minimum I/O size is above 4096 (QLC drives write in 16 KiB
  indirection units): no BLOCKSIZE reaches it. The model's default is then 4096, the largest; which
  one Oracle picks there is not documented, so this is where the model stops.
Every verdict names the rules it rests on, claim by claim (CLAIMS: allowed or not, the error, the
default, the sizes the database sees, the warnings), and each claim's evidence is the weakest of
the rules that claim rests on; the verdict's `evidence` is its allowed-or-not claim's. Only a
refusal makes an error claim.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

try:
    from . import asmrules
except ImportError:  # flat in /usr/local/lib/sectorlab/ inside a guest
    import asmrules

VALID_BLOCKSIZES = (512, 1024, 4096)
MAX_BLOCKSIZE = max(VALID_BLOCKSIZES)
VALID_ASM_SECTOR_SIZES = asmrules.VALID_SECTOR_SIZES
REDO_BLOCK_HEADER = 16
PLATFORMS = ("linux", "hp-ux", "tru64", "solaris", "aix", "windows")
NATIVE_1024 = ("hp-ux", "tru64")  # Ixora's table of pre-11.2 log block sizes
# direct: O_DIRECT (ASM, raw devices, FILESYSTEMIO_OPTIONS DIRECTIO or SETALL); buffered: through
# the page cache (a file system's FILESYSTEMIO_OPTIONS NONE or ASYNCH).
IO_MODES = ("direct", "buffered")
# Where _disk_sector_size_override=TRUE is set: the database instance, the ASM instance, or both.
INSTANCES = ("database", "asm", "both")
# What a verdict says, each with the rules it rests on: whether the BLOCKSIZE is allowed, the error
# it shows, the default BLOCKSIZE, the sizes the database sees (how they were read), the warnings.
CLAIMS = ("allowed", "error", "default", "sizes", "warnings")
# Strongest first: the kernel's own behaviour (and the lab re-checks it), Oracle's documentation or
# public source code, what a seed showed on real hardware, nothing public (the model's choice).
EVIDENCE = ("physics", "documented", "seed", "assumed")
V_ASM_DISKGROUP = "Oracle Database Reference 12.2, V$ASM_DISKGROUP (LOGICAL_SECTOR_SIZE)"
ORACLEASM = "the oracleasm driver's asm_block_size() (kernel/driver.c) and /etc/sysconfig/oracleasm"
ADMIN_GUIDE = "Oracle Database Administrator's Guide 11.2, 'Planning the Block Size of Redo Log Files'"
FILESYSTEMIO = ("Oracle Database Reference, FILESYSTEMIO_OPTIONS ('specifies I/O operations for file system "
                "files'; default: 'Varies by database version and operating system' from 11.2.0.4, 'There is "
                "no default value' in the 9i to 11.2.0.3 editions)")


@dataclass(frozen=True)
class Rule:
    says: str
    evidence: str
    source: str


RULES = {
    "blocksize-values": Rule("BLOCKSIZE is 512, 1024 or 4096 (11.2 and later)", "documented",
                             f"{ADMIN_GUIDE}; seed 003 carries its words without naming it ('a 512B block size "
                             "or, for some platforms, a 1K block size') and the values ('to values of 512, 1024 "
                             "or 4096')"),
    "default-media-sector": Rule("without BLOCKSIZE a redo log gets the media (physical) sector size", "seed",
                                 "seeds 000 and 003"),
    "emulated-default-conflict": Rule("outside ASM, on a disk of 4096-byte physical and smaller logical sectors "
                                      "(512e), the sources conflict: the Guide gives a 4096 default there that "
                                      "needs no override; seed 003 says the default is 512 and BLOCKSIZE 4096 fails "
                                      "without _disk_sector_size_override; the model keeps the Guide's", "assumed",
                                      f"{ADMIN_GUIDE} ('you can override the default 4K block size for redo logs by "
                                      "specifying a 512B block size' on 'emulation-mode disks'), words seed 003 "
                                      "carries without naming their source; seed 003's own words ('default is 512 "
                                      "bytes'; 'the above command will fail unless the sector size check is "
                                      "overridden')"),
    "below-logical-sector": Rule("with direct I/O a BLOCKSIZE below the logical sector cannot work, override or "
                                 "not: an O_DIRECT write of it fails with EINVAL", "physics",
                                 "the kernel's O_DIRECT rule; labtests re-check it on every disk"),
    "below-logical-error": Rule("the database reports a BLOCKSIZE below the host sector as ORA-01378", "assumed",
                                "ORA-01378's text names both sector sizes; the public cases are all above the "
                                "media sector (seeds 001, 002)"),
    "buffered-io": Rule("with buffered I/O redo reaches the disk through the page cache in whole pages: no "
                        "O_DIRECT rule applies, only the database's own check refuses a BLOCKSIZE below the host "
                        "sector, and _disk_sector_size_override lifts it", "assumed",
                        f"not public: the override is public only above the media sector (seeds 000, 002, 003); "
                        f"{FILESYSTEMIO}"),
    "io-default-filesystem": Rule("without an I/O mode, a file on a file system on Linux is written buffered: "
                                  "FILESYSTEMIO_OPTIONS defaults to NONE on Linux", "assumed",
                                  f"{FILESYSTEMIO}; Red Hat's tuning guide for Oracle 9i and 10g on RHEL 5 ('By "
                                  "default, this parameter is set to none for Linux'); nothing public for 11.2 "
                                  "and later"),
    "io-default-unknown": Rule("without an I/O mode, how a file on a file system off Linux is written is not "
                               "known: FILESYSTEMIO_OPTIONS's default there is not public, so the verdict holds "
                               "for direct and buffered I/O both, or is not known", "assumed",
                               f"{FILESYSTEMIO}; nothing public per platform"),
    "io-default-direct": Rule("without an I/O mode, ASM disks and raw block devices are written with direct I/O "
                              "(FILESYSTEMIO_OPTIONS is for file system files)", "assumed",
                              f"{FILESYSTEMIO}; NetApp's Oracle filesystemio_options page (ASM does direct and "
                              "asynchronous I/O whatever the parameter says); for raw devices not public"),
    "above-media-sector": Rule("BLOCKSIZE above the media sector: ORA-01378", "seed", "seeds 001 and 002"),
    "log-member-sector": Rule("ALTER DATABASE ADD LOGFILE MEMBER onto a disk whose physical sector differs from "
                              "that of the log group's other members fails with ORA-01168", "documented",
                              "ORA-01168 (Oracle's error messages: 'physical block size string does not match size "
                              "string of other members'; its cause: 'The file is located on a device with a "
                              "different physical block size than the other members in the group')"),
    "override": Rule("_disk_sector_size_override=TRUE lets a BLOCKSIZE above the disk's sector size through: "
                     "above the media sector, and 4096 on a 512e disk (above its logical sector)", "seed",
                     "seeds 000, 002 and 003 (000 and 002: above a 512-byte media sector; 003: BLOCKSIZE 4096 on "
                     "a 512e device)"),
    "override-instance": Rule("_disk_sector_size_override lets redo through when the database instance sets it; set "
                              "in the ASM instance only it does not, and what it does there beyond ORA-15086 is "
                              "not public", "assumed",
                              "seed 003 ('in the database instance (do not set this parameter in the ASM "
                              "instance)'); ORA-15086 (Oracle's error messages)"),
    "asm-override-membership": Rule("_disk_sector_size_override set in the ASM instance with SECTOR_SIZE named: "
                                    "whether the group then takes a disk whose sector size is not SECTOR_SIZE is not "
                                    "known (its one public effect in ASM is ORA-15086)", "assumed",
                                    "ORA-15086 (Oracle's error messages: 'The _disk_sector_size_override parameter "
                                    "was used but the sector disk value was not specified in the command.'); seed 003 "
                                    "('do not set this parameter in the ASM instance')"),
    "below-media-sector": Rule("BLOCKSIZE below the media sector (512e): allowed, each write read-modify-written",
                               "seed", "seed 003; V$ASM_DISKGROUP (512 redo in an emulated group)"),
    "blocksize-1024": Rule("BLOCKSIZE 1024 is judged by the sector sizes alone: whether the platform accepts it "
                           "is not public", "assumed",
                           "seed 003 ('for some platforms'); Ixora's table of pre-11.2 log block sizes "
                           "(1024 on HP-UX and Tru64, 512 on Linux); no public source shows Linux accepting it"),
    "blocksize-1024-native": Rule("BLOCKSIZE 1024 above the media sector on HP-UX or Tru64 is not known: "
                                  "ORA-01378 refuses a BLOCKSIZE above the media sector, yet 1024 was these "
                                  "platforms' native log block, written to disks of 512-byte sectors", "assumed",
                                  "Ixora's table of pre-11.2 log block sizes (1024 on HP-UX and Tru64); seeds 001 "
                                  "and 002 (ORA-01378 above the media sector, on Linux)"),
    "unit-above-4096": Rule("a write unit above 4096: the default is 4096, the largest BLOCKSIZE", "assumed",
                            "not public; sysfs-block (minimum_io_size, physical_block_size)"),
    "filesystem-device": Rule("a file on a filesystem gets the sector sizes of the block device under it "
                              "(a device-mapper or LVM volume: its own)", "assumed", "not public"),
    "asm-one-sector-size": Rule("inside ASM before 12.2 the database sees SECTOR_SIZE as host and media sector",
                                "seed", "seed 000 (ASM 12.1.0.2: a group's SECTOR_SIZE 4096 'passed right through to "
                                "the database', which made 4 KiB redo by default)"),
    "asm-logical-sector-size": Rule("from 12.2 the database sees LOGICAL_SECTOR_SIZE as host sector: a 4096/512 "
                                    "group takes redo of 512 and of 4096", "documented", V_ASM_DISKGROUP),
    "asm-emulated-default": Rule("the default BLOCKSIZE in a group of LOGICAL_SECTOR_SIZE below SECTOR_SIZE is "
                                 "SECTOR_SIZE", "assumed", "not public (it depends on compatible.rdbms)"),
    "asm-which-error": Rule("a redo BLOCKSIZE below the group's smallest I/O is shown as ORA-01378; ASM's own "
                            "ORA-15347 may come instead", "assumed", "ORA-01378 and ORA-15347 (Oracle's error "
                            "messages); which one ADD LOGFILE shows is not public"),
    "asm-sector-size-values": Rule("SECTOR_SIZE is 512 or 4096; a LOGICAL_SECTOR_SIZE above it is ORA-15375",
                                   "documented", f"{asmrules.GUIDE_121}; ORA-15375"),
    "asm-logical-values": Rule("LOGICAL_SECTOR_SIZE is 512 or 4096", "assumed",
                               "not public (V$ASM_DISKGROUP shows 512 under a SECTOR_SIZE of 4096)"),
    "asm-logical-default": Rule("from 12.2 a group whose LOGICAL_SECTOR_SIZE is not named has LOGICAL_SECTOR_SIZE "
                                "= SECTOR_SIZE", "assumed", "not public"),
    "asm-membership": Rule("a disk joins a group when the sector size ASM reads from it equals SECTOR_SIZE, so "
                           "disks of different sector sizes never share a group", "documented", asmrules.GUIDE_121),
    "asm-membership-any-discovery": Rule("with no discovery method named, a disk fits when either of its sectors "
                                         "equals SECTOR_SIZE (ASMLib reads the physical one)", "assumed",
                                         "which one AFD and udev devices show is not public"),
    "asm-smallest-io": Rule("a disk whose logical sector is above the group's smallest I/O (LOGICAL_SECTOR_SIZE) "
                            "cannot be in it: it fails I/O that small (AFD, udev: the kernel's O_DIRECT rule)",
                            "physics",
                            "the kernel's O_DIRECT rule; V$ASM_DISKGROUP (LOGICAL_SECTOR_SIZE: the smallest I/O)"),
    "asmlib-smallest-io": Rule("through ASMLib the limit is the driver's I/O unit, not the kernel's: the oracleasm "
                               "driver does ASM's I/O in units of the one size it shows, so a disk it shows above "
                               "the group's smallest I/O cannot be in the group", "documented",
                               f"{ORACLEASM}; V$ASM_DISKGROUP (LOGICAL_SECTOR_SIZE: the smallest I/O)"),
    "asm-mount-sector-size": Rule("mounting a disk group whose disk, its ASM header kept, now reports a sector size "
                                  "other than the group's SECTOR_SIZE (new firmware, ORACLEASM_USE_LOGICAL_BLOCK_SIZE "
                                  "changed) fails with ORA-15085 (an NVMe LBA format erases the namespace, the header "
                                  "with it: the group lacks the member instead)", "documented",
                                  "ORA-15085 (Oracle's error messages: 'An attempt to mount a disk group failed "
                                  "because a disk reported an inconsistent sector size value.'); "
                                  f"{asmrules.GUIDE_121} ('Oracle ASM also attempts to verify disk sector size "
                                  "during the mount operation')"),
    "asm-override-sector-size": Rule("_disk_sector_size_override set in the ASM instance: CREATE DISKGROUP that "
                                     "names no SECTOR_SIZE fails with ORA-15086", "documented",
                                     "ORA-15086 (Oracle's error messages: 'The _disk_sector_size_override parameter "
                                     "was used but the sector disk value was not specified in the command.')"),
    "asm-compatible": Rule("CREATE DISKGROUP naming a SECTOR_SIZE other than the default needs COMPATIBLE.ASM and "
                           "COMPATIBLE.RDBMS of 11.2 or higher", "documented",
                           f"{asmrules.GUIDE_121} ('The COMPATIBLE.ASM and COMPATIBLE.RDBMS disk group attributes "
                           "must be set to 11.2 or higher to set the sector size to a value other than the default "
                           "value.')"),
    "asm-sector-size-default": Rule("the default SECTOR_SIZE, against which a named one is 'other than the "
                                    "default', is 512: the Guide says only that it is platform dependent",
                                    "assumed", f"not public: {asmrules.GUIDE_121} ('The default value is platform "
                                    "dependent.')"),
    "asmlib-reads-one-size": Rule("ASMLib (v2, the kernel driver) shows ASM one size: the physical sector, the "
                                  "logical one with ORACLEASM_USE_LOGICAL_BLOCK_SIZE=true; what ASMLib v3 shows is "
                                  "not public", "documented", f"{ORACLEASM}; seed 000"),
    "asmlib-logical-sector-size": Rule("through ASMLib a 12.2+ group gets LOGICAL_SECTOR_SIZE = that one size",
                                       "assumed", "not public"),
    "afd-reads-kernel-sizes": Rule("the ASM Filter Driver shows ASM the kernel's logical and physical sectors, and "
                                   "a new group gets the logical one", "assumed", "not public"),
    "udev-reads-kernel-sizes": Rule("a udev (raw) device shows ASM the kernel's logical and physical sectors, and a "
                                    "new group gets the logical one", "assumed",
                                    "not public; NetApp's note that only ASMLib stamps the physical size"),
    "asm-invalid-sector": Rule("a sector ASM reads that is not 512 or 4096 (a 16 KiB one) is refused with "
                               "ORA-59012 (physical) / ORA-59013 (logical): the messages are Oracle's, but their "
                               "texts name no size, so which sizes they refuse is assumed", "assumed",
                               "ORA-59012, ORA-59013 (Oracle's error messages: 'uses an invalid physical sector "
                               "size', no value named); the Guide's SECTOR_SIZE values 512 and 4096"),
    "asm-file-below-sector": Rule("ASM refuses a file whose block is below the group's smallest I/O: ORA-15347",
                                  "documented", "ORA-15347 (Oracle's error messages)"),
    "spfile-4k-bug": Rule("an spfile in a group of SECTOR_SIZE 4096 is unreadable in 12.1.0.2 without the patch "
                          "for bug 16870214 (ORA-17510)", "seed", "seed 000"),
    "spfile-later-releases": Rule("from 12.2 the spfile fits a group of SECTOR_SIZE 4096", "assumed",
                                  "not public (bug 16870214 was seen up to 12.1.0.2, seed 000)"),
}


def weakest(rule_ids: list[str]) -> str:
    return max((RULES[r].evidence for r in rule_ids), key=EVIDENCE.index, default="physics")


def cited(rule_ids: list[str]) -> list[dict]:
    return [{"rule": r, "evidence": RULES[r].evidence, "source": RULES[r].source} for r in dict.fromkeys(rule_ids)]


class RulesUsageError(ValueError):
    """Input outside the model (exit status 2)."""


AsmError = asmrules.AsmError


@dataclass
class Verdict:
    allowed: bool | None  # None: not known, neither allowed nor refused (a warning says why)
    blocksize: int
    default_blocksize: int
    error: str | None
    warnings: list[str] = field(default_factory=list)
    host_sector: int = 0
    media_sector: int = 0
    claims: dict[str, list[str]] = field(default_factory=dict)  # CLAIMS -> the rules each rests on
    reason: str = ""  # why, in one sentence; not part of the JSON interface
    asm_refusal: bool = False  # ASM refuses the disk group or the disk in it; not part of the JSON interface

    @property
    def rests_on(self) -> list[str]:
        """Every rule the verdict names, claim by claim."""
        return list(dict.fromkeys(r for claim in CLAIMS for r in self.claims.get(claim, [])))

    @property
    def evidence(self) -> str:
        """The allowed-or-not claim's: the weakest of the rules that claim rests on."""
        return weakest(self.claims.get("allowed", []))

    def evidence_of(self, claim: str) -> str | None:
        """A claim's evidence; None when the verdict makes no such claim on any rule."""
        return weakest(self.claims[claim]) if self.claims.get(claim) else None

    def as_json(self) -> dict:
        out = asdict(self)
        out.pop("reason")
        out.pop("asm_refusal")
        out.pop("claims")
        out["evidence"] = self.evidence
        out["rests_on"] = cited(self.rests_on)
        out["claims"] = {claim: {"evidence": weakest(self.claims[claim]), "rests_on": self.claims[claim]}
                         for claim in CLAIMS if self.claims.get(claim)}
        return out


def ora_01378(blocksize: int, file: str, media: int, host: int) -> str:
    return (f"ORA-01378: The logical block size ({blocksize}) of file {file} is not compatible with the disk "
            f"sector size (media sector size is {media} and host sector size is {host})")


def _check_sector(what: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RulesUsageError(f"{what} {value!r} is not a whole number of bytes")
    if value < 512 or value > 65536 or value & (value - 1):
        raise RulesUsageError(f"{what} {value} is not a power of two from 512 to 65536")
    return value


def direct_io_ok(size: int, logical_sector: int) -> bool:
    """Whether an O_DIRECT write of `size` bytes (at an offset that is a multiple of it) can be made
    to a disk or a file on a disk whose logical (host) sector is `logical_sector`: Linux fails an
    O_DIRECT I/O whose size or offset is not a multiple of the logical sector with EINVAL. This is
    why, with direct I/O, a redo BLOCKSIZE below the host sector can never work, whatever the
    database accepts."""
    return size > 0 and size % logical_sector == 0


def _unit_warning(media: int, min_io: int | None) -> str | None:
    """What a device that writes in units above the largest BLOCKSIZE means for the verdict."""
    unit = max(media, min_io or 0)
    if unit <= MAX_BLOCKSIZE:
        return None
    what = "physical sector" if media >= (min_io or 0) else "minimum I/O size"
    return (f"the device writes in units of {unit} bytes (its {what}), more than the largest redo BLOCKSIZE "
            f"({MAX_BLOCKSIZE}): every redo write is smaller than that unit, and the drive must read-modify-write "
            f"or merge it; which BLOCKSIZE Oracle picks on such a disk is not documented (the model assumes "
            f"{MAX_BLOCKSIZE})")


def _emulated_conflict(what: str) -> str:
    """The two sources on a 512e disk outside ASM, each quoted as seed 003 has it."""
    return (f"{what} on a 512e disk outside ASM: the sources conflict. The Administrator's Guide makes 4096 the "
            f"default on emulation-mode disks ('you can override the default 4K block size for redo logs by "
            f"specifying a 512B block size'; seed 003 carries these words without naming their source), so 4096 "
            f"needs no override; seed 003 in its own words says the default is 512 ('default is 512 bytes') and "
            f"that BLOCKSIZE 4096 on a 512e device 'will fail unless the sector size check is overridden'. The "
            f"model keeps the Guide's answer: default 4096, allowed without the override")


def check_sizes(host_sector, media_sector, blocksize=None, min_io=None, platform="linux") -> tuple[int, int]:
    """The sizes, checked: RulesUsageError names the first one outside the model."""
    host = _check_sector("host (logical) sector size", host_sector)
    media = _check_sector("media (physical) sector size", media_sector)
    if host > media:
        raise RulesUsageError(f"logical sector {host} > physical sector {media}: no disk reports that")
    if min_io is not None and (isinstance(min_io, bool) or not isinstance(min_io, int) or min_io <= 0
                               or min_io % host):
        raise RulesUsageError(f"minimum I/O size {min_io!r} is not a positive multiple of the logical sector {host}")
    if blocksize is not None and blocksize not in VALID_BLOCKSIZES:
        raise RulesUsageError(f"BLOCKSIZE {blocksize} is not valid: expected one of "
                              f"{', '.join(map(str, VALID_BLOCKSIZES))}")
    if platform not in PLATFORMS:
        raise RulesUsageError(f"platform {platform!r} is not known: expected one of {', '.join(PLATFORMS)}")
    return host, media


def check_modes(io_mode: str | None = None, operation: str = "create", override_in: str = "database") -> None:
    """The I/O mode, the ASM operation and the instance the override is set in, checked."""
    if io_mode is not None and io_mode not in IO_MODES:
        raise RulesUsageError(f"I/O mode {io_mode!r} is not known: expected direct (O_DIRECT: ASM, raw devices, "
                              f"FILESYSTEMIO_OPTIONS DIRECTIO or SETALL) or buffered (FILESYSTEMIO_OPTIONS NONE or "
                              f"ASYNCH on a file system)")
    try:
        asmrules.check_operation(operation)
    except asmrules.AsmUsageError as e:
        raise RulesUsageError(str(e)) from None
    if override_in not in INSTANCES:
        raise RulesUsageError(f"instance {override_in!r} is not known: expected database, asm or both (the instance "
                              f"_disk_sector_size_override=TRUE is set in)")


def check_context(group: asmrules.DiskGroup | None, io_mode: str | None, on_filesystem: bool, operation: str,
                  override: bool, override_in: str) -> None:
    """Inputs that do not fit together: RulesUsageError says which, and what to give instead."""
    if override_in != "database" and not override:
        raise RulesUsageError(f"--override-in {override_in} says which instance sets _disk_sector_size_override=TRUE: "
                              f"add --override")
    if group is None:
        if operation != "create":
            raise RulesUsageError(f"operation {operation} is an ASM disk group's ({asmrules.STATEMENTS[operation]}): "
                                  f"give the group's recorded SECTOR_SIZE (--asm-sector-size)")
        if override and override_in != "database":
            raise RulesUsageError(f"_disk_sector_size_override in the {override_in} instance needs an ASM disk group: "
                                  f"give --asm-sector-size or --asm-discovery, or set it in the database instance")
        return
    if on_filesystem:
        raise RulesUsageError("a redo log in an ASM disk group is not a file on a file system: drop --on-filesystem "
                              "or the ASM options")
    if io_mode == "buffered":
        raise RulesUsageError("ASM does direct I/O to its disks (FILESYSTEMIO_OPTIONS is for file system files): drop "
                              "--io-mode buffered or the ASM options")
    if operation != "create" and not group.named:
        raise RulesUsageError(f"operation {operation} needs the disk group's recorded SECTOR_SIZE "
                              f"(V$ASM_DISKGROUP.SECTOR_SIZE): give --asm-sector-size; a discovery method alone "
                              f"says only which group CREATE DISKGROUP would make")


NOT_IN_ASM_COMPATIBLE = ("COMPATIBLE.ASM and COMPATIBLE.RDBMS are a disk group's attributes: give --asm-sector-size "
                         "or --asm-discovery too")


def asm_group(sector_size: int | None, logical_sector_size: int | None = None,
              version: tuple[int, int] | None = None, compatible=(None, None)) -> asmrules.DiskGroup | None:
    """The disk group the user names by its sizes (None: not in ASM); `compatible`: its
    (COMPATIBLE.ASM, COMPATIBLE.RDBMS), each as text ('11.2') or (major, minor), None where not
    given, as asmrules takes them."""
    try:
        parsed = asmrules.parse_compatibles(compatible)
        if sector_size is None:
            if logical_sector_size is not None:
                raise RulesUsageError("an ASM LOGICAL_SECTOR_SIZE needs the group's SECTOR_SIZE too")
            if parsed != (None, None):
                raise RulesUsageError(NOT_IN_ASM_COMPATIBLE)
            return None
        return asmrules.explicit(sector_size, logical_sector_size, version, compatible=parsed)
    except asmrules.AsmUsageError as e:
        raise RulesUsageError(str(e)) from None


def group_name(file: str) -> str:
    """The disk group a file name such as +REDO/db/onlinelog/group_1.log is in (REDO otherwise)."""
    name = file[1:].split("/")[0] if file.startswith("+") else ""
    return name or "REDO"


def _dedupe(claims: dict[str, list[str]]) -> dict[str, list[str]]:
    return {claim: list(dict.fromkeys(rules)) for claim, rules in claims.items() if rules}


def io_mode_of(io_mode: str | None, on_filesystem: bool, platform: str) -> tuple[str | None, list[str]]:
    """The I/O mode a verdict judges by, and the rules it rests on when it is a default: direct in
    ASM and on a raw device; for a file on a file system buffered on Linux (FILESYSTEMIO_OPTIONS
    NONE), not known (None) on other platforms."""
    if io_mode is not None:
        return io_mode, []
    if not on_filesystem:
        return "direct", ["io-default-direct"]
    if platform == "linux":
        return "buffered", ["io-default-filesystem"]
    return None, ["io-default-unknown"]


def evaluate(host_sector: int, media_sector: int, blocksize: int | None = None, override: bool = False,
             asm_sector_size: int | None = None, file: str = "+REDO", disk: str | None = None,
             min_io: int | None = None, asm_logical_sector_size: int | None = None, platform: str = "linux",
             group: asmrules.DiskGroup | None = None, via: list[str] | None = None, io_mode: str | None = None,
             on_filesystem: bool = False, operation: str = "create", override_in: str = "database",
             compatible_asm=None, compatible_rdbms=None, members_sector: int | None = None) -> Verdict:
    """The verdict for a redo log of `blocksize` (None: the default) on a disk of host/media sectors
    (and, when known, its minimum I/O size), on the disk itself, in a file on a file system on it
    (`on_filesystem`), or inside an ASM disk `group` (or the group of SECTOR_SIZE `asm_sector_size`,
    with COMPATIBLE.ASM and COMPATIBLE.RDBMS as text or (major, minor)) at `operation` (create, add
    or mount); `io_mode`: direct or buffered (buffered is FILESYSTEMIO_OPTIONS NONE or ASYNCH, a file
    on a file system; None: the platform's default for where the log is, io_mode_of); `override`:
    _disk_sector_size_override=TRUE in the instance(s) `override_in`; `via`: rules the sizes came
    through. `file` names the log in ORA-01378, and inside ASM its disk group (+GROUP/...) in
    ORA-15085. `members_sector`: the log is a member added to a group whose other members are on
    disks of that physical sector (ALTER DATABASE ADD LOGFILE MEMBER; ORA-01168 when it differs)."""
    host, media = check_sizes(host_sector, media_sector, blocksize, min_io, platform)
    if members_sector is not None:
        _check_sector("the log group's other members' physical sector size", members_sector)
    check_modes(io_mode, operation, override_in)
    sizes = list(via or [])

    def done(v: Verdict, seen_rules: list[str], physical: int | None = None) -> Verdict:
        # physical: the sector the member's file has (inside ASM the group's); the verdict's own by default
        return v if members_sector is None else _member(v, members_sector, seen_rules, physical or v.media_sector)
    try:
        if group is None:
            group = asm_group(asm_sector_size, asm_logical_sector_size, compatible=(compatible_asm, compatible_rdbms))
        elif compatible_asm is not None or compatible_rdbms is not None:
            raise RulesUsageError("give COMPATIBLE.ASM and COMPATIBLE.RDBMS with the disk group, not beside it")
    except AsmError as e:  # ORA-15375
        return done(Verdict(False, blocksize or asm_sector_size, asm_sector_size, str(e), [], host, media,
                            _dedupe({"sizes": sizes, "allowed": e.rules, "error": e.rules}),
                            "the ASM disk group is not valid", asm_refusal=True), [])
    check_context(group, io_mode, on_filesystem, operation, override, override_in)
    db_override = override and override_in in ("database", "both")
    asm_override = override and override_in in ("asm", "both")
    warnings: list[str] = []
    claims: dict[str, list[str]] = {"sizes": sizes, "warnings": []}
    logical_default = False
    if group is not None:
        # The database sees LOGICAL_SECTOR_SIZE from 12.2 on, named or not (not named: the model's
        # default, SECTOR_SIZE, which a BLOCKSIZE below SECTOR_SIZE is then judged on).
        seen = ["asm-logical-sector-size" if asmrules.has_logical_sector_size(group.version)
                else "asm-one-sector-size"]
        try:
            membership = asmrules.admit(group, disk or "DISK", host, media, operation, asm_override, group_name(file))
        except AsmError as e:
            return done(Verdict(False, blocksize or group.sector_size, group.sector_size, str(e), [], host, media,
                                _dedupe({"sizes": sizes + group.rests_on, "allowed": e.rules, "error": e.rules}),
                                "ASM refuses the disk group, or this disk in it", asm_refusal=True), seen,
                        group.sector_size)
        except asmrules.AsmNotKnown as e:
            return done(Verdict(None, blocksize or group.sector_size, group.sector_size, None, [str(e)], host, media,
                                _dedupe({"sizes": sizes + group.rests_on, "allowed": e.rules,
                                         "warnings": ["asm-override-membership"]}),
                                "not known: what the override does in the ASM instance is not public"), seen,
                        group.sector_size)
        sizes += group.rests_on + membership
        seen_host, seen_media = group.smallest_io, group.sector_size
        logical_default = group.logical_sector_size is None and asmrules.has_logical_sector_size(group.version)
        if asm_override:
            warnings.append("_disk_sector_size_override is set in the ASM instance: the model reads it as not "
                            "reaching the database, whose own setting lets redo above the media sector through (seed "
                            "003 sets it 'in the database instance' and says not to set it in the ASM instance); "
                            "what it does in ASM beyond ORA-15086 is not public")
            claims["warnings"].append("override-instance")
        if group.compatible != (None, None) and not asmrules.compatible_checked(group, operation):
            at = (f"at {asmrules.STATEMENTS[operation]} of an existing group" if operation != "create" else
                  "for a group whose SECTOR_SIZE CREATE DISKGROUP takes from the disk")
            warnings.append(f"COMPATIBLE.ASM and COMPATIBLE.RDBMS are not checked {at}: the 12.1 guide asks for 11.2 "
                            f"or higher to set the sector size to a value other than the default, which CREATE "
                            f"DISKGROUP does by naming SECTOR_SIZE (--asm-sector-size)")
            claims["warnings"].append("asm-compatible")
    else:
        seen_host, seen_media, seen = host, media, []
    mode, io_rules = io_mode_of(io_mode, on_filesystem, platform)

    default = min(seen_media, MAX_BLOCKSIZE)  # no BLOCKSIZE above 4096 exists (see the model)
    claims["default"] = seen + ["default-media-sector"]
    unit = _unit_warning(media, min_io)
    if unit:
        warnings.append(unit)
        claims["default"].append("unit-above-4096")
    emulated = group is None and seen_host < seen_media == MAX_BLOCKSIZE
    if emulated:
        claims["default"].append("emulated-default-conflict")
    if group is not None and seen_host < seen_media:
        claims["default"].append("asm-emulated-default")
        if blocksize is None:
            warnings.append("the default BLOCKSIZE in a disk group whose LOGICAL_SECTOR_SIZE is below its "
                            "SECTOR_SIZE is not public (it depends on compatible.rdbms); the model assumes "
                            "SECTOR_SIZE")
    chosen = blocksize if blocksize is not None else default
    ask = _Ask(chosen, default, blocksize is None, (host, media), (seen_host, seen_media), group is not None,
               emulated, mode, io_rules, db_override, asm_override, platform, file, warnings, claims, seen,
               logical_default)
    return done(_judge(ask), seen)


def ora_01168(physical: int, others: int) -> str:
    return f"ORA-01168: physical block size {physical} does not match size {others} of other members"


def _member(v: Verdict, others: int, seen: list[str], physical: int) -> Verdict:
    """The verdict on a log member added beside others on disks of physical sector `others`: the
    `physical` sector of the member's file (inside ASM the group's; `seen`: what the database's view
    of it rests on) must be theirs (ORA-01168). Where this disk refuses the log too, which of the
    two errors Oracle raises first is not public: a warning says so. A member not known to fit
    otherwise stays not known."""
    claims = {k: list(r) for k, r in v.claims.items()}
    if physical == others:
        claims["allowed"] = claims.get("allowed", []) + ["log-member-sector"]
        return replace(v, claims=_dedupe(claims))
    claims["allowed"] = seen + ["log-member-sector"]  # refused by it, whatever else the log meets here
    warnings = list(v.warnings)
    if v.error:
        warnings.append(f"this disk refuses the log too ({v.error.split(':')[0]}); which of the two errors Oracle "
                        f"raises first is not public")
    claims["error"] = seen + ["log-member-sector"]
    return replace(v, allowed=False, error=ora_01168(physical, others), warnings=warnings,
                   claims=_dedupe(claims), reason=f"the log group's other members are on {others}-byte physical "
                   f"sectors, this member's is {physical}")


@dataclass
class _Ask:
    """What _judge decides on: the BLOCKSIZE, the sectors of the disk and those the database sees,
    where the log is, how it is written (None: not known), the override, and what is said so far."""
    chosen: int
    default: int
    is_default: bool
    sectors: tuple[int, int]
    seen: tuple[int, int]
    in_asm: bool
    emulated: bool
    io_mode: str | None
    io_rules: list[str]
    db_override: bool
    asm_override: bool
    platform: str
    file: str
    warnings: list[str]
    claims: dict[str, list[str]]
    seen_rules: list[str]
    logical_default: bool = False  # a 12.2+ disk group whose LOGICAL_SECTOR_SIZE is the model's default


def _buffered_how(io_rules: list[str]) -> str:
    return ("FILESYSTEMIO_OPTIONS NONE, the Linux default taken for a file on a file system" if io_rules else
            "--io-mode buffered: FILESYSTEMIO_OPTIONS NONE or ASYNCH")


def _judge(a: _Ask) -> Verdict:
    """Allowed, refused or not known, and why: the disk's own sectors and the I/O mode decide what
    I/O is possible, the sectors the database sees (the group's inside ASM) what it accepts."""
    (host, media), (seen_host, seen_media), chosen = a.sectors, a.seen, a.chosen
    allowed = (list(a.claims["default"]) if a.is_default else []) + a.seen_rules
    a.claims["allowed"] = allowed
    # Below SECTOR_SIZE a group's LOGICAL_SECTOR_SIZE decides; not named, it is the model's default.
    depends = ["asm-logical-default"] if a.logical_default and chosen < seen_media else []
    allowed += depends
    # 1024 above the media sector where it was the native log block: neither allowed nor refused.
    native_1024 = chosen == 1024 and a.platform in NATIVE_1024 and chosen > seen_media and not a.db_override
    if chosen == 1024 and not native_1024:
        native = "HP-UX's and Tru64's native redo block before 11.2" if a.platform in NATIVE_1024 else \
            "no public source shows it accepted there"
        a.warnings.append(f"BLOCKSIZE 1024 on {a.platform}: Oracle allows 1024 'for some platforms' and names none "
                          f"({native}): the verdict judges it by the sector sizes alone; whether Oracle accepts it is "
                          f"not known")
        allowed.append("blocksize-1024")

    def verdict(ok: bool | None, error: str | None, error_rules: list[str] | None, reason: str) -> Verdict:
        if error is not None:  # no error claim where nothing is refused
            a.claims["error"] = error_rules + depends
        return Verdict(ok, chosen, a.default, error, a.warnings, seen_host, seen_media, _dedupe(a.claims), reason)

    refusal = ora_01378(chosen, a.file, seen_media, seen_host)
    if not direct_io_ok(chosen, host):  # below the disk's own logical sector
        if a.io_mode is None:  # a file on a file system off Linux: FILESYSTEMIO_OPTIONS's default is not known
            allowed += ["below-logical-sector", "buffered-io", "below-logical-error"]
            if not a.db_override:  # refused whichever it is
                a.warnings.append(f"how a file on a file system on {a.platform} is written is not known "
                                  f"(FILESYSTEMIO_OPTIONS's default there is not public): BLOCKSIZE {chosen} < logical "
                                  f"sector {host} is refused either way, by EINVAL with direct I/O (SETALL, DIRECTIO) "
                                  f"and by the database's own check with buffered I/O (NONE, ASYNCH)")
                a.claims["warnings"] += a.io_rules
                return verdict(False, refusal, ["below-logical-error"],
                               f"blocksize {chosen} < host sector {host}, whichever the I/O mode")
            allowed += a.io_rules
            a.warnings.append(f"not known: how a file on a file system on {a.platform} is written is not public "
                              f"(FILESYSTEMIO_OPTIONS's default there), and it decides BLOCKSIZE {chosen} < logical "
                              f"sector {host}: with direct I/O (SETALL, DIRECTIO) the O_DIRECT write fails with "
                              f"EINVAL, override or not; with buffered I/O (NONE, ASYNCH) the page cache makes it "
                              f"possible and _disk_sector_size_override is assumed to lift the database's check; "
                              f"--io-mode says which")
            return verdict(None, None, None, f"not known: the I/O mode decides, and its default on {a.platform} is "
                                             f"not known")
        if a.io_mode == "direct":
            # The override changes what the database accepts, not what the disk can do.
            if a.db_override:
                a.warnings.append("_disk_sector_size_override does not help here: the O_DIRECT I/O itself fails "
                                  "with EINVAL")
            allowed += ["below-logical-sector"] + a.io_rules
            return verdict(False, refusal, ["below-logical-error"],
                           f"blocksize {chosen} < the disk's logical sector {host}: O_DIRECT I/O of {chosen} bytes "
                           f"is impossible")
        allowed += ["buffered-io"] + a.io_rules  # buffered-io says the override lifts the database's check
        if not a.db_override:
            allowed.append("below-logical-error")
            return verdict(False, refusal, ["below-logical-error"],
                           f"blocksize {chosen} < host sector {host}: the database's own check, not the I/O")
        a.warnings.append(f"BLOCKSIZE {chosen} < logical sector {host} is allowed here only because the log is "
                          f"written buffered ({_buffered_how(a.io_rules)}): the write goes through the page cache, "
                          f"and _disk_sector_size_override is assumed to lift the database's check (not public); "
                          f"with FILESYSTEMIO_OPTIONS=SETALL or DIRECTIO the O_DIRECT write would fail with EINVAL "
                          f"(--io-mode direct)")
    elif chosen < seen_host:
        allowed.append("asm-file-below-sector")
        return verdict(False, refusal, ["asm-which-error"],
                       f"blocksize {chosen} < host sector {seen_host} seen by the database")
    if chosen > seen_media:
        if a.db_override:
            a.warnings.append(f"BLOCKSIZE {chosen} > media sector size {seen_media}: allowed by "
                              f"_disk_sector_size_override=TRUE")
            allowed.append("override")
        elif native_1024:
            allowed.append("blocksize-1024-native")
            a.warnings.append(f"BLOCKSIZE 1024 > media sector size {seen_media} on {a.platform}: ORA-01378 refuses a "
                              f"BLOCKSIZE above the media sector (seeds 001 and 002, on Linux), yet 1024 was "
                              f"{a.platform}'s native log block before 11.2 (Ixora's table), written to disks of "
                              f"512-byte sectors: whether Oracle refuses it there is not known, so the verdict is "
                              f"neither allowed nor refused")
            return verdict(None, None, None, "not known: the sources point both ways")
        else:
            if a.asm_override:
                allowed.append("override-instance")
            allowed.append("above-media-sector")
            # The seeds show ORA-01378 for 4096 above a 512-byte media sector; none shows 1024 refused:
            # that it is, as 4096 is, is the sector sizes judging 1024 alone (blocksize-1024, assumed).
            error_rests_on = ["above-media-sector"] + (["blocksize-1024"] if chosen == 1024 else [])
            return verdict(False, refusal, error_rests_on,
                           f"blocksize {chosen} > media sector {seen_media}; _disk_sector_size_override=TRUE in the "
                           f"database instance allows it")
    if a.emulated and chosen == seen_media:
        if a.db_override:  # seed 003's way as well as the Guide's: no conflict left
            allowed.append("override")
        else:
            allowed.append("emulated-default-conflict")
            a.warnings.append(_emulated_conflict("the default BLOCKSIZE 4096" if a.is_default else "BLOCKSIZE 4096"))
    if host <= chosen < media:  # below the logical sector (buffered I/O) the page cache was said above
        if a.io_mode == "direct":
            a.warnings.append(rmw_warning(chosen, media))
            a.claims["warnings"] += ["below-media-sector"] + a.io_rules
        elif a.io_mode == "buffered":
            a.warnings.append(f"BLOCKSIZE {chosen} < physical sector {media}, written buffered "
                              f"({_buffered_how(a.io_rules)}, assumed): the read-modify-write moves, it does not go "
                              f"away. Through the page cache each synchronous {chosen}-byte write sends the whole "
                              f"page it is in to the disk (and reads that page first when it is not in memory), so "
                              f"the disk writes whole sectors and does none of its own; with "
                              f"FILESYSTEMIO_OPTIONS=SETALL or DIRECTIO each {chosen}-byte write is read-modify-"
                              f"written by the disk, the slowdown the Administrator's Guide warns of on "
                              f"emulation-mode disks (--io-mode direct)")
            a.claims["warnings"] += ["buffered-io"] + a.io_rules
        else:
            a.warnings.append(f"BLOCKSIZE {chosen} < physical sector {media}, and how a file on a file system on "
                              f"{a.platform} is written is not known (FILESYSTEMIO_OPTIONS's default there is not "
                              f"public): with direct I/O (SETALL, DIRECTIO) every {chosen}-byte write costs a "
                              f"read-modify-write (it starts or ends inside a physical sector); with buffered I/O "
                              f"(NONE, ASYNCH) the page cache decides the writes the disk sees; --io-mode says which")
            a.claims["warnings"] += ["below-media-sector", "buffered-io"] + a.io_rules
        if not a.in_asm:  # inside ASM the group's sizes allow it; outside, this rule does
            allowed.append("below-media-sector")
    allowed.append("blocksize-values")
    return verdict(True, None, None, "allowed")


def rmw_warning(blocksize: int, unit: int) -> str:
    """What a BLOCKSIZE below the physical sector (or write unit) costs, counted at both ends."""
    per = unit // blocksize
    return (f"BLOCKSIZE {blocksize} < physical sector {unit}: a redo write of fewer than {per} blocks covers a "
            f"physical sector only in part, and any write that starts or ends inside one does: {per - 1} of {per} "
            f"{blocksize}-byte writes start inside a sector and the other ends inside it, so every one costs a "
            f"read-modify-write")


def partial_units(offset: int, length: int, unit: int) -> int:
    """The units of `unit` bytes (physical sectors, write units) that a write of `length` bytes at
    `offset` covers only in part: its first if it starts inside one, its last if it ends inside
    one, one when they are the same unit. Each costs a device that writes whole units a read and a
    rewrite: a write that ends inside a unit leaves it for the next write to read again."""
    if length <= 0:
        return 0
    end = offset + length
    head, tail = offset % unit != 0, end % unit != 0
    if offset // unit == (end - 1) // unit:
        return int(head or tail)
    return int(head) + int(tail)


def log_partial_units(write_length: int, writes: int, unit: int, log_size: int | None = None) -> tuple[int, int]:
    """A redo log written in `writes` equal writes of `write_length` bytes from offset 0, wrapping
    at `log_size` as a log does: (writes not aligned to the unit at their start or end, units
    written in part), as redo-writer counts them (writes_unaligned_to_unit, partial_units)."""
    unaligned = partial = offset = 0
    for _ in range(writes):
        if log_size and offset + write_length > log_size:
            offset = 0
        unaligned += bool(offset % unit or write_length % unit)
        partial += partial_units(offset, write_length, unit)
        offset += write_length
    return unaligned, partial


@dataclass
class Wastage:
    redo_bytes: int
    blocksize: int
    blocks: int
    bytes_written: int
    header_bytes: int
    wastage_bytes: int
    wastage_pct: float


def redo_wastage(redo_bytes: int, blocksize: int) -> Wastage:
    """One write of `redo_bytes` of redo: whole blocks of `blocksize`, each with a 16-byte header."""
    if blocksize not in VALID_BLOCKSIZES:
        raise RulesUsageError(f"BLOCKSIZE {blocksize} is not valid: expected one of 512, 1024, 4096")
    if isinstance(redo_bytes, bool) or not isinstance(redo_bytes, int) or redo_bytes <= 0:
        raise RulesUsageError(f"redo size {redo_bytes!r} is not a positive number of bytes")
    payload = blocksize - REDO_BLOCK_HEADER
    blocks = -(-redo_bytes // payload)  # whole blocks, in integers (a float would overflow on huge sizes)
    written = blocks * blocksize
    wasted = blocks * payload - redo_bytes
    return Wastage(redo_bytes, blocksize, blocks, written, blocks * REDO_BLOCK_HEADER, wasted,
                   round(100.0 * wasted / written, 2))
