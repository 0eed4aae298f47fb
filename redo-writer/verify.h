/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `verify`: crash recovery on a log image written with run --format checked (redoblock.h), as a
 * database recovers its current log: the redo is the chain of good blocks of the current sequence
 * from block 0 on, and ends at the first block that breaks it; of a multiplexed group (a mirror),
 * each block from whichever member continues the chain. Reports what was recovered, why it
 * ended, and what the checksum caught (torn blocks) or would have missed.
 */
#ifndef REDO_WRITER_VERIFY_H
#define REDO_WRITER_VERIFY_H

struct verify_config {
	const char *target;                 /* the log image: a regular file or a block device */
	const char *unreadable;             /* file of "OFFSET LENGTH" lines (medium errors), or NULL */
	const char *mirror;                 /* the log group's second member (multiplexed), or NULL */
	const char *mirror_unreadable;      /* its medium errors, or NULL */
	unsigned long long blocksize, log_size;
	int has_acknowledged, has_redo_per_txn, has_checkpoint;
	unsigned long long acknowledged;    /* redo byte position every acknowledged commit lies within */
	unsigned long long checkpoint;      /* redo byte position recovery starts from (0: the log's first) */
	unsigned long long redo_per_txn;    /* to count the commits lost */
	int json;
};

/* Exit status: 0 verified (whatever was lost), 1 the image cannot be read, 2 bad input; every
 * refusal and error is one line. */
int verify(const struct verify_config *cfg);

#endif
