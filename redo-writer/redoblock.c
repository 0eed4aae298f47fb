// SPDX-License-Identifier: Apache-2.0
/*
 * The checked redo block (redoblock.h): filled by the run's log writer (--format checked), parsed
 * and checked by verify. The CRC32C is table-driven software, eight bytes a step (slicing-by-8):
 * no SSE4.2 instruction, since the static build also runs on guests' emulated CPUs.
 */
#include <pthread.h>
#include <string.h>

#include "redoblock.h"

#define CRC32C_POLY 0x82F63B78u
#define GOLDEN 0x9E3779B97F4A7C15ULL

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The CRC register after `len` more bytes (not inverted: the caller starts with ~0 and ends with ~). */
static uint32_t crc_update(uint32_t crc, const unsigned char *p, size_t len)
{
	pthread_once(&crc_once, crc_init);
	for (; len >= 8; p += 8, len -= 8) {
		uint32_t lo = crc ^ le32(p), hi = le32(p + 4);

		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
		      crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

uint32_t crc32c(const void *buf, size_t len)
{
	return ~crc_update(~0u, buf, len);
}

static void put_le(unsigned char *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void fill_block(unsigned char *b, size_t blocksize, uint32_t number, uint32_t sequence, uint64_t pos,
		       unsigned used)
{
	unsigned char *payload = b + REDO_BLOCK_HEADER;
	uint64_t v = (pos + 8) * GOLDEN;

	b[0] = REDO_BLOCK_TYPE;
	b[1] = REDO_BLOCK_VERSION;
	put_le(b + 2, used, 2);
	put_le(b + 4, number, 4);
	put_le(b + 8, sequence, 4);
	put_le(b + 12, 0, 4);
	put_le(payload, pos, used < 8 ? used : 8);
	for (unsigned i = 8; i < used; i++, v += GOLDEN)
		payload[i] = (unsigned char)(v >> 56);
	memset(payload + used, 0, blocksize - REDO_BLOCK_HEADER - used);
	put_le(b + 12, crc32c(b, blocksize), 4);
}

void redo_fill(unsigned char *buf, size_t blocksize, uint64_t blocks, uint64_t pending, uint64_t pos,
	       uint64_t first_block, uint32_t sequence)
{
	uint64_t payload = blocksize - REDO_BLOCK_HEADER;

	for (uint64_t b = 0; b < blocks; b++) {
		unsigned used = (unsigned)(b + 1 < blocks ? payload : pending - b * payload);

		fill_block(buf + b * blocksize, blocksize, (uint32_t)(first_block + b), sequence, pos + b * payload, used);
	}
}

void redo_parse(const unsigned char *block, struct redo_header *h)
{
	h->type = block[0];
	h->version = block[1];
	h->used = (unsigned)get_le(block + 2, 2);
	h->number = (uint32_t)get_le(block + 4, 4);
	h->sequence = (uint32_t)get_le(block + 8, 4);
	h->checksum = (uint32_t)get_le(block + 12, 4);
}

uint32_t redo_checksum(const unsigned char *block, size_t blocksize)
{
	static const unsigned char zero[4];
	uint32_t crc = crc_update(~0u, block, 12);

	crc = crc_update(crc, zero, 4);
	return ~crc_update(crc, block + REDO_BLOCK_HEADER, blocksize - REDO_BLOCK_HEADER);
}

int redo_header_valid(const struct redo_header *h, size_t blocksize)
{
	return h->type == REDO_BLOCK_TYPE && h->version == REDO_BLOCK_VERSION && h->used >= 1 &&
	       h->used <= blocksize - REDO_BLOCK_HEADER;
}

uint64_t redo_pos(const unsigned char *block, const struct redo_header *h, uint64_t *mask)
{
	unsigned n = h->used < 8 ? h->used : 8;

	*mask = n == 8 ? ~0ULL : (1ULL << (8 * n)) - 1;
	return get_le(block + REDO_BLOCK_HEADER, n);
}

int redo_payload_ok(const unsigned char *block, const struct redo_header *h, size_t blocksize)
{
	const unsigned char *payload = block + REDO_BLOCK_HEADER;
	uint64_t mask, v = (redo_pos(block, h, &mask) + 8) * GOLDEN;

	for (unsigned i = 8; i < h->used; i++, v += GOLDEN)
		if (payload[i] != (unsigned char)(v >> 56))
			return 0;
	for (size_t i = h->used; i < blocksize - REDO_BLOCK_HEADER; i++)
		if (payload[i])
			return 0;
	return 1;
}
