/* SPDX-License-Identifier: MIT */
/*
 * Directives and the default profile: parsing one directive (bind, ro, hide, tmpfs,
 * globs...) into a rule of the table, and the profile every run starts from, with its
 * list of secrets. Side effects: stats the host paths a directive names; nothing more.
 */
#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "macros.h"
#include "vfs-internal.h"

/* "~" and "~/x" -> home; relative -> against the supervisor's cwd; then normalized. */
static int expand_path(const struct vfs *v, const char *in, char *buf, size_t len)
{
	char tmp[PATH_MAX];

	if (in[0] == '~' && (in[1] == '\0' || in[1] == '/')) {
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s%s", v->home, in + 1) >= sizeof(tmp))
			return -ENAMETOOLONG;
		in = tmp;
	}
	return vfs__normalize(v->cwd, in, buf, len);
}

/*
 * Split "SRC[:DST]" at the first unescaped colon; "\:" is a literal colon, "\\" a
 * backslash. dst is "" when absent.
 */
static int split_colon(const char *arg, char *src, char *dst, size_t len)
{
	char *o = src;
	size_t n = 0;

	dst[0] = '\0';
	for (const char *p = arg; *p; p++) {
		if (*p == '\\' && (p[1] == ':' || p[1] == '\\')) {
			p++;
		} else if (*p == ':' && o == src) {
			o[n] = '\0';
			o = dst;
			n = 0;
			continue;
		}
		if (n + 1 >= len)
			return -ENAMETOOLONG;
		o[n++] = *p;
	}
	o[n] = '\0';
	return 0;
}

static struct vfs__rule *rule_new(struct vfs *v, enum vfs__rule_kind kind, const char *word,
                                  const char *arg, const char *origin)
{
	struct vfs__rule *r;

	if (v->n_rules == v->cap_rules) {
		size_t cap = v->cap_rules ? v->cap_rules * 2 : 32;
		struct vfs__rule *n = realloc(v->rules, cap * sizeof(*n));

		if (!n)
			return NULL;
		v->rules = n;
		v->cap_rules = cap;
	}
	r = &v->rules[v->n_rules];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->seq = v->n_rules;
	r->root_fd = -1;
	r->host_fd = -1;
	r->word = strdup(word);
	r->arg = strdup(arg);
	if (asprintf(&r->desc, "%s %s%s%s%s", word, arg, origin ? " (" : "", origin ? origin : "",
	             origin ? ")" : "") < 0)
		r->desc = NULL;
	if (!r->word || !r->arg || !r->desc) {
		free(r->word);
		free(r->arg);
		free(r->desc);
		return NULL;
	}
	v->n_rules++;
	return r;
}

static int holds_block_cb(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)path;
	(void)type;
	(void)f;
	return S_ISBLK(st->st_mode) ? 1 : 0;
}

/*
 * Whether the host path hsrc (lstat st) brings the host's block devices into the view:
 * /dev as a whole, a block device, or a directory below /dev holding one. A sandbox
 * started by root is the host's uid 0, which opens a disk, swap or loop device with no
 * capability at all (reading every file, hidden ones too, from the raw device; writing
 * under the filesystem), and a read-only mapping does not stop that: the kernel ignores
 * a read-only mount for device nodes. /dev as a whole holds other host devices that
 * answer uid 0 alone (a watchdog that reboots the host when the sandbox opens it, input
 * devices, consoles, hwrng), so it is refused too, whatever it holds today.
 */
static bool brings_host_devices(const char *hsrc, const struct stat *st)
{
	if (!vfs__path_under(hsrc, "/dev"))
		return false;
	if (streq(hsrc, "/dev") || S_ISBLK(st->st_mode))
		return true;
	return S_ISDIR(st->st_mode) && nftw(hsrc, holds_block_cb, 16, FTW_PHYS) == 1;
}

