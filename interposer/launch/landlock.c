/* SPDX-License-Identifier: MIT */
/*
 * Landlock: the kernel's copy of the vfs table (layer 1 of docs/architecture.md), in both modes.
 *
 * Landlock guards what the kernel does on the sandbox's behalf: exec and (namespaced)
 * read-only opens, which the supervisor continues after its check, the metadata calls
 * namespaced mode leaves native, and anything a filter bug might let through. Each mapping becomes a
 * path-beneath rule (read and execute for ro, everything for rw); unmapped paths get
 * nothing. Landlock cannot carve a hidden file out of an allowed directory, so hide
 * globs stay the supervisor's job (docs/threat-model.md says so).
 *
 * Scoping (ABI 6) adds what no mount table can: the sandbox cannot signal processes
 * outside it (the supervisor, the keeper, every other process of the same uid in
 * unnamespaced mode) nor connect to abstract unix sockets created outside it.
 * TCP rights (ABI 4) are handled with no rule at all: every connect and bind is
 * performed by the supervisor, outside the domain, so a native one is always a bug.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "landlock.h"
#include "macros.h"
#include "missing-landlock.h"
#include "vfs.h"

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
		 LANDLOCK_ACCESS_FS_READ_DIR)
#define READS (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
	       LANDLOCK_ACCESS_FS_READ_DIR)
#define FILE_ONLY (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
		   LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
		   LANDLOCK_ACCESS_FS_IOCTL_DEV)

static uint64_t fs_handled(int abi)
{
	uint64_t all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1 */

	if (abi >= 2)
		all |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		all |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		all |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return all;
}

/* --- the unnamespaced read set ---------------------------------------------------- */

struct ll_path_rule {
	char *path;
	bool dir;
};

struct strv {
	char **v;
	size_t n, cap;
};

struct ll_readset {
	struct strv readable;  /* sorted: beneath each, Landlock grants the reads */
	struct strv carved;    /* sorted: on the way to a refused path, no reads at themselves */
	struct strv refused;   /* sorted: what the policy hides or denies for reading */
	struct ll_path_rule *rules; /* the carved directories' other entries */
	size_t n_rules;
};

struct ll_mapping {
	char *virt;
	bool writable, own_only, is_proc, skip;
};

struct ll_build {
	struct ll_mapping *m;
	size_t n_m;
	struct strv refused;
	int err;
};

static int ll_strv_add(struct strv *s, const char *p)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	if (!(s->v[s->n] = strdup(p)))
		return -ENOMEM;
	s->n++;
	return 0;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ll_strv_sort(struct strv *s)
{
	size_t k = 0;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_strp);
	for (size_t i = 0; i < s->n; i++) { /* duplicates out */
		if (k && streq(s->v[k - 1], s->v[i]))
			free(s->v[i]);
		else
			s->v[k++] = s->v[i];
	}
	s->n = k;
}

static bool ll_strv_has(const struct strv *s, const char *p)
{
	return s->n && bsearch(&p, s->v, s->n, sizeof(*s->v), cmp_strp);
}

static void ll_strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strv){ 0 };
}

/* An absolute path becomes its parent in place; false once it is "/". */
static bool path_up(char *p)
{
	char *s = strrchr(p, '/');

	if (!s || streq(p, "/"))
		return false;
	if (s == p)
		s[1] = '\0';
	else
		*s = '\0';
	return true;
}

