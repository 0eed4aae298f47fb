// SPDX-License-Identifier: Apache-2.0
/*
 * The virtual clock (vclock.h): the run's threads are coroutines of the calling thread, each with
 * a stack of its own (ucontext), so handing the baton on is a switch of registers and stack in
 * this process, not a wake-up through the kernel (a thread's wake-up cost about 17 us here, which
 * made 202 sessions slower than real time). The holder gives the baton away only when it waits:
 * to the first ready thread or, when none is ready, to the one waiting for the earliest moment
 * (the clock jumps there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "common.h"
#include "draw.h"
#include "vclock.h"

enum vstate { V_RUNNING, V_READY, V_TIMED, V_WAITING, V_DONE };

struct vthread {
	ucontext_t ctx;
	void *stack;
	enum vstate state;
	uint64_t wake, seq;         /* V_TIMED: the moment, and the order it began waiting in */
	const void *on;             /* V_WAITING: the condition */
	struct vthread *next;       /* in the ready queue or its condition's queue */
	uint64_t cpu_ns;
	void *(*fn)(void *);
	void *arg;
};

struct queue {
	const void *on;
	struct vthread *head, *tail;
};

/* Waiting on a condition: the engine's four, and a joined thread's own; more are kept as they come. */
#define MAX_CONDITIONS 64
/* A thread handed the baton this many times over without the clock moving: nothing the run does
 * takes time (a model that serves in no time, no CPU per transaction), and it would never end. */
#define MAX_STILL_SWITCHES 1000000ULL

static struct {
	uint64_t now, seq, switches, still;
	uint64_t wakeup_ns;         /* a notified thread runs this long after the notify ... */
	int wakeup_exponential;     /* ... or an exponential draw of that mean, from wakeup_rng */
	uint64_t wakeup_rng;
	unsigned cpus, cpus_busy;   /* the modelled host's cores (0: one for every thread) and those in use */
	struct queue cpu_queue;     /* threads waiting for a core, in the order they asked */
	struct queue ready;
	struct queue cond[MAX_CONDITIONS];
	int nconds;
	struct vthread **heap;      /* V_TIMED threads, earliest (wake, seq) first */
	size_t nheap, heap_cap;
	struct vthread first;
} vc;

static struct vthread *self;

static void fatal(const char *what)
{
	fprintf(stderr, "%s: virtual clock: %s\n", PROG, what);
	exit(1);
}

static void push(struct queue *q, struct vthread *t)
{
	t->next = NULL;
	if (q->tail)
		q->tail->next = t;
	else
		q->head = t;
	q->tail = t;
}

static struct vthread *pop(struct queue *q)
{
	struct vthread *t = q->head;

	if (t) {
		q->head = t->next;
		if (!q->head)
			q->tail = NULL;
	}
	return t;
}

static int earlier(const struct vthread *a, const struct vthread *b)
{
	return a->wake < b->wake || (a->wake == b->wake && a->seq < b->seq);
}

static void heap_push(struct vthread *t)
{
	size_t i;

	if (vc.nheap == vc.heap_cap) {
		size_t cap = vc.heap_cap ? 2 * vc.heap_cap : 64;
		struct vthread **h = realloc(vc.heap, cap * sizeof(*h));

		if (!h)
			fatal("out of memory for the threads' wake-ups");
		vc.heap = h;
		vc.heap_cap = cap;
	}
	for (i = vc.nheap++; i && earlier(t, vc.heap[(i - 1) / 2]); i = (i - 1) / 2)
		vc.heap[i] = vc.heap[(i - 1) / 2];
	vc.heap[i] = t;
}

static struct vthread *heap_pop(void)
{
	struct vthread *top = vc.heap[0], *last = vc.heap[--vc.nheap];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < vc.nheap) {
		if (c + 1 < vc.nheap && earlier(vc.heap[c + 1], vc.heap[c]))
			c++;
		if (!earlier(vc.heap[c], last))
			break;
		vc.heap[i] = vc.heap[c];
		i = c;
	}
	if (vc.nheap)
		vc.heap[i] = last;
	return top;
}

static void make_ready(struct vthread *t)
{
	t->state = V_READY;
	push(&vc.ready, t);
}

/* The next thread to hold the baton: the first ready one; when none is, the clock moves to the
 * earliest moment a thread waits for, and every thread waiting for that moment becomes ready, in the
 * order they began to wait (ahead of any a notify makes ready at that moment). NULL when every thread
 * waits on a condition. */
static struct vthread *pick(void)
{
	struct vthread *t;

	if (!vc.ready.head && vc.nheap) {
		uint64_t at = vc.heap[0]->wake;

		if (at > vc.now) {
			vc.now = at;
			vc.still = 0;
		}
		while (vc.nheap && vc.heap[0]->wake == at)
			make_ready(heap_pop());
	}
	t = pop(&vc.ready);
	if (t && ++vc.still > MAX_STILL_SWITCHES)
		fatal("no time passes: every write is served in no time and a transaction takes no CPU, so the run "
		      "would never reach its end; give the model a service time or --cpu-us-per-txn");
	if (t) {
		t->state = V_RUNNING;
		vc.switches++;
	}
	return t;
}

/* Called by the holder after it set its own state to a wait: hands the baton on and returns when
 * it is handed back (at once when it is itself the next). */
