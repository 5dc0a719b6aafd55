/* util.c - error reporting, allocation helpers and strbuf. */
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	char msg[4096];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "dlprof: %s%s\n", prefix, msg);
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	exit(2);
}

void bug_fl(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dlprof: BUG: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void *oom(size_t n)
{
	fprintf(stderr, "dlprof: fatal: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	return p ? p : oom(n);
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	return p ? p : oom(nmemb * size);
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	return q ? q : oom(n);
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	return p ? p : oom(strlen(s) + 1);
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	return p ? p : oom(n + 1);
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	return sb.buf;
}

void *grow_array(void *p, size_t sz, size_t nr, size_t *alloc)
{
	size_t n;

	if (nr <= *alloc)
		return p;
	n = *alloc ? *alloc : 16;
	while (n < nr)
		n = n * 3 / 2 + 16;
	p = xrealloc(p, n * sz);
	*alloc = n;
	return p;
}

void strbuf_init(struct strbuf *sb, size_t hint)
{
	sb->len = 0;
	sb->alloc = 0;
	sb->buf = NULL;
	strbuf_grow(sb, hint);
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;

	if (need <= sb->alloc)
		return;
	if (need < sb->alloc * 2)
		need = sb->alloc * 2;
	sb->buf = xrealloc(sb->buf, need);
	if (!sb->alloc)
		sb->buf[0] = '\0';
	sb->alloc = need;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	strbuf_grow(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_add_varint(struct strbuf *sb, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;

	while (v >= 0x80) {
		b[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (unsigned char)v;
	strbuf_add(sb, b, n);
}

void strbuf_add_svarint(struct strbuf *sb, int64_t v)
{
	strbuf_add_varint(sb, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

int varint_get(struct varint_rd *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return -1;
		uint64_t b = *r->p++;

		if (shift == 63 && b > 1)
			return -1;	/* past 64 bits */
		x |= (b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

int varint_get_signed(struct varint_rd *r, int64_t *v)
{
	uint64_t u;

	if (varint_get(r, &u) < 0)
		return -1;
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return 0;
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;

	strbuf_add(sb, &ch, 1);
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	strbuf_grow(sb, 64);
	va_copy(cp, ap);
	n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	if ((size_t)n >= sb->alloc - sb->len) {
		strbuf_grow(sb, (size_t)n);
		n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sb->len += (size_t)n;
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

int strbuf_read_fd(struct strbuf *sb, int fd, size_t max)
{
	char buf[65536];
	ssize_t n;

	strbuf_grow(sb, 0);
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		if (max && sb->len + (size_t)n > max)
			n = (ssize_t)(max - sb->len);
		strbuf_add(sb, buf, (size_t)n);
		if (max && sb->len >= max)
			break;
	}
	return 0;
}

int strbuf_read_file(struct strbuf *sb, const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = strbuf_read_fd(sb, fd, max);
	close(fd);
	return ret;
}

void fput_csv_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

size_t list_split(const char *list, char **out, size_t max)
{
	size_t n = 0;

	for (const char *p = list; *p && n < max;) {
		size_t len = strcspn(p, ",");

		if (len)
			out[n++] = xstrndup(p, len);
		p += len + (p[len] == ',');
	}
	return n;
}

int list_index(const char *list, const char *name)
{
	size_t nl = strlen(name);
	int i = 1;

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (len == nl && !memcmp(p, name, nl))
			return i;
		i += len > 0;	/* (empty items are none, as list_split has them) */
		p += len + (p[len] == ',');
	}
	return 0;
}

int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Thread t's CPU time so far (0: not known) */
uint64_t thread_cpu_ns(pthread_t t)
{
	clockid_t c;

	return pthread_getcpuclockid(t, &c) ? 0 : clock_ns(c);
}

int thread_start_quiet(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

int want_color(int fd)
{
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	if (nc && *nc)
		return 0;
	if (term && !strcmp(term, "dumb"))
		return 0;
	return isatty(fd);
}

size_t utf8_cols(const char *s, size_t len)
{
	size_t cols = 0;

	for (size_t k = 0; k < len; k++)
		cols += ((unsigned char)s[k] & 0xc0) != 0x80;
	return cols;
}

void fput_wrapped(FILE *out, const char *lead, const char *text, size_t indent, size_t width)
{
	size_t col = utf8_cols(lead, strlen(lead));
	const char *p = text;

	fputs(lead, out);
	while (*p == ' ')
		p++;
	while (*p) {
		const char *w = p;
		size_t len, cols;

		while (*p && *p != ' ')
			p++;
		len = (size_t)(p - w);
		cols = utf8_cols(w, len);
		if (col + 1 + cols > width && col > indent) {
			fprintf(out, "\n%*s", (int)(indent ? indent - 1 : 0), "");
			col = indent ? indent - 1 : 0;
		}
		fprintf(out, " %.*s", (int)len, w);
		col += 1 + cols;
		while (*p == ' ')
			p++;
	}
	fputc('\n', out);
}

FILE *out_open(const char *path, const char *mode)
{
	FILE *f = strcmp(path, "-") ? fopen(path, mode) : stdout;

	if (!f)
		error("cannot write '%s': %m", path);
	return f;
}

int out_close(FILE *f, const char *path, int failed)
{
	failed |= (f == stdout ? fflush(f) : fclose(f)) != 0;
	if (failed)
		return error("cannot write '%s': %m", path);
	return 0;
}

void clock_pair(uint64_t *mono, uint64_t *real, uint64_t *err)
{
	*err = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		struct timespec a, m, b;
		uint64_t ra, rb;

		clock_gettime(CLOCK_REALTIME, &a);
		clock_gettime(CLOCK_MONOTONIC, &m);
		clock_gettime(CLOCK_REALTIME, &b);
		ra = (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec;
		rb = (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec;
		if (rb < ra)
			continue;	/* the wall clock stepped back between the reads */
		if ((rb - ra) / 2 < *err) {
			*err = (rb - ra) / 2;
			*real = ra + *err;
			*mono = (uint64_t)m.tv_sec * 1000000000ull + (uint64_t)m.tv_nsec;
		}
	}
	if (*err == UINT64_MAX)
		*mono = now_ns(), *real = 0, *err = 0;
}

int run_capture(const char *const argv[], int timeout_ms, struct strbuf *sb)
{
	int pfd[2], status = 0, ret = -1;
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (!pid) {
		int null = open("/dev/null", O_RDWR);

		dup2(pfd[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		int64_t left = (int64_t)(deadline - now_ns()) / 1000000;
		char buf[4096];
		ssize_t n;

		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(pfd[0]);
			return -2;
		}
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			break;
		if (!pf.revents)
			continue;
		n = read(pfd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (sb->len < (1 << 20))
			strbuf_add(sb, buf, n);
	}
	close(pfd[0]);
	if (waitpid(pid, &status, 0) == pid)
		ret = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return ret;
}

/* A list of strings, each once (copies) */
void path_list_add(struct path_list *l, const char *p)
{
	for (size_t i = 0; i < l->nr; i++)
		if (!strcmp(l->v[i], p))
			return;
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	l->v[l->nr++] = xstrdup(p);
}

void path_list_clear(struct path_list *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int out_format_parse(const char *name, unsigned allowed, enum out_format *f)
{
	static const char *const names[] = { "table", "json", "csv" };
	struct strbuf sb = STRBUF_INIT;

	for (int i = 0; i < (int)ARRAY_SIZE(names); i++)
		if ((allowed & 1u << i) && !strcmp(name, names[i])) {
			*f = (enum out_format)i;
			return 0;
		}
	for (int i = 0; i < (int)ARRAY_SIZE(names); i++)
		if (allowed & 1u << i)
			strbuf_addf(&sb, "%s%s", sb.len ? ", " : "", names[i]);
	error("unknown format '%s' (%s)", name, sb.buf);
	strbuf_release(&sb);
	return -1;
}
