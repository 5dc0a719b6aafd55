/* top.c - dlprof top (see top.h).
 *
 * Two threads touch the tables: the thread that writes the recording (record's
 * unwinding thread, or record's own) feeds every record through the live pipeline and
 * adds each sample to the four views; record's loop thread polls the keys and the
 * clock and draws.  The views are under one mutex, held for a sample's additions and
 * for a copy of the rows to draw; the pipeline itself (process model, symbols, JIT
 * names, attribution) belongs to the writing thread alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "attr-stream.h"
#include "family.h"
#include "family-rules.h"
#include "jitsym.h"
#include "profile.h"
#include "record.h"
#include "rephash.h"
#include "top.h"
#include "util.h"

#define WMAX		60		/* most seconds in the window */
#define SETTLE_NS	100000000ull	/* workers' samples settled this often (sample time) */
#define SETTLE_LAG_NS	500000000ull	/* ... this far behind the newest sample: the
					   other rings (a master's samples) are drained
					   up to ~100 ms later */
#define JIT_SCAN_NS	50000000ull	/* perf maps looked at this often */
#define JIT_READ_MAX	(64u << 20)
#define NR_VIEWS	4

struct row {
	const char *key;	/* interned: symbol, family, op, thread name */
	const char *sub;	/* self: the shared object */
	const char *fam;	/* self: the family of its last sample */
	uint32_t pid, tid;	/* thread */
	uint64_t total, samples;
	uint64_t win[WMAX];
	uint32_t sec[WMAX];	/* the second (+1) win[i] counts; 0: empty */
};

struct view {
	struct row *rows;
	size_t nr, alloc;
	struct u64map idx;	/* hash -> row index + 1 */
	uint64_t total;		/* the rows' totals */
};

#define PMAP_WAIT_MIN	1000000ull	/* (jit_miss) */
#define PMAP_FDS_MAX	256	/* maps kept open; the others looked for again */
#define PMAP_WAIT_MAX	256000000ull

struct pmap {
	int32_t pid;
	int fd;			/* the map last opened (-1: none yet): a miss asks it its size */
	ino_t ino;
	off_t off;
	uint64_t looked;	/* now_ns() of the last look */
	uint64_t wait;		/* before a miss looks again: 1 ms, doubled by each look
				   that finds nothing new, to PMAP_WAIT_MAX */
	long since;		/* a map written before this is another process's */
};

struct top {
	const struct top_opts *o;
	pthread_mutex_t mu;
	/* under mu */
	struct view v[NR_VIEWS];
	uint64_t samples, complete, newest;
	uint64_t zeroed_at;	/* newest when the views were zeroed: older samples, held
				   for their operator until now, are not counted */
	char event[64];
	/* the writing thread's */
	struct profile_live *pl;
	struct profile_stats st;
	struct family_rules *rules;
	struct attr_stream *as;
	uint64_t last_settle, tap_newest;
	struct pmap *pmaps;
	size_t nr_pmaps, alloc_pmaps;
	size_t pmap_fds;	/* maps kept open (at most PMAP_FDS_MAX) */
	uint64_t last_jit_scan;
	long since;		/* perf maps written before this are another process's */
	const struct record_host *host;	/* record's roots and perf maps (containers) */
	struct u64map named;	/* a DSO's or thread's name as given -> interned (known) */
	/* the display's */
	int tty, color, keys;
	struct termios saved;
	int raw;
	int saved_err, err_fd;	/* on a terminal: our stderr, kept until the end */
	char *log_path;
	int log_fd;
	int cols, lines;
	uint64_t start, next_refresh, delay_ns;
	long refreshes;
	enum top_view view;
	int quit, polled, ended, end_status;
	int have_ct;		/* a thread in a container was seen (under mu) */
	char title[256];
	struct strbuf out;
};

static struct top *the_top;	/* for the exit handler */

/* ---- the views ---- */

static uint64_t row_hash(const char *key, const char *sub, uint32_t tid)
{
	return hash_u64((uint64_t)(uintptr_t)key * 31 + (uint64_t)(uintptr_t)sub) ^ tid;
}

static struct row *view_row(struct view *v, const char *key, const char *sub, uint32_t pid,
			    uint32_t tid, int by_tid)
{
	uint64_t h = by_tid ? hash_u64(((uint64_t)pid << 32) | tid) : row_hash(key, sub, 0);

	for (;; h++) {
		void **slot = u64map_slot(&v->idx, h);
		struct row *r;

		if (!*slot) {
			ALLOC_GROW(v->rows, v->nr + 1, v->alloc);
			r = &v->rows[v->nr++];
			memset(r, 0, sizeof(*r));
			r->key = key;
			r->sub = sub;
			r->pid = pid;
			r->tid = tid;
			*slot = (void *)(uintptr_t)v->nr;
			return r;
		}
		r = &v->rows[(uintptr_t)*slot - 1];
		if (by_tid ? (r->pid == pid && r->tid == tid) : (r->key == key && r->sub == sub))
			return r;
	}
}

static void row_add(struct view *v, struct row *r, uint64_t w, uint32_t sec)
{
	unsigned i = sec % WMAX;

	r->total += w;
	r->samples++;
	v->total += w;
	if (r->sec[i] != sec + 1) {
		r->sec[i] = sec + 1;
		r->win[i] = 0;
	}
	r->win[i] += w;
}

/* The row's weight in the seconds (now - window, now] */
static uint64_t row_window(const struct row *r, uint32_t now, unsigned window)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < WMAX; i++)
		if (r->sec[i] && r->sec[i] - 1 <= now && now - (r->sec[i] - 1) < window)
			sum += r->win[i];
	return sum;
}

