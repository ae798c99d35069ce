/* SPDX-License-Identifier: MIT */
/*
 * Live events as JSON lines (events.h). Encoded with jansson: an event is rare next to
 * a notification (a denial, a limit, the end), so clarity wins over speed here.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "events.h"
#include "log.h"
#include "macros.h"
#include "sc.h"

struct events {
	pthread_mutex_t lock;
	int fd;
	uint64_t t0;            /* CLOCK_MONOTONIC at open: events carry µs since then */
	double tokens;          /* the bucket of denial events */
	uint64_t refill_ns;     /* when tokens was last topped up */
	uint64_t dropped;       /* since the last "dropped" line */
	bool broken;            /* the reader went away: stop writing */
};

int events_open(const char *spec, struct events **ret)
{
	struct events *e;
	int fd;

	if (strncmp(spec, "fd:", 3) == 0) {
		char *end;
		long n;

		errno = 0;
		n = strtol(spec + 3, &end, 10);
		if (errno || end == spec + 3 || *end || n < 0 || n > 1 << 20)
			return log_error_errno(-EINVAL, "--events: '%s' is not fd:N", spec);
		fd = (int)n;
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			return log_error_errno(-errno, "--events %s: %m", spec);
	} else {
		struct stat st;

		/* A new file, or a pipe/terminal someone reads: never an existing file (it
		 * could be a link planted to make us truncate something else). */
		fd = open(spec, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST) {
			fd = open(spec, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
			if (fd >= 0 && (fstat(fd, &st) < 0 ||
					!(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))) {
				close(fd);
				return log_error_errno(-EEXIST, "--events %s: the file exists (give a "
						       "new path, a FIFO, or fd:N)", spec);
			}
			if (fd >= 0)
				fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		}
		if (fd < 0)
			return log_error_errno(-errno, "--events %s: %m", spec);
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	pthread_mutex_init(&e->lock, NULL);
	e->fd = fd;
	e->t0 = e->refill_ns = now_mono_ns();
	e->tokens = EVENTS_BURST;
	*ret = e;
	return 0;
}

/* One line, one write; under e->lock. */
static void emit(struct events *e, json_t *j)
{
	char *s;
	size_t len, off = 0;

	json_object_set_new(j, "t_us", json_integer((json_int_t)((now_mono_ns() - e->t0) / 1000)));
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	if (!s || e->broken) {
		free(s);
		return;
	}
	len = strlen(s);
	s[len++] = '\n'; /* replaces the NUL: json_dumps leaves room for nothing else */
	while (off < len) {
		ssize_t n = write(e->fd, s + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e->broken = true; /* EPIPE: nobody reads; the run goes on */
			break;
		}
		off += (size_t)n;
	}
	free(s);
}

static void flush_dropped(struct events *e)
{
	if (!e->dropped)
		return;
	emit(e, json_pack("{s:s, s:I}", "event", "dropped", "count", (json_int_t)e->dropped));
	e->dropped = 0;
}

/* What the operator can do about a denial, from the kind of rule that decided it. */
static const char *hint_of(const char *rule, int err, bool net)
{
	if (net)
		return "the network policy refuses this destination: allow it with --allow-net HOST:PORT";
	if (!rule)
		return NULL;
	if (strncmp(rule, "hide ", 5) == 0)
		return "the policy hides this path; a --ro-bind or --bind of it given after the hide rule shows it";
	if (strncmp(rule, "deny ", 5) == 0)
		return "the policy denies this path; a --ro-bind or --bind of it given after the deny rule allows it";
	if (strncmp(rule, "unmapped", 8) == 0)
		return "the path is not in the sandbox's view: map it with --ro-bind PATH or --bind PATH";
	if (err == EROFS)
		return "the path is mapped read-only: map it with --bind to make it writable";
	return NULL;
}

void events_denial(struct events *e, pid_t tid, const char *syscall, const char *path,
		   const char *addr, const char *rule, int err)
{
	uint64_t now;
	const char *en, *hint;
	json_t *j;

	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	now = now_mono_ns();
	e->tokens += (double)(now - e->refill_ns) * EVENTS_PER_SEC / 1e9;
	if (e->tokens > EVENTS_BURST)
		e->tokens = EVENTS_BURST;
	e->refill_ns = now;
	if (e->tokens < 1) {
		e->dropped++;
		pthread_mutex_unlock(&e->lock);
		return;
	}
	e->tokens -= 1;
	flush_dropped(e);
	en = sc_errno_name(err);
	hint = hint_of(rule, err, addr != NULL);
	j = json_pack("{s:s, s:s, s:i, s:s}", "event", "denial", "syscall", syscall, "pid", (int)tid,
		      "errno", en ? en : "?");
	if (j && path)
		json_object_set_new(j, "path", json_string(path));
	if (j && addr)
		json_object_set_new(j, "addr", json_string(addr));
	if (j && rule)
		json_object_set_new(j, "rule", json_string(rule));
	if (j && hint)
		json_object_set_new(j, "hint", json_string(hint));
	if (j)
		emit(e, j);
	pthread_mutex_unlock(&e->lock);
}

void events_limit(struct events *e, const char *kind, const char *detail)
{
	json_t *j;

	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	flush_dropped(e);
	j = json_pack("{s:s, s:s}", "event", "limit", "limit", kind);
	if (j && detail)
		json_object_set_new(j, "detail", json_string(detail));
	if (j)
		emit(e, j);
	pthread_mutex_unlock(&e->lock);
}

void events_result(struct events *e, int exit_status, const char *reason, uint64_t wall_ns,
		   uint64_t cpu_ns, uint64_t denials)
{
	json_t *j;

	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	flush_dropped(e);
	j = json_pack("{s:s, s:i, s:s, s:I, s:I, s:I}", "event", "result", "exit_status",
		      exit_status, "reason", reason, "wall_ms", (json_int_t)(wall_ns / 1000000),
		      "cpu_ms", (json_int_t)(cpu_ns / 1000000), "denials", (json_int_t)denials);
	if (j)
		emit(e, j);
	pthread_mutex_unlock(&e->lock);
}

void events_close(struct events *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	flush_dropped(e);
	pthread_mutex_unlock(&e->lock);
	close(e->fd);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
