# Metadata by name over the spellings a path can take (tests/live/vfs/kernel-view.sh):
# the stat family, statx, access, readlink, xattrs, statfs and chdir, one line per
# call with what it answers (type, mode and size, or the errno). Changes nothing. Left
# out: what differs by design from a root that nsenter brings in with its capabilities
# (the keeper's /proc/1, the pid /proc/self names) and, unnamespaced, the host's own
# mounts at / and /proc (statvfs's flags).
import ctypes, os, stat

from calls import t

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, AT_EACCESS = -100, 0x100, 0x1000, 0x200


def st(s):
    return "%s %o %d" % (stat.filemode(s.st_mode)[0], stat.S_IMODE(s.st_mode),
                         s.st_size if stat.S_ISREG(s.st_mode) or stat.S_ISLNK(s.st_mode) else -1)


def statx(dirfd, path, flags):
    buf = ctypes.create_string_buffer(256)
    if libc.statx(dirfd, path.encode(), flags, 0x7ff, buf) < 0:
        raise OSError(ctypes.get_errno(), "statx")
    mode = int.from_bytes(buf.raw[28:30], "little")
    return "%s %o" % (stat.filemode(mode)[0], stat.S_IMODE(mode))


def faccessat2(path, mode, flags):
    if libc.syscall(439, AT_FDCWD, path.encode(), mode, flags) < 0:
        raise OSError(ctypes.get_errno(), "faccessat2")


home = os.getcwd()
long_name = "n" * 256
long_path = "/".join(["sub"] + [".."] * 1 + ["sub"] * 1400)
paths = ["a.txt", "a.txt/", "a.txt/.", "sub/", "sub/.", "sub/..", "sub/../a.txt", "rel",
         "rel/", "rel/inner.txt", "lnk", "lnk/", "abs", "abs/hostname", "sub/up/a.txt",
         "sub/abs/hostname", "", "nope", "nope/x", "a.txt/x", "/proc/self/cwd/a.txt",
         "//etc//hostname", long_name, long_path, "/", "/..", "/proc/self/root/etc/hostname",
         "/proc", "/dev/null", "/tmp", "/etc/hostname/"]
for p in paths:
    name = p if len(p) < 60 else "<%d chars>" % len(p)
    t("stat " + name, lambda: st(os.stat(p)))
    t("lstat " + name, lambda: st(os.lstat(p)))
    t("statx nofollow " + name, lambda: statx(AT_FDCWD, p, AT_SYMLINK_NOFOLLOW))
    t("access F_OK " + name, lambda: os.access(p, os.F_OK) or None)
    t("readlink " + name, lambda: os.readlink(p).replace(os.getcwd(), "W"))
for p, m in (("/etc/hostname", os.W_OK), ("/etc/hostname", os.R_OK), ("a.txt", os.X_OK),
             ("a.txt", os.W_OK), ("sub", os.X_OK), ("/usr/bin/env", os.X_OK), ("/proc/self/fd", os.W_OK), ("/dev/null", os.W_OK), ("abs", os.W_OK)):
    t("access %s %d" % (p, m), lambda: os.access(p, m))
    t("faccessat2 EACCESS|NOFOLLOW %s %d" % (p, m), lambda: faccessat2(p, m, AT_EACCESS | AT_SYMLINK_NOFOLLOW))
fd = os.open("sub", os.O_RDONLY)
t("statx empty fd", lambda: statx(fd, "", AT_EMPTY_PATH))
t("statx empty no flag", lambda: statx(fd, "", 0))
t("stat /proc/self/fd/N/inner.txt", lambda: st(os.stat("/proc/self/fd/%d/inner.txt" % fd)))
t("readlink /proc/self/fd/N", lambda: os.readlink("/proc/self/fd/%d" % fd).replace(os.getcwd(), "W"))
t("fstatat dirfd inner.txt", lambda: st(os.stat("inner.txt", dir_fd=fd)))
t("fstatat dirfd ../lnk nofollow", lambda: st(os.stat("../lnk", dir_fd=fd, follow_symlinks=False)))
t("fstatat file-fd x", lambda: st(os.stat("x", dir_fd=os.open("a.txt", os.O_RDONLY))))
for p in ("/etc/hostname", "lnk", "sub", "nope"):
    t("listxattr " + p, lambda: sorted(a for a in os.listxattr(p, follow_symlinks=False) if a.startswith("user.")))
    t("getxattr user.none " + p, lambda: os.getxattr(p, "user.none", follow_symlinks=False))
for p in ("a.txt", "nope", "/dev/null", "/tmp", "sub"):
    t("statvfs flags " + p, lambda: os.statvfs(p).f_flag & (os.ST_RDONLY | os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC))
for p in ("a.txt", "nope", "lnk", "rel", "abs", "a.txt/", "sub/up"):
    t("chdir " + p, lambda: (os.chdir(p), os.chdir(home))[1])
