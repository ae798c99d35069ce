/* SPDX-License-Identifier: MIT */
/*
 * moat run --cow: what happens to the copy-on-write workspace's changes when the run
 * ends (--commit, --discard, --export FILE), and `moat cow` for an upper layer kept
 * across runs (--cow-dir, which moat serve uses). The overlay itself and the walk of its
 * upper layer are the vfs's (vfs/cow.c); this file decides, writes the outputs and says
 * what was done, on stderr and in the report.
 *
 * The outputs (the tar and its .sha256 list) are opened before the sandbox exists,
 * through output.c, so that no name the sandbox could plant is ever followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "cow.h"
#include "error.h"
#include "log.h"
#include "macros.h"
#include "output.h"
#include "vfs.h"

int cow_prepare(struct sup_cow *c, struct vfs *v)
{
	struct moat_error e = { 0 };
	char sums[PATH_MAX + 8];

	c->export_out = (struct out_file)OUT_FILE_INIT;
	c->sums_out = (struct out_file)OUT_FILE_INIT;
	if (!c->max_file)
		c->max_file = COW_DEFAULT_MAX_FILE;
	if (c->export_path) {
		if (out_open(&c->export_out, c->export_path, &e) < 0 ||
		    out_create(&c->export_out, &e) < 0)
			return log_error_errno(-EINVAL, "--export: %s", moat_error_str(&e));
		snprintf(sums, sizeof(sums), "%s.sha256", c->export_path);
		c->sums_path = strdup(sums);
		if (!c->sums_path || out_open(&c->sums_out, c->sums_path, &e) < 0)
			return log_error_errno(-EINVAL, "--export: %s", moat_error_str(&e));
	}
	return vfs_set_cow(v, c->dir);
}

static json_t *entry_json(const struct vfs_cow_entry *e)
{
	json_t *j = json_pack("{s:s, s:s, s:i}", "path", e->path, "kind", vfs_cow_kind_name(e->kind),
			      "mode", (int)(e->mode & 07777));

	if (!j)
		return NULL;
	if (e->kind == VFS_COW_WRITE) {
		json_object_set_new(j, "size", json_integer((json_int_t)e->size));
		json_object_set_new(j, "sha256", json_string(e->sha256));
		if (e->hardlink)
			json_object_set_new(j, "hardlink_copied", json_true());
		if (e->setid_dropped)
			json_object_set_new(j, "setid_dropped", json_true());
	}
	if (e->kind == VFS_COW_SYMLINK)
		json_object_set_new(j, "target", json_string(e->target));
	if (e->why)
		json_object_set_new(j, "refused", json_string(e->why));
	if (e->err)
		json_object_set_new(j, "error", json_string(strerror(e->err)));
	return j;
}

/* The set as JSON, and each refused entry said on stderr. */
static json_t *set_json(const struct vfs_cow_set *s)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < s->n; i++) {
		const struct vfs_cow_entry *e = &s->e[i];

		if (e->kind == VFS_COW_REFUSED)
			log_warning("--cow: %s is %s: left out", e->path, e->why);
		else if (e->hardlink)
			log_notice("--cow: %s had other names in the sandbox: copied as a file of "
				   "its own", e->path);
		if (e->setid_dropped)
			log_notice("--cow: %s was set-uid or set-gid in the sandbox: the bits are "
				   "dropped", e->path);
		json_array_append_new(arr, entry_json(e));
	}
	return arr;
}

/* The change set's sha256 list, gathered (it is small) and put in place whole. */
static int commit_sums(struct out_file *of, const struct vfs_cow_set *s)
{
	char tmp[] = "/tmp/moat-sums-XXXXXX";
	_cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	int r;

	if (fd < 0)
		return -errno;
	unlink(tmp);
	if ((r = vfs_cow_write_sums(s, fd)) < 0 || fstat(fd, &st) < 0)
		return r < 0 ? r : -errno;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		return -EIO;
	return out_commit(of, buf, (size_t)st.st_size);
}

