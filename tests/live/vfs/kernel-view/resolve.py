# openat2's resolve flags over paths that cross the sandbox's mounts or stay in one, by
# symlinks, magic links and "..": one line per (dirfd, path), each flag's result
# (tests/live/vfs/kernel-view.sh). Run in a directory holding a.txt, sub/inner.txt
# and the symlinks abs -> /etc, rel -> sub, lnk -> a.txt, sub/up -> .., sub/abs -> /etc.
import ctypes, errno, os, struct
libc = ctypes.CDLL(None, use_errno=True)
FLAGS = {"NO_XDEV": 0x01, "NO_MAGICLINKS": 0x02, "NO_SYMLINKS": 0x04, "BENEATH": 0x08,
         "IN_ROOT": 0x10, "NO_XDEV|BENEATH": 0x09, "NO_XDEV|IN_ROOT": 0x11}
PATHS = ["sub/inner.txt", "inner.txt", "..", "../a.txt", "../sub/inner.txt", ".", "",
         "abs", "rel/inner.txt", "sub/abs", "/", "/etc/passwd", "/tmp", "/usr/bin/env",
         "/proc/self/status", "/proc/self/fd/0", "/proc/self/cwd/a.txt", "/dev/null",
         "lnk", "sub/up", "/proc/self/root/etc/hostname"]
def openat2(d, p, res):
    how = struct.pack("QQQ", os.O_RDONLY, 0, res)
    fd = libc.syscall(437, d, p.encode(), how, len(how))
    if fd < 0:
        return errno.errorcode[ctypes.get_errno()]
    os.close(fd)
    return "ok"
dirs = {"cwd": os.open(".", os.O_RDONLY | os.O_DIRECTORY),
        "sub": os.open("sub", os.O_RDONLY | os.O_DIRECTORY)}
for dn, d in dirs.items():
    for p in PATHS:
        print("%s %s %s" % (dn, p or '""', " ".join("%s=%s" % (f, openat2(d, p, v)) for f, v in FLAGS.items())))
