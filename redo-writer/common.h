/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every source of redo-writer shares and none of them defines: the program name its
 * messages begin with. Each module exports through a header of its own name (engine.h, stats.h,
 * report.h, nbd.h, redoblock.h, verify.h), and calls go one way: the command line (redo-writer.c)
 * calls the run, verify, the statistics and the report; the run calls the statistics, the NBD
 * members and the block format; the report the statistics; verify the block format and the report.
 */
#ifndef REDO_WRITER_COMMON_H
#define REDO_WRITER_COMMON_H

#define PROG "redo-writer"

#endif
