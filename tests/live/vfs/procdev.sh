#!/usr/bin/env bash
# Issue 3: whatever the mappings say, /proc shows only the sandbox's processes, /sys is
# hidden unless mapped, /dev is the minimal set (with a private /dev/shm). The host process we probe for is a
# sleep started here, whose pid we know.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 20
mkdir "$TMP/cwd"
sleep 600 &
HOSTPID=$!
track_pid $HOSTPID
[ -r /proc/$HOSTPID/environ ] || skip_all "cannot read /proc/$HOSTPID/environ even outside"

run() { local mode=$1; shift
	(cd "$TMP/cwd" && "$MOAT" run -q --mode "$mode" "$@") >"$TMP/out" 2>"$TMP/err"; }
diag() { echo "--- stdout"; head -c 1500 "$TMP/out"; echo "--- stderr"; head -c 1500 "$TMP/err"; }

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		for i in $(seq 10); do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	run $mode -- sh -c 'ls /proc | grep -E "^[0-9]+$"; echo self=$(readlink /proc/self)'
	pids=$(grep -E '^[0-9]+$' "$TMP/out" | tr '\n' ' ')
	n=$(echo $pids | wc -w)
	if [ "$mode" = namespaced ]; then
		[ "$n" -ge 1 ] && [ "$n" -le 8 ]
		ok $? "$mode: ls /proc shows a handful of pids ($pids)" "$(diag)"
	else
		# Every pid listed must be a process of this run: none of them may be alive now,
		# and none may be the host's sleep, init or this shell.
		alive=""
		for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
		[ "$n" -ge 1 ] && [ -z "$alive" ] && ! echo " $pids " | grep -q " $HOSTPID \| 1 \| $$ "
		ok $? "$mode: ls /proc lists only the run's own pids ($pids; alive after the run:$alive)" "$(diag)"
	fi
	! echo " $pids " | grep -q " $HOSTPID "
	ok $? "$mode: the host sleep ($HOSTPID) is not listed"

	run $mode -- sh -c "cat /proc/$HOSTPID/environ; cat /proc/$HOSTPID/cmdline; ls /proc/$HOSTPID/fd; readlink /proc/$HOSTPID/cwd /proc/$HOSTPID/root; test -e /proc/$HOSTPID && echo EXISTS; echo end"
	[ "$(cat "$TMP/out")" = end ] && ! grep -q "sleep" "$TMP/out"
	ok $? "$mode: /proc/$HOSTPID (environ, cmdline, fd, cwd, root) does not exist inside" "$(diag)"

	# In namespaced mode pid numbers are the sandbox's own, so the host pid may collide
	# with one of ours only in unnamespaced mode; host init must be out of reach there.
	if [ "$mode" = unnamespaced ]; then
		run $mode -- sh -c 'cat /proc/1/environ /proc/1/cmdline; test -e /proc/1 && echo EXISTS; echo end'
		[ "$(cat "$TMP/out")" = end ]
		ok $? "$mode: the host's pid 1 does not exist inside" "$(diag)"
	else
		# read is a builtin: /proc/self is then the shell itself, not a child.
		run $mode -- sh -c 'echo $$; read -r p rest </proc/self/stat; echo $p'
		[ "$(sed -n 1p "$TMP/out")" = "$(sed -n 2p "$TMP/out")" ] && [ "$(sed -n 1p "$TMP/out")" -lt 100 ]
		ok $? "$mode: /proc/self is the caller with its sandbox pid" "$(diag)"
	fi

	run $mode -- sh -c 'ls /sys; cat /sys/kernel/hostname 2>/dev/null; ls /sys/class/net 2>/dev/null; echo end'
	[ "$(cat "$TMP/out")" = end ]
	ok $? "$mode: /sys is hidden when not mapped" "$(diag)"

	run $mode --ro-bind /sys -- sh -c 'ls /sys/kernel >/dev/null && echo listed'
	grep -qx listed "$TMP/out"
	ok $? "$mode: /sys appears when mapped with --ro-bind /sys" "$(diag)"

	run $mode -- sh -c 'ls -A /dev; ls /dev/sda /dev/mem /dev/kmsg /dev/shm /dev/nvme0 /dev/vda 2>/dev/null; echo zero=$(head -c 4 /dev/zero | od -An -tx1 | tr -d " "); echo x > /dev/null && echo null-ok; head -c 8 /dev/urandom | wc -c'
	extra=$(grep -vxE 'null|zero|full|random|urandom|tty|fd|stdin|stdout|stderr|ptmx|pts|shm|/dev/shm:||zero=00000000|null-ok|8' "$TMP/out")
	[ -z "$extra" ] && grep -qx zero=00000000 "$TMP/out" && grep -qx null-ok "$TMP/out" && grep -qx 8 "$TMP/out"
	ok $? "$mode: /dev holds only the minimal set, and it works (extra: $(echo $extra))" "$(diag)"

	# a listing's types (d_type, which find -type and scandir read) are what stat says:
	# a device's mount point is a device too (before, find -type c found nothing)
	run $mode -- python3 -c '
import os, stat
for e in sorted(os.scandir("/dev"), key=lambda e: e.name):
    st = os.lstat(e.path)
    if stat.S_ISCHR(st.st_mode) != (e.is_file(follow_symlinks=False) is False and not e.is_dir(follow_symlinks=False) and not e.is_symlink()):
        print("differs", e.name)
    if stat.S_ISCHR(st.st_mode):
        print("chr", e.name)'
	! grep -q differs "$TMP/out" && grep -qx "chr null" "$TMP/out" && grep -qx "chr urandom" "$TMP/out"
	ok $? "$mode: /dev lists its devices as devices, as stat says" "$(diag)"

	# a second thread: /proc/self is its process, /proc/thread-self and its tid are it
	run $mode -- python3 -c '
import os, threading
def probe():
    me = threading.get_native_id()
    pid = int(open("/proc/self/stat").read().split()[0])
    tasks = sorted(int(t) for t in os.listdir("/proc/self/task"))
    tstat = int(open("/proc/thread-self/stat").read().split()[0])
    own = int(open("/proc/%d/task/%d/stat" % (os.getpid(), me)).read().split()[0])
    print(pid == os.getpid(), tasks == sorted([os.getpid(), me]), tstat == me, own == me)
t = threading.Thread(target=probe); t.start(); t.join()'
	grep -qx "True True True True" "$TMP/out"
	ok $? "$mode: from a second thread, /proc/self, /proc/thread-self and /proc/PID/task/TID name the right tasks" "$(diag)"

	# ptmx looks for its devpts beside itself: a pty must work with the two mapped
	run $mode --bind /dev/ptmx --bind /dev/pts -- python3 -c '
import os
m, s = os.openpty()
os.write(m, b"through the pty\n")
print(os.read(s, 64).decode().strip(), os.ttyname(s).startswith("/dev/pts/"))'
	grep -qx "through the pty True" "$TMP/out"
	ok $? "$mode: openpty() with --bind /dev/ptmx --bind /dev/pts carries bytes to the slave" "$(diag)"
done
finish