static int add_bind(struct vfs *v, const char *word, const char *arg, const char *origin,
                    bool writable, struct moat_error *e)
{
	char src[PATH_MAX], dst[PATH_MAX], hsrc[PATH_MAX], vdst[PATH_MAX], parent[PATH_MAX];
	char *slash;
	struct stat st;
	struct vfs__rule *r;

	while (*arg == ' ' || *arg == '\t')
		arg++;
	if (!*arg)
		return moat_error_set(e, EINVAL, "%s: missing SRC", word);
	if (split_colon(arg, src, dst, sizeof(src)) < 0 || expand_path(v, src, hsrc, sizeof(hsrc)) < 0)
		return moat_error_set(e, EINVAL, "%s %s: path too long", word, arg);
	if (!src[0])
		return moat_error_set(e, EINVAL, "%s %s: empty SRC", word, arg);
	/* Canonicalize the parent only: a source that is itself a symlink (/bin -> usr/bin
	 * on merged-/usr systems) stays a symlink in the view, as on the host. */
	if (!streq(hsrc, "/")) {
		char real[PATH_MAX];

		snprintf(parent, sizeof(parent), "%s", hsrc);
		slash = strrchr(parent, '/');
		if (slash == parent)
			parent[1] = '\0';
		else
			*slash = '\0';
		if (!realpath(parent, real))
			return moat_error_set(e, EINVAL, "%s %s: %s: %s", word, arg, parent,
			                 strerror(errno));
		if ((size_t)snprintf(parent, sizeof(parent), "%s%s%s", real,
		                     streq(real, "/") ? "" : "/", strrchr(hsrc, '/') + 1) >=
		    sizeof(parent))
			return moat_error_set(e, EINVAL, "%s %s: path too long", word, arg);
		snprintf(hsrc, sizeof(hsrc), "%s", parent);
	}
	if (lstat(hsrc, &st) < 0)
		return moat_error_set(e, EINVAL, "%s %s: %s: %s", word, arg, hsrc, strerror(errno));
	if (vfs__path_under(hsrc, "/proc") && !streq(hsrc, "/proc"))
		return moat_error_set(e, EINVAL, "%s %s: only /proc as a whole can be mapped", word, arg);
	/* sysfs's files are the host kernel's settings (power/state suspends the machine),
	 * guarded by their mode alone, and a sandbox started by root is the host's uid 0.
	 * (Below a read-write mapping of a parent, /sys stays read-only: sys_readonly().) */
	if (writable && vfs__path_under(hsrc, "/sys"))
		return moat_error_set(e, EINVAL,
		                      "%s %s: /sys can be mapped read-only only (ro-bind): its "
		                      "files are the host kernel's settings",
		                      word, arg);
	if (brings_host_devices(hsrc, &st))
		return moat_error_set(e, EINVAL,
		                      "%s %s: /dev as a whole and the host's block devices cannot "
		                      "be mapped (uid 0 opens them with no capability, read-only "
		                      "or not): map the devices needed by name (--bind /dev/dri)",
		                      word, arg);
	if (dst[0]) {
		if (expand_path(v, dst, vdst, sizeof(vdst)) < 0)
			return moat_error_set(e, EINVAL, "%s %s: path too long", word, arg);
	} else {
		snprintf(vdst, sizeof(vdst), "%s", hsrc);
	}
	r = rule_new(v, VFS__BIND, word, arg, origin);
	if (!r)
		return moat_error_errno(e, ENOMEM);
	r->writable = writable;
	r->is_proc = streq(hsrc, "/proc");
	r->host = strdup(hsrc);
	r->virt = strdup(vdst);
	if (!r->host || !r->virt)
		return moat_error_errno(e, ENOMEM);
	/*
	 * A mapping above /proc (ro-bind /) holds the host's procfs, whose magic links the
	 * supervisor would read as itself: /proc/self would be the supervisor, its environ
	 * the host's environment, its mem the supervisor's memory. So /proc inside it is
	 * mapped as /proc is on its own, with the sandbox's pids and the caller's
	 * /proc/self; a later mapping of the same path still replaces it.
	 */
	if (S_ISDIR(st.st_mode) && vfs__path_under("/proc", hsrc) && !streq(hsrc, "/proc")) {
		char pv[PATH_MAX], pdesc[PATH_MAX + 64];
		const char *rel = "/proc" + (streq(hsrc, "/") ? 0 : strlen(hsrc));

		if ((size_t)snprintf(pv, sizeof(pv), "%s%s", streq(vdst, "/") ? "" : vdst, rel) >=
		    sizeof(pv))
			return moat_error_set(e, EINVAL, "%s %s: path too long", word, arg);
		snprintf(pdesc, sizeof(pdesc), "/proc:%s", pv);
		r = rule_new(v, VFS__BIND, word, pdesc, origin);
		if (!r)
			return moat_error_errno(e, ENOMEM);
		r->writable = writable;
		r->is_proc = true;
		r->host = strdup("/proc");
		r->virt = strdup(pv);
		if (!r->host || !r->virt)
			return moat_error_errno(e, ENOMEM);
	}
	return 0;
}

