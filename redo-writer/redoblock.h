/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The checked redo block (run --format checked, and verify): a 16-byte header, little endian --
 * type (1), format version (1), u16 `used` (redo bytes the block carries), u32 block number (its
 * index in the log), u32 log sequence (1 on the run's first pass over the log, +1 at each wrap), u32
 * CRC32C of the whole block with these 4 bytes taken as zero -- then the payload: `used` redo bytes
 * and zero padding. The first 8 redo bytes are the u64 redo byte position `pos` of the block's first
 * byte (its low `used` bytes when used < 8); the byte at position p beyond them is
 * (uint8_t)((p * 0x9E3779B97F4A7C15) >> 56), so any byte of the log can be recomputed from its position.
 */
#ifndef REDO_WRITER_REDOBLOCK_H
#define REDO_WRITER_REDOBLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Each redo block starts with a header of this many bytes; the rest of it carries redo. */
#define REDO_BLOCK_HEADER 16
#define REDO_BLOCK_TYPE 0x01
#define REDO_BLOCK_VERSION 0x01
/* The block number is 32 bits: a checked log has at most this many blocks. */
#define REDO_BLOCK_MAX_BLOCKS (1ULL << 32)

/* A block's header as read, whatever it holds. */
struct redo_header {
	unsigned type, version, used;
	uint32_t number, sequence, checksum;
};

/* CRC32C (Castagnoli): reflected polynomial 0x82F63B78, init ~0, final xor ~0; table-driven. */
uint32_t crc32c(const void *buf, size_t len);

/* Fills one log write: `blocks` blocks of `blocksize` bytes at `buf`, the first being block
 * `first_block` of the log, carrying `pending` redo bytes from position `pos` (blocksize - 16 a
 * block, the last the remainder), of log sequence `sequence`. */
void redo_fill(unsigned char *buf, size_t blocksize, uint64_t blocks, uint64_t pending, uint64_t pos,
	       uint64_t first_block, uint32_t sequence);

void redo_parse(const unsigned char *block, struct redo_header *h);
/* The checksum the block should hold (its header's checksum field taken as zero). */
uint32_t redo_checksum(const unsigned char *block, size_t blocksize);
/* Whether the header is one of this format: type, version, 1 <= used <= blocksize - 16. */
int redo_header_valid(const struct redo_header *h, size_t blocksize);
/* The position in the block's first redo bytes, and the mask of its bits they hold (all of them
 * when used >= 8, the low `used` bytes below that). */
uint64_t redo_pos(const unsigned char *block, const struct redo_header *h, uint64_t *mask);
/* Whether the payload is what the block's position says: its redo bytes, then zeros. */
int redo_payload_ok(const unsigned char *block, const struct redo_header *h, size_t blocksize);

#endif
