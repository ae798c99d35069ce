/* SPDX-License-Identifier: MIT */
/*
 * `moat serve --socket PATH`: sandboxes for programs, over JSON lines on a unix socket.
 *
 * A client connects and sends one JSON object per line; every request carries an "op"
 * and may carry an "id", which every line answering it repeats. The protocol is in
 * docs/serve.md. A sandbox is a policy, a workspace, an environment and limits; each
 * `exec` in it is one `moat run` child process of this server, so a sandbox that
 * crashes or misbehaves takes nothing else with it, and everything `moat run` does
 * (both modes, the report, the change set, --events) holds here unchanged.
 *
 * Lifetimes. A sandbox belongs to the connection that created it: when the client goes
 * away (or sends `destroy`), its running exec gets SIGTERM (moat run then kills the
 * whole tree), SIGKILL if it is still there KILL_GRACE_MS later, and its private
 * workspace is removed. Each exec child has PR_SET_PDEATHSIG(SIGKILL), so a server that
 * dies takes its runs with it; its state directory is locked with flock() and the next
 * server removes an unlocked one it finds (sweep_stale()).
 *
 * The server is one thread and one epoll loop; nothing in it blocks on a client or a
 * sandbox. Files are put into and got from a workspace with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), so a link the sandbox planted cannot lead the server (root, as
 * a rule) anywhere outside it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cow.h"
#include "log.h"
#include "macros.h"
#include "moat-config.h"
#include "net.h"
#include "output.h"
#include "policy.h"
#include "proc-ops.h"
#include "serve.h"
#include "spawn.h"
#include "sup.h"
#include "vfs.h"

#define LINE_MAX_BYTES (16u << 20)     /* one request (a put carries a file) */
#define OUT_MAX_BYTES (64u << 20)      /* a client that stops reading is dropped past this */
#define CAPTURE_MAX (16u << 20)        /* stdout/stderr kept for the result, each */
#define FILE_MAX (64u << 20)           /* put / get */
#define DENIALS_MAX 1000               /* kept in a result; the rest are counted */
#define KILL_GRACE_MS 3000
/* Runs built ahead per sandbox: at most WARM_DEPTH_MAX ready (--warm), and room for
 * as many again that were dropped (a commit or a discard) and are still ending. */
#define WARM_DEPTH_MAX 4
#define WARM_SLOTS (2 * WARM_DEPTH_MAX)
#define WARM_DEPTH_DEFAULT 2

enum src_kind { SRC_LISTEN, SRC_SIGNAL, SRC_CLIENT, SRC_PIDFD, SRC_STDOUT, SRC_STDERR,
		SRC_EVENTS, SRC_STDIN, SRC_GO, SRC_ARGV };

/* What an epoll event is about: embedded in the object that owns the fd. */
struct src {
	enum src_kind kind;
	int fd;
	void *owner;
};

struct buf {
	char *p;
	size_t len, cap;
};

struct client;

/* Bytes for a pipe of the command's: what is written so far. */
struct pending {
	char *data;
	size_t len, off;
};

struct exec {
	struct exec *next_dead;         /* finished: freed after the current batch of events */
	struct sandbox *sb;
	json_t *req_id;
	bool stream;
	pid_t pid;
	struct src pidfd, out, err, ev, in, go, argv;
	bool exited;
	int wstatus;
	struct buf stdout_b, stderr_b, ev_line;
	bool stdout_trunc, stderr_trunc;
	json_t *denials;
	uint64_t denials_dropped;
	struct pending in_p;            /* the command's stdin */
	struct pending go_p;            /* the command, for `moat run --start-fd` (JSON) */
	struct pending argv_p;          /* its argv, for the waiting command (--argv-fd) */
	char report[PATH_MAX];
	uint64_t t0, kill_ms;
	unsigned gen;                   /* sandbox.gen when it was started */
};

struct sandbox {
	struct sandbox *next;
	char id[32];
	struct client *owner;
	char dir[PATH_MAX];             /* state/sb-N: the policy file, reports */
	char workspace[PATH_MAX];
	bool own_workspace;             /* a private one, removed with the sandbox */
	struct cow_mount *cow;          /* "cow": its overlay on the workspace, or NULL */
	char **args;                    /* `moat run` options for every exec */
	size_t n_args;
	struct exec *running;
	struct exec *warm[WARM_SLOTS];  /* built ahead, oldest first; dropped ones end */
	unsigned n_warm;
	json_t *destroy_id;             /* answered once the sandbox is really gone */
	bool queued;                    /* an exec waits for a slot (struct waiting) */
	unsigned gen;                   /* names put into the workspace so far (op_put()) */
	unsigned n_execs;
	bool dying;
};

struct client {
	struct client *next;
	unsigned long serial;           /* names the client in the queue of waiting execs */
	struct src s;
	struct buf in, out;
	size_t out_off;
	bool closing;
};

/* An exec that waits for one of the --max-running slots. */
struct waiting {
	struct waiting *next;
	unsigned long client;
	char sandbox[32];
	json_t *id, *req;
};

struct server {
	int epfd;
	struct src listen, sig;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char state[PATH_MAX];
	int state_lock;
	char self[PATH_MAX];
	struct client *clients;
	struct sandbox *sandboxes;
	struct exec *dead;
	struct waiting *waiting, **waiting_tail; /* execs beyond --max-running, in order */
	unsigned long next_client;
	unsigned next_sandbox, n_sandboxes, n_running;
	unsigned max_sandboxes, max_running;
	unsigned warm;                  /* runs kept built ahead per sandbox (--warm) */
	bool own_mount_ns;              /* made for the first copy-on-write sandbox */
	bool stop;
};

/* snprintf for paths: a path that does not fit is an error, never a shorter path. */
_printf_(3, 4) static int pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < len)
		return 0;
	buf[0] = '\0'; /* a prefix of the path would name another, maybe a parent */
	return -ENAMETOOLONG;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = MAX(b->cap * 2, b->len + n + 1);
		char *q = realloc(b->p, MAX(cap, (size_t)4096));

		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = MAX(cap, (size_t)4096);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	*b = (struct buf){ 0 };
}

static int ep_add(struct server *S, struct src *s, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };

	return epoll_ctl(S->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0 ? -errno : 0;
}

