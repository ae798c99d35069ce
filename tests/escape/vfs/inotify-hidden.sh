#!/usr/bin/env bash
# Invariant 4 through inotify: events name the entries of a watched directory, and the
# inotify fd is read natively. The sandbox watches its workspace (which holds the hidden
# .env) and then its own sub/; from outside, the test appends to .env and to sub/visible
# while the watches stand; then the sandbox tries to read .env. Where a hidden name is
# absent (unnamespaced, --strict-hide) no event may name .env: the watch on a directory
# holding a hidden entry is refused. Namespaced otherwise the covered view lists .env
# already (an empty stub), and the watch works as natively (a project's watcher beside
# its .env): its events may name .env, but the content is never read. The watch on
# sub/, which holds none, works and reports visible (control). All three.
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
try:
    print("read", open(".env").read().strip())
except OSError as e:
    print("read", e.strerror)
'

plan 9
for v in unnamespaced "namespaced --strict-hide" namespaced; do
	mode=${v%% *}
	if ! have_mode "$mode"; then
		for c in 1 2 3; do skip "$v: case $c" "moat cannot start in $mode mode here"; done
		continue
	fi
	make_workspace
	echo v >"$W/sub/visible"
	# shellcheck disable=SC2086
	(cd "$W" && exec "$MOAT" run -q --mode $v --timeout 30 -- "$PY" -c "$PROG" >"$TMP/out" 2>&1) &
	inotify_provoke "$W" $! 200
	out=$(cat "$TMP/out")
	if [ "$v" = namespaced ]; then
		grep -q '^watch \. ok' <<<"$out" && ! grep -qF "$SECRET" <<<"$out"
		ok $? "$v: the watch on the workspace, whose listing shows .env's stub, works; the content is never read" "$out"
		grep -q '^read ' <<<"$out" && ! grep -q '^read .*more' <<<"$out"
		ok $? "$v: reading .env gives nothing of the host's file" "$out"
	else
		! grep -q '\.env' <<<"$out" && ! grep -qF "$SECRET" <<<"$out"
		ok $? "$v: no event names the hidden .env" "$out"
		grep -q '^watch \. Permission denied' <<<"$out"
		ok $? "$v: the watch on the workspace, which holds .env, is refused" "$out"
	fi
	grep -q '^watch sub ok' <<<"$out" && grep -q '^events.* visible' <<<"$out"
	ok $? "$v: a watch on a directory with no hidden entry works (control)" "$out"
done
finish
