/* SPDX-License-Identifier: MIT */
/*
 * Process records: fork and exit from the kernel's proc connector, exec from the
 * supervisor's own exec notification. Why the connector (audit/SCHEMA.md, "Process
 * records"): it reports every fork and exit of every process with the exit status, costs
 * the sandbox nothing (no extra notification per fork), and sees processes that never
 * make a notified call. It needs CAP_NET_ADMIN; without it the stream has exec records
 * only, and the header's "proc_connector" feature says why.
 *
 * The connector is host-wide: the thread keeps the table of the sandbox's threads (host
 * tid -> thread group and ids in the sandbox's pid namespace), grown by the fork events
 * whose parent is in it, starting from the keeper; events of other processes are skipped.
 * The same table answers proctrack_ids() for sys records, so a thread's ids are read from
 * /proc/<tid>/status once, not per call. Entries go at the thread's exit event; without
 * the connector nothing removes them (a tid can be reused), so they are trusted for 50 ms.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "cleanup.h"
#include "clock.h"
#include "creds.h"
#include "ctx.h"
#include "log.h"
#include "macros.h"
#include "proctrack.h"
#include "sc.h"
#include "sup.h"

#define ARGV_MAX 256            /* arguments recorded per exec */
#define ARGV_BYTES 16384        /* bytes of argument text recorded per exec */

struct thread_ent {
	pid_t tid;               /* host; 0 = free, -1 = deleted */
	pid_t tgid;
	pid_t ns_tid, ns_tgid;   /* in the sandbox's pid namespace, 0 if unknown */
	uint64_t read_ns;        /* when read from /proc (without the connector: kept 50 ms) */
	uint64_t gone_ns;        /* its exit event's time, 0 while it lives (see erase()) */
};

/* Without exit events, how long a thread's ids are trusted: as the comm cache of the
 * dispatcher, far below the time the kernel needs to hand out the same tid again. */
#define IDS_TTL_NS (50 * 1000 * 1000ull)
/* An exited thread's ids stay this long for the records of what it did before: the
 * native-open recorder reads its events after the opener may have exited. */
#define GONE_TTL_NS (5 * 1000 * 1000 * 1000ull)

struct proctrack {
	int fd;                  /* the connector socket, or -1 */
	int wake;                /* eventfd: stop's nudge, so the thread need not time out */
	pthread_t thread;
	bool running;
	atomic_bool stop;
	struct audit_writer *w;
	pid_t root, self;
	pthread_mutex_t lock;    /* guards the table */
	struct thread_ent *v;
	size_t n, used, cap;     /* live entries, slots taken (live + deleted), slots */
	unsigned long lost;      /* events the kernel dropped (ENOBUFS) */
};

/* ---- the table (open addressing, linear probing, tombstones) ------------------------ */

static size_t slot_of(const struct proctrack *pt, pid_t tid)
{
	return ((uint32_t)tid * 2654435761u) & (pt->cap - 1);
}

/* The entry of tid, exited ones included (gone_ns). */
static struct thread_ent *find_any(struct proctrack *pt, pid_t tid)
{
	if (!pt->cap)
		return NULL;
	for (size_t i = slot_of(pt, tid);; i = (i + 1) & (pt->cap - 1)) {
		if (pt->v[i].tid == 0)
			return NULL;
		if (pt->v[i].tid == tid)
			return &pt->v[i];
	}
}

/* The entry of a live thread. */
static struct thread_ent *find(struct proctrack *pt, pid_t tid)
{
	struct thread_ent *x = find_any(pt, tid);

	return x && !x->gone_ns ? x : NULL;
}

static int grow(struct proctrack *pt)
{
	size_t cap = pt->cap ? pt->cap * 2 : 256;
	struct thread_ent *old = pt->v, *nv = calloc(cap, sizeof(*nv));
	size_t ocap = pt->cap;
	uint64_t now = now_mono_ns();

	if (!nv)
		return -ENOMEM;
	/* only the live entries move: a table full of tombstones is rebuilt at its size */
	if (pt->n * 4 < ocap)
		cap = ocap;
	pt->v = nv;
	pt->cap = cap;
	pt->n = 0;
	for (size_t j = 0; j < ocap; j++) {
		/* an exited thread's entry that outlived GONE_TTL_NS goes now */
		if (old[j].tid <= 0 || (old[j].gone_ns && now - old[j].gone_ns > GONE_TTL_NS))
			continue;
		pt->n++;
		for (size_t i = slot_of(pt, old[j].tid);; i = (i + 1) & (cap - 1))
			if (nv[i].tid == 0) {
				nv[i] = old[j];
				break;
			}
	}
	pt->used = pt->n;
	free(old);
	return 0;
}

