/* dl-itt-user.c - an ITT user built the way oneDNN's static stub works: handles live in
 * the stub's own memory and are created before the collector is consulted; on first use
 * the stub reads INTEL_LIBITTNOTIFY64 / INTEL_ITTNOTIFY_GROUPS, dlopens the collector and
 * looks each function up by name (version 1 protocol, chosen because the collector has
 * __itt_api_version and no __itt_api_init).
 *
 * Two threads: thread A runs NR_A "convolution" tasks of ~SPIN_US each, thread B runs
 * NR_B "reorder" tasks each with a nested "inner" task.  Prints "TID NAME COUNT" lines.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NR_A 200
#define NR_B 100
#define SPIN_US 100

typedef struct { unsigned long long d1, d2, d3; } stub_id;
typedef struct stub_domain {
	volatile int flags;
	const char *nameA;
	void *nameW;
	int extra1;
	void *extra2;
	struct stub_domain *next;
} stub_domain;
typedef struct stub_string {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct stub_string *next;
} stub_string;

typedef void task_begin_fn(const stub_domain *, stub_id, stub_id, stub_string *);
typedef void task_end_fn(const stub_domain *);

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static task_begin_fn *p_task_begin;
static task_end_fn *p_task_end;
static const stub_id null_id = { 0, 0, 0 };

/* the stub's own handle memory */
static stub_domain dom = { 1, "dlprof.test", NULL, 0, NULL, NULL };
static stub_string s_conv = { "convolution", NULL, 0, NULL, NULL };
static stub_string s_reorder = { "reorder", NULL, 0, NULL, NULL };
static stub_string s_inner = { "inner", NULL, 0, NULL, NULL };

static void stub_init(void)
{
	const char *lib, *groups;
	void *h;

	pthread_mutex_lock(&init_lock);
	if (initialized)
		goto out;
	lib = getenv("INTEL_LIBITTNOTIFY64");
	groups = getenv("INTEL_ITTNOTIFY_GROUPS");
	if (!lib || !groups)
		goto out;
	h = dlopen(lib, RTLD_LAZY);
	if (!h) {
		fprintf(stderr, "dl-itt-user: %s\n", dlerror());
		goto out;
	}
	if (dlsym(h, "__itt_api_init")) {
		fprintf(stderr, "dl-itt-user: collector wants the version 2 protocol\n");
		goto out;
	}
	if (!dlsym(h, "__itt_api_version")) {
		fprintf(stderr, "dl-itt-user: legacy collector\n");
		goto out;
	}
	p_task_begin = (task_begin_fn *)dlsym(h, "__itt_task_begin");
	p_task_end = (task_end_fn *)dlsym(h, "__itt_task_end");
out:
	__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&init_lock);
}

static void task_begin(stub_string *name)
{
	if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE))
		stub_init();
	if (dom.flags && p_task_begin)
		p_task_begin(&dom, null_id, null_id, name);
}

static void task_end(void)
{
	if (dom.flags && p_task_end)
		p_task_end(&dom);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static volatile double sink;

static void spin(double us)
{
	double end = now_us() + us;
	double x = 1;

	while (now_us() < end)
		x = x * 1.0000001 + 1e-9;
	sink = x;
}

static void *thread_a(void *arg)
{
	for (int i = 0; i < NR_A; i++) {
		task_begin(&s_conv);
		spin(SPIN_US);
		task_end();
	}
	printf("%ld convolution %d\n", (long)syscall(SYS_gettid), NR_A);
	return arg;
}

static void *thread_b(void *arg)
{
	for (int i = 0; i < NR_B; i++) {
		task_begin(&s_reorder);
		spin(SPIN_US / 2);
		task_begin(&s_inner);
		spin(SPIN_US / 2);
		task_end();
		task_end();
	}
	printf("%ld reorder %d\n", (long)syscall(SYS_gettid), NR_B);
	return arg;
}

int main(void)
{
	pthread_t a, b;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_create(&b, NULL, thread_b, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("%d pid\n", (int)getpid());
	return 0;
}