static void views_zero(struct top *t)
{
	for (int i = 0; i < NR_VIEWS; i++) {
		t->v[i].nr = 0;
		t->v[i].total = 0;
		u64map_release(&t->v[i].idx);
		u64map_init(&t->v[i].idx);
	}
	t->samples = t->complete = 0;
	t->zeroed_at = t->newest;
}

static const char *intern(const char *s)
{
	return s ? str_intern(s, strlen(s)) : str_intern("?", 1);
}

/* The same, for names the pipeline keeps for as long as it runs (a DSO's, a thread's):
 * looked up by where they are, checked */
static const char *intern_known(struct top *t, const char *s)
{
	void **slot;

	if (!s)
		return intern(s);
	slot = u64map_slot(&t->named, (uint64_t)(uintptr_t)s);
	if (!*slot || strcmp(*slot, s))
		*slot = (void *)intern(s);
	return *slot;
}

/* ---- the writing thread: records -> samples -> views ---- */

/* pid's perf map entry, added when new (the periodic look covers it from then on) */
static struct pmap *want_pid(struct top *t, int32_t pid)
{
	for (size_t i = 0; i < t->nr_pmaps; i++)
		if (t->pmaps[i].pid == pid)
			return &t->pmaps[i];
	ALLOC_GROW(t->pmaps, t->nr_pmaps + 1, t->alloc_pmaps);
	t->pmaps[t->nr_pmaps] = (struct pmap){ pid, -1, 0, 0, 0, PMAP_WAIT_MIN, t->since };
	if (t->o->system_wide) {
		/* every process: its own start (one gone already: now, no map taken) */
		long w = (long)attach_start_wall((pid_t)pid);

		t->pmaps[t->nr_pmaps].since = w ? w - 1 : (long)time(NULL);
	}
	return &t->pmaps[t->nr_pmaps++];
}

/* The lines added to pm's map (fd, of st) past what was read: the number of bytes */
static size_t read_new(struct top *t, struct pmap *pm, int fd, const struct stat *st,
		       struct strbuf *sb)
{
	size_t upto = 0;
	char what[48];

	if (st->st_size > pm->off && st->st_size - pm->off <= JIT_READ_MAX) {
		size_t want = (size_t)(st->st_size - pm->off);
		ssize_t n;

		strbuf_reset(sb);
		strbuf_grow(sb, want);
		n = pread(fd, sb->buf, want, pm->off);
		if (n > 0) {
			for (upto = (size_t)n; upto && sb->buf[upto - 1] != '\n'; upto--)
				;
			if (upto) {
				snprintf(what, sizeof(what), "perf-%d.map", (int)pm->pid);
				jitsyms_add_perfmap(profile_live_jit(t->pl), pm->pid, sb->buf, upto,
						    what);
				pm->off += (off_t)upto;
			}
		}
	}
	return upto;
}

/* The lines a JIT compiler appended to pid's /tmp/perf-PID.map since the last look:
 * the number of bytes of lines added.  The map is opened anew (a process of the same
 * pid writes another) and kept open for the misses, PMAP_FDS_MAX maps at most. */