static void switch_away(void)
{
	struct vthread *me = self, *t = pick();

	if (!t)
		fatal("every thread waits on another and none waits for a moment (a deadlock in the run)");
	if (t == me)
		return;
	self = t;
	if (swapcontext(&me->ctx, &t->ctx))
		fatal("swapcontext failed");
}

static struct queue *condition(const void *on, int make)
{
	int i;

	for (i = 0; i < vc.nconds; i++)
		if (vc.cond[i].on == on)
			return &vc.cond[i];
	if (!make)
		return NULL;
	for (i = 0; i < vc.nconds; i++)
		if (!vc.cond[i].head) {  /* a queue left empty: reused */
			vc.cond[i].on = on;
			return &vc.cond[i];
		}
	if (vc.nconds == MAX_CONDITIONS)
		fatal("too many conditions waited on at once");
	vc.cond[vc.nconds] = (struct queue){ .on = on };
	return &vc.cond[vc.nconds++];
}

void vclock_begin(void)
{
	uint64_t wakeup = vc.wakeup_ns, rng = vc.wakeup_rng;
	int exponential = vc.wakeup_exponential;
	unsigned cpus = vc.cpus;

	memset(&vc, 0, sizeof(vc));
	vc.wakeup_ns = wakeup;
	vc.wakeup_exponential = exponential;
	vc.wakeup_rng = rng;
	vc.cpus = cpus;
	vc.first.state = V_RUNNING;
	self = &vc.first;
}

void vclock_end(void)
{
	free(vc.heap);
	vc.heap = NULL;
	vc.nheap = vc.heap_cap = 0;
	self = NULL;
}

/* A coroutine's first and last frame: its function, then the baton to the next thread, on whose
 * stack this one never runs again (its joiner frees it). */
static void trampoline(void)
{
	struct vthread *me = self, *t;

	me->fn(me->arg);
	me->state = V_DONE;
	vclock_notify(me, 1);
	t = pick();
	if (!t)
		fatal("every thread waits on another and none waits for a moment (a deadlock at a thread's end)");
	self = t;
	setcontext(&t->ctx);
	fatal("setcontext failed");
}

int vclock_create(struct vthread **out, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct vthread *t = calloc(1, sizeof(*t));
	size_t size = 0;

	if (!t)
		return ENOMEM;
	if (pthread_attr_getstacksize(attr, &size) || size < 65536)
		size = 65536;
	if (getcontext(&t->ctx) || !(t->stack = malloc(size))) {
		free(t);
		return ENOMEM;
	}
	t->ctx.uc_stack.ss_sp = t->stack;
	t->ctx.uc_stack.ss_size = size;
	t->ctx.uc_link = NULL;
	makecontext(&t->ctx, trampoline, 0);
	t->fn = fn;
	t->arg = arg;
	make_ready(t);
	*out = t;
	return 0;
}

void vclock_join(struct vthread *t)
{
	while (t->state != V_DONE)
		vclock_wait(t);
	free(t->stack);
	free(t);
}

uint64_t vclock_now(void)
{
	return vc.now;
}

void vclock_sleep_until(uint64_t t)
{
	if (t <= vc.now)
		return;
	self->wake = t;
	self->seq = vc.seq++;
	self->state = V_TIMED;
	heap_push(self);
	switch_away();
}

void vclock_wait(const void *on)
{
	self->state = V_WAITING;
	self->on = on;
	push(condition(on, 1), self);
	switch_away();
}

/* A wake-up: the mean, or an exponential draw of it. */
static uint64_t wakeup(void)
{
	if (!vc.wakeup_exponential)
		return vc.wakeup_ns;
	return exponential_ns(&vc.wakeup_rng, (double)vc.wakeup_ns);
}

void vclock_notify(const void *on, int all)
{
	struct queue *q = condition(on, 0);
	struct vthread *t;

	while (q && (t = pop(q))) {
		if (vc.wakeup_ns) {  /* ready once its wake-up has passed */
			t->wake = vc.now + wakeup();
			t->seq = vc.seq++;
			t->state = V_TIMED;
			heap_push(t);
		} else {
			make_ready(t);
		}
		if (!all)
			break;
	}
}

void vclock_set_wakeup(uint64_t ns, int exponential, uint64_t seed)
{
	vc.wakeup_ns = ns;
	vc.wakeup_exponential = exponential;
	vc.wakeup_rng = seed ^ 0x2545f4914f6cdd1dULL;
}

void vclock_burn(uint64_t ns)
{
	struct vthread *next;

	self->cpu_ns += ns;
	if (!vc.cpus) {
		vclock_sleep_until(vc.now + ns);
		return;
	}
	if (vc.cpus_busy == vc.cpus) {  /* every core taken: wait for one, handed over by its holder */
		self->state = V_WAITING;
		self->on = &vc.cpu_queue;
		push(&vc.cpu_queue, self);
		switch_away();
	} else {
		vc.cpus_busy++;
	}
	vclock_sleep_until(vc.now + ns);
	if ((next = pop(&vc.cpu_queue)))
		make_ready(next);   /* the core goes to the first in line */
	else
		vc.cpus_busy--;
}

void vclock_set_cpus(unsigned cpus)
{
	vc.cpus = cpus;
}

uint64_t vclock_thread_cpu(void)
{
	return self->cpu_ns;
}

uint64_t vclock_switches(void)
{
	return vc.switches;
}