static int add_glob(struct vfs *v, enum vfs__rule_kind kind, const char *word, const char *arg,
                    const char *origin, struct moat_error *e)
{
	char pat[PATH_MAX], tmp[PATH_MAX];
	struct vfs__rule *r;
	const char *a = arg;
	size_t n;

	while (*a == ' ' || *a == '\t')
		a++;
	if (!*a)
		return moat_error_set(e, EINVAL, "%s: missing GLOB", word);
	if (strlen(a) >= sizeof(tmp) - 4)
		return moat_error_set(e, EINVAL, "%s %s: pattern too long", word, a);
	/* Without a leading "/", "~" or "./", a pattern matches at any depth, as in
	 * .gitignore: "hide .env" hides a .env in every directory. */
	if (a[0] == '/' || (a[0] == '~' && (a[1] == '/' || !a[1])) || strncmp(a, "./", 2) == 0 ||
	    strncmp(a, "../", 3) == 0)
		snprintf(tmp, sizeof(tmp), "%s", a);
	else if (strncmp(a, "**", 2) == 0)
		snprintf(tmp, sizeof(tmp), "/%s", a);
	else
		snprintf(tmp, sizeof(tmp), "/**/%s", a);
	if (expand_path(v, tmp, pat, sizeof(pat)) < 0)
		return moat_error_set(e, EINVAL, "%s %s: pattern too long", word, a);
	n = strlen(pat);
	r = rule_new(v, kind, word, a, origin);
	if (!r)
		return moat_error_errno(e, ENOMEM);
	r->virt = strndup(pat, n);
	return r->virt ? 0 : moat_error_errno(e, ENOMEM);
}

/* Inline content of a file directive: "\n", "\t", "\\" escapes. */
static char *unescape(const char *s, size_t *ret_len)
{
	char *o = malloc(strlen(s) + 1);
	size_t n = 0;

	if (!o)
		return NULL;
	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			o[n++] = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
		} else {
			o[n++] = *s;
		}
	}
	o[n] = '\0';
	*ret_len = n;
	return o;
}

