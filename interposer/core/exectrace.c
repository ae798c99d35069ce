/* SPDX-License-Identifier: MIT */
/*
 * The exec check, backed by what the kernel really executed.
 *
 * An exec is decided on a path and then continued: the kernel resolves the path again,
 * and a thread of the sandbox can change what it names in between (rewrite the shared
 * path buffer, swap a symlink in a writable directory). So before the continue, the
 * calling thread is seized with PTRACE_O_TRACEEXEC alone: no syscall stops, no cost but
 * one stop after a successful exec, before the new program's first instruction. There
 * the executed file (/proc/PID/exe) and every other file mapped (the ELF interpreter)
 * must be the inode that was checked, or an inode the policy allows at the path the
 * kernel reports for it; otherwise the process is killed before it runs and the denial
 * recorded. Then it is detached.
 *
 * A failed exec gives no exec stop: the thread returns to its program still traced. So
 * once the continue is answered the thread is interrupted (PTRACE_INTERRUPT): a successful
 * exec reports its exec stop first (the interrupt stays pending and is dropped by the
 * detach), a failed or restarted one stops at once, and any stop that is not the exec
 * stop means the attempt is over: the thread is detached (a signal it stopped for is
 * handed back), and a restarted exec is notified and seized again.
 *
 * The command moat starts is seized early, when its listener arrives (before any of its
 * notifications can be answered): until its exec it runs moat's code, whose failed exec
 * is followed by another exec or by _exit(), so its attempts are written down by the
 * notifier itself, with no hand-over and no interrupt, and a warm start's request path
 * carries neither.
 *
 * ptrace requests are only accepted from the thread that attached, so one tracer thread
 * owns every seized task and waits for their stops (__WNOTHREAD: its own tracees only; the
 * main loop's reaping is __WNOTHREAD as well, so neither takes the other's events). A
 * notifier hands it a request (seize, or interrupt once continued) and waits for that
 * alone: neither blocks, and the tracer never waits for a notifier.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "clock.h"
#include "ctx.h"
#include "exectrace.h"
#include "log.h"
#include "macros.h"

enum req_kind { REQ_SEIZE, REQ_ARMED };

struct req {
	enum req_kind kind;
	pid_t tid;
	uint64_t token;
	dev_t dev;              /* the inode checked (0/0: none, e.g. an fd that is gone) */
	ino_t ino;
	bool early;             /* exectrace_seize_early() */
	int result;
	bool done;
	struct req *next;
};

struct watched {
	pid_t tid;              /* the thread that called exec; its process's pid after it */
	uint64_t token;         /* of the latest exec attempt */
	dev_t dev;
	ino_t ino;
	bool killed;            /* waiting for its exit, which only we can collect */
	bool early;             /* seized while it waited for its command, which is still
	                           moat's own code: until its exec stop, its exec attempts
	                           are recorded without a hand-over and need no interrupt */
};

struct exectrace {
	struct sup_ctx *s;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t done;
	sem_t wake;
	struct req *head, *tail; /* under lock */
	bool stop;               /* under lock */
	uint64_t next_token;     /* under lock */
	struct watched *w;       /* under lock: changed by the tracer thread only, but read
	                            and updated by exectrace_watch() for an early seize */
	size_t n, cap;           /* under lock */
};

static void on_wake(int sig)
{
	(void)sig;
}

static struct watched *find(struct exectrace *t, pid_t tid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->w[i].tid == tid)
			return &t->w[i];
	return NULL;
}

static void forget(struct exectrace *t, struct watched *w)
{
	*w = t->w[--t->n];
}

/* --- the check at the exec stop ---------------------------------------------------- */

/* The policy allows executing the file at vpath, and that file is the inode (dev, ino). */
static bool allowed_at(struct exectrace *t, pid_t pid, const char *vpath, dev_t dev, ino_t ino,
		       char *rule, size_t rule_len)
{
	struct vfs_caller caller = { .pid = pid, .tgid = pid, .base = "/" };
	struct vfs_verdict v = { 0 };
	struct stat st;

	if (vpath[0] != '/') {
		snprintf(rule, rule_len, "exec: %s is not a file of the sandbox's view", vpath);
		return false;
	}
	if (vfs_check_exec_file(t->s->vfs, &caller, vpath, &v, &st) < 0) {
		snprintf(rule, rule_len, "exec: %s: %s", vpath,
			 v.rule[0] ? v.rule : "not executable under the policy");
		return false;
	}
	if (st.st_dev != dev || st.st_ino != ino) {
		snprintf(rule, rule_len, "exec: %s changed while it was executed", vpath);
		return false;
	}
	return true;
}

