/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "log.h"
#include "macros.h"

static int write_str(const char *dir, const char *file, const char *s)
{
	char p[PATH_MAX + 64];
	_cleanup_close_ int fd = -1;
	size_t len = strlen(s);

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (write(fd, s, len) != (ssize_t)len)
		return negative_errno();
	return 0;
}

static int read_str(const char *dir, const char *file, char *buf, size_t len)
{
	char p[PATH_MAX + 64];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	n = read(fd, buf, len - 1);
	if (n < 0)
		return negative_errno();
	buf[n] = '\0';
	return (int)n;
}

static uint64_t read_u64(const char *dir, const char *file)
{
	char buf[64];

	if (read_str(dir, file, buf, sizeof(buf)) < 0)
		return 0;
	return strtoull(buf, NULL, 10);
}

/* "key value" lines (memory.events, pids.events, memory.oom_control). */
static uint64_t read_key(const char *dir, const char *file, const char *key)
{
	char buf[4096];
	size_t kl = strlen(key);

	if (read_str(dir, file, buf, sizeof(buf)) < 0)
		return 0;
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
			return strtoull(l + kl + 1, NULL, 10);
	return 0;
}

/* Our own cgroup path for a v1 controller (or "" for the v2 line "0::"). */
static int own_cgroup(const char *controller, char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 64];

	if (!f)
		return negative_errno();
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		bool match;

		if (!c2)
			continue;
		*c2 = '\0';
		line[strcspn(line, "\n")] = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		if (controller[0] == '\0')
			match = strcmp(line, "0") == 0 && c1[1] == '\0';
		else {
			/* "4:cpu,cpuacct:/x": the list may name several controllers. */
			char *tok, *save = NULL;
			match = false;
			for (tok = strtok_r(c1 + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				if (strcmp(tok, controller) == 0)
					match = true;
		}
		if (match) {
			snprintf(buf, len, "%s", c2 + 1);
			return 0;
		}
	}
	return -ENOENT;
}

/* Groups of runs whose supervisor was SIGKILLed stay behind (nothing can clean up
 * after a SIGKILL); the next run removes the empty ones whose owner is gone. */
