"""redo-writer's checked redo blocks (run --format checked) and `verify`, crash recovery on a log image.

Runs write small logs to regular files, the tests damage them (a sector zeroed, a block of an older
pass or of another place copied in, a range named unreadable) and check what recovery makes of them.
The block format is computed here independently of the C code (a bitwise CRC32C, the header packed by
struct) and compared byte for byte with what the run wrote; logs recovery has to reject in ways a run
cannot produce (a position that jumps, a block whose checksum is right and whose bytes are not) are
built here from the same functions.
"""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import pytest

from sectorlab.paths import REPO

SRC = REPO / "redo-writer"
HEADER = struct.Struct("<BBHIII")  # type, version, used, block number, sequence, checksum
GOLDEN = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1


def crc32c(data: bytes) -> int:
    """CRC32C bit by bit: reflected polynomial 0x82F63B78, init and final xor ~0."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def redo_byte(pos: int) -> int:
    return ((pos * GOLDEN) & MASK64) >> 56


def block(blocksize: int, number: int, sequence: int, pos: int, used: int) -> bytes:
    """A checked redo block: the header, `used` redo bytes from `pos` (the first 8 its position), zeros."""
    b = bytearray(blocksize)
    HEADER.pack_into(b, 0, 1, 1, used, number, sequence, 0)
    head = pos.to_bytes(8, "little")[:min(used, 8)]
    b[16:16 + len(head)] = head
    b[24:16 + used] = bytes(redo_byte(pos + i) for i in range(8, used))
    struct.pack_into("<I", b, 12, crc32c(bytes(b)))
    return bytes(b)


def with_crc(b: bytes | bytearray) -> bytes:
    """`b` with its checksum made right again."""
    b = bytearray(b)
    struct.pack_into("<I", b, 12, 0)
    struct.pack_into("<I", b, 12, crc32c(bytes(b)))
    return bytes(b)


def run_checked(binary, log, blocksize, log_size, *args):
    result = subprocess.run([binary, "run", "--format", "checked", "--target", str(log), "--blocksize", str(blocksize),
                             "--log-size", str(log_size), "--max-write", str(min(log_size, 65536)), *map(str, args),
                             "--output", "json"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def verify_raw(binary, *args):
    return subprocess.run([binary, "verify", *map(str, args)], capture_output=True, text=True, timeout=60)


def verify(binary, log, blocksize, log_size, *args):
    result = verify_raw(binary, "--target", log, "--blocksize", blocksize, "--log-size", log_size, *args,
                        "--output", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def put_block(log, index: int, blocksize: int, data: bytes) -> None:
    with open(log, "r+b") as f:
        f.seek(index * blocksize)
        f.write(data)


def get_block(log, index: int, blocksize: int) -> bytes:
    with open(log, "rb") as f:
        f.seek(index * blocksize)
        return f.read(blocksize)


def test_the_tests_crc32c_is_castagnolis():
    assert crc32c(b"123456789") == 0xE3069283


# blocksize, redo per commit, sessions: one block a write, several, group commit, blocks under 8 bytes used
@pytest.mark.parametrize("blocksize, redo, sessions", [(4096, 3000, 1), (512, 20000, 1), (512, 700, 4), (1024, 5, 1)])
def test_verify_recovers_every_byte_a_run_wrote(redo_writer, tmp_path, blocksize, redo, sessions):
    log, size = tmp_path / "redo.log", 8 << 20
    out = run_checked(redo_writer, log, blocksize, size, "--transactions", 200, "--redo-per-txn", redo,
                      "--sessions", sessions)
    assert out["format"] == "checked" and out["wraps"] == 0
    got = verify(redo_writer, log, blocksize, size, "--acknowledged", out["redo_bytes"], "--redo-per-txn", redo)
    assert got["sequence"] == 1 and got["recovered_to"] == out["redo_bytes"] == 200 * redo
    assert got["blocks_recovered"] == out["bytes_written"] // blocksize
    assert (got["end_block"], got["end_reason"]) == (got["blocks_recovered"], "unwritten")
    assert (got["torn_blocks"], got["torn_header_ok"], got["unreadable_blocks"], got["valid_after_end"],
            got["corrupt_undetected"]) == (0, 0, 0, 0, 0)
    assert (got["acknowledged"], got["lost_bytes"], got["lost_commits"], got["recovered_beyond_acknowledged"]) == (
        200 * redo, 0, 0, 0)


def test_a_block_field_by_field_and_its_crc(redo_writer, tmp_path):
    """One commit of 10,000 bytes in 4 KiB blocks: 4080 + 4080 + 1840 bytes, then one of 3,000."""
    log = tmp_path / "redo.log"
    run_checked(redo_writer, log, 4096, 1 << 20, "--transactions", 2, "--redo-per-txn", 10000)
    image = log.read_bytes()
    b = image[4096:8192]
    kind, version, used, number, sequence, checksum = HEADER.unpack_from(b)
    assert (kind, version, used, number, sequence) == (1, 1, 4080, 1, 1)
    assert checksum == crc32c(b[:12] + bytes(4) + b[16:])
    assert int.from_bytes(b[16:24], "little") == 4080
    assert b[24:] == bytes(redo_byte(4080 + i) for i in range(8, 4080))
    expected = [block(4096, 0, 1, 0, 4080), block(4096, 1, 1, 4080, 4080), block(4096, 2, 1, 8160, 1840),
                block(4096, 3, 1, 10000, 4080), block(4096, 4, 1, 14080, 4080), block(4096, 5, 1, 18160, 1840)]
    assert image[:6 * 4096] == b"".join(expected)
    assert image[6 * 4096:] == bytes(len(image) - 6 * 4096), "the rest of the log was never written"


def test_a_block_that_carries_fewer_than_8_bytes_holds_the_low_bytes_of_its_position(redo_writer, tmp_path):
    log = tmp_path / "redo.log"
    run_checked(redo_writer, log, 512, 1 << 20, "--transactions", 3, "--redo-per-txn", 5)
    image = log.read_bytes()
    assert image[:3 * 512] == block(512, 0, 1, 0, 5) + block(512, 1, 1, 5, 5) + block(512, 2, 1, 10, 5)
    assert image[512 + 16:512 + 21] == (5).to_bytes(8, "little")[:5]


def torn_log(redo_writer, tmp_path):
    """100 commits of 4080 bytes, one 4 KiB block each, in a log of 256 blocks."""
    log = tmp_path / "redo.log"
    out = run_checked(redo_writer, log, 4096, 1 << 20, "--transactions", 100, "--redo-per-txn", 4080)
    assert out["writes"] == 100 and out["redo_bytes"] == 100 * 4080
    return log, out


@pytest.mark.parametrize("sector", [0, 1, 7])
def test_a_zeroed_sector_tears_the_block_and_ends_the_redo(redo_writer, tmp_path, sector):
    log, out = torn_log(redo_writer, tmp_path)
    k = 37
    with open(log, "r+b") as f:
        f.seek(k * 4096 + sector * 512)
        f.write(bytes(512))
    got = verify(redo_writer, log, 4096, 1 << 20, "--acknowledged", out["redo_bytes"], "--redo-per-txn", 4080)
    assert (got["end_block"], got["end_reason"]) == (k, "bad-checksum")
    assert got["blocks_recovered"] == k and got["recovered_to"] == k * 4080, "the torn block's position"
    assert got["lost_bytes"] == (100 - k) * 4080 and got["lost_commits"] == 100 - k
    assert got["valid_after_end"] == 100 - k - 1, "durable redo beyond the tear that recovery cannot reach"
    assert got["corrupt_undetected"] == 0
    if sector:
        # The header and the position are intact: only the checksum tells the block is torn.
        assert (got["torn_blocks"], got["torn_header_ok"]) == (1, 1)
    else:
        # The header is gone: nothing reads as a block of the current sequence there.
        assert (got["torn_blocks"], got["torn_header_ok"]) == (0, 0)


def test_a_torn_block_whose_position_is_wrong_a_header_check_would_catch(redo_writer, tmp_path):
    log, _ = torn_log(redo_writer, tmp_path)
    b = bytearray(get_block(log, 20, 4096))
    b[16:24] = (12345).to_bytes(8, "little")
    put_block(log, 20, 4096, bytes(b))
    got = verify(redo_writer, log, 4096, 1 << 20)
    assert (got["end_block"], got["end_reason"]) == (20, "bad-checksum")
    assert (got["torn_blocks"], got["torn_header_ok"]) == (1, 0)


def test_torn_blocks_after_the_end_are_counted_too(redo_writer, tmp_path):
    log, _ = torn_log(redo_writer, tmp_path)
    for k in (10, 50):
        b = bytearray(get_block(log, k, 4096))
        b[4000] ^= 0xFF
        put_block(log, k, 4096, bytes(b))
    got = verify(redo_writer, log, 4096, 1 << 20)
    assert (got["end_block"], got["torn_blocks"], got["torn_header_ok"]) == (10, 2, 2)
    assert got["valid_after_end"] == 100 - 10 - 2


def test_a_wrapped_log_is_recovered_from_its_current_pass(redo_writer, tmp_path):
    """16 blocks, 40 one-block writes: pass 1 writes blocks 0-15, pass 2 0-15, pass 3 0-7."""
    log = tmp_path / "redo.log"
    out = run_checked(redo_writer, log, 4096, 65536, "--transactions", 40, "--redo-per-txn", 4080)
    assert out["wraps"] == 2
    got = verify(redo_writer, log, 4096, 65536, "--acknowledged", out["redo_bytes"])
    assert (got["sequence"], got["blocks_recovered"], got["end_block"], got["end_reason"]) == (3, 8, 8,
                                                                                              "older-sequence")
    assert got["recovered_to"] == out["redo_bytes"] == 40 * 4080 and got["lost_bytes"] == 0
    assert HEADER.unpack_from(get_block(log, 8, 4096))[3:5] == (8, 2), "block 8 is of the pass before"


def test_a_checkpoint_counts_the_redo_lost_from_the_pass_recovery_starts_at(redo_writer, tmp_path):
    """A wrapped log (three passes of 16 blocks, the third to block 8) whose block 0 of the third pass
    is lost (back to the second pass's): recovery reaches nothing of the third pass. From block 0 of
    the one file verify counts every acknowledged byte past the second pass's end as lost; with the
    third pass's start as its checkpoint (a database's: the passes before were checkpointed) it counts
    the third pass's, as a database's recovery would lose them."""
    older, log = tmp_path / "older.log", tmp_path / "redo.log"
    run_checked(redo_writer, older, 4096, 65536, "--transactions", 20, "--redo-per-txn", 4080)
    out = run_checked(redo_writer, log, 4096, 65536, "--transactions", 40, "--redo-per-txn", 4080)
    put_block(log, 0, 4096, get_block(older, 0, 4096))
    ack, third = out["redo_bytes"], 32 * 4080
    plain = verify(redo_writer, log, 4096, 65536, "--acknowledged", ack, "--redo-per-txn", 4080)
    assert plain["blocks_recovered"] == 0 and plain["lost_commits"] == 40 and plain["checkpoint"] is None
    got = verify(redo_writer, log, 4096, 65536, "--acknowledged", ack, "--redo-per-txn", 4080, "--checkpoint", third)
    assert (got["checkpoint"], got["lost_bytes"], got["lost_commits"]) == (third, 8 * 4080, 8)
    text = verify_raw(redo_writer, "--target", log, "--blocksize", 4096, "--log-size", 65536, "--acknowledged", ack,
                      "--checkpoint", third)
    assert f"acknowledged to byte {ack} (recovery from the checkpoint at byte {third}): {8 * 4080} bytes lost" \
        in text.stdout, text.stdout


def test_a_block_of_an_older_pass_ends_the_redo(redo_writer, tmp_path):
    """Block 5 as the first pass left it (a run of 20 writes) put back into the third pass (40 writes)."""
    older, log = tmp_path / "older.log", tmp_path / "redo.log"
    run_checked(redo_writer, older, 4096, 65536, "--transactions", 20, "--redo-per-txn", 4080)
    run_checked(redo_writer, log, 4096, 65536, "--transactions", 40, "--redo-per-txn", 4080)
    assert HEADER.unpack_from(get_block(older, 5, 4096))[3:5] == (5, 1)
    put_block(log, 5, 4096, get_block(older, 5, 4096))
    got = verify(redo_writer, log, 4096, 65536)
    assert (got["sequence"], got["blocks_recovered"], got["end_block"], got["end_reason"]) == (3, 5, 5,
                                                                                              "older-sequence")
    assert got["recovered_to"] == (32 + 5) * 4080 and got["valid_after_end"] == 2 and got["torn_blocks"] == 0


def test_a_good_block_in_the_wrong_place_ends_the_redo(redo_writer, tmp_path):
    log, _ = torn_log(redo_writer, tmp_path)
    put_block(log, 30, 4096, get_block(log, 12, 4096))
    got = verify(redo_writer, log, 4096, 1 << 20)
    assert (got["end_block"], got["end_reason"], got["torn_blocks"]) == (30, "block-number", 0)


def test_unreadable_ranges_end_the_redo_and_are_counted(redo_writer, tmp_path):
    log, out = torn_log(redo_writer, tmp_path)
    ranges = tmp_path / "unreadable"
    # Part of block 10 and of block 11; block 200, never written; a range past the log.
    ranges.write_text(f"{10 * 4096 + 4000} 200\n{200 * 4096} 1\n{1 << 30} 4096\n")
    got = verify(redo_writer, log, 4096, 1 << 20, "--unreadable", ranges, "--acknowledged", out["redo_bytes"])
    assert (got["end_block"], got["end_reason"], got["unreadable_blocks"]) == (10, "unreadable", 3)
    assert got["recovered_to"] == 10 * 4080 and got["valid_after_end"] == 100 - 12
    assert got["lost_bytes"] == 90 * 4080 and got["lost_commits"] is None


def test_the_acknowledged_position_against_what_was_recovered(redo_writer, tmp_path):
    log, out = torn_log(redo_writer, tmp_path)
    got = verify(redo_writer, log, 4096, 1 << 20, "--acknowledged", 50 * 4080 + 1, "--redo-per-txn", 4080)
    assert (got["lost_bytes"], got["lost_commits"], got["recovered_beyond_acknowledged"]) == (0, 0,
                                                                                              50 * 4080 - 1)
    text = verify_raw(redo_writer, "--target", log, "--blocksize", 4096, "--log-size", 1 << 20, "--acknowledged",
                      out["redo_bytes"] + 100, "--redo-per-txn", 4080)
    assert text.returncode == 0, text.stderr
    assert ("recovered 100 blocks, the redo to byte 408000; it ends at block 100 (offset 409600): unwritten"
            in text.stdout)
    assert "acknowledged to byte 408100: 100 bytes lost (1 commits), 0 bytes recovered beyond it" in text.stdout


@pytest.mark.parametrize("mode", ["mirror", "race"])
def test_both_members_hold_the_same_checked_redo(redo_writer, tmp_path, mode):
    """A member behind in a race writes several log writes in one: from where each was filled."""
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    out = run_checked(redo_writer, a, 512, 4 << 20, f"--{mode}", b, "--sessions", 8, "--duration", 1,
                      "--redo-per-txn", 300)
    assert a.read_bytes() == b.read_bytes()
    got = verify(redo_writer, b, 512, 4 << 20)
    assert got["recovered_to"] == out["redo_bytes"] and got["sequence"] == out["wraps"] + 1
    assert (got["torn_blocks"], got["corrupt_undetected"]) == (0, 0)


def test_a_race_member_far_behind_writes_the_right_bytes(redo_writer, tmp_path):
    """null: wins every race; the file behind it writes what it is behind in one write."""
    log = tmp_path / "a.log"
    out = run_checked(redo_writer, log, 512, 4 << 20, "--race", "null:", "--sessions", 8, "--duration", 1,
                      "--redo-per-txn", 300)
    assert out["members"][0]["writes"] < out["writes"], "the file member wrote several log writes at once"
    got = verify(redo_writer, log, 512, 4 << 20)
    assert got["recovered_to"] == out["redo_bytes"] and got["corrupt_undetected"] == 0


def crafted(tmp_path, blocks: list[bytes]):
    log = tmp_path / "crafted.log"
    log.write_bytes(b"".join(blocks))
    return log


def test_a_position_that_jumps_ends_the_redo(redo_writer, tmp_path):
    blocks = [block(512, i, 4, 1000 + 496 * i, 496) for i in range(4)]
    blocks += [block(512, 4, 4, 1000 + 496 * 4 + 1, 496), block(512, 5, 4, 1000 + 496 * 5 + 1, 496)]
    blocks += [block(512, 6, 3, 0, 496), bytes(512)]
    got = verify(redo_writer, crafted(tmp_path, blocks), 512, 4096)
    assert (got["sequence"], got["blocks_recovered"], got["recovered_to"]) == (4, 4, 1000 + 4 * 496)
    assert (got["end_block"], got["end_reason"], got["valid_after_end"]) == (4, "position", 1)


def test_a_log_good_to_its_last_block_ends_at_the_end_of_the_log(redo_writer, tmp_path):
    blocks = [block(512, i, 1, 496 * i, 496) for i in range(7)] + [block(512, 7, 1, 496 * 7, 3)]
    got = verify(redo_writer, crafted(tmp_path, blocks), 512, 4096)
    assert (got["blocks_recovered"], got["recovered_to"], got["end_block"], got["end_reason"]) == (
        8, 496 * 7 + 3, None, "end-of-log")


def test_blocks_of_fewer_than_8_bytes_are_chained_on_the_bytes_they_hold(redo_writer, tmp_path):
    """Positions of 2^40 and more in blocks of 3 bytes: only their low 3 bytes are in the blocks."""
    base = (1 << 40) + 0xFFFFFE
    blocks = [block(512, i, 2, base + 3 * i, 3) for i in range(3)]
    blocks += [block(512, 3, 2, base + 3 * 3 + 7, 3), bytes(512)]
    got = verify(redo_writer, crafted(tmp_path, blocks), 512, 2560)
    assert (got["blocks_recovered"], got["end_block"], got["end_reason"]) == (3, 3, "position")
    # The higher bytes of the first position are in no block: taken as 0.
    assert got["recovered_to"] == (base & 0xFFFFFF) + 9


def test_bytes_wrong_under_a_right_checksum_are_counted(redo_writer, tmp_path):
    """What only recomputing the bytes finds: the lab's check of its own checksum."""
    bad = bytearray(block(512, 2, 1, 992, 496))
    bad[300] ^= 1
    padded = bytearray(block(512, 3, 1, 1488, 100))
    padded[400] = 7
    blocks = [block(512, 0, 1, 0, 496), block(512, 1, 1, 496, 496), with_crc(bad), with_crc(padded), bytes(512)]
    got = verify(redo_writer, crafted(tmp_path, blocks), 512, 2560)
    assert (got["blocks_recovered"], got["corrupt_undetected"], got["torn_blocks"]) == (4, 2, 0)


