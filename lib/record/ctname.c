/* ctname.c - the container a process runs in, by its runtime's name (attach.h).
 *
 * Every runtime puts a container's processes in a cgroup named after its 64-hex id:
 * Podman "libpod-ID" (under libpod_parent or machine.slice), Docker "docker-ID.scope" or
 * "/docker/ID", CRI-O "crio-ID", containerd's CRI "cri-containerd-ID", a Kubernetes pod's
 * ".../pod<uid>/ID".  The id is the last such run of 64 hex digits in /proc/PID/cgroup
 * (a monitor beside the container, Podman's conmon, sits in a cgroup of its own
 * "conmon" names: not the container's).  The name comes from the runtime's own files,
 * read without starting it (a `podman inspect` per new process would cost more than the
 * process's samples): Podman's containers.json, Docker's config.v2.json, and the OCI
 * bundle of a container containerd (Kubernetes' CRI, nerdctl) or CRI-O runs, whose
 * annotations name its pod and itself.  Without any, the id's first 12 digits, as
 * `docker ps` shows it.
 */
#include "attach.h"
#include "util.h"

#include <ctype.h>
#include <glob.h>
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

/* The string value of "key" in JSON text (an OCI config's annotations), into out */
static int json_string(const char *json, const char *key, struct strbuf *out)
{
	char quoted[96];
	const char *at;

	snprintf(quoted, sizeof(quoted), "\"%s\"", key);
	for (at = strstr(json, quoted); at; at = strstr(at + 1, quoted)) {
		const char *v = at + strlen(quoted);

		while (isspace((unsigned char)*v))
			v++;
		if (*v++ != ':')
			continue;
		while (isspace((unsigned char)*v))
			v++;
		if (*v == '"' && !take_quoted(v + 1, out))
			return 0;
	}
	return -1;
}

/*
 * A container by the annotations of its OCI bundle's config.json: Kubernetes' through
 * containerd's CRI (io.kubernetes.cri.*) or CRI-O (io.kubernetes.pod.*, .container.name)
 * as POD/CONTAINER, NAMESPACE/POD/CONTAINER outside the default namespace (a pod's
 * sandbox, its pause process: POD); nerdctl's by its name.  -1: none of them.
 */
static int bundle_name(const char *config, struct strbuf *name)
{
	static const char *const keys[][3] = {
		{ "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name",
		  "io.kubernetes.cri.container-name" },
		{ "io.kubernetes.pod.namespace", "io.kubernetes.pod.name",
		  "io.kubernetes.container.name" },
	};
	struct strbuf sb = STRBUF_INIT, ns = STRBUF_INIT, pod = STRBUF_INIT, ct = STRBUF_INIT;
	int ret = -1;

	if (strbuf_read_file(&sb, config, 16u << 20) < 0)
		goto out;
	for (size_t k = 0; k < ARRAY_SIZE(keys) && ret; k++) {
		if (json_string(sb.buf, keys[k][1], &pod) < 0)
			continue;
		if (!json_string(sb.buf, keys[k][0], &ns) && strcmp(ns.buf, "default"))
			strbuf_addf(name, "%s/", ns.buf);
		strbuf_addstr(name, pod.buf);
		if (!json_string(sb.buf, keys[k][2], &ct))
			strbuf_addf(name, "/%s", ct.buf);
		ret = 0;
	}
	if (ret)
		ret = json_string(sb.buf, "nerdctl/name", name);
out:
	strbuf_release(&sb);
	strbuf_release(&ns);
	strbuf_release(&pod);
	strbuf_release(&ct);
	return ret;
}

/* Where containerd keeps a running task's bundle (NAMESPACE/ID), and CRI-O (ID) */
#define CONTAINERD_TASKS "/run/containerd/io.containerd.runtime.v2.task"
#define CRIO_CONTAINERS "/run/containers/storage/overlay-containers"

static int oci_name(const char *id, struct strbuf *name)
{
	char pattern[256];
	glob_t g;
	int ret = -1;

	snprintf(pattern, sizeof(pattern), CONTAINERD_TASKS "/*/%s/config.json", id);
	if (!glob(pattern, 0, NULL, &g)) {
		ret = g.gl_pathc ? bundle_name(g.gl_pathv[0], name) : -1;
		globfree(&g);
	}
	if (ret) {
		snprintf(pattern, sizeof(pattern), CRIO_CONTAINERS "/%s/userdata/config.json", id);
		ret = bundle_name(pattern, name);
	}
	return ret;
}

/*
 * --container for a container no runtime's CLI knows (a Kubernetes node has crictl,
 * if anything): the running bundles of containerd and CRI-O, matched by the name
 * bundle_name() gives, by its container's name alone where one bundle has it, or by
 * a prefix of its id (12 digits or more).  The pid its shim wrote (init.pid; CRI-O's
 * pidfile), 0 when none matches, -1 when several do (*many: how many).
 */
long ctname_find(const char *want, int *many)
{
	static const char *const globs[][2] = {
		{ CONTAINERD_TASKS "/*/*/config.json", "init.pid" },
		{ CRIO_CONTAINERS "/*/userdata/config.json", "pidfile" },
	};
	size_t wl = strlen(want);
	long exact = 0, by_ct = 0;
	int nr_ct = 0;

	*many = 0;
	for (size_t k = 0; k < ARRAY_SIZE(globs) && !exact; k++) {
		glob_t g;

		if (glob(globs[k][0], 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc && !exact; i++) {
			struct strbuf name = STRBUF_INIT, pid = STRBUF_INIT;
			char *dir = xstrdup(g.gl_pathv[i]), *pidf, id[ID_LEN + 1] = "";
			const char *last, *p;
			int hit;

			*strrchr(dir, '/') = 0;		/* the bundle: .../ID, CRI-O's .../ID/userdata */
			pidf = xasprintf("%s/%s", dir, globs[k][1]);
			if (k == 1)
				*strrchr(dir, '/') = 0;
			p = strrchr(dir, '/') + 1;
			if (strlen(p) <= ID_LEN)
				strcpy(id, p);
			if (bundle_name(g.gl_pathv[i], &name) < 0)
				strbuf_reset(&name);
			last = strrchr(name.buf, '/');
			hit = (name.len && !strcmp(name.buf, want)) ? 2 :
			      (wl >= 12 && !strncmp(id, want, wl)) ? 2 :
			      (last && !strcmp(last + 1, want)) ? 1 : 0;
			if (hit && strbuf_read_file(&pid, pidf, 64) >= 0 && strtol(pid.buf, NULL, 10) > 0) {
				if (hit == 2)
					exact = strtol(pid.buf, NULL, 10);
				else if (!nr_ct++)
					by_ct = strtol(pid.buf, NULL, 10);
			}
			strbuf_release(&name);
			strbuf_release(&pid);
			free(pidf);
			free(dir);
		}
		globfree(&g);
	}
	if (exact)
		return exact;
	if (nr_ct > 1) {
		*many = nr_ct;
		return -1;
	}
	return by_ct;
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

		if (podman_name(id, &sb) < 0 && docker_name(id, &sb) < 0 && oci_name(id, &sb) < 0)
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