_public_ int vfs_add_directive(struct vfs *v, const char *word, const char *arg,
                               const char *origin, struct moat_error *e)
{
	char path[PATH_MAX];
	struct vfs__rule *r;

	if (!arg)
		arg = "";
	if (v->finalized)
		return moat_error_set(e, EINVAL, "%s: the table is already frozen", word);
	if (streq(word, "ro-bind"))
		return add_bind(v, word, arg, origin, false, e);
	if (streq(word, "bind"))
		return add_bind(v, word, arg, origin, true, e);
	if (streq(word, "system")) {
		size_t first = v->n_rules;
		int k = add_bind(v, word, arg, origin, false, e);

		/* its /proc companion (a system mapping of "/") is no system tree */
		for (size_t i = first; k >= 0 && i < v->n_rules; i++)
			v->rules[i].system = !v->rules[i].is_proc;
		return k;
	}
	if (streq(word, "hide"))
		return add_glob(v, VFS__HIDE, word, arg, origin, e);
	if (streq(word, "deny"))
		return add_glob(v, VFS__DENY, word, arg, origin, e);
	while (*arg == ' ' || *arg == '\t')
		arg++;
	if (streq(word, "tmpfs")) {
		char dst[PATH_MAX];
		const char *sp = strpbrk(arg, " \t");
		size_t dl = sp ? (size_t)(sp - arg) : strlen(arg);
		const char *size = sp ? sp + strspn(sp, " \t") : "";

		if (!dl)
			return moat_error_set(e, EINVAL, "tmpfs: missing DST");
		if (dl >= sizeof(dst))
			return moat_error_set(e, EINVAL, "tmpfs: path too long");
		memcpy(dst, arg, dl);
		dst[dl] = '\0';
		if (size[0] && strspn(size, "0123456789kKmMgG%") != strlen(size))
			return moat_error_set(e, EINVAL, "tmpfs %s: bad SIZE '%s'", dst, size);
		if (expand_path(v, dst, path, sizeof(path)) < 0)
			return moat_error_set(e, EINVAL, "tmpfs: path too long");
		r = rule_new(v, VFS__TMPFS, word, arg, origin);
		if (!r)
			return moat_error_errno(e, ENOMEM);
		r->writable = true;
		r->virt = strdup(path);
		r->given = strdup(path);
		r->size = size[0] ? strdup(size) : NULL;
		return r->virt && r->given ? 0 : moat_error_errno(e, ENOMEM);
	}
	if (streq(word, "file")) {
		char dst[PATH_MAX];
		const char *sp = strpbrk(arg, " \t");
		const char *content = sp ? sp + strspn(sp, " \t") : NULL;
		size_t dl = sp ? (size_t)(sp - arg) : strlen(arg);

		if (!dl)
			return moat_error_set(e, EINVAL, "file: missing DST");
		if (!content)
			return moat_error_set(e, EINVAL, "file %s: missing CONTENT or @HOSTFILE", arg);
		if (dl >= sizeof(dst))
			return moat_error_set(e, EINVAL, "file: path too long");
		memcpy(dst, arg, dl);
		dst[dl] = '\0';
		if (expand_path(v, dst, path, sizeof(path)) < 0 || streq(path, "/"))
			return moat_error_set(e, EINVAL, "file %s: bad DST", dst);
		if (content[0] == '@') {
			char host[PATH_MAX], real[PATH_MAX];
			struct stat st;

			if (expand_path(v, content + 1, host, sizeof(host)) < 0 ||
			    !realpath(host, real))
				return moat_error_set(e, EINVAL, "file %s: %s: %s", dst, content + 1,
				                 strerror(errno));
			if (stat(real, &st) < 0 || !S_ISREG(st.st_mode))
				return moat_error_set(e, EINVAL, "file %s: %s is not a regular file", dst,
				                 content + 1);
			r = rule_new(v, VFS__FILE, word, arg, origin);
			if (!r)
				return moat_error_errno(e, ENOMEM);
			r->host = strdup(real);
			if (!r->host)
				return moat_error_errno(e, ENOMEM);
		} else {
			size_t n;

			r = rule_new(v, VFS__FILE, word, arg, origin);
			if (!r)
				return moat_error_errno(e, ENOMEM);
			r->content = unescape(content, &n);
			if (!r->content)
				return moat_error_errno(e, ENOMEM);
			r->size = NULL;
		}
		r->virt = strdup(path);
		return r->virt ? 0 : moat_error_errno(e, ENOMEM);
	}
	if (streq(word, "chdir")) {
		char *d;

		if (!arg[0])
			return moat_error_set(e, EINVAL, "chdir: missing DIR");
		if (expand_path(v, arg, path, sizeof(path)) < 0)
			return moat_error_set(e, EINVAL, "chdir: path too long");
		d = strdup(path);
		if (!d)
			return moat_error_errno(e, ENOMEM);
		free(v->chdir);
		v->chdir = d;
		return 0;
	}
	return -ENOENT;
}

static int add(struct vfs *v, const char *word, const char *arg)
{
	return vfs_add_directive(v, word, arg, "default profile", NULL);
}

/* Map a system path only when it exists on this host (lib32, libx32... vary). */
static int add_if_exists(struct vfs *v, const char *word, const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return 0;
	return add(v, word, path);
}

/* Hidden by the default profile, and kept hidden by every policy `moat audit suggest`
 * writes: one list for both. */
_public_ const char *const vfs_default_secrets[] = {
	/* named by path: the "**" globs below do not reach into the system trees */
	"/etc/shadow*", "/etc/gshadow*", "/etc/sudoers*", "/etc/ssh/ssh_host_*",
	"/etc/ssl/private",
	/* root-only secrets a root-started sandbox (the host's uid 0) could otherwise read */
	"/etc/wireguard", "/etc/letsencrypt", "/etc/NetworkManager/system-connections",
	"/etc/ipsec.secrets", "/etc/ipsec.d/private", "/etc/krb5.keytab", "/etc/mysql/debian.cnf",
	"/etc/ppp/*-secrets",
	"/root", "~/.ssh", "~/.aws", "~/.config/gcloud", "~/.netrc", "~/.gnupg",
	/* private keys by their usual names; not every *.pem, which would hide the
	 * CA bundles TLS needs (certifi's cacert.pem breaks pip and python -m venv) */
	"**/.env", "**/*key*.pem", "**/*.key", "**/*.p12", "**/*.pfx",
	"**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
	"/proc/kcore", "/proc/kmsg", "/proc/keys", "/proc/sysrq-trigger",
	NULL,
};