static void remove_stale(const char *parent)
{
	_cleanup_(closedirp_) DIR *d = opendir(parent);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[PATH_MAX + 300];
		pid_t owner;

		if (strncmp(de->d_name, "moat-", 5) != 0)
			continue;
		owner = (pid_t)strtol(de->d_name + 5, NULL, 10);
		if (owner <= 0 || kill(owner, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(p, sizeof(p), "%s/%s", parent, de->d_name);
		(void)rmdir(p); /* fails, harmlessly, while it still holds processes */
	}
}

static int make_v1(const char *controller, const char *name, char *ret, size_t len)
{
	char own[PATH_MAX], base[PATH_MAX + 32];
	struct stat st;

	if (own_cgroup(controller, own, sizeof(own)) < 0)
		return -ENOENT;
	snprintf(base, sizeof(base), "/sys/fs/cgroup/%s", controller);
	if (stat(base, &st) < 0)
		return -ENOENT;
	if ((size_t)snprintf(ret, len, "%s%s", base, strcmp(own, "/") ? own : "") >= len)
		return -ENAMETOOLONG;
	remove_stale(ret);
	if ((size_t)snprintf(ret, len, "%s%s/%s", base, strcmp(own, "/") ? own : "", name) >= len) {
		ret[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (mkdir(ret, 0755) < 0 && errno != EEXIST) {
		int r = negative_errno();
		ret[0] = '\0';
		return r;
	}
	return 0;
}

static int find_v2_mount(char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], *sep = strstr(line, " - ");
		if (!sep || strncmp(sep, " - cgroup2 ", 11) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1) {
			snprintf(buf, len, "%s", mnt);
			return 0;
		}
	}
	return -ENOENT;
}

static int try_v2(struct cgroup *cg, const char *name, uint64_t memory, uint64_t pids)
{
	char mnt[PATH_MAX], own[PATH_MAX], parent[PATH_MAX * 2], ctrl[256];
	int r;

	if (find_v2_mount(mnt, sizeof(mnt)) < 0 || own_cgroup("", own, sizeof(own)) < 0)
		return -ENOENT;
	snprintf(parent, sizeof(parent), "%s%s", mnt, strcmp(own, "/") ? own : "");
	if (read_str(parent, "cgroup.controllers", ctrl, sizeof(ctrl)) < 0)
		return -ENOENT;
	if ((memory && !strstr(ctrl, "memory")) || (pids && !strstr(ctrl, "pids")))
		return -EOPNOTSUPP;
	/* Delegate the controllers to our children; this fails on a cgroup that holds
	 * processes itself (the "no internal processes" rule) unless it is the root. */
	if (memory)
		(void)write_str(parent, "cgroup.subtree_control", "+memory");
	if (pids)
		(void)write_str(parent, "cgroup.subtree_control", "+pids");
	remove_stale(parent);
	if ((size_t)snprintf(cg->v2, sizeof(cg->v2), "%s/%s", parent, name) >= sizeof(cg->v2)) {
		cg->v2[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (mkdir(cg->v2, 0755) < 0 && errno != EEXIST) {
		r = negative_errno();
		cg->v2[0] = '\0';
		return r;
	}
	if (memory) {
		char v[32];
		snprintf(v, sizeof(v), "%llu", (unsigned long long)memory);
		r = write_str(cg->v2, "memory.max", v);
		if (r < 0)
			goto fail;
		(void)write_str(cg->v2, "memory.swap.max", "0");
		cg->has_memory = true;
	}
	if (pids) {
		char v[32];
		snprintf(v, sizeof(v), "%llu", (unsigned long long)pids);
		r = write_str(cg->v2, "pids.max", v);
		if (r < 0)
			goto fail;
		cg->has_pids = true;
	}
	cg->version = 2;
	return 0;
fail:
	rmdir(cg->v2);
	cg->v2[0] = '\0';
	return r;
}

static int open_in(const char *dir, const char *file, int flags)
{
	char p[PATH_MAX + 64];

	if (!dir[0])
		return -1;
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return open(p, flags | O_CLOEXEC);
}

/* What cg_kill() needs, opened now. cgroup.kill is missing before 5.14: the group is
 * then killed pid by pid from cgroup.procs. */
static void open_kill_fds(struct cgroup *cg)
{
	if (cg->version == 2) {
		cg->kill_fd = open_in(cg->v2, "cgroup.kill", O_WRONLY);
		cg->procs_fd = open_in(cg->v2, "cgroup.procs", O_RDONLY);
	} else {
		cg->procs_fd = open_in(cg->pids[0] ? cg->pids : cg->memory, "cgroup.procs",
				       O_RDONLY);
		cg->freezer_fd = open_in(cg->freezer, "freezer.state", O_WRONLY);
	}
}

int cg_create(struct cgroup *cg, uint64_t memory, uint64_t pids, char *why, size_t why_len)
{
	char name[64], v[32];
	int r;

	memset(cg, 0, sizeof(*cg));
	cg->kill_fd = cg->procs_fd = cg->freezer_fd = -1;
	snprintf(name, sizeof(name), "moat-%d", getpid());
	r = try_v2(cg, name, memory, pids);
	if (r >= 0) {
		open_kill_fds(cg);
		return 0;
	}

	/* v1: a group per controller. The pids group also serves to find every process
	 * of the run at kill time; the freezer stops a fork bomb while we kill it. */
	if (make_v1("pids", name, cg->pids, sizeof(cg->pids)) < 0) {
		snprintf(why, why_len, "no writable cgroup (v2: %s; v1 pids: %s)", strerror(-r),
			 strerror(errno ? errno : ENOENT));
		return -EPERM;
	}
	if (pids) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)pids);
		if (write_str(cg->pids, "pids.max", v) < 0) {
			snprintf(why, why_len, "cannot set pids.max: %s", strerror(errno));
			cg_destroy(cg);
			return -EPERM;
		}
		cg->has_pids = true;
	}
	if (make_v1("memory", name, cg->memory, sizeof(cg->memory)) >= 0 && memory) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)memory);
		if (write_str(cg->memory, "memory.limit_in_bytes", v) < 0) {
			snprintf(why, why_len, "cannot set memory.limit_in_bytes: %s", strerror(errno));
			cg_destroy(cg);
			return -EPERM;
		}
		cg->has_memory = true;
	} else if (memory) {
		snprintf(why, why_len, "no writable v1 memory cgroup");
		cg_destroy(cg);
		return -EPERM;
	}
	(void)make_v1("freezer", name, cg->freezer, sizeof(cg->freezer));
	cg->version = 1;
	open_kill_fds(cg);
	return 0;
}

int cg_attach(const struct cgroup *cg, pid_t pid)
{
	char v[32];
	int r = 0;

	snprintf(v, sizeof(v), "%d", pid);
	if (cg->version == 2)
		return write_str(cg->v2, "cgroup.procs", v);
	if (cg->pids[0])
		r = write_str(cg->pids, "cgroup.procs", v);
	if (r >= 0 && cg->memory[0])
		r = write_str(cg->memory, "cgroup.procs", v);
	if (r >= 0 && cg->freezer[0])
		r = write_str(cg->freezer, "cgroup.procs", v);
	return r;
}

