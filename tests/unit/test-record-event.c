/* test-record-event.c - the one-line reasons of event_open_error() and event names that
 * event_resolve() refuses (the kernel here cannot produce every errno on demand). */
#include "event.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* stderr of event_open_error(name, err), as one string */
static void capture(const char *name, int err, char *buf, size_t size)
{
	char path[] = "/tmp/test-record-event.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	fflush(stderr);
	dup2(fd, 2);
	event_open_error(name, err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, size - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

int main(void)
{
	char buf[1024], want[256];
	struct perf_event_attr a;
	int p = event_paranoid();

	tap_plan(8);
	capture("cpu-clock", -EACCES, buf, sizeof(buf));
	printf("# %s", buf);
	snprintf(want, sizeof(want), "kernel.perf_event_paranoid is %d; 'sysctl -w kernel.perf_event_paranoid=%d'",
		 p, p > 2 ? 2 : 1);
	ok(lines(buf) == 1 && strstr(buf, "cannot open event 'cpu-clock': Permission denied") &&
	   strstr(buf, want), "EACCES names the sysctl and a value that allows it", NULL);
	capture("cycles", -EPERM, buf, sizeof(buf));
	ok(lines(buf) == 1 && strstr(buf, "kernel.perf_event_paranoid is"), "EPERM too", NULL);
	capture("cycles", -ENOENT, buf, sizeof(buf));
	printf("# %s", buf);
	ok(lines(buf) == 1 && strstr(buf, "cannot open event 'cycles': no such counter here"),
	   "ENOENT: no such counter here", NULL);
	capture("instructions", -EINVAL, buf, sizeof(buf));
	ok(lines(buf) == 1 && strstr(buf, "cannot open event 'instructions': Invalid argument"),
	   "other errors: the errno text", NULL);

	memset(&a, 0, sizeof(a));
	ok(event_resolve("", &a) == EVENT_UNKNOWN, "empty name is unknown", NULL);
	memset(buf, 'x', 200);
	buf[200] = '\0';
	ok(event_resolve(buf, &a) == EVENT_UNKNOWN, "200-character name is unknown", NULL);
	ok(event_resolve("no-such-event-xyz", &a) == EVENT_UNKNOWN, "made-up name is unknown", NULL);
	ok(event_resolve("cpu-clock", &a) == 0 && a.type == PERF_TYPE_SOFTWARE &&
	   a.config == PERF_COUNT_SW_CPU_CLOCK, "cpu-clock resolves", NULL);

	return tap_done();
}
