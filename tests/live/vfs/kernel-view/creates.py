# Creates by name where the sandbox's mounts refuse them or a name is already there
# (tests/live/vfs/kernel-view.sh): one line per call, its errno. filename_create() looks
# the name up before it asks the mount's writability: EEXIST over EROFS, and procfs's
# own lookup (ENOENT) first. Leaves the workspace as it found it.
import os, socket

from calls import t
t("mkdir /usr/kv", lambda: os.mkdir("/usr/kv"))
t("mkdir /usr (exists)", lambda: os.mkdir("/usr"))
t("mkdir /tmp (mount point)", lambda: os.mkdir("/tmp"))
t("mkdir / kv", lambda: os.mkdir("/kv"))
t("mkfifo /etc/kv", lambda: os.mkfifo("/etc/kv"))
t("mkfifo /etc/hostname (exists)", lambda: os.mkfifo("/etc/hostname"))
t("symlink /usr/kv", lambda: os.symlink("x", "/usr/kv"))
t("symlink /usr/bin (exists)", lambda: os.symlink("x", "/usr/bin"))
t("link ws -> /usr", lambda: (open("kv-f", "w").close(), os.link("kv-f", "/usr/kv")))
t("creat /usr/kv", lambda: os.close(os.open("/usr/kv", os.O_CREAT | os.O_WRONLY, 0o644)))
t("creat excl /usr/bin/env", lambda: os.open("/usr/bin/env", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
t("creat /usr/bin/env", lambda: os.open("/usr/bin/env", os.O_CREAT | os.O_WRONLY))
t("open wr /etc/hostname", lambda: os.open("/etc/hostname", os.O_WRONLY))
t("truncate /etc/hostname", lambda: os.truncate("/etc/hostname", 0))
t("chmod /etc/hostname", lambda: os.chmod("/etc/hostname", 0o644))
t("utime /usr/bin/env", lambda: os.utime("/usr/bin/env"))
t("mkdir /proc/kv", lambda: os.mkdir("/proc/kv"))
t("creat /proc/kv", lambda: os.open("/proc/kv", os.O_CREAT | os.O_WRONLY))
t("mkdir /dev/kv", lambda: os.mkdir("/dev/kv"))
t("bind /usr/kv.sock", lambda: socket.socket(socket.AF_UNIX).bind("/usr/kv.sock"))
t("bind /usr/bin/env", lambda: socket.socket(socket.AF_UNIX).bind("/usr/bin/env"))
t("mkdir missing/parent", lambda: os.mkdir("/usr/kv-none/x"))
t("mkdir ws/kv-d", lambda: os.mkdir("kv-d"))
t("rmdir ws/kv-d", lambda: os.rmdir("kv-d"))
for p in ("kv-f",):
    try: os.unlink(p)
    except OSError: pass