static size_t scan_perf_map(struct top *t, struct pmap *pm, struct strbuf *sb)
{
	const char *why;
	struct stat st;
	size_t upto;
	int fd = t->host ? t->host->perf_map_open(t->host->ctx, (uint32_t)pm->pid, pm->since, &st,
						  &why) :
		 jitsym_perfmap_open(pm->pid, pm->since, &st, &why);

	pm->looked = now_ns();
	if (fd < 0)
		return 0;
	if (st.st_ino != pm->ino) {
		pm->ino = st.st_ino;
		pm->off = 0;
	}
	if (pm->fd >= 0) {
		close(pm->fd);
		t->pmap_fds--;
	}
	pm->fd = -1;
	upto = read_new(t, pm, fd, &st, sb);
	/* (top watching every process: a process gone keeps its map's descriptor) */
	if (t->pmap_fds < PMAP_FDS_MAX) {
		pm->fd = fd;
		t->pmap_fds++;
	} else {
		close(fd);
	}
	return upto;
}

/* pm's map, read on where it is due (jit_miss: the wait after looks that found nothing) */
static size_t look_again(struct top *t, struct pmap *pm, struct strbuf *sb)
{
	size_t added;

	if (now_ns() - pm->looked < pm->wait)
		return 0;
	added = scan_perf_map(t, pm, sb);
	pm->wait = added ? PMAP_WAIT_MIN : pm->wait * 2 > PMAP_WAIT_MAX ? PMAP_WAIT_MAX :
		   pm->wait * 2;
	return added;
}

static void scan_perf_maps(struct top *t)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < t->nr_pmaps; i++)
		look_again(t, &t->pmaps[i], &sb);
	strbuf_release(&sb);
}

/* profile's JIT miss: code in an anonymous mapping without a name yet.  The map kept
 * open is asked whether it grew: a JIT writes its line before its code runs, so a
 * sample's code is named whenever it is anyone's (a look at most once a millisecond
 * left a kernel made within a millisecond of the last one [anon] in top, named in
 * report).  A map not open yet is looked for at most once a millisecond while looks
 * find new lines, less often as they find none, down to four times a second, here and
 * in the periodic look (an anonymous mapping that is no JIT's code, in a process that
 * writes no map: a sandbox's memfd binary here was 50 opens a second, 2.4% of top's
 * CPU). */
static int jit_miss(void *ctx, uint32_t pid)
{
	struct top *t = ctx;
	struct pmap *pm = want_pid(t, (int32_t)pid);
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	size_t added = 0;

	if (pm->fd >= 0 && !fstat(pm->fd, &st))
		added = read_new(t, pm, pm->fd, &st, &sb);
	if (!added)
		added = look_again(t, pm, &sb);
	strbuf_release(&sb);
	return added > 0;
}

/* record is about to write: its processes' files and perf maps are read its way (a
 * container's under its root) */
static void top_started(void *ctx, const struct record_host *host)
{
	struct top *t = ctx;

	t->host = host;
	profile_live_roots(t->pl, host->root_at, host->ctx);
}

static void settle(struct top *t, uint64_t before)
{
	attr_stream_settle(t->as, before);
	t->last_settle = before;
}