static int write_fd(int fd, const char *s)
{
	size_t len = strlen(s);

	return fd >= 0 && write(fd, s, len) == (ssize_t)len ? 0 : -1;
}

/* SIGKILL every pid listed in a cgroup.procs opened earlier; the number signalled. */
static int kill_procs_in(int procs_fd)
{
	char buf[65536];
	ssize_t n;
	int killed = 0;

	if (procs_fd < 0 || lseek(procs_fd, 0, SEEK_SET) < 0)
		return 0;
	n = read(procs_fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *l = buf; *l;) {
		pid_t p = (pid_t)strtol(l, &l, 10);
		if (p > 0 && kill(p, SIGKILL) == 0)
			killed++;
		while (*l == '\n')
			l++;
		if (!*l || (*l < '0' || *l > '9'))
			break;
	}
	return killed;
}

void cg_kill(const struct cgroup *cg)
{
	struct timespec pause = { 0, 2 * 1000 * 1000 };

	if (cg->version == 2) {
		/* Linux 5.14: one write kills the whole group, forks in flight included. */
		if (write_fd(cg->kill_fd, "1") >= 0)
			return;
		for (int i = 0; i < 500 && kill_procs_in(cg->procs_fd) > 0; i++)
			nanosleep(&pause, NULL);
		return;
	}
	(void)write_fd(cg->freezer_fd, "FROZEN");
	for (int i = 0; i < 500; i++) {
		if (kill_procs_in(cg->procs_fd) == 0)
			break;
		/* SIGKILL is delivered to frozen tasks once they thaw. */
		(void)write_fd(cg->freezer_fd, "THAWED");
		nanosleep(&pause, NULL);
	}
	(void)write_fd(cg->freezer_fd, "THAWED");
}

void cg_stats(const struct cgroup *cg, struct cgroup_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (cg->version == 2) {
		ret->peak_memory = read_u64(cg->v2, "memory.peak");
		ret->oom_kills = read_key(cg->v2, "memory.events", "oom_kill");
		ret->pids_max_hits = read_key(cg->v2, "pids.events", "max");
		ret->pids_peak = read_u64(cg->v2, "pids.peak");
	} else if (cg->version == 1) {
		if (cg->memory[0]) {
			ret->peak_memory = read_u64(cg->memory, "memory.max_usage_in_bytes");
			ret->oom_kills = read_key(cg->memory, "memory.oom_control", "oom_kill");
		}
		if (cg->pids[0]) {
			ret->pids_max_hits = read_key(cg->pids, "pids.events", "max");
			ret->pids_peak = read_u64(cg->pids, "pids.peak");
		}
	}
}

static void rmdir_retry(char *dir)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };

	if (!dir[0])
		return;
	/* The group empties asynchronously after the last process is reaped. */
	for (int i = 0; i < 200 && rmdir(dir) < 0 && errno == EBUSY; i++)
		nanosleep(&pause, NULL);
	dir[0] = '\0';
}

void cg_destroy(struct cgroup *cg)
{
	cg->kill_fd = safe_close(cg->kill_fd);
	cg->procs_fd = safe_close(cg->procs_fd);
	cg->freezer_fd = safe_close(cg->freezer_fd);
	rmdir_retry(cg->v2);
	rmdir_retry(cg->pids);
	rmdir_retry(cg->memory);
	rmdir_retry(cg->freezer);
	cg->version = 0;
}

/* ---- killing a process tree ---- */

static int kill_tree_once(pid_t pid)
{
	char dir[64];
	_cleanup_(closedirp_) DIR *d = NULL;
	struct dirent *de;
	int n = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char p[128], buf[4096];
		_cleanup_close_ int fd = -1;
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "/proc/%d/task/%s/children", pid, de->d_name) >=
		    sizeof(p))
			continue; /* not a tid */
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		for (char *s = buf; *s;) {
			pid_t child = (pid_t)strtol(s, &s, 10);
			if (child <= 0)
				break;
			/* Children first would let them fork meanwhile; killing the parent
			 * first only re-parents the grandchildren to the subreaper, where
			 * the next pass finds them. Do both: kill, then descend. */
			kill(child, SIGKILL);
			n++;
			n += kill_tree_once(child);
			while (*s == ' ')
				s++;
		}
	}
	return n;
}

void kill_descendants(pid_t pid)
{
	struct timespec pause = { 0, 1000 * 1000 };

	for (int i = 0; i < 2000; i++) {
		int killed = kill_tree_once(pid);

		if (pid == getpid())
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		if (killed == 0)
			return;
		nanosleep(&pause, NULL);
	}
}