static void src_close(struct server *S, struct src *s)
{
	if (s->fd < 0)
		return;
	epoll_ctl(S->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
}

/* ---- answering a client ---- */

static void client_drop(struct server *S, struct client *c);

/*
 * One read (into rbuf) or write (of wbuf, rbuf NULL) on a non-blocking fd, retried when
 * a signal interrupts it: the bytes moved, -EAGAIN when it would block (epoll says when
 * to try again), or 0 at the end (EOF, the peer gone, an error): the caller closes its
 * side. Chosen by rbuf: a write's buffer is never NULL, and a release build's inlining
 * saw a read of NULL on the write callers' path when chosen by wbuf (-Wnonnull).
 */
static ssize_t nb_io(int fd, void *rbuf, const void *wbuf, size_t len)
{
	for (;;) {
		ssize_t n = rbuf ? read(fd, rbuf, len) : write(fd, wbuf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return -EAGAIN;
		return n < 0 ? 0 : n;
	}
}

static void client_flush(struct server *S, struct client *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = nb_io(c->s.fd, NULL, c->out.p + c->out_off, c->out.len - c->out_off);

		if (n == -EAGAIN)
			break;
		if (n <= 0) {
			c->closing = true;
			return;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out.len)
		c->out_off = c->out.len = 0;
	{
		struct epoll_event ev = { .events = EPOLLIN | (c->out.len ? EPOLLOUT : 0),
					  .data.ptr = &c->s };
		epoll_ctl(S->epfd, EPOLL_CTL_MOD, c->s.fd, &ev);
	}
}

/* Queue one line for c (takes j). A client that reads nothing for OUT_MAX_BYTES is gone. */
static void send_json(struct server *S, struct client *c, json_t *j)
{
	char *s;

	if (!c || c->closing) {
		json_decref(j);
		return;
	}
	s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(j);
	if (!s || c->out.len + strlen(s) + 1 > OUT_MAX_BYTES || buf_add(&c->out, s, strlen(s)) < 0 ||
	    buf_add(&c->out, "\n", 1) < 0) {
		if (s)
			log_warning("serve: a client stopped reading its answers; dropping it");
		c->closing = true;
		free(s);
		return;
	}
	free(s);
	client_flush(S, c);
}

static json_t *with_id(json_t *id, json_t *j)
{
	json_object_set(j, "id", id ? id : json_null());
	return j;
}

static void send_error(struct server *S, struct client *c, json_t *id, const char *code,
		       const char *fmt, ...) _printf_(5, 6);
static void send_error(struct server *S, struct client *c, json_t *id, const char *code,
		       const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	send_json(S, c, with_id(id, json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", code,
					      "message", msg)));
}

/* Bytes as a JSON string when they are UTF-8, else base64 under KEY_b64. */
static void set_bytes(json_t *j, const char *key, const char *p, size_t n)
{
	json_t *s = json_stringn(p, n);
	char k[64];

	if (s) {
		json_object_set_new(j, key, s);
		return;
	}
	{
		size_t blen = sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
		char *b = malloc(blen);

		if (!b)
			return;
		sodium_bin2base64(b, blen, (const unsigned char *)p, n, sodium_base64_VARIANT_ORIGINAL);
		snprintf(k, sizeof(k), "%s_b64", key);
		json_object_set_new(j, k, json_string(b));
		free(b);
	}
}

/* ---- removing a tree the sandbox wrote (it is dead by then) ---- */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void rm_tree(const char *path)
{
	if (path[0] != '/')
		return;
	nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* ---- sandboxes ---- */

static void warm_up(struct server *S, struct sandbox *sb);

static struct sandbox *sandbox_find(struct server *S, struct client *c, const char *id)
{
	for (struct sandbox *sb = S->sandboxes; sb; sb = sb->next)
		if (streq(sb->id, id) && sb->owner == c && !sb->dying)
			return sb;
	return NULL;
}

static void sandbox_free(struct server *S, struct sandbox *sb)
{
	struct sandbox **pp;

	for (pp = &S->sandboxes; *pp && *pp != sb; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = sb->next;
	/* The overlay first: its workspace is removed, or left, as the host's. */
	sb->cow = cow_mount_free(sb->cow);
	if (sb->own_workspace)
		rm_tree(sb->workspace);
	rm_tree(sb->dir);
	if (sb->destroy_id) {
		send_json(S, sb->owner, with_id(sb->destroy_id, json_pack("{s:b}", "ok", 1)));
		json_decref(sb->destroy_id);
	}
	for (size_t i = 0; i < sb->n_args; i++)
		free(sb->args[i]);
	free(sb->args);
	S->n_sandboxes--;
	free(sb);
}

static void exec_kill(struct exec *x, int sig)
{
	if (!x->exited && x->pid > 0)
		kill(x->pid, sig);
	if (!x->kill_ms)
		x->kill_ms = now_ms();
}

/* A warm run still waiting for its command (not ended, not dropped). */
static bool warm_ready(const struct exec *x)
{
	return !x->exited && x->go.fd >= 0;
}

/* Take x out of sb's pool; false if it was not in it. */
static bool warm_remove(struct sandbox *sb, const struct exec *x)
{
	for (unsigned i = 0; i < sb->n_warm; i++)
		if (sb->warm[i] == x) {
			memmove(&sb->warm[i], &sb->warm[i + 1], (sb->n_warm - i - 1) * sizeof(x));
			sb->n_warm--;
			return true;
		}
	return false;
}

/* Drop a warm run: EOF for the command it waits for ends it by itself, and the
 * signal makes sure. It stays in the pool, never used again, until it is reaped. */
static void warm_end(struct server *S, struct exec *x)
{
	src_close(S, &x->go);
	src_close(S, &x->argv);
	exec_kill(x, SIGTERM);
}

/* Drop every warm run. */
static void warm_drop(struct server *S, struct sandbox *sb)
{
	for (unsigned i = 0; i < sb->n_warm; i++)
		warm_end(S, sb->warm[i]);
}

/* destroy: the sandbox goes now, or once its exec has been killed and reaped. */
static void sandbox_destroy(struct server *S, struct sandbox *sb)
{
	sb->dying = true;
	if (sb->running)
		exec_kill(sb->running, SIGTERM);
	warm_drop(S, sb);
	if (!sb->running && !sb->n_warm)
		sandbox_free(S, sb);
}

static int add_arg(struct sandbox *sb, const char *a)
{
	char **v = realloc(sb->args, (sb->n_args + 2) * sizeof(char *));

	if (!v)
		return -ENOMEM;
	sb->args = v;
	if (!(v[sb->n_args] = strdup(a)))
		return -ENOMEM;
	sb->n_args++;
	return 0;
}

static int add_arg2(struct sandbox *sb, const char *a, const char *b)
{
	int r = add_arg(sb, a);

	return r < 0 ? r : add_arg(sb, b);
}

/* A limit as `moat run` takes it: a number, or a string such as "512M". */
static int limit_text(json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v) && json_integer_value(v) > 0)
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v) && json_real_value(v) > 0)
		snprintf(buf, len, "%g", json_real_value(v));
	else if (json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) < 32 &&
		 strspn(json_string_value(v), "0123456789.kKmMgGtTiB") == json_string_length(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else
		return -EINVAL;
	return 0;
}

static int write_policy(const char *path, const char *text, struct moat_error *e)
{
	struct policy p = { 0 };
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t len = strlen(text);
	int r;

	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		moat_error_set(e, EIO, "cannot write the policy: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	/* The run would refuse it with exit 125; say why now, naming the line. */
	r = policy_load_file(&p, path, e);
	if (r >= 0) {
		struct proc_map pm = { 0 };
		struct vfs *v = NULL;
		struct net *n = NULL;

		r = policy_apply(&p, proc_map_init(&pm), &v, &n, e);
		vfs_free(v);
		net_free(n);
	}
	policy_done(&p);
	return r;
}

/*
 * "cow": the workspace becomes an overlay, mounted on its own path in a mount namespace
 * of the server's own (made once, while the server is still one thread), so that every
 * `moat run` child, and put and get, see it; nothing of it reaches the host's mount
 * table, and it goes with the server whatever ends it.
 */
static int cow_start(struct server *S, struct client *c, json_t *id, struct sandbox *sb,
		     json_t *disk)
{
	char dir[PATH_MAX + 8], size[40];
	int r;

	if (geteuid() != 0) {
		send_error(S, c, id, "unsupported", "create: cow needs the server to run as root "
			   "(it mounts an overlay)");
		return -EPERM;
	}
	for (struct sandbox *o = S->sandboxes; o; o = o->next)
		if (o != sb && o->cow && streq(o->workspace, sb->workspace)) {
			send_error(S, c, id, "busy", "create: %s is already the copy-on-write "
				   "workspace of %s", sb->workspace, o->id);
			return -EBUSY;
		}
	if (!S->own_mount_ns) {
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
			send_error(S, c, id, "internal", "create: no mount namespace: %s",
				   strerror(errno));
			return -errno;
		}
		S->own_mount_ns = true;
	}
	snprintf(dir, sizeof(dir), "%s/cow", sb->dir);
	if (disk && limit_text(disk, size, sizeof(size)) < 0) {
		send_error(S, c, id, "bad_request", "create: limits.disk must be positive");
		return -EINVAL;
	}
	r = cow_mount_new(sb->workspace, dir, disk ? size : NULL, &sb->cow);
	if (r < 0)
		send_error(S, c, id, "io", "create: cannot mount an overlay on %s: %s",
			   sb->workspace, strerror(-r));
	return r;
}

