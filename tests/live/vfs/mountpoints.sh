#!/usr/bin/env bash
# A mapping whose destination the host lacks gets a mount point made by the keeper. Where
# that lands in a mapping of a host directory (the workspace, or "/" mapped read-write:
# root-rw.sh) it is on the host, and it goes when the run ends, with every directory the
# keeper made on the way to it; what the sandbox put beside one keeps that directory,
# and moat says so. What was there before the run stays, and what a run killed before
# its teardown made goes with a later run's sweep. Checked on the host after each run.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

plan 7
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

# A run killed by SIGKILL (the OOM killer, a CI timeout) never reaches its teardown; the
# next run's sweep of its private directory removes what it made, from the list the run
# kept in moat's state directory (the covering's records' one, here a directory of the
# test's own). killed_run: starts a run that makes k/, k/cfg.conf and k/t, waits until
# the list holds all three, kills it; sets D, its private directory, made old enough
# for a sweep.
own_state_dir
killed_run() {
	local pid n=0
	"$MOAT" run -q --ro-bind "$TMP/src.txt:$W/k/cfg.conf" --tmpfs "$W/k/t" -- sleep 60 \
		>/dev/null 2>&1 &
	pid=$!
	D=
	for _ in $(seq 100); do
		D=$(private_dirs "$pid" | grep '^/tmp/moat-vfs-' | head -1)
		n=$([ -n "$D" ] && tr -cd '\0' <"$MOAT_COVER_CACHE/made-${D##*/}" 2>/dev/null | wc -c)
		[ "${n:-0}" -ge 3 ] && break
		sleep 0.1
	done
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	# The keeper dies of the supervisor's death (PR_SET_PDEATHSIG) a moment later, and
	# holds the directory's lock until then: a sweep leaves a locked one alone.
	for _ in $(seq 100); do
		[ -z "$D" ] || flock -n "$D" true 2>/dev/null && break
		sleep 0.1
	done
	# the sweep leaves directories younger than 10 s alone (their run may be starting)
	[ -n "$D" ] && touch -d '-1 min' "$D"
	[ "${n:-0}" -ge 3 ]
}
if killed_run && [ -e "$W/k/cfg.conf" ] && [ -d "$W/k/t" ]; then
	out=$(timeout 60 "$MOAT" run -q -- true 2>&1)
	[ ! -e "$W/k" ] && [ ! -e "$D" ] && [ ! -e "$MOAT_COVER_CACHE/made-${D##*/}" ]
	ok $? "a killed run's mount points go with the next run's sweep of its private directory, and so does its list ($(cd "$W" && find . -mindepth 1 | tr '\n' ' ')$([ -e "$D" ] && echo "; $D left")$([ -e "$MOAT_COVER_CACHE/made-${D##*/}" ] && echo "; the list left"))" "$out"
else
	ok 1 "a killed run's mount points go with the next run's sweep (on the host: $(ls -A "$W"); no complete list of them in '$D')"
fi
rm -rf "$W/k"

# What is no longer what the run made, or not empty, stays: k/t replaced by a directory
# of the same name, k then not empty; the empty file k/cfg.conf still goes.
if killed_run && mkdir "$W/k/t2" && rmdir "$W/k/t" && mv "$W/k/t2" "$W/k/t"; then
	out=$(timeout 60 "$MOAT" run -q -- true 2>&1)
	[ ! -e "$W/k/cfg.conf" ] && [ -d "$W/k/t" ] && [ ! -e "$D" ]
	ok $? "the sweep removes only the very objects made, and only when empty ($(cd "$W" && find k 2>&1 | tr '\n' ' '))" "$out"
else
	ok 1 "the sweep removes only the very objects made (on the host: $(ls -A "$W"); no complete list of them in '$D')"
fi
rm -rf "$W/k"
finish
