/* util.h - error reporting, checked allocation and a growable string buffer. */
#ifndef DLPROF_UTIL_H
#define DLPROF_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <sys/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Unaligned loads from file data (host byte order: recordings are read where made). */
static inline uint64_t load_u64(const void *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return v;
}

static inline uint32_t load_u32(const void *p)
{
	uint32_t v;

	__builtin_memcpy(&v, p, 4);
	return v;
}
#define UNUSED __attribute__((unused))

/* What a library entry point returns (record_run, a view's run, ...); cmd/ maps it to
 * the process's exit status (cmd/cmds.h). */
enum dlp_result {
	DLP_OK = 0,
	DLP_PARTIAL = 1,	/* done, but an input was incomplete: cut short, or malformed
				   records skipped (a warning said so) */
	DLP_FAILED = -1,	/* nothing useful done (an error said why) */
	DLP_USAGE = -2,		/* options or inputs that do not go together (said so) */
};

/* Print "dlprof: error: <msg>" to stderr and return -1.  Library code reports with this. */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "dlprof: warning: <msg>" to stderr. */
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "dlprof: <msg>" to stderr (informational chatter). */
void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Fatal error: print and exit(2).  Only cmd/ code may call this. */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Broken invariant: print with location and abort. */
_Noreturn void bug_fl(const char *file, int line, const char *fmt, ...);
#define BUG(...) bug_fl(__FILE__, __LINE__, __VA_ARGS__)

/* A file a command writes: PATH opened for writing, or stdout for "-"; NULL (error
 * printed) when it cannot be. */
FILE *out_open(const char *path, const char *mode);
/* Close what out_open() gave (stdout: flushed); -1 (error printed) when that or an
 * earlier write (failed) went wrong. */
int out_close(FILE *f, const char *path, int failed);

/* Allocation that never returns NULL (aborts with a message on exhaustion). */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Grow *p (of *alloc elements of size sz) so that it holds at least nr elements. */
void *grow_array(void *p, size_t sz, size_t nr, size_t *alloc);
#define ALLOC_GROW(p, nr, alloc) ((p) = grow_array((p), sizeof(*(p)), (nr), &(alloc)))

struct strbuf {
	char *buf;	/* always NUL-terminated once initialized */
	size_t len;
	size_t alloc;
};
#define STRBUF_INIT { NULL, 0, 0 }
void strbuf_init(struct strbuf *sb, size_t hint);
void strbuf_release(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
void strbuf_grow(struct strbuf *sb, size_t extra);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, int c);
/* v as a varint: 7 bits a byte, low first, the high bit set on all but the last
 * (protobuf's, LEB128) */
void strbuf_add_varint(struct strbuf *sb, uint64_t v);
/* v zigzag-coded ((v << 1) ^ (v >> 63)) as a varint: small magnitudes in few bytes */
void strbuf_add_svarint(struct strbuf *sb, int64_t v);
/* A reader of varints from the bytes [p, end) */
struct varint_rd {
	const unsigned char *p, *end;
};
/* The next varint into *v: 0, or -1 when the bytes end first or it runs past 64 bits */
int varint_get(struct varint_rd *r, uint64_t *v);
/* The next zigzag-coded varint */
int varint_get_signed(struct varint_rd *r, int64_t *v);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Read a whole file (up to max bytes; 0 = no cap) into sb.  Returns 0 or -errno. */
int strbuf_read_fd(struct strbuf *sb, int fd, size_t max);
int strbuf_read_file(struct strbuf *sb, const char *path, size_t max);

/* s as a quoted CSV field (RFC 4180: '"' doubled); NULL gives "". */
void fput_csv_str(FILE *out, const char *s);

/*
 * Print lead, then text's words word-wrapped at width columns (UTF-8 aware); lines
 * after the first are indented by indent columns.  A word longer than a line (a
 * symbol, say) gets a line of its own.  Ends with a newline.
 */
void fput_wrapped(FILE *out, const char *lead, const char *text, size_t indent, size_t width);
/* Display columns of the first len bytes of a UTF-8 string (each code point one). */
size_t utf8_cols(const char *s, size_t len);
/* The value of hex digit c, or -1. */
/* A comma-separated list (META's "metrics", "event"): its items, each xstrdup'd, into
 * out (at most max); returns how many */
size_t list_split(const char *list, char **out, size_t max);
/* NAME's place in a comma-separated list, counting from 1; 0: not in it */
int list_index(const char *list, const char *name);
int hexval(int c);

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC, the clock samples carry). */
uint64_t now_ns(void);
/* Run argv (argv[0] looked up in PATH) with stdin and stderr on /dev/null; its stdout
 * (up to 1 MiB) into sb.  Its exit status (128 + signal), -2 when it ran past timeout_ms
 * (killed), -1 when it could not be started. */
struct strbuf;
int run_capture(const char *const argv[], int timeout_ms, struct strbuf *sb);
/* CLOCK_MONOTONIC and CLOCK_REALTIME read as one instant: real is the midpoint of two
 * wall-clock reads around the monotonic one, err half their distance (the best of three
 * tries); all in ns.  real 0: the wall clock stepped back every time. */
void clock_pair(uint64_t *mono, uint64_t *real, uint64_t *err);
/* Clock c's time in ns (CLOCK_MONOTONIC: now_ns(); a CPU-time clock: that CPU time) */
uint64_t clock_ns(clockid_t c);
/* Thread t's CPU time so far (0: not known) */
uint64_t thread_cpu_ns(pthread_t t);
/* pthread_create() of a thread that takes no signal: the caller's signalfd or handlers
 * keep seeing them all.  0, or pthread_create()'s error. */
int thread_start_quiet(pthread_t *t, void *(*fn)(void *), void *arg);

/* A list of strings, each at most once: add copies p unless it is there */
struct path_list {
	char **v;
	size_t nr, alloc;
};
void path_list_add(struct path_list *l, const char *p);
void path_list_clear(struct path_list *l);

/* What a view writes (--format): a table for the terminal, JSON, or CSV */
enum out_format { OUT_TEXT, OUT_JSON, OUT_CSV };
#define OUT_ALL ((1u << OUT_TEXT) | (1u << OUT_JSON) | (1u << OUT_CSV))
/* --format NAME ("table", "json", "csv") into *f where allowed (a mask of 1 << OUT_*)
 * has it: 0, or -1 with one line that names the formats allowed */
int out_format_parse(const char *name, unsigned allowed, enum out_format *f);

/* Set by cmd/dlprof.c: "auto" decision whether stdout is a colour terminal. */
int want_color(int fd);

#endif