static struct thread_ent *insert(struct proctrack *pt, const struct thread_ent *e)
{
	struct thread_ent *x = find_any(pt, e->tid); /* a reused tid replaces the exited */

	if (x) {
		*x = *e;
		return x;
	}
	if ((pt->used + 1) * 2 > pt->cap && grow(pt) < 0)
		return NULL;
	for (size_t i = slot_of(pt, e->tid);; i = (i + 1) & (pt->cap - 1))
		if (pt->v[i].tid <= 0) {
			if (pt->v[i].tid == 0)
				pt->used++;
			pt->v[i] = *e;
			pt->n++;
			return &pt->v[i];
		}
}

/* At the thread's exit event: kept, marked, for GONE_TTL_NS (lookup()), then dropped by
 * grow(); forks and exits only ever meet live entries (find()). */
static void erase(struct proctrack *pt, pid_t tid)
{
	struct thread_ent *x = find(pt, tid);

	if (x)
		x->gone_ns = now_mono_ns();
}

/* ---- ids from /proc ------------------------------------------------------------------ */

/* The last number of a "Name:\tA\tB..." line: the id in the innermost namespace. */
static pid_t last_field(const char *line)
{
	const char *p = line + strlen(line);

	while (p > line && (p[-1] == '\n' || p[-1] == ' ' || p[-1] == '\t'))
		p--;
	while (p > line && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return (pid_t)strtol(p, NULL, 10);
}

static int read_ids(pid_t tid, struct thread_ent *e)
{
	char path[64], line[256];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	/* after a continued open the notifier may still act for its caller (lazy_creds()
	 * in dispatch.c), whose authority may fall short of /proc here */
	if (!f && (errno == EACCES || errno == EPERM) && creds_self())
		f = fopen(path, "re");
	if (!f)
		return -errno;
	*e = (struct thread_ent){ .tid = tid };
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Tgid:", 5) == 0)
			e->tgid = (pid_t)strtol(line + 5, NULL, 10);
		else if (strncmp(line, "NStgid:", 7) == 0)
			e->ns_tgid = last_field(line);
		else if (strncmp(line, "NSpid:", 6) == 0)
			e->ns_tid = last_field(line);
	}
	return e->tgid > 0 ? 0 : -ESRCH;
}

/* The entry of tid, read from /proc when it is not known yet; copies it to *ret. */
static bool lookup(struct proctrack *pt, pid_t tid, struct thread_ent *ret)
{
	uint64_t now = now_mono_ns();
	struct thread_ent *x;
	bool found;

	pthread_mutex_lock(&pt->lock);
	x = find_any(pt, tid);
	/* now was read before the lock: an exit handled since then is "later" than now,
	 * and an unsigned now - gone_ns would wrap */
	found = x && (x->gone_ns ? now < x->gone_ns + GONE_TTL_NS
				 : pt->fd >= 0 || now - x->read_ns < IDS_TTL_NS);
	if (found)
		*ret = *x;
	pthread_mutex_unlock(&pt->lock);
	if (found)
		return true;
	if (read_ids(tid, ret) < 0)
		return false;
	ret->read_ns = now;
	pthread_mutex_lock(&pt->lock);
	if (pt->fd < 0 && pt->n >= 65536) {
		/* nothing erases entries without exit events: start afresh now and then */
		memset(pt->v, 0, pt->cap * sizeof(*pt->v));
		pt->n = pt->used = 0;
	}
	insert(pt, ret);
	pthread_mutex_unlock(&pt->lock);
	return true;
}

/* The ids proctrack_call() read for the call this notifier thread is answering: the
 * record is written after the answer, when the caller may be gone already. */
static __thread struct thread_ent call_ids;

void proctrack_ids(struct proctrack *pt, pid_t tid, pid_t *pid, pid_t *spid, pid_t *stid)
{
	struct thread_ent e;

	if (call_ids.tid == tid && call_ids.tgid > 0)
		e = call_ids;
	else if (!pt || !lookup(pt, tid, &e))
		return;
	call_ids.tid = 0;
	*pid = e.tgid;
	*spid = e.ns_tgid;
	*stid = e.ns_tid;
}

