#!/usr/bin/env bash
# Nothing of a run is left on the host once moat exits: its private directory under
# /tmp (the sandbox's /tmp and home) and, namespaced, the skeleton of mount points under
# /dev/shm, which teardown removes from the table without reading it back. Each run's
# own directories are found from outside, through the fds its supervisor holds.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"

MODES="namespaced unnamespaced"
CASES="plain report"
plan 4

for mode in $MODES; do
	for c in $CASES; do
		if ! have_mode "$mode"; then
			skip "$mode, $c: nothing left" "the $mode mode cannot start here"
			continue
		fi
		W=$(mktemp -d "$TMP/w.XXXXXX")
		extra=()
		[ "$c" = report ] && extra=(--report "$TMP/report-$mode.json")
		(cd "$W" && exec "$MOAT" run -q --mode "$mode" "${extra[@]}" -- sh -c \
			'echo x >/tmp/f; mkdir -p /tmp/d/e; echo y >"$HOME/g"; touch ready
			 for i in $(seq 100); do [ -e go ] && exit 0; sleep 0.1; done; exit 1') &
		pid=$!; track_pid $pid
		if ! wait_for "$W/ready"; then
			fail "$mode, $c: nothing left" "the run did not start"
			continue
		fi
		dirs=$(private_dirs $pid)
		want=1
		[ "$mode" = namespaced ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && want=2
		touch "$W/go"; wait $pid; rc=$?
		left=$(for d in $dirs; do [ -e "$d" ] && echo "$d"; done)
		[ $rc -eq 0 ] && [ "$(echo "$dirs" | grep -c .)" -eq $want ] && [ -z "$left" ]
		ok $? "$mode, $c: its $want private directories are gone when moat exits" \
			"rc=$rc held: ${dirs:-<none>}; left: ${left:-<none>}"
	done
done
finish
