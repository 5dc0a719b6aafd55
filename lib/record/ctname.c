/* ctname.c - the container a process runs in, by its runtime's name (attach.h).
 *
 * Every runtime puts a container's processes in a cgroup named after its 64-hex id:
 * Podman "libpod-ID" (under libpod_parent or machine.slice), Docker "docker-ID.scope" or
 * "/docker/ID", CRI-O "crio-ID", containerd's CRI "cri-containerd-ID", a Kubernetes pod's
 * ".../pod<uid>/ID".  The id is the last such run of 64 hex digits in /proc/PID/cgroup
 * (a monitor beside the container, Podman's conmon, sits in a cgroup of its own
 * "conmon" names: not the container's).  The name comes from the runtime's own files,
 * read without starting it (a `podman inspect` per new process would cost more than the
 * process's samples): Podman's containers.json, Docker's config.v2.json.  Without
 * either, the id's first 12 digits, as `docker ps` shows it.
 */
#include "attach.h"
#include "util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_LEN 64

/* The last run of exactly 64 hex digits in s (not in a conmon's cgroup), into id */
static int id_in(const char *s, char id[ID_LEN + 1])
{
	int found = 0;

	if (strstr(s, "conmon"))
		return 0;
	for (const char *p = s; *p;) {
		size_t n = 0;

		while (isxdigit((unsigned char)p[n]) && !isupper((unsigned char)p[n]))
			n++;
		if (n == ID_LEN && (p == s || !isalnum((unsigned char)p[-1]))) {
			memcpy(id, p, ID_LEN);
			id[ID_LEN] = '\0';
			found = 1;
		}
		p += n ? n : 1;
	}
	return found;
}

/* The JSON string value that starts at at (past its opening quote), at most 128
 * characters, into name: 0, or -1 when it does not end so */
static int take_quoted(const char *at, struct strbuf *name)
{
	for (const char *e = at; *e && e - at < 128; e++)
		if (*e == '"') {
			if (e == at)
				return -1;
			strbuf_add(name, at, (size_t)(e - at));
			return 0;
		}
	return -1;
}

/* Podman (root): containers.json is one array of {"id":..., "names":[...], ...} */
static int podman_name(const char *id, struct strbuf *name)
{
	struct strbuf sb = STRBUF_INIT;
	const char *at, *next, *names;
	char key[ID_LEN + 8];
	int ret = -1;

	if (strbuf_read_file(&sb, "/var/lib/containers/storage/overlay-containers/containers.json",
			     64u << 20) < 0)
		goto out;
	snprintf(key, sizeof(key), "\"id\":\"%s\"", id);
	at = strstr(sb.buf, key);
	if (!at)
		goto out;
	next = strstr(at + 1, "\"id\":\"");
	names = strstr(at, "\"names\":[\"");
	if (!names || (next && names > next))
		goto out;
	ret = take_quoted(names + strlen("\"names\":[\""), name);
out:
	strbuf_release(&sb);
	return ret;
}

/* Docker: /var/lib/docker/containers/ID/config.v2.json holds "Name":"/NAME" */
static int docker_name(const char *id, struct strbuf *name)
{
	struct strbuf sb = STRBUF_INIT;
	char path[160];
	const char *at;
	int ret = -1;

	snprintf(path, sizeof(path), "/var/lib/docker/containers/%s/config.v2.json", id);
	if (strbuf_read_file(&sb, path, 16u << 20) < 0)
		goto out;
	at = strstr(sb.buf, "\"Name\":\"");
	if (!at)
		goto out;
	at += strlen("\"Name\":\"");
	ret = take_quoted(*at == '/' ? at + 1 : at, name);
out:
	strbuf_release(&sb);
	return ret;
}

/* ids met, with their names: a runtime's files are read once per container */
static struct { char id[ID_LEN + 1]; char *name; } *known;
static size_t nr_known, alloc_known;
static pthread_mutex_t known_mu = PTHREAD_MUTEX_INITIALIZER;

int ctname_of_pid(pid_t pid, struct strbuf *name)
{
	char path[64], line[4096], id[ID_LEN + 1];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		found |= id_in(line, id);
	fclose(f);
	if (!found)
		return -1;
	pthread_mutex_lock(&known_mu);
	for (size_t i = 0; i < nr_known; i++)
		if (!strcmp(known[i].id, id)) {
			strbuf_addstr(name, known[i].name);
			pthread_mutex_unlock(&known_mu);
			return 0;
		}
	{
		struct strbuf sb = STRBUF_INIT;

		if (podman_name(id, &sb) < 0 && docker_name(id, &sb) < 0)
			strbuf_add(&sb, id, 12);
		ALLOC_GROW(known, nr_known + 1, alloc_known);
		memcpy(known[nr_known].id, id, sizeof(id));
		known[nr_known++].name = xstrdup(sb.buf);
		strbuf_release(&sb);
		strbuf_addstr(name, known[nr_known - 1].name);
	}
	pthread_mutex_unlock(&known_mu);
	return 0;
}