/* ---- exec ---------------------------------------------------------------------------- */

/* argv of the calling thread, bounded: pointers one by one (the array may end at the
 * edge of a mapping), each string up to what is left of ARGV_BYTES. The thread waits for
 * our answer, but its other threads may still change the strings: this is a record of
 * what the call named, not a decision input. */
static size_t read_argv(pid_t tid, uint64_t addr, char *buf, const char **argv, bool *cut)
{
	size_t n = 0, used = 0;

	*cut = false;
	while (addr && n < ARGV_MAX) {
		uint64_t p;
		int r;

		if (mem_read(tid, addr + 8 * n, &p, sizeof(p)) < 0 || !p)
			break;
		if (used + 2 > ARGV_BYTES) {
			*cut = true;
			break;
		}
		r = mem_read_string(tid, p, buf + used, ARGV_BYTES - used);
		if (r == -ENAMETOOLONG) {
			/* the rest of the budget, cut and terminated */
			argv[n++] = buf + used;
			*cut = true;
			break;
		}
		if (r < 0)
			break;
		argv[n++] = buf + used;
		used += strlen(buf + used) + 1;
	}
	if (n == ARGV_MAX)
		*cut = true;
	argv[n] = NULL;
	return n;
}

void proctrack_call(struct sup_call *c)
{
	struct sup_ctx *s = c->s;
	struct thread_ent e = { .tgid = c->tid };
	struct audit_proc p;
	uint64_t argv_addr;
	const char **argv;
	char *buf;
	bool cut;

	call_ids.tid = 0;
	if (!s->audit || !s->proctrack)
		return;
	if (lookup(s->proctrack, c->tid, &e))
		call_ids = e;
	if (!c->e || (c->e->id != SC_execve && c->e->id != SC_execveat))
		return;
	argv = calloc(ARGV_MAX + 1, sizeof(*argv));
	buf = malloc(ARGV_BYTES);
	if (!argv || !buf) {
		free(argv);
		free(buf);
		return;
	}
	argv_addr = c->req->data.args[c->e->id == SC_execve ? 1 : 2];
	read_argv(c->tid, argv_addr, buf, argv, &cut);
	p = (struct audit_proc){
		.event = AUDIT_PROC_EXEC,
		.mono_ns = now_mono_ns(),
		.pid = e.tgid,
		.tid = c->tid,
		.sandbox_pid = e.ns_tgid,
		.sandbox_tid = e.ns_tid,
		.path = c->verdict.vpath[0] ? c->verdict.vpath : (c->has_path ? c->path : NULL),
		.argv = argv,
		.argv_truncated = cut,
		.decision = c->policy_denied ? AUDIT_DENIED
			  : c->outcome == CALL_CONTINUE ? AUDIT_CONTINUED : AUDIT_EMULATED,
		.err = c->outcome == CALL_CONTINUE ? 0 : c->err,
		.rule = c->verdict.rule[0] ? c->verdict.rule : NULL,
	};
	audit_proc(s->audit, &p);
	free(argv);
	free(buf);
}

/* ---- the connector -------------------------------------------------------------------- */

/* The kernel refuses PROC_CN_MCAST_LISTEN without CAP_NET_ADMIN, but says so only in a
 * multicast answer that a refused listener does not get: ask for the capability. */
static bool have_net_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32));
}

