"""The rules engine case by case, as a DBA would look them up: versions x sector sizes x discovery
method x override x BLOCKSIZE, and where the log is (a device, a file system, ASM at create, add
or mount), how it is written (direct or buffered I/O) and which instance sets the override. Each
case names its source and the claim of the verdict it is about (allowed or not, the error, the
default, the sizes the database sees, the warnings), and that claim must cite it: a rule the
engine applies without its source, or a case whose source the claim no longer rests on, fails;
where a case gives an evidence, it is that claim's. The expected answers are written from the
sources (docs/redo-blocksize.md), not read back from the engine."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sectorlab.inguest import asmrules, rules

V_ASM = "V$ASM_DISKGROUP"
GUIDE = "Administrator's Guide 12.1"
ADMIN_GUIDE = "Planning the Block Size of Redo Log Files"  # the Database Administrator's Guide 11.2
ORACLEASM = "asm_block_size()"
IXORA = "Ixora"
NOT_PUBLIC = "not public"
# Seed 003's own words, against the Guide's it quotes (docs/redo-blocksize.md, "Where the sources conflict").
SEED_003_FAILS = "the above command will fail unless the sector size check is overridden"
SEED_003_DEFAULT = "default is 512 bytes"
SEED_003_NOT_IN_ASM = "do not set this parameter in the ASM instance"
ORA_15085 = "ORA-15085"
ORA_15086 = "ORA-15086"
FILESYSTEMIO = "FILESYSTEMIO_OPTIONS"
LINUX_NONE = "set to none for Linux"  # Red Hat's tuning guide for Oracle 9i and 10g (RHEL 5)
NETAPP_ASM = "NetApp's Oracle filesystemio_options page"
COMPATIBLE = "must be set to 11.2 or higher"
PLATFORM_DEPENDENT = "The default value is platform dependent."  # the 12.1 guide, on SECTOR_SIZE's default


@dataclass
class Case:
    name: str
    disk: tuple[int, int]
    bs: int | None  # None: the default BLOCKSIZE
    allowed: bool | str | None  # None: not known; a string: the start of the error
    source: str  # must appear among the sources the claim cites
    evidence: str | None = None  # the claim's evidence, where the case is about it
    discovery: str | None = None
    version: str | None = None
    asmlib_logical: bool = False
    sector: int | None = None
    logical_sector: int | None = None
    override: bool = False
    platform: str = "linux"
    group: tuple[int, int | None] | None = None  # (SECTOR_SIZE, LOGICAL_SECTOR_SIZE) expected
    chosen: int | None = None  # the BLOCKSIZE the default comes to
    claim: str = "allowed"  # the claim of the verdict (rules.CLAIMS) the source and the evidence are about
    io_mode: str | None = None
    on_filesystem: bool = False
    operation: str = "create"
    override_in: str = "database"
    compatible: tuple[str | None, str | None] = (None, None)  # (COMPATIBLE.ASM, COMPATIBLE.RDBMS)
    members: int | None = None  # ADD LOGFILE MEMBER: the other members' physical sector


N512, E512, K4, P16 = (512, 512), (512, 4096), (4096, 4096), (4096, 16384)
CASES = [
    # On the disk itself, no ASM.
    Case("512n-512", N512, 512, True, ADMIN_GUIDE, "documented"),
    Case("512n-4096", N512, 4096, False, "seeds 001 and 002", "seed"),
    Case("512n-4096-override", N512, 4096, True, "seeds 000, 002 and 003", override=True),
    Case("512n-1024", N512, 1024, False, "seeds 001 and 002"),
    Case("512n-1024-override", N512, 1024, True, IXORA, "assumed", override=True),
    Case("512n-1024-hp-ux", N512, 1024, True, IXORA, "assumed", override=True, platform="hp-ux"),
    Case("512e-default", E512, None, True, "seeds 000 and 003", "assumed", chosen=4096),
    Case("512e-512", E512, 512, True, "seed 003", "seed"),
    Case("512e-1024", E512, 1024, True, IXORA, "assumed"),
    # The refusal is physics once the I/O is direct; on a device that it is, and that Oracle's error
    # for it is ORA-01378, are not public.
    Case("4kn-512", K4, 512, False, "O_DIRECT", "assumed"),
    Case("4kn-512-override", K4, 512, False, "seeds 001, 002", "assumed", override=True, claim="error"),
    Case("4kn-default", K4, None, True, "seeds 000 and 003", "seed", chosen=4096),
    Case("16k-default", P16, None, True, "minimum_io_size", "assumed", chosen=4096),
    # A disk group named by its sizes (any discovery method).
    Case("asm-512n-in-4096", N512, 4096, "ASM refuses", GUIDE, sector=4096),
    Case("asm-512n-in-4096/512", N512, 512, "ASM refuses", GUIDE, sector=4096, logical_sector=512),
    Case("asm-4kn-in-512", K4, 4096, "ASM refuses", GUIDE, sector=512),
    Case("asm-4kn-in-4096/512", K4, 4096, "ASM refuses", GUIDE, sector=4096, logical_sector=512),
    Case("asm-512e-in-4096-4096", E512, 4096, True, V_ASM, "documented", sector=4096),
    Case("asm-512e-in-4096-4096-12.1", E512, 4096, True, GUIDE, "assumed", sector=4096, version="12.1",
         claim="sizes"),
    Case("asm-16k-in-4096", P16, 4096, "ORA-59012", "ORA-59012", sector=4096),
    # A 12.2+ group whose LOGICAL_SECTOR_SIZE is not named: 512 is refused on the model's default (assumed).
    Case("asm-512e-in-4096-512", E512, 512, False, "ORA-15347", "assumed", sector=4096),
    Case("asm-512e-in-4096/512-512", E512, 512, True, V_ASM, sector=4096, logical_sector=512),
    Case("asm-512e-in-4096/512-4096", E512, 4096, True, V_ASM, sector=4096, logical_sector=512),
    Case("asm-512e-in-4096/512-default", E512, None, True, "compatible.rdbms", "assumed", sector=4096,
         logical_sector=512, chosen=4096),
    Case("asm-512e-in-512-4096", E512, 4096, False, "seeds 001 and 002", sector=512),
    Case("asm-512e-in-512-4096-override", E512, 4096, True, "seeds 000, 002 and 003", sector=512, override=True),
    Case("asm-logical-above-sector", E512, 512, "ORA-15375", "ORA-15375", sector=512, logical_sector=4096),
    # The group CREATE DISKGROUP makes through each discovery method.
    Case("asmlib-512e-12.1", E512, 512, False, ORACLEASM, discovery="asmlib", version="12.1", group=(4096, None),
         claim="sizes"),
    Case("asmlib-512e-19-4096", E512, 4096, True, ORACLEASM, "assumed", discovery="asmlib", version="19",
         group=(4096, 4096), claim="sizes"),
    Case("asmlib-512e-12.1-4096", E512, 4096, True, ORACLEASM, "documented", discovery="asmlib", version="12.1",
         group=(4096, None), claim="sizes"),
    # Before 12.2 the database sees the group's SECTOR_SIZE as both sectors: seed 000 (12.1.0.2).
    Case("afd-4kn-12.1-default", K4, None, True, "seed 000", "seed", discovery="afd", version="12.1",
         group=(4096, None), chosen=4096, claim="default"),
    Case("asmlib-logical-512e-12.1", E512, 512, True, "seed 003", discovery="asmlib", version="12.1",
         asmlib_logical=True, group=(512, None)),
    Case("asmlib-logical-512e-19-4096", E512, 4096, False, ORACLEASM, discovery="asmlib", version="19",
         asmlib_logical=True, group=(512, 512), claim="sizes"),
    Case("asmlib-logical-512e-19-4096-override", E512, 4096, True, "seeds 000, 002 and 003", discovery="asmlib",
         version="19", asmlib_logical=True, override=True, group=(512, 512)),
    Case("asmlib-512n", N512, 512, True, ORACLEASM, discovery="asmlib", version="12.1", group=(512, None),
         claim="sizes"),
    Case("asmlib-4kn-512", K4, 512, False, "O_DIRECT", discovery="asmlib", version="12.1", group=(4096, None)),
    Case("asmlib-16k", P16, 4096, "ORA-59012", "ORA-59012", discovery="asmlib"),
    Case("asmlib-logical-16k", P16, 4096, True, "minimum_io_size", "assumed", discovery="asmlib", version="12.1",
         asmlib_logical=True, group=(4096, None), claim="default"),
    Case("udev-512e-12.1-512", E512, 512, True, "NetApp", "assumed", discovery="udev", version="12.1",
         group=(512, None), claim="sizes"),
    Case("udev-512e-12.1-4096", E512, 4096, False, "NetApp", discovery="udev", version="12.1", group=(512, None),
         claim="sizes"),
    Case("udev-512e-19-default", E512, None, True, "NetApp", discovery="udev", version="19", group=(512, 512),
         chosen=512, claim="sizes"),
    Case("udev-512e-19-named-4096/512", E512, 512, True, V_ASM, "documented", discovery="udev", version="19",
         sector=4096, logical_sector=512, group=(4096, 512)),
    Case("udev-512e-19-named-4096-512", E512, 512, False, "ORA-15347", "assumed", discovery="udev", version="19",
         sector=4096, group=(4096, None)),
    Case("udev-4kn", K4, None, True, "NetApp", discovery="udev", version="19", group=(4096, 4096), chosen=4096,
         claim="sizes"),
    Case("udev-16k", P16, 4096, "ORA-59012", "ORA-59012", discovery="udev", version="19"),
    Case("afd-512e-19", E512, None, True, NOT_PUBLIC, "assumed", discovery="afd", version="19", group=(512, 512),
         chosen=512, claim="sizes"),
    Case("afd-4kn-12.1", K4, None, True, NOT_PUBLIC, discovery="afd", version="12.1", group=(4096, None),
         chosen=4096, claim="sizes"),
    Case("asmlib-512e-named-512", E512, 512, "ASM refuses", GUIDE, discovery="asmlib", version="12.1", sector=512),
    Case("asmlib-logical-512e-named-4096", E512, 4096, "ASM refuses", GUIDE, discovery="asmlib", version="12.1",
         asmlib_logical=True, sector=4096),
    Case("asmlib-512e-named-4096/512", E512, 512, "ASM refuses", GUIDE, discovery="asmlib", version="19",
         sector=4096, logical_sector=512),
    Case("udev-512n-named-4096/512", N512, 512, "ASM refuses", GUIDE, discovery="udev", version="19", sector=4096,
         logical_sector=512),
]

# Issue 49, the rules engine after an outside audit: each point's cases, from its sources.
AUDIT_CASES = [
    # 1. A 512e disk outside ASM: the Guide (as seed 003 quotes it) and seed 003 itself conflict on the
    #    default and on BLOCKSIZE 4096 without the override; both answers are said, the verdict is assumed.
    Case("1-512e-4096", E512, 4096, True, SEED_003_FAILS, "assumed"),
    Case("1-512e-4096-file", E512, 4096, True, "emulation-mode disks", "assumed", on_filesystem=True),
    Case("1-512e-default", E512, None, True, SEED_003_DEFAULT, "assumed", chosen=4096),
    Case("1-512e-default-claim", E512, 512, True, SEED_003_DEFAULT, "assumed", claim="default"),
    Case("1-512e-4096-override", E512, 4096, True, "seeds 000, 002 and 003", "seed", override=True),
    # 2. Mounting a group whose disk now reports another sector size: ORA-15085 (its error message), at
    #    mount (the 12.1 guide: "during the mount operation"); create and add stay the engine's words.
    Case("2-mount-asmlib-now-physical", E512, 512,
         'ORA-15085: disk "/dev/sdb" has inconsistent sector size (expected 512, actual 4096) with disk group '
         '"REDO"', ORA_15085, "documented", discovery="asmlib", version="19", sector=512, operation="mount"),
    Case("2-mount-asmlib-now-logical", E512, 4096,
         'ORA-15085: disk "/dev/sdb" has inconsistent sector size (expected 4096, actual 512)', ORA_15085,
         "documented", discovery="asmlib", asmlib_logical=True, version="12.1", sector=4096, operation="mount"),
    # Neither of a 4Kn disk's sectors is 512: which one ASM reads cannot matter, the refusal is documented.
    Case("2-mount-reformatted-4kn", K4, 4096, 'ORA-15085: disk "/dev/sdb" has inconsistent sector size (expected '
         '512, actual 4096)', "during the mount operation", "documented", sector=512, operation="mount"),
    Case("2-mount-reformatted-4kn-error", K4, 4096, "ORA-15085", ORA_15085, "documented", sector=512,
         operation="mount", claim="error"),
    # ASMLib shows a 512e disk as 4096 (its physical sector): the refusal rests on what ASMLib shows.
    Case("2-mount-asmlib-rests-on-what-it-shows", E512, 512, "ORA-15085", ORACLEASM, "documented",
         discovery="asmlib", version="19", sector=512, operation="mount", claim="error"),
    Case("2-mount-same-size", E512, 512, True, "during the mount operation", discovery="udev", version="19",
         sector=512, operation="mount", claim="sizes"),
    Case("2-mount-below-smallest-io", K4, 4096, "ASM refuses disk '/dev/sdb' (logical sector 4096", V_ASM,
         discovery="udev", version="19", sector=4096, logical_sector=512, operation="mount"),
    Case("2-add-4kn-in-512", K4, 4096, "ASM refuses", GUIDE, sector=512, operation="add"),
    Case("2-create-4kn-in-512", K4, 4096, "ASM refuses", GUIDE, sector=512),
    # 3. The override in the ASM instance: CREATE DISKGROUP without SECTOR_SIZE is ORA-15086 (its error
    #    message); with SECTOR_SIZE named it does not reach the database (seed 003 sets it in the
    #    database instance, "do not set this parameter in the ASM instance").
    Case("3-asm-override-create-unnamed", E512, 512, "ORA-15086: Diskgroup sector size must be specified.",
         ORA_15086, "documented", discovery="udev", version="19", override=True, override_in="asm"),
    Case("3-both-override-create-unnamed", E512, 512, "ORA-15086", ORA_15086, discovery="asmlib", version="19",
         override=True, override_in="both"),
    Case("3-asm-override-named-4096", E512, 4096, False, SEED_003_NOT_IN_ASM, "assumed", discovery="udev",
         version="19", sector=512, override=True, override_in="asm"),
    Case("3-both-override-named-4096", E512, 4096, True, "seeds 000, 002 and 003", discovery="udev", version="19",
         sector=512, override=True, override_in="both"),
    # 65 point 2: with SECTOR_SIZE named and the override in the ASM instance, a disk of another sector
    #    size: what the override does in ASM beyond ORA-15086 is not public (ORA-15086's own text).
    Case("65-2-asm-override-named-other-size", N512, None, None, ORA_15086, "assumed", discovery="udev",
         version="19", sector=4096, override=True, override_in="asm"),
    Case("65-2-both-override-named-other-size", N512, 4096, None, SEED_003_NOT_IN_ASM, "assumed", discovery="udev",
         version="19", sector=4096, override=True, override_in="both"),
    Case("65-2-asm-override-mount-other-size", N512, None, "ORA-15085", "during the mount operation", discovery="udev",
         version="19", sector=4096, override=True, override_in="asm", operation="mount"),
    # 65 point 1: ORA-15085 is a disk that reports another size with its ASM header kept (new firmware,
    #    ASMLib's flag); an NVMe LBA format erases the header (test_reformat_nvme.py), so it is no cause.
    Case("65-1-mount-512n-in-4096", N512, None, "ORA-15085", "inconsistent sector size value", "documented",
         discovery="udev", version="19", sector=4096, operation="mount"),
    # 65 point 7: ADD LOGFILE MEMBER onto a disk whose physical sector is not the other members' is
    #    ORA-01168 (its error message), whatever the BLOCKSIZE meets on the disk itself.
    Case("65-7-member-512e-beside-512n", E512, 512, "ORA-01168: physical block size 4096 does not match size 512",
         "ORA-01168", "documented", members=512),
    Case("65-7-member-4kn-beside-512n", K4, 512, "ORA-01168", "ORA-01168", "documented", members=512),
    Case("65-7-member-512n-beside-512n", N512, 512, True, "ORA-01168", "documented", members=512),
    Case("65-7-member-not-known-in-asm-beside-other-size", N512, None, "ORA-01168: physical block size 4096",
         "ORA-01168", "documented", discovery="udev", version="19", sector=4096, override=True, override_in="asm",
         members=512),
    Case("65-7-member-in-a-12.1-group", E512, 512, "ORA-01168: physical block size 512", "ORA-01168", "seed",
         discovery="udev", version="12.1", sector=512, members=4096),
    Case("65-7-member-in-asm-512-beside-4096", E512, 512, "ORA-01168: physical block size 512 does not match size 4096",
         "ORA-01168", "documented", sector=512, members=4096),
    Case("3-database-override-unnamed", E512, 4096, True, "seeds 000, 002 and 003", discovery="udev", version="19",
         override=True),
    Case("3-asm-override-mount", E512, 512, True, SEED_003_NOT_IN_ASM, "assumed", sector=512, operation="mount",
         override=True, override_in="asm", claim="warnings"),
    # 4. Below the logical sector the I/O mode decides: with direct I/O the kernel's EINVAL (physics),
    #    with buffered only the database's own check; the default is the platform's, and says its source.
    Case("4-4kn-512-direct", K4, 512, False, "O_DIRECT", "physics", io_mode="direct"),
    Case("4-4kn-512-device-default", K4, 512, False, "for raw devices not public", "assumed"),
    Case("4-4kn-512-file-direct", K4, 512, False, "O_DIRECT", "physics", io_mode="direct", on_filesystem=True),
    Case("4-4kn-512-file-default", K4, 512, "ORA-01378", LINUX_NONE, "assumed", on_filesystem=True),
    Case("4-4kn-512-buffered", K4, 512, "ORA-01378", FILESYSTEMIO, "assumed", io_mode="buffered"),
    Case("4-4kn-512-buffered-override", K4, 512, True, "the override is public only above the media sector",
         "assumed", io_mode="buffered", override=True),
    Case("4-4kn-512-buffered-error", K4, 512, False, "seeds 001, 002", "assumed", io_mode="buffered",
         claim="error"),
    Case("4-asm-4kn-512", K4, 512, False, NETAPP_ASM, "assumed", discovery="udev", version="19"),
    Case("4-512e-512-buffered", E512, 512, True, FILESYSTEMIO, "assumed", io_mode="buffered", claim="warnings"),
    # Off Linux FILESYSTEMIO_OPTIONS's default is not public: the verdict holds for both modes, or is not known.
    Case("4-aix-file-4kn-512", K4, 512, "ORA-01378", "nothing public per platform", "assumed", platform="aix",
         on_filesystem=True, claim="warnings"),
    Case("4-aix-file-4kn-512-either-way", K4, 512, False, "O_DIRECT", "assumed", platform="aix", on_filesystem=True),
    Case("4-solaris-file-4kn-512-override", K4, 512, None, "nothing public per platform", "assumed",
         platform="solaris", on_filesystem=True, override=True),
    Case("4-windows-file-512e-512", E512, 512, True, "nothing public per platform", "assumed", platform="windows",
         on_filesystem=True, claim="warnings"),
    Case("4-aix-file-4kn-512-direct", K4, 512, False, "O_DIRECT", "physics", platform="aix", on_filesystem=True,
         io_mode="direct"),
    Case("4-aix-device-4kn-512", K4, 512, False, "for raw devices not public", "assumed", platform="aix"),
    # 5. BLOCKSIZE 1024 above the media sector where 1024 was the native log block (Ixora's table):
    #    not known, neither allowed nor refused.
    Case("5-hp-ux-1024-512n", N512, 1024, None, IXORA, "assumed", platform="hp-ux"),
    Case("5-tru64-1024-512n", N512, 1024, None, IXORA, "assumed", platform="tru64"),
    Case("5-hp-ux-1024-asm-512", E512, 1024, None, IXORA, "assumed", platform="hp-ux", sector=512),
    Case("5-hp-ux-1024-4kn", K4, 1024, False, "O_DIRECT", platform="hp-ux", io_mode="direct"),
    # Issue 65, point 4: the seeds show ORA-01378 for 4096 above a 512-byte media sector, none for 1024:
    # the refusal of 1024 is the sector sizes judging it alone (blocksize-1024), assumed.
    Case("5-linux-1024-512n", N512, 1024, False, "seeds 001 and 002", "assumed", claim="error"),
    Case("65-4-linux-1024-512n-fs", N512, 1024, False, IXORA, "assumed", claim="error", on_filesystem=True),
    # Issue 65, point 3: ORA-59012's and ORA-59013's texts name no size; a 16 KiB sector refused is assumed.
    Case("65-3-udev-16k", P16, 4096, "ORA-59012", "no value named", "assumed", discovery="udev", version="19"),
    Case("65-3-asmlib-16k", P16, 4096, "ORA-59012", "no value named", "assumed", discovery="asmlib"),
    Case("5-aix-1024-512n", N512, 1024, False, "seeds 001 and 002", platform="aix"),
    # 6. Evidence per claim: rules about reading the inputs stay in the sizes claim.
    Case("6-4096/512-takes-512", E512, 512, True, V_ASM, "documented", sector=4096, logical_sector=512),
    Case("6-4096/512-takes-4096", E512, 4096, True, V_ASM, "documented", sector=4096, logical_sector=512),
    Case("6-4096/512-sizes", E512, 512, True, NOT_PUBLIC, "assumed", sector=4096, logical_sector=512, claim="sizes"),
    Case("6-seed-001-error", N512, 4096, "ORA-01378: The logical block size (4096) of file +REDO is not compatible "
         "with the disk sector size (media sector size is 512 and host sector size is 512)", "seeds 001 and 002",
         "seed", claim="error"),
    Case("6-16k-4096-allowed", P16, 4096, True, "seed 003", "seed"),
    Case("6-16k-4096-default", P16, 4096, True, "minimum_io_size", "assumed", claim="default"),
    Case("6-file-sizes", K4, 4096, True, NOT_PUBLIC, "assumed", on_filesystem=True, claim="sizes"),
    # 7. Labels: a 12.2+ group without LOGICAL_SECTOR_SIZE is judged by the 12.2 rule; ASMLib's limit is its
    #    driver's I/O unit; BLOCKSIZE's values are the Guide's; COMPATIBLE.ASM/RDBMS of 11.2 for SECTOR_SIZE 4096.
    Case("7-12.2-no-logical-4096", E512, 4096, True, V_ASM, "documented", sector=4096, version="19"),
    Case("7-12.2-no-logical-default", E512, 4096, True, NOT_PUBLIC, "assumed", sector=4096, version="19",
         claim="sizes"),
    Case("7-asmlib-4096-in-4096/512", E512, 512, "ASM refuses disk '/dev/sdb' (logical sector 4096", ORACLEASM,
         "documented", discovery="asmlib", version="19", sector=4096, logical_sector=512),
    Case("7-values", N512, 512, True, ADMIN_GUIDE, "documented"),
    # The Guide's sentence is about CREATE DISKGROUP naming a SECTOR_SIZE other than the default, which
    # it calls platform dependent: the model's 512 makes the check assumed; not checked elsewhere.
    Case("7-compatible-asm-11.1", K4, 4096, "ASM refuses SECTOR_SIZE 4096 with COMPATIBLE.ASM 11.1", COMPATIBLE,
         "assumed", sector=4096, compatible=("11.1", "11.1")),
    Case("7-compatible-asm-11.1-default", K4, 4096, "ASM refuses SECTOR_SIZE 4096", PLATFORM_DEPENDENT, "assumed",
         sector=4096, compatible=("11.1", "11.1")),
    Case("7-compatible-rdbms-10.1", K4, 4096, "ASM refuses SECTOR_SIZE 4096 with COMPATIBLE.RDBMS 10.1",
         COMPATIBLE, "assumed", discovery="udev", version="19", sector=4096, compatible=("19.0", "10.1")),
    Case("7-compatible-11.2", K4, 4096, True, COMPATIBLE, "assumed", sector=4096,
         compatible=("11.2.0.0.0", "11.2"), claim="sizes"),
    Case("7-compatible-512-10.1", N512, 512, True, ADMIN_GUIDE, sector=512, compatible=("10.1", "10.1")),
    Case("7-compatible-512-is-the-default", N512, 512, True, PLATFORM_DEPENDENT, "assumed", sector=512,
         compatible=("10.1", "10.1"), claim="sizes"),
    Case("7-compatible-discovered-not-checked", K4, 4096, True, COMPATIBLE, "documented", discovery="udev",
         version="19", compatible=("10.1", "10.1"), claim="warnings"),
    Case("7-compatible-mount-not-checked", K4, 4096, True, COMPATIBLE, "documented", sector=4096,
         operation="mount", compatible=("10.1", "10.1"), claim="warnings"),
    Case("7-compatible-add-not-checked", K4, 4096, True, COMPATIBLE, sector=4096, operation="add",
         compatible=("11.1", None), claim="warnings"),
]
ALL_CASES = CASES + AUDIT_CASES


def _group(c: Case) -> asmrules.DiskGroup | None:
    if not (c.discovery or c.sector):
        return None
    compatible = (asmrules.parse_compatible(c.compatible[0], "COMPATIBLE.ASM"),
                  asmrules.parse_compatible(c.compatible[1], "COMPATIBLE.RDBMS"))
    return asmrules.group_for(*c.disk, c.discovery, asmrules.parse_version(c.version), c.asmlib_logical, c.sector,
                              c.logical_sector, disk="/dev/sdb", compatible=compatible)


def _verdict(c: Case, group: asmrules.DiskGroup | None) -> rules.Verdict:
    return rules.evaluate(*c.disk, c.bs, c.override, file="+REDO", disk="/dev/sdb", platform=c.platform, group=group,
                          io_mode=c.io_mode, on_filesystem=c.on_filesystem, operation=c.operation,
                          override_in=c.override_in, via=["filesystem-device"] if c.on_filesystem else None,
                          members_sector=c.members)


def _sources(rule_ids: list[str]) -> str:
    return " | ".join(r["source"] for r in rules.cited(rule_ids))


@pytest.mark.parametrize("c", ALL_CASES, ids=[c.name for c in ALL_CASES])
def test_case(c: Case):
    try:
        group = _group(c)
    except asmrules.AsmError as e:  # the disk cannot be in such a group at all (ORA-59012, ORA-15375)
        assert isinstance(c.allowed, str) and str(e).startswith(c.allowed), e
        assert c.source in _sources(e.rules), e.rules
        if c.evidence:
            assert rules.weakest(e.rules) == c.evidence, (e.rules, [rules.RULES[r].evidence for r in e.rules])
        return
    if group is not None and c.group is not None:
        assert (group.sector_size, group.logical_sector_size) == c.group, c.source
    v = _verdict(c, group)
    if isinstance(c.allowed, str):
        assert v.allowed is False and v.error.startswith(c.allowed), v.error
    else:
        assert v.allowed is c.allowed, (c.source, v.error)
    if v.allowed is None:  # not known: no error, and a warning says why
        assert v.error is None and any("not known" in w for w in v.warnings), v.warnings
    claim = v.claims.get(c.claim, [])
    assert c.source in _sources(claim), f"{c.name}: its {c.claim} claim does not cite {c.source!r}: {v.claims}"
    if c.evidence:
        assert v.evidence_of(c.claim) == c.evidence, v.claims
    if c.chosen:
        assert v.blocksize == c.chosen
    assert "ORA-15038" not in (v.error or ""), "ORA-15038 is a mount error with another text"


# Rules no verdict of the model rests on: the command adds them (test_rules.py tests it there).
COMMAND_RULES = {"filesystem-device": "test_a_path_on_a_filesystem_gets_the_sizes_of_the_block_device_under_it"}


def test_there_are_at_least_40_cases_and_every_rule_is_in_one():
    assert len(CASES) >= 40 and len(AUDIT_CASES) >= 7 * 3
    used = set()
    for c in ALL_CASES:
        try:
            group = _group(c)
        except asmrules.AsmError as e:
            used |= set(e.rules)
            continue
        used |= set(_verdict(c, group).rests_on)
    for disk, discovery, version, named, *_ in FILE_CASES:
        used |= {r for f in asmrules.files_in(_file_group(disk, discovery, version, named)) for r in f.rests_on}
    from labtests.unit.inguest import test_rules
    for rule, test in COMMAND_RULES.items():
        assert hasattr(test_rules, test), test
        used.add(rule)
    assert set(rules.RULES) - used == set(), sorted(set(rules.RULES) - used)


def test_every_claim_of_a_verdict_is_the_weakest_of_its_own_rules_only():
    """Issue 49, point 6: a claim's evidence is the weakest of the rules it rests on, not of every
    rule the verdict names; the verdict's `evidence` is its allowed-or-not claim's."""
    for c in ALL_CASES:
        try:
            v = _verdict(c, _group(c))
        except asmrules.AsmError:
            continue
        for claim, rule_ids in v.claims.items():
            assert claim in rules.CLAIMS and rule_ids, (c.name, claim)
            assert v.evidence_of(claim) == max((rules.RULES[r].evidence for r in rule_ids), key=rules.EVIDENCE.index)
        assert v.evidence == v.evidence_of("allowed"), c.name
        assert set(v.rests_on) == {r for rule_ids in v.claims.values() for r in rule_ids}, c.name


# (disk, discovery, version, named (SECTOR_SIZE, LOGICAL_SECTOR_SIZE), spfile, a file of 512-byte blocks)
FILE_CASES = [
    (E512, "asmlib", "12.1", None, "bug 16870214", "ORA-15347"),  # seed 000: DATA on a 512e LUN became 4096
    (E512, "asmlib", "19", None, "fits as far as is public", "ORA-15347"),
    (E512, "udev", "19", (4096, 512), "fits as far as is public", "fits"),
    (E512, "udev", "19", None, "fits", "fits"),
    (K4, "udev", "12.1", None, "bug 16870214", "ORA-15347"),
]


def _file_group(disk, discovery, version, named):
    sector, logical = named or (None, None)
    return asmrules.group_for(*disk, discovery, asmrules.parse_version(version), False, sector, logical)


@pytest.mark.parametrize("disk, discovery, version, named, spfile, moved", FILE_CASES)
def test_what_the_spfile_and_a_file_of_512_byte_blocks_meet(disk, discovery, version, named, spfile, moved):
    got = {f.what.split(" ")[0]: f for f in asmrules.files_in(_file_group(disk, discovery, version, named))}
    assert got["spfile"].said.startswith(spfile) and "seed 000" in _sources(got["spfile"].rests_on)
    assert got["spfile"].allowed is (spfile != "bug 16870214")
    assert got["a"].said.startswith(moved) and (got["a"].allowed is (moved == "fits"))


@pytest.mark.parametrize("kwargs, fragment", [
    ({"method": "iscsi"}, "discovery method 'iscsi' is not known"),
    ({"method": "udev", "asmlib_logical": True}, "needs --asm-discovery asmlib"),
])
def test_discovery_bad_input(kwargs, fragment):
    with pytest.raises(asmrules.AsmUsageError, match=fragment):
        asmrules.discover(512, 4096, **kwargs)


@pytest.mark.parametrize("text, fragment", [
    ("10.2", "outside the model: expected 11.2 to 26"),
    (" 19 ", "is not a version such as"),
    ("19.3.0.0.0abc", "is not a version such as"),
    ("nineteen", "is not a version such as"),
])
def test_bad_versions(text, fragment):
    with pytest.raises(asmrules.AsmUsageError, match=fragment):
        asmrules.parse_version(text)


def test_logical_sector_size_before_12_2_is_bad_input():
    with pytest.raises(asmrules.AsmUsageError, match="LOGICAL_SECTOR_SIZE exists from ASM 12.2"):
        asmrules.group_for(512, 4096, None, asmrules.parse_version("12.1"), sector_size=4096, logical_sector_size=512)


def test_docs_table_lists_every_rule_with_its_evidence():
    from sectorlab.paths import REPO
    text = (REPO / "docs" / "redo-blocksize.md").read_text()
    for rule_id, rule in rules.RULES.items():
        assert f"| `{rule_id}` | {rule.evidence} |" in text, f"docs/redo-blocksize.md lacks the row of {rule_id}"


def test_ora_15085_names_causes_that_keep_the_asm_header():
    """An LBA format erases the namespace and ASM's header with it: the mount rule names it as what
    does not give ORA-15085, and the causes it names keep the header."""
    says = rules.RULES["asm-mount-sector-size"].says
    assert "its ASM header kept" in says and "new firmware" in says
    assert "LBA format erases the namespace" in says and "or LBA format" not in says
