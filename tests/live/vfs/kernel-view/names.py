# Renames, links and removals by name across the sandbox's mounts and of mount points
# (tests/live/vfs/kernel-view.sh): one line per call, its errno, in the order the
# kernel checks (the parents' mounts, names that are no names, the mount's
# writability, then the objects). Leaves the workspace and /tmp as it found them.
import os

from calls import t


open("/tmp/kv-a", "w").close()
os.makedirs("/tmp/kv-d", exist_ok=True)
open("kv-wfile", "w").close()
t("rename /tmp -> workspace", lambda: os.rename("/tmp/kv-a", "kv-moved"))
t("rename workspace -> /tmp", lambda: os.rename("kv-wfile", "/tmp/kv-b"))
t("link /tmp -> workspace", lambda: os.link("/tmp/kv-a", "kv-lnk"))
t("link workspace -> /tmp", lambda: os.link("kv-wfile", "/tmp/kv-l"))
t("rename dir /tmp -> workspace", lambda: os.rename("/tmp/kv-d", "kv-dmoved"))
t("rename workspace -> /usr", lambda: os.rename("kv-wfile", "/usr/kv-wfile"))
t("rename /etc/hostname -> workspace", lambda: os.rename("/etc/hostname", "kv-hn"))
t("rename missing /etc/x -> workspace", lambda: os.rename("/etc/kv-missing", "kv-hn"))
t("rename . -> ../x", lambda: os.rename(".", "../kv-x"))
t("rename workspace -> /", lambda: os.rename("kv-wfile", "/kv-wfile"))
t("rename within workspace", lambda: os.rename("kv-wfile", "kv-wfile2"))
t("rename back", lambda: os.rename("kv-wfile2", "kv-wfile"))
t("rename missing within workspace", lambda: os.rename("kv-missing", "kv-x"))
t("rename /tmp -> /tmp2", lambda: os.rename("/tmp", "/tmp2"))
t("rename /dev/null", lambda: os.rename("/dev/null", "/dev/null2"))
t("rename / -> x", lambda: os.rename("/", "kv-x"))
t("mkdir in /", lambda: os.mkdir("/kv-top"))
t("symlink in /", lambda: os.symlink("x", "/kv-sl"))
t("unlink missing in /usr", lambda: os.unlink("/usr/kv-missing"))
t("unlink /usr/bin/env", lambda: os.unlink("/usr/bin/env"))
t("rmdir /tmp", lambda: os.rmdir("/tmp"))
t("rmdir /", lambda: os.rmdir("/"))
t("rmdir the workspace", lambda: os.rmdir(os.getcwd()))
t("unlink /", lambda: os.unlink("/"))
for p in ("kv-moved", "kv-lnk", "/tmp/kv-b", "kv-wfile", "/tmp/kv-a"):
    print(p, os.path.lexists(p))
for p in ("kv-wfile", "/tmp/kv-a", "/tmp/kv-b", "/tmp/kv-l", "kv-moved", "kv-lnk"):
    try:
        os.unlink(p)
    except OSError:
        pass
for p in ("/tmp/kv-d", "kv-dmoved"):
    try:
        os.rmdir(p)
    except OSError:
        pass