/* commit, discard, export: what the copy-on-write sandbox's commands changed. */
static void op_cow(struct server *S, struct client *c, json_t *id, json_t *req, const char *op)
{
	const char *sid = json_string_value(json_object_get(req, "sandbox"));
	const char *path = json_string_value(json_object_get(req, "path"));
	struct sandbox *sb = sid ? sandbox_find(S, c, sid) : NULL;
	struct out_file tar = OUT_FILE_INIT, sums = OUT_FILE_INIT;
	struct moat_error e = { 0 };
	char spath[PATH_MAX + 8];
	json_t *j;

	if (!sb)
		return send_error(S, c, id, "not_found", "no sandbox '%s' on this connection",
				  sid ? sid : "(none given)");
	if (!sb->cow)
		return send_error(S, c, id, "bad_request", "%s: the sandbox was not created with "
				  "\"cow\": true", op);
	if (sb->running || sb->queued)
		return send_error(S, c, id, "busy", "%s: a command of the sandbox is running", op);
	if (streq(op, "export")) {
		if (!path || path[0] != '/')
			return send_error(S, c, id, "bad_request", "export: path is the absolute "
					  "path of the tar to write");
		snprintf(spath, sizeof(spath), "%s.sha256", path);
		if (out_open(&tar, path, &e) < 0 || out_create(&tar, &e) < 0 ||
		    out_open(&sums, spath, &e) < 0) {
			out_discard(&tar);
			out_close(&tar);
			out_close(&sums);
			return send_error(S, c, id, "io", "export: %s", moat_error_str(&e));
		}
	}
	/* A commit or a discard mounts a new overlay: a run built ahead holds the one it
	 * saw (in its mount namespace, and as its working directory), so it goes, and the
	 * pool is built again on the new one. An export changes nothing of it. */
	if (!streq(op, "export"))
		warm_drop(S, sb);
	j = cow_mount_finish(sb->cow, streq(op, "commit"), streq(op, "discard"),
			     tar.fd >= 0 ? &tar : NULL, &sums, &e);
	if (!streq(op, "export"))
		warm_up(S, sb);
	if (j && tar.fd >= 0) {
		json_object_set_new(j, "tar", json_string(path));
		json_object_set_new(j, "sha256", json_string(spath));
	}
	out_close(&tar);
	out_close(&sums);
	if (!j)
		return send_error(S, c, id, "io", "%s: %s", op, moat_error_str(&e));
	json_object_set_new(j, "ok", json_true());
	send_json(S, c, with_id(id, j));
}

static void op_create(struct server *S, struct client *c, json_t *id, json_t *req)
{
	static const char *const limit_opts[][2] = {
		{ "timeout", "--timeout" }, { "memory", "--memory" }, { "pids", "--pids" },
		{ "cpu", "--cpu" }, { "nofile", "--nofile" }, { "fsize", "--fsize" },
		{ "disk", "--disk" },
	};
	json_t *v, *limits = json_object_get(req, "limits"), *env = json_object_get(req, "env");
	json_t *nets = json_object_get(req, "allow_net");
	const char *ws = json_string_value(json_object_get(req, "workspace"));
	const char *profile = json_string_value(json_object_get(req, "profile"));
	const char *mode = json_string_value(json_object_get(req, "mode"));
	const char *policy = json_string_value(json_object_get(req, "policy"));
	struct sandbox *sb;
	struct moat_error pe = { 0 };
	char path[PATH_MAX + 32];
	struct stat st;

	if (S->n_sandboxes >= S->max_sandboxes)
		return send_error(S, c, id, "limit", "this server holds %u sandboxes, its maximum "
				  "(--max-sandboxes)", S->max_sandboxes);
	if ((json_object_get(req, "workspace") && !ws) || (json_object_get(req, "policy") && !policy) ||
	    (limits && !json_is_object(limits)) || (env && !json_is_object(env)) ||
	    (nets && !json_is_array(nets)) ||
	    (json_object_get(req, "cow") && !json_is_boolean(json_object_get(req, "cow"))))
		return send_error(S, c, id, "bad_request", "create: workspace and policy are strings, "
				  "limits and env objects, allow_net an array, cow a boolean");
	if (profile && !streq(profile, "default") && !streq(profile, "none"))
		return send_error(S, c, id, "bad_request", "create: profile is \"default\" or \"none\"");
	if (mode && !streq(mode, "auto") && !streq(mode, "namespaced") && !streq(mode, "unnamespaced"))
		return send_error(S, c, id, "bad_request", "create: mode is auto, namespaced or unnamespaced");
	if (ws && (ws[0] != '/' || stat(ws, &st) < 0 || !S_ISDIR(st.st_mode)))
		return send_error(S, c, id, "bad_request", "create: workspace must be an absolute path "
				  "of an existing directory");
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return send_error(S, c, id, "internal", "out of memory");
	snprintf(sb->id, sizeof(sb->id), "sb-%u", ++S->next_sandbox);
	sb->owner = c;
	sb->next = S->sandboxes;
	S->sandboxes = sb;
	S->n_sandboxes++;
	if (pathf(sb->dir, sizeof(sb->dir), "%s/%s", S->state, sb->id) < 0 || mkdir(sb->dir, 0700) < 0) {
		send_error(S, c, id, "internal", "cannot create %s: %s", sb->dir, strerror(errno));
		return sandbox_free(S, sb);
	}
	if (ws) {
		snprintf(sb->workspace, sizeof(sb->workspace), "%s", ws);
	} else {
		if (pathf(sb->workspace, sizeof(sb->workspace), "%s/%s-ws", S->state, sb->id) < 0 ||
		    mkdir(sb->workspace, 0755) < 0) {
			send_error(S, c, id, "internal", "cannot create a workspace: %s", strerror(errno));
			return sandbox_free(S, sb);
		}
		sb->own_workspace = true;
	}
	if (json_is_true(json_object_get(req, "cow")) &&
	    cow_start(S, c, id, sb, json_object_get(limits, "disk")) < 0)
		return sandbox_free(S, sb);
	if (add_arg(sb, "-q") < 0 || (profile && add_arg2(sb, "--profile", profile) < 0) ||
	    (mode && add_arg2(sb, "--mode", mode) < 0))
		goto oom;
	if (policy) {
		snprintf(path, sizeof(path), "%s/policy.moat", sb->dir);
		if (write_policy(path, policy, &pe) < 0) {
			send_error(S, c, id, "bad_policy", "%s", moat_error_str(&pe));
			return sandbox_free(S, sb);
		}
		if (add_arg2(sb, "--policy", path) < 0)
			goto oom;
	}
	for (size_t i = 0; i < ELEMENTSOF(limit_opts); i++) {
		char text[40];

		if (!(v = json_object_get(limits, limit_opts[i][0])))
			continue;
		if (limit_text(v, text, sizeof(text)) < 0) {
			send_error(S, c, id, "bad_request", "create: limits.%s must be positive",
				   limit_opts[i][0]);
			return sandbox_free(S, sb);
		}
		if (add_arg2(sb, limit_opts[i][1], text) < 0)
			goto oom;
	}
	{
		const char *k;

		json_object_foreach(env, k, v) {
			if (!json_is_string(v) || !k[0] || strchr(k, '=')) {
				send_error(S, c, id, "bad_request", "create: env holds NAME: \"value\" "
					   "strings ('%s' does not)", k);
				return sandbox_free(S, sb);
			}
			if (add_arg(sb, "--setenv") < 0 || add_arg2(sb, k, json_string_value(v)) < 0)
				goto oom;
		}
	}
	{
		size_t i;

		json_array_foreach(nets, i, v) {
			if (!json_is_string(v)) {
				send_error(S, c, id, "bad_request", "create: allow_net holds strings");
				return sandbox_free(S, sb);
			}
			if (add_arg2(sb, "--allow-net", json_string_value(v)) < 0)
				goto oom;
		}
	}
	send_json(S, c, with_id(id, json_pack("{s:b, s:s, s:s, s:b}", "ok", 1, "sandbox", sb->id,
					      "workspace", sb->workspace, "cow", sb->cow != NULL)));
	warm_up(S, sb);
	return;
oom:
	send_error(S, c, id, "internal", "out of memory");
	sandbox_free(S, sb);
}

