#!/usr/bin/env bash
# A unix bind is checked, then continued in a namespaced run (ctx.kernel_binds): the
# kernel reads the path from the caller's memory again and resolves it in the sandbox's
# view. A thread flips a symlink on the way between a workspace directory and a
# read-only mapping or a hidden directory while another binds through it: nothing may
# land where the policy refuses a create, because the read-only mount, the hidden
# directory's stub and Landlock refuse it there as well. Checked on the host: no socket
# in the read-only or the hidden directory, some in the workspace one (the race ran).
# Under --cow the same, the workspace an overlay whose upper layer gets the sockets:
# none reaches the host's workspace either. MOAT_TEST_SKIP_COVER (no stub over the
# hidden directory) must let one through.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"

W=$(mktemp -d "$TMP/ws.XXXXXX"); R=$(mktemp -d "$TMP/ro.XXXXXX")
mkdir "$W/ok" "$W/secret"
cat >"$W/race.py" <<'PYS'
import os, socket, sys, threading, time
targets, n = sys.argv[1:-1], int(sys.argv[-1])
stop = False
def flip():
    i = 0
    while not stop:
        os.symlink(targets[i % len(targets)], "d.new")
        os.replace("d.new", "d")
        i += 1
os.symlink("ok", "d")
t = threading.Thread(target=flip)
t.start()
made = 0
for i in range(n):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind("d/s%d" % i)
        made += 1
    except OSError:
        pass
    s.close()
stop = True
t.join()
print("bound", made)
PYS

# race TARGET... : binds through d while d flips among ok and the TARGETs
race() {
	(cd "$W" && "$MOAT" run -q $cow --ro-bind "$R" --hide "$W/**/secret" -- "$PY" race.py ok \
		"$@" 4000) 2>&1
}
cow=
sockets() { find "$1" -type s | wc -l; }

plan 7
out=$(race "$R" "$W/secret")
[ "$(sockets "$R")" = 0 ]
ok $? "no socket lands in the read-only mapping" "$out; $(find "$R" -type s | head -3)"
[ "$(sockets "$W/secret")" = 0 ]
ok $? "no socket lands in the hidden directory" "$out; $(find "$W/secret" -type s | head -3)"
[ "$(sockets "$W/ok")" -gt 0 ]
ok $? "sockets were bound in the workspace directory (the race ran)" "$out"

rm -f "$W"/ok/s* "$W/d"
cow=--cow
out=$(race "$R" "$W/secret")
[ "$(sockets "$R")" = 0 ] && [ "$(sockets "$W/secret")" = 0 ] && [ "$(sockets "$W/ok")" = 0 ]
ok $? "--cow: no socket lands in the read-only mapping, the hidden directory or the host's workspace" \
	"$out; $(find "$R" "$W" -type s | head -3)"
grep -qE '^bound [1-9]' <<<"$out"
ok $? "--cow: sockets were bound (in the overlay's upper layer: the race ran)" "$out"
cow=

# A covering over its budget leaves glob matches uncovered (every call by name is then
# moat's): a bind must not be continued there either. Then the control: without the
# stub over the hidden directory, the kernel lets one in.
if ! grep -q '^#define MOAT_TEST_HOOKS 1' "$MOAT_BUILD/moat-config.h" 2>/dev/null; then
	skip "covering over its budget" "a build without test_hooks"
	skip "control: the covering skipped" "a build without test_hooks"
else
	rm -f "$W"/ok/s* "$W/d"
	out=$(MOAT_TEST_COVER_BUDGET=1 race "$W/secret")
	[ "$(sockets "$W/secret")" = 0 ] && grep -qE '^bound [1-9]' <<<"$out"
	ok $? "covering over its budget: no socket lands in the uncovered hidden directory" \
		"$out; $(find "$W/secret" -type s | head -3)"
	rm -f "$W"/ok/s* "$W/d"
	out=$(MOAT_TEST_SKIP_COVER=1 race "$W/secret")
	[ "$(sockets "$W/secret")" -gt 0 ]
	ok $? "control: with the covering skipped, a continued bind reaches the hidden directory" "$out"
fi
finish
