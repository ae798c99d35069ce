#!/usr/bin/env bash
# No set-id program is left on the host. The sandbox's files are the host's: when root
# starts moat they belong to uid 0 (or, namespaced, to whatever uid and gid its root
# takes with the CAP_SETUID and CAP_SETGID it keeps), and a setuid-root or setgid-shadow
# executable left in the workspace runs with those ids for any host user who starts it
# later. Creates already drop S_ISUID and S_ISGID (native-writes.sh, case 15); a chmod
# after the create must not put them back, by name or through an fd, nor mknod of a
# regular file. A directory keeps S_ISGID (shared group directories, git's
# core.sharedRepository): it makes no program. Checked from outside: the modes on the
# host after the run.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
[ "$(id -u)" -eq 0 ] || skip_all "a set-id file of another uid needs moat started by root"

plan 6
# the same program as uid 0 and, where the sandbox's root may change its ids, as
# another uid and group (65534, and gid 42: shadow on Debian)
prog='
import os, stat, sys
os.umask(0)
def mk(name):
    with open(name, "w") as f: f.write("#!/bin/sh\nid\n")
    return name
def try_(what, f, *a, **kw):
    try: f(*a, **kw); print("done", what)
    except OSError as e: print("refused", what, e.strerror)
for ids in sys.argv[1:]:
    if ids != "0":
        if os.fork():
            os.wait(); continue
        os.setgroups([]); os.setgid(42); os.setuid(65534)
    p = "u" + ids + "-"
    try_("chmod", os.chmod, mk(p + "chmod"), 0o6755)
    fd = os.open(mk(p + "fchmod"), os.O_RDONLY)
    try_("fchmod", os.fchmod, fd, 0o4755); os.close(fd)
    d = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try_("fchmodat", os.chmod, mk(p + "fchmodat"), 0o2755, dir_fd=d); os.close(d)
    try_("chmod via /proc/self/fd", os.chmod, "/proc/self/fd/%d" % os.open(mk(p + "procfd"), os.O_RDONLY), 0o4755)
    try_("mknod", os.mknod, p + "mknod", stat.S_IFREG | 0o6755)
    os.mkdir(p + "dir", 0o755)
    try_("chmod g+s dir", os.chmod, p + "dir", 0o2775)
    if ids != "0": os._exit(0)
'
for mode in namespaced unnamespaced; do
	if ! have_mode $mode; then
		for t in 1 2 3; do skip "$mode: set-id files" "moat cannot start in $mode mode here"; done
		continue
	fi
	ids=0 n=1
	[ $mode = namespaced ] && ids="0 65534" n=2
	for flags in "" "-v"; do
		make_workspace
		chmod 0777 "$W" # the other uid creates its files there too
		out=$(cd "$W" && "$MOAT" run -q $flags --mode $mode -- "$PY" -c "$prog" $ids 2>&1)
		bad=$(find "$W" -type f -perm /6000 -printf '%m %u:%g %p\n')
		[ -z "$bad" ] && [ "$(find "$W" -maxdepth 1 -name "u*-chmod" -type f | wc -l)" -eq $n ]
		ok $? "$mode${flags:+ $flags}: no setuid or setgid file left in the workspace (chmod, fchmod, fchmodat, /proc/self/fd, mknod)" \
			"$out
$bad"
	done
	find "$W" -maxdepth 1 -name 'u0-dir' -type d -perm -2000 | grep -q .
	ok $? "$mode: a directory still takes S_ISGID" "$(ls -ld "$W"/u*-dir)"
done
finish