/*
 * Every file mapped at the exec stop besides the executable is the ELF interpreter (the
 * rest is the stack, vdso and vvar): each must be allowed where the kernel found it.
 */
static bool interpreters_ok(struct exectrace *t, pid_t pid, const struct stat *exe, char *path,
			    char *rule, size_t rule_len)
{
	char p[64], line[PATH_MAX + 256];
	bool ok = true;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "re");
	if (!f) {
		snprintf(rule, rule_len, "exec: cannot read the new program's mappings");
		return false;
	}
	while (ok && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long ino;
		int off = 0;
		size_t n;

		if (sscanf(line, "%*x-%*x %*s %*x %x:%x %llu %n", &maj, &min, &ino, &off) < 3 ||
		    ino == 0 || off == 0)
			continue;
		if (makedev(maj, min) == exe->st_dev && ino == exe->st_ino)
			continue;
		str_copy(path, PATH_MAX, line + off);
		n = strlen(path);
		if (n && path[n - 1] == '\n')
			path[n - 1] = '\0';
		ok = allowed_at(t, pid, path, makedev(maj, min), (ino_t)ino, rule, rule_len);
	}
	fclose(f);
	return ok;
}

/* Is what pid runs now what the policy allowed? On false, path and rule say why. */
static bool exec_ok(struct exectrace *t, const struct watched *w, pid_t pid, char *path,
		    char *rule, size_t rule_len)
{
	char p[64];
	struct stat st;
	ssize_t n;

	path[0] = '\0';
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	n = readlink(p, path, PATH_MAX - 1);
	path[n > 0 ? n : 0] = '\0';
	if (stat(p, &st) < 0) {
		/* Not readable for us (a non-dumpable program as an unprivileged user): it
		 * cannot be verified, so it does not run. */
		snprintf(rule, rule_len, "exec: cannot verify the executed file: %s",
			 strerror(errno));
		return false;
	}
	if (!((w->dev || w->ino) && st.st_dev == w->dev && st.st_ino == w->ino) &&
	    !allowed_at(t, pid, path, st.st_dev, st.st_ino, rule, rule_len))
		return false;
	return interpreters_ok(t, pid, &st, path, rule, rule_len);
}

static void record_kill(struct exectrace *t, pid_t pid, const char *path, const char *rule)
{
	struct sup_ctx *s = t->s;

	atomic_fetch_add(&s->n.denied, 1);
	atomic_fetch_add(&s->denials_by_id[SC_execve], 1);
	if (path[0])
		log_warning("killed pid %d before it ran \"%s\" (%s)", pid, path, rule);
	else
		log_warning("killed pid %d before it ran its new program (%s)", pid, rule);
	if (s->audit) {
		struct audit_sys a = {
			.mono_ns = now_mono_ns(),
			.pid = pid,
			.tid = pid,
			.comm = "",
			.syscall = "execve",
			.nr = __NR_execve,
			.path = path[0] ? path : NULL,
			.resolved = path[0] ? path : NULL,
			.decision = AUDIT_DENIED,
			.rule = rule,
			.err = EACCES,
		};

		audit_sys(s->audit, &a);
	}
}

/* --- the tracer thread ---------------------------------------------------------------- */

static void on_stop(struct exectrace *t, pid_t pid, int status)
{
	char path[PATH_MAX], rule[PATH_MAX + 128];
	int event = status >> 16;
	struct watched *w;

	if (event == PTRACE_EVENT_EXEC) {
		unsigned long former = 0;

		/* A thread other than the leader that execs takes the leader's pid: the event
		 * comes on that pid, the thread's own tid is in the event message. */
		if (ptrace(PTRACE_GETEVENTMSG, pid, NULL, &former) == 0 && (pid_t)former != pid) {
			if ((w = find(t, pid)))
				forget(t, w); /* the former leader, gone in the exec */
			if ((w = find(t, (pid_t)former)))
				w->tid = pid;
		}
		w = find(t, pid);
		if (!w) {
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			return;
		}
		if (exec_ok(t, w, pid, path, rule, sizeof(rule))) {
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			forget(t, w);
			return;
		}
		/* It stays ours until it is gone: its exit is reported to us. */
		kill(pid, SIGKILL);
		w->killed = true;
		record_kill(t, pid, path, rule);
		return;
	}
	w = find(t, pid);
	if (w && w->killed)
		return;
	/* Any other stop ends the attempt (see the top of this file): give back the signal
	 * it stopped for, if any (a group stop stays a group stop after the detach). */
	ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)(event == 0 ? WSTOPSIG(status) : 0));
	if (w)
		forget(t, w);
}

