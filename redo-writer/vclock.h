/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The run's threads on a virtual clock: the same thread functions and the same code as a run in real
 * time, but one runs at a time (coroutines of the calling thread), handed a baton, and time moves only when every thread waits. A thread
 * runs until it waits: on a condition (another thread's notify makes it ready, at the same moment),
 * or until a moment (a sleep, a device model's reply, a transaction's modelled CPU). When none is
 * ready, the clock jumps to the earliest moment one waits for, and every thread waiting for that
 * moment becomes ready, in the order they began to wait; ready threads run in the order they became
 * ready (one a notify wakes at that moment after them). The same inputs give the same run on any
 * host, however busy, and as fast as it can compute it.
 *
 * The engine calls these only when its run is in virtual time (a device model as its log member,
 * engine.h's clock); every call is made by a thread that holds the baton. Mutexes have no work to
 * do: only one thread runs at a time, and it lets the baton go only where it waits.
 */
#ifndef REDO_WRITER_VCLOCK_H
#define REDO_WRITER_VCLOCK_H

#include <pthread.h>
#include <stdint.h>

struct vthread;

/* The calling thread becomes the first thread on the clock, which reads 0; vclock_end after the
 * last join. */
void vclock_begin(void);
void vclock_end(void);
/* Starts a thread on the clock (a coroutine with attr's stack size): ready, it runs when the baton
 * reaches it. 0, or ENOMEM. */
int vclock_create(struct vthread **t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
/* Waits until thread `t` has returned, and frees it. */
void vclock_join(struct vthread *t);
/* The clock, nanoseconds from vclock_begin. */
uint64_t vclock_now(void);
/* Waits until the clock reads `t` (returns at once when it is past). */
void vclock_sleep_until(uint64_t t);
/* Waits until a thread notifies `on` (any address that names the condition). */
void vclock_wait(const void *on);
/* Makes the first thread waiting on `on` ready, or every one (`all`); the caller runs on. With a
 * wake-up time, each is ready that long after (a post/wait wake-up on the modelled host). */
void vclock_notify(const void *on, int all);
/* The wake-up time of every notify from here on (0: at once), each the same or an exponential draw
 * of that mean (`exponential`, from `seed`); kept over vclock_begin. */
void vclock_set_wakeup(uint64_t ns, int exponential, uint64_t seed);
/* A transaction's CPU on the modelled host: `ns` passes on one of its cores, counted as the calling
 * thread's CPU; with every core taken, the thread first waits for one (first come, first served). */
void vclock_burn(uint64_t ns);
/* The modelled host's cores from here on (0: one for every thread); kept over vclock_begin. */
void vclock_set_cpus(unsigned cpus);
/* The CPU the calling thread was given by vclock_burn. */
uint64_t vclock_thread_cpu(void);
/* How many times a thread was handed the baton. */
uint64_t vclock_switches(void);

#endif