static int on_sample(void *ctx, const struct attributed *as)
{
	struct top *t = ctx;
	const struct dlp_sample *s = as->s;
	const struct sample_attr *sa = as->a;
	const struct frame *frames = as->frames;
	size_t nr = as->nr;
	const char *dso, *comm;
	uint32_t sec = (uint32_t)(s->time / 1000000000ull);
	uint64_t w = s->period ? s->period : 1;
	struct view *v;
	struct row *r;

	dso = intern_known(t, nr && frames[0].dso ? frames[0].dso : "[unknown]");
	comm = intern_known(t, machine_comm_at(as->m, s->pid, s->tid, s->time));
	if (s->time > t->tap_newest)
		t->tap_newest = s->time;

	pthread_mutex_lock(&t->mu);
	if (!t->event[0])
		snprintf(t->event, sizeof(t->event), "%s", t->st.event);
	if (s->time <= t->zeroed_at) {
		/* a worker's sample held for its master's operator past a zeroing */
		pthread_mutex_unlock(&t->mu);
		return 0;
	}
	v = &t->v[TOP_SELF];
	r = view_row(v, sa->sym, dso, 0, 0, 0);
	r->fam = sa->family;
	row_add(v, r, w, sec);
	v = &t->v[TOP_FAMILY];
	row_add(v, view_row(v, sa->family, NULL, 0, 0, 0), w, sec);
	v = &t->v[TOP_OP];
	row_add(v, view_row(v, sa->op, NULL, 0, 0, 0), w, sec);
	v = &t->v[TOP_THREAD];
	r = view_row(v, comm, NULL, s->pid, s->tid, 1);
	r->key = comm;	/* a thread renamed: its latest name */
	if (!r->sub || (!r->sub[0] && !(r->samples & 63))) {
		/* its container, from its process's PROC record ("": none, looked at again
		 * now and then: the record may come after the first samples) */
		const struct proc_entry *e = proc_table_find(machine_procs(as->m), s->pid);

		r->sub = intern(e && e->container ? e->container : "");
		if (r->sub[0])
			t->have_ct = 1;
	}
	row_add(v, r, w, sec);
	t->samples++;
	t->complete += !!as->complete;
	if (s->time > t->newest)
		t->newest = s->time;
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static void top_tap(void *ctx, uint32_t type, const void *a, size_t alen, const void *b,
		    size_t blen)
{
	struct top *t = ctx;

	if (type == DLP_REC_USAMPLE || type == DLP_REC_USAMPLES || type == DLP_REC_PERF) {
		uint64_t now = now_ns();

		if (now - t->last_jit_scan >= JIT_SCAN_NS) {
			t->last_jit_scan = now;
			scan_perf_maps(t);
		}
	}
	profile_live_record(t->pl, type, a, alen, b, blen);
	if (t->tap_newest > SETTLE_LAG_NS + SETTLE_NS &&
	    t->tap_newest - SETTLE_LAG_NS >= t->last_settle + SETTLE_NS)
		settle(t, t->tap_newest - SETTLE_LAG_NS);
}

/* ---- the display ---- */

static const char *const view_names[NR_VIEWS] = { "self", "family", "op", "thread" };

struct shown {
	const struct row *r;
	uint64_t win;
};

static int cmp_shown(const void *a, const void *b)
{
	const struct shown *x = a, *y = b;

	if (x->win != y->win)
		return x->win < y->win ? 1 : -1;
	if (x->r->total != y->r->total)
		return x->r->total < y->r->total ? 1 : -1;
	return strcmp(x->r->key, y->r->key);
}

static void add_count(struct strbuf *sb, uint64_t n)
{
	char buf[32], out[48];
	int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)n), k = 0;

	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			out[k++] = ',';
		out[k++] = buf[i];
	}
	out[k] = 0;
	strbuf_addstr(sb, out);
}

/* Append s cut to at most cols display columns; returns the columns used. */
static size_t add_cut(struct strbuf *sb, const char *s, size_t cols)
{
	size_t len = strlen(s), used = 0, i = 0;

	while (i < len && used < cols) {
		size_t n = 1;

		while (i + n < len && ((unsigned char)s[i + n] & 0xc0) == 0x80)
			n++;
		strbuf_add(sb, s + i, n);
		i += n;
		used++;
	}
	return used;
}

/* One line cut to the window: lead (a row's window share) in lead_color, then text in
 * color (colours only when t->color; the escapes take no columns). */
static void add_line(struct top *t, struct strbuf *sb, const char *lead, const char *lead_color,
		     const char *text, const char *color)
{
	size_t width = t->tty ? (size_t)(t->cols > 1 ? t->cols - 1 : 1) : SIZE_MAX, used;

	if (lead_color && t->color)
		strbuf_addstr(sb, lead_color);
	used = add_cut(sb, lead, width);
	if (lead_color && t->color)
		strbuf_addstr(sb, "\033[0m");
	if (color && t->color)
		strbuf_addstr(sb, color);
	add_cut(sb, text, width - used);
	if (color && t->color)
		strbuf_addstr(sb, "\033[0m");
	strbuf_addstr(sb, t->tty ? "\033[K\n" : "\n");
}

