#!/usr/bin/env bash
# A mapping whose destination the host lacks gets a mount point made by the keeper. Where
# that lands in a mapping of a host directory (the workspace, or "/" mapped read-write:
# root-rw.sh) it is on the host, and it goes when the run ends, with every directory the
# keeper made on the way to it; what the sandbox put beside one keeps that directory,
# and moat says so. What was there before the run stays. Checked on the host after
# each run.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 5
have_mode namespaced || skip_all "moat cannot start in namespaced mode here"
W=$(mktemp -d "$TMP/ws.XXXXXX")
cd "$W" || exit 1
echo hello >"$TMP/src.txt"

out=$(timeout 60 "$MOAT" run -q --tmpfs "$W/a/b" -- \
	sh -c "echo x >'$W/a/b/f' && stat -c %a '$W/a/b'" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$out" = 1777 ] && [ ! -e "$W/a" ]
ok $? "--tmpfs below two missing directories of the workspace: the sandbox's directory inside, nothing left on the host (rc $rc; $(ls -A "$W"))" "$out"

out=$(timeout 60 "$MOAT" run -q --ro-bind "$TMP/src.txt:$W/cfg/app.conf" -- \
	cat "$W/cfg/app.conf" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$out" = hello ] && [ ! -e "$W/cfg" ]
ok $? "--ro-bind FILE to a missing file of the workspace: its content inside, no file left on the host (rc $rc; $(ls -A "$W"))" "$out"

out=$(timeout 60 "$MOAT" run -q --tmpfs "$W/c/d" -- sh -c "echo mine >'$W/c/own'" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$(cat "$W/c/own" 2>/dev/null)" = mine ] && [ ! -e "$W/c/d" ] &&
	grep -q "$W/c: made on the host for a mount point, left there: Directory not empty" <<<"$out"
ok $? "a file the run wrote beside the mount point keeps the directory moat made, and moat says so (rc $rc; $(ls -A "$W/c" 2>&1))" "$out"
rm -rf "$W/c"

mkdir "$W/keep"
out=$(timeout 60 "$MOAT" run -q --tmpfs "$W/keep" -- true 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -d "$W/keep" ] && [ -z "$out" ]
ok $? "a destination that was there before the run stays (rc $rc)" "$out"
rmdir "$W/keep"

# The workspace below the sandbox's own /tmp: its mount point is made in the private
# directory behind that /tmp, which goes as well.
out=$(timeout 60 "$MOAT" run -q -- true 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$(ls -A "$W")" ] && [ -z "$out" ]
ok $? "a plain run leaves the workspace as it was and says nothing (rc $rc; $(ls -A "$W"))" "$out"
finish