/* The tar (a stream created before the sandbox could plant anything) and its list. */
static int export_to(struct out_file *tar, struct out_file *sums, const struct vfs_cow_set *s,
		     int upper)
{
	int skipped;

	if (ftruncate(tar->fd, 0) < 0 || lseek(tar->fd, 0, SEEK_SET) < 0)
		return -errno;
	skipped = vfs_cow_export(s, upper, tar->fd);
	if (skipped < 0)
		return skipped;
	if (skipped)
		log_warning("export: %d entries whose names start with .wh. were left out (the "
			    "format reads such names as deletions)", skipped);
	out_settle_stream(tar);
	return commit_sums(sums, s);
}

json_t *cow_finish(struct sup_cow *c, struct vfs *v)
{
	struct vfs_cow_set s = { 0 };
	const char *host;
	int lower, upper, r;
	json_t *j = json_object();

	if (!j)
		return NULL;
	if (vfs_cow_dirs(v, &lower, &upper, &host) < 0) {
		json_object_set_new(j, "error", json_string("no overlay was mounted"));
		return j;
	}
	json_object_set_new(j, "workspace", json_string(host));
	r = vfs_cow_scan(upper, c->max_file, &s);
	if (r < 0) {
		log_error("--cow: cannot read the changes: %s", strerror(-r));
		json_object_set_new(j, "error", json_string(strerror(-r)));
		return j;
	}
	if (c->export_path) {
		r = export_to(&c->export_out, &c->sums_out, &s, upper);
		c->exported = r >= 0;
		if (r < 0)
			log_error("--export %s: %s", c->export_path, strerror(-r));
		else
			json_object_set_new(j, "export", json_pack("{s:s, s:s}", "tar", c->export_path,
								   "sha256", c->sums_path));
	}
	if (c->commit) {
		int failed;

		/* the host directory changes only with no overlay over it */
		vfs_cow_unmount(v);
		failed = vfs_cow_commit(&s, upper, lower);

		if (failed)
			log_error("--commit: %d of the changes could not be applied to %s (see the "
				  "report)", failed, host);
		json_object_set_new(j, "failed", json_integer(failed));
	}
	json_object_set_new(j, "action", json_string(c->commit ? "commit" : c->discard ? "discard"
								    : c->dir     ? "keep"
										 : "discard"));
	json_object_set_new(j, "bytes", json_integer((json_int_t)s.bytes));
	json_object_set_new(j, "changes", set_json(&s));
	if (c->dir && (c->commit || c->discard))
		vfs_cow_clear(upper);
	vfs_cow_set_done(&s);
	return j;
}

void cow_done(struct sup_cow *c)
{
	/* a run that never got to its end leaves no empty tar behind */
	if (c->export_out.fd >= 0 && !c->exported)
		out_discard(&c->export_out);
	out_close(&c->export_out);
	out_close(&c->sums_out);
	free(c->sums_path);
	c->sums_path = NULL;
}

/* --- moat serve: one overlay per copy-on-write sandbox ------------------------------- */

struct cow_mount {
	char *ws, *upper, *work;
	char *quota;                    /* the tmpfs of the disk quota under both, or NULL */
	int lower_fd, upper_fd;
	bool mounted;
};

static int overlay_on(struct cow_mount *m)
{
	int r = vfs_cow_mount_overlay(m->ws, m->lower_fd, m->upper, m->work);

	m->mounted = r == 0;
	return r;
}

static void overlay_off(struct cow_mount *m)
{
	if (m->mounted)
		umount2(m->ws, MNT_DETACH);
	m->mounted = false;
}

