/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every source of redo-writer shares and none of them defines: the program name its
 * messages begin with. Each module exports through a header of its own name (engine.h, stats.h,
 * report.h), and calls go one way: the command line (redo-writer.c) calls the run, the
 * statistics and the report; the run and the report call the statistics.
 */
#ifndef REDO_WRITER_COMMON_H
#define REDO_WRITER_COMMON_H

#define PROG "redo-writer"

#endif