def test_a_plain_log_has_no_redo_to_recover(redo_writer, tmp_path):
    log = tmp_path / "plain.log"
    result = subprocess.run([redo_writer, "run", "--target", str(log), "--blocksize", "4096", "--transactions", "3",
                             "--log-size", str(1 << 20), "--max-write", "65536"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    got = verify(redo_writer, log, 4096, 1 << 20)
    assert (got["sequence"], got["blocks_recovered"], got["recovered_to"], got["end_reason"]) == (0, 0, 0,
                                                                                                 "bad-checksum")
    assert got["torn_blocks"] == 0


@pytest.mark.parametrize("args, says", [
    ([], "verify needs --target: expected the log image: a file or a block device"),
    (["--target", "LOG"], "verify needs --blocksize"),
    (["--target", "LOG", "--blocksize", 4096], "verify needs --log-size: expected the run's --log-size"),
    (["--target", "LOG", "--blocksize", 3000, "--log-size", 1 << 20],
     "--blocksize 3000 is not one of 512|1024|2048|4096|8192|16384|32768|65536"),
    (["--target", "LOG", "--blocksize", 256, "--log-size", 1 << 20], "--blocksize 256 is out of range: expected 512"),
    (["--target", "LOG", "--blocksize", 131072, "--log-size", 1 << 20], "--blocksize 131072 is out of range"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 5000], "--log-size 5000: expected a multiple of the block "
                                                                   "size 4096"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 2 << 20], "--log-size 2097152 is larger than"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 1 << 20, "--redo-per-txn", 10],
     "--redo-per-txn counts the commits lost: expected --acknowledged too"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 1 << 20, "--checkpoint", 10],
     "--checkpoint 10: the redo lost is counted from it up to --acknowledged: expected --acknowledged too"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 1 << 20, "--acknowledged", 5, "--checkpoint", 10],
     "--checkpoint 10 is past --acknowledged 5: expected at most 5"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 1 << 20, "--output", "xml"],
     "--output 'xml' is not one of text|json"),
    (["--target", "nbd+unix:///?socket=/run/x.sock", "--blocksize", 4096, "--log-size", 1 << 20],
     "expected a file or a block device (verify reads no NBD export"),
    (["--target", "DIR", "--blocksize", 4096, "--log-size", 1 << 20], "is not a regular file or a block device"),
    (["--target", "DIR/missing", "--blocksize", 4096, "--log-size", 1 << 20], "No such file or directory"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 1 << 20, "--bogus", 1], "unknown option --bogus"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 1 << 20, "--mirror-unreadable", "LOG"],
     "--mirror-unreadable names the --mirror member's medium errors: expected --mirror too"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 1 << 20, "--mirror", "DIR/./redo.log"],
     "is the --target"),
    (["--target", "LOG", "--blocksize", 4096, "--log-size", 1 << 20, "--mirror", "DIR/missing"],
     "--mirror DIR/missing: No such file or directory"),
])
def test_bad_verify_input_exits_2_with_one_line(redo_writer, tmp_path, args, says):
    log = tmp_path / "redo.log"
    log.write_bytes(bytes(1 << 20))
    args = [str(a).replace("LOG", str(log)).replace("DIR", str(tmp_path)) for a in args]
    result = verify_raw(redo_writer, *args)
    assert result.returncode == 2 and result.stdout == ""
    assert says.replace("DIR", str(tmp_path)) in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_a_multiplexed_group_is_recovered_block_by_block_from_whichever_member_is_good(redo_writer, tmp_path):
    """run --mirror writes the same blocks to both members. A block torn in one member and one
    unreadable in the other, at different places: recovery reads each from the member where it is
    good and recovers the whole log, saying how many came from the mirror; the same block bad in
    both ends the redo there, as it does with one member."""
    a, b, bs, size = tmp_path / "a.log", tmp_path / "b.log", 512, 1 << 20
    run = subprocess.run([redo_writer, "run", "--format", "checked", "--target", a, "--mirror", b, "--blocksize",
                          str(bs), "--log-size", str(size), "--transactions", "100", "--output", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert a.read_bytes() == b.read_bytes()
    whole = verify(redo_writer, a, bs, size, "--mirror", b)
    assert whole["blocks_from_mirror"] == 0 and whole["end_reason"] == "unwritten"
    n = whole["blocks_recovered"]
    torn = bytearray(get_block(a, 10, bs))
    torn[300:] = bytes(bs - 300)
    put_block(a, 10, bs, bytes(torn))  # member a: block 10 torn (its checksum fails)
    ranges = tmp_path / "b.unreadable"
    ranges.write_text(f"{20 * bs} {bs}\n")  # member b: block 20 unreadable
    both = verify(redo_writer, a, bs, size, "--mirror", b, "--mirror-unreadable", ranges)
    assert (both["blocks_recovered"], both["recovered_to"], both["blocks_from_mirror"]) == (
        n, whole["recovered_to"], 1), both
    assert both["torn_blocks"] == 0 and both["unreadable_blocks"] == 0  # what recovery read was good
    alone = verify(redo_writer, a, bs, size)
    assert (alone["blocks_recovered"], alone["end_reason"]) == (10, "bad-checksum")
    put_block(b, 10, bs, bytes(torn))  # the same block torn in both members
    ended = verify(redo_writer, a, bs, size, "--mirror", b, "--mirror-unreadable", ranges)
    assert (ended["blocks_recovered"], ended["end_reason"], ended["torn_blocks"]) == (10, "bad-checksum", 1), ended


@pytest.mark.parametrize("line", ["12", "5 x", "1 2 3", "-1 5", "0x10 5", "7 0", "18446744073709551615 1",
                                  "99999999999999999999999 1"])
def test_an_unreadable_line_that_is_not_two_numbers_is_one_line(redo_writer, tmp_path, line):
    log, ranges = tmp_path / "redo.log", tmp_path / "unreadable"
    log.write_bytes(bytes(65536))
    ranges.write_text(f"0 512\n\n{line}\n")
    result = verify_raw(redo_writer, "--target", log, "--blocksize", 512, "--log-size", 65536, "--unreadable", ranges)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"--unreadable {ranges} line 3: expected two numbers, OFFSET and LENGTH in bytes" in result.stderr


def _readable(path: Path) -> bool:
    try:
        with open(path, "rb"):
            return True
    except PermissionError:
        return False
    except OSError:
        return True


def test_an_image_that_cannot_be_read_exits_1(redo_writer, tmp_path):
    """A file this user may not read (as root with the right to read anything, a sysfs attribute that
    only takes writes)."""
    log = tmp_path / "redo.log"
    log.write_bytes(bytes(65536))
    log.chmod(0)
    log = next((p for p in (log, Path("/sys/bus/pci/rescan")) if not _readable(p)), None)
    if log is None:
        pytest.skip("no file here that this user cannot open for reading")
    result = verify_raw(redo_writer, "--target", log, "--blocksize", 512, "--log-size", 4096)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"redo-writer: cannot read {log}: open: Permission denied\n", result.stderr


def test_verify_reads_a_block_device(redo_writer, loop_device):
    """The run writes checked redo to a loop device; verify reads the device itself, read only."""
    dev = loop_device(512)
    out = run_checked(redo_writer, dev, 4096, 1 << 20, "--transactions", 30, "--redo-per-txn", 5000)
    got = verify(redo_writer, dev, 4096, 1 << 20, "--acknowledged", out["redo_bytes"])
    assert (got["recovered_to"], got["blocks_recovered"], got["lost_bytes"]) == (30 * 5000, 60, 0)
    too_large = verify_raw(redo_writer, "--target", dev, "--blocksize", 4096, "--log-size", 32 << 20)
    assert too_large.returncode == 2
    assert f"--log-size 33554432 is larger than {dev} (16777216 bytes)" in too_large.stderr