int cow_mount_new(const char *ws, const char *dir, const char *disk, struct cow_mount **ret)
{
	struct cow_mount *m = calloc(1, sizeof(*m));
	struct stat st;
	int r;

	if (!m)
		return -ENOMEM;
	m->lower_fd = m->upper_fd = -1;
	if (asprintf(&m->upper, "%s/upper", dir) < 0 || asprintf(&m->work, "%s/work", dir) < 0 ||
	    !(m->ws = strdup(ws))) {
		cow_mount_free(m);
		return -ENOMEM;
	}
	/* Before the overlay: this fd is, and stays, the host directory itself. */
	m->lower_fd = open(ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (m->lower_fd < 0 || fstat(m->lower_fd, &st) < 0 ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST)) {
		r = -errno;
		cow_mount_free(m);
		return r;
	}
	if (disk) {
		/* the layer's room: what the sandbox writes to its workspace, and no more */
		char opts[64];

		if ((size_t)snprintf(opts, sizeof(opts), "size=%s,mode=0700", disk) >= sizeof(opts) ||
		    mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
			r = errno ? -errno : -EINVAL;
			cow_mount_free(m);
			return r;
		}
		if (!(m->quota = strdup(dir))) {
			umount2(dir, MNT_DETACH);
			cow_mount_free(m);
			return -ENOMEM;
		}
	}
	if (mkdir(m->upper, st.st_mode & 07777) < 0 ||
	    mkdir(m->work, 0700) < 0 || chown(m->upper, st.st_uid, st.st_gid) < 0 ||
	    chmod(m->upper, st.st_mode & 07777) < 0) {
		r = -errno;
		cow_mount_free(m);
		return r;
	}
	m->upper_fd = open(m->upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (m->upper_fd < 0 || (r = overlay_on(m)) < 0) {
		r = m->upper_fd < 0 ? -errno : r;
		cow_mount_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

struct cow_mount *cow_mount_free(struct cow_mount *m)
{
	if (!m)
		return NULL;
	overlay_off(m);
	safe_close(m->lower_fd);
	safe_close(m->upper_fd);
	if (m->quota)
		umount2(m->quota, MNT_DETACH);
	free(m->quota);
	free(m->ws);
	free(m->upper);
	free(m->work);
	free(m);
	return NULL;
}

json_t *cow_mount_finish(struct cow_mount *m, bool commit, bool discard, struct out_file *tar,
			 struct out_file *sums, struct moat_error *e)
{
	struct vfs_cow_set s = { 0 };
	bool failed = false;
	json_t *j;
	int r;

	if (discard) {
		overlay_off(m);
		vfs_cow_clear(m->upper_fd);
		if ((r = overlay_on(m)) < 0) {
			moat_error_set(e, r, "cannot mount the workspace again: %s", strerror(-r));
			return NULL;
		}
		return json_object();
	}
	r = vfs_cow_scan(m->upper_fd, COW_DEFAULT_MAX_FILE, &s);
	if (r < 0) {
		moat_error_set(e, r, "cannot read the changes: %s", strerror(-r));
		return NULL;
	}
	j = json_pack("{s:I, s:o}", "bytes", (json_int_t)s.bytes, "changes", set_json(&s));
	if (tar && (r = export_to(tar, sums, &s, m->upper_fd)) < 0) {
		moat_error_set(e, r, "cannot write the tar: %s", strerror(-r));
		failed = true;
	}
	if (commit) {
		/* The host directory changes only with no overlay over it, and the next
		 * overlay starts from what it then holds. */
		overlay_off(m);
		json_object_set_new(j, "failed", json_integer(vfs_cow_commit(&s, m->upper_fd,
									    m->lower_fd)));
		json_object_set_new(j, "changes", set_json(&s));
		vfs_cow_clear(m->upper_fd);
		if ((r = overlay_on(m)) < 0) {
			moat_error_set(e, r, "cannot mount the workspace again: %s", strerror(-r));
			failed = true;
		}
	}
	vfs_cow_set_done(&s);
	if (failed) {
		json_decref(j);
		return NULL;
	}
	return j;
}