/* ---- exec ---- */

static void exec_free(struct server *S, struct exec *x)
{
	src_close(S, &x->pidfd);
	src_close(S, &x->out);
	src_close(S, &x->err);
	src_close(S, &x->ev);
	src_close(S, &x->in);
	src_close(S, &x->go);
	src_close(S, &x->argv);
	buf_free(&x->stdout_b);
	buf_free(&x->stderr_b);
	buf_free(&x->ev_line);
	json_decref(x->denials);
	json_decref(x->req_id);
	free(x->in_p.data);
	free(x->go_p.data);
	free(x->argv_p.data);
	free(x);
}

_noreturn_ static void exec_child(struct server *S, struct sandbox *sb, char **argv,
				  const int fds[6], pid_t parent)
{
	sigset_t none;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(MOAT_EXIT_FAILURE);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	/* 0-2 the command's stdio, 3 its events, 4 where the command itself will come (for
	 * the run), 5 its argv (for the waiting command) */
	for (int i = 0; i < 6; i++)
		if (dup2(fds[i], i) < 0)
			_exit(MOAT_EXIT_FAILURE);
	syscall(SYS_close_range, 6, ~0U, 0);
	if (chdir(sb->workspace) < 0) {
		dprintf(2, "moat serve: cannot enter the workspace %s: %m\n", sb->workspace);
		_exit(MOAT_EXIT_FAILURE);
	}
	execv(S->self, argv);
	dprintf(2, "moat serve: cannot run %s: %m\n", S->self);
	_exit(MOAT_EXIT_FAILURE);
}

static int make_pipe(int p[2], bool parent_reads)
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	/* Our end never blocks the loop. */
	fcntl(p[parent_reads ? 0 : 1], F_SETFL, O_NONBLOCK);
	return 0;
}

/*
 * Start `moat run --start-fd 4 --argv-fd 5` for sb: it builds the sandbox, and its
 * command waits for its argv on fd 5, which the run passes on to it, while the run
 * learns the command on fd 4. Every exec goes this way; the pool only does it ahead of
 * time, so a warm exec and a cold one differ in when the set-up ran, never in what it did.
 */
static struct exec *exec_spawn(struct server *S, struct sandbox *sb)
{
	int p[6][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 }, { -1, -1 } };
	int child_fds[6];
	size_t k = 0;
	char **argv = NULL;
	struct exec *x = calloc(1, sizeof(*x));
	pid_t parent = getpid();

	if (!x || !(x->denials = json_array()))
		goto fail;
	x->pidfd.fd = x->out.fd = x->err.fd = x->ev.fd = x->in.fd = x->go.fd = x->argv.fd = -1;
	x->sb = sb;
	x->gen = sb->gen;
	if (pathf(x->report, sizeof(x->report), "%s/exec-%u.json", sb->dir, ++sb->n_execs) < 0)
		goto fail;
	argv = calloc(sb->n_args + 16, sizeof(char *));
	if (!argv)
		goto fail;
	argv[k++] = "moat";
	argv[k++] = "run";
	for (size_t i = 0; i < sb->n_args; i++)
		argv[k++] = sb->args[i];
	argv[k++] = "--stdin";
	argv[k++] = "--events";
	argv[k++] = "fd:3";
	argv[k++] = "--report";
	argv[k++] = x->report;
	argv[k++] = "--start-fd";
	argv[k++] = "4";
	argv[k++] = "--argv-fd";
	argv[k++] = "5";
	argv[k] = NULL;
	if (make_pipe(p[0], false) < 0 || make_pipe(p[1], true) < 0 || make_pipe(p[2], true) < 0 ||
	    make_pipe(p[3], true) < 0 || make_pipe(p[4], false) < 0 || make_pipe(p[5], false) < 0)
		goto fail;
	for (int i = 0; i < 6; i++)
		child_fds[i] = p[i][i == 0 || i >= 4 ? 0 : 1];
	x->pid = fork();
	if (x->pid < 0)
		goto fail;
	if (x->pid == 0)
		exec_child(S, sb, argv, child_fds, parent);
	free(argv);
	for (int i = 0; i < 6; i++)
		close(child_fds[i]);
	x->in = (struct src){ SRC_STDIN, p[0][1], x };
	x->out = (struct src){ SRC_STDOUT, p[1][0], x };
	x->err = (struct src){ SRC_STDERR, p[2][0], x };
	x->ev = (struct src){ SRC_EVENTS, p[3][0], x };
	x->go = (struct src){ SRC_GO, p[4][1], x };
	x->argv = (struct src){ SRC_ARGV, p[5][1], x };
	x->pidfd = (struct src){ SRC_PIDFD, (int)syscall(SYS_pidfd_open, x->pid, 0), x };
	ep_add(S, &x->out, EPOLLIN);
	ep_add(S, &x->err, EPOLLIN);
	ep_add(S, &x->ev, EPOLLIN);
	if (x->pidfd.fd >= 0)
		ep_add(S, &x->pidfd, EPOLLIN);
	x->t0 = now_ms();
	return x;
fail:
	log_warning("serve: cannot start a sandbox: %s", strerror(errno ? errno : ENOMEM));
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 2; j++)
			if (p[i][j] >= 0)
				close(p[i][j]);
	free(argv);
	if (x)
		exec_free(S, x);
	return NULL;
}

/*
 * The pool: --warm runs built ahead for the next execs (none with --no-warm). More than
 * one, so that the run an exec takes had the time of several calls to get ready: one
 * started after the previous exec may still be building when the next request comes.
 * A copy-on-write sandbox has them too; a commit or a discard, which mount a new
 * overlay, drops them first (op_cow()).
 */
static void warm_up(struct server *S, struct sandbox *sb)
{
	unsigned ready = 0;

	for (unsigned i = 0; i < sb->n_warm; i++)
		ready += warm_ready(sb->warm[i]);
	while (!sb->dying && ready < S->warm && sb->n_warm < WARM_SLOTS) {
		struct exec *x = exec_spawn(S, sb);

		if (!x)
			break;
		sb->warm[sb->n_warm++] = x;
		ready++;
	}
}

static struct pending *pending_of(struct src *s)
{
	struct exec *x = s->owner;

	return s->kind == SRC_STDIN ? &x->in_p : s->kind == SRC_GO ? &x->go_p : &x->argv_p;
}

/* Write what is pending into a pipe of the command (stdin, the command, its argv) as far
 * as it goes without blocking; all written, or the reader gone: EOF. True when closed. */
static bool push_pending(struct server *S, struct src *s)
{
	struct pending *p = pending_of(s);
	ssize_t n = nb_io(s->fd, NULL, p->data + p->off, p->len - p->off);

	if (n > 0)
		p->off += (size_t)n;
	if (n == 0 || p->off == p->len) {
		src_close(S, s);
		return true;
	}
	return false;
}

/* Bytes to write into a pipe of the command (stdin, the command, its argv): at once as
 * far as the pipe takes them (a warm sandbox waits for its command: no turn of the loop
 * in between), the rest from the loop. */
static void pending_write(struct server *S, struct src *s, char *data, size_t len)
{
	*pending_of(s) = (struct pending){ .data = data, .len = len };
	if (!len)
		src_close(S, s); /* nothing to write: EOF at once */
	else if (!push_pending(S, s))
		ep_add(S, s, EPOLLOUT);
}

