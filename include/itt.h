/* itt.h - ITT task intervals written by the collector (build/libdlprof-itt.so) and read
 * back at report time.
 *
 * The collector writes $DLPROF_ITT_DIR/itt-PID.bin; dlprof record stores each such file
 * as one DLP_REC_ITT record (payload = the file's bytes).  Layout, little-endian:
 *
 *	struct itt_file_header		magic "DLPITT\0\0", version, pid
 *	blocks, each:  struct itt_block_header { u32 kind; u32 len; }  then len bytes
 *	  ITT_BLOCK_NAME:    u32 id, then the name (len - 4 bytes, no NUL)
 *	  ITT_BLOCK_EVENTS:  u32 tid, u32 nr, then nr struct itt_event
 *
 * Name ids are small integers starting at 1; a name block precedes (in file order or not)
 * the events that use it.  An event with name ITT_END closes the innermost open task of
 * its thread.  Times are CLOCK_MONOTONIC nanoseconds, the clock of the samples.
 */
#ifndef DLPROF_ITT_H
#define DLPROF_ITT_H

#include <stddef.h>
#include <stdint.h>

#define ITT_MAGIC "DLPITT\0\0"
#define ITT_VERSION 1
#define ITT_BLOCK_NAME 1
#define ITT_BLOCK_EVENTS 2
#define ITT_END 0u
#define ITT_MAX_NAME 1024

struct itt_file_header {
	char magic[8];
	uint32_t version;
	uint32_t pid;
};

struct itt_block_header {
	uint32_t kind;
	uint32_t len;
};

struct itt_event {
	uint64_t time;
	uint32_t name;		/* name id, ITT_END for task end */
	uint32_t pad;
};

/* ---- reader (lib/attribute/itt.c) ---- */
struct itt_interval {
	uint64_t start, end;
	const char *name;	/* interned */
	uint32_t depth;		/* nesting level, 0 = outermost */
	uint32_t worker;	/* an OpenMP worker's share of a call another thread made: */
	uint32_t caller_tid;	/* ... the thread that made it, */
	const struct itt_interval *caller;	/* ... and its task (valid after finish) */
	uint32_t taken;		/* handed out by itt_take_calls() */
};

struct itt_data;

struct itt_data *itt_data_new(void);
void itt_data_free(struct itt_data *d);
/* Add the content of one collector file (a DLP_REC_ITT payload).  Validates everything;
 * returns 0, or -1 on malformed input (nothing of it is kept).  Prints nothing: the
 * reason is in itt_data_error() for the caller's one message. */
int itt_data_add(struct itt_data *d, const void *buf, size_t len);
/* Why the last itt_data_add() failed ("bad magic", ...). */
const char *itt_data_error(const struct itt_data *d);
/* Call after the last itt_data_add (sorts, tells callers' tasks from workers', counts).
 * Tasks never ended are closed at their thread's last event time. */
void itt_data_finish(struct itt_data *d);
/* The innermost task thread pid/tid was in at time t, or NULL. */
const struct itt_interval *itt_lookup(const struct itt_data *d, uint32_t pid, uint32_t tid,
				      uint64_t t);
/* Per task name, after itt_data_finish: calls (the callers' tasks, not the OpenMP
 * workers' shares of them), the summed duration of every task of that name on every
 * thread (total_ns: nested tasks count for their own name too) and of the calls alone
 * (call_ns, wall time on the calling threads; NULL: not wanted).  Iterate i = 0.. until
 * it returns NULL. */
const char *itt_name_stats(const struct itt_data *d, size_t i, uint64_t *calls,
			   uint64_t *total_ns, uint64_t *call_ns);
/* Every task, the workers' shares too (iv->worker), thread by thread in time order. */
void itt_each_interval(const struct itt_data *d,
		       void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
		       void *ctx);
/* Every call (task that is not a worker's share), thread by thread in time order. */
/* The calls (as itt_each_call) that end before hi and were not handed out before, each
 * once: for a reader that counts calls as the samples go by.  Returns the earliest start
 * of an interval not handed out yet (UINT64_MAX: none). */
uint64_t itt_take_calls(struct itt_data *d, uint64_t hi,
			void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
			void *ctx);
void itt_each_call(const struct itt_data *d,
		   void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
		   void *ctx);
size_t itt_nr_intervals(const struct itt_data *d);

#endif