struct proctrack *proctrack_open(const char **why)
{
	struct proctrack *pt = calloc(1, sizeof(*pt));
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	union {
		char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(enum proc_cn_mcast_op))];
		struct nlmsghdr align;
	} msg;
	struct nlmsghdr *nl = &msg.align;
	struct cn_msg *cn = NLMSG_DATA(nl);
	enum proc_cn_mcast_op op = PROC_CN_MCAST_LISTEN;
	int size = 8 << 20;

	*why = NULL;
	if (!pt)
		return NULL;
	pthread_mutex_init(&pt->lock, NULL);
	pt->self = getpid();
	pt->fd = pt->wake = -1;
	if (!have_net_admin()) {
		*why = "fork and exit records unavailable: the proc connector needs CAP_NET_ADMIN "
		       "(run moat as root)";
		return pt;
	}
	pt->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (pt->fd < 0) {
		*why = "fork and exit records unavailable: no proc connector (NETLINK_CONNECTOR)";
		return pt;
	}
	/* A busy host forks a lot: room for a burst while the thread catches up. */
	if (setsockopt(pt->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(pt->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	memset(&msg, 0, sizeof(msg));
	nl->nlmsg_len = NLMSG_LENGTH(sizeof(*cn) + sizeof(op));
	nl->nlmsg_type = NLMSG_DONE;
	cn->id.idx = CN_IDX_PROC;
	cn->id.val = CN_VAL_PROC;
	cn->len = sizeof(op);
	memcpy(cn->data, &op, sizeof(op));
	if (bind(pt->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(pt->fd, nl, nl->nlmsg_len, 0) < 0) {
		*why = errno == EPERM ? "fork and exit records unavailable: the proc connector "
					"needs CAP_NET_ADMIN (run moat as root)"
				      : "fork and exit records unavailable: the proc connector "
					"refused to subscribe";
		safe_close(pt->fd);
		pt->fd = -1;
	}
	return pt;
}

bool proctrack_connected(const struct proctrack *pt)
{
	return pt && pt->fd >= 0;
}

static void emit_fork(struct proctrack *pt, const struct proc_event *ev,
		      const struct thread_ent *child)
{
	const struct fork_proc_event *f = &ev->event_data.fork;
	struct thread_ent parent = { 0 }, forker = { 0 };
	struct thread_ent *x;
	struct audit_proc p;

	if ((x = find(pt, f->parent_tgid)))
		parent = *x;
	if ((x = find(pt, f->parent_pid)))
		forker = *x;
	p = (struct audit_proc){
		.event = AUDIT_PROC_FORK,
		.mono_ns = ev->timestamp_ns,
		.pid = child->tgid,
		.ppid = f->parent_tgid,
		.tid = f->parent_pid,
		.sandbox_pid = child->ns_tgid,
		.sandbox_tid = forker.ns_tid,
		.sandbox_ppid = parent.ns_tgid,
	};
	audit_proc(pt->w, &p);
}

/* utime and stime (fields 14 and 15 of /proc/<pid>/stat) of a process that is exiting:
 * it is still there (a zombie) unless its parent has reaped it already. */
static void exit_times(pid_t pid, uint64_t *ut, uint64_t *st)
{
	char path[64], buf[1024], *p;
	unsigned long long u = 0, s = 0;
	_cleanup_close_ int fd = -1;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0 || hz <= 0)
		return;
	buf[n] = '\0';
	/* after the comm, which may hold anything but ends at the last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &u, &s) != 2)
		return;
	*ut = u * (1000000000ull / (uint64_t)hz);
	*st = s * (1000000000ull / (uint64_t)hz);
}

static void handle_event(struct proctrack *pt, const struct proc_event *ev)
{
	switch (ev->what) {
	case PROC_EVENT_FORK: {
		const struct fork_proc_event *f = &ev->event_data.fork;
		struct thread_ent child, *x;
		bool ours;

		pthread_mutex_lock(&pt->lock);
		ours = find(pt, f->parent_pid) || find(pt, f->parent_tgid) ||
		       f->child_tgid == pt->root;
		pthread_mutex_unlock(&pt->lock);
		if (!ours)
			return;
		if (read_ids(f->child_pid, &child) < 0)
			child = (struct thread_ent){ .tid = f->child_pid, .tgid = f->child_tgid };
		pthread_mutex_lock(&pt->lock);
		/* A child gone before its fork event was read (this thread starved for a few
		 * ms) may have been read from /proc while it lived, by a trapped call of its
		 * own (lookup()): those ids stand. A live entry is this very child, since a
		 * tid is handed out again only after its exit event, which erase() saw. */
		if (!child.ns_tgid && (x = find(pt, f->child_pid)) && x->ns_tgid)
			child = *x;
		x = insert(pt, &child);
		if (x && f->child_pid == f->child_tgid)
			/* threads are not recorded: their calls carry their tid */
			emit_fork(pt, ev, x);
		pthread_mutex_unlock(&pt->lock);
		return;
	}
	case PROC_EVENT_EXIT: {
		const struct exit_proc_event *e = &ev->event_data.exit;
		struct thread_ent t = { 0 }, parent = { 0 }, *x;
		struct audit_proc p;
		uint64_t ut = 0, st = 0;
		int code = (int)e->exit_code;      /* as wait(2) reports it */
		bool ours, leader = e->process_pid == e->process_tgid;

		pthread_mutex_lock(&pt->lock);
		x = find(pt, e->process_pid);
		ours = x != NULL;
		if (x)
			t = *x;
		if ((x = find(pt, e->parent_tgid)))
			parent = *x;
		erase(pt, e->process_pid);
		pthread_mutex_unlock(&pt->lock);
		if (!ours || !leader)
			return;
		exit_times(e->process_pid, &ut, &st);
		p = (struct audit_proc){
			.event = AUDIT_PROC_EXIT,
			.mono_ns = ev->timestamp_ns,
			.pid = e->process_tgid,
			.ppid = e->parent_tgid,
			.tid = e->process_pid,
			.sandbox_pid = t.ns_tgid,
			.sandbox_tid = t.ns_tid,
			.sandbox_ppid = parent.ns_tgid,
			.status = WIFEXITED(code) ? WEXITSTATUS(code) : -1,
			.signal = WIFSIGNALED(code) ? WTERMSIG(code) : 0,
			.core = WIFSIGNALED(code) && WCOREDUMP(code),
			.utime_ns = ut,
			.stime_ns = st,
		};
		audit_proc(pt->w, &p);
		return;
	}
	default:
		return;
	}
}