static void op_exec(struct server *S, struct client *c, json_t *id, json_t *req, bool dequeued)
{
	const char *sid = json_string_value(json_object_get(req, "sandbox"));
	json_t *jargv = json_object_get(req, "argv"), *jin = json_object_get(req, "stdin");
	json_t *jt = json_object_get(req, "timeout"), *v, *go;
	struct sandbox *sb = sid ? sandbox_find(S, c, sid) : NULL;
	char tbuf[40], *go_text, *in_copy = NULL, *packed = NULL;
	_cleanup_free_ char **av = NULL;
	size_t n, i, packed_len = 0;
	struct exec *x;
	int r;

	if (!sb)
		return send_error(S, c, id, "not_found", "no sandbox '%s' on this connection",
				  sid ? sid : "(none given)");
	if (sb->running || (sb->queued && !dequeued))
		return send_error(S, c, id, "busy", "sandbox %s is running a command already", sb->id);
	sb->queued = false;
	if (!json_is_array(jargv) || !(n = json_array_size(jargv)))
		return send_error(S, c, id, "bad_request", "exec: argv is a non-empty array of strings");
	json_array_foreach(jargv, i, v)
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return send_error(S, c, id, "bad_request", "exec: argv[%zu] is not a string "
					  "without NUL bytes", i);
	if (jin && !json_is_string(jin))
		return send_error(S, c, id, "bad_request", "exec: stdin is a string");
	if (jt && limit_text(jt, tbuf, sizeof(tbuf)) < 0)
		return send_error(S, c, id, "bad_request", "exec: timeout is a positive number of seconds");
	if (!(av = calloc(n + 1, sizeof(*av))))
		return send_error(S, c, id, "internal", "out of memory");
	json_array_foreach(jargv, i, v)
		av[i] = (char *)json_string_value(v);
	/* Packed now, for the waiting command (--argv-fd): too long is the client's error. */
	r = spawn_pack_argv(av, &packed, &packed_len);
	if (r == -E2BIG)
		return send_error(S, c, id, "bad_request", "exec: argv takes more than %d bytes",
				  SPAWN_ARGV_MAX);
	if (r < 0)
		return send_error(S, c, id, "internal", "out of memory");
	if (S->n_running >= S->max_running && !dequeued) {
		struct waiting *w = calloc(1, sizeof(*w));

		free(packed); /* made again when it is its turn */
		if (!w)
			return send_error(S, c, id, "internal", "out of memory");
		w->client = c->serial;
		snprintf(w->sandbox, sizeof(w->sandbox), "%s", sb->id);
		w->id = json_incref(id);
		w->req = json_incref(req);
		*S->waiting_tail = w;
		S->waiting_tail = &w->next;
		sb->queued = true; /* busy from now on, as if it ran */
		return;
	}

	go = json_pack("{s:O}", "argv", jargv);
	if (go && jt)
		json_object_set_new(go, "timeout", json_real(atof(tbuf)));
	go_text = go ? json_dumps(go, JSON_COMPACT) : NULL;
	json_decref(go);
	if (go_text) {
		/* a line: the waiting run starts at its newline, before our close */
		char *line = realloc(go_text, strlen(go_text) + 2);

		if (!line)
			free(go_text);
		else
			strcat(line, "\n");
		go_text = line;
	}
	if (go_text && jin && !(in_copy = malloc(json_string_length(jin) + 1))) {
		free(go_text);
		free(packed);
		go_text = NULL;
	}
	if (!go_text) {
		free(packed);
		return send_error(S, c, id, "internal", "out of memory");
	}
	if (jin)
		memcpy(in_copy, json_string_value(jin), json_string_length(jin));

	/* The oldest warm one still waiting; else a cold start, the same way. One built
	 * before a put added a name goes: it may not cover it. */
	x = NULL;
	for (i = 0; i < sb->n_warm; i++)
		if (sb->warm[i]->gen != sb->gen && warm_ready(sb->warm[i]))
			warm_end(S, sb->warm[i]);
	for (i = 0; i < sb->n_warm && !x; i++)
		if (warm_ready(sb->warm[i]))
			x = sb->warm[i];
	if (x)
		warm_remove(sb, x);
	else
		x = exec_spawn(S, sb);
	if (!x) {
		free(go_text);
		free(packed);
		free(in_copy);
		return send_error(S, c, id, "internal", "cannot start the command: %s",
				  strerror(errno ? errno : ENOMEM));
	}
	/* never NULL: exec_finish() tells a run taken for an exec by it, and an exec may
	 * come without an id */
	x->req_id = json_incref(id ? id : json_null());
	x->stream = json_is_true(json_object_get(req, "stream"));
	x->t0 = now_ms();
	/* The command's argv first: it starts without a hop through the run, and ahead of
	 * the run's wake-up. The run's line follows in this same turn; a run whose command
	 * ended before the line came waits for it (sup.c, collect_start_line()). */
	pending_write(S, &x->argv, packed, packed_len);
	pending_write(S, &x->go, go_text, strlen(go_text));
	pending_write(S, &x->in, in_copy, jin ? json_string_length(jin) : 0);
	sb->running = x;
	S->n_running++;
	if (x->stream)
		send_json(S, c, with_id(id, json_pack("{s:s, s:i}", "event", "started", "pid", (int)x->pid)));
}

/* The result: the report (changes, resources), the captured output, the denials. */
static void exec_finish(struct server *S, struct exec *x)
{
	struct sandbox *sb = x->sb;
	struct client *c = sb->owner;

	if (!x->req_id) {
		/* A warm one that ended before it was used (destroyed, or its set-up
		 * failed): nobody waits for it. The next exec starts cold and says why. */
		warm_remove(sb, x);
		unlink(x->report);
		x->sb = NULL;
		x->next_dead = S->dead;
		S->dead = x;
		if (sb->dying && !sb->running && !sb->n_warm)
			sandbox_free(S, sb);
		return;
	}
	json_t *res = json_object(), *rep = json_load_file(x->report, 0, NULL);
	int status = WIFEXITED(x->wstatus) ? WEXITSTATUS(x->wstatus) : 128 + WTERMSIG(x->wstatus);

	json_object_set_new(res, "exit_status", json_integer(status));
	if (rep) {
		static const char *const keep[] = { "reason", "signal", "setup_error", "wall_ms",
						    "cpu_ms", "peak_memory", "mode", "changes",
						    "limits", "run_id", "policy_sha256",
						    "workspace_git" };

		for (size_t i = 0; i < ELEMENTSOF(keep); i++)
			if (json_object_get(rep, keep[i]))
				json_object_set(res, keep[i], json_object_get(rep, keep[i]));
		json_object_set(res, "denial_count",
				json_object_get(json_object_get(rep, "denials"), "total"));
	} else {
		json_object_set_new(res, "reason", json_string(status == MOAT_EXIT_FAILURE ?
							       "setup-failed" : "unknown"));
	}
	set_bytes(res, "stdout", x->stdout_b.p ? x->stdout_b.p : "", x->stdout_b.len);
	set_bytes(res, "stderr", x->stderr_b.p ? x->stderr_b.p : "", x->stderr_b.len);
	if (x->stdout_trunc)
		json_object_set_new(res, "stdout_truncated", json_true());
	if (x->stderr_trunc)
		json_object_set_new(res, "stderr_truncated", json_true());
	json_object_set(res, "denials", x->denials);
	if (x->denials_dropped)
		json_object_set_new(res, "denials_dropped", json_integer((json_int_t)x->denials_dropped));
	json_object_set_new(res, "server_ms", json_integer((json_int_t)(now_ms() - x->t0)));
	json_decref(rep);
	unlink(x->report);
	if (!sb->dying)
		send_json(S, c, with_id(x->req_id, json_pack("{s:b, s:o}", "ok", 1, "result", res)));
	else
		json_decref(res);
	sb->running = NULL;
	S->n_running--;
	/* Other events of this batch may still name x's sources: free it after them. */
	x->sb = NULL;
	x->next_dead = S->dead;
	S->dead = x;
	if (sb->dying && !sb->n_warm)
		sandbox_free(S, sb);
	else
		warm_up(S, sb);
}