static void fmt_elapsed(char *buf, size_t size, uint64_t ns)
{
	uint64_t s = ns / 1000000000ull;

	if (s >= 3600)
		snprintf(buf, size, "%llu:%02llu:%02llu", (unsigned long long)(s / 3600),
			 (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
	else
		snprintf(buf, size, "%llu:%02llu", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
}

static void render_view(struct top *t, int final)
{
	struct view *v;
	struct shown *sh = NULL;
	size_t nsh = 0, maxrows;
	uint64_t wtotal = 0, total, samples, complete, lost;
	uint32_t now;
	struct strbuf line = STRBUF_INIT, *sb = &t->out;
	char el[32], event[64];
	unsigned window = t->o->window;
	int nr_lines = 0;

	pthread_mutex_lock(&t->mu);
	v = &t->v[t->view];
	/* the window ends at the newest sample's second, or now when it is later (a
	 * workload gone quiet) */
	now = (uint32_t)(now_ns() / 1000000000ull);
	if (t->newest / 1000000000ull > now)
		now = (uint32_t)(t->newest / 1000000000ull);
	sh = xcalloc(v->nr + 1, sizeof(*sh));
	for (size_t i = 0; i < v->nr; i++) {
		uint64_t w = row_window(&v->rows[i], now, window);

		if (!w && !v->rows[i].total)
			continue;
		sh[nsh].r = &v->rows[i];
		sh[nsh++].win = w;
		wtotal += w;
	}
	total = v->total;
	samples = t->samples;
	complete = t->complete;
	lost = __atomic_load_n(&t->st.lost, __ATOMIC_RELAXED);
	snprintf(event, sizeof(event), "%s", t->event[0] ? t->event : "(no samples yet)");
	qsort(sh, nsh, sizeof(*sh), cmp_shown);

	strbuf_reset(sb);
	if (t->tty)
		strbuf_addstr(sb, "\033[H");
	fmt_elapsed(el, sizeof(el), now_ns() - t->start);
	strbuf_addf(&line, "dlprof top: %s | %s, %lu Hz | %s | ", t->title, event, t->o->freq, el);
	add_count(&line, samples);
	strbuf_addf(&line, " samples, %.0f%% whole stacks | ", samples ? 100.0 * complete / samples : 0.0);
	add_count(&line, lost);
	strbuf_addstr(&line, " lost");
	add_line(t, sb, "", NULL, line.buf, t->tty ? "\033[1m" : NULL);
	nr_lines++;
	strbuf_reset(&line);
	if (t->ended)
		strbuf_addf(&line, "%s (status %d)%s", t->o->pids ? "the process ended" :
			    "the command ended", t->end_status, t->tty ? ": q quits" : "");
	else if (final)
		strbuf_addstr(&line, "final");
	else
		strbuf_addf(&line, "window %u s, refresh %.1f s", window, t->o->delay);
	strbuf_addf(&line, " | view: %s", view_names[t->view]);
	if (t->keys)
		strbuf_addstr(&line, " | keys: s self, f family, o op, t thread, z zero, q quit");
	add_line(t, sb, "", NULL, line.buf, NULL);
	nr_lines++;
	strbuf_reset(&line);
	strbuf_addstr(&line, "  Win%  Total%    Samples  ");
	switch (t->view) {
	case TOP_SELF:
		strbuf_addf(&line, "%-16s %-24s %s", "Family", "Shared object", "Symbol");
		break;
	case TOP_FAMILY:
		strbuf_addstr(&line, "Family");
		break;
	case TOP_OP:
		strbuf_addstr(&line, "Operator");
		break;
	case TOP_THREAD:
		strbuf_addf(&line, "%7s %7s  ", "PID", "TID");
		if (t->have_ct)
			strbuf_addf(&line, "%-16s ", "Container");
		strbuf_addstr(&line, "Thread");
		break;
	}
	add_line(t, sb, "", NULL, line.buf, t->tty ? "\033[7m" : NULL);
	nr_lines++;

	maxrows = t->tty ? (t->lines > nr_lines + 1 ? (size_t)(t->lines - nr_lines - 1) : 0) :
		  (size_t)(t->o->rows > 0 ? t->o->rows : 20);
	for (size_t i = 0; i < nsh && i < maxrows; i++) {
		const struct row *r = sh[i].r;
		double wp = wtotal ? 100.0 * sh[i].win / wtotal : 0;
		double tp = total ? 100.0 * r->total / total : 0;
		char lead[16];

		snprintf(lead, sizeof(lead), "%6.2f", wp);
		strbuf_reset(&line);
		strbuf_addf(&line, "  %6.2f %10llu  ", tp, (unsigned long long)r->samples);
		switch (t->view) {
		case TOP_SELF:
			strbuf_addf(&line, "%-16.16s %-24.24s %s", r->fam ? r->fam : "", r->sub, r->key);
			break;
		case TOP_THREAD:
			strbuf_addf(&line, "%7u %7u  ", r->pid, r->tid);
			if (t->have_ct)
				strbuf_addf(&line, "%-16.16s ", r->sub && r->sub[0] ? r->sub : "-");
			strbuf_addstr(&line, r->key);
			break;
		default:
			strbuf_addstr(&line, r->key);
			break;
		}
		add_line(t, sb, lead, wp >= 5 ? "\033[31m" : wp >= 0.5 ? "\033[32m" : NULL, line.buf,
			 NULL);
	}
	pthread_mutex_unlock(&t->mu);
	if (!nsh)
		add_line(t, sb, "", NULL, samples ? "(nothing in this view yet)" : "(no samples yet)",
			 NULL);
	if (t->tty)
		strbuf_addstr(sb, "\033[J");
	else
		strbuf_addch(sb, '\n');
	for (size_t off = 0; off < sb->len;) {
		ssize_t n = write(STDOUT_FILENO, sb->buf + off, sb->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	strbuf_release(&line);
	free(sh);
}

/* Off a terminal the last table is every view, one after the other: a log ends with the
 * whole summary. */
static void render(struct top *t, int final)
{
	enum top_view keep = t->view;

	if (!final || t->tty) {
		render_view(t, final);
		return;
	}
	for (int v = 0; v < NR_VIEWS; v++) {
		t->view = (enum top_view)v;
		render_view(t, final);
	}
	t->view = keep;
}

static int window_size(struct top *t)
{
	struct winsize ws;
	int cols = 80, lines = 24;

	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col && ws.ws_row) {
		cols = ws.ws_col;
		lines = ws.ws_row;
	}
	if (cols == t->cols && lines == t->lines)
		return 0;
	t->cols = cols;
	t->lines = lines;
	return 1;
}

/* Returns 1 when a key asked for a redraw. */
static int read_keys(struct top *t)
{
	char buf[64];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
	int redraw = 0;

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		t->quit = 1;	/* the terminal went away */
		return 0;
	}
	for (ssize_t i = 0; i < n; i++) {
		switch (buf[i]) {
		case 's': t->view = TOP_SELF; redraw = 1; break;
		case 'f': t->view = TOP_FAMILY; redraw = 1; break;
		case 'o': t->view = TOP_OP; redraw = 1; break;
		case 't': t->view = TOP_THREAD; redraw = 1; break;
		case 'z':
			pthread_mutex_lock(&t->mu);
			views_zero(t);
			pthread_mutex_unlock(&t->mu);
			redraw = 1;
			break;
		case 'q': case 'Q': case 3: /* ^C */ case 4: /* ^D */
			t->quit = 1;
			break;
		case '\033':
			/* an arrow or function key: ESC [ or ESC O, parameters, a final byte */
			if (i + 1 < n && (buf[i + 1] == '[' || buf[i + 1] == 'O')) {
				i += 2;
				while (i < n && !(buf[i] >= 0x40 && buf[i] <= 0x7e))
					i++;
			}
			break;
		default:
			break;
		}
	}
	return redraw;
}

static int top_poll(void *ctx, int fd_ready)
{
	struct top *t = ctx;
	uint64_t now = now_ns();
	int redraw = 0;

	t->polled = 1;
	if (fd_ready && t->keys)
		redraw |= read_keys(t);
	if (t->quit)
		return 1;
	if (t->tty)
		redraw |= window_size(t);
	if (now >= t->next_refresh) {
		render(t, 0);
		t->refreshes++;
		t->next_refresh = now + t->delay_ns;
		if (t->o->iterations && t->refreshes >= t->o->iterations)
			t->quit = 1;
	} else if (redraw) {
		render(t, 0);
	}
	return t->quit;
}

/* ---- the terminal ---- */

static void term_restore(void)
{
	struct top *t = the_top;

	if (!t)
		return;
	if (t->raw) {
		static const char leave[] = "\033[0m\033[?25h\033[?1049l";

		ssize_t ignored = write(STDOUT_FILENO, leave, sizeof(leave) - 1);

		(void)ignored;	/* nothing to do about it */
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &t->saved);
		t->raw = 0;
	}
	if (t->saved_err >= 0) {
		/* what we said while the screen was ours */
		char buf[4096];
		ssize_t n;
		off_t off = 0;

		dup2(t->saved_err, STDERR_FILENO);
		close(t->saved_err);
		t->saved_err = -1;
		while ((n = pread(t->err_fd, buf, sizeof(buf), off)) > 0) {
			if (write(STDERR_FILENO, buf, (size_t)n) < 0)
				break;
			off += n;
		}
		close(t->err_fd);
		t->err_fd = -1;
	}
}

static int tmp_file(const char *what, char **path_out)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	path = xasprintf("%s/dlprof-top-%d.%s.XXXXXX", dir, (int)getpid(), what);
	fd = mkstemp(path);
	if (fd < 0) {
		error("cannot create a file in %s: %s", dir, strerror(errno));
		free(path);
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (path_out)
		*path_out = path;
	else {
		unlink(path);
		free(path);
	}
	return fd;
}

static int term_setup(struct top *t, int have_cmd)
{
	struct termios raw;
	static const char enter[] = "\033[?1049h\033[?25l\033[H\033[J";

	t->saved_err = t->err_fd = t->log_fd = -1;
	if (!t->tty)
		return 0;
	if (have_cmd && (t->log_fd = tmp_file("log", &t->log_path)) < 0)
		return -1;
	t->err_fd = tmp_file("err", NULL);
	if (t->err_fd >= 0) {
		t->saved_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		if (t->saved_err >= 0)
			dup2(t->err_fd, STDERR_FILENO);
	}
	t->keys = isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &t->saved);
	if (t->keys) {
		raw = t->saved;
		/* keys one at a time, not echoed; ^C comes as a key (q) */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
	}
	t->raw = 1;
	atexit(term_restore);
	if (write(STDOUT_FILENO, enter, sizeof(enter) - 1) < 0)
		return error("cannot write to the terminal: %s", strerror(errno));
	window_size(t);
	return 0;
}

static volatile sig_atomic_t end_signal;

static void on_end_signal(int sig)
{
	end_signal = sig;
}

/* The workload has ended: the last table stays until q. */
static void hold_final(struct top *t)
{
	struct sigaction sa, old[3];
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_end_signal;
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	render(t, 1);
	while (!t->quit && !end_signal) {
		struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
		int redraw = 0;

		if (poll(&pfd, 1, 100) > 0)
			redraw |= read_keys(t);
		redraw |= window_size(t);
		if (redraw && !t->quit)
			render(t, 1);
	}
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
}

static void make_title(struct top *t)
{
	const struct top_opts *o = t->o;
	struct strbuf sb = STRBUF_INIT;

	if (o->system_wide) {
		strbuf_addstr(&sb, "every process");
	} else if (o->pids) {
		char comm[64] = "";
		char path[64];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%ld/comm", strtol(o->pids, NULL, 10));
		if ((f = fopen(path, "r"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		strbuf_addf(&sb, "pid %s%s%s%s", o->pids, comm[0] ? " (" : "", comm,
			    comm[0] ? ")" : "");
	} else {
		for (size_t i = 0; o->argv[i] && sb.len < sizeof(t->title); i++)
			strbuf_addf(&sb, "%s%s", i ? " " : "", o->argv[i]);
	}
	snprintf(t->title, sizeof(t->title), "%s", sb.buf);
	strbuf_release(&sb);
}

int top_run(const struct top_opts *o, int *exit_status)
{
	struct record_opts ro = RECORD_OPTS_INIT;
	struct container_follow follow = { 0 };
	struct strbuf follow_why = STRBUF_INIT;
	struct record_live live;
	struct profile_opts po;
	struct profile_consumer c;
	struct attr_view sv = { .sample = on_sample, .live = 1 };
	struct top *t;
	int status = 0, have_cmd = o->argv && o->argv[0], res, code;

	t = xcalloc(1, sizeof(*t));
	t->o = o;
	pthread_mutex_init(&t->mu, NULL);
	for (int i = 0; i < NR_VIEWS; i++)
		u64map_init(&t->v[i].idx);
	u64map_init(&t->named);
	strbuf_init(&t->out, 0);
	t->view = o->view;
	t->rules = family_rules_load(o->families);
	if (!t->rules) {
		free(t);
		return DLP_FAILED;
	}
	sv.ctx = t;
	t->as = attr_stream_new(t->rules, &sv);
	memset(&po, 0, sizeof(po));
	po.no_python = 1;
	po.event = NULL;
	attr_stream_consumer(t->as, &c);
	t->pl = profile_live_new(&po, &c, &t->st);
	jitsyms_set_quiet(profile_live_jit(t->pl), 1);
	profile_live_jit_miss(t->pl, jit_miss, t);
	if (o->pids) {
		/* a map older than the processes is another's */
		const char *p = o->pids;

		while (*p) {
			char *end;
			long pid = strtol(p, &end, 10);
			long w = pid > 0 ? (long)attach_start_wall((pid_t)pid) : 0;

			if (end == p)
				break;
			if (w && (!t->since || w < t->since))
				t->since = w;
			p = *end == ',' ? end + 1 : end;
		}
	} else if (!o->system_wide) {
		t->since = (long)time(NULL) - 1;
	}	/* every process: each one's own start (want_pid) */
	make_title(t);
	t->tty = isatty(STDOUT_FILENO);
	t->color = t->tty && want_color(STDOUT_FILENO);
	the_top = t;
	if (term_setup(t, have_cmd) < 0) {
		term_restore();
		return DLP_FAILED;
	}
	t->start = now_ns();
	t->delay_ns = (uint64_t)(o->delay * 1e9);
	t->next_refresh = t->start + t->delay_ns;

	memset(&live, 0, sizeof(live));
	live.tap = top_tap;
	live.started = top_started;
	live.ctx = t;
	live.fd = t->keys ? STDIN_FILENO : -1;
	live.poll = top_poll;
	live.stdio[0] = live.stdio[1] = live.stdio[2] = -1;
	if (t->tty && have_cmd) {
		/* the screen is ours: the command reads nothing from it and writes to a log */
		live.stdio[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		live.stdio[1] = live.stdio[2] = t->log_fd;
	}
	ro.output = o->output;
	ro.quiet = !o->output;
	ro.freq = o->freq;
	ro.events = o->event;
	ro.argv = o->argv;
	ro.pids = o->pids;
	ro.system_wide = o->system_wide;
	ro.no_python = 1;
	ro.no_itt = 1;
	ro.off_cpu = 0;
	ro.live = &live;
	/* docker run: its container comes from the daemon, followed by its cgroup */
	if (have_cmd && !ro.pids && !ro.system_wide)
		container_follow_opts(&ro, &follow, &follow_why, "watched", "watch");

	res = record_run(&ro, &status);
	container_follow_done(&follow);
	strbuf_release(&follow_why);
	/* record's roots are gone with it */
	t->host = NULL;
	profile_live_roots(t->pl, NULL, NULL);

	if (live.stdio[0] >= 0)
		close(live.stdio[0]);
	/* every sample is in (record's writing thread has ended): the last deferred ops */
	attr_stream_finish(t->as, NULL);
	if (res < 0 || !t->polled) {
		code = status;	/* record could not start */
	} else if (t->quit) {
		code = 0;
	} else {
		t->ended = 1;
		t->end_status = status;
		code = status;
		if (t->tty && t->keys) {
			hold_final(t);
			code = 0;
		} else {
			render(t, 1);
		}
	}
	term_restore();
	the_top = NULL;
	if (t->log_fd >= 0) {
		struct stat st;

		if (!fstat(t->log_fd, &st) && st.st_size > 0)
			info("the command's output is in %s (%lld bytes)", t->log_path,
			     (long long)st.st_size);
		else
			unlink(t->log_path);
		close(t->log_fd);
	}
	free(t->log_path);
	profile_live_free(t->pl);
	attr_stream_free(t->as);
	family_rules_free(t->rules);
	for (int i = 0; i < NR_VIEWS; i++) {
		free(t->v[i].rows);
		u64map_release(&t->v[i].idx);
	}
	u64map_release(&t->named);
	for (size_t i = 0; i < t->nr_pmaps; i++)
		if (t->pmaps[i].fd >= 0)
			close(t->pmaps[i].fd);
	free(t->pmaps);
	strbuf_release(&t->out);
	pthread_mutex_destroy(&t->mu);
	free(t);
	*exit_status = code;
	return res;
}
