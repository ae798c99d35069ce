/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "proc-ops.h"

/* Read /proc/<pid>/<name> into buf (NUL-terminated); -ESRCH when the process is gone. */
static int read_proc(pid_t pid, const char *name, char *buf, size_t len)
{
	char p[64];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/%s", pid, name);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, len - 1);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	return 0;
}

static pid_t read_ppid(pid_t pid)
{
	char buf[512], *rp;

	if (read_proc(pid, "stat", buf, sizeof(buf)) < 0)
		return -ESRCH;
	rp = strrchr(buf, ')'); /* comm may contain anything, even ") " */
	if (!rp)
		return -ESRCH;
	return (pid_t)strtol(rp + 4, NULL, 10);
}

/* Last NSpid field: the pid as the innermost namespace sees it. */
static pid_t read_nspid(pid_t pid)
{
	char buf[4096], *l;
	pid_t last = -ESRCH;

	if (read_proc(pid, "status", buf, sizeof(buf)) < 0)
		return -ESRCH;
	l = strstr(buf, "\nNSpid:");
	if (!l)
		return -ESRCH;
	for (char *s = l + 7; *s && *s != '\n';) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s)
			break;
		last = (pid_t)v;
		s = end;
	}
	return last;
}

static bool in_sandbox(const struct proc_map *m, pid_t host)
{
	if (m->keeper <= 0)
		return false;
	/* Threads are fine too: /proc/<tid> resolves to the thread's process. */
	/* The keeper itself is not part of the sandbox: it is a fork of the supervisor,
	 * with the supervisor's environment and memory, and the supervisor opens /proc
	 * files with its own privileges. Only its descendants are the sandbox. */
	if (host == m->keeper)
		return false;
	for (int depth = 0; depth < 4096 && host > 1; depth++) {
		host = read_ppid(host);
		if (host == m->keeper)
			return true;
	}
	return false;
}

static pid_t proc_to_sandbox(void *ud, pid_t host)
{
	const struct proc_map *m = ud;

	if (!in_sandbox(m, host))
		return -ESRCH;
	return m->namespaced ? read_nspid(host) : host;
}

static pid_t find_nspid(pid_t root, pid_t want, int depth)
{
	char p[64], buf[8192];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	if (depth > 0 && read_nspid(root) == want)
		return root;
	if (depth > 64)
		return -ESRCH;
	snprintf(p, sizeof(p), "/proc/%d/task/%d/children", root, root);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	for (char *s = buf; *s;) {
		char *end;
		pid_t child = (pid_t)strtol(s, &end, 10), r;
		if (end == s)
			break;
		r = find_nspid(child, want, depth + 1);
		if (r > 0)
			return r;
		s = end;
	}
	return -ESRCH;
}

static pid_t proc_to_host(void *ud, pid_t sandbox_pid)
{
	const struct proc_map *m = ud;

	if (sandbox_pid <= 0)
		return -ESRCH;
	if (!m->namespaced)
		return in_sandbox(m, sandbox_pid) ? sandbox_pid : -ESRCH;
	return find_nspid(m->keeper, sandbox_pid, 0);
}

const struct vfs_proc_ops *proc_map_init(struct proc_map *m)
{
	m->keeper = 0;
	m->namespaced = false;
	m->ops = (struct vfs_proc_ops){
		.userdata = m,
		.to_host = proc_to_host,
		.to_sandbox = proc_to_sandbox,
	};
	return &m->ops;
}