/* Start what waits, while slots are free; entries whose client or sandbox went are dropped. */
static void start_waiting(struct server *S)
{
	while (S->waiting && S->n_running < S->max_running) {
		struct waiting *w = S->waiting;
		struct client *c = NULL;
		struct sandbox *sb = NULL;

		S->waiting = w->next;
		if (!S->waiting)
			S->waiting_tail = &S->waiting;
		for (c = S->clients; c && c->serial != w->client; c = c->next)
			;
		if (c && !c->closing)
			sb = sandbox_find(S, c, w->sandbox);
		if (sb && sb->queued)
			op_exec(S, c, w->id, w->req, true);
		else if (c && !c->closing) /* the sandbox was destroyed while the exec waited */
			send_error(S, c, w->id, "destroyed", "the sandbox was destroyed before the "
				   "command could start");
		json_decref(w->id);
		json_decref(w->req);
		free(w);
	}
}

static void free_dead(struct server *S)
{
	while (S->dead) {
		struct exec *x = S->dead;

		S->dead = x->next_dead;
		exec_free(S, x);
	}
}

static void exec_maybe_done(struct server *S, struct exec *x)
{
	if (x->exited && x->out.fd < 0 && x->err.fd < 0 && x->ev.fd < 0)
		exec_finish(S, x);
}

static void on_event_line(struct server *S, struct exec *x, const char *line)
{
	json_t *j = json_loads(line, 0, NULL);
	const char *kind = json_string_value(json_object_get(j, "event"));

	if (!kind) {
		json_decref(j);
		return;
	}
	if (streq(kind, "denial")) {
		if (json_array_size(x->denials) < DENIALS_MAX)
			json_array_append(x->denials, j);
		else
			x->denials_dropped++;
	} else if (streq(kind, "dropped")) {
		x->denials_dropped += (uint64_t)json_integer_value(json_object_get(j, "count"));
	}
	if (x->stream && !x->sb->dying)
		send_json(S, x->sb->owner, with_id(x->req_id, json_copy(j)));
	json_decref(j);
}

static void on_exec_fd(struct server *S, struct src *s)
{
	struct exec *x = s->owner;
	char buf[65536];
	ssize_t n;

	if (s->fd < 0 || !x->sb)
		return; /* closed earlier in this batch of events, or finished */
	if (s->kind == SRC_STDIN || s->kind == SRC_GO || s->kind == SRC_ARGV) {
		push_pending(S, s);
		return;
	}
	if (s->kind == SRC_PIDFD) {
		if (waitpid(x->pid, &x->wstatus, WNOHANG) == x->pid) {
			x->exited = true;
			src_close(S, s);
			src_close(S, &x->in);
			src_close(S, &x->go);
			src_close(S, &x->argv);
			exec_maybe_done(S, x);
		}
		return;
	}
	n = nb_io(s->fd, buf, NULL, sizeof(buf));
	if (n == -EAGAIN)
		return;
	if (n <= 0) {
		src_close(S, s);
		exec_maybe_done(S, x);
		return;
	}
	if (s->kind == SRC_EVENTS) {
		char *nl;

		buf_add(&x->ev_line, buf, (size_t)n);
		while (x->ev_line.p && (nl = memchr(x->ev_line.p, '\n', x->ev_line.len))) {
			size_t ll = (size_t)(nl - x->ev_line.p) + 1;

			*nl = '\0';
			on_event_line(S, x, x->ev_line.p);
			memmove(x->ev_line.p, x->ev_line.p + ll, x->ev_line.len - ll + 1);
			x->ev_line.len -= ll;
		}
		return;
	}
	{
		struct buf *b = s->kind == SRC_STDOUT ? &x->stdout_b : &x->stderr_b;
		bool *trunc = s->kind == SRC_STDOUT ? &x->stdout_trunc : &x->stderr_trunc;
		size_t keep = b->len < CAPTURE_MAX ? MIN((size_t)n, CAPTURE_MAX - b->len) : 0;

		if (keep < (size_t)n)
			*trunc = true;
		if (keep)
			buf_add(b, buf, keep);
		if (x->stream && !x->sb->dying) {
			json_t *j = json_pack("{s:s}", "event", s->kind == SRC_STDOUT ? "stdout" : "stderr");

			set_bytes(j, "data", buf, (size_t)n);
			send_json(S, x->sb->owner, with_id(x->req_id, j));
		}
	}
}

/* ---- files in a workspace ---- */

/* Open rel beneath the workspace without following any link: the sandbox may have made
 * every name in it a symlink to somewhere else. */