static void serve(struct exectrace *t, struct req *q)
{
	struct watched *w;

	if (q->kind == REQ_ARMED) {
		w = find(t, q->tid);
		if (w && w->token == q->token && !w->killed)
			ptrace(PTRACE_INTERRUPT, q->tid, NULL, NULL);
		return;
	}
	w = find(t, q->tid);
	if (!w) {
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 16;
			struct watched *nw = realloc(t->w, cap * sizeof(*nw));

			if (!nw) {
				q->result = -ENOMEM;
				return;
			}
			t->w = nw;
			t->cap = cap;
		}
		if (ptrace(PTRACE_SEIZE, q->tid, NULL,
			   (void *)(long)(PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) < 0) {
			q->result = -errno;
			return;
		}
		w = &t->w[t->n++];
		*w = (struct watched){ .tid = q->tid, .early = q->early };
	} else if (w->killed) {
		q->result = -ESRCH;
		return;
	} else if (q->early) {
		q->result = -EALREADY; /* seized for an exec already: that one is armed */
		return;
	}
	/* Still ours from an attempt that failed before we saw it stop: this one counts. */
	w->token = q->token;
	w->dev = q->dev;
	w->ino = q->ino;
	q->result = 0;
}

static void *tracer_main(void *arg)
{
	struct exectrace *t = arg;
	sigset_t wake;

	sigemptyset(&wake);
	sigaddset(&wake, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	for (;;) {
		struct req *q;
		bool stop, served = false;
		size_t n;
		int status, err;
		pid_t pid;

		/* Under the lock throughout: exectrace_watch() reads the entries too. A
		 * request's memory is its caller's once done is set: next is read first. */
		pthread_mutex_lock(&t->lock);
		q = t->head;
		t->head = t->tail = NULL;
		stop = t->stop;
		while (q) {
			struct req *next = q->next;

			serve(t, q);
			q->done = true;
			served = true;
			q = next;
		}
		if (served)
			pthread_cond_broadcast(&t->done);
		n = t->n;
		pthread_mutex_unlock(&t->lock);
		if (stop)
			break;
		if (n == 0) {
			struct timespec ts;

			/* A request posts it; EINTR just goes round. Bounded, because a tracee
			 * can outlive its entry here (killed between its seize and its stop):
			 * until its tracer waits for it, it stays a traced zombie, and a pid
			 * namespace whose init waits for it never finishes dying. */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			(void)sem_timedwait(&t->wake, &ts);
			while ((pid = waitpid(-1, &status, WNOHANG | __WALL | __WNOTHREAD)) > 0)
				if (WIFSTOPPED(status))
					ptrace(PTRACE_DETACH, pid, NULL, NULL);
			continue;
		}
		/* A request interrupts this with SIGUSR2 (no SA_RESTART). */
		pid = waitpid(-1, &status, __WALL | __WNOTHREAD);
		err = pid < 0 ? errno : 0;
		pthread_mutex_lock(&t->lock);
		if (err == ECHILD)
			t->n = 0; /* none is ours any more (reaped by a teardown sweep) */
		if (pid > 0 && WIFSTOPPED(status)) {
			on_stop(t, pid, status);
		} else if (pid > 0 && (WIFEXITED(status) || WIFSIGNALED(status))) {
			struct watched *w = find(t, pid);

			if (w)
				forget(t, w);
		}
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

/* Queue q unless the run is over (the tracer is gone then), and wait until it is served:
 * a SIGUSR2 that lands just before the tracer enters waitpid() is lost, so it is repeated
 * until then. */
static int request(struct exectrace *t, struct req *q, bool new_token)
{
	pthread_mutex_lock(&t->lock);
	if (new_token)
		q->token = ++t->next_token;
	if (t->stop) {
		pthread_mutex_unlock(&t->lock);
		return -ESRCH;
	}
	q->next = NULL;
	if (t->tail)
		t->tail->next = q;
	else
		t->head = q;
	t->tail = q;
	pthread_mutex_unlock(&t->lock);
	sem_post(&t->wake);
	pthread_kill(t->thread, SIGUSR2);
	pthread_mutex_lock(&t->lock);
	while (!q->done) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_cond_timedwait(&t->done, &t->lock, &ts) == ETIMEDOUT && !q->done)
			pthread_kill(t->thread, SIGUSR2);
	}
	pthread_mutex_unlock(&t->lock);
	return q->result;
}

int exectrace_watch(struct sup_ctx *s, pid_t tid, const struct stat *checked,
		    uint64_t *ret_token)
{
	struct exectrace *t = s->exectrace;
	struct req q = { .kind = REQ_SEIZE, .tid = tid };
	struct watched *w;
	int r;

	if (!t)
		return -ENOSYS;
	if (checked) {
		q.dev = checked->st_dev;
		q.ino = checked->st_ino;
	}
	/* Seized early (the command of a warm start): already ours, so the attempt is only
	 * written down, with no hand-over to the tracer thread on the request's path. */
	pthread_mutex_lock(&t->lock);
	w = t->stop ? NULL : find(t, tid);
	if (w && w->early && !w->killed) {
		w->dev = q.dev;
		w->ino = q.ino;
		w->token = ++t->next_token;
		pthread_mutex_unlock(&t->lock);
		*ret_token = 0; /* nothing to arm: see exectrace_seize_early() */
		return 0;
	}
	pthread_mutex_unlock(&t->lock);
	r = request(t, &q, true);
	if (r < 0)
		return r;
	*ret_token = q.token;
	return 0;
}

void exectrace_armed(struct sup_ctx *s, pid_t tid, uint64_t token)
{
	struct req q = { .kind = REQ_ARMED, .tid = tid, .token = token };

	if (s->exectrace && token)
		(void)request(s->exectrace, &q, false);
}

int exectrace_seize_early(struct sup_ctx *s, pid_t tid, int pidfd)
{
	struct req q = { .kind = REQ_SEIZE, .tid = tid, .early = true };
	int r;

	if (!s->exectrace)
		return -ENOSYS;
	r = request(s->exectrace, &q, true);
	if (r < 0)
		return r;
	/* The pidfd was opened before the seize: if its process is still there, tid was
	 * that process all along (a pid is not reused while its process lives). Otherwise
	 * tid may name another process by now: the interrupt's stop lets it go. */
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
		r = -errno;
		(void)request(s->exectrace, &(struct req){ .kind = REQ_ARMED, .tid = tid,
							   .token = q.token }, false);
		return r;
	}
	return 0;
}

