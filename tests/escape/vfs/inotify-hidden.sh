#!/usr/bin/env bash
# Invariant 4 through inotify: events name the entries of a watched directory, and the
# inotify fd is read natively, so a watch must not show a hidden name. The sandbox
# watches its workspace (which holds the hidden .env) and then its own sub/; from
# outside, the test appends to .env and to sub/visible while the watches stand. No
# event may name .env (the watch on a directory holding a hidden entry is refused);
# the watch on sub/, which holds none, works and reports visible (control). Both modes.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
. "$MOAT_SRC/tests/lib/inotify.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"

PROG='
import ctypes, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
ino = libc.inotify_init1(os.O_NONBLOCK)
for d in (".", "sub"):
    wd = libc.inotify_add_watch(ino, d.encode(), 0xfff)
    print("watch", d, "ok" if wd >= 0 else os.strerror(ctypes.get_errno()))
sys.stdout.flush()
open("ready", "w").close()
names = set()
deadline = time.time() + 10
while not os.path.exists("done") and time.time() < deadline:
    time.sleep(0.05)
time.sleep(0.2)
try:
    buf = os.read(ino, 65536)
except BlockingIOError:
    buf = b""
i = 0
while i + 16 <= len(buf):
    wd, mask, cookie, ln = struct.unpack_from("iIII", buf, i)
    names.add(buf[i + 16:i + 16 + ln].rstrip(b"\0").decode())
    i += 16 + ln
print("events", " ".join(sorted(n for n in names if n)))
'

plan 6
for mode in unnamespaced namespaced; do
	if ! have_mode "$mode"; then
		for c in "no event names the hidden .env" "the watch on the workspace is refused" "a watch on a directory with no hidden entry works (control)"; do
			skip "$mode: $c" "moat cannot start in $mode mode here"
		done
		continue
	fi
	make_workspace
	echo v >"$W/sub/visible"
	(cd "$W" && exec "$MOAT" run -q --mode "$mode" --timeout 30 -- "$PY" -c "$PROG" >"$TMP/out" 2>&1) &
	inotify_provoke "$W" $! 200
	out=$(cat "$TMP/out")
	! echo "$out" | grep -q '\.env'
	ok $? "$mode: no event names the hidden .env" "$out"
	echo "$out" | grep -q '^watch \. Permission denied'
	ok $? "$mode: the watch on the workspace, which holds .env, is refused" "$out"
	echo "$out" | grep -q '^watch sub ok' && echo "$out" | grep -q '^events.* visible'
	ok $? "$mode: a watch on a directory with no hidden entry works (control)" "$out"
done
finish