static int open_beneath(struct sandbox *sb, const char *rel, int flags, mode_t mode)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW), .mode = mode,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
	_cleanup_close_ int ws = open(sb->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd;

	if (ws < 0)
		return -errno;
	if (!(flags & O_CREAT))
		how.mode = 0;
	fd = (int)syscall(SYS_openat2, ws, rel, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

static bool rel_ok(const char *rel)
{
	return rel && rel[0] && rel[0] != '/' && strlen(rel) < PATH_MAX;
}

static void op_put(struct server *S, struct client *c, json_t *id, json_t *req)
{
	const char *sid = json_string_value(json_object_get(req, "sandbox"));
	const char *rel = json_string_value(json_object_get(req, "path"));
	json_t *jd = json_object_get(req, "data"), *jb = json_object_get(req, "data_b64");
	json_t *jm = json_object_get(req, "mode");
	struct sandbox *sb = sid ? sandbox_find(S, c, sid) : NULL;
	_cleanup_free_ unsigned char *bin = NULL;
	const char *data;
	size_t len;
	_cleanup_close_ int fd = -1;
	struct stat st;
	mode_t mode = jm ? (mode_t)json_integer_value(jm) : 0644;
	bool created;

	if (!sb)
		return send_error(S, c, id, "not_found", "no sandbox '%s' on this connection",
				  sid ? sid : "(none given)");
	if (!rel_ok(rel))
		return send_error(S, c, id, "bad_request", "put: path is relative to the workspace");
	if ((jm && (!json_is_integer(jm) || json_integer_value(jm) < 0 ||
		    json_integer_value(jm) > 07777)) || (!jd == !jb) ||
	    (jd && !json_is_string(jd)) || (jb && !json_is_string(jb)))
		return send_error(S, c, id, "bad_request", "put: give data (text) or data_b64, and "
				  "mode as an integer");
	if (jb) {
		size_t cap = json_string_length(jb);

		bin = malloc(cap + 1);
		if (!bin || sodium_base642bin(bin, cap + 1, json_string_value(jb), cap, NULL, &len,
					      NULL, sodium_base64_VARIANT_ORIGINAL) < 0)
			return send_error(S, c, id, "bad_request", "put: data_b64 is not base64");
		data = (const char *)bin;
	} else {
		data = json_string_value(jd);
		len = json_string_length(jd);
	}
	if (len > FILE_MAX)
		return send_error(S, c, id, "limit", "put: at most %u bytes", FILE_MAX);
	fd = open_beneath(sb, rel, O_WRONLY | O_CREAT | O_EXCL, mode & 07777);
	created = fd >= 0;
	if (fd == -EEXIST)
		fd = open_beneath(sb, rel, O_WRONLY, 0);
	if (fd < 0)
		return send_error(S, c, id, "io", "put %s: %s", rel, strerror(-fd));
	/* Never truncate a file with other names: a hard link the sandbox made to something
	 * outside the workspace would carry the write there. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1)
		return send_error(S, c, id, "io", "put %s: not a regular file with one name", rel);
	if (ftruncate(fd, 0) < 0)
		return send_error(S, c, id, "io", "put %s: %s", rel, strerror(errno));
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, data + off, len - off);

		if (n <= 0)
			return send_error(S, c, id, "io", "put %s: %s", rel, strerror(errno));
		off += (size_t)n;
	}
	/* A warm run covered the hidden paths that existed when it was built: a new name
	 * may be one the policy hides (a .env), which its native opens would read. The
	 * runs built before it serve no exec (op_exec()); a burst of puts costs nothing. */
	if (created)
		sb->gen++;
	send_json(S, c, with_id(id, json_pack("{s:b, s:I}", "ok", 1, "size", (json_int_t)len)));
}

static void op_get(struct server *S, struct client *c, json_t *id, json_t *req)
{
	const char *sid = json_string_value(json_object_get(req, "sandbox"));
	const char *rel = json_string_value(json_object_get(req, "path"));
	struct sandbox *sb = sid ? sandbox_find(S, c, sid) : NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *data = NULL;
	struct stat st;
	size_t off = 0;
	json_t *j;

	if (!sb)
		return send_error(S, c, id, "not_found", "no sandbox '%s' on this connection",
				  sid ? sid : "(none given)");
	if (!rel_ok(rel))
		return send_error(S, c, id, "bad_request", "get: path is relative to the workspace");
	/* O_NONBLOCK: a FIFO planted in the workspace must not stop the server. */
	fd = open_beneath(sb, rel, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return send_error(S, c, id, "io", "get %s: %s", rel, strerror(-fd));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return send_error(S, c, id, "io", "get %s: not a regular file", rel);
	if ((uint64_t)st.st_size > FILE_MAX)
		return send_error(S, c, id, "limit", "get %s: larger than %u bytes", rel, FILE_MAX);
	data = malloc((size_t)st.st_size + 1);
	if (!data)
		return send_error(S, c, id, "internal", "out of memory");
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, data + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	j = json_pack("{s:b}", "ok", 1);
	set_bytes(j, "data", data, off);
	send_json(S, c, with_id(id, j));
}

/* ---- requests ---- */

static void on_request(struct server *S, struct client *c, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	json_t *id = json_object_get(req, "id");
	const char *op = json_string_value(json_object_get(req, "op"));

	if (!req || !json_is_object(req)) {
		send_error(S, c, NULL, "bad_request", "not a JSON object: %s",
			   req ? "another JSON value" : jerr.text);
		json_decref(req);
		return;
	}
	if (!op)
		send_error(S, c, id, "bad_request", "a request needs \"op\"");
	else if (streq(op, "ping"))
		send_json(S, c, with_id(id, json_pack("{s:b, s:s}", "ok", 1, "version", MOAT_VERSION)));
	else if (streq(op, "create"))
		op_create(S, c, id, req);
	else if (streq(op, "exec"))
		op_exec(S, c, id, req, false);
	else if (streq(op, "put"))
		op_put(S, c, id, req);
	else if (streq(op, "get"))
		op_get(S, c, id, req);
	else if (streq(op, "destroy")) {
		const char *sid = json_string_value(json_object_get(req, "sandbox"));
		struct sandbox *sb = sid ? sandbox_find(S, c, sid) : NULL;

		if (!sb)
			send_error(S, c, id, "not_found", "no sandbox '%s' on this connection",
				   sid ? sid : "(none given)");
		else {
			if (sb->running) /* its exec ends with an error, not silently */
				send_error(S, c, sb->running->req_id, "destroyed",
					   "the sandbox was destroyed while the command ran");
			/* The answer comes when its processes and files are gone. */
			sb->destroy_id = json_incref(id ? id : json_null());
			sandbox_destroy(S, sb);
		}
	} else if (streq(op, "commit") || streq(op, "discard") || streq(op, "export"))
		op_cow(S, c, id, req, op);
	else
		send_error(S, c, id, "bad_request", "unknown op '%s'", op);
	json_decref(req);
}

static void on_client(struct server *S, struct client *c, uint32_t events)
{
	char buf[65536];
	char *nl;

	if (events & EPOLLOUT)
		client_flush(S, c);
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	for (;;) {
		ssize_t n = nb_io(c->s.fd, buf, NULL, sizeof(buf));

		if (n == -EAGAIN)
			break;
		if (n <= 0) {
			c->closing = true;
			break;
		}
		if (buf_add(&c->in, buf, (size_t)n) < 0) {
			c->closing = true;
			break;
		}
		while ((nl = memchr(c->in.p, '\n', c->in.len))) {
			size_t ll = (size_t)(nl - c->in.p);

			on_request(S, c, c->in.p, ll);
			memmove(c->in.p, nl + 1, c->in.len - ll - 1);
			c->in.len -= ll + 1;
		}
		if (c->in.len > LINE_MAX_BYTES) {
			send_error(S, c, NULL, "limit", "a request line is longer than %u bytes",
				   LINE_MAX_BYTES);
			c->closing = true;
			break;
		}
	}
}

static void client_drop(struct server *S, struct client *c)
{
	struct client **pp;

	for (struct sandbox *sb = S->sandboxes, *next; sb; sb = next) {
		next = sb->next;
		if (sb->owner == c) {
			sb->owner = NULL;
			if (!sb->dying)
				sandbox_destroy(S, sb);
		}
	}
	for (pp = &S->clients; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
	src_close(S, &c->s);
	buf_free(&c->in);
	buf_free(&c->out);
	free(c);
}

static void on_accept(struct server *S)
{
	for (;;) {
		int fd = accept4(S->listen.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct client *c;

		if (fd < 0)
			return;
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			return;
		}
		c->s = (struct src){ SRC_CLIENT, fd, c };
		c->serial = ++S->next_client;
		c->next = S->clients;
		S->clients = c;
		ep_add(S, &c->s, EPOLLIN);
	}
}

/* ---- start and stop ---- */

/* State directories of servers that died without cleaning up: unlocked ones. */
static void sweep_stale(const char *parent, uid_t uid)
{
	_cleanup_(closedirp_) DIR *d = opendir(parent);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[PATH_MAX], lock[PATH_MAX + 16];
		struct stat st;
		int fd;

		if (strncmp(de->d_name, "moat-serve.", 11) != 0)
			continue;
		if (pathf(p, sizeof(p), "%s/%s", parent, de->d_name) < 0 || lstat(p, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid)
			continue;
		snprintf(lock, sizeof(lock), "%s/lock", p);
		fd = open(lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			rm_tree(p);
		close(fd);
	}
}

static int serve_setup(struct server *S, const char *sock_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *tmp = getenv("TMPDIR");
	char parent[PATH_MAX], lock[PATH_MAX + 16];
	struct stat st;
	sigset_t mask;
	ssize_t n;

	if (strlen(sock_path) >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "serve: the socket path is too long");
	snprintf(S->sock_path, sizeof(S->sock_path), "%s", sock_path);
	n = readlink("/proc/self/exe", S->self, sizeof(S->self) - 1);
	if (n <= 0)
		return log_error_errno(-errno, "serve: cannot find moat's own binary: %m");
	S->self[n] = '\0';

	snprintf(parent, sizeof(parent), "%s", tmp && tmp[0] == '/' ? tmp : "/tmp");
	sweep_stale(parent, geteuid());
	if (pathf(S->state, sizeof(S->state), "%s/moat-serve.XXXXXX", parent) < 0 || !mkdtemp(S->state))
		return log_error_errno(-errno, "serve: cannot create a state directory: %m");
	snprintf(lock, sizeof(lock), "%s/lock", S->state);
	S->state_lock = open(lock, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (S->state_lock < 0 || flock(S->state_lock, LOCK_EX | LOCK_NB) < 0)
		return log_error_errno(-errno, "serve: cannot lock %s: %m", lock);

	/* A socket left by a server that died is replaced; anything else is not ours. */
	if (lstat(sock_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return log_error_errno(-EEXIST, "serve: %s exists and is not a socket", sock_path);
		unlink(sock_path);
	}
	S->listen = (struct src){ SRC_LISTEN, socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
						     SOCK_CLOEXEC, 0), S };
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	{
		mode_t old = umask(0177); /* the socket is the server's owner's only */
		int r = S->listen.fd < 0 ? -1 : bind(S->listen.fd, (struct sockaddr *)&sa, sizeof(sa));

		umask(old);
		if (r < 0 || listen(S->listen.fd, 64) < 0)
			return log_error_errno(-errno, "serve: cannot listen on %s: %m", sock_path);
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	S->sig = (struct src){ SRC_SIGNAL, signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK), S };
	S->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (S->epfd < 0 || S->sig.fd < 0 || ep_add(S, &S->listen, EPOLLIN) < 0 ||
	    ep_add(S, &S->sig, EPOLLIN) < 0)
		return log_error_errno(-errno, "serve: %m");
	return 0;
}

/* sb's execs not yet reaped: its running one (or NULL) first, then its pool. A warm run
 * that was dropped stays in the pool until it is reaped (warm_end()). Returns their count. */
static unsigned sandbox_execs(const struct sandbox *sb, struct exec *xs[1 + WARM_SLOTS])
{
	xs[0] = sb->running;
	memcpy(xs + 1, sb->warm, sb->n_warm * sizeof(xs[0]));
	return 1 + sb->n_warm;
}

static bool is_exec_pid(const struct server *S, pid_t pid)
{
	for (const struct sandbox *sb = S->sandboxes; sb; sb = sb->next) {
		struct exec *xs[1 + WARM_SLOTS];
		unsigned nx = sandbox_execs(sb, xs);

		for (unsigned i = 0; i < nx; i++)
			if (xs[i] && xs[i]->pid == pid)
				return true;
	}
	return false;
}

/* As the init of a pid namespace (a container's entry point) we inherit its orphans,
 * among them each `moat run`'s lastclose helper once it has made its last close: reaped
 * here, or they would stay zombies for as long as we serve. Only children that are none
 * of our execs (their statuses are theirs to read): the first waitable one is peeked at,
 * and one of ours ends the round (its own event reaps it, and the next SIGCHLD goes on). */
static void reap_orphans(const struct server *S)
{
	siginfo_t si;

	if (getpid() != 1)
		return;
	for (;;) {
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0 ||
		    is_exec_pid(S, si.si_pid))
			return;
		(void)waitpid(si.si_pid, NULL, WNOHANG);
	}
}

/* Without a pidfd (or alongside it), SIGCHLD says some exec may have ended. */
static void reap_all(struct server *S)
{
	for (struct sandbox *sb = S->sandboxes, *next; sb; sb = next) {
		struct exec *xs[1 + WARM_SLOTS];
		unsigned nx = sandbox_execs(sb, xs);

		next = sb->next;
		for (unsigned i = 0; i < nx; i++) {
			struct exec *x = xs[i];

			if (x && !x->exited && waitpid(x->pid, &x->wstatus, WNOHANG) == x->pid) {
				x->exited = true;
				src_close(S, &x->pidfd);
				src_close(S, &x->in);
				src_close(S, &x->go);
				src_close(S, &x->argv);
				exec_maybe_done(S, x); /* may free sb: next was read before */
				break;
			}
		}
	}
}

/* Execs killed with SIGTERM that are still there after the grace period get SIGKILL. */
static void kill_overdue(struct server *S)
{
	uint64_t now = now_ms();

	for (struct sandbox *sb = S->sandboxes; sb; sb = sb->next) {
		struct exec *xs[1 + WARM_SLOTS];
		unsigned nx = sandbox_execs(sb, xs);

		for (unsigned i = 0; i < nx; i++)
			if (xs[i] && !xs[i]->exited && xs[i]->kill_ms &&
			    now - xs[i]->kill_ms > KILL_GRACE_MS)
				kill(xs[i]->pid, SIGKILL);
	}
}

static void serve_shutdown(struct server *S)
{
	uint64_t t0 = now_ms();

	while (S->clients)
		client_drop(S, S->clients);
	/* Wait for the runs to end (each kills its own tree), at most a few seconds. */
	while (S->sandboxes && now_ms() - t0 < KILL_GRACE_MS + 2000) {
		struct epoll_event evs[16];
		int n = epoll_wait(S->epfd, evs, 16, 200);

		for (int i = 0; i < n; i++) {
			struct src *s = evs[i].data.ptr;

			if (s->kind >= SRC_PIDFD)
				on_exec_fd(S, s);
		}
		reap_all(S);
		free_dead(S);
		kill_overdue(S);
	}
	unlink(S->sock_path);
	rm_tree(S->state);
}

int serve_cli(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "max-sandboxes", required_argument, NULL, 'm' },
		{ "max-running", required_argument, NULL, 'r' },
		{ "no-warm", no_argument, NULL, 'w' },
		{ "warm", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *usage =
		"usage: moat serve --socket PATH [--max-sandboxes N] [--max-running N] [--warm N]\n"
		"                  [--no-warm]\n"
		"Serve sandboxes over JSON lines on a unix socket (docs/serve.md).\n";
	struct server S = { .max_sandboxes = 64, .max_running = 16, .state_lock = -1 };

	S.waiting_tail = &S.waiting;
	S.warm = WARM_DEPTH_DEFAULT;
	const char *sock = NULL;
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		long v;

		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'm':
		case 'r':
			v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > 4096) {
				fprintf(stderr, "moat serve: --%s takes a number from 1 to 4096\n%s",
					opt == 'm' ? "max-sandboxes" : "max-running", usage);
				return MOAT_EXIT_FAILURE;
			}
			if (opt == 'm')
				S.max_sandboxes = (unsigned)v;
			else
				S.max_running = (unsigned)v;
			break;
		case 'w':
			S.warm = 0;
			break;
		case 'W':
			v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > WARM_DEPTH_MAX) {
				fprintf(stderr, "moat serve: --warm takes a number from 0 to %d\n%s",
					WARM_DEPTH_MAX, usage);
				return MOAT_EXIT_FAILURE;
			}
			S.warm = (unsigned)v;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "moat serve: unknown or incomplete option '%s'\n%s",
				argv[optind - 1], usage);
			return MOAT_EXIT_FAILURE;
		}
	}
	if (!sock || optind < argc) {
		fprintf(stderr, "moat serve: --socket PATH is required%s\n%s",
			optind < argc ? " (and takes no other arguments)" : "", usage);
		return MOAT_EXIT_FAILURE;
	}
	if (serve_setup(&S, sock) < 0)
		return MOAT_EXIT_FAILURE;
	log_notice("serving on %s", sock);

	while (!S.stop) {
		struct epoll_event evs[64];
		int n = epoll_wait(S.epfd, evs, 64, 1000);

		for (int i = 0; i < n; i++) {
			struct src *s = evs[i].data.ptr;

			switch (s->kind) {
			case SRC_LISTEN:
				on_accept(&S);
				break;
			case SRC_SIGNAL: {
				struct signalfd_siginfo si;

				while (read(S.sig.fd, &si, sizeof(si)) == sizeof(si))
					if (si.ssi_signo != SIGCHLD)
						S.stop = true;
				reap_all(&S);
				reap_orphans(&S);
				break;
			}
			case SRC_CLIENT:
				on_client(&S, s->owner, evs[i].events);
				break;
			case SRC_PIDFD:
			case SRC_STDOUT:
			case SRC_STDERR:
			case SRC_EVENTS:
			case SRC_STDIN:
			case SRC_GO:
			case SRC_ARGV:
			default:
				on_exec_fd(&S, s);
				break;
			}
		}
		free_dead(&S);
		/* Clients are dropped here, never under one of their own events. */
		for (struct client *c = S.clients, *next; c; c = next) {
			next = c->next;
			if (c->closing)
				client_drop(&S, c);
		}
		start_waiting(&S);
		kill_overdue(&S);
	}
	log_notice("stopping: ending every run");
	serve_shutdown(&S);
	return 0;
}