/*
 * The default profile. Order matters (later wins, see vfs-internal.h): other users'
 * homes are hidden before the workspace is mapped, so a workspace inside a home is
 * still visible; the secrets are hidden after it, so they stay hidden inside it.
 */
_public_ int vfs_add_default_profile(struct vfs *v, const char *home, const char *cwd)
{
	static const char *const sys_dirs[] = {
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
	};
	static const char *const devs[] = {
		"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
	};
	static const char *const dev_links[] = {
		"/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr",
	};
	char w[PATH_MAX];
	int r;

	if (home && (r = vfs_set_home(v, home)) < 0)
		return r;
	if (!cwd)
		cwd = v->cwd;
	/* read-only system trees: the secrets' "**" globs do not reach into them, which
	 * lets the kernel decide the opens there (docs/threat-model.md, "System trees") */
	for (size_t i = 0; i < ELEMENTSOF(sys_dirs); i++)
		if ((r = add_if_exists(v, "system", sys_dirs[i])) < 0)
			return r;
	if ((r = add(v, "hide", "/root")) < 0 || (r = add(v, "hide", "/home/*")) < 0)
		return r;
	/* the workspace; "\:" keeps a colon in the directory name literal */
	{
		size_t o = 0;

		for (const char *p = cwd; *p && o + 3 < sizeof(w); p++) {
			if (*p == ':' || *p == '\\')
				w[o++] = '\\';
			w[o++] = *p;
		}
		w[o] = '\0';
	}
	/* Run from "/", the workspace would be the whole host, read-write: map none. */
	if (!streq(cwd, "/") && (r = add(v, "bind", w)) < 0)
		return r;
	free(v->profile_cwd);
	v->profile_cwd = strdup(cwd);
	if (!v->profile_cwd)
		return -ENOMEM;
	if ((r = add(v, "tmpfs", "/tmp")) < 0 || (r = add(v, "tmpfs", "/dev/shm")) < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(devs); i++)
		if ((r = add_if_exists(v, "bind", devs[i])) < 0)
			return r;
	for (size_t i = 0; i < ELEMENTSOF(dev_links); i++)
		if ((r = add_if_exists(v, "ro-bind", dev_links[i])) < 0)
			return r;
	if ((r = add(v, "ro-bind", "/proc")) < 0)
		return r;
	for (size_t i = 0; vfs_default_secrets[i]; i++)
		if ((r = add(v, "hide", vfs_default_secrets[i])) < 0)
			return r;
	/*
	 * A private, empty, writable home at the home's own path, so that what programs
	 * keep there (~/.cache, ~/.npm, ~/.gitconfig, pip's and git's config lookups) works
	 * without the real home: given after the hide rules, it rescues the home itself
	 * from "hide /root" and "hide /home/...", while ~/.ssh and the other secrets below
	 * it stay hidden. Not when the workspace is the home or lies above it (the caller
	 * chose to work in it), nor for a home of "/" or one the tmpfs syntax cannot name.
	 */
	if (!streq(v->home, "/") && !strpbrk(v->home, " \t") &&
	    (streq(cwd, "/") || !vfs__path_under(v->home, cwd)) &&
	    (r = add(v, "tmpfs", v->home)) < 0)
		return r;
	return 0;
}

/* Each pattern read as add_glob() reads it: "~/x" against home, "**" from the root. */
_public_ const char *vfs_default_secret_of(const char *home, const char *path)
{
	char pat[PATH_MAX], raw[PATH_MAX], p[PATH_MAX];

	if (vfs__normalize("/", path, p, sizeof(p)) < 0)
		return NULL;
	for (size_t i = 0; vfs_default_secrets[i]; i++) {
		const char *g = vfs_default_secrets[i];
		char q[PATH_MAX];
		int n = g[0] == '~' ? snprintf(raw, sizeof(raw), "%s/%s", home ? home : "/", g + 1)
				    : snprintf(raw, sizeof(raw), "/%s", g);

		if (n < 0 || (size_t)n >= sizeof(raw) || vfs__normalize("/", raw, pat, sizeof(pat)) < 0)
			continue;
		/* a hidden directory hides what is under it */
		memcpy(q, p, sizeof(q));
		for (;;) {
			char *sl;

			if (vfs__glob_match(pat, q))
				return g;
			sl = strrchr(q, '/');
			if (!sl || sl == q)
				break;
			*sl = '\0';
		}
	}
	return NULL;
}