int exectrace_start(struct sup_ctx *s)
{
	struct sigaction sa = { .sa_handler = on_wake }; /* no SA_RESTART */
	struct exectrace *t = calloc(1, sizeof(*t));
	sigset_t all, old;
	int r;

	if (!t)
		return -ENOMEM;
	t->s = s;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->done, NULL);
	sem_init(&t->wake, 0, 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&t->thread, NULL, tracer_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		free(t);
		return r;
	}
	s->exectrace = t;
	return 0;
}

/* Tell the thread to stop without waiting for it: at teardown every thread is told
 * first and joined after, so that their wake-ups overlap. exectrace_stop() joins. */
void exectrace_wake(struct sup_ctx *s)
{
	struct exectrace *t = s->exectrace;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_mutex_unlock(&t->lock);
	sem_post(&t->wake);
	pthread_kill(t->thread, SIGUSR2);
}

/* After the sandbox is gone. A tracee still attached would be killed by PTRACE_O_EXITKILL
 * as the thread exits. */
void exectrace_stop(struct sup_ctx *s)
{
	struct exectrace *t = s->exectrace;

	if (!t)
		return;
	/* a wake that came before the thread waited is lost: again until it is gone */
	for (;;) {
		struct timespec ts;

		exectrace_wake(s);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 2000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(t->thread, NULL, &ts) == 0)
			break;
	}
	s->exectrace = NULL;
	free(t->w);
	sem_destroy(&t->wake);
	pthread_cond_destroy(&t->done);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