/* Reads what is queued; blocks up to timeout_ms for the first message. 0 when nothing
 * came, 1 when something did, -errno on a socket error. */
static int pump(struct proctrack *pt, int timeout_ms)
{
	struct pollfd pfd[2] = { { .fd = pt->fd, .events = POLLIN },
				 { .fd = pt->wake, .events = POLLIN } };
	union {
		char buf[8192];
		struct nlmsghdr align;
	} u;
	struct proc_event ev;
	ssize_t len;

	if (poll(pfd, 2, timeout_ms) <= 0 || !(pfd[0].revents & POLLIN))
		return 0;
	len = recv(pt->fd, u.buf, sizeof(u.buf), MSG_DONTWAIT);
	if (len < 0) {
		if (errno == ENOBUFS) {
			pt->lost++;
			return 1;
		}
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	}
	for (struct nlmsghdr *nl = (struct nlmsghdr *)u.buf; NLMSG_OK(nl, (size_t)len);
	     nl = NLMSG_NEXT(nl, len)) {
		struct cn_msg *cn = NLMSG_DATA(nl);

		if (nl->nlmsg_type == NLMSG_ERROR || nl->nlmsg_type == NLMSG_NOOP)
			continue;
		if (nl->nlmsg_len < NLMSG_LENGTH(sizeof(*cn) + sizeof(struct proc_event)) ||
		    cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
			continue;
		/* cn_msg puts the event at 4-byte alignment; the struct wants 8 */
		memcpy(&ev, cn->data, sizeof(ev));
		handle_event(pt, &ev);
	}
	return 1;
}

static void *thread_main(void *arg)
{
	struct proctrack *pt = arg;

	while (!atomic_load(&pt->stop))
		if (pump(pt, -1) < 0)
			break;
	/* what the kernel queued before the last process was gone */
	while (pump(pt, 0) > 0)
		;
	return NULL;
}

int proctrack_start(struct proctrack *pt, struct audit_writer *w, pid_t root)
{
	struct thread_ent e;
	int r;

	if (!pt || pt->fd < 0 || pt->running || !w)
		return 0;
	pt->w = w;
	pt->root = root;
	/* the root's own fork event may be queued already, or not come at all */
	pthread_mutex_lock(&pt->lock);
	if (read_ids(root, &e) < 0)
		e = (struct thread_ent){ .tid = root, .tgid = root };
	insert(pt, &e);
	pthread_mutex_unlock(&pt->lock);
	pt->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pt->wake < 0)
		return negative_errno();
	r = pthread_create(&pt->thread, NULL, thread_main, pt);
	if (r)
		return -r;
	pt->running = true;
	return 0;
}

unsigned long proctrack_stop(struct proctrack *pt)
{
	if (!pt)
		return 0;
	if (pt->running) {
		atomic_store(&pt->stop, true);
		if (eventfd_write(pt->wake, 1) < 0)
			log_debug("proctrack: cannot wake the reader: %m");
		pthread_join(pt->thread, NULL);
		pt->running = false;
	}
	return pt->lost;
}

void proctrack_free(struct proctrack *pt)
{
	if (!pt)
		return;
	proctrack_stop(pt);
	safe_close(pt->fd);
	safe_close(pt->wake);
	pthread_mutex_destroy(&pt->lock);
	free(pt->v);
	free(pt);
}