static int collect_mapping(const struct vfs_mount_info *mi, void *ud)
{
	struct ll_build *b = ud;
	struct ll_mapping *m;

	if (mi->kind == VFS_MOUNT_HIDE) {
		int r = ll_strv_add(&b->refused, mi->virt);

		return r < 0 ? r : 0;
	}
	m = realloc(b->m, (b->n_m + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	b->m = m;
	b->m[b->n_m] = (struct ll_mapping){
		.virt = strdup(mi->virt), .writable = mi->writable, .own_only = mi->own_only,
		.is_proc = mi->is_proc, .skip = mi->kind == VFS_MOUNT_SYMLINK,
	};
	if (!b->m[b->n_m].virt)
		return -ENOMEM;
	b->n_m++;
	return 0;
}

static int collect_refused(const char *vpath, bool dir, void *ud)
{
	struct ll_build *b = ud;

	(void)dir;
	return ll_strv_add(&b->refused, vpath);
}

/* The innermost mapping at or above vpath whose rule grants reads, or NULL. */
static const struct ll_mapping *mapping_of(const struct ll_build *b, const char *vpath)
{
	const struct ll_mapping *best = NULL;

	for (size_t i = 0; i < b->n_m; i++)
		if (!b->m[i].skip && !b->m[i].is_proc && vfs_path_under(vpath, b->m[i].virt) &&
		    (!best || strlen(b->m[i].virt) > strlen(best->virt)))
			best = &b->m[i];
	return best;
}

static bool is_mapping_root(const struct ll_build *b, const char *vpath)
{
	for (size_t i = 0; i < b->n_m; i++)
		if (streq(b->m[i].virt, vpath))
			return true;
	return false;
}

static bool in_proc(const struct ll_build *b, const char *vpath)
{
	for (size_t i = 0; i < b->n_m; i++)
		if (b->m[i].is_proc && vfs_path_under(vpath, b->m[i].virt))
			return true;
	return false;
}

/* Every entry of the carved directory dir but the carved and refused ones gets a rule of
 * its own; a symlink gets none (Landlock decides by the path it leads to). */
static int carve_dir(struct ll_readset *rs, const struct ll_build *b, const char *dir)
{
	_cleanup_(closedirp_) DIR *d = NULL;
	struct dirent *de;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return 0; /* gone: nothing below it to grant */
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		char p[PATH_MAX];
		struct ll_path_rule *nr;
		struct stat st;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", streq(dir, "/") ? "" : dir,
				     de->d_name) >= sizeof(p))
			return -E2BIG;
		if (ll_strv_has(&rs->carved, p) || ll_strv_has(&rs->refused, p) || is_mapping_root(b, p))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(st.st_mode))
			continue;
		if (rs->n_rules >= LL_READSET_MAX_RULES)
			return -E2BIG;
		nr = realloc(rs->rules, (rs->n_rules + 1) * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		rs->rules = nr;
		rs->rules[rs->n_rules] = (struct ll_path_rule){ .path = strdup(p),
								.dir = S_ISDIR(st.st_mode) };
		if (!rs->rules[rs->n_rules].path)
			return -ENOMEM;
		rs->n_rules++;
		if (ll_strv_add(&rs->readable, p) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int readset_fill(struct ll_readset *rs, struct ll_build *b, const struct vfs *v,
			unsigned budget)
{
	int r;

	if ((r = vfs_foreach_mount(v, collect_mapping, b)) < 0)
		return r;
	/* a mapping of /dev's parent brings the host's device nodes, which the vfs
	 * refuses by no rule */
	if (!vfs_kernel_view_exact(v))
		return -EXDEV;
	for (size_t i = 0; i < b->n_m; i++) {
		/* the host's /tmp holds what other processes of this uid made there */
		if (b->m[i].own_only)
			return -EXDEV;
		/* procfs shows only the sandbox's pids: refused to a mapping above it
		 * (--ro-bind /) as to its own rule */
		if (b->m[i].is_proc && (r = ll_strv_add(&b->refused, b->m[i].virt)) < 0)
			return r;
	}
	if ((r = vfs_foreach_cover(v, "", budget, NULL, collect_refused, b)) < 0)
		return r;
	/* A refused path in a mapping the reads are granted to: its way from "/" is
	 * carved. (Landlock's path-beneath rules follow the path hierarchy, not the
	 * mappings: a mapping above the innermost one would grant it too.) */
	for (size_t i = 0; i < b->refused.n; i++) {
		const char *p = b->refused.v[i];
		const struct ll_mapping *m = mapping_of(b, p);
		char up[PATH_MAX];

		if (!m)
			continue; /* no rule grants its reads */
		if ((r = ll_strv_add(&rs->refused, p)) < 0)
			return r;
		snprintf(up, sizeof(up), "%s", p);
		while (path_up(up))
			if ((r = ll_strv_add(&rs->carved, up)) < 0)
				return r;
	}
	ll_strv_sort(&rs->refused);
	ll_strv_sort(&rs->carved);
	for (size_t i = 0; i < rs->carved.n; i++) {
		const char *d = rs->carved.v[i];
		const struct ll_mapping *m = mapping_of(b, d);

		if (!m || in_proc(b, d))
			continue; /* unmapped or procfs: only the mappings below it get rules */
		if (m->writable)
			return -EXDEV; /* what the run creates in d could not be executed */
		if ((r = carve_dir(rs, b, d)) < 0)
			return r;
	}
	for (size_t i = 0; i < b->n_m; i++) {
		const struct ll_mapping *m = &b->m[i];

		if (!m->skip && !m->is_proc && !ll_strv_has(&rs->carved, m->virt) &&
		    !ll_strv_has(&rs->refused, m->virt) && (r = ll_strv_add(&rs->readable, m->virt)) < 0)
			return r;
	}
	ll_strv_sort(&rs->readable);
	return 0;
}

int ll_readset_build(const struct vfs *v, unsigned budget, struct ll_readset **ret)
{
	struct ll_build b = { 0 };
	struct ll_readset *rs = calloc(1, sizeof(*rs));
	int r = rs ? readset_fill(rs, &b, v, budget) : -ENOMEM;

	for (size_t i = 0; i < b.n_m; i++)
		free(b.m[i].virt);
	free(b.m);
	ll_strv_free(&b.refused);
	if (r < 0) {
		ll_readset_free(rs);
		return r;
	}
	*ret = rs;
	return 0;
}

bool ll_readset_has(const struct ll_readset *rs, const char *vpath)
{
	char p[PATH_MAX];

	if (!rs || vpath[0] != '/' || strlen(vpath) >= sizeof(p))
		return false;
	strcpy(p, vpath);
	do
		if (ll_strv_has(&rs->readable, p))
			return true;
	while (path_up(p));
	return false;
}

unsigned ll_readset_rules(const struct ll_readset *rs)
{
	return rs ? (unsigned)rs->n_rules : 0;
}

struct ll_readset *ll_readset_free(struct ll_readset *rs)
{
	if (!rs)
		return NULL;
	ll_strv_free(&rs->readable);
	ll_strv_free(&rs->carved);
	ll_strv_free(&rs->refused);
	for (size_t i = 0; i < rs->n_rules; i++)
		free(rs->rules[i].path);
	free(rs->rules);
	free(rs);
	return NULL;
}

/* --- the ruleset -------------------------------------------------------------------- */

struct ll_ctx {
	int ruleset;
	uint64_t handled;
	const struct ll_readset *rs;
	int err;
};

static int add_rule(const struct vfs_mount_info *m, void *ud)
{
	struct ll_ctx *ll = ud;
	struct landlock_path_beneath_attr pb = { 0 };
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (m->kind == VFS_MOUNT_HIDE || m->kind == VFS_MOUNT_SYMLINK)
		return 0;
	fd = open(m->virt, O_PATH | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0; /* a mapping of a path that does not exist grants nothing */
	pb.parent_fd = fd;
	pb.allowed_access = m->writable ? ll->handled : (FS_READ & ll->handled);
	if (ll->rs && (m->is_proc || ll_strv_has(&ll->rs->carved, m->virt) ||
		       ll_strv_has(&ll->rs->refused, m->virt)))
		/* outside the read set: its entries get their own rules (carve_dir()) */
		pb.allowed_access &= ~(uint64_t)READS;
	if (!S_ISDIR(st.st_mode))
		/* Directory rights on a file are refused with EINVAL. */
		pb.allowed_access &= FILE_ONLY;
	if (!pb.allowed_access)
		return 0;
	if (syscall(SYS_landlock_add_rule, ll->ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
		ll->err = negative_errno();
		return ll->err;
	}
	return 0;
}

/* The carved directories' other entries: the reads, for what each is now. */
static int add_carved(struct ll_ctx *ll)
{
	for (size_t i = 0; i < ll->rs->n_rules; i++) {
		struct landlock_path_beneath_attr pb = { 0 };
		_cleanup_close_ int fd = open(ll->rs->rules[i].path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;

		if (fd < 0 || fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))
			continue;
		pb.parent_fd = fd;
		pb.allowed_access = FS_READ & ll->handled;
		if (!S_ISDIR(st.st_mode))
			pb.allowed_access &= FILE_ONLY;
		if (syscall(SYS_landlock_add_rule, ll->ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			return negative_errno();
	}
	return 0;
}

/*
 * A regular file handed in as a standard fd (`moat run ... > out.log`) reopens through
 * its magic link (/dev/stdout) as natively, for what that fd does: the rule names the
 * file alone, as vfs_allow_handed_file() tells the vfs.
 */
static int add_handed(struct ll_ctx *ll)
{
	for (int fd = 0; fd <= 2; fd++) {
		struct landlock_path_beneath_attr pb = { .parent_fd = fd };
		struct stat st;
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if ((fl & O_ACCMODE) != O_WRONLY)
			pb.allowed_access |= LANDLOCK_ACCESS_FS_READ_FILE;
		if ((fl & O_ACCMODE) != O_RDONLY)
			pb.allowed_access |= LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
		pb.allowed_access &= ll->handled;
		if (pb.allowed_access &&
		    syscall(SYS_landlock_add_rule, ll->ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			return negative_errno();
	}
	return 0;
}

int sandbox_landlock(const struct vfs *v, int abi, bool list_all, const struct ll_readset *rs)
{
	struct moat_landlock_ruleset_attr attr = { 0 };
	struct ll_ctx ll = { .ruleset = -1, .rs = rs };
	size_t size;
	int r;

	if (abi <= 0)
		return -EOPNOTSUPP;
	attr.handled_access_fs = ll.handled = fs_handled(abi);
	size = sizeof(uint64_t);
	if (abi >= 4) {
		attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
		size = 2 * sizeof(uint64_t);
	}
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	ll.ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ll.ruleset < 0)
		return negative_errno();
	r = vfs_foreach_mount(v, add_rule, &ll);
	if (r >= 0 && ll.err < 0)
		r = ll.err;
	if (r >= 0 && rs)
		r = add_carved(&ll);
	if (r >= 0)
		r = add_handed(&ll);
	if (r >= 0 && list_all) {
		/* Directories of the skeleton (the unmapped way to a mapping, /deep above
		 * --bind W:/deep/er/ws) open for the supervisor, so a continued open of one
		 * must open for the kernel too. Listing is all this grants: the namespace
		 * holds only the policy's view, hidden directories covered. */
		_cleanup_close_ int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct landlock_path_beneath_attr pb = {
			.parent_fd = fd, .allowed_access = LANDLOCK_ACCESS_FS_READ_DIR & ll.handled,
		};

		if (fd < 0 || syscall(SYS_landlock_add_rule, ll.ruleset, LANDLOCK_RULE_PATH_BENEATH,
				      &pb, 0) < 0)
			r = negative_errno();
	}
	if (r >= 0)
		r = RET_NERRNO(syscall(SYS_landlock_restrict_self, ll.ruleset, 0));
	safe_close(ll.ruleset);
	return r < 0 ? r : 0;
}
